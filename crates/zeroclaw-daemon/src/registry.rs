//! Counting open connections: the per-principal and total limits of SPEC §3.3, the
//! `[limits] unauthenticated_ws` pool of SPEC §17, the `status.connections` figure, and the
//! client count ephemeral mode watches. It also hands out each principal's
//! [`PrincipalQueue`], the bytes queued to all of its connections (SPEC §17.1), shared by
//! those connections and gone with the last of them.
//!
//! A WebSocket peer that has not completed `initialize` counts only in its own small pool,
//! never in the total the local endpoint shares; it moves to the total once it names its
//! principal. An [`Admission`] is held for as long as its connection is open; releasing or
//! dropping it gives the slot back and publishes the new count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;
use zeroclaw_rpc::ErrorObject;

use crate::outbound::PrincipalQueue;

#[derive(Default)]
struct Counts {
    total: usize,
    /// WebSocket peers not yet past `initialize` (not in `total`).
    unauthenticated: usize,
    per_key: HashMap<String, usize>,
}

impl Counts {
    fn open(&self) -> usize {
        self.total + self.unauthenticated
    }
}

/// Open connections of the daemon, by principal key (`uid:N` locally, the token's user over
/// WebSocket) and in total.
pub struct ConnectionRegistry {
    counts: Mutex<Counts>,
    open: watch::Sender<usize>,
    /// Each principal's queued bytes, by principal id, while a connection counts in it.
    queues: Mutex<HashMap<String, Weak<PrincipalQueue>>>,
}

/// One admitted connection; its slot is released on drop.
pub struct Admission {
    registry: Arc<ConnectionRegistry>,
    /// `None` until the principal is known (WebSocket peers name it at `initialize`).
    key: Option<String>,
    /// Counted in the unauthenticated pool; the total limit it must fit once it names its
    /// principal.
    unauthenticated: Option<usize>,
    /// The slot was given back already.
    released: bool,
}

impl ConnectionRegistry {
    pub fn new() -> Arc<Self> {
        Arc::new(ConnectionRegistry {
            counts: Mutex::default(),
            open: watch::channel(0).0,
            queues: Mutex::default(),
        })
    }

    /// The queued-bytes count of principal `id`, shared by all of its connections.
    pub fn principal_queue(&self, id: &str) -> Arc<PrincipalQueue> {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(queue) = queues.get(id).and_then(Weak::upgrade) {
            return queue;
        }
        // Principals whose connections are all gone are forgotten as new ones come.
        queues.retain(|_, queue| queue.strong_count() > 0);
        let queue = Arc::new(PrincipalQueue::default());
        queues.insert(id.to_owned(), Arc::downgrade(&queue));
        queue
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
        self.open.send_replace(counts.open());
        Ok(Admission {
            registry: Arc::clone(self),
            key: key.map(str::to_string),
            unauthenticated: None,
            released: false,
        })
    }

    /// Admits a WebSocket peer before it has authenticated: at most `pool` such peers at
    /// once (`None` beyond it: close the connection at once). It joins the total, checked
    /// against `total`, when [`Admission::assign`] names its principal.
    pub fn admit_unauthenticated(self: &Arc<Self>, pool: usize, total: usize) -> Option<Admission> {
        let mut counts = self.lock();
        if counts.unauthenticated >= pool {
            return None;
        }
        counts.unauthenticated += 1;
        self.open.send_replace(counts.open());
        Some(Admission {
            registry: Arc::clone(self),
            key: None,
            unauthenticated: Some(total),
            released: false,
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

    /// Connections open right now (authenticated or not).
    pub fn open_count(&self) -> usize {
        self.lock().open()
    }

    /// Follows the number of open connections.
    pub fn watch(&self) -> watch::Receiver<usize> {
        self.open.subscribe()
    }
}

impl Admission {
    /// Counts this connection against `key` once its principal is known (and, for a peer
    /// of the unauthenticated pool, against the total); a connection already counted under
    /// a key keeps it.
    pub fn assign(&mut self, key: &str, per_principal: usize) -> Result<(), ErrorObject> {
        if self.key.is_some() || self.released {
            return Ok(());
        }
        let mut counts = self.registry.lock();
        if let Some(total) = self.unauthenticated
            && counts.total >= total
        {
            return Err(ErrorObject::limit_exceeded(
                format!("too many connections: the daemon serves at most {total}"),
                total as u64,
                counts.total as u64 + 1,
            ));
        }
        ConnectionRegistry::take_slot(&mut counts, key, per_principal)?;
        if self.unauthenticated.take().is_some() {
            counts.unauthenticated = counts.unauthenticated.saturating_sub(1);
            counts.total += 1;
        }
        self.key = Some(key.to_string());
        Ok(())
    }

    /// Whether this connection has not named its principal yet (unauthenticated pool).
    #[cfg(test)]
    pub fn is_unauthenticated(&self) -> bool {
        self.unauthenticated.is_some()
    }

    /// Gives the slot back now: the connection is gone even if something still holds its
    /// context (a queued prompt, say). Later calls do nothing.
    pub fn release(&mut self) {
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        let mut counts = self.registry.lock();
        if self.unauthenticated.is_some() {
            counts.unauthenticated = counts.unauthenticated.saturating_sub(1);
        } else {
            counts.total = counts.total.saturating_sub(1);
        }
        if let Some(key) = &self.key
            && let Some(n) = counts.per_key.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                counts.per_key.remove(key);
            }
        }
        self.registry.open.send_replace(counts.open());
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.release();
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
    fn a_principals_connections_share_one_queue_count_while_any_holds_it() {
        let reg = ConnectionRegistry::new();
        let a = reg.principal_queue("user:bob");
        let b = reg.principal_queue("user:bob");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &reg.principal_queue("operator")));
        drop((a, b));
        let _eve = reg.principal_queue("user:eve");
        assert_eq!(
            reg.queues.lock().unwrap().len(),
            1,
            "bob's count was forgotten"
        );
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

    #[test]
    fn unauthenticated_peers_have_their_own_pool_and_join_the_total_at_assign() {
        let reg = ConnectionRegistry::new();
        let _local = reg.admit(Some("uid:1"), 4, 2).expect("local");
        let mut ws1 = reg.admit_unauthenticated(2, 2).expect("pool 1");
        let _ws2 = reg.admit_unauthenticated(2, 2).expect("pool 2");
        assert!(reg.admit_unauthenticated(2, 2).is_none(), "pool full");
        assert_eq!(reg.open_count(), 3);
        // The pool never takes local capacity.
        let mut local2 = reg
            .admit(Some("uid:1"), 4, 2)
            .expect("local still admitted");
        // Authenticating needs room in the total.
        assert!(ws1.assign("token:a", 4).is_err(), "total full");
        local2.release();
        local2.release();
        ws1.assign("token:a", 4).expect("room now");
        assert!(!ws1.is_unauthenticated());
        assert!(
            reg.admit_unauthenticated(2, 2).is_some(),
            "a pool slot was freed"
        );
        assert_eq!(reg.open_count(), 3);
        drop(ws1);
        assert_eq!(reg.open_count(), 2);
    }
}
