//! The budget requests a session's turn waits on (SPEC §24.2): registered when a turn
//! pauses before a provider call that would pass a budget, answered through
//! `session/approve` with `raise` or `stop`. A leaf: the gate that pauses is
//! [`budget`](super::budget).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;
use zeroclaw_protocol::DecidedBy;

/// An answer: `Some(amount)` raises the budget by it, `None` stops the turn.
pub(crate) type BudgetAnswer = (Option<f64>, DecidedBy);

/// Pending budget requests of one session.
#[derive(Default)]
pub(crate) struct BudgetRequests {
    pending: Mutex<HashMap<String, oneshot::Sender<BudgetAnswer>>>,
    next: AtomicU64,
}

/// Removes a pending request when its waiter goes away.
pub(crate) struct BudgetGuard<'a> {
    requests: &'a BudgetRequests,
    pub id: String,
}

impl Drop for BudgetGuard<'_> {
    fn drop(&mut self) {
        lock(&self.requests.pending).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Request ids start with this, so `session/approve` tells them from tool approvals.
pub const PREFIX: &str = "bud_";

impl BudgetRequests {
    /// Registers a new request; its id is unique within the session.
    pub fn register(&self) -> (BudgetGuard<'_>, oneshot::Receiver<BudgetAnswer>) {
        let id = format!("{PREFIX}{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        (BudgetGuard { requests: self, id }, rx)
    }

    /// Ids of the requests waiting for an answer.
    pub fn pending_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.pending).keys().cloned().collect();
        ids.sort();
        ids
    }

    pub fn any_pending(&self) -> bool {
        !lock(&self.pending).is_empty()
    }

    /// Delivers an answer; `false` when no request with that id is pending.
    pub fn answer(&self, id: &str, raise_by: Option<f64>, by: DecidedBy) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send((raise_by, by)).is_ok(),
            None => false,
        }
    }
}
