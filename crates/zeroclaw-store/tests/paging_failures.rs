//! `session/messages` paging, injected write failures and concurrent use.

mod common;

use common::*;
use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, MessageRow, MessagesQuery, NewRow, Progress, RPC_SURFACE, SessionKey,
    StoreError, message_json_size,
};

fn q(limit: Option<u32>, before_seq: Option<i64>, max_bytes: usize) -> MessagesQuery {
    MessagesQuery {
        limit,
        before_seq,
        max_bytes,
        max_content: usize::MAX,
        include_rewound: false,
    }
}

fn seqs(rows: &[MessageRow]) -> Vec<i64> {
    rows.iter().map(|r| r.seq).collect()
}

fn page_bytes(rows: &[MessageRow]) -> usize {
    serde_json::to_vec(rows).unwrap().len()
}

#[tokio::test]
async fn paging_by_limit_and_before_seq() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::chat("c");
    create(s, &key).await;
    let rows: Vec<NewRow> = (1..=10).map(|i| NewRow::user(format!("m{i}"))).collect();
    assert_eq!(
        s.append_rows(&key, None, rows).await.unwrap(),
        (1..=10).collect::<Vec<i64>>()
    );
    let big = 1 << 20;

    let p = s.messages(&key, q(Some(3), None, big)).await.unwrap();
    assert_eq!(seqs(&p.rows), [8, 9, 10]);
    assert_eq!(p.total, 10);
    assert!(p.has_more);

    let p = s.messages(&key, q(Some(3), Some(8), big)).await.unwrap();
    assert_eq!(seqs(&p.rows), [5, 6, 7]);
    assert_eq!(p.total, 10);

    let p = s.messages(&key, q(Some(30), Some(3), big)).await.unwrap();
    assert_eq!(seqs(&p.rows), [1, 2]);
    assert!(!p.has_more);

    let p = s.messages(&key, q(None, Some(1), big)).await.unwrap();
    assert!(p.rows.is_empty());
    assert_eq!(p.total, 10);
    assert!(!p.has_more);

    let p = s.messages(&key, q(None, None, big)).await.unwrap();
    assert_eq!(seqs(&p.rows), (1..=10).collect::<Vec<_>>());
    assert!(!p.has_more);
}

#[tokio::test]
async fn pages_never_exceed_the_byte_budget() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::chat("c");
    create(s, &key).await;
    // Content that grows when JSON-escaped.
    let nasty = "\"\\\n\u{1}é".repeat(200);
    let rows: Vec<NewRow> = (0..20).map(|_| NewRow::assistant(nasty.clone())).collect();
    s.append_rows(&key, Some("t"), rows).await.unwrap();

    let budget = 8 * 1024;
    let mut before = None;
    let mut seen = Vec::new();
    loop {
        let p = s.messages(&key, q(None, before, budget)).await.unwrap();
        assert!(!p.rows.is_empty());
        assert!(
            page_bytes(&p.rows) <= budget,
            "{} > {budget}",
            page_bytes(&p.rows)
        );
        assert!(p.rows.iter().all(|r| !r.truncated && r.content == nasty));
        let sizes: usize = p.rows.iter().map(message_json_size).sum();
        assert!(sizes <= budget);
        seen.splice(0..0, seqs(&p.rows));
        if !p.has_more {
            break;
        }
        before = Some(p.rows[0].seq);
    }
    assert_eq!(seen, (1..=20).collect::<Vec<_>>());

    // The budget is tight: the last three rows as an array need exactly `exact` bytes.
    let all = s.messages(&key, q(None, None, 1 << 20)).await.unwrap();
    let exact = page_bytes(&all.rows[17..]);
    let p = s.messages(&key, q(None, None, exact + 1)).await.unwrap();
    assert_eq!(seqs(&p.rows), [18, 19, 20]);
    let p = s.messages(&key, q(None, None, exact - 200)).await.unwrap();
    assert_eq!(seqs(&p.rows), [19, 20]);

    // A single row larger than the whole budget is cut to fit and marked.
    let p = s.messages(&key, q(Some(1), None, 500)).await.unwrap();
    assert_eq!(p.rows.len(), 1);
    assert!(p.rows[0].truncated);
    assert!(page_bytes(&p.rows) <= 500, "{}", page_bytes(&p.rows));
    assert!(nasty.starts_with(&p.rows[0].content));
    assert!(p.has_more);
}

#[tokio::test]
async fn injected_write_failures_commit_nothing() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    s.begin_turn(&key, "t1", "q").await.unwrap();
    s.record_progress(&key, "t1", text(0, "partial"))
        .await
        .unwrap();
    let before = dump_session(&t.path, &key);

    s.set_fail_writes(true);
    let injected = |e: StoreError| assert!(matches!(e, StoreError::InjectedFailure), "{e}");
    injected(
        s.record_progress(&key, "t1", text(0, "partial and more"))
            .await
            .unwrap_err(),
    );
    injected(
        s.record_progress(&key, "t1", Progress::ToolCall(call("x")))
            .await
            .unwrap_err(),
    );
    injected(
        s.finish_turn(
            &key,
            "t1",
            CheckpointStatus::Completed,
            vec![NewRow::assistant("a"), NewRow::assistant("b")],
        )
        .await
        .unwrap_err(),
    );
    injected(s.save_snapshot(&key, 1, json!([])).await.unwrap_err());
    injected(s.recover(&key, RPC_SURFACE).await.unwrap_err());
    injected(s.recover_all_interrupted(RPC_SURFACE).await.unwrap_err());
    injected(s.kill(&key).await.unwrap_err());
    injected(s.delete(&key).await.unwrap_err());
    injected(
        s.open_session(session(&SessionKey::acp("new"), RPC_SURFACE))
            .await
            .unwrap_err(),
    );
    // Reads keep working; nothing of the failed writes is visible.
    assert_eq!(s.messages(&key, Default::default()).await.unwrap().total, 1);
    assert!(
        s.get_session(&SessionKey::acp("new"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(dump_session(&t.path, &key), before);

    // Storage recovers: everything is still there and works.
    s.set_fail_writes(false);
    s.finish_turn(
        &key,
        "t1",
        CheckpointStatus::Completed,
        vec![NewRow::assistant("a")],
    )
    .await
    .unwrap();
    let tr = transcript(s, &key).await;
    assert_dense(&tr);
    assert_eq!(tr.len(), 2);
    assert!(s.delete(&key).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_keep_every_session_consistent() {
    let t = open().await;
    let shared = SessionKey::chat("shared");
    create(&t.store, &shared).await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = t.store.clone();
        tasks.push(tokio::spawn(async move {
            let key = SessionKey::acp(format!("s{i}"));
            s.open_session(session(&key, RPC_SURFACE)).await.unwrap();
            for turn in 0..15 {
                let turn = format!("t{turn}");
                s.begin_turn(&key, &turn, "q").await.unwrap();
                s.record_progress(&key, &turn, text(0, "a")).await.unwrap();
                s.record_progress(&key, &turn, Progress::ToolCall(call("c")))
                    .await
                    .unwrap();
                s.record_progress(&key, &turn, Progress::ToolResult(result("c")))
                    .await
                    .unwrap();
                s.finish_turn(
                    &key,
                    &turn,
                    CheckpointStatus::Completed,
                    vec![
                        NewRow::assistant("a"),
                        NewRow::tool_call(&call("c")),
                        NewRow::tool_result(&result("c")),
                    ],
                )
                .await
                .unwrap();
            }
        }));
    }
    for i in 0..8 {
        let s = t.store.clone();
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            for j in 0..25 {
                s.append_rows(&shared, None, vec![NewRow::user(format!("{i}-{j}"))])
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    for i in 0..8 {
        let key = SessionKey::acp(format!("s{i}"));
        let tr = transcript(&t.store, &key).await;
        assert_eq!(tr.len(), 60);
        assert_dense(&tr);
    }
    let tr = transcript(&t.store, &shared).await;
    assert_eq!(tr.len(), 200);
    assert_dense(&tr);
    assert_eq!(t.store.list_sessions(None).await.unwrap().len(), 9);
}
