//! Large texts written into their rows through blob I/O (large_text.rs) against a real
//! SQLite file: every path that reads a transcript row or a snapshot gets the text back
//! unchanged, whichever way it was stored; a failed transaction leaves no row behind; the
//! lengths either side of the threshold round-trip.

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use common::*;
use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, ForkRequest, MAX_MESSAGE_CONTENT, MessagesQuery, NewRow, RPC_SURFACE,
    SerdeJson, SessionKey, StoreError,
};

/// The threshold in large_text.rs.
const LARGE: usize = 64 * 1024;

/// A text of exactly `bytes` bytes with multi-byte characters in it (and at its end when
/// the length allows), so any cut or byte/char confusion shows.
fn text_of(bytes: usize, tag: &str) -> String {
    let mut s = format!("{tag}\nline é ✓ ");
    while s.len() + 3 <= bytes {
        s.push('✓');
    }
    while s.len() < bytes {
        s.push('x');
    }
    s.truncate(bytes);
    assert_eq!(s.len(), bytes);
    s
}

/// `(seq, SQLite type of content)` of every transcript row.
fn content_types(path: &Path) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let mut stmt = conn
        .prepare("SELECT seq, typeof(content) FROM transcript ORDER BY session, seq")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

#[tokio::test]
async fn a_large_turn_reads_back_unchanged_everywhere() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    let prompt = text_of(300 * 1024, "first line of the prompt");
    let answer = text_of(500 * 1024 + 1, "the answer");
    s.begin_turn(&key, "t1", &prompt).await.unwrap();
    s.finish_turn(
        &key,
        "t1",
        CheckpointStatus::Completed,
        vec![
            NewRow::assistant(answer.clone()),
            NewRow::assistant("short"),
        ],
    )
    .await
    .unwrap();

    assert_eq!(
        content_types(&t.path),
        [
            (1, "blob".to_owned()),
            (2, "blob".to_owned()),
            (3, "text".to_owned())
        ],
        "large texts go through blob I/O, a short one stays TEXT"
    );
    assert_eq!(
        transcript(s, &key).await,
        [
            (1, "user".to_owned(), prompt.clone()),
            (2, "assistant".to_owned(), answer.clone()),
            (3, "assistant".to_owned(), "short".to_owned()),
        ]
    );
    let ctx = s.context(&key).await.unwrap();
    let texts: Vec<&str> = ctx.rows.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(texts, [prompt.as_str(), answer.as_str(), "short"]);
    // The title is read from the head of the first prompt's BLOB.
    let row = s.get_session(&key).await.unwrap().unwrap();
    assert_eq!(row.title.as_deref(), Some("first line of the prompt"));

    // A fork copies the rows as they are; its snapshot is large too.
    s.fork(
        ForkRequest {
            source: key.clone(),
            turn_id: None,
            new_session_id: "f".into(),
        },
        to_messages(),
    )
    .await
    .unwrap();
    let fk = SessionKey::acp("f");
    let forked = transcript(s, &fk).await;
    assert_eq!(forked, transcript(s, &key).await);
    let fctx = s.context(&fk).await.unwrap();
    assert_eq!(
        flatten(&fctx),
        json!([
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": answer},
            {"role": "assistant", "content": "short"},
        ])
    );

    // A rewind reads the large prompt back for the client to edit.
    s.begin_turn(&key, "t2", "q2").await.unwrap();
    s.finish_turn(&key, "t2", CheckpointStatus::Completed, vec![])
        .await
        .unwrap();
    let r = s.rewind(&key, "t1", to_messages()).await.unwrap();
    assert_eq!(r.prompt, prompt);
}

#[tokio::test]
async fn a_page_reads_a_large_row_only_as_far_as_it_may_carry() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    let answer = text_of(3 * 1024 * 1024 + 2, "a long answer");
    s.begin_turn(&key, "t1", "q").await.unwrap();
    s.finish_turn(
        &key,
        "t1",
        CheckpointStatus::Completed,
        vec![NewRow::assistant(answer.clone())],
    )
    .await
    .unwrap();
    let key = &key;
    let last_row = |max_content: usize| async move {
        let page = s
            .messages(
                key,
                MessagesQuery {
                    limit: Some(1),
                    max_bytes: usize::MAX,
                    max_content,
                    ..MessagesQuery::default()
                },
            )
            .await
            .unwrap();
        let row = page.rows.last().unwrap().clone();
        (row.content, row.truncated)
    };
    // The default cut, 1 MiB, falls inside a three-byte character: the cut is before it.
    let (cut, truncated) = last_row(MAX_MESSAGE_CONTENT).await;
    assert!(truncated);
    assert!(answer.starts_with(&cut), "a prefix of the answer");
    assert!(cut.len() <= MAX_MESSAGE_CONTENT && cut.len() > MAX_MESSAGE_CONTENT - 3);
    assert!(!answer.is_char_boundary(MAX_MESSAGE_CONTENT));
    // Only the seq wanted (a subscribe's look at the last row): nothing is read.
    assert_eq!(last_row(0).await, (String::new(), true));
    // Room for all of it, exactly or more: whole, not cut (compared without printing it).
    for room in [answer.len(), usize::MAX] {
        let (whole, truncated) = last_row(room).await;
        assert!(!truncated, "room for {room} bytes");
        assert!(
            whole == answer,
            "room for {room} bytes: {} bytes back",
            whole.len()
        );
    }
    // A damaged byte before the cut is an error, never a shorter text.
    let raw = rusqlite::Connection::open(&t.path).unwrap();
    let rowid: i64 = raw
        .query_row("SELECT rowid FROM transcript WHERE seq = 2", [], |r| {
            r.get(0)
        })
        .unwrap();
    let mut blob = raw
        .blob_open(rusqlite::MAIN_DB, c"transcript", c"content", rowid, false)
        .unwrap();
    blob.seek(SeekFrom::Start(100)).unwrap();
    blob.write_all(&[0xFF]).unwrap();
    drop(blob);
    let page = s
        .messages(
            key,
            MessagesQuery {
                limit: Some(1),
                ..MessagesQuery::default()
            },
        )
        .await;
    assert!(page.is_err(), "a damaged text read as a page");
}

#[tokio::test]
async fn texts_either_side_of_the_threshold_round_trip() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    let lengths = [0, 1, LARGE - 1, LARGE, LARGE + 1, 3 * LARGE + 7];
    let texts: Vec<String> = lengths.iter().map(|&n| text_of(n, "")).collect();
    let rows: Vec<NewRow> = texts.iter().cloned().map(NewRow::assistant).collect();
    s.begin_turn(&key, "t1", "q").await.unwrap();
    s.finish_turn(&key, "t1", CheckpointStatus::Completed, rows)
        .await
        .unwrap();
    let got: Vec<String> = transcript(s, &key)
        .await
        .into_iter()
        .skip(1)
        .map(|r| r.2)
        .collect();
    assert_eq!(got, texts);
    let types: Vec<String> = content_types(&t.path)
        .into_iter()
        .skip(1)
        .map(|r| r.1)
        .collect();
    assert_eq!(types, ["text", "text", "text", "blob", "blob", "blob"]);
}

#[tokio::test]
async fn a_failed_write_of_large_rows_leaves_no_row() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    s.begin_turn(&key, "t1", "q").await.unwrap();
    let before = dump_session(&t.path, &key);
    s.set_fail_writes(true);
    let e = s
        .finish_turn(
            &key,
            "t1",
            CheckpointStatus::Completed,
            vec![NewRow::assistant(text_of(2 * LARGE, "a"))],
        )
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::InjectedFailure), "{e}");
    let e = s
        .save_snapshot(&key, 1, json!([{"content": text_of(2 * LARGE, "s")}]))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::InjectedFailure), "{e}");
    s.set_fail_writes(false);
    assert_eq!(dump_session(&t.path, &key), before, "nothing half-written");
    assert_eq!(count(&t.path, "snapshots"), 0);
}

#[tokio::test]
async fn a_large_snapshot_is_encoded_into_its_row_and_lent_back() {
    let t = open().await;
    let s = &t.store;
    let key = SessionKey::acp("s");
    create(s, &key).await;
    s.begin_turn(&key, "t1", "q").await.unwrap();
    s.finish_turn(&key, "t1", CheckpointStatus::Completed, vec![])
        .await
        .unwrap();
    let big = json!([
        {"role": "user", "content": text_of(200 * 1024, "kept \"quoted\" \\ \u{1}")},
        {"role": "assistant", "content": "fine"},
    ]);
    let (saved, back) = s.save_snapshot_lent(&key, 1, SerdeJson(big.clone())).await;
    let id = saved.unwrap();
    assert_eq!(
        back.map(|b| b.0).as_ref(),
        Some(&big),
        "the messages come back as lent"
    );

    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let (kind, len): (String, usize) = conn
        .query_row(
            "SELECT typeof(messages), length(messages) FROM snapshots WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(kind, "blob");
    assert_eq!(
        len,
        serde_json::to_string(&big).unwrap().len(),
        "exact size"
    );
    drop(conn);

    let ctx = s.recover(&key, RPC_SURFACE).await.unwrap().context;
    let snap = ctx.snapshot.expect("the snapshot");
    assert_eq!((snap.id, snap.covers_seq), (id, 1));
    assert_eq!(snap.messages, big);

    // A short one stays TEXT and replaces it.
    let id2 = s.save_snapshot(&key, 1, json!([])).await.unwrap();
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let kinds: Vec<(i64, String)> = conn
        .prepare("SELECT id, typeof(messages) FROM snapshots ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(kinds, [(id2, "text".to_owned())]);
}

#[tokio::test]
async fn a_version_four_file_migrates_its_texts_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroclaw.db");
    zeroclaw_store::Store::create_at_version(&path, 4).unwrap();
    let big = text_of(2 * LARGE, "old big");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO sessions (pk, mode, session_id, agent_alias, owner, interaction_surface, \
         created_at, last_activity) VALUES (1, 'acp', 'old', 'default', 'operator', 'rpc', 1, 1); \
         INSERT INTO checkpoints (session, turn_id, status, started_seq, created_at, updated_at) \
         VALUES (1, 't1', 'completed', 1, 1, 2); \
         INSERT INTO snapshots (session, id, covers_seq, messages, created_at) \
         VALUES (1, 1, 0, '[{\"role\":\"user\",\"content\":\"before\"}]', 1);",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n, rewound) \
         VALUES (1, 1, 't1', 'user', ?1, 1, NULL, 0), (1, 2, 't1', 'assistant', 'hi', 2, 3, 1)",
        [&big],
    )
    .unwrap();
    drop(conn);

    let store = zeroclaw_store::Store::open(&path).await.unwrap();
    assert_eq!(
        store.schema_version().await.unwrap(),
        zeroclaw_store::SCHEMA_VERSION
    );
    let key = SessionKey::acp("old");
    let row = store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(row.message_count, 1, "the rewound row is not counted");
    let ctx = store.context(&key).await.unwrap();
    assert_eq!(
        flatten(&ctx),
        json!([
            {"role": "user", "content": "before"},
            {"role": "user", "content": big},
        ]),
        "the snapshot and the rows kept; the rewound row stays out"
    );
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let kept: (i64, Option<i64>, i64) = conn
        .query_row(
            "SELECT seq, event_n, rewound FROM transcript WHERE seq = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(kept, (2, Some(3), 1), "every column copied");
    // The key and the recovered-event index still hold.
    for dup in [
        "INSERT INTO transcript (session, seq, role, content, created_at) \
         VALUES (1, 2, 'user', 'x', 9)",
        "INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n) \
         VALUES (1, 9, 't1', 'assistant', 'x', 9, 3)",
        "INSERT INTO snapshots (session, id, covers_seq, messages, created_at) \
         VALUES (1, 1, 0, '[]', 9)",
    ] {
        assert!(conn.execute(dup, []).is_err(), "{dup}");
    }
}
