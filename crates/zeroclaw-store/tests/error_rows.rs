//! SPEC §22 "Failures stay in history" in the store: a failed turn's `error` row is in the
//! visible transcript (and a fork's copy of it) but never in the context a session is
//! rebuilt from, a rewind goes back to or a fork starts with; migration 7 (no role CHECK)
//! keeps a version-6 file's rows and message counts.

mod common;

use common::*;
use serde_json::{Value, json};
use zeroclaw_store::{
    CheckpointStatus, ForkRequest, MessagesQuery, NewRow, Role, SCHEMA_VERSION, SessionKey, Store,
    TurnError,
};

async fn failed_then_completed(s: &Store, key: &SessionKey) {
    s.begin_turn(key, "t1", "q1").await.unwrap();
    s.finish_turn(
        key,
        "t1",
        CheckpointStatus::Failed,
        vec![NewRow::error(&TurnError {
            message: "provider said no".into(),
            retries: 2,
        })],
    )
    .await
    .unwrap();
    s.begin_turn(key, "t2", "q2").await.unwrap();
    s.finish_turn(
        key,
        "t2",
        CheckpointStatus::Completed,
        vec![NewRow::assistant("a2")],
    )
    .await
    .unwrap();
}

fn roles(rows: &[zeroclaw_store::MessageRow]) -> Vec<Role> {
    rows.iter().map(|r| r.role).collect()
}

#[tokio::test]
async fn an_error_row_is_history_but_never_context() {
    let t = open().await;
    let key = SessionKey::acp("e");
    create(&t.store, &key).await;
    failed_then_completed(&t.store, &key).await;
    let page = t
        .store
        .messages(&key, MessagesQuery::default())
        .await
        .unwrap();
    assert_eq!(
        roles(&page.rows),
        [Role::User, Role::Error, Role::User, Role::Assistant]
    );
    let error = TurnError::from_content(&page.rows[1].content).unwrap();
    assert_eq!(error.message, "provider said no");
    assert_eq!(error.retries, 2);
    assert_eq!(page.rows[1].turn_id.as_deref(), Some("t1"));
    let row = t.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(row.message_count, 4);

    let want = json!([
        {"role": "user", "content": "q1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"},
    ]);
    assert_eq!(flatten(&t.store.context(&key).await.unwrap()), want);
    assert_eq!(
        flatten(&t.store.recover(&key, "rpc").await.unwrap().context),
        want
    );

    // A fork copies the row into its history, not into its context.
    let f = t
        .store
        .fork(
            ForkRequest {
                source: key.clone(),
                turn_id: None,
                new_session_id: "f".into(),
            },
            to_messages(),
        )
        .await
        .unwrap();
    assert_eq!(f.row.message_count, 4);
    let fk = SessionKey::acp("f");
    let context: Value = flatten(&t.store.context(&fk).await.unwrap());
    assert_eq!(context, want);
    assert!(!context.to_string().contains("provider said no"));
}

#[tokio::test]
async fn a_version_six_file_migrates_with_its_rows_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroclaw.db");
    Store::create_at_version(&path, 6).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (pk, mode, session_id, agent_alias, owner, interaction_surface, \
         created_at, last_activity) VALUES (1, 'acp', 'old', 'default', 'operator', 'rpc', 1, 1); \
         INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n) \
         VALUES (1, 1, 't1', 'user', 'hello', 1, NULL), \
                (1, 2, 't1', 'assistant', 'hi', 2, 0); \
         INSERT INTO checkpoints (session, turn_id, status, started_seq, created_at, updated_at) \
         VALUES (1, 't1', 'completed', 1, 1, 2);",
    )
    .unwrap();
    // Version 6 refuses the new role.
    assert!(
        conn.execute(
            "INSERT INTO transcript (session, seq, role, content, created_at) \
             VALUES (1, 3, 'error', '{}', 3)",
            [],
        )
        .is_err()
    );
    drop(conn);

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let key = SessionKey::acp("old");
    assert_eq!(
        store
            .get_session(&key)
            .await
            .unwrap()
            .unwrap()
            .message_count,
        2
    );
    // The counting triggers came back with the table: a failed turn adds two rows.
    store.begin_turn(&key, "t2", "again").await.unwrap();
    store
        .finish_turn(
            &key,
            "t2",
            CheckpointStatus::Failed,
            vec![NewRow::error(&TurnError {
                message: "down".into(),
                retries: 0,
            })],
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .get_session(&key)
            .await
            .unwrap()
            .unwrap()
            .message_count,
        4
    );
    let page = store
        .messages(&key, MessagesQuery::default())
        .await
        .unwrap();
    assert_eq!(
        roles(&page.rows),
        [Role::User, Role::Assistant, Role::User, Role::Error]
    );
}
