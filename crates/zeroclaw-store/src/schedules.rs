//! Schedules and their runs (SPEC §24.1), kept across restarts: one `schedules` row per
//! schedule (its definition is opaque JSON text to the store) and its `schedule_runs`,
//! removed with it. The store keeps at most [`RUNS_KEPT`] runs of a schedule: recording
//! one more drops the oldest.

use rusqlite::{Connection, params};

use crate::db::Db;
use crate::error::Result;

/// Runs kept per schedule; older ones are dropped as new ones are recorded.
pub const RUNS_KEPT: i64 = 200;

/// One schedule as stored. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRow {
    pub schedule_id: String,
    /// The creator's principal id (`operator`, `user:<name>`).
    pub owner: String,
    pub name: String,
    /// The definition, JSON text written and read by the schedules service.
    pub definition: String,
    /// When it runs next; `None`: not again (disabled, or an `at` that ran).
    pub next_run_at: Option<i64>,
    /// The session its last run used (for `session: "continue"`).
    pub last_session: Option<String>,
    pub created_at: i64,
}

/// One run of a schedule as stored. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRunRow {
    pub run_id: String,
    pub schedule_id: String,
    pub scheduled_for: i64,
    pub started_at: Option<i64>,
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub outcome: String,
    pub error: Option<String>,
}

pub(crate) fn save(db: &mut Db, row: ScheduleRow) -> Result<()> {
    db.write(|conn| {
        conn.execute(
            "INSERT INTO schedules \
             (schedule_id, owner, name, definition, next_run_at, last_session, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (schedule_id) DO UPDATE SET owner = ?2, name = ?3, definition = ?4, \
             next_run_at = ?5, last_session = ?6",
            params![
                row.schedule_id,
                row.owner,
                row.name,
                row.definition,
                row.next_run_at,
                row.last_session,
                row.created_at
            ],
        )?;
        Ok(())
    })
}

pub(crate) fn delete(db: &mut Db, schedule_id: &str) -> Result<bool> {
    db.write(|conn| {
        let n = conn.execute(
            "DELETE FROM schedules WHERE schedule_id = ?1",
            params![schedule_id],
        )?;
        Ok(n > 0)
    })
}

pub(crate) fn load(db: &mut Db) -> Result<Vec<(ScheduleRow, Option<ScheduleRunRow>)>> {
    db.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT schedule_id, owner, name, definition, next_run_at, last_session, created_at \
             FROM schedules ORDER BY created_at, schedule_id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ScheduleRow {
                    schedule_id: r.get(0)?,
                    owner: r.get(1)?,
                    name: r.get(2)?,
                    definition: r.get(3)?,
                    next_run_at: r.get(4)?,
                    last_session: r.get(5)?,
                    created_at: r.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let last = runs_of(conn, &row.schedule_id, 1)?.pop();
            out.push((row, last));
        }
        Ok(out)
    })
}

pub(crate) fn save_run(db: &mut Db, run: ScheduleRunRow) -> Result<()> {
    db.write(|conn| {
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, started_at, \
             session_id, turn_id, outcome, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             ON CONFLICT (run_id) DO UPDATE SET started_at = ?4, session_id = ?5, \
             turn_id = ?6, outcome = ?7, error = ?8",
            params![
                run.run_id,
                run.schedule_id,
                run.scheduled_for,
                run.started_at,
                run.session_id,
                run.turn_id,
                run.outcome,
                run.error
            ],
        )?;
        conn.execute(
            "DELETE FROM schedule_runs WHERE schedule_id = ?1 AND pk NOT IN \
             (SELECT pk FROM schedule_runs WHERE schedule_id = ?1 ORDER BY pk DESC LIMIT ?2)",
            params![run.schedule_id, RUNS_KEPT],
        )?;
        Ok(())
    })
}

pub(crate) fn runs(db: &mut Db, schedule_id: &str, limit: u32) -> Result<Vec<ScheduleRunRow>> {
    db.read(|conn| runs_of(conn, schedule_id, limit))
}

/// The newest `limit` runs of a schedule, newest first.
fn runs_of(conn: &Connection, schedule_id: &str, limit: u32) -> Result<Vec<ScheduleRunRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT run_id, schedule_id, scheduled_for, started_at, session_id, turn_id, outcome, \
         error FROM schedule_runs WHERE schedule_id = ?1 ORDER BY pk DESC LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(params![schedule_id, limit], |r| {
            Ok(ScheduleRunRow {
                run_id: r.get(0)?,
                schedule_id: r.get(1)?,
                scheduled_for: r.get(2)?,
                started_at: r.get(3)?,
                session_id: r.get(4)?,
                turn_id: r.get(5)?,
                outcome: r.get(6)?,
                error: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
