//! SPEC §17 "Memory is bounded by the input" for the agent: a provider's error body is
//! read up to 64 KiB only, one streamed event over 8 MiB or a turn's visible text over
//! 32 MiB fails the turn with a clear message (real HTTP/SSE against FakeOpenAi).

mod common;

use std::time::{Duration, Instant};

use common::{TestHost, openai, spec};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::provider::openai::{MAX_ERROR_BODY, MAX_EVENT};
use zeroclaw_agent::{Autonomy, MAX_TURN_TEXT, TurnOutcome, run_turn};
use zeroclaw_testkit::{FakeOpenAi, Scripted};

const MIB: usize = 1024 * 1024;

/// One `data:` payload carrying `text` as content.
fn content_event(text: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        .to_string()
}

fn finish_events() -> [String; 2] {
    [
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        "[DONE]".to_string(),
    ]
}

#[tokio::test]
async fn a_huge_error_body_is_not_read_whole() {
    let fake = FakeOpenAi::start().await.unwrap();
    let len = 300 * MIB;
    fake.push(Scripted::huge_error(400, len));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let started = Instant::now();
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("400"), "{}", r.content);
    assert!(
        r.content.len() < MAX_ERROR_BODY,
        "{} bytes",
        r.content.len()
    );
    // Once the server has noticed the closed connection (its write failed: an aborted
    // response), how much of the body did it ever manage to write? Socket buffers, not
    // 300 MiB.
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.aborted_responses() == 0 {
        assert!(Instant::now() < deadline, "the server is still writing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let written = fake.error_bytes_written();
    assert!(
        written < 64 * MIB,
        "{written} bytes of the error body were read"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn one_event_over_the_limit_fails_the_turn() {
    let fake = FakeOpenAi::start().await.unwrap();
    let big = "x".repeat(MAX_EVENT + 1024);
    let [finish, done] = finish_events();
    fake.push(Scripted::raw([
        content_event("ok "),
        content_event(&big),
        finish,
        done,
    ]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed, "{}", r.content.len());
    assert!(
        r.content
            .contains(&format!("event exceeds {MAX_EVENT} bytes")),
        "{}",
        r.content
    );
    assert_eq!(
        host.text(),
        "ok ",
        "nothing of the oversized event was streamed"
    );
}

#[tokio::test]
async fn a_turn_over_the_visible_text_limit_fails() {
    let fake = FakeOpenAi::start().await.unwrap();
    // Five events of 7 MiB each: every event is allowed, their sum is not.
    let piece = "y".repeat(7 * MIB);
    let mut events: Vec<String> = (0..5).map(|_| content_event(&piece)).collect();
    events.extend(finish_events());
    fake.push(Scripted::raw(events));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed, "{}", r.content.len());
    // One response's text meets the bound on what a response holds (SPEC §17.2) first: the
    // same 32 MiB as the turn's visible text, counted by the provider as it reads.
    assert!(
        r.content.contains(&format!(
            "the response holds more than {MAX_TURN_TEXT} bytes"
        )),
        "{}",
        r.content
    );
    assert!(host.text().len() <= MAX_TURN_TEXT);
}
