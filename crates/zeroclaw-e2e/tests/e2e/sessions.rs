//! Sessions and agent turns over the real binary (SPEC §7.1, §7.2, §7.4): streaming, tools
//! and approvals, ask-user, cancel, failures, limits, ownership, listing and paging.

use crate::common;

use std::time::{Duration, Instant};

use common::{
    Conn, Fake, TestDaemon, code, roles, session_config, streamed_text, update_types, updates,
};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeToolCall, Scripted};

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    start_env(fake, extra, &[])
}

fn start_env(fake: &Fake, extra: &str, env: &[(&str, &str)]) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_env(&[], env, |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn, agent: &str) -> String {
    let r = c.new_session(json!({"agentAlias": agent}));
    r["sessionId"].as_str().unwrap().to_string()
}

/// The last user-visible messages the fake provider was sent in request `i`.
fn request_messages(fake: &Fake, i: usize) -> Vec<Value> {
    fake.requests()[i]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn echo_turn_streams_the_prompt_and_is_kept() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let r = c.new_session(json!({"agent_alias": "echo", "session_id": "s1"}));
    assert_eq!(r["sessionId"], "s1");
    assert_eq!(r["agentAlias"], "echo");
    assert_eq!(r["mode"], "acp");
    assert_eq!(r["messageCount"], 0);
    assert_eq!(r["resumed"], false);
    let ws = std::path::PathBuf::from(r["workspaceDir"].as_str().unwrap());
    assert!(ws.is_absolute() && ws.is_dir(), "{ws:?}");

    let prompt = "the quick  brown fox\njumps over";
    let (msgs, resp) = c.prompt("s1", prompt);
    assert_eq!(streamed_text(&msgs), prompt);
    let result = &resp["result"];
    assert_eq!(result["outcome"], "completed");
    assert_eq!(result["content"], prompt);
    assert_eq!(result["sessionId"], "s1");
    let last = updates(&msgs).last().cloned().unwrap();
    assert_eq!(last["type"], "turn_complete");
    assert_eq!(last["turnId"], result["turnId"]);
    assert_eq!(last["content"], prompt);
    assert_eq!(last["sessionId"], "s1");

    assert_eq!(
        roles(&c.messages("s1")),
        vec![
            ("user".into(), prompt.into()),
            ("assistant".into(), prompt.into())
        ]
    );
    let status = c.result("status", json!({}));
    assert_eq!(status["activeSessions"], 1);
    assert_eq!(status["sessionIds"], json!(["s1"]));
    // Unknown agent: -32602.
    assert_eq!(
        code(&c.error("session/new", json!({"agentAlias": "nope"}))),
        -32602
    );
    // Unknown session: -32000.
    let e = c.error(
        "session/prompt",
        json!({"sessionId": "ghost", "prompt": "x"}),
    );
    assert_eq!(code(&e), -32000);
    let e = c.error("session/cancel", json!({"sessionId": "s1"}));
    assert_eq!(code(&e), -32000, "no turn runs");
}

#[test]
fn fake_provider_chunks_concatenate() {
    let fake = Fake::start();
    fake.push(Scripted::chunks(
        ["Hel", "lo, ", "wor", "ld", "! ", "✓"],
        Duration::from_millis(5),
    ));
    fake.push(Scripted::reasoning("thinking hard", "second answer"));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (msgs, resp) = c.prompt(&sid, "hi");
    assert_eq!(streamed_text(&msgs), "Hello, world! ✓");
    assert_eq!(resp["result"]["content"], "Hello, world! ✓");
    let (msgs, _) = c.prompt(&sid, "again");
    let thought: String = updates(&msgs)
        .iter()
        .filter(|u| u["type"] == "agent_thought_chunk")
        .map(|u| u["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(thought, "thinking hard");
    assert_eq!(streamed_text(&msgs), "second answer");
    // The second request carries the first turn (no system prompt configured).
    let sent = request_messages(&fake, 1);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[1]["content"], "Hello, world! ✓");
}

/// Runs a prompt, answering each approval request with `decision`; returns every message
/// seen before the answer, and the answer.
fn prompt_approving(c: &mut Conn, sid: &str, prompt: &str, decision: &str) -> (Vec<Value>, Value) {
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
                json!({"sessionId": sid, "requestId": rid, "decision": decision}),
            );
        }
        seen.push(msg);
    }
}

#[test]
fn tool_call_approved_once_runs_and_reports_in_order() {
    let fake = Fake::start();
    fake.push(Scripted::ToolCalls {
        text: vec!["Let me ".into(), "check.".into()],
        calls: vec![FakeToolCall::new(
            "tc_1",
            "bash",
            json!({"command": "echo hi-there"}),
        )],
    });
    fake.push(Scripted::text("All done."));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (msgs, resp) = prompt_approving(&mut c, &sid, "run it", "allow_once");
    let kinds: Vec<String> = update_types(&msgs)
        .into_iter()
        .filter(|t| t != "agent_message_chunk")
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message",
            "usage",
            "tool_call",
            "approval_request",
            "approval_resolved",
            "tool_output_chunk",
            "tool_result",
            "usage",
            "turn_complete"
        ]
    );
    let ups = updates(&msgs);
    let resolved = ups
        .iter()
        .find(|u| u["type"] == "approval_resolved")
        .unwrap();
    assert_eq!(resolved["decision"], "allow_once");
    assert_eq!(resolved["reason"], "answered");
    let call = ups.iter().find(|u| u["type"] == "tool_call").unwrap();
    assert_eq!(call["toolCallId"], "tc_1");
    assert_eq!(call["name"], "bash");
    assert_eq!(call["rawInput"], json!({"command": "echo hi-there"}));
    let ask = ups
        .iter()
        .find(|u| u["type"] == "approval_request")
        .unwrap();
    assert_eq!(ask["toolName"], "bash");
    assert_eq!(ask["argumentsSummary"], "echo hi-there");
    assert_eq!(ask["timeoutSecs"], 120);
    let res = ups.iter().find(|u| u["type"] == "tool_result").unwrap();
    assert!(
        res["rawOutput"].as_str().unwrap().contains("hi-there"),
        "{res}"
    );
    // Approve answers arrive as ordinary responses among the updates.
    assert!(
        msgs.iter()
            .any(|m| m["result"]["acknowledged"] == true && m["result"]["sessionId"] == sid)
    );
    assert_eq!(resp["result"]["content"], "All done.");
    assert_eq!(streamed_text(&msgs), "Let me check.All done.");
    let rows = roles(&c.messages(&sid));
    let kinds: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        kinds,
        ["user", "assistant", "tool_call", "tool_result", "assistant"]
    );
    // The provider got the tool result paired with its call.
    let sent = request_messages(&fake, 1);
    assert_eq!(sent[1]["tool_calls"][0]["id"], "tc_1");
    assert_eq!(sent[2]["role"], "tool");
    assert_eq!(sent[2]["tool_call_id"], "tc_1");
}

#[test]
fn rejected_tool_is_refused_and_allow_always_covers_later_turns() {
    let fake = Fake::start();
    let marker = "zc-approval-marker";
    let write = |id: &str| {
        Scripted::tool_call(
            id,
            "write_file",
            json!({"path": "out.txt", "content": marker}),
        )
    };
    fake.push(write("w1"));
    fake.push(Scripted::text("ok, not written"));
    fake.push(write("w2"));
    fake.push(Scripted::text("written"));
    fake.push(write("w3"));
    fake.push(Scripted::text("written again"));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "default"}));
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let file = std::path::Path::new(r["workspaceDir"].as_str().unwrap()).join("out.txt");

    let (msgs, _) = prompt_approving(&mut c, &sid, "write", "reject");
    let res = updates(&msgs)
        .into_iter()
        .find(|u| u["type"] == "tool_result")
        .unwrap();
    assert!(
        res["rawOutput"].as_str().unwrap().contains("refused"),
        "{res}"
    );
    assert!(!file.exists());

    let (msgs, _) = prompt_approving(&mut c, &sid, "write", "allow_always");
    assert_eq!(
        update_types(&msgs)
            .iter()
            .filter(|t| *t == "approval_request")
            .count(),
        1
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), marker);
    std::fs::remove_file(&file).unwrap();

    // A later turn: no approval asked any more.
    let (msgs, resp) = c.prompt(&sid, "write again");
    assert!(!update_types(&msgs).contains(&"approval_request".to_string()));
    assert_eq!(resp["result"]["content"], "written again");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), marker);
}

// An unanswered approval (120 s) and question (300 s): crates/zeroclaw-daemon/tests/timing.rs
// times both in process.

#[test]
fn cancel_mid_stream_returns_within_a_second_and_keeps_partial_text() {
    let fake = Fake::start();
    let chunks: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    fake.push(Scripted::chunks(chunks, Duration::from_millis(150)));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "long"}),
    );
    let mut seen = Vec::new();
    while streamed_text(&seen).split_whitespace().count() < 3 {
        seen.push(c.recv());
    }
    let sent_at = Instant::now();
    let cancel = c.send_call("session/cancel", json!({"sessionId": sid}));
    let (more, resp) = c.collect_until(&id);
    let elapsed = sent_at.elapsed();
    assert!(elapsed < Duration::from_secs(1), "cancel took {elapsed:?}");
    seen.extend(more);
    assert!(
        seen.iter()
            .any(|m| m["id"] == cancel && m["result"]["cancelled"] == true),
        "cancel answered"
    );
    let result = &resp["result"];
    assert_eq!(result["outcome"], "cancelled");
    let partial = streamed_text(&seen);
    assert!(partial.starts_with("w0 w1 w2 "), "{partial}");
    assert_eq!(result["content"], partial.as_str());
    let rows = roles(&c.messages(&sid));
    assert_eq!(rows[1], ("assistant".to_string(), partial));
    // The session still serves.
    fake.push(Scripted::text("after"));
    let (_, resp) = c.prompt(&sid, "next");
    assert_eq!(resp["result"]["content"], "after");
}

#[test]
fn provider_failure_fails_the_turn_and_the_daemon_keeps_serving() {
    let fake = Fake::start();
    fake.push(Scripted::http_error(400, "upstream exploded"));
    fake.push(Scripted::broken(["half ", "a "]));
    fake.push(Scripted::text("recovered"));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (msgs, resp) = c.prompt(&sid, "one");
    assert_eq!(resp["result"]["outcome"], "failed");
    let content = resp["result"]["content"].as_str().unwrap();
    assert!(
        content.contains("400") && content.contains("upstream exploded"),
        "{content}"
    );
    assert_eq!(update_types(&msgs).last().unwrap(), "turn_complete");
    let (_, resp) = c.prompt(&sid, "two");
    assert_eq!(resp["result"]["outcome"], "failed");
    let (_, resp) = c.prompt(&sid, "three");
    assert_eq!(resp["result"]["outcome"], "completed");
    assert_eq!(resp["result"]["content"], "recovered");
    assert!(c.result("status", json!({}))["serverPid"].is_number());
}

#[test]
fn ask_user_round_trip_while_the_client_uses_the_same_outbound_id() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Favourite colour?", "choices": ["red", "blue"]}),
    ));
    fake.push(Scripted::text("Blue it is."));
    let daemon = start(&fake, "");
    let mut c = daemon.eliciting_client();
    let sid = new_session(&mut c, "default");
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "ask me"}),
    );
    let mut seen = Vec::new();
    let mut own_answered = false;
    let resp = loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            break msg;
        }
        if msg["method"] == "elicitation/create" {
            assert_eq!(msg["id"], "zc-out-0");
            let p = &msg["params"];
            assert_eq!(p["sessionId"], sid.as_str());
            assert_eq!(p["mode"], "form");
            assert_eq!(p["message"], "Favourite colour?");
            let options = &p["requestedSchema"]["properties"]["choice"]["oneOf"];
            assert_eq!(options[1], json!({"const": "blue", "title": "blue"}));
            // Our own request with the very same id, while the daemon's is outstanding.
            c.send(r#"{"jsonrpc":"2.0","id":"zc-out-0","method":"status","params":{}}"#);
            let mine = c.recv_response(&json!("zc-out-0"));
            assert!(mine["result"]["serverPid"].is_number(), "{mine}");
            own_answered = true;
            c.send(
                &json!({"jsonrpc": "2.0", "id": "zc-out-0",
                    "result": {"action": "accept", "content": {"choice": "blue"}}})
                .to_string(),
            );
            continue;
        }
        seen.push(msg);
    };
    assert!(own_answered);
    let res = updates(&seen)
        .into_iter()
        .find(|u| u["type"] == "tool_result")
        .unwrap();
    assert_eq!(res["rawOutput"], "blue");
    assert_eq!(resp["result"]["content"], "Blue it is.");
    let sent = request_messages(&fake, 1);
    assert_eq!(sent.last().unwrap()["content"], "blue");
}

#[test]
fn ask_user_declined_or_not_offered_gives_no_answer() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Name?"}),
    ));
    fake.push(Scripted::text("ok"));
    fake.push(Scripted::text("plain"));
    let daemon = start(&fake, "");
    let mut c = daemon.eliciting_client();
    let sid = new_session(&mut c, "default");
    let id = c.send_call("session/prompt", json!({"sessionId": sid, "prompt": "ask"}));
    let mut seen = Vec::new();
    loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            break;
        }
        if msg["method"] == "elicitation/create" {
            let schema = &msg["params"]["requestedSchema"];
            assert_eq!(schema["properties"]["answer"]["type"], "string");
            c.send(
                &json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "decline"}})
                    .to_string(),
            );
            continue;
        }
        seen.push(msg);
    }
    let res = updates(&seen)
        .into_iter()
        .find(|u| u["type"] == "tool_result")
        .unwrap();
    assert!(
        res["rawOutput"].as_str().unwrap().contains("no answer"),
        "{res}"
    );
    // A client without the capability is not offered the tool.
    let mut plain = daemon.client();
    let sid2 = new_session(&mut plain, "default");
    plain.prompt(&sid2, "hello");
    let tools: Vec<String> = fake.requests()[2]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!tools.contains(&"ask_user".to_string()), "{tools:?}");
    assert!(tools.contains(&"bash".to_string()));
}

#[test]
fn workspace_escapes_by_the_model_are_refused() {
    let fake = Fake::start();
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("r1", "read_file", json!({"path": "../../etc/passwd"})),
        FakeToolCall::new("r2", "read_file", json!({"path": "/etc/passwd"})),
    ]));
    fake.push(Scripted::text("could not"));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (msgs, _) = c.prompt(&sid, "read it");
    let results: Vec<Value> = updates(&msgs)
        .into_iter()
        .filter(|u| u["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    for r in results {
        let out = r["rawOutput"].as_str().unwrap();
        assert!(out.starts_with("Refused:"), "{out}");
        assert!(!out.contains("root:"), "{out}");
    }
}

#[test]
fn thirty_third_waiting_prompt_is_busy_and_close_answers_the_queue() {
    let fake = Fake::start();
    let chunks: Vec<String> = (0..200).map(|i| format!("c{i} ")).collect();
    fake.push(Scripted::chunks(chunks, Duration::from_millis(50)));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let first = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "slow"}),
    );
    loop {
        if c.recv()["params"]["type"] == "agent_message_chunk" {
            break;
        }
    }
    // 33 more: the running turn is not counted, 32 may wait, exactly one is refused.
    let mut ids = Vec::new();
    for i in 0..33 {
        ids.push(c.send_call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": format!("q{i}")}),
        ));
    }
    let busy = loop {
        let msg = c.recv();
        if ids.contains(&msg["id"]) {
            break msg;
        }
    };
    assert_eq!(code(&busy["error"]), -32002, "{busy}");
    // Close: the running turn is cancelled, the 32 queued prompts are answered -32000.
    let close = c.send_call("session/close", json!({"sessionId": sid}));
    let mut queued_errors = 0;
    let mut first_outcome = None;
    let mut closed = false;
    while !(closed && first_outcome.is_some() && queued_errors == 32) {
        let msg = c.recv();
        if msg["id"] == first {
            first_outcome = Some(msg["result"]["outcome"].clone());
        } else if msg["id"] == close {
            closed = msg["result"]["closed"] == true;
        } else if ids.contains(&msg["id"]) {
            assert_eq!(code(&msg["error"]), -32000, "{msg}");
            queued_errors += 1;
        }
    }
    assert_eq!(first_outcome.unwrap(), "cancelled");
    assert_eq!(c.result("status", json!({}))["activeSessions"], 0);
}

#[test]
fn a_client_that_disconnects_mid_turn_does_not_lose_the_turn() {
    let fake = Fake::start();
    let chunks: Vec<String> = (0..10).map(|i| format!("part{i} ")).collect();
    let full: String = chunks.concat();
    fake.push(Scripted::chunks(chunks, Duration::from_millis(60)));
    let daemon = start(&fake, "");
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "talk"}),
    );
    loop {
        if a.recv()["params"]["type"] == "agent_message_chunk" {
            break;
        }
    }
    drop(a);
    let mut b = daemon.client();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = roles(&b.messages(&sid));
        if rows.len() == 2 {
            assert_eq!(rows[1], ("assistant".to_string(), full));
            break;
        }
        assert!(Instant::now() < deadline, "turn never persisted: {rows:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = b.result("status", json!({}));
    assert_eq!(status["sessionIds"], json!([sid]));
    // The session outlived its connection and serves the next one.
    fake.push(Scripted::text("still here"));
    let (_, resp) = b.prompt(&sid, "hello?");
    assert_eq!(resp["result"]["content"], "still here");
}

#[test]
fn list_and_messages_paging() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "p"}));
    for i in 1..=3 {
        c.prompt("p", &format!("prompt {i}"));
    }
    let page = c.result("session/messages", json!({"sessionId": "p", "limit": 2}));
    assert_eq!(page["total"], 6);
    let seqs: Vec<i64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [5, 6]);
    let m = &page["messages"][0];
    assert_eq!(m["role"], "user");
    assert_eq!(m["content"], "prompt 3");
    assert!(m["turnId"].is_string() && m["createdAt"].is_number(), "{m}");
    let page = c.result(
        "session/messages",
        json!({"session_id": "p", "limit": 2, "before_seq": 5}),
    );
    let seqs: Vec<i64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 4]);

    c.new_session(json!({"agentAlias": "echo", "sessionId": "q", "mode": "chat"}));
    let list = c.result("session/list", json!({}));
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    let p = sessions.iter().find(|s| s["sessionId"] == "p").unwrap();
    assert_eq!(p["mode"], "acp");
    assert_eq!(p["agentAlias"], "echo");
    assert_eq!(p["messageCount"], 6);
    assert_eq!(p["live"], true);
    assert_eq!(p["interactionSurface"], "rpc");
    assert!(p["createdAt"].is_number() && p["lastActivity"].is_number());
    let chat = c.result("session/list", json!({"mode": "chat"}));
    assert_eq!(chat["sessions"].as_array().unwrap().len(), 1);
    c.result("session/close", json!({"sessionId": "p"}));
    let list = c.result("session/list", json!({"mode": "acp"}));
    assert_eq!(list["sessions"][0]["live"], false);
}

#[test]
fn non_admin_principals_only_touch_their_own_sessions() {
    let fake = Fake::start();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let extra = format!(
        r#"[permission_profiles.user]
grants = {{ sessions = ["create", "read", "update", "execute", "delete"], system = ["read"] }}
allowed_agents = ["echo"]

[users.me]
uid = {uid}
permission_profiles = ["user"]
"#
    );
    let daemon = start(&fake, &extra);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "ops"}));
    c.prompt("ops", "operator's words");
    // From now on this uid resolves to user:me (policy is re-read on every call).
    c.result(
        "config/set",
        json!({"prop": "security.trust_daemon_uid", "value": false}),
    );
    assert_eq!(
        code(&c.error("session/prompt", json!({"sessionId": "ops", "prompt": "x"}))),
        -32003
    );
    assert_eq!(
        code(&c.error("session/messages", json!({"sessionId": "ops"}))),
        -32003
    );
    assert_eq!(
        code(&c.error("session/kill", json!({"sessionId": "ops"}))),
        -32003
    );
    assert_eq!(
        code(&c.error("session/close", json!({"sessionId": "ops"}))),
        -32003
    );
    assert_eq!(
        code(&c.error(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": "ops"})
        )),
        -32003
    );
    let e = c.error("session/new", json!({"agentAlias": "default"}));
    assert_eq!(code(&e), -32012, "agent not allowed: {e}");
    let status = c.result("status", json!({}));
    assert_eq!(status["sessionIds"], json!([]));
    c.new_session(json!({"agentAlias": "echo", "sessionId": "mine"}));
    let (_, resp) = c.prompt("mine", "my words");
    assert_eq!(resp["result"]["content"], "my words");
    let status = c.result("status", json!({}));
    assert_eq!(status["sessionIds"], json!(["mine"]));
    let list = c.result("session/list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(list["sessions"][0]["sessionId"], "mine");
}

#[test]
fn turns_of_different_sessions_run_concurrently() {
    let fake = Fake::start();
    for _ in 0..2 {
        let chunks: Vec<String> = (0..10).map(|i| format!("x{i} ")).collect();
        fake.push(Scripted::chunks(chunks, Duration::from_millis(60)));
    }
    let daemon = start(&fake, "");
    let mut a = daemon.client();
    let mut b = daemon.client();
    let sa = new_session(&mut a, "default");
    let sb = new_session(&mut b, "default");
    let started = Instant::now();
    let ia = a.send_call("session/prompt", json!({"sessionId": sa, "prompt": "a"}));
    let ib = b.send_call("session/prompt", json!({"sessionId": sb, "prompt": "b"}));
    let (ma, ra) = a.collect_until(&ia);
    let (mb, rb) = b.collect_until(&ib);
    let elapsed = started.elapsed();
    assert_eq!(ra["result"]["outcome"], "completed");
    assert_eq!(rb["result"]["outcome"], "completed");
    // Each stream takes about 540 ms; one after the other would take over a second.
    assert!(elapsed < Duration::from_millis(1000), "{elapsed:?}");
    // Each connection saw only its own session's updates.
    assert!(updates(&ma).iter().all(|u| u["sessionId"] == sa.as_str()));
    assert!(updates(&mb).iter().all(|u| u["sessionId"] == sb.as_str()));
}
