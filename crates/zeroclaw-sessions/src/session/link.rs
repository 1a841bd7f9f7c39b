//! What sessions know about the clients watching them: a [`ClientLink`] (queue an update
//! line without waiting, ask a question, is it still open, can it answer elicitation), and
//! the "after the answer" hook a handler uses to act only once its own answer is queued
//! (a subscription's replay must follow the subscribe answer on the wire).
//!
//! The connection loop implements the trait; sessions never see its own types. In the
//! layers of the sessions service this sits just above the leaves: it names a session only
//! by its [`LiveId`], so the live session can hold links without a cycle.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::live_id::LiveId;

/// Why an outbound request to a client got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskError {
    /// The connection closed before an answer came (the question may go elsewhere).
    Gone,
    /// No answer within the time limit, or the client answered with an error.
    NoAnswer(String),
}

/// One client connection as a session sees it.
#[async_trait]
pub trait ClientLink: Send + Sync {
    /// The connection's id (unique for the daemon's lifetime).
    fn id(&self) -> u64;
    /// Queues one complete line at once (never waits); `false` once the connection is gone.
    fn push(&self, line: bytes::Bytes) -> bool;
    fn is_open(&self) -> bool;
    /// The client declared it can answer `elicitation/create`.
    fn can_elicit(&self) -> bool;
    /// Sends a request to the client and waits (up to `timeout`) for its result.
    async fn ask(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, AskError>;
    /// Records that prompt number `seq` of `session` came from this connection.
    fn record_prompt(&self, session: &LiveId, seq: u64);
    /// This connection's last prompt number to `session` (0: none): what its cancel
    /// applies to (SPEC §14 "Order").
    fn last_prompt(&self, session: &LiveId) -> u64;
}

type Hook = Box<dyn FnOnce() + Send>;

tokio::task_local! {
    static AFTER_ANSWER: RefCell<Vec<Hook>>;
}

/// Runs `hook` once the answer of the request being handled has been queued; at once when
/// the call is not answered (a notification) or runs outside [`collect_after_answer`].
pub fn after_answer(hook: impl FnOnce() + Send + 'static) {
    let mut hook: Option<Hook> = Some(Box::new(hook));
    let _ = AFTER_ANSWER.try_with(|hooks| {
        if let Some(h) = hook.take() {
            hooks.borrow_mut().push(h);
        }
    });
    if let Some(h) = hook {
        h();
    }
}

/// Runs `call` and returns its output with the hooks it registered, to be run by the caller
/// right after it queued the answer.
pub async fn collect_after_answer<F: Future>(call: F) -> (F::Output, AfterAnswer) {
    AFTER_ANSWER
        .scope(RefCell::new(Vec::new()), async {
            let out = call.await;
            let hooks = AFTER_ANSWER.with(|h| std::mem::take(&mut *h.borrow_mut()));
            (out, AfterAnswer(hooks))
        })
        .await
}

/// Hooks waiting for an answer to be queued; they run when this is dropped or [`run`].
///
/// [`run`]: AfterAnswer::run
#[must_use = "run the hooks once the answer is queued"]
pub struct AfterAnswer(Vec<Hook>);

impl AfterAnswer {
    pub fn run(mut self) {
        for hook in self.0.drain(..) {
            hook();
        }
    }
}

impl Drop for AfterAnswer {
    fn drop(&mut self) {
        for hook in self.0.drain(..) {
            hook();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn hooks_wait_for_the_answer_inside_a_scope_and_run_at_once_outside() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = Arc::clone(&log);
        let (out, hooks) = collect_after_answer(async move {
            after_answer(move || l.lock().unwrap().push("hook"));
            "answer"
        })
        .await;
        log.lock().unwrap().push(out);
        hooks.run();
        assert_eq!(*log.lock().unwrap(), vec!["answer", "hook"]);

        let l = Arc::clone(&log);
        after_answer(move || l.lock().unwrap().push("direct"));
        assert_eq!(log.lock().unwrap().last(), Some(&"direct"));
    }
}
