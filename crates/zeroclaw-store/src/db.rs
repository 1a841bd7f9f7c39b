//! The connection owned by the store thread, and the row helpers every operation shares.
//!
//! Invariants kept here:
//! - every write runs in one `BEGIN IMMEDIATE` transaction ([`Db::write`]); an error at any
//!   step, or an injected failure, rolls the whole of it back;
//! - transcript `seq` is allocated as `max(seq) + 1` inside that transaction, so a
//!   session's seqs are dense from 1 and, since rows are never updated or deleted (except
//!   with their session), never change.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::types::{FromSql, ValueRef};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use crate::error::{Result, StoreError};
use crate::large_text;
use crate::types::{
    DERIVED_TITLE_CHARS, ForkedFrom, ListCursor, ListQuery, MAX_LIST_LIMIT, Mode, NewRow, Role,
    SessionKey, SessionPage, SessionRow,
};

pub(crate) struct Db {
    pub(crate) conn: Connection,
    pub(crate) fail_writes: Arc<AtomicBool>,
}

impl Db {
    /// Runs `f` in one write transaction and commits it.
    pub(crate) fn write<R>(&mut self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        if self.fail_writes.load(Ordering::SeqCst) {
            // Everything above really ran; dropping the transaction rolls it back, which is
            // what a failing COMMIT (disk full, I/O error) leaves behind too.
            drop(tx);
            return Err(StoreError::InjectedFailure);
        }
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in one read transaction (a consistent snapshot under WAL).
    pub(crate) fn read<R>(&mut self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let tx = self.conn.transaction()?;
        let out = f(&tx)?;
        tx.finish()?;
        Ok(out)
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The first prompt is read cut to 320 characters (4 × [`DERIVED_TITLE_CHARS`]): a title
/// only needs its first line's first 80, and a prompt may be megabytes long. A large one
/// (a BLOB, large_text.rs) is not read here at all: `typeof` looks at its type without
/// loading it, and its rowid lets [`finish_session`] read only its head.
const SESSION_COLUMNS: &str = "s.pk, s.mode, s.session_id, s.agent_alias, s.owner, s.cwd, \
     s.interaction_surface, s.created_at, s.last_activity, s.killed_at, \
     s.message_count, \
     s.title, \
     (SELECT CASE WHEN typeof(t.content) = 'text' THEN substr(t.content, 1, 320) \
             ELSE t.rowid END FROM transcript t \
      WHERE t.session = s.pk AND t.role = 'user' AND t.rewound = 0 ORDER BY t.seq LIMIT 1), \
     s.forked_from_session, s.forked_from_turn";

/// Bytes read from the head of a large first prompt: 320 characters of up to 4 bytes.
const FIRST_PROMPT_HEAD_BYTES: usize = 4 * 320;

/// The title shown for a session without one set: the first line of its first prompt, cut
/// to [`DERIVED_TITLE_CHARS`] characters (SPEC §18).
pub(crate) fn derived_title(first_prompt: &str) -> Option<String> {
    let line = first_prompt.lines().next().unwrap_or("").trim();
    let title: String = line.chars().take(DERIVED_TITLE_CHARS).collect();
    (!title.is_empty()).then_some(title)
}

/// A row as read, before its mode is parsed and, when its title is derived from a large
/// first prompt, before that prompt's head is read.
struct RawSession {
    pk: i64,
    row: SessionRow,
    mode: String,
    large_first_prompt: Option<i64>,
}

fn session_from_row(r: &Row<'_>) -> rusqlite::Result<RawSession> {
    let title: Option<String> = r.get(11)?;
    // A large first prompt comes as its rowid; it is only read when no title is set.
    let (first_prompt, large_first_prompt) = match r.get_ref(12)? {
        ValueRef::Integer(rowid) => (None, title.is_none().then_some(rowid)),
        other => (Option::<String>::column_result(other)?, None),
    };
    let forked_session: Option<String> = r.get(13)?;
    let forked_turn: Option<String> = r.get(14)?;
    Ok(RawSession {
        pk: r.get(0)?,
        row: SessionRow {
            mode: Mode::Acp, // replaced by `finish_session` after parsing the mode column
            session_id: r.get(2)?,
            agent_alias: r.get(3)?,
            owner: r.get(4)?,
            cwd: r.get(5)?,
            interaction_surface: r.get(6)?,
            created_at: r.get(7)?,
            last_activity: r.get(8)?,
            killed_at: r.get(9)?,
            message_count: r.get(10)?,
            title: title.or_else(|| first_prompt.as_deref().and_then(derived_title)),
            forked_from: forked_session.map(|session_id| ForkedFrom {
                session_id,
                turn_id: forked_turn,
            }),
        },
        mode: r.get(1)?,
        large_first_prompt,
    })
}

fn finish_session(conn: &Connection, raw: RawSession) -> Result<(i64, SessionRow)> {
    let RawSession {
        pk,
        mut row,
        mode,
        large_first_prompt,
    } = raw;
    row.mode = mode.parse()?;
    if let Some(rowid) = large_first_prompt {
        let head = large_text::head(
            conn,
            c"transcript",
            c"content",
            rowid,
            FIRST_PROMPT_HEAD_BYTES,
        )?;
        row.title = derived_title(&head);
    }
    Ok((pk, row))
}

/// The row for `key`, with its primary key.
pub(crate) fn find_session(
    conn: &Connection,
    key: &SessionKey,
) -> Result<Option<(i64, SessionRow)>> {
    let sql =
        format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.mode = ?1 AND s.session_id = ?2");
    conn.query_row(
        &sql,
        params![key.mode.as_str(), key.session_id],
        session_from_row,
    )
    .optional()?
    .map(|raw| finish_session(conn, raw))
    .transpose()
}

pub(crate) const FIND_PK: &str =
    "SELECT pk, killed_at IS NOT NULL FROM sessions WHERE mode = ?1 AND session_id = ?2";

/// The primary key of `key`'s row and whether it is killed, without the row's computed
/// title (a read of the session's first prompt), which a turn's writes (several a turn)
/// need not pay.
pub(crate) fn find_pk(conn: &Connection, key: &SessionKey) -> Result<Option<(i64, bool)>> {
    Ok(conn
        .prepare_cached(FIND_PK)?
        .query_row(params![key.mode.as_str(), key.session_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

/// Like [`find_pk`], but a missing row is [`StoreError::NotFound`].
pub(crate) fn require_pk(conn: &Connection, key: &SessionKey) -> Result<i64> {
    match find_pk(conn, key)? {
        Some((pk, _)) => Ok(pk),
        None => Err(StoreError::NotFound {
            mode: key.mode,
            session_id: key.session_id.clone(),
        }),
    }
}

/// Like [`require_pk`], but a killed row is [`StoreError::Killed`].
pub(crate) fn require_live_pk(conn: &Connection, key: &SessionKey) -> Result<i64> {
    match find_pk(conn, key)? {
        Some((pk, false)) => Ok(pk),
        Some((_, true)) => Err(StoreError::Killed {
            mode: key.mode,
            session_id: key.session_id.clone(),
        }),
        None => Err(StoreError::NotFound {
            mode: key.mode,
            session_id: key.session_id.clone(),
        }),
    }
}

/// Like [`find_session`], but a missing row is [`StoreError::NotFound`].
pub(crate) fn require_session(conn: &Connection, key: &SessionKey) -> Result<(i64, SessionRow)> {
    find_session(conn, key)?.ok_or_else(|| StoreError::NotFound {
        mode: key.mode,
        session_id: key.session_id.clone(),
    })
}

/// Like [`require_session`], but a killed row is [`StoreError::Killed`].
pub(crate) fn require_live(conn: &Connection, key: &SessionKey) -> Result<(i64, SessionRow)> {
    let (pk, row) = require_session(conn, key)?;
    if row.is_killed() {
        return Err(StoreError::Killed {
            mode: key.mode,
            session_id: key.session_id.clone(),
        });
    }
    Ok((pk, row))
}

pub(crate) fn require_acp(key: &SessionKey) -> Result<()> {
    if key.mode != Mode::Acp {
        return Err(StoreError::WrongMode {
            mode: key.mode,
            session_id: key.session_id.clone(),
            expected: Mode::Acp,
        });
    }
    Ok(())
}

/// Every session row, optionally only `mode`, optionally including killed rows.
pub(crate) fn list_sessions(
    conn: &Connection,
    mode: Option<Mode>,
    include_killed: bool,
) -> Result<Vec<(i64, SessionRow)>> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM sessions s \
         WHERE (?1 IS NULL OR s.mode = ?1) AND (?2 OR s.killed_at IS NULL) \
         ORDER BY s.created_at, s.pk"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(
        params![mode.map(Mode::as_str), include_killed],
        session_from_row,
    )?;
    rows.map(|r| finish_session(conn, r?)).collect()
}

/// One page of non-killed rows in `session/list` order: a single query that walks the
/// activity index (the owner's, when filtered by owner) from the cursor on.
pub(crate) fn list_page(conn: &Connection, q: &ListQuery) -> Result<SessionPage> {
    let limit = q.limit.clamp(1, MAX_LIST_LIMIT);
    let mut sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.killed_at IS NULL");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(mode) = q.mode {
        args.push(mode.as_str().to_owned().into());
        sql += &format!(" AND s.mode = ?{}", args.len());
    }
    if let Some(owner) = &q.owner {
        args.push(owner.clone().into());
        sql += &format!(" AND s.owner = ?{}", args.len());
    }
    if let Some(cwd) = &q.cwd {
        args.push(cwd.clone().into());
        sql += &format!(" AND s.cwd = ?{}", args.len());
    }
    if let Some(after) = q.after {
        args.push(after.last_activity.into());
        args.push(after.pk.into());
        sql += &format!(
            " AND (s.last_activity, s.pk) < (?{}, ?{})",
            args.len() - 1,
            args.len()
        );
    }
    // A search filters on the title as shown, which is partly derived here (Unicode case
    // folding included), so it walks the same order without a row limit and stops at the
    // first row past the page.
    let search = q.search.as_deref().map(str::to_lowercase);
    if search.is_none() {
        args.push(i64::from(limit + 1).into());
        sql += &format!(
            " ORDER BY s.last_activity DESC, s.pk DESC LIMIT ?{}",
            args.len()
        );
    } else {
        sql += " ORDER BY s.last_activity DESC, s.pk DESC";
    }
    let mut stmt = conn.prepare_cached(&sql)?;
    let found = stmt.query_map(rusqlite::params_from_iter(args), session_from_row)?;
    let mut rows = Vec::with_capacity(limit as usize);
    let mut has_more = false;
    for r in found {
        let (pk, row) = finish_session(conn, r?)?;
        if let Some(needle) = &search {
            let hit = row
                .title
                .as_deref()
                .is_some_and(|t| t.to_lowercase().contains(needle.as_str()));
            if !hit {
                continue;
            }
        }
        if rows.len() == limit as usize {
            has_more = true;
            break;
        }
        let cursor = ListCursor {
            last_activity: row.last_activity,
            pk,
        };
        rows.push((cursor, row));
    }
    Ok(SessionPage { rows, has_more })
}

pub(crate) fn last_seq(conn: &Connection, pk: i64) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM transcript WHERE session = ?1",
        [pk],
        |r| r.get(0),
    )?)
}

/// Appends one transcript row at the next seq and returns that seq. A large `content` is
/// written into the row after the insert, never copied by SQLite (large_text.rs).
pub(crate) fn append_row(
    conn: &Connection,
    pk: i64,
    turn_id: Option<&str>,
    role: Role,
    content: &str,
    event_n: Option<u32>,
    now: i64,
) -> Result<i64> {
    let seq = insert_row(
        conn,
        pk,
        turn_id,
        role,
        large_text::bind(content)?,
        event_n,
        now,
    )?;
    large_text::fill(
        conn,
        c"transcript",
        c"content",
        conn.last_insert_rowid(),
        content,
    )?;
    Ok(seq)
}

/// Appends `row` of a turn (or of none): a [`NewRow::long`] text is written into the row
/// a piece at a time, never held whole.
pub(crate) fn append_new_row(
    conn: &Connection,
    pk: i64,
    turn_id: Option<&str>,
    row: &NewRow,
    now: i64,
) -> Result<i64> {
    let Some(long) = &row.long else {
        return append_row(conn, pk, turn_id, row.role, &row.content, None, now);
    };
    let long = &*long.0;
    if long.len() < large_text::LARGE_TEXT {
        // Short enough to be bound as TEXT, as any text of its length is.
        let mut text = Vec::with_capacity(long.len());
        long.write_pieces(&mut |piece| {
            text.extend_from_slice(piece);
            Ok(())
        })?;
        let text = String::from_utf8(text).map_err(std::io::Error::other)?;
        return append_row(conn, pk, turn_id, row.role, &text, None, now);
    }
    let blank = large_text::zeroblob(long.len())?;
    let seq = insert_row(conn, pk, turn_id, row.role, blank, None, now)?;
    large_text::fill_pieces(
        conn,
        c"transcript",
        c"content",
        conn.last_insert_rowid(),
        long,
    )?;
    Ok(seq)
}

/// Inserts a transcript row whose content is `content` as bound (a zeroblob for a large
/// text, filled in afterwards); returns its seq.
fn insert_row(
    conn: &Connection,
    pk: i64,
    turn_id: Option<&str>,
    role: Role,
    content: rusqlite::types::ToSqlOutput<'_>,
    event_n: Option<u32>,
    now: i64,
) -> Result<i64> {
    let seq = last_seq(conn, pk)? + 1;
    conn.prepare_cached(
        "INSERT INTO transcript (session, seq, turn_id, role, content, created_at, event_n) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        pk,
        seq,
        turn_id,
        role.as_str(),
        content,
        now,
        event_n
    ])?;
    Ok(seq)
}

pub(crate) fn touch(conn: &Connection, pk: i64, now: i64) -> Result<()> {
    conn.prepare_cached("UPDATE sessions SET last_activity = ?2 WHERE pk = ?1")?
        .execute(params![pk, now])?;
    Ok(())
}
