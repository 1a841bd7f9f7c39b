//! Web Push subscriptions per principal (SPEC §24.3): `push/subscribe` keeps one row per
//! endpoint (subscribing the same endpoint again replaces it, under the new principal),
//! `push/unsubscribe` and a push service's 404/410 remove it.

use rusqlite::params;

use crate::Store;
use crate::db::Db;
use crate::error::Result;

/// At most this many subscriptions per principal; subscribing beyond it removes the
/// oldest (a phone that re-subscribes after every reinstall must not grow the table).
pub const MAX_PUSH_SUBSCRIPTIONS: i64 = 32;

/// One browser's subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscription {
    pub endpoint: String,
    pub principal: String,
    /// The browser's P-256 public key, base64url (uncompressed point).
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
}

fn save(db: &mut Db, sub: &PushSubscription, now: i64) -> Result<()> {
    db.write(|conn| {
        conn.execute(
            "INSERT INTO push_subscriptions (endpoint, principal, p256dh, auth, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (endpoint) DO UPDATE SET principal = ?2, p256dh = ?3, auth = ?4, \
             created_at = ?5",
            params![sub.endpoint, sub.principal, sub.p256dh, sub.auth, now],
        )?;
        conn.execute(
            "DELETE FROM push_subscriptions WHERE principal = ?1 AND endpoint NOT IN \
             (SELECT endpoint FROM push_subscriptions WHERE principal = ?1 \
              ORDER BY created_at DESC, rowid DESC LIMIT ?2)",
            params![sub.principal, MAX_PUSH_SUBSCRIPTIONS],
        )?;
        Ok(())
    })
}

fn remove(db: &mut Db, principal: Option<&str>, endpoint: &str) -> Result<bool> {
    db.write(|conn| {
        let n = match principal {
            Some(p) => conn.execute(
                "DELETE FROM push_subscriptions WHERE endpoint = ?1 AND principal = ?2",
                params![endpoint, p],
            )?,
            None => conn.execute(
                "DELETE FROM push_subscriptions WHERE endpoint = ?1",
                params![endpoint],
            )?,
        };
        Ok(n > 0)
    })
}

fn of(db: &mut Db, principal: &str) -> Result<Vec<PushSubscription>> {
    db.read(|conn| {
        let mut stmt = conn.prepare(
            "SELECT endpoint, principal, p256dh, auth FROM push_subscriptions \
             WHERE principal = ?1 ORDER BY created_at, rowid",
        )?;
        let rows = stmt.query_map(params![principal], |r| {
            Ok(PushSubscription {
                endpoint: r.get(0)?,
                principal: r.get(1)?,
                p256dh: r.get(2)?,
                auth: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    })
}

impl Store {
    /// Keeps `sub` (replacing an earlier row for its endpoint).
    pub async fn save_push_subscription(&self, sub: PushSubscription) -> Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.call(move |db| save(db, &sub, now)).await
    }

    /// Removes the subscription at `endpoint` (only `principal`'s, when given); whether
    /// one was there.
    pub async fn remove_push_subscription(
        &self,
        principal: Option<&str>,
        endpoint: &str,
    ) -> Result<bool> {
        let principal = principal.map(str::to_owned);
        let endpoint = endpoint.to_owned();
        self.call(move |db| remove(db, principal.as_deref(), &endpoint))
            .await
    }

    /// `principal`'s subscriptions, oldest first.
    pub async fn push_subscriptions(&self, principal: &str) -> Result<Vec<PushSubscription>> {
        let principal = principal.to_owned();
        self.call(move |db| of(db, &principal)).await
    }
}
