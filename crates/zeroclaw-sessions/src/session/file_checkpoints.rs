//! File checkpoints of ACP sessions (SPEC §18 "File checkpoints"), the daemon's side of
//! `zeroclaw-checkpoint`: [`FileCheckpoints`] owns `<data dir>/checkpoints/` and
//!
//! - [`FileCheckpoints::record_turn_start`]: at every ACP turn start, before the provider
//!   is called, records the session's working directory — on a blocking thread, so no
//!   other session's turn ever waits for it, and within [`RECORD_TIME_LIMIT`]: past it the
//!   turn goes on and that turn is recorded as unrestorable;
//! - [`FileCheckpoints::record_turn_end`]: the same at the turn's end, so that a rewind
//!   can tell what its turns changed from what others did (SPEC §17.2);
//! - [`FileCheckpoints::restore_own`]: puts back what the rewound turns changed and nobody
//!   changed since, as it was at the first one's start (for `session/rewind` with
//!   `restoreFiles`; everything with `force`), listing the rest as conflicts;
//! - [`FileCheckpoints::diff`]: what a turn, or the whole session, changed (`session/diff`,
//!   SPEC §22);
//! - [`FileCheckpoints::delete_session`]: `session/delete` removes the session's
//!   checkpoints with it;
//! - [`FileCheckpoints::unload`]: a live session that goes away (closed, killed, deleted)
//!   takes its turn records out of memory with it; they stay on disk.
//!
//! Opening the store at startup completes any restore a crash interrupted, before a client
//! is served. A store that cannot be opened leaves the daemon running without checkpoints
//! (every rewind then reports its files as unrestorable, with the reason).
//!
//! A leaf of the sessions service: it imports only [`error`](super::error).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use zeroclaw_checkpoint::Restored;
use zeroclaw_checkpoint::diff::{Diffed, FileChange, Status};
use zeroclaw_checkpoint::{Checkpoints, Error, RecordOptions};
use zeroclaw_protocol::diff::{DiffResult, FileDiff, FileStatus};

use super::error::SessionError;

/// A changed file as the vocabulary says it.
fn file_diff(c: FileChange) -> FileDiff {
    FileDiff {
        path: c.path,
        status: match c.status {
            Status::Added => FileStatus::Added,
            Status::Modified => FileStatus::Modified,
            Status::Deleted => FileStatus::Deleted,
        },
        additions: c.additions,
        deletions: c.deletions,
        patch: c.patch,
    }
}

/// How long a turn start may spend recording its checkpoint.
pub const RECORD_TIME_LIMIT: Duration = Duration::from_secs(10);
/// Past the limit the crate stops by itself; this is how much longer the turn waits for
/// it to say so before going on regardless (a file system that hangs).
const RECORD_GRACE: Duration = Duration::from_secs(2);

/// The daemon's checkpoint store (cheap to clone).
#[derive(Clone)]
pub struct FileCheckpoints {
    store: Result<Arc<Checkpoints>, Arc<String>>,
}

impl FileCheckpoints {
    /// Opens `dir` (blocking: it may complete an interrupted restore).
    pub fn open(dir: &Path) -> FileCheckpoints {
        let store = match Checkpoints::open(dir) {
            Ok(store) => Ok(Arc::new(store)),
            Err(e) => {
                tracing::error!(dir = %dir.display(), "file checkpoints unavailable: {e}");
                Err(Arc::new(e.to_string()))
            }
        };
        FileCheckpoints { store }
    }

    /// Records `root` as turn `turn_id`'s start, with the agent's budget in MiB. Never
    /// fails the turn: a problem is logged and leaves the turn unrestorable.
    pub async fn record_turn_start(
        &self,
        session_id: &str,
        turn_id: &str,
        root: PathBuf,
        budget_mb: u32,
    ) {
        self.record(session_id, turn_id, root, budget_mb, false)
            .await;
    }

    /// Records `root` as turn `turn_id`'s end, as [`Self::record_turn_start`] does its
    /// start; a turn whose end is not recorded has its files listed as conflicts by a
    /// rewind (its changes cannot be told from others').
    pub async fn record_turn_end(
        &self,
        session_id: &str,
        turn_id: &str,
        root: PathBuf,
        budget_mb: u32,
    ) {
        self.record(session_id, turn_id, root, budget_mb, true)
            .await;
    }

    async fn record(
        &self,
        session_id: &str,
        turn_id: &str,
        root: PathBuf,
        budget_mb: u32,
        end: bool,
    ) {
        let Ok(store) = &self.store else {
            return;
        };
        let store = Arc::clone(store);
        let started = Instant::now();
        let opts = RecordOptions {
            deadline: Some(started + RECORD_TIME_LIMIT),
            ..RecordOptions::with_budget(u64::from(budget_mb) * 1024 * 1024)
        };
        let (sid, tid) = (session_id.to_owned(), turn_id.to_owned());
        let job = tokio::task::spawn_blocking(move || match end {
            false => store.record(&sid, &tid, &root, &opts),
            true => store.record_end(&sid, &tid, &root, &opts),
        });
        match tokio::time::timeout(RECORD_TIME_LIMIT + RECORD_GRACE, job).await {
            Ok(Ok(Ok(done))) => {
                tracing::debug!(
                    session = %session_id, turn = %turn_id,
                    entries = done.entries, hashed = done.hashed,
                    stored_bytes = done.stored_bytes, evicted = done.evicted.len(),
                    unrestorable = ?done.unrestorable, end,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "file checkpoint recorded"
                );
            }
            Ok(Ok(Err(e))) => {
                tracing::warn!(session = %session_id, turn = %turn_id, "file checkpoint failed: {e}");
            }
            Ok(Err(e)) => {
                tracing::error!(session = %session_id, turn = %turn_id, "file checkpoint panicked: {e}");
            }
            Err(_) => {
                tracing::warn!(session = %session_id, turn = %turn_id, "file checkpoint still running: the turn goes on");
            }
        }
    }

    /// Restores of `root` what the turns from `turn_id` on (rewound before or not) changed
    /// and nobody changed since — everything with `force` — to its state at `turn_id`'s
    /// start; other changes are listed in `conflicts`. A turn without a
    /// usable checkpoint gives an empty `restored` and the reason in `unrestorable`; only a
    /// failure of the restore itself is an error.
    pub async fn restore_own(
        &self,
        session_id: &str,
        turn_id: &str,
        root: PathBuf,
        force: bool,
        budget_mb: u32,
    ) -> Result<Restored, SessionError> {
        let whole = |reason: String| Restored {
            unrestorable: vec![(root.display().to_string(), reason)],
            ..Restored::default()
        };
        let store = match &self.store {
            Ok(store) => Arc::clone(store),
            Err(e) => return Ok(whole(format!("file checkpoints are unavailable: {e}"))),
        };
        let (sid, tid, dir) = (session_id.to_owned(), turn_id.to_owned(), root.clone());
        // The restore is recorded as a turn of its own, before and after, within the
        // budget and (each) the time limit of a turn start's recording.
        let opts = RecordOptions {
            deadline: Some(Instant::now() + RECORD_TIME_LIMIT),
            ..RecordOptions::with_budget(u64::from(budget_mb) * 1024 * 1024)
        };
        let done =
            tokio::task::spawn_blocking(move || store.restore_own(&sid, &tid, &dir, force, &opts))
                .await
                .map_err(|e| SessionError::failed(format!("file restore panicked: {e}")))?;
        match done {
            Ok(done) => Ok(done),
            Err(Error::UnknownTurn(_)) => Ok(whole(
                "no file checkpoint was recorded at the start of this turn".to_owned(),
            )),
            Err(Error::Deleted) => Ok(whole("the session's checkpoints were deleted".to_owned())),
            Err(e) => Err(SessionError::failed(format!("file restore failed: {e}"))),
        }
    }

    /// `session/diff` (SPEC §22): what turn `turn_id` changed, or with `None` the whole
    /// session so far. An unknown turn is [`SessionError::Invalid`] naming `turnId`.
    pub async fn diff(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
    ) -> Result<DiffResult, SessionError> {
        let unavailable = |why: String| DiffResult {
            files: Vec::new(),
            unavailable: Some(why),
        };
        let store = match &self.store {
            Ok(store) => Arc::clone(store),
            Err(e) => {
                return Ok(unavailable(format!(
                    "file checkpoints are unavailable: {e}"
                )));
            }
        };
        let (sid, tid) = (session_id.to_owned(), turn_id.map(str::to_owned));
        let job = tokio::task::spawn_blocking(move || store.diff(&sid, tid.as_deref()));
        let done = match tokio::time::timeout(RECORD_TIME_LIMIT + RECORD_GRACE, job).await {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => return Err(SessionError::failed(format!("session/diff panicked: {e}"))),
            Err(_) => {
                return Ok(unavailable(
                    "the checkpoints are busy; try again".to_owned(),
                ));
            }
        };
        match done {
            Ok(Diffed::Files(files)) => Ok(DiffResult {
                files: files.into_iter().map(file_diff).collect(),
                unavailable: None,
            }),
            Ok(Diffed::Unavailable(why)) => Ok(unavailable(why)),
            Err(Error::UnknownTurn(t)) => Err(SessionError::invalid(format!(
                "turnId: no turn {t} with a file checkpoint in this session"
            ))),
            Err(Error::Deleted) => Ok(unavailable("the session's checkpoints were deleted".into())),
            Err(e) => Err(SessionError::failed(format!("session/diff failed: {e}"))),
        }
    }

    /// Lets the session's turn records go from memory (its live session was unloaded).
    pub async fn unload(&self, session_id: &str) {
        let Ok(store) = &self.store else {
            return;
        };
        let store = Arc::clone(store);
        let sid = session_id.to_owned();
        // It may wait for a recording in progress, itself bounded by RECORD_TIME_LIMIT.
        let job = tokio::task::spawn_blocking(move || store.unload(&sid));
        if tokio::time::timeout(RECORD_TIME_LIMIT + RECORD_GRACE, job)
            .await
            .is_err()
        {
            tracing::warn!(session = %session_id, "file checkpoints still busy: kept in memory");
        }
    }

    /// Removes the session's checkpoints (a failure is logged: the session is gone anyway).
    pub async fn delete_session(&self, session_id: &str) {
        let Ok(store) = &self.store else {
            return;
        };
        let store = Arc::clone(store);
        let sid = session_id.to_owned();
        let done = tokio::task::spawn_blocking(move || store.delete_session(&sid)).await;
        if !matches!(done, Ok(Ok(()))) {
            tracing::warn!(session = %session_id, "file checkpoints not deleted: {done:?}");
        }
    }
}
