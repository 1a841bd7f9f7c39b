//! Going back and branching off (SPEC §18): `rewind`, `fork` and `set_title`.
//!
//! Every turn start records its retained-context boundary (the checkpoint's `snapshot_id`
//! and `started_seq`), so the context just before any turn is that snapshot's messages plus
//! the visible rows between its boundary and the prompt ([`context_at`]).
//!
//! - A **rewind** to turn T, in ONE transaction: flags T's rows and every later row
//!   `rewound` (kept, never renumbered), and commits a new snapshot of the context before T
//!   covering the last seq, so the ordinary context read (latest snapshot + rows after it)
//!   needs no special case and a crash leaves the old state or the whole rewind. When every
//!   turn from T on is already rewound it changes nothing.
//! - A **fork** copies the visible rows up to the end of turn T into a new session (seqs
//!   dense from 1) and commits the source's context after T as the new session's snapshot.
//!
//! The store keeps provider messages opaque: the caller turns a [`RestoredContext`] into the
//! snapshot's JSON.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::db::{self, Db, now_ms};
use crate::error::{Result, StoreError};
use crate::large_text::StoredText;
use crate::recovery::{build_context, context_from};
use crate::turns;
use crate::types::{ForkRequest, Forked, ForkedFrom, Mode, RestoredContext, Rewound, SessionKey};

/// Turns a rebuilt context into the messages of the snapshot to commit.
pub type ToMessages = Box<dyn FnOnce(&RestoredContext) -> Result<Value> + Send>;

/// A turn's recorded start.
struct TurnStart {
    turn_id: String,
    status: String,
    started_seq: i64,
    snapshot_id: Option<i64>,
    rewound: bool,
}

const TURN_START: &str = "SELECT c.turn_id, c.status, c.started_seq, c.snapshot_id, \
     COALESCE((SELECT t.rewound FROM transcript t \
               WHERE t.session = c.session AND t.seq = c.started_seq), 0) \
     FROM checkpoints c WHERE c.session = ?1";

fn turn_start(r: &rusqlite::Row<'_>) -> rusqlite::Result<TurnStart> {
    Ok(TurnStart {
        turn_id: r.get(0)?,
        status: r.get(1)?,
        started_seq: r.get(2)?,
        snapshot_id: r.get(3)?,
        rewound: r.get::<_, i64>(4)? != 0,
    })
}

fn find_turn(conn: &Connection, pk: i64, key: &SessionKey, turn_id: &str) -> Result<TurnStart> {
    conn.prepare_cached(&format!("{TURN_START} AND c.turn_id = ?2"))?
        .query_row(params![pk, turn_id], turn_start)
        .optional()?
        .ok_or_else(|| StoreError::TurnNotFound {
            session_id: key.session_id.clone(),
            turn_id: turn_id.to_owned(),
        })
}

/// The retained context just before transcript row `before_seq`, for a turn that started
/// with snapshot `snapshot_id` in force: that snapshot's messages plus the visible rows
/// after its boundary and before `before_seq`, provider-safe.
pub(crate) fn context_at(
    conn: &Connection,
    pk: i64,
    snapshot_id: Option<i64>,
    before_seq: i64,
) -> Result<RestoredContext> {
    let snapshot = match snapshot_id {
        Some(id) => Some(turns::snapshot_by_id(conn, pk, id)?.ok_or_else(|| {
            StoreError::Corrupt(format!("snapshot {id} named by a turn start is missing"))
        })?),
        None => None,
    };
    context_from(conn, pk, snapshot, before_seq)
}

pub(crate) fn rewind(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    to_messages: ToMessages,
) -> Result<Rewound> {
    db::require_acp(key)?;
    db.write(|conn| {
        let pk = db::require_live_pk(conn, key)?;
        if let Some(open) = turns::open_turns(conn, pk)?.into_iter().next() {
            return Err(StoreError::TurnStillOpen {
                session_id: key.session_id.clone(),
                turn_id: open,
            });
        }
        let target = find_turn(conn, pk, key, turn_id)?;
        let prompt: String = conn.query_row(
            "SELECT content FROM transcript WHERE session = ?1 AND seq = ?2",
            params![pk, target.started_seq],
            |r| r.get::<_, StoredText>(0).map(|t| t.0),
        )?;
        let mut stmt = conn.prepare_cached(&format!(
            "{TURN_START} AND c.started_seq >= ?2 ORDER BY c.started_seq"
        ))?;
        let later = stmt.query_map(params![pk, target.started_seq], turn_start)?;
        let mut rewound_turns = Vec::new();
        for t in later {
            let t = t?;
            if !t.rewound {
                rewound_turns.push(t.turn_id);
            }
        }
        drop(stmt);
        if rewound_turns.is_empty() {
            return Ok(Rewound {
                rewound_turns,
                prompt,
                snapshot_id: None,
            });
        }
        let context = context_at(conn, pk, target.snapshot_id, target.started_seq)?;
        conn.execute(
            "UPDATE transcript SET rewound = 1 WHERE session = ?1 AND seq >= ?2 AND rewound = 0",
            params![pk, target.started_seq],
        )?;
        let json = serde_json::to_string(&to_messages(&context)?)?;
        let last = db::last_seq(conn, pk)?;
        let snapshot_id = turns::insert_snapshot(conn, pk, last, &json)?;
        db::touch(conn, pk, now_ms())?;
        Ok(Rewound {
            rewound_turns,
            prompt,
            snapshot_id: Some(snapshot_id),
        })
    })
}

pub(crate) fn fork(db: &mut Db, req: &ForkRequest, to_messages: ToMessages) -> Result<Forked> {
    db::require_acp(&req.source)?;
    db.write(|conn| {
        let key = &req.source;
        let (src, source) = db::require_live(conn, key)?;
        let turn = match &req.turn_id {
            Some(id) => {
                let t = find_turn(conn, src, key, id)?;
                if t.rewound {
                    return Err(StoreError::TurnRewound {
                        session_id: key.session_id.clone(),
                        turn_id: id.clone(),
                    });
                }
                if t.status == "open" {
                    return Err(StoreError::TurnStillOpen {
                        session_id: key.session_id.clone(),
                        turn_id: id.clone(),
                    });
                }
                Some(t)
            }
            // The last finished turn that is still part of the history.
            None => conn
                .prepare_cached(&format!(
                    "{TURN_START} AND c.status <> 'open' ORDER BY c.started_seq DESC"
                ))?
                .query_map([src], turn_start)?
                .find(|t| t.as_ref().map_or(true, |t| !t.rewound))
                .transpose()?,
        };
        // The context after turn T is the one the next turn started with (whatever became
        // of that turn since); after the last turn it is the current one.
        let (end_seq, context) = match &turn {
            None => (
                0,
                RestoredContext {
                    snapshot: None,
                    rows: Vec::new(),
                },
            ),
            Some(t) => {
                let next = conn
                    .prepare_cached(&format!(
                        "{TURN_START} AND c.started_seq > ?2 ORDER BY c.started_seq LIMIT 1"
                    ))?
                    .query_row(params![src, t.started_seq], turn_start)
                    .optional()?;
                match next {
                    Some(n) => (
                        n.started_seq - 1,
                        context_at(conn, src, n.snapshot_id, n.started_seq)?,
                    ),
                    None => (db::last_seq(conn, src)?, build_context(conn, src)?),
                }
            }
        };
        let new_key = SessionKey::acp(req.new_session_id.clone());
        if db::find_pk(conn, &new_key)?.is_some() {
            return Err(StoreError::SessionExists {
                mode: Mode::Acp,
                session_id: req.new_session_id.clone(),
            });
        }
        let now = now_ms();
        let forked_turn = turn.map(|t| t.turn_id);
        conn.execute(
            "INSERT INTO sessions (mode, session_id, agent_alias, owner, cwd, \
             interaction_surface, created_at, last_activity, \
             forked_from_session, forked_from_turn) \
             VALUES ('acp', ?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)",
            params![
                req.new_session_id,
                source.agent_alias,
                source.owner,
                source.cwd,
                source.interaction_surface,
                now,
                key.session_id,
                forked_turn
            ],
        )?;
        let new_pk = conn.last_insert_rowid();
        // Seqs are dense from 1 in the fork; rewound rows are not copied.
        conn.execute(
            "INSERT INTO transcript (session, seq, turn_id, role, content, created_at) \
             SELECT ?1, ROW_NUMBER() OVER (ORDER BY seq), turn_id, role, content, created_at \
             FROM transcript WHERE session = ?2 AND seq <= ?3 AND rewound = 0",
            params![new_pk, src, end_seq],
        )?;
        conn.execute(
            "INSERT INTO session_settings (session, autonomy, model) \
             SELECT ?1, autonomy, model FROM session_settings WHERE session = ?2",
            params![new_pk, src],
        )?;
        let json = serde_json::to_string(&to_messages(&context)?)?;
        let last = db::last_seq(conn, new_pk)?;
        turns::insert_snapshot(conn, new_pk, last, &json)?;
        let (_, row) = db::require_session(conn, &new_key)?;
        Ok(Forked {
            row,
            forked_from: ForkedFrom {
                session_id: key.session_id.clone(),
                turn_id: forked_turn,
            },
        })
    })
}

/// Sets the session's title (the caller checked its length).
pub(crate) fn set_title(db: &mut Db, key: &SessionKey, title: &str) -> Result<()> {
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        conn.execute(
            "UPDATE sessions SET title = ?2 WHERE pk = ?1",
            params![pk, title],
        )?;
        Ok(())
    })
}
