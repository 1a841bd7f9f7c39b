//! Timeouts of a session's waits on the client, and the test-only overrides of them
//! ([`Tuning`]). A leaf: the manager and the turns read it; it imports no session module.
//!
//! Test-only tuning (read once at startup, documented here and nowhere else on purpose):
//! `ZEROCLAW_TEST_APPROVAL_TIMEOUT_MS` and `ZEROCLAW_TEST_ASK_USER_TIMEOUT_MS` shorten the
//! 120 s approval and 300 s ask-user waits; `ZEROCLAW_TEST_HOOKS=1` makes the daemon poll its
//! data dir for two trigger files: while `test-fail-writes` exists every store write fails
//! (rolled back by the store's failure injection); while `test-fail-snapshots` exists only
//! the auto-trim snapshot write fails. That is how the integration tests inject storage
//! failures into the real binary.

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
    /// Poll the data dir for the failure trigger files (tests only).
    pub test_hooks: bool,
    /// Test hook: the auto-trim snapshot write fails while set.
    pub fail_snapshots: Arc<AtomicBool>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            approval_timeout: Duration::from_secs(120),
            ask_user_timeout: Duration::from_secs(300),
            test_hooks: false,
            fail_snapshots: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Tuning {
    /// The defaults, with the test-only overrides of the module doc applied.
    pub fn from_env() -> Tuning {
        let ms = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        let mut t = Tuning::default();
        if let Some(d) = ms("ZEROCLAW_TEST_APPROVAL_TIMEOUT_MS") {
            t.approval_timeout = d;
        }
        if let Some(d) = ms("ZEROCLAW_TEST_ASK_USER_TIMEOUT_MS") {
            t.ask_user_timeout = d;
        }
        t.test_hooks = std::env::var("ZEROCLAW_TEST_HOOKS").is_ok_and(|v| v == "1");
        t
    }
}
