//! Timing rules of the daemon, in process and in milliseconds: the real timeouts (SPEC
//! §13 approvals and questions, §3.3 stalled readers and the in-flight limit, §8 upload
//! expiry, §9 ephemeral mode) under a clock the test jumps forward (see tests/harness).

mod harness;

use std::time::Duration;

use harness::{Bed, skip, updates_of};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use zeroclaw_testkit::Scripted;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `wait`, bounded by `limit` of the test's clock (virtual time while it is paused).
async fn within<T>(limit: Duration, what: &str, wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, wait)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {limit:?}"))
}

/// The session id of a new session of agent `default`.
async fn new_session(c: &mut harness::Client) -> String {
    let r = c
        .result("session/new", json!({"agentAlias": "default"}))
        .await;
    r["sessionId"].as_str().expect("sessionId").to_string()
}

#[tokio::test]
async fn an_approval_is_open_for_120_seconds_then_rejected() {
    let bed = Bed::with_fake().await;
    let fake = bed.fake();
    fake.push(Scripted::tool_call(
        "b1",
        "bash",
        json!({"command": "echo first"}),
    ));
    fake.push(Scripted::tool_call(
        "b2",
        "bash",
        json!({"command": "echo second"}),
    ));
    fake.push(Scripted::text("done"));
    let mut c = bed.client(false).await;
    let sid = new_session(&mut c).await;
    let prompt = c
        .send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}))
        .await;

    // First request: still open 118 s later, and answering it then works.
    let (_, ask) = c.until("approval_request").await;
    assert_eq!(ask["params"]["timeoutSecs"], 120);
    skip(secs(118)).await;
    let approve = c
        .send_call(
            "session/approve",
            json!({"sessionId": sid, "requestId": ask["params"]["requestId"], "decision": "allow_once"}),
        )
        .await;
    let (mut seen, approved) = c.collect_until(&approve).await;
    assert!(approved.get("result").is_some(), "{approved}");

    // Second request: nobody answers; 121 s later it is rejected and the turn goes on.
    let (more, ask) = c.until("approval_request").await;
    seen.extend(more);
    skip(secs(121)).await;
    let (more, done) = c.collect_until(&prompt).await;
    seen.extend(more);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    let results: Vec<String> = updates_of(&seen, "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("first"), "{results:?}");
    assert!(results[1].contains("refused"), "{results:?}");
    // A late answer finds nothing pending.
    let late = c
        .error_code(
            "session/approve",
            json!({"sessionId": sid, "requestId": ask["params"]["requestId"], "decision": "allow_once"}),
        )
        .await;
    assert_eq!(late, -32602);
}

#[tokio::test]
async fn a_question_waits_300_seconds_for_its_answer() {
    let bed = Bed::with_fake().await;
    let fake = bed.fake();
    fake.push(Scripted::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Colour?", "choices": ["red", "blue"]}),
    ));
    fake.push(Scripted::tool_call(
        "q2",
        "ask_user",
        json!({"question": "Name?"}),
    ));
    fake.push(Scripted::text("ok"));
    let mut c = bed.client(true).await;
    let sid = new_session(&mut c).await;
    let prompt = c
        .send_call("session/prompt", json!({"sessionId": sid, "prompt": "ask"}))
        .await;

    // Answered 298 s after it was asked: the answer still counts.
    let (mut seen, ask) = c.until("elicitation/create").await;
    skip(secs(298)).await;
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"choice": "blue"}}}))
        .await;

    // Unanswered: after 301 s the tool gets "no answer", and a late answer is ignored.
    let (more, ask) = c.until("elicitation/create").await;
    seen.extend(more);
    skip(secs(301)).await;
    let (more, done) = c.collect_until(&prompt).await;
    seen.extend(more);
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    let results: Vec<String> = updates_of(&seen, "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0], "blue");
    assert!(results[1].contains("no answer"), "{results:?}");
    // The connection is still served after the late answer.
    assert!(c.result("status", json!({})).await["serverPid"].is_number());
}

#[tokio::test]
async fn ephemeral_mode_stops_one_second_after_the_last_client() {
    let bed = Bed::plain().await;
    tokio::time::pause();
    bed.harness.watch_ephemeral();
    // Never before a first client, however long it takes.
    tokio::time::advance(secs(3600)).await;
    assert!(!bed.harness.is_stopping());
    let first = bed.connect();
    tokio::time::advance(secs(60)).await;
    assert!(!bed.harness.is_stopping(), "a client is connected");

    // Back within the grace: the exit is called off.
    drop(first);
    within(secs(60), "first client gone", bed.harness.wait_open(0)).await;
    tokio::time::advance(Duration::from_millis(900)).await;
    assert!(!bed.harness.is_stopping());
    let second = bed.connect();
    tokio::time::advance(secs(60)).await;
    assert!(
        !bed.harness.is_stopping(),
        "the second client keeps it running"
    );

    // The last client leaves: the daemon stops 1 s later (the clock only moves when
    // nothing else can run, so the time measured is the grace itself).
    drop(second);
    within(secs(60), "second client gone", bed.harness.wait_open(0)).await;
    let left = Instant::now();
    within(secs(60), "stopping", bed.harness.stopped()).await;
    let waited = left.elapsed();
    assert!(
        waited >= secs(1) && waited < Duration::from_millis(1100),
        "{waited:?}"
    );
}

#[tokio::test]
async fn a_reader_that_stalls_30_seconds_with_a_full_queue_is_disconnected() {
    let bed = Bed::plain().await;
    let mut other = bed.client(false).await;
    let mut stalled = bed.client(false).await;
    tokio::time::pause();
    // Requests and never a read: the replies (each echoing a 64 KiB id) fill the pipe,
    // then the 16 MiB queue; the daemon stops reading, and our writes block until it gives
    // up on us.
    let id = "x".repeat(64 * 1024);
    let batch = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":\"{id}\"}}\n");
    let started = Instant::now();
    within(secs(120), "the stalled peer disconnected", async {
        while stalled.writer.write_all(batch.as_bytes()).await.is_ok() {}
    })
    .await;
    let waited = started.elapsed();
    assert!(waited >= secs(30) && waited < secs(31), "{waited:?}");
    within(secs(60), "stalled peer gone", bed.harness.wait_open(1)).await;
    tokio::time::resume();
    // The other connection was not disturbed.
    let status = other.result("status", json!({})).await;
    assert_eq!(status["connections"], 1, "{status}");
}

#[tokio::test]
async fn an_upload_idle_for_five_minutes_expires() {
    let bed = Bed::with_fake().await;
    let mut c = bed.client(false).await;
    let sid = new_session(&mut c).await;
    let begin = c
        .result(
            "file/upload/begin",
            json!({"session_id": sid, "size_bytes": 3, "filename": "a.txt"}),
        )
        .await;
    let id = begin["upload_id"].clone();
    let chunk =
        |offset: u64, data: &str| json!({"upload_id": id, "offset": offset, "data_b64": data});
    // "a", "b", "c" in base64.
    c.result("file/upload/chunk", chunk(0, "YQ==")).await;
    // Idle just under five minutes: still there, and the chunk renews it.
    skip(secs(299)).await;
    c.result("file/upload/chunk", chunk(1, "Yg==")).await;
    skip(secs(299)).await;
    c.result("file/upload/chunk", chunk(2, "Yw==")).await;
    // Idle over five minutes: gone.
    skip(secs(301)).await;
    let code = c
        .error_code("file/upload/commit", json!({"upload_id": id}))
        .await;
    assert_eq!(code, -32602);
}

#[tokio::test]
async fn with_64_requests_running_the_65th_waits_for_a_free_slot() {
    let bed = Bed::with_fake().await;
    let fake = bed.fake();
    // Each turn asks for an approval nobody gives: it holds its slot for 120 s.
    for i in 0..64 {
        fake.push(Scripted::tool_call(
            &format!("b{i}"),
            "bash",
            json!({"command": "true"}),
        ));
    }
    for _ in 0..64 {
        fake.push(Scripted::text("done"));
    }
    let mut c = bed.client(false).await;
    let mut batch = String::new();
    for i in 0..64 {
        let sid = new_session(&mut c).await;
        batch.push_str(
            &json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": "x"}})
            .to_string(),
        );
        batch.push('\n');
    }
    batch.push_str(&json!({"jsonrpc": "2.0", "id": "late", "method": "status"}).to_string());
    batch.push('\n');
    c.writer.write_all(batch.as_bytes()).await.expect("send");

    // All 64 turns wait for their approvals, and the status request is not answered.
    let mut asked = 0;
    while asked < 64 {
        let msg = c.recv().await;
        assert_ne!(msg["id"], "late", "answered with every slot taken");
        if msg["method"] == "session/update" && msg["params"]["type"] == "approval_request" {
            asked += 1;
        }
    }
    // Meanwhile another connection is served.
    let mut other = bed.client(false).await;
    assert!(other.result("status", json!({})).await["serverPid"].is_number());

    // The approvals time out, the turns finish, and only then is the status answered.
    skip(secs(121)).await;
    let (mut late_seen, mut prompts_done) = (false, 0);
    while !late_seen || prompts_done < 64 {
        let msg = c.recv().await;
        if msg.get("method").is_some() {
            continue;
        }
        if msg["id"] == "late" {
            assert!(prompts_done >= 1, "status answered before a slot freed");
            late_seen = true;
        } else {
            assert_eq!(msg["result"]["outcome"], "completed", "{msg}");
            prompts_done += 1;
        }
    }
}
