//! The persister against a real store file: a streamed text is checkpointed in pieces
//! while it streams, its step completes it, and recovery gets the whole text back.

use std::path::Path;
use std::time::Duration;

use zeroclaw_agent::{ChatMessage, StepText, Text, ToolCallRequest};
use zeroclaw_store::{NewSession, RPC_SURFACE, SessionKey, Store};

use super::{MAX_PIECE, Op, Persister};

/// `(event_key, text)` of every text event row in the file, in event order.
fn text_rows(path: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let mut stmt = conn
        .prepare(
            "SELECT event_key, json_extract(payload, '$.text') FROM checkpoint_events \
             WHERE kind = 'text' ORDER BY n",
        )
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// Waits until the checkpoint's text rows, joined, are `text`.
async fn wait_for_text(path: &Path, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let joined: String = text_rows(path).into_iter().map(|r| r.1).collect();
        if joined == text {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "checkpointed {joined:?}, waiting for {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A store at `path` with session `s` and its turn `t1` begun by its persister.
async fn turn_started(path: &Path) -> (Store, SessionKey, Persister) {
    let store = Store::open(path).await.expect("store");
    let key = SessionKey::acp("s");
    store
        .open_session(NewSession {
            key: key.clone(),
            agent_alias: "default".into(),
            owner: "operator".into(),
            cwd: None,
            interaction_surface: RPC_SURFACE.into(),
        })
        .await
        .expect("session");
    let (persister, began) =
        Persister::spawn(store.clone(), key.clone(), "t1".into(), Some("q".into()));
    let began = began.expect("began").await.expect("sent");
    began.expect("begin_turn");
    (store, key, persister)
}

#[tokio::test]
async fn streamed_text_is_appended_in_pieces_and_its_step_writes_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let (store, key, persister) = turn_started(&path).await;
    let tx = persister.sender();

    // Three deltas, each written once the persister flushed the one before.
    let text = StepText::default();
    for piece in ["Looking ", "at the ", "files é"] {
        text.push_str(piece);
        tx.send(Op::Chunk(text.clone())).await.expect("send");
        let so_far = text.to_text_string();
        wait_for_text(&path, &so_far).await;
    }
    let keys: Vec<String> = text_rows(&path).into_iter().map(|r| r.0).collect();
    assert_eq!(
        keys,
        ["text:0", "text:0+1", "text:0+2"],
        "one row per piece"
    );

    // More streamed than was flushed: the step writes only the rest.
    text.push_str(", then more");
    tx.send(Op::Chunk(text.clone())).await.expect("send");
    let call = ToolCallRequest {
        id: "c1".into(),
        name: "bash".into(),
        arguments: "{}".into(),
    };
    tx.send(Op::Step(ChatMessage::Assistant {
        content: "Looking at the files é, then more".into(),
        tool_calls: vec![call],
    }))
    .await
    .expect("send");
    // The next call's text is segment 1, written whole at its step (it never flushed).
    tx.send(Op::Step(ChatMessage::assistant("Done.")))
        .await
        .expect("send");
    drop(tx);
    persister.finish().await;

    let rows = text_rows(&path);
    let joined: String = rows[..rows.len() - 1]
        .iter()
        .map(|r| r.1.as_str())
        .collect();
    assert_eq!(joined, "Looking at the files é, then more");
    assert_eq!(rows.last().map(|r| r.0.as_str()), Some("text:1"));

    let recovered = store.recover(&key, RPC_SURFACE).await.expect("recover");
    assert_eq!(recovered.appended_rows, 4, "text, call, text, marker");
    let page = store
        .messages(&key, Default::default())
        .await
        .expect("rows");
    let texts: Vec<&str> = page.rows.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(texts[1], "Looking at the files é, then more");
    assert_eq!(texts[3], "Done.");
}

#[tokio::test]
async fn a_step_shorter_than_what_was_written_replaces_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let (_store, _key, persister) = turn_started(&path).await;
    let tx = persister.sender();
    let text = StepText::default();
    for piece in ["a long ", "streamed text"] {
        text.push_str(piece);
        tx.send(Op::Chunk(text.clone())).await.expect("send");
        wait_for_text(&path, &text.to_text_string()).await;
    }
    tx.send(Op::Step(ChatMessage::assistant("short")))
        .await
        .expect("send");
    drop(tx);
    persister.finish().await;
    let rows = text_rows(&path);
    assert_eq!(rows, [("text:0".to_owned(), "short".to_owned())]);
}

/// `(role, content)` of every transcript row of the session, however long.
async fn whole_rows(store: &Store, key: &SessionKey) -> Vec<(String, String)> {
    let all = zeroclaw_store::MessagesQuery {
        max_content: usize::MAX,
        max_bytes: usize::MAX,
        ..Default::default()
    };
    let page = store.messages(key, all).await.expect("rows");
    page.rows
        .into_iter()
        .map(|r| (r.role.as_str().to_owned(), r.content))
        .collect()
}

/// `(event_key, text bytes)` of every text event row, in event order.
fn text_sizes(path: &Path) -> Vec<(String, usize)> {
    text_rows(path)
        .into_iter()
        .map(|(k, t)| (k, t.len()))
        .collect()
}

#[tokio::test]
async fn a_long_text_is_written_in_pieces_of_at_most_max_piece() {
    // The streamed text spills as it grows, as in the daemon.
    zeroclaw_agent::text::set_spill_dir_for_tests();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let (store, key, persister) = turn_started(&path).await;
    let tx = persister.sender();

    // 2.5 pieces streamed at once (three-byte characters: no cut inside one): the
    // persister catches up one piece per flush.
    let streamed: String = "✓".repeat(MAX_PIECE * 5 / 6);
    let text = StepText::default();
    text.push_str(&streamed);
    tx.send(Op::Chunk(text.clone())).await.expect("send");
    wait_for_text(&path, &streamed).await;
    let sizes = text_sizes(&path);
    assert_eq!(sizes.len(), 3, "{sizes:?}");
    assert!(sizes.iter().all(|s| s.1 <= MAX_PIECE), "{sizes:?}");

    // A step never streamed (segment 1) and longer than a piece: written whole first (so
    // it replaces any pieces), then appended.
    let whole: String = "é".repeat(MAX_PIECE * 3 / 4 + 5);
    tx.send(Op::Step(ChatMessage::assistant(streamed.clone())))
        .await
        .expect("send");
    tx.send(Op::Step(ChatMessage::assistant(whole.clone())))
        .await
        .expect("send");
    drop(tx);
    persister.finish().await;
    let sizes = text_sizes(&path);
    let keys: Vec<&str> = sizes.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(keys[3..], ["text:1", "text:1+4"], "{sizes:?}");
    assert!(sizes.iter().all(|s| s.1 <= MAX_PIECE), "{sizes:?}");

    let recovered = store.recover(&key, RPC_SURFACE).await.expect("recover");
    assert_eq!(recovered.appended_rows, 3, "two texts and the marker");
    let rows = whole_rows(&store, &key).await;
    let texts: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(texts[1..3], [streamed.as_str(), whole.as_str()]);
}

#[tokio::test]
async fn a_long_step_is_handed_over_in_pieces_from_where_the_stream_left_off() {
    // The streamed text spills as it grows, as in the daemon.
    zeroclaw_agent::text::set_spill_dir_for_tests();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let (store, key, persister) = turn_started(&path).await;
    let tx = persister.sender();

    let text = StepText::default();
    let first = "ü".repeat(MAX_PIECE / 4);
    text.push_str(&first);
    tx.send(Op::Chunk(text.clone())).await.expect("send");
    wait_for_text(&path, &first).await;
    // The call ends with 2.5 pieces more than was written.
    text.push_str(&"ä".repeat(MAX_PIECE * 5 / 4));
    tx.send(Op::Chunk(text.clone())).await.expect("send");
    let content = text.to_text_string();
    // The step's text as the turn takes it: spilled to a file.
    let step = Text::spilled_if_long(content.clone());
    assert!(step.as_held().is_none());
    let call = ToolCallRequest {
        id: "c1".into(),
        name: "bash".into(),
        arguments: "{}".into(),
    };
    super::send_step(&tx, &step, std::slice::from_ref(&call)).await;
    drop(tx);
    persister.finish().await;

    let rows = text_sizes(&path);
    assert!(rows.len() >= 4, "{rows:?}");
    assert_eq!(
        rows[0],
        ("text:0".to_owned(), first.len()),
        "what streamed is not written again"
    );
    assert!(
        rows[1..].iter().all(|r| r.0.starts_with("text:0+")),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r.1 <= MAX_PIECE), "{rows:?}");
    let joined: String = text_rows(&path).into_iter().map(|r| r.1).collect();
    assert!(joined == content, "the pieces join to the step's text");

    let recovered = store.recover(&key, RPC_SURFACE).await.expect("recover");
    assert_eq!(recovered.appended_rows, 3, "text, call, marker");
    let rows = whole_rows(&store, &key).await;
    assert!(rows[1].1 == content, "the whole text recovered");
    assert_eq!(rows[2].0, "tool_call");
}

#[tokio::test]
async fn a_long_step_stops_at_a_failed_write_and_the_next_step_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let (store, _key, persister) = turn_started(&path).await;
    let tx = persister.sender();

    store.set_fail_writes(true);
    let long = Text::from("x".repeat(MAX_PIECE * 2 + 1));
    tokio::time::timeout(Duration::from_secs(10), super::send_step(&tx, &long, &[]))
        .await
        .expect("a failed write ends the hand-over");
    store.set_fail_writes(false);
    super::send_step(&tx, &"next".into(), &[]).await;
    drop(tx);
    persister.finish().await;
    assert_eq!(
        text_rows(&path),
        [("text:1".to_owned(), "next".to_owned())],
        "nothing of the failed step, the next one in the next segment"
    );
}
