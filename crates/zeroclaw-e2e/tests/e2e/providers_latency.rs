//! The daemon's added latency on each provider kind (SPEC §19, docs/BENCHMARKS.md): from
//! the instant the fake server flushed a response's first text to the instant the client
//! read the first `agent_message_chunk` of that turn. Server and client live in this test
//! process, so both instants come from one clock. Prints p50 and p95 of 40 turns (after a
//! warm-up turn) and checks p50 stays far under a loose bound (the machine is shared;
//! the figures go to docs/BENCHMARKS.md).

use crate::common;

use std::time::{Duration, Instant};

use common::{Conn, TestDaemon};
use serde_json::json;
use zeroclaw_testkit::{
    FakeAnthropic, FakeGemini, FakeOllama, FakeOpenAi, GeminiReply, OllamaReply, Reply, Scripted,
};

const TURNS: usize = 40;

fn start(kind: &str, base_url: &str) -> TestDaemon {
    let config = format!(
        r#"[providers.p]
kind = "{kind}"
base_url = "{base_url}"
api_key = "k"
model = "m"

[agents.default]
provider = "p"
tools = []
"#
    );
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// Runs `TURNS + 1` turns; returns when each turn's first chunk was read.
fn first_chunks(daemon: &TestDaemon) -> Vec<Instant> {
    let mut c: Conn = daemon.client();
    let sid = c.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut seen = Vec::new();
    for i in 0..=TURNS {
        let id = c.send_call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": format!("p{i}")}),
        );
        let mut first = None;
        loop {
            let m = c.recv();
            if first.is_none() && m["params"]["type"] == "agent_message_chunk" {
                first = Some(Instant::now());
            }
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                assert_eq!(m["result"]["outcome"], "completed", "{m}");
                break;
            }
        }
        seen.push(first.expect("a chunk"));
    }
    seen
}

/// p50 and p95 of `received - sent`, without the warm-up turn.
fn report(kind: &str, sent: &[Instant], received: &[Instant]) -> Duration {
    assert_eq!(sent.len(), received.len(), "{kind}");
    let mut lat: Vec<Duration> = sent
        .iter()
        .zip(received)
        .skip(1)
        .map(|(s, r)| r.saturating_duration_since(*s))
        .collect();
    lat.sort();
    let p50 = lat[lat.len() / 2];
    let p95 = lat[lat.len() * 95 / 100];
    println!(
        "added latency {kind}: p50 {p50:?} p95 {p95:?} ({} turns)",
        lat.len()
    );
    p50
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

const BOUND: Duration = Duration::from_millis(20);

#[test]
fn added_latency_per_kind() {
    let rt = runtime();

    let openai = rt.block_on(FakeOpenAi::start()).unwrap();
    for _ in 0..=TURNS {
        openai.push(Scripted::text("alpha beta"));
    }
    let daemon = start("openai", &openai.base_url());
    let got = first_chunks(&daemon);
    assert!(report("openai", &openai.first_text_marks(), &got) < BOUND);
    drop(daemon);

    let claude = rt.block_on(FakeAnthropic::start()).unwrap();
    for _ in 0..=TURNS {
        claude.push(Reply::text("alpha beta"));
    }
    let daemon = start("anthropic", &claude.base_url());
    let got = first_chunks(&daemon);
    assert!(report("anthropic", &claude.first_text_marks(), &got) < BOUND);
    drop(daemon);

    let llama = rt.block_on(FakeOllama::start()).unwrap();
    for _ in 0..=TURNS {
        llama.push(OllamaReply::text("alpha beta"));
    }
    let daemon = start("ollama", &llama.base_url());
    let got = first_chunks(&daemon);
    assert!(report("ollama", &llama.first_text_marks(), &got) < BOUND);
    drop(daemon);

    let gemini = rt.block_on(FakeGemini::start()).unwrap();
    for _ in 0..=TURNS {
        gemini.push(GeminiReply::text("alpha beta"));
    }
    let daemon = start("gemini", &gemini.base_url());
    let got = first_chunks(&daemon);
    assert!(report("gemini", &gemini.first_text_marks(), &got) < BOUND);
}
