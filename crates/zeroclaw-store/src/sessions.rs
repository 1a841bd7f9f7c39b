//! Session rows: create/resume, tombstone, delete, and plain appends (chat history).

use rusqlite::params;

use crate::db::{self, Db, now_ms};
use crate::error::{Result, StoreError};
use crate::types::{
    ListQuery, Mode, NewRow, NewSession, OpenedSession, SessionKey, SessionPage, SessionRow,
};

/// Creates the row, or finds the existing one. An existing row is never modified (rows of
/// other surfaces must stay byte-for-byte as they are).
pub(crate) fn open_session(db: &mut Db, new: NewSession) -> Result<OpenedSession> {
    db.write(|conn| {
        if let Some((_, row)) = db::find_session(conn, &new.key)? {
            if row.is_killed() {
                return Err(StoreError::Killed {
                    mode: new.key.mode,
                    session_id: new.key.session_id.clone(),
                });
            }
            return Ok(OpenedSession { row, resumed: true });
        }
        let now = now_ms();
        conn.execute(
            "INSERT INTO sessions (mode, session_id, agent_alias, owner, cwd, \
             interaction_surface, created_at, last_activity) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                new.key.mode.as_str(),
                new.key.session_id,
                new.agent_alias,
                new.owner,
                new.cwd,
                new.interaction_surface,
                now
            ],
        )?;
        let (_, row) = db::require_session(conn, &new.key)?;
        Ok(OpenedSession {
            row,
            resumed: false,
        })
    })
}

/// Records the directory the session works in now (a resume that named one, SPEC §22).
pub(crate) fn set_cwd(db: &mut Db, key: &SessionKey, cwd: &str) -> Result<()> {
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        conn.execute(
            "UPDATE sessions SET cwd = ?2 WHERE pk = ?1",
            params![pk, cwd],
        )?;
        Ok(())
    })
}

pub(crate) fn get_session(db: &mut Db, key: &SessionKey) -> Result<Option<SessionRow>> {
    db.read(|conn| Ok(db::find_session(conn, key)?.map(|(_, row)| row)))
}

pub(crate) fn list_sessions(db: &mut Db, mode: Option<Mode>) -> Result<Vec<SessionRow>> {
    db.read(|conn| {
        Ok(db::list_sessions(conn, mode, false)?
            .into_iter()
            .map(|(_, row)| row)
            .collect())
    })
}

pub(crate) fn list_page(db: &mut Db, q: &ListQuery) -> Result<SessionPage> {
    db.read(|conn| db::list_page(conn, q))
}

/// Every principal that owns a row, killed rows included (their transcripts stay readable).
pub(crate) fn owners(db: &mut Db) -> Result<Vec<String>> {
    db.read(|conn| {
        let mut stmt = conn.prepare_cached("SELECT DISTINCT owner FROM sessions")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<Vec<String>, _>>()?)
    })
}

/// Tombstones the row. Killing a killed row keeps the first `killed_at`.
pub(crate) fn kill(db: &mut Db, key: &SessionKey) -> Result<()> {
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        conn.execute(
            "UPDATE sessions SET killed_at = ?2 WHERE pk = ?1 AND killed_at IS NULL",
            params![pk, now_ms()],
        )?;
        Ok(())
    })
}

/// Removes the row with its transcript, checkpoints and snapshots (foreign-key cascade).
/// Returns whether a row existed.
pub(crate) fn delete(db: &mut Db, key: &SessionKey) -> Result<bool> {
    db.write(|conn| {
        let n = conn.execute(
            "DELETE FROM sessions WHERE mode = ?1 AND session_id = ?2",
            params![key.mode.as_str(), key.session_id],
        )?;
        Ok(n > 0)
    })
}

/// Appends rows without a checkpoint (chat history). Returns their seqs.
pub(crate) fn append_rows(
    db: &mut Db,
    key: &SessionKey,
    turn_id: Option<&str>,
    rows: &[NewRow],
) -> Result<Vec<i64>> {
    db.write(|conn| {
        let pk = db::require_live_pk(conn, key)?;
        let now = now_ms();
        let seqs = rows
            .iter()
            .map(|r| db::append_new_row(conn, pk, turn_id, r, now))
            .collect::<Result<Vec<_>>>()?;
        db::touch(conn, pk, now)?;
        Ok(seqs)
    })
}
