//! Bookkeeping for the requests *we* send to the peer (SPEC §3.2).
//!
//! Each connection numbers its outbound requests `zc-out-0`, `zc-out-1`, … . A response is
//! matched only against this map, so an incoming request that happens to carry the same
//! textual id is never confused with one of ours (directional correlation). Incoming
//! request ids are never entered here. An entry is removed on answer, timeout or close.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::ErrorObject;
use crate::message::Response;

/// Why an outbound request did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerError {
    /// The peer answered with an error.
    Remote(ErrorObject),
    /// No answer within the caller's timeout.
    Timeout,
    /// The connection closed before an answer arrived.
    Closed,
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Remote(e) => write!(f, "peer answered with an error: {e}"),
            PeerError::Timeout => f.write_str("peer did not answer in time"),
            PeerError::Closed => f.write_str("connection closed before the peer answered"),
        }
    }
}

impl std::error::Error for PeerError {}

type Waiter = oneshot::Sender<Result<Value, ErrorObject>>;

/// The pending map of one connection's outbound requests.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    waiters: Mutex<Option<HashMap<String, Waiter>>>,
}

/// A registered outbound request: its id (to put on the wire) and the awaitable answer.
pub struct Ticket<'a> {
    pub id: String,
    rx: oneshot::Receiver<Result<Value, ErrorObject>>,
    pending: &'a Pending,
}

impl Pending {
    pub fn new() -> Self {
        Pending {
            next: AtomicU64::new(0),
            waiters: Mutex::new(Some(HashMap::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashMap<String, Waiter>>> {
        // A poisoned map only means another thread panicked mid-insert; the map itself is
        // still consistent, so keep using it.
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates the next `zc-out-N` id and registers a waiter for it. Returns `None` when
    /// the connection is already closed.
    pub fn register(&self) -> Option<Ticket<'_>> {
        let id = format!("zc-out-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.lock().as_mut()?.insert(id.clone(), tx);
        Some(Ticket {
            id,
            rx,
            pending: self,
        })
    }

    /// Routes a response to its waiter. `false` = not one of ours (log and drop it).
    pub fn resolve(&self, response: Response) -> bool {
        let Value::String(id) = &response.id else {
            return false;
        };
        let waiter = self.lock().as_mut().and_then(|w| w.remove(id));
        match waiter {
            Some(tx) => {
                // The caller may have given up in the meantime; that is fine.
                let _ = tx.send(response.into_outcome());
                true
            }
            None => false,
        }
    }

    /// Fails every pending request with [`PeerError::Closed`] and refuses new ones.
    pub fn close(&self) {
        self.lock().take();
    }

    /// Number of requests awaiting an answer.
    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn forget(&self, id: &str) {
        if let Some(w) = self.lock().as_mut() {
            w.remove(id);
        }
    }
}

impl Drop for Ticket<'_> {
    /// However the wait ends — answer, timeout, or the waiting task being cancelled — the
    /// entry leaves the pending map.
    fn drop(&mut self) {
        self.pending.forget(&self.id);
    }
}

impl Ticket<'_> {
    /// Waits for the answer (the entry is removed however this ends).
    pub async fn wait(mut self, timeout: Duration) -> Result<Value, PeerError> {
        let outcome = tokio::time::timeout(timeout, &mut self.rx).await;
        match outcome {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(PeerError::Remote(error)),
            Ok(Err(_)) => Err(PeerError::Closed),
            Err(_) => Err(PeerError::Timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn ids_count_up_and_answers_route_by_id() {
        let pending = Pending::new();
        let a = pending.register().expect("open");
        let b = pending.register().expect("open");
        assert_eq!((a.id.as_str(), b.id.as_str()), ("zc-out-0", "zc-out-1"));
        assert!(pending.resolve(Response::new(json!("zc-out-1"), Ok(Value::Null))));
        assert_eq!(b.wait(Duration::from_secs(1)).await, Ok(Value::Null));
        let err = ErrorObject::internal("no");
        assert!(pending.resolve(Response::new(json!("zc-out-0"), Err(err.clone()))));
        assert_eq!(
            a.wait(Duration::from_secs(1)).await,
            Err(PeerError::Remote(err))
        );
        assert!(pending.is_empty());
    }

    #[tokio::test]
    async fn unknown_numeric_and_repeated_ids_are_not_ours() {
        let pending = Pending::new();
        let t = pending.register().expect("open");
        assert!(!pending.resolve(Response::new(json!(0), Ok(json!(1)))));
        assert!(!pending.resolve(Response::new(Value::Null, Ok(json!(1)))));
        assert!(!pending.resolve(Response::new(json!("zc-out-9"), Ok(json!(1)))));
        assert!(pending.resolve(Response::new(json!("zc-out-0"), Ok(json!(1)))));
        assert!(!pending.resolve(Response::new(json!("zc-out-0"), Ok(json!(2)))));
        assert_eq!(t.wait(Duration::from_secs(1)).await, Ok(json!(1)));
    }

    #[tokio::test]
    async fn an_abandoned_wait_removes_its_entry() {
        let pending = Pending::new();
        let ticket = pending.register().expect("open");
        let waiting = ticket.wait(Duration::from_secs(300));
        assert_eq!(pending.len(), 1);
        drop(waiting); // the turn that asked was cancelled
        assert!(pending.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_and_close_remove_entries() {
        let pending = Pending::new();
        let t = pending.register().expect("open");
        assert_eq!(
            t.wait(Duration::from_secs(300)).await,
            Err(PeerError::Timeout)
        );
        assert!(pending.is_empty());
        let t = pending.register().expect("open");
        pending.close();
        assert_eq!(
            t.wait(Duration::from_secs(300)).await,
            Err(PeerError::Closed)
        );
        assert!(pending.register().is_none());
    }
}
