//! Turns that fail or are cancelled: provider errors over real HTTP/SSE
//! (FakeOpenAi), timeouts, and cancellation at every wait.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Rec, TestHost, openai, openai_config, spec};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::turn::CANCELLED_RESULT;
use zeroclaw_agent::{Autonomy, ChatMessage, OpenAiProvider, TurnEvent, TurnOutcome, run_turn};
use zeroclaw_testkit::{FakeOpenAi, FakeToolCall, Scripted};

#[tokio::test]
async fn http_error_fails_with_the_provider_message() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::http_error(400, "the model is on fire"));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("the model is on fire"), "{}", r.content);
    assert!(r.content.contains("400"), "{}", r.content);
    assert_eq!(ctx, vec![ChatMessage::user("x")]);
}

#[tokio::test]
async fn broken_stream_fails_and_keeps_partial_text() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::broken(["partial ", "answer"]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("stream"), "{}", r.content);
    assert_eq!(host.text(), "partial answer");
    assert_eq!(ctx[1], ChatMessage::assistant("partial answer"));
}

#[tokio::test]
async fn stream_without_done_or_finish_reason_is_unexpected_end() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::raw([
        r#"{"choices":[{"index":0,"delta":{"content":"cut"},"finish_reason":null}]}"#,
    ]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let r = run_turn(
        &s,
        &mut vec![],
        "x".into(),
        &TestHost::new(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(
        r.content.contains("stream ended unexpectedly"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn finish_reason_without_done_is_accepted() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::raw([
        r#"{"choices":[{"index":0,"delta":{"content":"fine"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let r = run_turn(
        &s,
        &mut vec![],
        "x".into(),
        &TestHost::new(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Completed, "{}", r.content);
    assert_eq!(r.content, "fine");
}

#[tokio::test]
async fn malformed_event_and_in_stream_error_fail() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::raw(["{not json", "[DONE]"]));
    fake.push(Scripted::raw([
        r#"{"error":{"message":"rate limited mid-stream"}}"#,
    ]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("malformed"), "{}", r.content);
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(
        r.content.contains("rate limited mid-stream"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn reasoning_becomes_thought_chunks() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::reasoning("thinking hard", "the answer"));
    fake.push(Scripted::raw([
        r#"{"choices":[{"index":0,"delta":{"reasoning":"alt field"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.content, "the answer");
    assert_eq!(host.thoughts(), "thinking hard");
    // Hidden reasoning never enters the context.
    assert_eq!(ctx[1], ChatMessage::assistant("the answer"));
    let host = TestHost::new();
    run_turn(&s, &mut ctx, "y".into(), &host, CancellationToken::new()).await;
    assert_eq!(host.thoughts(), "alt field");
}

#[tokio::test]
async fn first_byte_and_idle_timeouts_fail() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::slow(
        Duration::from_secs(5),
        Scripted::text("late"),
    ));
    fake.push(Scripted::chunks(["a", "b"], Duration::from_secs(5)));
    let ws = tempfile::tempdir().unwrap();
    let mut cfg = openai_config(&fake);
    cfg.first_byte_timeout = Duration::from_millis(300);
    cfg.idle_timeout = Duration::from_millis(300);
    let s = spec(
        Arc::new(OpenAiProvider::new(cfg).unwrap()),
        ws.path(),
        Autonomy::Full,
    );
    let host = TestHost::new();
    let t = Instant::now();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("timed out"), "{}", r.content);
    assert!(t.elapsed() < Duration::from_secs(3));
    let t = Instant::now();
    let r = run_turn(&s, &mut vec![], "x".into(), &host, CancellationToken::new()).await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("timed out"), "{}", r.content);
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn unreachable_server_fails() {
    // Bind then drop to get a port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = zeroclaw_agent::OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    let ws = tempfile::tempdir().unwrap();
    let s = spec(
        Arc::new(OpenAiProvider::new(cfg).unwrap()),
        ws.path(),
        Autonomy::Full,
    );
    let r = run_turn(
        &s,
        &mut vec![],
        "x".into(),
        &TestHost::new(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(r.outcome, TurnOutcome::Failed);
    assert!(r.content.contains("cannot reach"), "{}", r.content);
}

/// Cancels `token` after `after`, returning the instant it fired.
fn cancel_after(token: &CancellationToken, after: Duration) -> tokio::task::JoinHandle<Instant> {
    let token = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        token.cancel();
        Instant::now()
    })
}

#[tokio::test]
async fn cancel_mid_stream_returns_fast_with_partial_text() {
    let fake = FakeOpenAi::start().await.unwrap();
    let chunks: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    fake.push(Scripted::chunks(chunks, Duration::from_millis(100)));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let token = CancellationToken::new();
    let fired = cancel_after(&token, Duration::from_millis(450));
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, token).await;
    let done = Instant::now();
    let fired = fired.await.unwrap();
    assert!(
        done - fired < Duration::from_millis(800),
        "{:?}",
        done - fired
    );
    assert_eq!(r.outcome, TurnOutcome::Cancelled);
    assert!(r.content.starts_with("w0 w1 "), "{}", r.content);
    assert!(r.content.len() < 50 * 3);
    assert_eq!(r.content, host.text());
    assert_eq!(ctx[1], ChatMessage::assistant(r.content.clone()));
    // The HTTP stream was dropped: the server cannot finish its response.
    let mut aborted = false;
    for _ in 0..100 {
        if fake.aborted_responses() == 1 {
            aborted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(aborted, "the server kept streaming to a cancelled turn");
}

#[tokio::test]
async fn cancel_before_first_byte() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::slow(
        Duration::from_secs(30),
        Scripted::text("late"),
    ));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let token = CancellationToken::new();
    let fired = cancel_after(&token, Duration::from_millis(200));
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &TestHost::new(), token).await;
    let elapsed = Instant::now() - fired.await.unwrap();
    assert!(elapsed < Duration::from_millis(800), "{elapsed:?}");
    assert_eq!(r.outcome, TurnOutcome::Cancelled);
    assert_eq!(r.content, "");
    assert_eq!(ctx, vec![ChatMessage::user("x")]);
}

#[tokio::test]
async fn cancel_kills_a_running_bash_and_closes_the_call() {
    let fake = FakeOpenAi::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let marker = ws.path().join("done");
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new(
            "c1",
            "bash",
            json!({"command": format!("sleep 30; echo done > {}", marker.display())}),
        ),
        FakeToolCall::new("c2", "bash", json!({"command": "echo never"})),
    ]));
    let s = spec(openai(&fake), ws.path(), Autonomy::Full);
    let host = TestHost::new();
    let token = CancellationToken::new();
    let fired = cancel_after(&token, Duration::from_millis(500));
    let mut ctx = vec![];
    let r = run_turn(&s, &mut ctx, "x".into(), &host, token).await;
    let elapsed = Instant::now() - fired.await.unwrap();
    assert!(elapsed < Duration::from_millis(800), "{elapsed:?}");
    assert_eq!(r.outcome, TurnOutcome::Cancelled);
    assert_eq!(fake.request_count(), 1);
    // c1 started (tool_call + cancelled tool_result); c2 never started.
    assert_eq!(
        host.tool_log(),
        vec![
            Rec::Event(TurnEvent::ToolCall {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                raw_input: json!({"command": format!("sleep 30; echo done > {}", marker.display())}),
            }),
            Rec::Event(TurnEvent::ToolResult {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                raw_output: CANCELLED_RESULT.into(),
            }),
        ]
    );
    // Every call in the context has a result.
    assert_eq!(ctx.len(), 4);
    assert_eq!(
        ctx[2],
        ChatMessage::tool_result("c1", "bash", CANCELLED_RESULT)
    );
    assert_eq!(
        ctx[3],
        ChatMessage::tool_result("c2", "bash", CANCELLED_RESULT)
    );
    assert_eq!(zeroclaw_agent::provider_safe(&ctx), ctx);
    // Ask the kernel: no process is left running the command (the command sleeps 30 s, so
    // it is gone only if it was killed).
    let running = || {
        std::process::Command::new("pgrep")
            .args(["-f", &format!("echo done > {}", marker.display())])
            .output()
            .is_ok_and(|out| !out.stdout.is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while running() {
        assert!(Instant::now() < deadline, "bash still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!marker.exists());
}

#[tokio::test]
async fn cancel_while_waiting_for_approval() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "touch x"}),
    ));
    let ws = tempfile::tempdir().unwrap();
    let s = spec(openai(&fake), ws.path(), Autonomy::Supervised);
    let mut host = TestHost::new();
    host.approve_delay = Duration::from_secs(30);
    let token = CancellationToken::new();
    let fired = cancel_after(&token, Duration::from_millis(300));
    let r = run_turn(&s, &mut vec![], "x".into(), &host, token).await;
    let elapsed = Instant::now() - fired.await.unwrap();
    assert!(elapsed < Duration::from_millis(800), "{elapsed:?}");
    assert_eq!(r.outcome, TurnOutcome::Cancelled);
    assert!(!ws.path().join("x").exists());
}
