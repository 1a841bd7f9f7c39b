//! Second hardening pass, sessions (SPEC §17.1): a session id names one owner, a call
//! without `mode` means the ACP session, `cwd` errors do not probe the disk, and a prompt
//! racing its session's end answers in the contract. The hostile side is a WebSocket
//! principal (`user:alice`), so no second uid is needed.

use crate::common;

use std::time::Duration;

use common::ws::{WSS_SECTION, WsClient, listening_port, pair};
use common::{TestDaemon, code, roles};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[providers.echo]
kind = "echo"
[agents.echo]
provider = "echo"
[permission_profiles.remote]
grants = { sessions = ["create", "read", "update", "execute", "delete"], config = ["read"] }
allowed_agents = ["echo"]
[users.alice]
permission_profiles = ["remote"]
"#;

/// A daemon with the echo agent, a WebSocket listener, and alice's token.
fn daemon() -> (TestDaemon, u16, String) {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), format!("{CONFIG}{WSS_SECTION}")).unwrap();
    });
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    (daemon, port, token)
}

fn pair_of(role: &str, text: &str) -> (String, String) {
    (role.to_string(), text.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_takes_another_owners_session_id_in_either_mode() {
    let (daemon, port, token) = daemon();
    let mut op = daemon.client();
    // The operator's ACP session, closed: persisted, not live.
    op.result(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "victim"}),
    );
    op.result(
        "session/prompt",
        json!({"sessionId": "victim", "prompt": "first"}),
    );
    op.result("session/close", json!({"sessionId": "victim"}));

    let mut alice = WsClient::open(port, &token).await;
    for mode in ["chat", "acp"] {
        let r = alice
            .call(
                "session/new",
                json!({"agentAlias": "echo", "sessionId": "victim", "mode": mode}),
            )
            .await;
        assert_eq!(code(&r["error"]), -32003, "mode {mode}: {r}");
    }
    // The same for a live one.
    op.result(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "live-one", "mode": "chat"}),
    );
    let r = alice
        .call(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": "live-one"}),
        )
        .await;
    assert_eq!(code(&r["error"]), -32003, "{r}");

    // The operator's mode-less prompt (as `zeroclaw acp` sends it) reaches its own ACP
    // session, brought back, and nothing else.
    let answer = op.result(
        "session/prompt",
        json!({"sessionId": "victim", "prompt": "db password hunter2"}),
    );
    assert_eq!(answer["content"], "db password hunter2");
    let rows = roles(&op.messages_in("victim", "acp"));
    assert_eq!(
        rows.last(),
        Some(&pair_of("assistant", "db password hunter2"))
    );
    let r = op.call(
        "session/messages",
        json!({"sessionId": "victim", "mode": "chat"}),
    );
    assert_eq!(code(&r["error"]), -32000, "no chat session was made: {r}");
    // Alice's own ids still work.
    let mine = alice
        .call(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": "alices", "mode": "chat"}),
        )
        .await;
    assert!(mine.get("result").is_some(), "{mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_less_call_never_reaches_a_chat_session_of_the_same_id() {
    let (daemon, port, token) = daemon();
    let mut alice = WsClient::open(port, &token).await;
    let r = alice
        .call(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": "shared", "mode": "chat"}),
        )
        .await;
    assert!(r.get("result").is_some(), "{r}");
    // An admin may make an ACP session of that id, close it, and prompt it without a mode.
    let mut op = daemon.client();
    op.result(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "shared"}),
    );
    op.result("session/close", json!({"sessionId": "shared"}));
    let answer = op.result(
        "session/prompt",
        json!({"sessionId": "shared", "prompt": "secret"}),
    );
    assert_eq!(answer["content"], "secret");
    let chat = alice
        .call(
            "session/messages",
            json!({"sessionId": "shared", "mode": "chat"}),
        )
        .await;
    assert_eq!(
        chat["result"]["messages"],
        json!([]),
        "the prompt went to alice's chat session: {chat}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cwd_outside_the_workspace_is_forbidden_whether_or_not_it_exists() {
    let (daemon, port, token) = daemon();
    let mut alice = WsClient::open(port, &token).await;
    let outside = [
        "/etc".to_string(),
        "/no/such/dir/anywhere".to_string(),
        "../../../../../../etc".to_string(),
        "../../../../../../no/such/dir".to_string(),
        daemon.config_dir().join("data").display().to_string(),
    ];
    for cwd in outside {
        let r = alice
            .call("session/new", json!({"agentAlias": "echo", "cwd": cwd}))
            .await;
        assert_eq!(code(&r["error"]), -32012, "cwd {cwd}: {r}");
        assert_eq!(r["error"]["data"]["prop"], "cwd", "{r}");
    }
    // Inside the workspace: a missing directory is still just that.
    let r = alice
        .call(
            "session/new",
            json!({"agentAlias": "echo", "cwd": "no-such-subdir"}),
        )
        .await;
    assert_eq!(code(&r["error"]), -32602, "{r}");
}

#[test]
fn prompts_racing_the_end_of_their_session_answer_in_the_contract() {
    let (daemon, _port, _token) = daemon();
    let mut prompter = daemon.client();
    let mut killer = daemon.client();
    let long = "word ".repeat(20_000);
    for round in 0..40 {
        let sid = format!("race-{round}");
        let mode = if round % 2 == 0 { "chat" } else { "acp" };
        prompter.result(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": sid, "mode": mode}),
        );
        let prompt = prompter.send_call(
            "session/prompt",
            json!({"sessionId": sid, "mode": mode, "prompt": long}),
        );
        let how = ["session/kill", "session/close", "session/delete"][round % 3];
        if round % 4 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        let ended = killer.call(how, json!({"sessionId": sid, "mode": mode}));
        assert!(ended.get("result").is_some(), "{how}: {ended}");
        let (_, answer) = prompter.collect_until(&prompt);
        match answer.get("error") {
            None => assert!(answer["result"]["outcome"].is_string(), "{answer}"),
            Some(e) => assert_eq!(code(e), -32000, "round {round} ({how}): {answer}"),
        }
    }
    let status: Value = prompter.result("status", json!({}));
    assert!(status["activeSessions"].is_number());
}
