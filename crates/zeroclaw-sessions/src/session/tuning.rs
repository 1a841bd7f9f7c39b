//! Timeouts of a session's waits on the client ([`Tuning`]). A leaf: the manager and the
//! turns read it; it imports no session module. Test builds inject failures through it
//! (the daemon's test hooks, feature `test-hooks`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Timeouts of a session's waits on the client.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// Unanswered approvals are rejected after this long (120 s).
    pub approval_timeout: Duration,
    /// Unanswered `elicitation/create` requests give "no answer" after this long (300 s).
    pub ask_user_timeout: Duration,
    /// The auto-trim snapshot write fails while set (set only by the test hooks).
    pub fail_snapshots: Arc<AtomicBool>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            approval_timeout: Duration::from_secs(120),
            ask_user_timeout: Duration::from_secs(300),
            fail_snapshots: Arc::new(AtomicBool::new(false)),
        }
    }
}
