//! The end-to-end suite as one test binary (`cargo test -p zeroclaw-e2e --test e2e`): one
//! module per area, each a former test file of its own, so the suite links the test kit
//! once instead of once per file. A test's name is `MODULE::NAME` (`wire::handshake_gate`);
//! run one area with a filter: `cargo test -p zeroclaw-e2e --test e2e -- wire::`.
//!
//! The shared pieces are modules here too, declared once: `common` (the test kit's daemon
//! client), `checkpointed` (reads of a daemon's checkpoint file) and `browser` (the headless
//! Chromium the dashboard tests drive). Each area names them with `use crate::common;`.

#[path = "common/browser.rs"]
mod browser;
mod checkpointed;
mod common;

mod acp_now;
mod away;
// ACP updates outside the editor's own turns (issue 49, SPEC §25).
mod acp_live;
// Background processes (issue 50, SPEC §26).
mod background;
mod backpressure;
// Budgets (issue 48, SPEC §24.2).
mod budgets;
mod config;
mod daily_ask;
mod daily_chat;
mod daily_rest;
mod daily_tools;
mod dashboard;
mod dashboard_bench;
mod dashboard_daily;
mod dashboard_notify;
mod dashboard_real;
mod dashboard_schedules;
mod durability;
mod file_checkpoints;
mod files;
mod gateway;
mod hardening3_files;
mod hardening3_gateway;
mod hardening3_peer;
mod hardening3_providers;
mod hardening3_sandbox;
mod hardening_config;
mod hardening_config2;
mod hardening_files;
mod hardening_ids;
mod hardening_parse;
mod hardening_sessions;
mod hardening_streams;
mod hardening_transport;
mod hooks;
mod lifecycle;
mod long_history;
mod mcp;
mod models;
mod notifications;
mod plan_mode;
mod project_knowledge;
mod providers_anthropic;
mod providers_gemini;
mod providers_latency;
mod providers_ollama;
mod providers_recovery;
mod providers_retry;
mod request_path;
// REST and its event stream (issue 47, SPEC §23.2).
mod rest;
mod sandbox;
mod schedules;
mod schema;
mod sessions;
mod sessions_compact;
mod sessions_fork;
mod sessions_rewind;
mod streams;
mod user_message;
mod vocabulary_errors;
mod websocket;
// Webhooks that start turns (issue 47, SPEC §23.1).
mod webhooks;
mod wire;
