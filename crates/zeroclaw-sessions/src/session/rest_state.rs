//! One live session's rest bookkeeping (SPEC §22 "Sessions rest"): when it was last seen
//! busy, whether a person is being asked something, and whether it was unloaded for being
//! idle rather than closed by a client. A leaf of the sessions service: the live session
//! holds one, [`rest`](super::rest) reads them; it imports no other session module.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The clock of [`RestState`]: milliseconds since the first use.
fn now_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// One live session's rest bookkeeping.
pub struct RestState {
    /// When it was last seen busy ([`now_ms`]).
    touched: AtomicU64,
    /// Questions (`ask_user`) being asked now.
    asking: AtomicUsize,
    /// Closed because it was idle, not by a client.
    rested: AtomicBool,
}

/// Counts one question being asked while it lives.
pub struct Asking<'a>(&'a AtomicUsize);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl RestState {
    pub fn new() -> RestState {
        RestState {
            touched: AtomicU64::new(now_ms()),
            asking: AtomicUsize::new(0),
            rested: AtomicBool::new(false),
        }
    }

    /// The session is busy now.
    pub fn touch(&self) {
        self.touched.store(now_ms(), Ordering::Relaxed);
    }

    /// How long ago it was last seen busy.
    pub fn idle_for(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.touched.load(Ordering::Relaxed)))
    }

    /// A question to a person starts; it counts until the guard drops.
    pub fn ask(&self) -> Asking<'_> {
        self.asking.fetch_add(1, Ordering::SeqCst);
        Asking(&self.asking)
    }

    pub fn asking(&self) -> bool {
        self.asking.load(Ordering::SeqCst) > 0
    }

    pub fn mark_rested(&self) {
        self.rested.store(true, Ordering::SeqCst);
    }

    pub fn rested(&self) -> bool {
        self.rested.load(Ordering::SeqCst)
    }
}

impl Default for RestState {
    fn default() -> Self {
        RestState::new()
    }
}
