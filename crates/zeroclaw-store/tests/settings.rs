//! Per-session settings and token totals (schema version 2): saved, kept across a reopen,
//! removed with their session, and added to a version-1 file without touching its rows.

mod common;

use common::*;
use zeroclaw_store::{SCHEMA_VERSION, SessionKey, SessionSettings, Store};

#[tokio::test]
async fn settings_survive_reopen_and_go_with_their_session() {
    let t = open().await;
    let key = SessionKey::acp("s1");
    create(&t.store, &key).await;
    assert_eq!(
        t.store.settings(&key).await.unwrap(),
        Some(SessionSettings::default())
    );
    assert_eq!(
        t.store.settings(&SessionKey::acp("none")).await.unwrap(),
        None
    );
    t.store
        .set_overrides(&key, Some("full".into()), Some("m2".into()))
        .await
        .unwrap();
    t.store.set_usage(&key, 120, 40).await.unwrap();
    t.store.set_usage(&key, 150, 45).await.unwrap();
    drop(t.store);

    let store = Store::open(&t.path).await.unwrap();
    let want = SessionSettings {
        autonomy: Some("full".into()),
        model: Some("m2".into()),
        total_tokens: 150,
        context_tokens: 45,
    };
    assert_eq!(store.settings(&key).await.unwrap(), Some(want));
    store.set_overrides(&key, None, None).await.unwrap();
    let s = store.settings(&key).await.unwrap().unwrap();
    assert_eq!((s.autonomy, s.model, s.total_tokens), (None, None, 150));

    store.delete(&key).await.unwrap();
    create(&store, &key).await;
    assert_eq!(
        store.settings(&key).await.unwrap(),
        Some(SessionSettings::default())
    );
}

#[tokio::test]
async fn version_one_files_are_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroclaw.db");
    let key = SessionKey::acp("old");
    // A file as a build before settings (and list paging) wrote it.
    Store::create_at_version(&path, 1).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (pk, mode, session_id, agent_alias, owner, interaction_surface, \
         created_at, last_activity) VALUES (1, 'acp', 'old', 'default', 'operator', 'rpc', 1, 1); \
         INSERT INTO transcript (session, seq, turn_id, role, content, created_at) \
         VALUES (1, 1, 't1', 'user', 'hello', 1);",
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(
        store
            .get_session(&key)
            .await
            .unwrap()
            .unwrap()
            .message_count,
        1
    );
    store.set_usage(&key, 9, 9).await.unwrap();
    assert_eq!(store.settings(&key).await.unwrap().unwrap().total_tokens, 9);
}
