//! The bounds of a checkpoint (SPEC §18 "File checkpoints") and the options of one
//! recording. A leaf.

use std::time::Instant;

/// A file larger than this is recorded as unrestorable, its content not stored.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// A tree with more regular files and symlinks than this is recorded as unrestorable.
pub const MAX_TREE_FILES: usize = 20_000;
/// A tree whose storable files (those up to [`MAX_FILE_BYTES`]) add up to more than this is
/// recorded as unrestorable.
pub const MAX_TREE_BYTES: u64 = 256 * 1024 * 1024;
/// The walk of the current tree before a restore stops after this many entries (a bound on
/// memory; the files past it are left alone).
pub const MAX_RESTORE_WALK: usize = 1_000_000;
/// A file whose change time is this close to (or after) the previous walk's start may have
/// changed after it was read without its metadata showing it (timestamps are coarse): it
/// is read again.
pub const RACY_NS: i64 = 2_000_000_000;
/// Up to this many new files are made durable with one `fsync` each; more with one
/// `syncfs` of the file system (thousands of `fsync`s cost seconds).
pub const FSYNC_EACH_UP_TO: usize = 64;

/// The size bounds of one checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_tree_files: usize,
    pub max_tree_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: MAX_FILE_BYTES,
            max_tree_files: MAX_TREE_FILES,
            max_tree_bytes: MAX_TREE_BYTES,
        }
    }
}

/// How one turn start is recorded.
#[derive(Debug, Clone, Copy)]
pub struct RecordOptions {
    /// The session's storage budget: the oldest checkpoints are evicted beyond it.
    pub budget_bytes: u64,
    /// Past this instant the recording stops and the turn is recorded as unrestorable.
    pub deadline: Option<Instant>,
    pub limits: Limits,
    /// See [`RACY_NS`] (tests shorten it).
    pub racy_ns: i64,
}

impl RecordOptions {
    /// The default bounds with a budget of `budget_bytes` and no deadline.
    pub fn with_budget(budget_bytes: u64) -> RecordOptions {
        RecordOptions {
            budget_bytes,
            deadline: None,
            limits: Limits::default(),
            racy_ns: RACY_NS,
        }
    }

    pub(crate) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}
