//! Helpers shared by the integration tests: a store on a real file in a temp dir, and raw
//! row dumps read with a separate SQLite connection.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use serde_json::Value;
use serde_json::json;
use tempfile::TempDir;
use zeroclaw_store::{
    NewSession, Progress, RPC_SURFACE, RestoredContext, SessionKey, Store, ToMessages, ToolCall,
    ToolResult,
};

pub struct TestStore {
    pub dir: TempDir,
    pub path: PathBuf,
    pub store: Store,
}

pub async fn open() -> TestStore {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zeroclaw.db");
    let store = Store::open(&path).await.expect("open store");
    TestStore { dir, path, store }
}

pub fn session(key: &SessionKey, surface: &str) -> NewSession {
    NewSession {
        key: key.clone(),
        agent_alias: "default".into(),
        owner: "operator".into(),
        cwd: Some("/tmp".into()),
        interaction_surface: surface.into(),
    }
}

pub async fn create(store: &Store, key: &SessionKey) {
    let opened = store
        .open_session(session(key, RPC_SURFACE))
        .await
        .expect("open session");
    assert!(!opened.resumed);
}

pub fn text(segment: u32, t: &str) -> Progress {
    Progress::Text {
        segment,
        text: t.into(),
    }
}

pub fn call(id: &str) -> ToolCall {
    ToolCall {
        tool_call_id: id.into(),
        name: "bash".into(),
        raw_input: json!({"command": "ls"}),
    }
}

pub fn result(id: &str) -> ToolResult {
    ToolResult {
        tool_call_id: id.into(),
        name: "bash".into(),
        raw_output: json!("a.txt\nb.txt"),
    }
}

fn fmt_value(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => format!("blob{b:?}"),
    }
}

fn dump_query(conn: &rusqlite::Connection, sql: &str, pk: i64) -> Vec<String> {
    let mut stmt = conn.prepare(sql).expect("prepare dump");
    let cols = stmt.column_count();
    let mut rows = stmt.query([pk]).expect("query dump");
    let mut out = Vec::new();
    while let Some(r) = rows.next().expect("row") {
        let vals: Vec<String> = (0..cols)
            .map(|i| fmt_value(r.get_ref(i).expect("col")))
            .collect();
        out.push(vals.join("|"));
    }
    out
}

/// Every column of every row belonging to the session, across all tables, read with a
/// separate connection.
pub fn dump_session(path: &Path, key: &SessionKey) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    let pk: i64 = conn
        .query_row(
            "SELECT pk FROM sessions WHERE mode = ?1 AND session_id = ?2",
            [key.mode.as_str(), key.session_id.as_str()],
            |r| r.get(0),
        )
        .expect("session pk");
    let mut out = Vec::new();
    for (table, sql) in [
        ("sessions", "SELECT * FROM sessions WHERE pk = ?1"),
        (
            "transcript",
            "SELECT * FROM transcript WHERE session = ?1 ORDER BY seq",
        ),
        (
            "checkpoints",
            "SELECT * FROM checkpoints WHERE session = ?1 ORDER BY turn_id",
        ),
        (
            "checkpoint_events",
            "SELECT * FROM checkpoint_events WHERE session = ?1 ORDER BY turn_id, n",
        ),
        (
            "snapshots",
            "SELECT * FROM snapshots WHERE session = ?1 ORDER BY id",
        ),
    ] {
        for row in dump_query(&conn, sql, pk) {
            out.push(format!("{table}: {row}"));
        }
    }
    out
}

/// Count of rows in `table` (whole database).
pub fn count(path: &Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open raw");
    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

/// `(seq, role, content)` of every transcript row of the session.
pub async fn transcript(store: &Store, key: &SessionKey) -> Vec<(i64, String, String)> {
    let page = store
        .messages(key, Default::default())
        .await
        .expect("messages");
    page.rows
        .into_iter()
        .map(|r| (r.seq, r.role.as_str().to_owned(), r.content))
        .collect()
}

pub fn assert_dense(seqs: &[(i64, String, String)]) {
    let got: Vec<i64> = seqs.iter().map(|r| r.0).collect();
    let want: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(got, want, "seq must be dense from 1");
}

/// The test's "provider messages" of a restored context: the snapshot's, then one `{role,
/// content}` per row.
pub fn flatten(ctx: &RestoredContext) -> Value {
    let mut out: Vec<Value> = match &ctx.snapshot {
        Some(s) => s.messages.as_array().cloned().unwrap_or_default(),
        None => Vec::new(),
    };
    for r in &ctx.rows {
        out.push(json!({"role": r.role.as_str(), "content": r.content}));
    }
    Value::Array(out)
}

/// What rewind and fork snapshot: [`flatten`] of the context.
pub fn to_messages() -> ToMessages {
    Box::new(|ctx| Ok(flatten(ctx)))
}
