//! Webhook deliveries (SPEC §23.1): one row per delivery a webhook accepted or refused
//! after its signature held, keyed by the webhook and the delivery id. The row is the
//! idempotency record: claiming a delivery id inserts it in one transaction, and a second
//! claim of the same id within 24 h finds the first one's session and turn instead. Rows
//! older than that are removed as new ones come.

use rusqlite::{OptionalExtension, params};

use crate::db::{Db, now_ms};
use crate::error::Result;

/// How long a delivery id is remembered.
pub const DELIVERY_TTL_MS: i64 = 24 * 3600 * 1000;

/// One recorded delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub webhook: String,
    pub delivery_id: String,
    /// Milliseconds since the Unix epoch.
    pub received_at: i64,
    /// `accepted`, `completed`, `failed`, `cancelled`, or the refusal (`refused`).
    pub status: String,
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub error: Option<String>,
}

/// What claiming a delivery id came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The id was new: the delivery is recorded as `accepted`.
    New,
    /// Seen within [`DELIVERY_TTL_MS`]: the first delivery.
    Seen(Delivery),
}

const COLUMNS: &str = "webhook, delivery_id, received_at, status, session_id, turn_id, error";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        webhook: r.get(0)?,
        delivery_id: r.get(1)?,
        received_at: r.get(2)?,
        status: r.get(3)?,
        session_id: r.get(4)?,
        turn_id: r.get(5)?,
        error: r.get(6)?,
    })
}

/// Records `d` as a new delivery unless its id was seen in the last 24 h.
pub(crate) fn claim(db: &mut Db, d: Delivery) -> Result<Claim> {
    db.write(|conn| {
        let now = now_ms();
        conn.execute(
            "DELETE FROM webhook_deliveries WHERE received_at < ?1",
            params![now - DELIVERY_TTL_MS],
        )?;
        let seen = conn
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM webhook_deliveries WHERE webhook = ?1 AND delivery_id = ?2"
                ),
                params![d.webhook, d.delivery_id],
                row,
            )
            .optional()?;
        if let Some(first) = seen {
            return Ok(Claim::Seen(first));
        }
        conn.execute(
            &format!("INSERT INTO webhook_deliveries ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
            params![
                d.webhook,
                d.delivery_id,
                now,
                d.status,
                d.session_id,
                d.turn_id,
                d.error
            ],
        )?;
        Ok(Claim::New)
    })
}

/// Sets the status (and error) of a recorded delivery.
pub(crate) fn finish(
    db: &mut Db,
    webhook: &str,
    delivery_id: &str,
    status: &str,
    error: Option<&str>,
) -> Result<()> {
    db.write(|conn| {
        conn.execute(
            "UPDATE webhook_deliveries SET status = ?3, error = ?4 \
             WHERE webhook = ?1 AND delivery_id = ?2",
            params![webhook, delivery_id, status, error],
        )?;
        Ok(())
    })
}

/// The last `limit` deliveries of `webhook`, newest first.
pub(crate) fn list(db: &mut Db, webhook: &str, limit: u32) -> Result<Vec<Delivery>> {
    db.read(|conn| {
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM webhook_deliveries WHERE webhook = ?1 \
             ORDER BY received_at DESC, rowid DESC LIMIT ?2"
        ))?;
        let rows = stmt
            .query_map(params![webhook, limit], row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    })
}
