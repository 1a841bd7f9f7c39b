//! A turn's durable life: `begin_turn` (prompt row + open checkpoint), `record_progress`
//! (checkpoint events, upserted by key), `append_text` (the new part of a streamed text),
//! `finish_turn` (final rows + closed checkpoint), and snapshots of the retained provider
//! context. Each call is one transaction.

use std::collections::HashMap;

use crate::json::EncodeJson;
use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, OptionalExtension, params};

use crate::db::{self, Db, now_ms};
use crate::error::{Result, StoreError};
use crate::large_text::{self, Json, StoredText};
use crate::types::{
    Checkpoint, CheckpointEvent, CheckpointStatus, NewRow, Progress, Role, SessionKey, Snapshot,
    text_key,
};

/// Status of `turn_id`'s checkpoint, or `TurnNotFound`.
fn checkpoint_status(
    conn: &Connection,
    pk: i64,
    key: &SessionKey,
    turn_id: &str,
) -> Result<CheckpointStatus> {
    let status: Option<String> = conn
        .prepare_cached("SELECT status FROM checkpoints WHERE session = ?1 AND turn_id = ?2")?
        .query_row(params![pk, turn_id], |r| r.get(0))
        .optional()?;
    match status {
        Some(s) => Ok(s.parse()?),
        None => Err(StoreError::TurnNotFound {
            session_id: key.session_id.clone(),
            turn_id: turn_id.to_owned(),
        }),
    }
}

fn require_open(conn: &Connection, pk: i64, key: &SessionKey, turn_id: &str) -> Result<()> {
    match checkpoint_status(conn, pk, key, turn_id)? {
        CheckpointStatus::Open => Ok(()),
        status => Err(StoreError::TurnNotOpen {
            session_id: key.session_id.clone(),
            turn_id: turn_id.to_owned(),
            status,
        }),
    }
}

const OPEN_TURNS: &str = "SELECT turn_id FROM checkpoints INDEXED BY checkpoints_open \
     WHERE session = ?1 AND status = 'open' ORDER BY started_seq";

/// Turn ids of the session's open checkpoints, oldest first. Through the index of open
/// checkpoints by name: without statistics SQLite prefers the primary key, which walks
/// every checkpoint the session ever had, at every turn start.
pub(crate) fn open_turns(conn: &Connection, pk: i64) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(OPEN_TURNS)?;
    let ids = stmt.query_map([pk], |r| r.get(0))?;
    Ok(ids.collect::<rusqlite::Result<_>>()?)
}

pub(crate) fn begin_turn(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    prompt: &str,
) -> Result<i64> {
    db::require_acp(key)?;
    db.write(|conn| {
        let pk = db::require_live_pk(conn, key)?;
        if let Some(open) = open_turns(conn, pk)?.into_iter().next() {
            return Err(StoreError::TurnStillOpen {
                session_id: key.session_id.clone(),
                turn_id: open,
            });
        }
        if checkpoint_status(conn, pk, key, turn_id).is_ok() {
            return Err(StoreError::TurnExists {
                session_id: key.session_id.clone(),
                turn_id: turn_id.to_owned(),
            });
        }
        let now = now_ms();
        let seq = db::append_row(conn, pk, Some(turn_id), Role::User, prompt, None, now)?;
        // The retained context just before this prompt is the latest snapshot plus the
        // rows between its boundary and `seq` (SPEC §18: a rewind rebuilds it from these).
        let snapshot_id = latest_snapshot_id(conn, pk)?;
        conn.execute(
            "INSERT INTO checkpoints \
             (session, turn_id, status, started_seq, created_at, updated_at, snapshot_id) \
             VALUES (?1, ?2, 'open', ?3, ?4, ?4, ?5)",
            params![pk, turn_id, seq, now, snapshot_id],
        )?;
        db::touch(conn, pk, now)?;
        Ok(seq)
    })
}

/// Records one step; returns the event's number within the turn.
///
/// Allowed on a killed session: a kill cancels the running turn, which may still persist
/// what it did. Only `begin_turn` refuses killed rows.
pub(crate) fn record_progress(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    progress: &Progress,
) -> Result<u32> {
    let payload = crate::json::to_json_exact(progress)?;
    let encoded = EncodedProgress {
        kind: progress.kind(),
        event_key: progress.event_key(),
        payload,
    };
    record_encoded(db, key, turn_id, encoded)
}

/// A step already encoded: its `kind`, upsert key and JSON payload (as [`Progress`]
/// serializes).
pub(crate) struct EncodedProgress {
    pub kind: &'static str,
    pub event_key: String,
    pub payload: String,
}

impl EncodedProgress {
    /// The accumulated text of `segment`, encoded from a borrowed text: the caller keeps
    /// its text and only the JSON is handed to the store (no copy of a long text first).
    pub fn text(segment: u32, text: &str) -> Result<EncodedProgress> {
        #[derive(serde::Serialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        enum Borrowed<'a> {
            Text { segment: u32, text: &'a str },
        }
        Ok(EncodedProgress {
            kind: "text",
            event_key: text_key(segment),
            payload: crate::json::to_json_exact(&Borrowed::Text { segment, text })?,
        })
    }
}

/// Appends `piece` to segment `segment`'s recorded text without rewriting what is there: the
/// first piece of a segment is its ordinary text event, each later one a row of its own
/// that [`load_events`] joins back in order. A long streamed answer is then written once,
/// in the pieces it arrived in, rather than whole again at every checkpoint. Returns the
/// event number of the segment's text (the first piece's). `piece` is encoded as
/// [`EncodedProgress::text`] encodes it.
pub(crate) fn append_text(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    segment: u32,
    piece: EncodedProgress,
) -> Result<u32> {
    db::require_acp(key)?;
    let payload = piece.payload;
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        require_open(conn, pk, key, turn_id)?;
        let now = now_ms();
        let base_key = text_key(segment);
        let base = event_n(conn, pk, turn_id, &base_key)?;
        let n = next_event_n(conn, pk, turn_id)?;
        let event_key = match base {
            Some(_) => format!("{base_key}+{n}"),
            None => base_key,
        };
        insert_event(conn, pk, turn_id, n, &event_key, "text", payload, now)?;
        touch_checkpoint(conn, pk, turn_id, now)?;
        Ok(base.unwrap_or(n))
    })
}

/// The number of the turn's event with upsert key `event_key`, if it has one.
fn event_n(conn: &Connection, pk: i64, turn_id: &str, event_key: &str) -> Result<Option<u32>> {
    Ok(conn
        .prepare_cached(
            "SELECT n FROM checkpoint_events WHERE session = ?1 AND turn_id = ?2 AND event_key = ?3",
        )?
        .query_row(params![pk, turn_id, event_key], |r| r.get(0))
        .optional()?)
}

fn next_event_n(conn: &Connection, pk: i64, turn_id: &str) -> Result<u32> {
    Ok(conn
        .prepare_cached(
            "SELECT COALESCE(MAX(n) + 1, 0) FROM checkpoint_events \
             WHERE session = ?1 AND turn_id = ?2",
        )?
        .query_row(params![pk, turn_id], |r| r.get(0))?)
}

/// Inserts one event row; `payload` is dropped once SQLite has bound its own copy, so a
/// long text's JSON is not kept while the row's record is built from it.
#[allow(clippy::too_many_arguments)]
fn insert_event(
    conn: &Connection,
    pk: i64,
    turn_id: &str,
    n: u32,
    event_key: &str,
    kind: &str,
    payload: String,
    now: i64,
) -> Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO checkpoint_events \
         (session, turn_id, n, event_key, kind, payload, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    insert.raw_bind_parameter(1, pk)?;
    insert.raw_bind_parameter(2, turn_id)?;
    insert.raw_bind_parameter(3, n)?;
    insert.raw_bind_parameter(4, event_key)?;
    insert.raw_bind_parameter(5, kind)?;
    insert.raw_bind_parameter(6, payload.as_str())?;
    insert.raw_bind_parameter(7, now)?;
    drop(payload);
    insert.raw_execute()?;
    Ok(())
}

fn touch_checkpoint(conn: &Connection, pk: i64, turn_id: &str, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE checkpoints SET updated_at = ?3 WHERE session = ?1 AND turn_id = ?2",
    )?
    .execute(params![pk, turn_id, now])?;
    Ok(())
}

/// [`record_progress`] of an [`EncodedProgress`].
pub(crate) fn record_encoded(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    progress: EncodedProgress,
) -> Result<u32> {
    db::require_acp(key)?;
    let EncodedProgress {
        kind,
        event_key,
        payload,
    } = progress;
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        require_open(conn, pk, key, turn_id)?;
        let now = now_ms();
        let existing = event_n(conn, pk, turn_id, &event_key)?;
        let n = match existing {
            Some(n) => {
                let mut update = conn.prepare_cached(
                    "UPDATE checkpoint_events SET payload = ?4, updated_at = ?5 \
                     WHERE session = ?1 AND turn_id = ?2 AND n = ?3",
                )?;
                update.raw_bind_parameter(1, pk)?;
                update.raw_bind_parameter(2, turn_id)?;
                update.raw_bind_parameter(3, n)?;
                update.raw_bind_parameter(4, payload.as_str())?;
                update.raw_bind_parameter(5, now)?;
                // SQLite holds its own copy of the payload now.
                drop(payload);
                update.raw_execute()?;
                if kind == "text" {
                    // The whole text replaces the pieces appended after it as well.
                    conn.prepare_cached(
                        "DELETE FROM checkpoint_events WHERE session = ?1 AND turn_id = ?2 \
                         AND event_key > ?3 || '+' AND event_key < ?3 || ','",
                    )?
                    .execute(params![pk, turn_id, event_key])?;
                }
                n
            }
            None => {
                let n = next_event_n(conn, pk, turn_id)?;
                insert_event(conn, pk, turn_id, n, &event_key, kind, payload, now)?;
                n
            }
        };
        touch_checkpoint(conn, pk, turn_id, now)?;
        Ok(n)
    })
}

/// Appends the turn's final rows and closes its checkpoint; returns the rows' seqs.
pub(crate) fn finish_turn(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
    status: CheckpointStatus,
    rows: &[NewRow],
) -> Result<Vec<i64>> {
    db::require_acp(key)?;
    if !matches!(
        status,
        CheckpointStatus::Completed | CheckpointStatus::Cancelled | CheckpointStatus::Failed
    ) {
        return Err(StoreError::InvalidFinishStatus(status));
    }
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        require_open(conn, pk, key, turn_id)?;
        let now = now_ms();
        let seqs = rows
            .iter()
            .map(|r| db::append_new_row(conn, pk, Some(turn_id), r, now))
            .collect::<Result<Vec<_>>>()?;
        conn.execute(
            "UPDATE checkpoints SET status = ?3, updated_at = ?4 WHERE session = ?1 AND turn_id = ?2",
            params![pk, turn_id, status.as_str(), now],
        )?;
        db::touch(conn, pk, now)?;
        Ok(seqs)
    })
}

pub(crate) fn load_events(
    conn: &Connection,
    pk: i64,
    turn_id: &str,
) -> Result<Vec<CheckpointEvent>> {
    let mut stmt = conn.prepare_cached(
        "SELECT n, payload FROM checkpoint_events WHERE session = ?1 AND turn_id = ?2 ORDER BY n",
    )?;
    let rows = stmt.query_map(params![pk, turn_id], |r| {
        Ok((r.get::<_, u32>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut events: Vec<CheckpointEvent> = Vec::new();
    // Where each segment's text event is in `events`: later pieces are appended to it.
    let mut text_at: HashMap<u32, usize> = HashMap::new();
    for row in rows {
        let (n, payload) = row?;
        let progress: Progress = serde_json::from_str(&payload)?;
        if let Progress::Text { segment, text } = &progress
            && let Some(&at) = text_at.get(segment)
            && let Progress::Text { text: whole, .. } = &mut events[at].progress
        {
            whole.push_str(text);
            continue;
        }
        if let Progress::Text { segment, .. } = &progress {
            text_at.insert(*segment, events.len());
        }
        events.push(CheckpointEvent { n, progress });
    }
    Ok(events)
}

pub(crate) fn checkpoint(
    db: &mut Db,
    key: &SessionKey,
    turn_id: &str,
) -> Result<Option<Checkpoint>> {
    db.read(|conn| {
        let pk = db::require_pk(conn, key)?;
        let head = conn
            .query_row(
                "SELECT status, started_seq, updated_at, snapshot_id FROM checkpoints \
                 WHERE session = ?1 AND turn_id = ?2",
                params![pk, turn_id],
                |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((status, started_seq, updated_at, snapshot_id)) = head else {
            return Ok(None);
        };
        Ok(Some(Checkpoint {
            turn_id: turn_id.to_owned(),
            status: status.parse()?,
            started_seq,
            snapshot_id,
            updated_at,
            events: load_events(conn, pk, turn_id)?,
        }))
    })
}

/// Inserts a snapshot of `messages` covering transcript rows `..= covers_seq` and drops
/// older ones. A large snapshot's JSON is encoded straight into its row (large_text.rs):
/// it is never held whole in memory, by this process or by SQLite.
pub(crate) fn save_snapshot(
    db: &mut Db,
    key: &SessionKey,
    covers_seq: i64,
    messages: &dyn EncodeJson,
) -> Result<i64> {
    let json = Json::of(messages)?;
    db.write(|conn| {
        let pk = db::require_live_pk(conn, key)?;
        insert_snapshot_encoded(conn, pk, covers_seq, &json, messages)
    })
}

/// Inserts a snapshot of session `pk` covering rows `..= covers_seq` (within the current
/// transaction), `messages` as measured by [`Json::of`] into `json`, a large one encoded
/// straight into its row; drops the older ones no turn start names; returns its id.
pub(crate) fn insert_snapshot_encoded(
    conn: &Connection,
    pk: i64,
    covers_seq: i64,
    json: &Json,
    messages: &dyn EncodeJson,
) -> Result<i64> {
    let (id, rowid) = insert_snapshot_row(conn, pk, covers_seq, json.bind()?)?;
    if let Json::Streamed(len) = json {
        large_text::fill_json(conn, c"snapshots", c"messages", rowid, *len, messages)?;
    }
    prune_snapshots(conn, pk, id)?;
    Ok(id)
}

/// Inserts a snapshot of session `pk` covering rows `..= covers_seq` (within the current
/// transaction) and drops the older ones no turn start names; returns its id.
pub(crate) fn insert_snapshot(
    conn: &Connection,
    pk: i64,
    covers_seq: i64,
    messages_json: &str,
) -> Result<i64> {
    let (id, rowid) = insert_snapshot_row(conn, pk, covers_seq, large_text::bind(messages_json)?)?;
    large_text::fill(conn, c"snapshots", c"messages", rowid, messages_json)?;
    prune_snapshots(conn, pk, id)?;
    Ok(id)
}

/// Inserts the snapshot row with `messages` bound as given; returns its id and rowid.
fn insert_snapshot_row(
    conn: &Connection,
    pk: i64,
    covers_seq: i64,
    messages: ToSqlOutput<'_>,
) -> Result<(i64, i64)> {
    let last = db::last_seq(conn, pk)?;
    if !(0..=last).contains(&covers_seq) {
        return Err(StoreError::InvalidBoundary {
            covers_seq,
            last_seq: last,
        });
    }
    let id: i64 = conn.query_row(
        "SELECT COALESCE(MAX(id), 0) + 1 FROM snapshots WHERE session = ?1",
        [pk],
        |r| r.get(0),
    )?;
    conn.prepare_cached(
        "INSERT INTO snapshots (session, id, covers_seq, messages, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![pk, id, covers_seq, messages, now_ms()])?;
    Ok((id, conn.last_insert_rowid()))
}

/// Only the latest snapshot is read for the current context, and the ones a turn start
/// names for a rewind (SPEC §18); the rest would only grow the file with each trim.
fn prune_snapshots(conn: &Connection, pk: i64, latest: i64) -> Result<()> {
    conn.execute(
        "DELETE FROM snapshots WHERE session = ?1 AND id < ?2 AND id NOT IN \
         (SELECT snapshot_id FROM checkpoints WHERE session = ?1 AND snapshot_id IS NOT NULL)",
        params![pk, latest],
    )?;
    Ok(())
}

/// Id of the session's latest snapshot.
pub(crate) fn latest_snapshot_id(conn: &Connection, pk: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT MAX(id) FROM snapshots WHERE session = ?1")?
        .query_row([pk], |r| r.get(0))?)
}

/// Snapshot `id` of session `pk`.
pub(crate) fn snapshot_by_id(conn: &Connection, pk: i64, id: i64) -> Result<Option<Snapshot>> {
    let row = conn
        .prepare_cached(
            "SELECT covers_seq, messages, created_at FROM snapshots \
             WHERE session = ?1 AND id = ?2",
        )?
        .query_row(params![pk, id], |r| {
            Ok((r.get(0)?, r.get::<_, StoredText>(1)?.0, r.get(2)?))
        })
        .optional()?;
    row.map(|(covers_seq, messages, created_at)| {
        Ok(Snapshot {
            id,
            covers_seq,
            messages: serde_json::from_str(&messages)?,
            created_at,
        })
    })
    .transpose()
}

pub(crate) fn latest_snapshot(conn: &Connection, pk: i64) -> Result<Option<Snapshot>> {
    let row = conn
        .prepare_cached(
            "SELECT id, covers_seq, messages, created_at FROM snapshots \
             WHERE session = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([pk], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, StoredText>(2)?.0,
                r.get(3)?,
            ))
        })
        .optional()?;
    row.map(|(id, covers_seq, messages, created_at)| {
        Ok(Snapshot {
            id,
            covers_seq,
            messages: serde_json::from_str(&messages)?,
            created_at,
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan for `sql`, one line per step.
    fn plan(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        let params = rusqlite::params_from_iter(std::iter::repeat_n(1i64, stmt.parameter_count()));
        let steps = stmt
            .query_map(params, |r| r.get::<_, String>(3))
            .expect("plan");
        steps
            .collect::<rusqlite::Result<Vec<_>>>()
            .expect("steps")
            .join("\n")
    }

    /// What every turn asks of the store looks its session up by key and its open turns up
    /// by their index: never a walk of the session's transcript or of its past turns,
    /// which would make each turn dearer as the session grows.
    #[test]
    fn a_turns_lookups_do_not_walk_the_sessions_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = crate::schema::open_connection(&dir.path().join("z.db")).expect("open");
        let open = plan(&conn, OPEN_TURNS);
        assert!(open.contains("USING INDEX checkpoints_open"), "{open}");
        let session = plan(&conn, db::FIND_PK);
        assert!(!session.contains("SCAN"), "{session}");
        assert!(!session.contains("transcript"), "{session}");
    }
}
