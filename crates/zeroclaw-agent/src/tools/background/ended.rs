//! How a background process ended, and how long it is given to end: what the platform
//! spawners (`unix.rs`, `other.rs`) and the registry above them both name, kept in a leaf
//! so that neither imports the other.

use std::time::Duration;

/// Between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
    /// Its status could not be had (it was killed while the daemon stopped).
    Unknown,
}
