//! What sessions know about the clients watching them: a [`ClientLink`] (queue an update
//! line without waiting, ask a question, is it still open, can it answer elicitation), and
//! [`OnAnswer`], passed with each request that needs it: the request is admitted to its
//! session's order, and hooks run only once its own answer is queued (a subscription's
//! replay must follow the subscribe answer on the wire).
//!
//! The connection loop implements the trait; sessions never see its own types. In the
//! layers of the sessions service this sits just above the leaves: it names a session only
//! by its [`LiveId`], so the live session can hold links without a cycle.

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
    /// The face this connection is (`chat`, `dashboard`, `acp`, `rpc` or the name it gave
    /// in `initialize`): `decidedBy.client` of what it answers (SPEC §22).
    fn client_name(&self) -> String {
        "rpc".to_owned()
    }
    /// Whether the client sent a request within `window` (SPEC §24.3: a face active that
    /// recently is watching, so its owner is not notified). Open counts as active for a
    /// link that does not know.
    fn active_within(&self, window: Duration) -> bool {
        let _ = window;
        self.is_open()
    }
    /// Sends a request to the client and waits (up to `timeout`) for its result.
    async fn ask(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, AskError>;
    /// Records that prompt number `seq` of `session` came from this connection.
    fn record_prompt(&self, session: &LiveId, seq: u64);
    /// This connection's last prompt number to `session` (0: none): what its cancel
    /// applies to (SPEC §14 "Order").
    fn last_prompt(&self, session: &LiveId) -> u64;
}

/// A hook run once a request's answer is queued.
pub type Hook = Box<dyn FnOnce() + Send>;

/// What the caller of a request hands a service about that request's answer, explicitly,
/// with the request: a queued job (prompt, rewind, compact) says when it took its place
/// in the session's queue, and a handler arranges work that must follow its own answer
/// on the wire (the worker's next job, a subscription's replay).
pub trait OnAnswer: Send + Sync {
    /// The request is queued (or refused): the caller's next request for the same
    /// session may go ahead (SPEC §14 "Order").
    fn admitted(&self);
    /// Runs `hook` once the request's answer is queued (at once, or when the request
    /// ends, for one that is not answered).
    fn after_answer(&self, hook: Hook);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A caller that records admission and keeps hooks until [`Answered::answer_queued`].
    #[derive(Default)]
    pub(crate) struct Answered {
        pub admitted: std::sync::atomic::AtomicBool,
        hooks: Mutex<Vec<Hook>>,
    }

    impl Answered {
        pub(crate) fn answer_queued(&self) {
            let hooks = std::mem::take(&mut *self.hooks.lock().unwrap());
            for hook in hooks {
                hook();
            }
        }
    }

    impl OnAnswer for Answered {
        fn admitted(&self) {
            self.admitted
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        fn after_answer(&self, hook: Hook) {
            self.hooks.lock().unwrap().push(hook);
        }
    }
}
