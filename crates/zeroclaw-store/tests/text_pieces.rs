//! A streamed text recorded in pieces (`Store::append_text`) against a real SQLite file:
//! the checkpoint and recovery see one text per segment, a whole-text write replaces the
//! pieces, and nothing already written is written again.

mod common;

use std::path::Path;

use common::*;
use proptest::prelude::*;
use zeroclaw_store::{
    CheckpointStatus, INTERRUPTED, Progress, RPC_SURFACE, SessionKey, StoreError,
};

/// `(n, event_key, payload bytes)` of every checkpoint event row of the database.
fn event_rows(path: &Path) -> Vec<(u32, String, usize)> {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let mut stmt = conn
        .prepare(
            "SELECT n, event_key, length(CAST(payload AS BLOB)) FROM checkpoint_events ORDER BY n",
        )
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
}

/// A store with session `s` and its open turn `t1`, begun with `prompt`.
async fn turn_begun(prompt: &str) -> (TestStore, SessionKey) {
    let t = open().await;
    let key = SessionKey::acp("s");
    create(&t.store, &key).await;
    t.store.begin_turn(&key, "t1", prompt).await.unwrap();
    (t, key)
}

#[tokio::test]
async fn pieces_are_one_text_at_the_first_piece_position() {
    let (t, key) = turn_begun("list files").await;
    let s = &t.store;

    for piece in ["Let", " me", " look."] {
        assert_eq!(s.append_text(&key, "t1", 0, piece).await.unwrap(), 0);
    }
    s.record_progress(&key, "t1", Progress::ToolCall(call("tc1")))
        .await
        .unwrap();
    s.record_progress(&key, "t1", Progress::ToolResult(result("tc1")))
        .await
        .unwrap();
    // Segments 1 and 10: a key prefix of the other, both in pieces.
    let one = s.append_text(&key, "t1", 1, "Two").await.unwrap();
    let ten = s.append_text(&key, "t1", 10, "ten ").await.unwrap();
    assert_eq!(s.append_text(&key, "t1", 1, " files é").await.unwrap(), one);
    assert_eq!(s.append_text(&key, "t1", 10, "more").await.unwrap(), ten);

    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    let events: Vec<_> = cp
        .events
        .iter()
        .map(|e| (e.n, e.progress.clone()))
        .collect();
    assert_eq!(
        events,
        vec![
            (0, text(0, "Let me look.")),
            (3, Progress::ToolCall(call("tc1"))),
            (4, Progress::ToolResult(result("tc1"))),
            (one, text(1, "Two files é")),
            (ten, text(10, "ten more")),
        ]
    );
    let keys: Vec<String> = event_rows(&t.path).into_iter().map(|r| r.1).collect();
    assert_eq!(
        keys,
        [
            "text:0",
            "text:0+1",
            "text:0+2",
            "call:tc1",
            "result:tc1",
            "text:1",
            "text:10",
            "text:1+7",
            "text:10+8"
        ]
    );

    // The whole text of segment 1 replaces its pieces, and only segment 1's.
    assert_eq!(
        s.record_progress(&key, "t1", text(1, "Two files."))
            .await
            .unwrap(),
        one
    );
    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!(cp.events[3].progress, text(1, "Two files."));
    assert_eq!(cp.events[4].progress, text(10, "ten more"));
    assert_eq!(event_rows(&t.path).len(), 8, "segment 1's piece is gone");

    // A closed turn takes no more pieces.
    s.finish_turn(&key, "t1", CheckpointStatus::Completed, vec![])
        .await
        .unwrap();
    let err = s.append_text(&key, "t1", 0, "late").await.unwrap_err();
    assert!(matches!(err, StoreError::TurnNotOpen { .. }), "{err}");
}

#[tokio::test]
async fn recovery_appends_the_joined_text_once() {
    let (t, key) = turn_begun("do it").await;
    let s = &t.store;
    s.append_text(&key, "t1", 0, "Working").await.unwrap();
    s.append_text(&key, "t1", 0, " on it").await.unwrap();
    s.record_progress(&key, "t1", Progress::ToolCall(call("tc1")))
        .await
        .unwrap();
    s.record_progress(&key, "t1", Progress::ToolResult(result("tc1")))
        .await
        .unwrap();
    s.append_text(&key, "t1", 1, "Almost").await.unwrap();
    s.append_text(&key, "t1", 1, " done").await.unwrap();

    let rec = s.recover(&key, RPC_SURFACE).await.unwrap();
    assert_eq!(rec.appended_rows, 5); // text, call, result, text, marker
    let tr = transcript(s, &key).await;
    assert_dense(&tr);
    let rows: Vec<(&str, &str)> = tr
        .iter()
        .map(|r| (r.1.as_str(), r.2.as_str()))
        .filter(|r| r.0 != "tool_call" && r.0 != "tool_result")
        .collect();
    assert_eq!(
        rows,
        [
            ("user", "do it"),
            ("assistant", "Working on it"),
            ("assistant", "Almost done"),
            ("interruption", INTERRUPTED),
        ]
    );
    let again = s.recover(&key, RPC_SURFACE).await.unwrap();
    assert_eq!(again.appended_rows, 0);
    assert_eq!(transcript(s, &key).await.len(), tr.len());
}

/// A long text streamed in many pieces is stored once: what the checkpoint holds is the
/// text plus a small overhead per piece, not a rewrite of the text so far at every write.
#[tokio::test]
async fn a_long_text_is_written_once() {
    let (t, key) = turn_begun("go").await;
    let s = &t.store;
    let piece = "0123456789abcdef".repeat(64); // 1 KiB
    let pieces = 500;
    for _ in 0..pieces {
        s.append_text(&key, "t1", 0, &piece).await.unwrap();
    }
    let stored: usize = event_rows(&t.path).iter().map(|r| r.2).sum();
    let text_len = piece.len() * pieces;
    assert!(
        stored < text_len + pieces * 64,
        "{stored} bytes stored for {text_len} bytes of text in {pieces} pieces"
    );
    let cp = s.checkpoint(&key, "t1").await.unwrap().unwrap();
    assert_eq!(cp.events.len(), 1);
    assert_eq!(cp.events[0].progress, text(0, &piece.repeat(pieces)));
}

#[derive(Debug, Clone)]
enum TextOp {
    /// The segment's whole text, `len` bytes.
    Replace(u32, usize),
    /// A piece of `len` bytes appended to the segment.
    Append(u32, usize),
}

/// A text of `len` bytes that differs with `salt`, so a piece out of order shows.
fn sample(salt: usize, len: usize) -> String {
    (0..len)
        .map(|i| char::from(b'a' + ((salt * 7 + i) % 26) as u8))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any mix of whole texts and pieces over segments 0-11 (1 and 10, 11 share a key
    /// prefix) reads back, in the checkpoint and after recovery, as the model's texts:
    /// per segment the last whole text plus the pieces appended after it.
    #[test]
    fn any_mix_of_whole_texts_and_pieces_reads_back_as_written(
        ops in prop::collection::vec(
            prop_oneof![
                (0u32..12, 0usize..6).prop_map(|(s, n)| TextOp::Replace(s, n)),
                (0u32..12, 1usize..6).prop_map(|(s, n)| TextOp::Append(s, n)),
            ],
            1..40,
        )
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async move {
                let t = open().await;
                let s = &t.store;
                let key = SessionKey::acp("p");
                create(s, &key).await;
                s.begin_turn(&key, "t", "q").await.unwrap();
                // (segment, text) in order of each segment's first event.
                let mut model: Vec<(u32, String)> = Vec::new();
                for (i, op) in ops.into_iter().enumerate() {
                    let (seg, append, piece) = match op {
                        TextOp::Replace(seg, n) => (seg, false, sample(i, n)),
                        TextOp::Append(seg, n) => (seg, true, sample(i, n)),
                    };
                    if append {
                        s.append_text(&key, "t", seg, &piece).await.unwrap();
                    } else {
                        s.record_progress(&key, "t", text(seg, &piece)).await.unwrap();
                    }
                    match model.iter_mut().find(|(m, _)| *m == seg) {
                        Some((_, whole)) if append => whole.push_str(&piece),
                        Some((_, whole)) => *whole = piece,
                        None => model.push((seg, piece)),
                    }
                }
                let cp = s.checkpoint(&key, "t").await.unwrap().unwrap();
                let got: Vec<(u32, String)> = cp
                    .events
                    .into_iter()
                    .map(|e| match e.progress {
                        Progress::Text { segment, text } => (segment, text),
                        other => panic!("{other:?}"),
                    })
                    .collect();
                assert_eq!(got, model);
                s.recover(&key, RPC_SURFACE).await.unwrap();
                let rows: Vec<String> = transcript(s, &key)
                    .await
                    .into_iter()
                    .filter(|r| r.1 == "assistant")
                    .map(|r| r.2)
                    .collect();
                let want: Vec<String> = model
                    .into_iter()
                    .map(|(_, t)| t)
                    .filter(|t| !t.is_empty())
                    .collect();
                assert_eq!(rows, want);
            });
    }
}
