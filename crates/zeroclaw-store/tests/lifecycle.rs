//! Sessions, turns, snapshots, deletion and schema handling against a real SQLite file.

mod common;

use common::*;
use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, Mode, NewRow, Progress, RPC_SURFACE, SCHEMA_VERSION, SessionKey, Store,
    StoreError,
};

#[tokio::test]
async fn migrations_are_idempotent_and_data_survives_reopen() {
    let t = open().await;
    let key = SessionKey::acp("s1");
    create(&t.store, &key).await;
    t.store.begin_turn(&key, "t1", "hello").await.unwrap();
    assert_eq!(t.store.schema_version().await.unwrap(), SCHEMA_VERSION);
    drop(t.store);

    // Reopen twice (sync and async forms), concurrently alive.
    let a = Store::open_blocking(&t.path).unwrap();
    let b = Store::open(&t.path).await.unwrap();
    assert_eq!(a.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(b.schema_version().await.unwrap(), SCHEMA_VERSION);
    let row = b.get_session(&key).await.unwrap().unwrap();
    assert_eq!(row.message_count, 1);
    drop((a, b));

    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&t.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroclaw.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    drop(conn);
    let err = Store::open(&path).await.unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 999, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn open_resume_kill_and_list() {
    let t = open().await;
    let s = &t.store;
    let acp = SessionKey::acp("same");
    let chat = SessionKey::chat("same");
    create(s, &acp).await;
    create(s, &chat).await; // same id, other mode: a separate row

    let again = s.open_session(session(&acp, RPC_SURFACE)).await.unwrap();
    assert!(again.resumed);
    assert_eq!(again.row.mode, Mode::Acp);

    assert_eq!(s.list_sessions(None).await.unwrap().len(), 2);
    assert_eq!(s.list_sessions(Some(Mode::Chat)).await.unwrap().len(), 1);

    s.begin_turn(&acp, "t1", "hi").await.unwrap();
    s.finish_turn(
        &acp,
        "t1",
        CheckpointStatus::Completed,
        vec![NewRow::assistant("hello")],
    )
    .await
    .unwrap();
    let listed = s.list_sessions(Some(Mode::Acp)).await.unwrap();
    assert_eq!(listed[0].message_count, 2);

    s.kill(&acp).await.unwrap();
    s.kill(&acp).await.unwrap(); // idempotent
    let err = s
        .open_session(session(&acp, RPC_SURFACE))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Killed { .. }), "{err}");
    let err = s.begin_turn(&acp, "t2", "again").await.unwrap_err();
    assert!(matches!(err, StoreError::Killed { .. }), "{err}");
    // Tombstoned rows are hidden from the list but stay readable.
    assert_eq!(s.list_sessions(None).await.unwrap().len(), 1);
    let row = s.get_session(&acp).await.unwrap().unwrap();
    assert!(row.killed_at.is_some());
    assert_eq!(transcript(s, &acp).await.len(), 2);

    let err = s.kill(&SessionKey::acp("nope")).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn a_full_turn_and_text_segments_upsert() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    let started = s.begin_turn(&key, "t1", "list files").await.unwrap();
    assert_eq!(started, 1);

    // Streaming: the accumulated text of segment 0 is written three times.
    assert_eq!(
        s.record_progress(&key, "t1", text(0, "Let")).await.unwrap(),
        0
    );
    assert_eq!(
        s.record_progress(&key, "t1", text(0, "Let me"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        s.record_progress(&key, "t1", text(0, "Let me look."))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        s.record_progress(&key, "t1", Progress::ToolCall(call("tc1")))
            .await
            .unwrap(),
        1
    );
    // Re-recording the same call is not a duplicate.
    assert_eq!(
        s.record_progress(&key, "t1", Progress::ToolCall(call("tc1")))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        s.record_progress(&key, "t1", Progress::ToolResult(result("tc1")))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        s.record_progress(&key, "t1", text(1, "Two files."))
            .await
            .unwrap(),
        3
    );

    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!(cp.status, CheckpointStatus::Open);
    assert_eq!(cp.started_seq, 1);
    let events: Vec<_> = cp
        .events
        .iter()
        .map(|e| (e.n, e.progress.clone()))
        .collect();
    assert_eq!(
        events,
        vec![
            (0, text(0, "Let me look.")),
            (1, Progress::ToolCall(call("tc1"))),
            (2, Progress::ToolResult(result("tc1"))),
            (3, text(1, "Two files.")),
        ]
    );

    let rows: Vec<NewRow> = cp
        .events
        .iter()
        .filter_map(|e| e.progress.to_row())
        .collect();
    let seqs = s
        .finish_turn(&key, "t1", CheckpointStatus::Completed, rows)
        .await
        .unwrap();
    assert_eq!(seqs, vec![2, 3, 4, 5]);
    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!(cp.status, CheckpointStatus::Completed);

    let tr = transcript(s, &key).await;
    assert_dense(&tr);
    let roles: Vec<&str> = tr.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool_call", "tool_result", "assistant"]
    );
    assert_eq!(
        tr[2].2,
        r#"{"toolCallId":"tc1","name":"bash","rawInput":{"command":"ls"}}"#
    );
    let page = s.messages(&key, Default::default()).await.unwrap();
    assert_eq!(page.rows[0].turn_id.as_deref(), Some("t1"));

    // Closed turn: no more progress, no second finish.
    let err = s
        .record_progress(&key, "t1", text(2, "late"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TurnNotOpen { .. }), "{err}");
    let err = s
        .finish_turn(&key, "t1", CheckpointStatus::Completed, vec![])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TurnNotOpen { .. }), "{err}");
}

#[tokio::test]
async fn turn_errors_are_distinct() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    let chat = SessionKey::chat("c");
    create(s, &key).await;
    create(s, &chat).await;

    let err = s.begin_turn(&chat, "t1", "x").await.unwrap_err();
    assert!(matches!(err, StoreError::WrongMode { .. }), "{err}");
    let err = s
        .begin_turn(&SessionKey::acp("missing"), "t1", "x")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    let err = s
        .record_progress(&key, "nope", text(0, "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TurnNotFound { .. }), "{err}");

    s.begin_turn(&key, "t1", "x").await.unwrap();
    let err = s.begin_turn(&key, "t2", "y").await.unwrap_err();
    assert!(
        matches!(err, StoreError::TurnStillOpen { ref turn_id, .. } if turn_id == "t1"),
        "{err}"
    );
    let err = s
        .finish_turn(&key, "t1", CheckpointStatus::Interrupted, vec![])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidFinishStatus(_)), "{err}");
    s.finish_turn(&key, "t1", CheckpointStatus::Cancelled, vec![])
        .await
        .unwrap();
    let err = s.begin_turn(&key, "t1", "again").await.unwrap_err();
    assert!(matches!(err, StoreError::TurnExists { .. }), "{err}");

    let err = s.save_snapshot(&key, 5, json!([])).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::InvalidBoundary {
                covers_seq: 5,
                last_seq: 1
            }
        ),
        "{err}"
    );
    // The failed calls left the transcript as it was: one prompt row.
    assert_dense(&transcript(s, &key).await);
    assert_eq!(transcript(s, &key).await.len(), 1);
}

#[tokio::test]
async fn seq_is_dense_and_never_changes_across_snapshots() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    let mut before_snapshot = Vec::new();
    for i in 0..5 {
        let turn = format!("t{i}");
        s.begin_turn(&key, &turn, &format!("prompt {i}"))
            .await
            .unwrap();
        s.record_progress(&key, &turn, text(0, "answer"))
            .await
            .unwrap();
        s.finish_turn(
            &key,
            &turn,
            CheckpointStatus::Completed,
            vec![NewRow::assistant(format!("answer {i}"))],
        )
        .await
        .unwrap();
        if i == 2 {
            before_snapshot = transcript(s, &key).await;
            let last = before_snapshot.last().unwrap().0;
            s.save_snapshot(&key, last, json!([{"role": "user", "content": "prompt 2"}]))
                .await
                .unwrap();
            s.save_snapshot(&key, last, json!([])).await.unwrap();
        }
    }
    let after = transcript(s, &key).await;
    assert_dense(&after);
    assert_eq!(after.len(), 10);
    assert_eq!(&after[..before_snapshot.len()], &before_snapshot[..]);
    // Only the latest snapshot is kept.
    assert_eq!(count(&t.path, "snapshots"), 1);
}

#[tokio::test]
async fn delete_removes_acp_rows_and_leaves_chat_with_same_id() {
    let t = open().await;
    let s = &t.store;
    let acp = SessionKey::acp("dup");
    let chat = SessionKey::chat("dup");
    create(s, &acp).await;
    create(s, &chat).await;
    s.begin_turn(&acp, "t1", "q").await.unwrap();
    s.record_progress(&acp, "t1", text(0, "a")).await.unwrap();
    s.finish_turn(
        &acp,
        "t1",
        CheckpointStatus::Completed,
        vec![NewRow::assistant("a")],
    )
    .await
    .unwrap();
    s.save_snapshot(&acp, 2, json!([])).await.unwrap();
    s.begin_turn(&acp, "t2", "q2").await.unwrap(); // an open checkpoint too
    s.record_progress(&acp, "t2", text(0, "b")).await.unwrap();
    s.append_rows(
        &chat,
        Some("c1"),
        vec![NewRow::user("hi"), NewRow::assistant("yo")],
    )
    .await
    .unwrap();
    let chat_before = dump_session(&t.path, &chat);

    assert!(s.delete(&acp).await.unwrap());
    assert!(s.get_session(&acp).await.unwrap().is_none());
    for table in ["checkpoints", "checkpoint_events", "snapshots"] {
        assert_eq!(count(&t.path, table), 0, "{table}");
    }
    assert_eq!(count(&t.path, "transcript"), 2); // the chat rows
    assert_eq!(dump_session(&t.path, &chat), chat_before);
    assert!(!s.delete(&acp).await.unwrap());
    let err = s.messages(&acp, Default::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");

    // The id is free again for a new ACP session, numbered from 1.
    create(s, &acp).await;
    assert_eq!(s.begin_turn(&acp, "t1", "fresh").await.unwrap(), 1);
}
