//! One `ask_user` question put to every face of the session's owner at once (SPEC §14
//! "Ask-user", §22 "Approvals reach every face"): `elicitation/create` goes to the
//! prompting connection and to each subscribed connection of the owner that declared the
//! elicitation capability, including ones that subscribe while the question is open. The
//! first result wins; the other requests are dropped (their pending entries go, so a late
//! answer matches nothing and is ignored, SPEC §3.1), and every subscriber learns the
//! question is settled from `ask_user_resolved`, announced when the [`Settled`] guard
//! drops (as cancelled when the waiting turn went away).
//!
//! Every wait is bounded by the question's deadline; nothing is locked while waiting.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use zeroclaw_protocol::{DecidedBy, ELICITATION_CREATE, ResolvedReason, UpdateKind};

use super::link::{AskError, ClientLink};
use super::live::LiveSession;

/// Question ids, unique for the daemon's lifetime.
static NEXT_ASK: AtomicU64 = AtomicU64::new(1);

/// A fresh question id (`ask_<n>`).
pub fn next_request_id() -> String {
    format!("ask_{}", NEXT_ASK.fetch_add(1, Ordering::Relaxed))
}

/// Announces `ask_user_resolved` when dropped: with the outcome once known, else as
/// cancelled.
pub struct Settled<'a> {
    session: &'a LiveSession,
    request_id: String,
    outcome: Option<(ResolvedReason, Option<DecidedBy>)>,
}

impl<'a> Settled<'a> {
    pub fn new(session: &'a LiveSession, request_id: &str) -> Self {
        Settled {
            session,
            request_id: request_id.to_owned(),
            outcome: None,
        }
    }
}

impl Drop for Settled<'_> {
    fn drop(&mut self) {
        let (reason, decided_by) = self
            .outcome
            .take()
            .unwrap_or((ResolvedReason::Cancelled, None));
        self.session
            .stream
            .emit_update(&UpdateKind::AskUserResolved {
                request_id: std::mem::take(&mut self.request_id),
                reason,
                decided_by,
            });
    }
}

/// Asks `params` (an `elicitation/create`) of everyone who can answer until one does or
/// `deadline` passes. `prompter` is asked too when it is open and can answer. Returns the
/// winning result (`None`: nobody answered, or every asked connection answered with an
/// error).
pub async fn ask_everyone(
    session: &LiveSession,
    prompter: &Arc<dyn ClientLink>,
    params: &Value,
    deadline: tokio::time::Instant,
    settled: &mut Settled<'_>,
) -> Option<Value> {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    session.stream.tap_asked(&settled.request_id, message);
    let mut asked: HashSet<u64> = HashSet::new();
    let mut waits = FuturesUnordered::new();
    loop {
        // Registered before looking, so a subscription made meanwhile is not missed.
        let subscribed = session.stream.subscribed();
        tokio::pin!(subscribed);
        subscribed.as_mut().enable();
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            tracing::info!(session = %session.key.session_id, "ask_user: nobody answered in time");
            settled.outcome = Some((ResolvedReason::Timeout, None));
            return None;
        }
        let mut targets = Vec::new();
        if prompter.is_open() && prompter.can_elicit() {
            targets.push(Arc::clone(prompter));
        }
        targets.extend(session.stream.elicitation_targets(&session.owner));
        for link in targets {
            if asked.insert(link.id()) {
                let params = params.clone();
                waits.push(async move {
                    let answer = link.ask(ELICITATION_CREATE, params, left).await;
                    (link, answer)
                });
            }
        }
        if waits.is_empty() {
            // Nobody can answer now: wait (within the limit) for someone to subscribe.
            let _ = tokio::time::timeout(left, subscribed).await;
            continue;
        }
        tokio::select! {
            Some((link, answer)) = waits.next() => match answer {
                Ok(result) => {
                    let principal = session
                        .stream
                        .principal_of(link.id())
                        .unwrap_or_else(|| session.owner.clone());
                    settled.outcome = Some((
                        ResolvedReason::Answered,
                        Some(DecidedBy { principal, client: link.client_name() }),
                    ));
                    return Some(result);
                }
                // That connection closed unanswered: the others are still asked, and a
                // new eligible one will be.
                Err(AskError::Gone) => {}
                Err(AskError::NoAnswer(why)) => {
                    tracing::info!(session = %session.key.session_id, "ask_user: a client gave no answer: {why}");
                    if waits.is_empty() {
                        settled.outcome = Some((ResolvedReason::Timeout, None));
                        return None;
                    }
                }
            },
            // Someone subscribed: ask them too (next round).
            () = &mut subscribed => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}
