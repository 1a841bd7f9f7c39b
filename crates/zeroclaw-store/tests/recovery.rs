//! DURABILITY.md recovery invariants against a real SQLite file.

mod common;

use common::*;
use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, INTERRUPTED, NewRow, Progress, RPC_SURFACE, Role, SessionKey, Store,
    StoreError,
};

/// A turn that crashed after streaming text, one finished tool call and one unfinished.
async fn interrupted_turn(s: &Store, key: &SessionKey, turn: &str) {
    s.begin_turn(key, turn, "do it").await.unwrap();
    s.record_progress(key, turn, text(0, "Wor")).await.unwrap();
    s.record_progress(key, turn, text(0, "Working on it"))
        .await
        .unwrap();
    s.record_progress(key, turn, Progress::ToolCall(call("tc1")))
        .await
        .unwrap();
    s.record_progress(key, turn, Progress::ToolResult(result("tc1")))
        .await
        .unwrap();
    s.record_progress(key, turn, Progress::ToolCall(call("tc2")))
        .await
        .unwrap();
}

async fn completed_turn(s: &Store, key: &SessionKey, turn: &str, answer: &str) {
    s.begin_turn(key, turn, &format!("q {turn}")).await.unwrap();
    s.record_progress(key, turn, text(0, answer)).await.unwrap();
    s.finish_turn(
        key,
        turn,
        CheckpointStatus::Completed,
        vec![NewRow::assistant(answer)],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn recovery_appends_progress_once_with_one_marker() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    completed_turn(s, &key, "t0", "first answer").await;
    interrupted_turn(s, &key, "t1").await;

    let rec = s.recover(&key, RPC_SURFACE).await.unwrap();
    assert_eq!(rec.interrupted_turns, vec!["t1".to_string()]);
    assert_eq!(rec.appended_rows, 5); // text, call, result, call, marker
    let tr = transcript(s, &key).await;
    assert_dense(&tr);
    let tail: Vec<(&str, &str)> = tr[2..]
        .iter()
        .map(|r| (r.1.as_str(), r.2.as_str()))
        .collect();
    assert_eq!(tail[0], ("user", "do it"));
    assert_eq!(tail[1], ("assistant", "Working on it"));
    assert_eq!(tail[2].0, "tool_call");
    assert_eq!(tail[3].0, "tool_result");
    assert_eq!(tail[4].0, "tool_call");
    assert_eq!(tail[5], ("interruption", INTERRUPTED));
    assert_eq!(
        tr.iter().filter(|r| r.1 == "interruption").count(),
        1,
        "exactly one marker"
    );
    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!(cp.status, CheckpointStatus::Interrupted);

    // No snapshot: the context is the transcript, marker excluded, unmatched call dropped.
    let ctx = rec.context;
    assert!(ctx.snapshot.is_none());
    let roles: Vec<Role> = ctx.rows.iter().map(|r| r.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::ToolCall,
            Role::ToolResult
        ]
    );
    assert!(ctx.rows.iter().all(|r| r.content != INTERRUPTED));
    assert!(!ctx.rows.iter().any(|r| r.content.contains("tc2")));

    // Recovering again adds nothing and returns the same context.
    let dump = dump_session(&t.path, &key);
    let again = s.recover(&key, RPC_SURFACE).await.unwrap();
    assert!(again.interrupted_turns.is_empty());
    assert_eq!(again.appended_rows, 0);
    assert_eq!(again.context, ctx);
    assert_eq!(dump_session(&t.path, &key), dump);
    assert!(
        s.recover_all_interrupted(RPC_SURFACE)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(dump_session(&t.path, &key), dump);

    // The session carries on after recovery.
    completed_turn(s, &key, "t2", "after").await;
    assert_dense(&transcript(s, &key).await);
}

#[tokio::test]
async fn recovery_after_a_crash_and_reopen() {
    let t = open().await;
    let key = SessionKey::acp("s");
    create(&t.store, &key).await;
    interrupted_turn(&t.store, &key, "t1").await;
    drop(t.store); // the daemon dies mid-turn

    let s = Store::open(&t.path).await.unwrap();
    let recovered = s.recover_all_interrupted(RPC_SURFACE).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].key, key);
    assert_eq!(recovered[0].interrupted_turns, vec!["t1".to_string()]);
    assert_eq!(recovered[0].appended_rows, 5);
    // Rehydrating later finds nothing more to do but still returns the context.
    let rec = s.recover(&key, RPC_SURFACE).await.unwrap();
    assert_eq!(rec.appended_rows, 0);
    assert_eq!(rec.context.rows.len(), 4);
}

#[tokio::test]
async fn context_is_latest_snapshot_plus_events_after_its_boundary() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    completed_turn(s, &key, "t0", "zero").await;
    completed_turn(s, &key, "t1", "one").await;
    s.save_snapshot(&key, 2, json!([{"role": "old"}]))
        .await
        .unwrap();
    let messages =
        json!([{"role": "user", "content": "q t1"}, {"role": "assistant", "content": "one"}]);
    s.save_snapshot(&key, 4, messages.clone()).await.unwrap();
    interrupted_turn(s, &key, "t2").await;

    let rec = s.recover(&key, RPC_SURFACE).await.unwrap();
    let snap = rec.context.snapshot.expect("snapshot");
    assert_eq!(snap.covers_seq, 4);
    assert_eq!(snap.messages, messages);
    let rows: Vec<(i64, Role)> = rec.context.rows.iter().map(|r| (r.seq, r.role)).collect();
    assert_eq!(
        rows,
        [
            (5, Role::User),
            (6, Role::Assistant),
            (7, Role::ToolCall),
            (8, Role::ToolResult)
        ]
    );
    assert!(
        rec.context
            .rows
            .iter()
            .all(|r| r.turn_id.as_deref() == Some("t2"))
    );
    assert_eq!(s.context(&key).await.unwrap().snapshot.unwrap().id, snap.id);
}

#[tokio::test]
async fn an_empty_snapshot_is_authoritative() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    completed_turn(s, &key, "t0", "zero").await;
    s.save_snapshot(&key, 2, json!([])).await.unwrap();

    // Nothing after the boundary: the context is exactly empty.
    let ctx = s.recover(&key, RPC_SURFACE).await.unwrap().context;
    assert_eq!(ctx.snapshot.as_ref().unwrap().messages, json!([]));
    assert!(ctx.rows.is_empty());

    interrupted_turn(s, &key, "t1").await;
    let ctx = s.recover(&key, RPC_SURFACE).await.unwrap().context;
    assert_eq!(ctx.snapshot.as_ref().unwrap().messages, json!([]));
    assert_eq!(ctx.rows.first().map(|r| r.seq), Some(3));
    assert!(!ctx.rows.iter().any(|r| r.content == "zero"));
}

#[tokio::test]
async fn other_surfaces_are_left_byte_for_byte() {
    let t = open().await;
    let s = &t.store;
    let rpc = SessionKey::acp("rpc-session");
    let cli = SessionKey::acp("cli-session");
    create(s, &rpc).await;
    s.open_session(session(&cli, "cli")).await.unwrap();
    completed_turn(s, &cli, "c0", "done").await;
    s.save_snapshot(&cli, 2, json!([{"x": 1}])).await.unwrap();
    interrupted_turn(s, &cli, "c1").await;
    interrupted_turn(s, &rpc, "r1").await;
    let cli_before = dump_session(&t.path, &cli);

    let recovered = s.recover_all_interrupted(RPC_SURFACE).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].key, rpc);
    assert_eq!(dump_session(&t.path, &cli), cli_before);

    // Rehydrating the other surface's row over RPC is refused without touching it.
    let err = s.recover(&cli, RPC_SURFACE).await.unwrap_err();
    assert!(
        matches!(err, StoreError::UnsupportedSurface { .. }),
        "{err}"
    );
    // Resuming it (session/new) does not modify it either.
    let opened = s.open_session(session(&cli, RPC_SURFACE)).await.unwrap();
    assert!(opened.resumed);
    assert_eq!(opened.row.interaction_surface, "cli");
    assert_eq!(dump_session(&t.path, &cli), cli_before);
    let cp = s.checkpoint(&cli, "c1").await.unwrap().unwrap();
    assert_eq!(cp.status, CheckpointStatus::Open);

    // That surface's own recovery still finds it.
    let theirs = s.recover_all_interrupted("cli").await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].key, cli);
}

#[tokio::test]
async fn killed_sessions_are_never_recovered_and_stay_readable() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("k");
    create(s, &key).await;
    interrupted_turn(s, &key, "t1").await;
    s.kill(&key).await.unwrap();
    let before = dump_session(&t.path, &key);

    assert!(
        s.recover_all_interrupted(RPC_SURFACE)
            .await
            .unwrap()
            .is_empty()
    );
    let err = s.recover(&key, RPC_SURFACE).await.unwrap_err();
    assert!(matches!(err, StoreError::Killed { .. }), "{err}");
    assert_eq!(dump_session(&t.path, &key), before);
    let page = s.messages(&key, Default::default()).await.unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.rows[0].content, "do it");
}

#[tokio::test]
async fn a_turn_closed_by_recovery_cannot_be_finished_late() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    interrupted_turn(s, &key, "t1").await;
    s.recover(&key, RPC_SURFACE).await.unwrap();
    let err = s
        .finish_turn(
            &key,
            "t1",
            CheckpointStatus::Completed,
            vec![NewRow::assistant("x")],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TurnNotOpen {
                status: CheckpointStatus::Interrupted,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(transcript(s, &key).await.len(), 6);
}

#[tokio::test]
async fn empty_text_and_unknown_tool_rows_never_reach_the_context() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    s.begin_turn(&key, "t1", "q").await.unwrap();
    s.record_progress(&key, "t1", text(0, "")).await.unwrap();
    s.record_progress(&key, "t1", Progress::ToolResult(result("orphan")))
        .await
        .unwrap();
    let rec = s.recover(&key, RPC_SURFACE).await.unwrap();
    // The orphan result is visible in the transcript, but not sent to the provider.
    let roles: Vec<String> = transcript(s, &key).await.into_iter().map(|r| r.1).collect();
    assert_eq!(roles, ["user", "tool_result", "interruption"]);
    let ctx: Vec<Role> = rec.context.rows.iter().map(|r| r.role).collect();
    assert_eq!(ctx, [Role::User]);
}
