//! Per-session settings and token totals (SPEC §16): the autonomy and model chosen with
//! `session/configure`, and the session's token total and context size, kept beside the
//! session row (one `session_settings` row, removed with its session).

use rusqlite::{OptionalExtension, params};

use crate::db::{self, Db};
use crate::error::Result;
use crate::types::{SessionKey, SessionSettings};

pub(crate) fn get(db: &mut Db, key: &SessionKey) -> Result<Option<SessionSettings>> {
    db.read(|conn| {
        let Some((pk, _)) = db::find_pk(conn, key)? else {
            return Ok(None);
        };
        let row = conn
            .query_row(
                "SELECT autonomy, model, total_tokens, context_tokens \
                 FROM session_settings WHERE session = ?1",
                params![pk],
                |r| {
                    Ok(SessionSettings {
                        autonomy: r.get(0)?,
                        model: r.get(1)?,
                        total_tokens: r.get::<_, i64>(2)?.max(0) as u64,
                        context_tokens: r.get::<_, i64>(3)?.max(0) as u64,
                    })
                },
            )
            .optional()?;
        Ok(Some(row.unwrap_or_default()))
    })
}

pub(crate) fn set_overrides(
    db: &mut Db,
    key: &SessionKey,
    autonomy: Option<String>,
    model: Option<String>,
) -> Result<()> {
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        conn.execute(
            "INSERT INTO session_settings (session, autonomy, model) VALUES (?1, ?2, ?3) \
             ON CONFLICT (session) DO UPDATE SET autonomy = ?2, model = ?3",
            params![pk, autonomy, model],
        )?;
        Ok(())
    })
}

pub(crate) fn set_usage(
    db: &mut Db,
    key: &SessionKey,
    total_tokens: u64,
    context_tokens: u64,
) -> Result<()> {
    let total = i64::try_from(total_tokens).unwrap_or(i64::MAX);
    let context = i64::try_from(context_tokens).unwrap_or(i64::MAX);
    db.write(|conn| {
        let pk = db::require_pk(conn, key)?;
        conn.execute(
            "INSERT INTO session_settings (session, total_tokens, context_tokens) \
             VALUES (?1, ?2, ?3) \
             ON CONFLICT (session) DO UPDATE SET total_tokens = ?2, context_tokens = ?3",
            params![pk, total, context],
        )?;
        Ok(())
    })
}
