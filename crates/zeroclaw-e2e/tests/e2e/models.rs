//! Token usage, `models/list`, `session/configure` and `session/status` over the real
//! binary (SPEC §16), against the fake OpenAI server.

use crate::common;

use std::time::Duration;

use common::{Conn, Fake, TestDaemon, code, session_config, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn, agent: &str) -> String {
    let r = c.new_session(json!({"agentAlias": agent}));
    r["sessionId"].as_str().unwrap().to_string()
}

/// The `usage` updates, without the stream numbering (`turnId`, `eventSeq`: checked to be
/// there, tested in streams.rs).
fn usage_updates(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["type"] == "usage")
        .map(|mut u| {
            let map = u.as_object_mut().expect("an object");
            assert!(map.remove("turnId").is_some_and(|t| t.is_string()));
            assert!(map.remove("eventSeq").is_some_and(|s| s.is_u64()));
            u
        })
        .collect()
}

#[test]
fn usage_follows_every_provider_call_and_the_total_survives_a_restart() {
    let fake = Fake::start();
    let mut daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");

    // Two provider calls, both reporting usage (10 in, 5 out).
    fake.push(Scripted::tool_call(
        "c1",
        "read_file",
        json!({"path": "missing.txt"}),
    ));
    fake.push(Scripted::text("done"));
    let (msgs, answer) = c.prompt(&sid, "read it");
    let usage = usage_updates(&msgs);
    assert_eq!(usage.len(), 2, "{msgs:?}");
    assert_eq!(
        usage[0],
        json!({"sessionId": sid, "type": "usage", "inputTokens": 10, "outputTokens": 5,
               "sessionTotalTokens": 15, "contextTokens": 15, "contextWindow": 32000,
               "estimated": false})
    );
    assert_eq!(usage[1]["sessionTotalTokens"], 30);
    // The usage of a call comes before the next call's tool events and before the end.
    let types: Vec<String> = updates(&msgs)
        .iter()
        .map(|u| u["type"].as_str().unwrap_or("?").to_string())
        .collect();
    let first_usage = types.iter().position(|t| t == "usage").unwrap();
    let tool_call = types.iter().position(|t| t == "tool_call").unwrap();
    assert!(first_usage < tool_call, "{types:?}");
    assert_eq!(types.last().map(String::as_str), Some("turn_complete"));
    let turn_usage = json!({"inputTokens": 20, "outputTokens": 10});
    assert_eq!(answer["result"]["usage"], turn_usage);
    let done = updates(&msgs)
        .into_iter()
        .find(|u| u["type"] == "turn_complete")
        .unwrap();
    assert_eq!(done["usage"], turn_usage);
    // The request asked for usage in the stream.
    assert_eq!(fake.requests()[0]["stream_options"]["include_usage"], true);

    // A provider that reports nothing: estimated.
    fake.server.set_usage(false);
    fake.push(Scripted::text("twelve bytes"));
    let (msgs, answer) = c.prompt(&sid, "again");
    let usage = usage_updates(&msgs);
    assert_eq!(usage.len(), 1, "{msgs:?}");
    assert_eq!(usage[0]["estimated"], true);
    assert_eq!(usage[0]["outputTokens"], 3, "12 bytes at 4 bytes a token");
    let input = usage[0]["inputTokens"].as_u64().unwrap();
    assert!(input > 0);
    let total = 30 + input + 3;
    assert_eq!(usage[0]["sessionTotalTokens"], total);
    assert_eq!(answer["result"]["usage"]["outputTokens"], 3);

    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["usage"]["sessionTotalTokens"], total);
    assert_eq!(status["usage"]["contextTokens"], input + 3);
    assert_eq!(status["usage"]["contextWindow"], 32000);

    // The total is kept with the session: a resumed session goes on counting from it.
    drop(c);
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(Duration::from_secs(10)).is_some());
    daemon.spawn(&[]);
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "default", "sessionId": sid}));
    assert_eq!(r["resumed"], true);
    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["usage"]["sessionTotalTokens"], total);
}

#[test]
fn models_list_asks_the_provider_and_falls_back_with_an_error() {
    let fake = Fake::start();
    fake.server
        .set_models(Ok(vec!["m".to_string(), "big-model".to_string()]));
    let daemon = start(&fake);
    let mut c = daemon.client();

    let r = c.result("models/list", json!({"agentAlias": "default"}));
    assert_eq!(
        r["models"],
        json!([
            {"provider": "fake", "model": "m", "current": true},
            {"provider": "fake", "model": "big-model", "current": false},
        ])
    );
    let r = c.result("models/list", json!({"agentAlias": "echo"}));
    assert_eq!(
        r["models"],
        json!([{"provider": "echo", "model": "echo", "current": true}])
    );
    // Without an agent: every provider.
    let r = c.result("models/list", json!({}));
    assert_eq!(r["models"].as_array().unwrap().len(), 3, "{r}");
    let e = c.error("models/list", json!({"agentAlias": "nope"}));
    assert_eq!(code(&e), -32602);

    // Cached: a second list within 60 s does not ask again.
    let asked = |fake: &Fake| {
        fake.server
            .recorded()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count()
    };
    assert_eq!(asked(&fake), 1);
    c.result("models/list", json!({"agentAlias": "default"}));
    assert_eq!(asked(&fake), 1);
}

#[test]
fn models_list_failing_gives_the_configured_model_with_the_error() {
    let fake = Fake::start();
    fake.server.set_models(Err(500));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let r = c.result("models/list", json!({"agentAlias": "default"}));
    let models = r["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{r}");
    assert_eq!(models[0]["model"], "m");
    assert_eq!(models[0]["current"], true);
    assert!(models[0]["error"].as_str().unwrap().contains("500"), "{r}");

    // With no list to check against, session/configure accepts the model.
    let sid = new_session(&mut c, "default");
    let r = c.result(
        "session/configure",
        json!({"sessionId": sid, "model": "anything"}),
    );
    assert_eq!(r["model"], "anything");
}

#[test]
fn configure_changes_the_next_request_rejects_unknown_values_and_survives_a_restart() {
    let fake = Fake::start();
    fake.server
        .set_models(Ok(vec!["m".to_string(), "big-model".to_string()]));
    let mut daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let other = new_session(&mut c, "default");

    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "model": "no-such-model"}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("big-model"), "{e}");
    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "reckless"}),
    );
    assert_eq!(code(&e), -32602, "{e}");

    let r = c.result(
        "session/configure",
        json!({"sessionId": sid, "model": "big-model", "autonomy": "full"}),
    );
    assert_eq!(
        r,
        json!({"sessionId": sid, "autonomy": "full", "model": "big-model"})
    );
    c.prompt(&sid, "hi");
    c.prompt(&other, "hi");
    let reqs = fake.requests();
    let completions: Vec<&Value> = reqs.iter().filter(|b| b.get("model").is_some()).collect();
    assert_eq!(completions[0]["model"], "big-model");
    // Only that session changed.
    assert_eq!(completions[1]["model"], "m");

    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["agentAlias"], "default");
    assert_eq!(status["autonomy"], "full");
    assert_eq!(status["model"], "big-model");
    assert_eq!(status["activeTurnId"], Value::Null);
    assert_eq!(status["queuedPrompts"], 0);
    assert_eq!(status["subscribers"], 1);
    assert_eq!(status["mcpServers"], json!([]));
    // The turn's updates are held for replay.
    assert!(
        status["replayBytes"].as_u64().is_some_and(|b| b > 0),
        "{status}"
    );

    // Full autonomy: bash runs without an approval request.
    fake.push(Scripted::tool_call(
        "b1",
        "bash",
        json!({"command": "echo hi"}),
    ));
    fake.push(Scripted::text("ran"));
    let (msgs, answer) = c.prompt(&sid, "run");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert!(
        !updates(&msgs)
            .iter()
            .any(|u| u["type"] == "approval_request"),
        "{msgs:?}"
    );

    // Persisted with the session: after a restart the resumed session keeps both.
    drop(c);
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(Duration::from_secs(10)).is_some());
    daemon.spawn(&[]);
    let mut c = daemon.client();
    let before = fake.requests().len();
    let (_, answer) = c.prompt(&sid, "after restart");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    let reqs = fake.requests();
    let last = reqs[before..]
        .iter()
        .rfind(|b| b.get("model").is_some())
        .unwrap();
    assert_eq!(last["model"], "big-model");
    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["autonomy"], "full");

    // Back to the agent's model with an empty string.
    let r = c.result("session/configure", json!({"sessionId": sid, "model": ""}));
    assert_eq!(r["model"], "m");
}
