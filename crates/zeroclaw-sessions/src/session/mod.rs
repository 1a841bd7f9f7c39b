//! Sessions (SPEC §7): live sessions keyed by `(mode, session_id)`, their turns, their
//! update streams, and the durable store behind them.
//!
//! This file only declares the modules, re-exports what the rest of the daemon names, and
//! holds the test hook that polls the failure trigger files. The modules import only
//! downward, top to bottom:
//!
//! - operations, each an `impl SessionManager` block: [`open`] (`session/new`, resume,
//!   rehydration on `session/prompt`), [`lifecycle`] (prompt, cancel, approve, close, kill,
//!   delete, list, messages), [`subscribe`], [`configure`] and [`status`] (SPEC §14, §16),
//!   [`mcp`] (saved settings restored and MCP servers started as a session goes live);
//! - [`worker`]: starts a live session's worker task, which runs its prompts one at a time;
//! - [`manager`]: the registry of live sessions, limits and ownership checks;
//! - [`history`]: `session/rewind` (queued), `session/fork` and `session/set_title`
//!   (SPEC §18); [`rewind`] is the rewind as the worker runs it, [`file_restore`] its
//!   file side;
//! - [`turn`]: one turn end to end (begin → run → finish → trim → `turn_complete`), and
//!   [`compact`] (`session/compact` and auto-compaction as the worker runs them, SPEC §18;
//!   [`compact_call`] queues a `session/compact`), with [`host`] (the `TurnHost`: updates,
//!   approvals, ask-user), [`compaction`] (one compaction, and the mid-turn one the host
//!   runs), [`agent`] (the turn's `AgentSpec`), [`persist`] (checkpoint progress,
//!   transcript rows, trim) and [`long_answers`] (a spilled answer's row and snapshots,
//!   written from its file);
//! - [`hooks`]: the session's hooks (SPEC §21.1) built from the configuration,
//!   `session_start` and `pre_compact`, and the `hook` update;
//! - [`rest`]: sessions rest (SPEC §22): idle ones are unloaded, and the longest-idle one
//!   makes room at the live limit; the counts `status` shows ([`rest_state`], a leaf, is
//!   one session's bookkeeping);
//! - [`file_checkpoints`]: the working directory recorded at every ACP turn start and put
//!   back by a rewind (SPEC §18);
//! - [`live`]: one live session's state: identity, prompt queue, approvals, overrides,
//!   usage;
//! - [`stream`]: a session's numbered updates, subscribers and replay buffer (§14);
//! - [`link`]: what a session knows of a client connection ([`link::ClientLink`]);
//! - leaves: [`live_id`], [`limits`], [`tuning`], [`error`], [`text`], [`prompted`] (the
//!   `user_message` a prompted turn starts with, §18), [`sandbox`] (the agent's sandbox
//!   settings, §21.2), [`cwd_links`] (where a `cwd` that does not resolve leads, §17.2),
//!   [`instructions`] (the `AGENTS.md` files a turn's system prompt ends with, §26).
//!
//! Invariants:
//! - at most [`MAX_LIVE_SESSIONS`] live sessions; at most [`MAX_QUEUED_PROMPTS`] prompts
//!   waiting per session (the running turn is not counted);
//! - locks are plain mutexes, never held across an `.await`;
//! - every turn goes through the store: the prompt row and an open checkpoint before the
//!   provider is called, progress at step boundaries and every 250 ms while text streams,
//!   final rows and the closed checkpoint before `turn_complete` is sent;
//! - non-admin principals only see and touch sessions they own (-32003).
//!
//! Test builds may shorten the waits of [`Tuning`] (see the daemon's test hooks, feature
//! `test-hooks`).

pub mod agent;
pub mod answered;
pub mod ask_all;
pub mod budget;
pub mod budget_requests;
pub mod compact;
pub mod compact_call;
pub mod compaction;
pub mod configure;
pub mod cwd_links;
pub mod diff;
pub mod error;
#[cfg(unix)]
pub mod file_checkpoints;
#[cfg(not(unix))]
#[path = "file_checkpoints_off.rs"]
pub mod file_checkpoints;
pub mod file_restore;
pub mod history;
pub mod hooks;
pub mod host;
pub mod instructions;
pub mod lifecycle;
pub mod limits;
pub mod link;
pub mod live;
pub mod live_id;
pub mod long_answers;
pub mod manager;
pub mod mcp;
pub mod open;
pub mod persist;
pub mod prompted;
pub mod rest;
pub mod rest_state;
pub mod rewind;
pub mod sandbox;
pub mod status;
pub mod stream;
pub mod subscribe;
pub mod tap;
pub mod text;
pub mod tuning;
pub mod turn;
pub mod usage;
pub mod wire;
pub mod worker;

pub use live::LiveSession;
pub use live_id::LiveId;
pub use manager::{SessionManager, check_owner, may_touch};
pub use tuning::Tuning;
