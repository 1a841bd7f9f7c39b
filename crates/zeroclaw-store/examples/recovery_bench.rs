//! Measures what recovery and per-turn persistence cost on a real file.
//!
//! ```sh
//! cargo run --release -p zeroclaw-store --example recovery_bench [-- DIR]
//! ```
//! DIR (default: the system temp dir) decides the file system, which matters: every commit
//! is fsynced (`synchronous = FULL`). Targets: recover + load context of a 10,000-row
//! session under 50 ms. Prints results; asserts nothing.

use std::time::{Duration, Instant};

use serde_json::json;
use zeroclaw_store::{
    CheckpointStatus, NewRow, NewSession, Progress, RPC_SURFACE, SessionKey, Store, ToolCall,
    ToolResult,
};

const ROWS: usize = 10_000;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn new_session(key: &SessionKey) -> NewSession {
    NewSession {
        key: key.clone(),
        agent_alias: "default".into(),
        owner: "operator".into(),
        cwd: None,
        interaction_surface: RPC_SURFACE.into(),
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        tool_call_id: id.into(),
        name: "bash".into(),
        raw_input: json!({"command": "ls -la"}),
    }
}

fn result(id: &str) -> ToolResult {
    ToolResult {
        tool_call_id: id.into(),
        name: "bash".into(),
        raw_output: json!("total 0\n".repeat(20)),
    }
}

/// A session with `ROWS` transcript rows (whole turns: prompt, text, tool call, result)
/// and one turn left open with progress, as after a crash.
async fn big_session(store: &Store, key: &SessionKey) -> Result<(), Box<dyn std::error::Error>> {
    store.open_session(new_session(key)).await?;
    let turns = ROWS / 4;
    let mut batch = Vec::new();
    for i in 0..turns {
        let id = format!("tc{i}");
        batch.push(NewRow::user(format!(
            "prompt {i}: please look at the files"
        )));
        batch.push(NewRow::tool_call(&call(&id)));
        batch.push(NewRow::tool_result(&result(&id)));
        batch.push(NewRow::assistant("Here is what I found. ".repeat(10)));
        if batch.len() >= 1000 {
            store
                .append_rows(key, None, std::mem::take(&mut batch))
                .await?;
        }
    }
    store.append_rows(key, None, batch).await?;
    store.begin_turn(key, "crashed", "one more").await?;
    store
        .record_progress(
            key,
            "crashed",
            Progress::Text {
                segment: 0,
                text: "Half an ans".into(),
            },
        )
        .await?;
    store
        .record_progress(key, "crashed", Progress::ToolCall(call("open")))
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base)?;
    let store = Store::open(dir.path().join("zeroclaw.db")).await?;
    println!("database in {}", dir.path().display());

    // 1. Recovery of a 10,000-row session without a snapshot (full transcript replay).
    let key = SessionKey::acp("big");
    big_session(&store, &key).await?;
    let t = Instant::now();
    let rec = store.recover(&key, RPC_SURFACE).await?;
    let recover = t.elapsed();
    println!(
        "recover, no snapshot: {:.2} ms  ({} rows in transcript, {} context rows, {} appended)",
        ms(recover),
        ROWS + 4,
        rec.context.rows.len(),
        rec.appended_rows
    );
    let t = Instant::now();
    let ctx = store.context(&key).await?;
    println!(
        "load context again:   {:.2} ms  ({} rows)",
        ms(t.elapsed()),
        ctx.rows.len()
    );

    // 2. Same size with a snapshot covering all but the last turn.
    let key2 = SessionKey::acp("big-snap");
    big_session(&store, &key2).await?;
    let messages = json!((0..200)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "x".repeat(400)}))
        .collect::<Vec<_>>());
    store.save_snapshot(&key2, ROWS as i64, messages).await?;
    let t = Instant::now();
    let rec = store.recover(&key2, RPC_SURFACE).await?;
    println!(
        "recover, snapshot:    {:.2} ms  (200 snapshot messages, {} rows after boundary)",
        ms(t.elapsed()),
        rec.context.rows.len()
    );

    // 3. Daemon start-up over both (nothing left to do) and a page of messages.
    let t = Instant::now();
    let all = store.recover_all_interrupted(RPC_SURFACE).await?;
    println!(
        "recover_all (idle):   {:.2} ms  ({} sessions)",
        ms(t.elapsed()),
        all.len()
    );
    let t = Instant::now();
    let page = store.messages(&key, Default::default()).await?;
    println!(
        "messages, 4 MiB page: {:.2} ms  ({} of {} rows)",
        ms(t.elapsed()),
        page.rows.len(),
        page.total
    );

    // 4. Per-turn persistence: begin_turn + 3 progress + finish_turn (5 commits), on a new
    // session and on one that already holds 10,000 rows (a turn's cost must not grow with
    // its session).
    let key3 = SessionKey::acp("turns");
    store.open_session(new_session(&key3)).await?;
    report("per turn (5 commits)", per_turn(&store, &key3).await?);
    let key4 = SessionKey::acp("long");
    big_session(&store, &key4).await?;
    store
        .finish_turn(&key4, "crashed", CheckpointStatus::Cancelled, Vec::new())
        .await?;
    report(
        "per turn (5 commits) after 10,000 rows",
        per_turn(&store, &key4).await?,
    );
    Ok(())
}

/// 200 turns of `key`, each begin_turn + 3 progress + finish_turn; their costs, sorted.
async fn per_turn(
    store: &Store,
    key: &SessionKey,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let mut costs = Vec::new();
    for i in 0..200 {
        let turn = format!("t{i}");
        let t = Instant::now();
        store.begin_turn(key, &turn, "list the files").await?;
        let text = Progress::Text {
            segment: 0,
            text: "Let me look.".into(),
        };
        store.record_progress(key, &turn, text.clone()).await?;
        store
            .record_progress(key, &turn, Progress::ToolCall(call("c")))
            .await?;
        store
            .record_progress(key, &turn, Progress::ToolResult(result("c")))
            .await?;
        let rows = vec![
            text.to_row().unwrap_or_else(|| NewRow::assistant("")),
            NewRow::tool_call(&call("c")),
            NewRow::tool_result(&result("c")),
        ];
        store
            .finish_turn(key, &turn, CheckpointStatus::Completed, rows)
            .await?;
        costs.push(t.elapsed());
    }
    costs.sort();
    Ok(costs)
}

fn report(what: &str, costs: Vec<Duration>) {
    let mean = costs.iter().sum::<Duration>() / costs.len() as u32;
    println!(
        "{what}: mean {:.2} ms, p50 {:.2} ms, p99 {:.2} ms",
        ms(mean),
        ms(costs[costs.len() / 2]),
        ms(costs[costs.len() * 99 / 100])
    );
}
