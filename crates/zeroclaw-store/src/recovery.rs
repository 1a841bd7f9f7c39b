//! Recovery of interrupted turns (DURABILITY.md "Recovery") and the model context to
//! restore.
//!
//! Per session, in ONE transaction: for each `open` checkpoint, append its visible progress
//! that is not yet in the transcript (rows recovered from checkpoint event `n` carry
//! `event_n = n`, and a unique index on `(session, turn_id, event_n)` makes a second append
//! impossible), then one `interruption` row, then mark the checkpoint `interrupted`. A
//! second recovery finds no open checkpoint and appends nothing.
//!
//! Only rows of the requested interaction surface that are not killed are touched; rows of
//! other surfaces are neither read for recovery nor written.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use crate::db::{self, Db, now_ms};
use crate::error::{Result, StoreError};
use crate::large_text::StoredText;
use crate::turns;
use crate::types::{
    ContextRow, INTERRUPTED, Mode, RecoveredSession, Recovery, RestoredContext, Role, SessionKey,
    Snapshot, ToolCall, ToolResult,
};

/// Closes every open checkpoint of session `pk`; returns (turn ids, rows appended).
fn interrupt_open_turns(conn: &Connection, pk: i64) -> Result<(Vec<String>, usize)> {
    let turns = turns::open_turns(conn, pk)?;
    let now = now_ms();
    let mut appended = 0;
    for turn_id in &turns {
        for ev in turns::load_events(conn, pk, turn_id)? {
            let Some(row) = ev.progress.to_row() else {
                continue;
            };
            let present: bool = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM transcript \
                     WHERE session = ?1 AND turn_id = ?2 AND event_n = ?3)",
                )?
                .query_row(params![pk, turn_id, ev.n], |r| r.get(0))?;
            if !present {
                db::append_row(
                    conn,
                    pk,
                    Some(turn_id),
                    row.role,
                    &row.content,
                    Some(ev.n),
                    now,
                )?;
                appended += 1;
            }
        }
        db::append_row(
            conn,
            pk,
            Some(turn_id),
            Role::Interruption,
            INTERRUPTED,
            None,
            now,
        )?;
        appended += 1;
        conn.execute(
            "UPDATE checkpoints SET status = 'interrupted', updated_at = ?3 \
             WHERE session = ?1 AND turn_id = ?2 AND status = 'open'",
            params![pk, turn_id, now],
        )?;
    }
    Ok((turns, appended))
}

/// Latest snapshot + transcript rows after its boundary (all rows without one), provider-safe.
pub(crate) fn build_context(conn: &Connection, pk: i64) -> Result<RestoredContext> {
    let snapshot = turns::latest_snapshot(conn, pk)?;
    context_from(conn, pk, snapshot, i64::MAX)
}

/// `snapshot`'s messages plus the visible rows after its boundary (all rows without one)
/// and before `before_seq`, provider-safe: the one reader behind [`build_context`] and
/// `rewind::context_at`.
pub(crate) fn context_from(
    conn: &Connection,
    pk: i64,
    snapshot: Option<Snapshot>,
    before_seq: i64,
) -> Result<RestoredContext> {
    let after = snapshot.as_ref().map_or(0, |s| s.covers_seq);
    let mut stmt = conn.prepare_cached(
        "SELECT seq, turn_id, role, content FROM transcript \
         WHERE session = ?1 AND seq > ?2 AND seq < ?3 AND rewound = 0 \
         AND role NOT IN ('interruption', 'compaction', 'rewind', 'error') ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![pk, after, before_seq], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, StoredText>(3)?.0,
        ))
    })?;
    let rows = rows
        .map(|r| {
            let (seq, turn_id, role, content) = r?;
            Ok(ContextRow {
                seq,
                turn_id,
                role: role.parse()?,
                content,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RestoredContext {
        snapshot,
        rows: provider_safe(rows),
    })
}

/// Drops `interruption` rows, tool calls without a later result, and results without an
/// earlier call (also tool rows whose content is not the store's JSON shape), so the
/// provider never sees an unmatched call.
pub fn provider_safe(rows: Vec<ContextRow>) -> Vec<ContextRow> {
    let call_id = |r: &ContextRow| ToolCall::from_content(&r.content).map(|c| c.tool_call_id);
    let result_id = |r: &ContextRow| ToolResult::from_content(&r.content).map(|c| c.tool_call_id);
    let mut first_call: HashMap<String, usize> = HashMap::new();
    let mut last_result: HashMap<String, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        match r.role {
            Role::ToolCall => {
                if let Some(id) = call_id(r) {
                    first_call.entry(id).or_insert(i);
                }
            }
            Role::ToolResult => {
                if let Some(id) = result_id(r) {
                    last_result.insert(id, i);
                }
            }
            _ => {}
        }
    }
    rows.into_iter()
        .enumerate()
        .filter(|(i, r)| match r.role {
            Role::Interruption | Role::Compaction | Role::Rewind | Role::Error | Role::Plan => {
                false
            }
            Role::ToolCall => call_id(r)
                .and_then(|id| last_result.get(&id))
                .is_some_and(|j| j > i),
            Role::ToolResult => result_id(r)
                .and_then(|id| first_call.get(&id))
                .is_some_and(|j| j < i),
            Role::User | Role::Assistant => true,
        })
        .map(|(_, r)| r)
        .collect()
}

pub(crate) fn recover(db: &mut Db, key: &SessionKey, surface: &str) -> Result<Recovery> {
    db.write(|conn| {
        let (pk, row) = db::require_live(conn, key)?;
        if row.interaction_surface != surface {
            return Err(StoreError::UnsupportedSurface {
                session_id: key.session_id.clone(),
                surface: row.interaction_surface,
                expected: surface.to_owned(),
            });
        }
        let (interrupted_turns, appended_rows) = interrupt_open_turns(conn, pk)?;
        Ok(Recovery {
            interrupted_turns,
            appended_rows,
            context: build_context(conn, pk)?,
        })
    })
}

/// Reads the context without recovering (and without writing).
pub(crate) fn context(db: &mut Db, key: &SessionKey) -> Result<RestoredContext> {
    db.read(|conn| {
        let pk = db::require_pk(conn, key)?;
        build_context(conn, pk)
    })
}

/// Recovers every non-killed ACP row of `surface` with an open checkpoint, one transaction
/// per session. Stops at the first failure (sessions already recovered stay recovered;
/// running it again is safe).
pub(crate) fn recover_all(db: &mut Db, surface: &str) -> Result<Vec<RecoveredSession>> {
    let candidates: Vec<(i64, String)> = db.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT s.pk, s.session_id FROM sessions s \
             WHERE s.interaction_surface = ?1 AND s.killed_at IS NULL AND s.mode = 'acp' \
             AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.session = s.pk AND c.status = 'open') \
             ORDER BY s.pk",
        )?;
        let rows = stmt.query_map([surface], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    })?;
    let mut out = Vec::with_capacity(candidates.len());
    for (pk, session_id) in candidates {
        let (interrupted_turns, appended_rows) = db.write(|conn| {
            // Re-check inside the write transaction: the row may have changed since.
            let still: bool = conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE pk = ?1 \
                 AND interaction_surface = ?2 AND killed_at IS NULL)",
                params![pk, surface],
                |r| r.get(0),
            )?;
            if !still {
                return Ok((Vec::new(), 0));
            }
            interrupt_open_turns(conn, pk)
        })?;
        if !interrupted_turns.is_empty() {
            tracing::info!(%session_id, turns = ?interrupted_turns, "recovered interrupted turns");
            out.push(RecoveredSession {
                key: SessionKey {
                    mode: Mode::Acp,
                    session_id,
                },
                interrupted_turns,
                appended_rows,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(seq: i64, role: Role, content: String) -> ContextRow {
        ContextRow {
            seq,
            turn_id: None,
            role,
            content,
        }
    }

    fn call(id: &str) -> String {
        ToolCall {
            tool_call_id: id.into(),
            name: "bash".into(),
            raw_input: json!({}),
        }
        .to_content()
    }

    fn result(id: &str) -> String {
        ToolResult {
            tool_call_id: id.into(),
            name: "bash".into(),
            raw_output: json!("ok"),
        }
        .to_content()
    }

    #[test]
    fn provider_safe_keeps_only_matched_tool_pairs() {
        let rows = vec![
            row(1, Role::User, "q".into()),
            row(2, Role::ToolResult, result("early")), // result before its call
            row(3, Role::ToolCall, call("early")),
            row(4, Role::ToolCall, call("ok")),
            row(5, Role::ToolResult, result("ok")),
            row(6, Role::ToolCall, call("dangling")),
            row(7, Role::ToolCall, "not json".into()),
            row(8, Role::Interruption, INTERRUPTED.into()),
            row(9, Role::Assistant, "a".into()),
        ];
        let kept: Vec<i64> = provider_safe(rows).iter().map(|r| r.seq).collect();
        assert_eq!(kept, [1, 4, 5, 9]);
    }
}
