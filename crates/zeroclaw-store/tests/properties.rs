//! Property test: any sequence of turn operations, crashes and recoveries keeps the
//! DURABILITY.md invariants.

mod common;

use std::collections::HashSet;

use common::*;
use proptest::prelude::*;
use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, INTERRUPTED, NewRow, Progress, RPC_SURFACE, Role, SessionKey, Store,
    StoreError, ToolCall, ToolResult,
};

#[derive(Debug, Clone)]
enum Op {
    Begin,
    Text(u32, usize),
    Call,
    Result,
    Finish(u8),
    Snapshot,
    Recover,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Begin),
        4 => (0u32..3, 0usize..40).prop_map(|(s, n)| Op::Text(s, n)),
        2 => Just(Op::Call),
        2 => Just(Op::Result),
        2 => (0u8..3).prop_map(Op::Finish),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Recover),
        1 => Just(Op::Crash),
    ]
}

struct Model {
    turn: Option<String>,
    turns: usize,
    calls: Vec<String>,
    results: usize,
}

async fn run(ops: Vec<Op>) {
    let t = open().await;
    let mut store = t.store.clone();
    drop(t.store);
    let key = SessionKey::acp("p");
    create(&store, &key).await;
    let mut m = Model {
        turn: None,
        turns: 0,
        calls: Vec::new(),
        results: 0,
    };
    let mut interrupted = 0usize;
    let mut before = transcript(&store, &key).await;
    for op in ops {
        match op {
            Op::Begin => match store.begin_turn(&key, &format!("t{}", m.turns), "q").await {
                Ok(_) => {
                    assert!(m.turn.is_none());
                    m.turn = Some(format!("t{}", m.turns));
                    m.turns += 1;
                    m.calls.clear();
                    m.results = 0;
                }
                Err(StoreError::TurnStillOpen { .. }) => assert!(m.turn.is_some()),
                Err(e) => panic!("{e}"),
            },
            Op::Text(seg, n) => {
                if let Some(turn) = &m.turn {
                    let text = "w".repeat(n);
                    store
                        .record_progress(&key, turn, Progress::Text { segment: seg, text })
                        .await
                        .unwrap();
                }
            }
            Op::Call => {
                if let Some(turn) = &m.turn {
                    let id = format!("c{}", m.calls.len());
                    let c = ToolCall {
                        tool_call_id: id.clone(),
                        name: "bash".into(),
                        raw_input: json!({}),
                    };
                    store
                        .record_progress(&key, turn, Progress::ToolCall(c))
                        .await
                        .unwrap();
                    m.calls.push(id);
                }
            }
            Op::Result => {
                if let Some(turn) = &m.turn
                    && m.results < m.calls.len()
                {
                    let r = ToolResult {
                        tool_call_id: m.calls[m.results].clone(),
                        name: "bash".into(),
                        raw_output: json!("out"),
                    };
                    store
                        .record_progress(&key, turn, Progress::ToolResult(r))
                        .await
                        .unwrap();
                    m.results += 1;
                }
            }
            Op::Finish(s) => {
                if let Some(turn) = m.turn.take() {
                    let status = [
                        CheckpointStatus::Completed,
                        CheckpointStatus::Cancelled,
                        CheckpointStatus::Failed,
                    ][s as usize];
                    let cp = store.checkpoint(&key, &turn).await.unwrap().unwrap();
                    let rows: Vec<NewRow> = cp
                        .events
                        .iter()
                        .filter_map(|e| e.progress.to_row())
                        .collect();
                    store.finish_turn(&key, &turn, status, rows).await.unwrap();
                }
            }
            Op::Snapshot => {
                if m.turn.is_none() {
                    let last = before.last().map_or(0, |r| r.0);
                    store.save_snapshot(&key, last, json!([])).await.unwrap();
                }
            }
            Op::Recover => {
                let rec = store.recover(&key, RPC_SURFACE).await.unwrap();
                interrupted += rec.interrupted_turns.len();
                assert_eq!(rec.interrupted_turns.len(), usize::from(m.turn.is_some()));
                m.turn = None;
                let again = store.recover(&key, RPC_SURFACE).await.unwrap();
                assert_eq!(again.appended_rows, 0);
                assert_eq!(again.context, rec.context);
                // Provider-safe: no marker, every call answered and vice versa.
                let rows = &rec.context.rows;
                assert!(rows.iter().all(|r| r.role != Role::Interruption));
                let calls: HashSet<String> = rows
                    .iter()
                    .filter(|r| r.role == Role::ToolCall)
                    .map(|r| ToolCall::from_content(&r.content).unwrap().tool_call_id)
                    .collect();
                let results: HashSet<String> = rows
                    .iter()
                    .filter(|r| r.role == Role::ToolResult)
                    .map(|r| ToolResult::from_content(&r.content).unwrap().tool_call_id)
                    .collect();
                assert_eq!(calls, results);
            }
            Op::Crash => {
                drop(store);
                store = Store::open(&t.path).await.unwrap();
                let all = store.recover_all_interrupted(RPC_SURFACE).await.unwrap();
                let n: usize = all.iter().map(|r| r.interrupted_turns.len()).sum();
                assert_eq!(n, usize::from(m.turn.is_some()));
                interrupted += n;
                m.turn = None;
            }
        }
        let now = transcript(&store, &key).await;
        assert_dense(&now);
        assert_eq!(&now[..before.len()], &before[..], "rows never change");
        let markers = now.iter().filter(|r| r.1 == "interruption").count();
        assert_eq!(markers, interrupted, "one marker per interrupted turn");
        assert!(
            now.iter()
                .filter(|r| r.1 == "interruption")
                .all(|r| r.2 == INTERRUPTED)
        );
        let row = store.get_session(&key).await.unwrap().unwrap();
        assert_eq!(row.message_count as usize, now.len(), "the stored count");
        before = now;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn durability_invariants_hold(ops in proptest::collection::vec(op(), 1..40)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(ops));
    }
}
