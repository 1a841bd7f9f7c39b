//! A kill -9 in the middle of a streamed answer, on each native provider (SPEC §19), is
//! recovered as SPEC §7.3 says: after the restart the transcript holds the prompt, the
//! checkpointed partial answer and one `[interrupted]` marker, and the session serves the
//! next prompt on the same provider.

use crate::checkpointed;
use crate::common;

use checkpointed::wait_checkpointed;
use common::{Conn, TestDaemon, roles};
use serde_json::json;
use zeroclaw_testkit::{FakeAnthropic, FakeGemini, FakeOllama, GeminiReply, OllamaReply, Reply};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn start(kind: &str, base_url: &str) -> TestDaemon {
    let config = format!(
        r#"[providers.p]
kind = "{kind}"
base_url = "{base_url}"
api_key = "k"
model = "m"
timeout_secs = 30

[agents.default]
provider = "p"
tools = []
"#
    );
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// Prompts, waits until "part one " streamed and was checkpointed, kills the daemon,
/// restarts it and checks the recovered transcript; then `next` is answered.
fn crash_and_recover(daemon: &mut TestDaemon, next: &str) {
    let mut c: Conn = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "crash"}));
    c.send_call(
        "session/prompt",
        json!({"sessionId": "crash", "prompt": "tell me"}),
    );
    let mut streamed = String::new();
    while streamed != "part one " {
        let m = c.recv();
        if m["params"]["type"] == "agent_message_chunk" {
            streamed.push_str(m["params"]["text"].as_str().unwrap_or_default());
        }
    }
    wait_checkpointed(daemon, "crash", "part one ");
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let rows = roles(&c.messages("crash"));
    let pair = |r: &str, t: &str| (r.to_string(), t.to_string());
    assert_eq!(
        rows,
        [
            pair("user", "tell me"),
            pair("assistant", "part one "),
            pair("interruption", "[interrupted]")
        ]
    );
    let (_, resp) = c.prompt("crash", "again");
    assert_eq!(resp["result"]["content"], next, "{resp}");
}

#[test]
fn anthropic_kill_9_mid_stream_recovers() {
    let rt = runtime();
    let fake = rt.block_on(FakeAnthropic::start()).unwrap();
    fake.push(Reply::Stall {
        text: vec!["part ".into(), "one ".into()],
    });
    fake.push(Reply::text("recovered"));
    let mut daemon = start("anthropic", &fake.base_url());
    crash_and_recover(&mut daemon, "recovered");
    // The recovered partial answer went back to the API as the assistant's turn.
    let last = fake.messages_requests().pop().unwrap();
    assert_eq!(
        last["messages"][1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "part one "}]})
    );
}

#[test]
fn ollama_kill_9_mid_stream_recovers() {
    let rt = runtime();
    let fake = rt.block_on(FakeOllama::start()).unwrap();
    fake.push(OllamaReply::Stall {
        text: vec!["part ".into(), "one ".into()],
    });
    fake.push(OllamaReply::text("recovered"));
    let mut daemon = start("ollama", &fake.base_url());
    crash_and_recover(&mut daemon, "recovered");
}

#[test]
fn gemini_kill_9_mid_stream_recovers() {
    let rt = runtime();
    let fake = rt.block_on(FakeGemini::start()).unwrap();
    fake.push(GeminiReply::Stall {
        text: vec!["part ".into(), "one ".into()],
    });
    fake.push(GeminiReply::text("recovered"));
    let mut daemon = start("gemini", &fake.base_url());
    crash_and_recover(&mut daemon, "recovered");
}
