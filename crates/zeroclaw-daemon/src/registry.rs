//! Counting open connections: the per-principal and total limits of SPEC §3.3, the
//! `status.connections` figure, and the client count ephemeral mode watches.
//!
//! An [`Admission`] is held for as long as its connection is open; dropping it gives the
//! slot back and publishes the new count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zeroclaw_rpc::ErrorObject;

#[derive(Default)]
struct Counts {
    total: usize,
    per_key: HashMap<String, usize>,
}

/// Open connections of the daemon, by principal key (`uid:N` locally, the token's user over
/// WebSocket) and in total.
pub struct ConnectionRegistry {
    counts: Mutex<Counts>,
    open: watch::Sender<usize>,
}

/// One admitted connection; its slot is released on drop.
pub struct Admission {
    registry: Arc<ConnectionRegistry>,
    /// `None` until the principal is known (WebSocket peers name it at `initialize`).
    key: Option<String>,
}

impl ConnectionRegistry {
    pub fn new() -> Arc<Self> {
        Arc::new(ConnectionRegistry {
            counts: Mutex::default(),
            open: watch::channel(0).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection for `key` (`None`: principal not known yet, only the total
    /// counts), or explains which limit refused it (-32013).
    pub fn admit(
        self: &Arc<Self>,
        key: Option<&str>,
        per_principal: usize,
        total: usize,
    ) -> Result<Admission, ErrorObject> {
        let mut counts = self.lock();
        if counts.total >= total {
            return Err(ErrorObject::limit_exceeded(
                format!("too many connections: the daemon serves at most {total}"),
                total as u64,
                counts.total as u64 + 1,
            ));
        }
        if let Some(key) = key {
            Self::take_slot(&mut counts, key, per_principal)?;
        }
        counts.total += 1;
        self.open.send_replace(counts.total);
        Ok(Admission {
            registry: Arc::clone(self),
            key: key.map(str::to_string),
        })
    }

    fn take_slot(counts: &mut Counts, key: &str, per_principal: usize) -> Result<(), ErrorObject> {
        let mine = counts.per_key.get(key).copied().unwrap_or(0);
        if mine >= per_principal {
            return Err(ErrorObject::limit_exceeded(
                format!("too many connections for {key}: at most {per_principal}"),
                per_principal as u64,
                mine as u64 + 1,
            ));
        }
        *counts.per_key.entry(key.to_string()).or_default() += 1;
        Ok(())
    }

    /// Connections open right now.
    pub fn open_count(&self) -> usize {
        self.lock().total
    }

    /// Follows the number of open connections.
    pub fn watch(&self) -> watch::Receiver<usize> {
        self.open.subscribe()
    }
}

impl Admission {
    /// Counts this connection against `key` once its principal is known; a connection
    /// already counted under a key keeps it.
    pub fn assign(&mut self, key: &str, per_principal: usize) -> Result<(), ErrorObject> {
        if self.key.is_some() {
            return Ok(());
        }
        let mut counts = self.registry.lock();
        ConnectionRegistry::take_slot(&mut counts, key, per_principal)?;
        self.key = Some(key.to_string());
        Ok(())
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut counts = self.registry.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(key) = &self.key
            && let Some(n) = counts.per_key.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                counts.per_key.remove(key);
            }
        }
        self.registry.open.send_replace(counts.total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_per_key_and_total_and_release_on_drop() {
        let reg = ConnectionRegistry::new();
        let a1 = reg.admit(Some("uid:1"), 2, 3).expect("first");
        let _a2 = reg.admit(Some("uid:1"), 2, 3).expect("second");
        let err = reg.admit(Some("uid:1"), 2, 3).err().expect("third refused");
        assert_eq!(err.code, zeroclaw_rpc::code::LIMIT_EXCEEDED);
        assert_eq!(err.data, Some(serde_json::json!({"limit": 2, "value": 3})));
        let _b = reg.admit(Some("uid:2"), 2, 3).expect("other key");
        assert!(reg.admit(Some("uid:3"), 2, 3).is_err(), "total reached");
        drop(a1);
        assert_eq!(reg.open_count(), 2);
        reg.admit(Some("uid:1"), 2, 3).expect("slot given back");
    }

    #[test]
    fn a_key_assigned_later_counts_against_its_limit() {
        let reg = ConnectionRegistry::new();
        let mut a = reg.admit(None, 1, 10).expect("anonymous");
        let mut b = reg.admit(None, 1, 10).expect("anonymous");
        a.assign("token:x", 1).expect("first for x");
        assert!(b.assign("token:x", 1).is_err());
        drop(a);
        b.assign("token:x", 1).expect("slot given back");
        assert_eq!(reg.open_count(), 1);
    }
}
