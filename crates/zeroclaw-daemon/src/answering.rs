//! What one request's handler may arrange about its own answer, handed to it as a value
//! with the request (never through a task-local): its [`Place`] in its session's order,
//! admitted once a queued job is in the session's queue, and the hooks that must run only
//! once its answer is queued (the worker's next job, a subscription's replay). It is the
//! daemon's side of the services' [`OnAnswer`].
//!
//! The request path ([`crate::request`]) makes one per request and calls
//! [`Answering::answer_queued`] right after it handed the answer to its front; a request
//! that ends otherwise (a notification, a dropped call) releases both when it is dropped.

use std::sync::Mutex;

use zeroclaw_sessions::session::link::{Hook, OnAnswer};

use crate::ordering::Place;

/// One request's place and after-answer hooks.
pub(crate) struct Answering {
    place: Place,
    hooks: Mutex<Vec<Hook>>,
}

impl Answering {
    pub(crate) fn new(place: Place) -> Answering {
        Answering {
            place,
            hooks: Mutex::new(Vec::new()),
        }
    }

    /// For a request that keeps no order (answered in place, or one request per call).
    pub(crate) fn unordered() -> Answering {
        Answering::new(Place::none())
    }

    /// The answer is queued: the session's next request of this connection may go, then
    /// the hooks run, in the order they were given.
    pub(crate) fn answer_queued(self) {
        drop(self);
    }
}

impl OnAnswer for Answering {
    fn admitted(&self) {
        self.place.admitted();
    }

    fn after_answer(&self, hook: Hook) {
        self.hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(hook);
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.place.admitted();
        let hooks = std::mem::take(&mut *self.hooks.lock().unwrap_or_else(|p| p.into_inner()));
        for hook in hooks {
            hook();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn hooks_wait_for_the_answer_and_run_in_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let answering = Answering::unordered();
        for name in ["first", "second"] {
            let l = Arc::clone(&log);
            answering.after_answer(Box::new(move || l.lock().unwrap().push(name)));
        }
        // The positive control: given, not yet run.
        assert!(log.lock().unwrap().is_empty());
        log.lock().unwrap().push("answer");
        answering.answer_queued();
        assert_eq!(*log.lock().unwrap(), vec!["answer", "first", "second"]);
    }
}
