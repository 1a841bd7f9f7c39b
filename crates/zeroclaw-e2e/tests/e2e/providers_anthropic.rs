//! The `anthropic` provider kind over the real binary (SPEC §19), against the fake
//! Anthropic server speaking the Messages API's wire format: a streamed answer with prompt
//! caching and cache usage, tool calls (approval, two in one response, results sent back
//! as `tool_result` blocks), thinking shown as thoughts, kept for the turn's tool loop and
//! never persisted, `models/list`, API errors (HTTP and mid-stream), retries, a stalled
//! stream, an oversize event and malformed JSON.

use crate::common;

use std::time::{Duration, Instant};

use common::{Conn, Served, TestDaemon, streamed_text};
use serde_json::{Value, json};
use zeroclaw_testkit::frames::updates_typed;
use zeroclaw_testkit::{FakeAnthropic, Reply};

/// The fake server and the runtime serving it.
type Claude = Served<FakeAnthropic>;

fn start(claude: &Claude, timeout_secs: u64) -> TestDaemon {
    let config = format!(
        r#"[providers.claude]
kind = "anthropic"
base_url = "{}"
api_key = "sk-ant-test-key"
model = "claude-fake-1"
timeout_secs = {timeout_secs}

[agents.default]
provider = "claude"
system_prompt = "You are terse."
tools = ["bash", "read_file", "write_file"]
autonomy = "supervised"
max_tool_iterations = 5
thinking_budget = 2048
"#,
        claude.server.base_url()
    );
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn) -> String {
    let r = c.new_session(json!({"agentAlias": "default"}));
    r["sessionId"].as_str().unwrap().to_string()
}

fn thoughts(msgs: &[Value]) -> String {
    updates_typed(msgs, "agent_thought_chunk")
        .iter()
        .map(|u| u["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Runs a prompt answering every approval request with `allow_once`.
fn prompt_approving(c: &mut Conn, sid: &str, prompt: &str) -> (Vec<Value>, Value) {
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": prompt}),
    );
    let mut seen = Vec::new();
    loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            return (seen, msg);
        }
        if msg["params"]["type"] == "approval_request" {
            let rid = msg["params"]["requestId"].clone();
            c.send_call(
                "session/approve",
                json!({"sessionId": sid, "requestId": rid, "decision": "allow_once"}),
            );
        }
        seen.push(msg);
    }
}

/// Every file under `dir` contains none of `needles`.
fn nowhere_on_disk(dir: &std::path::Path, needles: &[&str]) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            nowhere_on_disk(&path, needles);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let text = String::from_utf8_lossy(&bytes);
            for n in needles {
                assert!(!text.contains(n), "{n:?} was written to {path:?}");
            }
        }
    }
}

#[test]
fn a_streamed_answer_with_prompt_caching_and_cache_usage() {
    let claude = Claude::start();
    claude.server.push(Reply::text("Hello there, friend."));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(streamed_text(&msgs), "Hello there, friend.");
    assert_eq!(resp["result"]["content"], "Hello there, friend.");

    let rec = &claude.server.recorded()[0];
    assert_eq!(
        (rec.method.as_str(), rec.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(rec.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(rec.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        rec.body,
        json!({
            "model": "claude-fake-1", "max_tokens": 8192, "stream": true,
            "system": [{"type": "text", "text": "You are terse.",
                        "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
            "tools": rec.body["tools"].clone(),
        })
    );
    let tools: Vec<&str> = rec.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(t["input_schema"].is_object(), "{t}");
            t["name"].as_str().unwrap()
        })
        .collect();
    // `bash` brings the tools of its background processes (SPEC §26).
    assert_eq!(
        tools,
        [
            "bash",
            "read_file",
            "write_file",
            "bash_output",
            "bash_kill"
        ]
    );

    // usage: input = new + cache read + cache written (12 + 50 + 100)
    let usage = updates_typed(&msgs, "usage");
    assert_eq!(usage.len(), 1, "{msgs:?}");
    assert_eq!(usage[0]["inputTokens"], 162);
    assert_eq!(usage[0]["outputTokens"], 7);
    assert_eq!(usage[0]["cacheReadTokens"], 50);
    assert_eq!(usage[0]["cacheWriteTokens"], 100);
    assert_eq!(usage[0]["estimated"], false);

    // The next turn sends the first one back; the cache mark moves to the new last message.
    claude.server.push(Reply::text("Again."));
    let (_, resp) = c.prompt(&sid, "more");
    assert_eq!(resp["result"]["content"], "Again.");
    let sent = &claude.server.messages_requests()[1]["messages"];
    assert_eq!(
        *sent,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello there, friend."}]},
            {"role": "user", "content": [{"type": "text", "text": "more",
                                          "cache_control": {"type": "ephemeral"}}]},
        ])
    );
}

#[test]
fn two_tool_calls_with_thinking_kept_for_the_tool_loop_and_never_persisted() {
    let claude = Claude::start();
    claude.server.push(Reply::tools(
        Some(("I should list the files first.", "sig-SECRET-1")),
        &[
            ("toolu_01", "bash", json!({"command": "echo from-bash"})),
            ("toolu_02", "read_file", json!({"path": "missing.txt"})),
        ],
    ));
    claude
        .server
        .push(Reply::thinking("Now I can answer.", "sig-2", "All done."));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = prompt_approving(&mut c, &sid, "look around");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "All done.");
    assert_eq!(
        thoughts(&msgs),
        "I should list the files first.Now I can answer."
    );
    let calls = updates_typed(&msgs, "tool_call");
    assert_eq!(calls.len(), 2, "{msgs:?}");
    assert_eq!(calls[0]["toolCallId"], "toolu_01");
    assert_eq!(calls[0]["rawInput"], json!({"command": "echo from-bash"}));
    assert_eq!(calls[1]["toolCallId"], "toolu_02");
    assert_eq!(
        updates_typed(&msgs, "approval_request").len(),
        1,
        "bash only"
    );

    // The second call sends the thinking back (with its signature) before the tool_use
    // blocks, and both results in one user message, as tool_result blocks.
    let reqs = claude.server.messages_requests();
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should list the files first.",
             "signature": "sig-SECRET-1"},
            {"type": "tool_use", "id": "toolu_01", "name": "bash",
             "input": {"command": "echo from-bash"}},
            {"type": "tool_use", "id": "toolu_02", "name": "read_file",
             "input": {"path": "missing.txt"}},
        ]})
    );
    let results = sent[2]["content"].as_array().unwrap();
    assert_eq!(sent[2]["role"], "user");
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|s| s.contains("from-bash")),
        "{results:?}"
    );
    assert_eq!(results[1]["tool_use_id"], "toolu_02");
    assert_eq!(
        results[1]["cache_control"],
        json!({"type": "ephemeral"}),
        "the last block carries the cache mark"
    );

    // Never persisted: not in the transcript, not in any file of the daemon.
    let transcript = c.messages(&sid).to_vec();
    let text = serde_json::to_string(&transcript).unwrap();
    assert!(
        !text.contains("sig-SECRET-1") && !text.contains("I should list the files"),
        "{text}"
    );
    nowhere_on_disk(
        daemon.config_dir(),
        &["sig-SECRET-1", "I should list the files"],
    );

    // Kept for that turn only: the next turn sends no thinking block.
    claude.server.push(Reply::text("ok"));
    let (_, resp) = c.prompt(&sid, "thanks");
    assert_eq!(resp["result"]["content"], "ok");
    let third = serde_json::to_string(&claude.server.messages_requests()[2]).unwrap();
    assert!(
        !third.contains("\"thinking\",\"thinking\"") && !third.contains("sig-"),
        "{third}"
    );
}

#[test]
fn models_list_asks_the_models_endpoint_with_the_key() {
    let claude = Claude::start();
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let r = c.result("models/list", json!({"agentAlias": "default"}));
    assert_eq!(
        r["models"],
        json!([
            {"provider": "claude", "model": "claude-fake-1", "current": true},
            {"provider": "claude", "model": "claude-fake-2", "current": false},
        ])
    );
    let rec = &claude.server.recorded()[0];
    assert_eq!(
        (rec.method.as_str(), rec.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(rec.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(rec.header("anthropic-version"), Some("2023-06-01"));
}

#[test]
fn an_error_event_mid_stream_fails_the_turn_with_its_message() {
    let claude = Claude::start();
    claude.server.push(Reply::stream_error(
        "Partial answer ",
        "overloaded_error",
        "Overloaded",
    ));
    claude.server.push(Reply::text("not asked"));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert_eq!(resp["result"]["content"], "provider error: Overloaded");
    assert_eq!(streamed_text(&msgs), "Partial answer ");
    assert!(updates_typed(&msgs, "provider_retry").is_empty());
    assert_eq!(claude.server.pending(), 1, "retried after streaming began");
}

#[test]
fn an_http_error_fails_the_turn_with_the_providers_message() {
    let claude = Claude::start();
    claude.server.push(Reply::http_error(
        400,
        "invalid_request_error",
        "max_tokens: must be greater than thinking.budget_tokens",
        None,
    ));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (_, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert_eq!(
        resp["result"]["content"],
        "provider returned HTTP 400: max_tokens: must be greater than thinking.budget_tokens"
    );
}

#[test]
fn a_529_then_success_is_retried() {
    let claude = Claude::start();
    claude.server.push(Reply::http_error(
        529,
        "overloaded_error",
        "Overloaded",
        Some("0"),
    ));
    claude.server.push(Reply::text("made it"));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["content"], "made it", "{resp}");
    let r = updates_typed(&msgs, "provider_retry");
    assert_eq!(r.len(), 1, "{msgs:?}");
    assert_eq!(r[0]["attempt"], 1);
    assert_eq!(r[0]["delaySecs"], 0.0);
    assert_eq!(r[0]["reason"], "HTTP 529: Overloaded");
}

#[test]
fn a_429_on_every_try_fails_after_three_retries() {
    let claude = Claude::start();
    for _ in 0..4 {
        claude.server.push(Reply::http_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            Some("0"),
        ));
    }
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("429") && s.contains("per-minute rate limit")),
        "{resp}"
    );
    assert_eq!(updates_typed(&msgs, "provider_retry").len(), 3);
    assert_eq!(claude.server.messages_requests().len(), 4);
}

#[test]
fn a_stalled_stream_fails_after_the_timeout() {
    let claude = Claude::start();
    claude.server.push(Reply::Stall {
        text: vec!["Thinking about ".into()],
    });
    let daemon = start(&claude, 2);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let t = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hi");
    let elapsed = t.elapsed();
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("no data for 2 s")),
        "{resp}"
    );
    assert_eq!(streamed_text(&msgs), "Thinking about ");
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
}

#[test]
fn malformed_json_and_an_oversize_event_fail_the_turn() {
    let claude = Claude::start();
    claude.server.push(Reply::Raw(vec![(
        "message_start".into(),
        "{\"type\":\"message_start\",".into(),
    )]));
    let huge = format!(
        "{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}",
        "x".repeat(8 * 1024 * 1024 + 10)
    );
    claude.server.push(Reply::Raw(vec![
        (
            "message_start".into(),
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}).to_string(),
        ),
        (
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}})
            .to_string(),
        ),
        ("content_block_delta".into(), huge),
    ]));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (_, resp) = c.prompt(&sid, "one");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("malformed event JSON")),
        "{resp}"
    );
    let (_, resp) = c.prompt(&sid, "two");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("exceeds 8388608 bytes")),
        "{resp}"
    );
    // The daemon still serves.
    claude.server.push(Reply::text("fine"));
    let (_, resp) = c.prompt(&sid, "three");
    assert_eq!(resp["result"]["content"], "fine");
}

#[test]
fn config_set_validates_the_output_and_thinking_budgets() {
    let claude = Claude::start();
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let set = |c: &mut Conn, prop: &str, value: Value| {
        c.call("config/set", json!({"prop": prop, "value": value}))
    };
    for (prop, value) in [
        ("agents.default.thinking_budget", json!(500)),
        ("agents.default.thinking_budget", json!(8192)),
        ("agents.default.thinking_budget", json!(-1)),
        ("agents.default.max_output_tokens", json!(0)),
        ("agents.default.max_output_tokens", json!("many")),
        // lowering the output budget under the thinking budget in force (2048)
        ("agents.default.max_output_tokens", json!(1500)),
    ] {
        let r = set(&mut c, prop, value.clone());
        assert_eq!(r["error"]["code"], -32602, "{prop} = {value}: {r}");
    }
    let r = set(&mut c, "agents.default.thinking_budget", json!(4096));
    assert_eq!(r["result"]["set"], true, "{r}");
    let r = set(&mut c, "agents.default.max_output_tokens", json!("16000"));
    assert_eq!(r["result"]["set"], true, "{r}");
    let r = set(&mut c, "agents.default.thinking_budget", json!(0));
    assert_eq!(r["result"]["set"], true, "{r}");
    // The new budgets reach the next request.
    claude.server.push(Reply::text("ok"));
    let sid = new_session(&mut c);
    let (_, resp) = c.prompt(&sid, "hi");
    assert_eq!(resp["result"]["content"], "ok", "{resp}");
    let body = &claude.server.messages_requests()[0];
    assert_eq!(body["max_tokens"], 16000);
    assert!(body.get("thinking").is_none(), "{body}");
}

#[test]
fn cancel_during_a_back_off_wait_ends_the_turn_at_once() {
    let claude = Claude::start();
    claude.server.push(Reply::http_error(
        529,
        "overloaded_error",
        "Overloaded",
        Some("30"),
    ));
    let daemon = start(&claude, 10);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let id = c.send_call("session/prompt", json!({"sessionId": sid, "prompt": "hi"}));
    let mut seen = Vec::new();
    while updates_typed(&seen, "provider_retry").is_empty() {
        let m = c.recv();
        assert_ne!(m.get("id"), Some(&id), "answered before a retry: {m}");
        seen.push(m);
    }
    let sent = Instant::now();
    c.send_call("session/cancel", json!({"sessionId": sid}));
    let (_, resp) = c.collect_until(&id);
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(resp["result"]["outcome"], "cancelled", "{resp}");
    assert_eq!(claude.server.messages_requests().len(), 1);
}
