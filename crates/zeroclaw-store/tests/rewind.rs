//! SPEC §18 in the store: migration 4 on a version-3 file, the context boundary recorded at
//! every turn start, rewind (one transaction, idempotent), fork and titles.

mod common;

use common::*;
use serde_json::{Value, json};
use zeroclaw_store::{
    CheckpointStatus, ForkRequest, ListQuery, MessagesQuery, NewRow, Role, SCHEMA_VERSION,
    SessionKey, Store, StoreError,
};

async fn turn(s: &Store, key: &SessionKey, id: &str) {
    s.begin_turn(key, id, &format!("q {id}")).await.unwrap();
    s.finish_turn(
        key,
        id,
        CheckpointStatus::Completed,
        vec![NewRow::assistant(format!("a {id}"))],
    )
    .await
    .unwrap();
}

async fn context(s: &Store, key: &SessionKey) -> Value {
    flatten(&s.context(key).await.unwrap())
}

fn pairs(ids: &[&str]) -> Value {
    let mut out = Vec::new();
    for id in ids {
        out.push(json!({"role": "user", "content": format!("q {id}")}));
        out.push(json!({"role": "assistant", "content": format!("a {id}")}));
    }
    Value::Array(out)
}

#[tokio::test]
async fn a_version_three_file_migrates_with_its_rows_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroclaw.db");
    Store::create_at_version(&path, 3).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (pk, mode, session_id, agent_alias, owner, interaction_surface, \
         created_at, last_activity) VALUES (1, 'acp', 'old', 'default', 'operator', 'rpc', 1, 1); \
         INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n) \
         VALUES (1, 1, 't1', 'user', 'hello\nworld', 1, NULL), \
                (1, 2, 't1', 'assistant', 'hi', 2, 0); \
         INSERT INTO checkpoints (session, turn_id, status, started_seq, created_at, updated_at) \
         VALUES (1, 't1', 'completed', 1, 1, 2);",
    )
    .unwrap();
    // Version 3 refuses the new role.
    assert!(
        conn.execute(
            "INSERT INTO transcript (session, seq, role, content, created_at) \
             VALUES (1, 3, 'compaction', 's', 3)",
            [],
        )
        .is_err()
    );
    drop(conn);

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let key = SessionKey::acp("old");
    let row = store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(row.message_count, 2);
    assert_eq!(
        row.title.as_deref(),
        Some("hello"),
        "first line of the first prompt"
    );
    assert_eq!(row.forked_from, None);
    let cp = store.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!((cp.started_seq, cp.snapshot_id), (1, None));
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<(i64, String, i64, Option<i64>)> = conn
        .prepare("SELECT seq, role, rewound, event_n FROM transcript ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        [
            (1, "user".to_owned(), 0, None),
            (2, "assistant".to_owned(), 0, Some(0))
        ]
    );
    conn.execute(
        "INSERT INTO transcript (session, seq, role, content, created_at) \
         VALUES (1, 3, 'compaction', 's', 3)",
        [],
    )
    .expect("version 4 takes compaction rows");
    // The unique index on recovered events came back with the table.
    assert!(
        conn.execute(
            "INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n) \
             VALUES (1, 4, 't1', 'assistant', 'again', 4, 0)",
            [],
        )
        .is_err()
    );
}

#[tokio::test]
async fn every_turn_start_records_the_latest_snapshot() {
    let t = open().await;
    let key = SessionKey::acp("s");
    create(&t.store, &key).await;
    turn(&t.store, &key, "t1").await;
    let snap = t
        .store
        .save_snapshot(&key, 2, pairs(&["t1"]))
        .await
        .unwrap();
    turn(&t.store, &key, "t2").await;
    // A later snapshot does not delete the one t2 started with.
    t.store.save_snapshot(&key, 4, json!([])).await.unwrap();
    t.store.save_snapshot(&key, 4, json!([])).await.unwrap();
    let t1 = t.store.checkpoint(&key, "t1").await.unwrap().unwrap();
    let t2 = t.store.checkpoint(&key, "t2").await.unwrap().unwrap();
    assert_eq!(t1.snapshot_id, None);
    assert_eq!(t2.snapshot_id, Some(snap));
    let ids: Vec<i64> = rusqlite::Connection::open(&t.path)
        .unwrap()
        .prepare("SELECT id FROM snapshots ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids, [snap, snap + 2], "kept: named by t2, and the latest");
}

#[tokio::test]
async fn rewind_flags_rows_restores_the_context_and_is_idempotent() {
    let t = open().await;
    let key = SessionKey::acp("s");
    create(&t.store, &key).await;
    turn(&t.store, &key, "t1").await;
    // A trim after t1 keeps only its answer.
    t.store
        .save_snapshot(&key, 2, json!([{"role": "assistant", "content": "a t1"}]))
        .await
        .unwrap();
    turn(&t.store, &key, "t2").await;
    turn(&t.store, &key, "t3").await;

    let r = t.store.rewind(&key, "t2", to_messages()).await.unwrap();
    assert_eq!(r.rewound_turns, ["t2", "t3"]);
    assert_eq!(r.prompt, "q t2");
    assert!(r.snapshot_id.is_some());
    assert_eq!(
        context(&t.store, &key).await,
        json!([{"role": "assistant", "content": "a t1"}]),
        "exactly the context t2 started with"
    );
    let page = t
        .store
        .messages(&key, MessagesQuery::default())
        .await
        .unwrap();
    let seqs: Vec<i64> = page.rows.iter().map(|r| r.seq).collect();
    assert_eq!((seqs, page.total), (vec![1, 2], 2));
    let all = t
        .store
        .messages(
            &key,
            MessagesQuery {
                include_rewound: true,
                ..MessagesQuery::default()
            },
        )
        .await
        .unwrap();
    let flags: Vec<(i64, bool)> = all.rows.iter().map(|r| (r.seq, r.rewound)).collect();
    assert_eq!(
        flags,
        [
            (1, false),
            (2, false),
            (3, true),
            (4, true),
            (5, true),
            (6, true)
        ]
    );
    assert_eq!(all.total, 6);

    // Twice: nothing more.
    let before = dump_session(&t.path, &key);
    let again = t.store.rewind(&key, "t2", to_messages()).await.unwrap();
    assert!(again.rewound_turns.is_empty());
    assert_eq!((again.prompt.as_str(), again.snapshot_id), ("q t2", None));
    assert_eq!(dump_session(&t.path, &key), before);

    // A new turn after the rewind continues numbering; rewinding to it goes back to the
    // rewind's context.
    turn(&t.store, &key, "t4").await;
    assert_eq!(
        context(&t.store, &key).await,
        json!([
            {"role": "assistant", "content": "a t1"},
            {"role": "user", "content": "q t4"},
            {"role": "assistant", "content": "a t4"}
        ])
    );
    let r = t.store.rewind(&key, "t4", to_messages()).await.unwrap();
    assert_eq!(r.rewound_turns, ["t4"]);
    assert_eq!(
        context(&t.store, &key).await,
        json!([{"role": "assistant", "content": "a t1"}])
    );
    // Back to the very first turn: nothing before it.
    let r = t.store.rewind(&key, "t1", to_messages()).await.unwrap();
    assert_eq!(r.rewound_turns, ["t1"]);
    assert_eq!(context(&t.store, &key).await, json!([]));
    assert_eq!(
        t.store
            .get_session(&key)
            .await
            .unwrap()
            .unwrap()
            .message_count,
        0
    );
}

#[tokio::test]
async fn rewind_refuses_unknown_and_open_turns_and_a_failed_write_leaves_nothing() {
    let t = open().await;
    let key = SessionKey::acp("s");
    let other = SessionKey::acp("other");
    create(&t.store, &key).await;
    create(&t.store, &other).await;
    turn(&t.store, &key, "t1").await;
    turn(&t.store, &other, "o1").await;
    let e = t.store.rewind(&key, "o1", to_messages()).await.unwrap_err();
    assert!(matches!(e, StoreError::TurnNotFound { .. }), "{e}");
    t.store.begin_turn(&key, "t2", "q t2").await.unwrap();
    let e = t.store.rewind(&key, "t1", to_messages()).await.unwrap_err();
    assert!(matches!(e, StoreError::TurnStillOpen { .. }), "{e}");
    t.store
        .recover(&key, zeroclaw_store::RPC_SURFACE)
        .await
        .unwrap();

    let before = dump_session(&t.path, &key);
    t.store.set_fail_writes(true);
    let e = t.store.rewind(&key, "t1", to_messages()).await.unwrap_err();
    assert!(matches!(e, StoreError::InjectedFailure), "{e}");
    t.store.set_fail_writes(false);
    assert_eq!(dump_session(&t.path, &key), before, "all or nothing");
}

#[tokio::test]
async fn fork_copies_up_to_the_turn_with_the_context_after_it() {
    let t = open().await;
    let key = SessionKey::acp("src");
    create(&t.store, &key).await;
    turn(&t.store, &key, "t1").await;
    turn(&t.store, &key, "t2").await;
    turn(&t.store, &key, "t3").await;
    t.store.rewind(&key, "t3", to_messages()).await.unwrap();
    // A running turn is never copied.
    t.store.begin_turn(&key, "t4", "q t4").await.unwrap();
    let source_before = dump_session(&t.path, &key);

    let f = t
        .store
        .fork(
            ForkRequest {
                source: key.clone(),
                turn_id: None,
                new_session_id: "f1".into(),
            },
            to_messages(),
        )
        .await
        .unwrap();
    assert_eq!(
        f.forked_from.turn_id.as_deref(),
        Some("t2"),
        "last finished, not rewound"
    );
    assert_eq!(f.row.message_count, 4);
    let fk = SessionKey::acp("f1");
    assert_eq!(context(&t.store, &fk).await, pairs(&["t1", "t2"]));
    assert_eq!(f.row.owner, "operator");
    assert_eq!(f.row.title.as_deref(), Some("q t1"));
    let forked_from = f.row.forked_from.clone().unwrap();
    assert_eq!(forked_from.session_id, "src");

    let f = t
        .store
        .fork(
            ForkRequest {
                source: key.clone(),
                turn_id: Some("t1".into()),
                new_session_id: "f2".into(),
            },
            to_messages(),
        )
        .await
        .unwrap();
    assert_eq!(f.row.message_count, 2);
    let fk2 = SessionKey::acp("f2");
    assert_eq!(context(&t.store, &fk2).await, pairs(&["t1"]));
    let page = t
        .store
        .messages(&fk2, MessagesQuery::default())
        .await
        .unwrap();
    let rows: Vec<(i64, Role)> = page.rows.iter().map(|r| (r.seq, r.role)).collect();
    assert_eq!(rows, [(1, Role::User), (2, Role::Assistant)]);
    // The fork takes turns of its own.
    turn(&t.store, &fk2, "t9").await;
    assert_eq!(context(&t.store, &fk2).await, pairs(&["t1", "t9"]));

    for (turn_id, want) in [("t3", "rewound"), ("t4", "still open"), ("zz", "no turn")] {
        let e = t
            .store
            .fork(
                ForkRequest {
                    source: key.clone(),
                    turn_id: Some(turn_id.into()),
                    new_session_id: format!("bad-{turn_id}"),
                },
                to_messages(),
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains(want), "{turn_id}: {e}");
    }
    let e = t
        .store
        .fork(
            ForkRequest {
                source: key.clone(),
                turn_id: None,
                new_session_id: "f1".into(),
            },
            to_messages(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::SessionExists { .. }), "{e}");
    assert_eq!(
        dump_session(&t.path, &key),
        source_before,
        "the source is unchanged"
    );
}

#[tokio::test]
async fn titles_are_set_or_derived_and_searched_ignoring_case() {
    let t = open().await;
    // Prompts of 64 KiB and more are stored as BLOBs: their title is read from their head.
    let large_tail = format!("\n{}", "x".repeat(200_000));
    let crabs = format!("{}{large_tail}", "🦀".repeat(100));
    let report = format!("Large École REPORT{large_tail}");
    for (id, prompt) in [
        ("a", "Fix the ÉCOLE build\nand more"),
        ("b", &"long ".repeat(40)),
        ("c", "nothing here"),
        ("d", &crabs),
        ("e", &report),
        ("f", &report),
    ] {
        let key = SessionKey::acp(id);
        create(&t.store, &key).await;
        t.store.begin_turn(&key, "t1", prompt).await.unwrap();
    }
    let row = |id: &str| {
        let s = t.store.clone();
        let id = id.to_owned();
        async move { s.get_session(&SessionKey::acp(id)).await.unwrap().unwrap() }
    };
    assert_eq!(row("a").await.title.as_deref(), Some("Fix the ÉCOLE build"));
    assert_eq!(row("b").await.title.unwrap().chars().count(), 80);
    t.store
        .set_title(&SessionKey::acp("c"), "My École notes")
        .await
        .unwrap();
    assert_eq!(row("c").await.title.as_deref(), Some("My École notes"));
    assert_eq!(row("d").await.title, Some("🦀".repeat(80)));
    assert_eq!(row("e").await.title.as_deref(), Some("Large École REPORT"));
    t.store
        .set_title(&SessionKey::acp("f"), "Set over a large prompt")
        .await
        .unwrap();
    assert_eq!(
        row("f").await.title.as_deref(),
        Some("Set over a large prompt")
    );
    let found = |search: &str| {
        let s = t.store.clone();
        let search = search.to_owned();
        async move {
            let page = s
                .list_page(ListQuery {
                    mode: None,
                    owner: None,
                    limit: 10,
                    after: None,
                    search: Some(search),
                    cwd: None,
                })
                .await
                .unwrap();
            let mut ids: Vec<String> = page.rows.into_iter().map(|(_, r)| r.session_id).collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(found("école").await, ["a", "c", "e"]);
    assert_eq!(found("LONG").await, ["b"]);
    assert_eq!(found("report").await, ["e"]);
    assert_eq!(found("🦀🦀").await, ["d"]);
    assert!(found("absent").await.is_empty());
}
