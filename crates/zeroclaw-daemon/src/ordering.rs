//! Per-session order of one connection's requests (SPEC §14 "Order").
//!
//! Requests run in their own tasks, and tasks are scheduled in any order. So that requests
//! of one connection addressing one session still take effect in the order they were
//! received, the connection loop hands each such request a [`Ticket`] in receive order; the
//! request's task waits until its predecessor's ticket is *admitted* before it does its own
//! step. The wait gives a [`Place`], passed with the request to its handler: it is
//! admitted when the handler calls [`Place::admitted`] (`session/prompt`, `rewind` and
//! `compact`: once the job is in the session's queue, or refused; the handler hands that
//! call to the service as a callback) or, at the latest, when the request's answer is
//! queued and the place dropped.
//! [`LastPrompts`] remembers the connection's last prompt per session, so that a later
//! `session/cancel` applies to it or a later turn, never an earlier one.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::value::RawValue;
use tokio::sync::oneshot;
use zeroclaw_protocol::Method;
use zeroclaw_sessions::session::live_id::{LiveId, WeakLiveId};

use crate::params;

/// Distinct sessions remembered per connection before settled entries are forgotten.
const REMEMBERED_SESSIONS: usize = 256;

/// One request's place in its session's order.
pub struct Ticket {
    /// Admitted (or gone) when the previous request for the session may be overtaken.
    predecessor: Option<oneshot::Receiver<()>>,
    /// Signalled (or dropped) when this request is admitted.
    admit: oneshot::Sender<()>,
}

impl Ticket {
    /// Waits for the predecessor; this request's place is then held by the returned
    /// [`Place`] until it is admitted or dropped.
    pub async fn wait(self) -> Place {
        if let Some(predecessor) = self.predecessor {
            // Sent or dropped: either way the predecessor no longer holds us back.
            let _ = predecessor.await;
        }
        Place(Mutex::new(Some(self.admit)))
    }
}

/// A request's place in its session's order, passed with the request to its handler: the
/// connection's next request for the session waits until this is admitted or dropped.
#[derive(Default)]
pub struct Place(Mutex<Option<oneshot::Sender<()>>>);

impl Place {
    /// The place of a request that keeps no order (it addresses no session, or its
    /// transport has no next request): admitting it does nothing.
    pub fn none() -> Place {
        Place::default()
    }

    /// Lets later requests of the connection for the same session go ahead.
    pub fn admitted(&self) {
        let admit = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(admit) = admit {
            let _ = admit.send(());
        }
    }
}

/// The last ticket handed out per session, for one connection.
#[derive(Default)]
pub struct SessionOrder {
    last: HashMap<String, oneshot::Receiver<()>>,
}

impl SessionOrder {
    /// A ticket for a request of `method` with `params`, taken in receive order; `None`
    /// for requests that address no session (and for methods the daemon does not serve).
    /// The session is the one the params name under either spelling, as the method reads
    /// them (SPEC §17.1).
    pub fn ticket(&mut self, method: Option<Method>, params: Option<&RawValue>) -> Option<Ticket> {
        if !method.is_some_and(addresses_session) {
            return None;
        }
        let session = params::session_id(params)?;
        if self.last.len() >= REMEMBERED_SESSIONS {
            // Forget sessions whose last request is already admitted; those still waiting
            // are at most the requests in flight.
            self.last
                .retain(|_, rx| matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)));
        }
        let (admit, rx) = oneshot::channel();
        let predecessor = self.last.insert(session, rx);
        Some(Ticket { predecessor, admit })
    }
}

/// Whether `method` is one of the `session/*` calls, which take effect in a session's order.
fn addresses_session(method: Method) -> bool {
    use Method::*;
    match method {
        SessionNew | SessionPrompt | SessionCancel | SessionApprove | SessionClose
        | SessionKill | SessionDelete | SessionList | SessionMessages | SessionSubscribe
        | SessionUnsubscribe | SessionStatus | SessionConfigure | SessionRewind | SessionFork
        | SessionSetTitle | SessionCompact => true,
        Initialize | Status | ConfigGet | ConfigSet | ConfigSetMany | ConfigDelete | ModelsList
        | FileAttach | FileUploadBegin | FileUploadChunk | FileUploadCommit | DaemonShutdown
        | GatewayStart | DashboardLogin | SkillsList => false,
    }
}

/// A connection's last prompt number per live session.
#[derive(Default)]
pub struct LastPrompts {
    by_session: Mutex<Vec<(WeakLiveId, u64)>>,
}

impl LastPrompts {
    pub fn record(&self, live: &LiveId, seq: u64) {
        let mut all = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions gone since are forgotten, so the list stays as short as the live ones.
        all.retain(|(s, _)| !s.is_gone() && !s.is(live));
        all.push((live.downgrade(), seq));
    }

    pub fn get(&self, live: &LiveId) -> u64 {
        let all = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        all.iter()
            .find(|(s, _)| s.is(live))
            .map_or(0, |(_, seq)| *seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).expect("json")
    }

    #[tokio::test]
    async fn a_ticket_waits_for_its_predecessor_to_be_admitted() {
        let mut order = SessionOrder::default();
        let params = raw(json!({"sessionId": "s"}));
        let snake = raw(json!({"session_id": "s"}));
        let first = order
            .ticket(Some(Method::SessionPrompt), Some(&params))
            .expect("ticket");
        // The same session under the other spelling takes its place in the same order.
        let second = order
            .ticket(Some(Method::SessionPrompt), Some(&snake))
            .expect("ticket");
        assert!(order.ticket(Some(Method::Status), Some(&params)).is_none());
        assert!(
            order
                .ticket(Some(Method::SessionList), Some(&raw(json!({}))))
                .is_none()
        );
        let log = Arc::new(Mutex::new(Vec::new()));
        let (release, hold) = oneshot::channel::<()>();
        // The second is started first; it must still go after the first's admission.
        let l2 = Arc::clone(&log);
        let t2 = tokio::spawn(async move {
            let _place = second.wait().await;
            l2.lock().unwrap().push("second");
        });
        let l1 = Arc::clone(&log);
        let t1 = tokio::spawn(async move {
            let place = first.wait().await;
            l1.lock().unwrap().push("first admitted");
            place.admitted();
            let _ = hold.await;
            l1.lock().unwrap().push("first done");
        });
        t2.await.unwrap();
        assert_eq!(*log.lock().unwrap(), vec!["first admitted", "second"]);
        let _ = release.send(());
        t1.await.unwrap();
    }

    #[tokio::test]
    async fn settled_sessions_are_forgotten() {
        let mut order = SessionOrder::default();
        for i in 0..1000 {
            let t = order
                .ticket(
                    Some(Method::SessionCancel),
                    Some(&raw(json!({"sessionId": i.to_string()}))),
                )
                .expect("ticket");
            drop(t.wait().await);
        }
        assert!(order.last.len() <= REMEMBERED_SESSIONS);
    }
}
