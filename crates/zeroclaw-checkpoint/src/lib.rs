//! File checkpoints of a session's working directory (SPEC §18 "File checkpoints"):
//! [`Checkpoints`] records the tree at every turn start and puts it back for a rewind.
//!
//! - at a turn start, [`Checkpoints::record`] writes a manifest of `(path, size, mtime,
//!   hash)` for the regular files (plus directories and symlinks, never followed), hashing
//!   only the files whose metadata changed since the session's previous manifest, and
//!   stores each changed content once by hash under `<data dir>/checkpoints/`;
//!   `.gitignore` rules and `.git/` are honoured; files over 10 MiB, or a tree over 20,000
//!   files or 256 MiB, are recorded as unrestorable and the turn still runs;
//! - [`Checkpoints::restore`] puts the tree back as it was at a turn's start (modified and
//!   deleted files back, files created since removed), never writing through a symlink,
//!   journaled so that a crash midway is completed by the next [`Checkpoints::open`];
//!   [`Checkpoints::restore_own`] puts back only what the turns from one on changed and
//!   nobody changed since (turn ends are recorded by [`Checkpoints::record_end`]), listing
//!   the rest as conflicts (SPEC §17.2);
//! - each session's storage stays within its budget (`checkpoint_budget_mb`): the oldest
//!   checkpoints go first and their turns become unrestorable;
//!   [`Checkpoints::delete_session`] removes a session's checkpoints;
//! - only the sessions in use are held in memory: [`Checkpoints::unload`] lets a session's
//!   records go when its live session stops (the next use loads them again), and a deleted
//!   session is remembered only until then, so that a turn racing its deletion sees it.
//!
//! Blocking file I/O throughout (callers in async code use `spawn_blocking`). Operations
//! on one session are serialized by its lock; different sessions never wait for each
//! other.
//!
//! Modules, leaves first: [`beneath`] (the no-follow writer that `write_file` and uploads
//! use too), [`error`], [`limits`], [`digest`], [`escape`], [`durable`]
//! (atomic writes and fsyncs), [`manifest`] (the text form), [`ignores`] (the bounded
//! `.gitignore` rules), [`walk`] (the tree as they leave it), [`tree`] (no-follow file operations), [`objects`] (content by
//! hash), [`turns`] (one record per turn start or end), [`journal`], [`session`] (one
//! session's directory), [`budget`], [`record`], [`ownership`] (what a rewind may put
//! back), [`restore`], [`diff`] (what changed between two checkpoints); this file ties
//! them together.
//!
//! Unsafe code is denied but for libc calls std does not wrap, allowed where they are
//! made: the descriptor-relative, no-follow file operations of [`beneath`] and [`tree`] (`openat`,
//! `fstatat`, `mkdirat`, `unlinkat`, `renameat`, `symlinkat`, `readlinkat`, `fchmod`,
//! `futimens`, `fsync`), which keep a planted symlink from being followed, and
//! [`durable::syncfs`].

#![deny(unsafe_code)]

pub mod beneath;
pub mod budget;
pub mod diff;
pub mod digest;
pub mod durable;
pub mod error;
pub mod escape;
pub mod ignores;
pub mod journal;
pub mod limits;
pub mod manifest;
pub mod objects;
pub mod ownership;
pub mod record;
pub mod restore;
pub mod session;
pub mod tree;
pub mod turns;
pub mod walk;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use error::{Error, Result};
pub use limits::{Limits, RecordOptions};
pub use record::Recorded;
pub use restore::Restored;

use digest::Digest;
use manifest::Manifest;
use session::SessionStore;

/// Latest manifests kept in memory (one per session, the most recently used sessions).
const CACHED_MANIFESTS: usize = 16;

/// How long a deleted session's checkpoints refuse every use, unless [`Checkpoints::unload`]
/// says its live session stopped first: long enough for a turn start that raced the
/// deletion to see it (and not write the directory again); after it the id is free for a
/// new session of that name.
const DELETED_REFUSED_FOR: Duration = Duration::from_secs(60);

/// One session's slot: its store once loaded, and when it was deleted.
#[derive(Default)]
struct Slot {
    store: Option<SessionStore>,
    deleted_at: Option<Instant>,
}

/// The checkpoint store of a daemon: `<data dir>/checkpoints/`.
pub struct Checkpoints {
    base: PathBuf,
    /// The sessions in use, loaded or recently deleted (see [`Checkpoints::unload`]).
    sessions: Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
    cache: Mutex<VecDeque<(String, Digest, Arc<Manifest>)>>,
    deleted_refused_for: Duration,
}

/// One turn's checkpoint as [`Checkpoints::turns`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    pub turn_id: String,
    /// `None` when the turn can be restored, else why not.
    pub unrestorable: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Checkpoints {
    /// Opens (creating) the store in `base`, and completes every restore a crash
    /// interrupted.
    pub fn open(base: &Path) -> Result<Checkpoints> {
        session::make_private_dir(base)?;
        let base = base
            .canonicalize()
            .map_err(|e| error::io_error(format!("resolve {}", base.display()), e))?;
        let store = Checkpoints {
            base,
            sessions: Mutex::new(HashMap::new()),
            cache: Mutex::new(VecDeque::new()),
            deleted_refused_for: DELETED_REFUSED_FOR,
        };
        store.complete_interrupted()?;
        Ok(store)
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    fn complete_interrupted(&self) -> Result<()> {
        let read = std::fs::read_dir(&self.base)
            .map_err(|e| error::io_error(format!("list {}", self.base.display()), e))?;
        for entry in read.flatten() {
            let dir = entry.path();
            if !dir.join("restore.json").exists() {
                continue;
            }
            let store = match SessionStore::load(dir.clone(), false) {
                Ok(Some(store)) => store,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(dir = %dir.display(), "checkpoints unreadable: {e}");
                    continue;
                }
            };
            match restore::complete_journal(&store, Some(&self.base)) {
                Ok(Some(done)) => tracing::info!(
                    dir = %dir.display(),
                    restored = done.restored.len(),
                    unrestorable = done.unrestorable.len(),
                    "completed a file restore interrupted by a crash"
                ),
                Ok(None) => {}
                // The journal stays: the next open tries again.
                Err(e) => tracing::error!(
                    dir = %dir.display(),
                    "an interrupted file restore cannot be completed: {e}"
                ),
            }
        }
        Ok(())
    }

    fn slot(&self, session_id: &str) -> Arc<Mutex<Slot>> {
        Arc::clone(
            lock(&self.sessions)
                .entry(session_id.to_owned())
                .or_default(),
        )
    }

    /// The loaded store of `session_id` (created with `create`), under its slot's lock.
    fn with_store<T>(
        &self,
        session_id: &str,
        create: bool,
        f: impl FnOnce(Option<&mut SessionStore>) -> Result<T>,
    ) -> Result<T> {
        let slot = self.slot(session_id);
        let mut slot = lock(&slot);
        if let Some(at) = slot.deleted_at {
            if at.elapsed() < self.deleted_refused_for {
                return Err(Error::Deleted);
            }
            slot.deleted_at = None;
        }
        if slot.store.is_none() {
            slot.store = SessionStore::load(self.base.join(session::dir_name(session_id)), create)?;
        }
        f(slot.store.as_mut())
    }

    /// Records the tree at `root` as it is at turn `turn_id`'s start.
    pub fn record(
        &self,
        session_id: &str,
        turn_id: &str,
        root: &Path,
        opts: &RecordOptions,
    ) -> Result<Recorded> {
        self.with_store(session_id, true, |store| {
            let Some(store) = store else {
                return Err(Error::Deleted);
            };
            let cached = self.cached(session_id);
            let (done, latest) =
                record::record(store, Some(&self.base), turn_id, root, opts, cached)?;
            if let Some((d, m)) = latest {
                self.remember(session_id, d, m);
            }
            Ok(done)
        })
    }

    /// Restores `root` to its state at turn `turn_id`'s start
    /// ([`Error::UnknownTurn`] when no checkpoint of that turn exists).
    pub fn restore(&self, session_id: &str, turn_id: &str, root: &Path) -> Result<Restored> {
        self.with_store(session_id, false, |store| match store {
            None => Err(Error::UnknownTurn(turn_id.to_owned())),
            Some(store) => restore::restore(store, Some(&self.base), turn_id, root),
        })
    }

    /// Records the tree at `root` as it is at turn `turn_id`'s end (what a rewind of the
    /// turn compares with, [`ownership`]).
    pub fn record_end(
        &self,
        session_id: &str,
        turn_id: &str,
        root: &Path,
        opts: &RecordOptions,
    ) -> Result<Recorded> {
        self.record(session_id, &ownership::end_id(turn_id), root, opts)
    }

    /// Restores of `root` what the turns from `turn_id` on changed and nobody changed
    /// since, to its state at `turn_id`'s start; with `force` everything, as
    /// [`Checkpoints::restore`]. Paths left are in `conflicts`.
    ///
    /// A restore that changes files is recorded as a turn of its own (its start before,
    /// its end after, within `opts`), so that a later rewind to an earlier turn takes the
    /// files it put back for the session's own doing, not someone else's.
    pub fn restore_own(
        &self,
        session_id: &str,
        turn_id: &str,
        root: &Path,
        force: bool,
        opts: &RecordOptions,
    ) -> Result<Restored> {
        self.with_store(session_id, false, |store| {
            let Some(store) = store else {
                return Err(Error::UnknownTurn(turn_id.to_owned()));
            };
            let plan = match restore::plan_own(store, Some(&self.base), turn_id, root, force)? {
                restore::OwnPlan::Whole(done) => return Ok(done),
                restore::OwnPlan::Paths(plan) => plan,
            };
            if !plan.touches_files() {
                return restore::apply_own(store, *plan);
            }
            let own = ownership::rewind_id(record::now_ns());
            let root = plan.root().to_path_buf();
            self.record_in(store, session_id, &own, &root, opts);
            let done = restore::apply_own(store, *plan)?;
            self.record_in(store, session_id, &ownership::end_id(&own), &root, opts);
            Ok(done)
        })
    }

    /// Records `root` as `turn_id` in a loaded store; a failure is logged (a later rewind
    /// then lists what it cannot tell apart).
    fn record_in(
        &self,
        store: &mut SessionStore,
        session_id: &str,
        turn_id: &str,
        root: &Path,
        opts: &RecordOptions,
    ) {
        let cached = self.cached(session_id);
        match record::record(store, Some(&self.base), turn_id, root, opts, cached) {
            Ok((_, latest)) => {
                if let Some((d, m)) = latest {
                    self.remember(session_id, d, m);
                }
            }
            Err(e) => {
                tracing::warn!(session = %session_id, turn = %turn_id, "rewind not recorded: {e}")
            }
        }
    }

    /// Removes every checkpoint of `session_id`.
    pub fn delete_session(&self, session_id: &str) -> Result<()> {
        let removed = {
            let slot = self.slot(session_id);
            let mut slot = lock(&slot);
            slot.store = None;
            slot.deleted_at = Some(Instant::now());
            lock(&self.cache).retain(|(s, ..)| s != session_id);
            let dir = self.base.join(session::dir_name(session_id));
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(error::io_error(format!("remove {}", dir.display()), e))
                }
                _ => durable::sync_dir(&self.base),
            }
        };
        self.forget_unused();
        removed
    }

    /// The session's live session stopped: its records go from memory (its checkpoints
    /// stay on disk, and its next use loads them again), and a deletion of it needs no
    /// more refusing (no turn of it can start). Waits for an operation on the session in
    /// progress.
    pub fn unload(&self, session_id: &str) {
        let slot = lock(&self.sessions).get(session_id).cloned();
        if let Some(slot) = slot {
            let mut slot = lock(&slot);
            slot.store = None;
            slot.deleted_at = None;
        }
        lock(&self.cache).retain(|(s, ..)| s != session_id);
        self.forget_unused();
    }

    /// Drops the slots nobody uses: not loaded, not in an operation, and not deleted within
    /// [`DELETED_REFUSED_FOR`].
    fn forget_unused(&self) {
        lock(&self.sessions).retain(|_, slot| {
            // Slots are handed out under the map's lock, held here: a slot only the map
            // holds is in no operation, so locking it does not wait.
            if Arc::strong_count(slot) > 1 {
                return true;
            }
            let slot = lock(slot);
            slot.store.is_some()
                || slot
                    .deleted_at
                    .is_some_and(|at| at.elapsed() < self.deleted_refused_for)
        });
    }

    /// Sessions held in memory (loaded, in an operation or recently deleted).
    #[cfg(test)]
    fn sessions_held(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// The session's turn checkpoints, oldest first.
    pub fn turns(&self, session_id: &str) -> Result<Vec<TurnInfo>> {
        self.with_store(session_id, false, |store| {
            let Some(store) = store else {
                return Ok(Vec::new());
            };
            Ok(store
                .records()?
                .into_iter()
                .filter(|r| ownership::is_turn_start(&r.turn_id))
                .map(|r| TurnInfo {
                    unrestorable: r
                        .manifest
                        .is_none()
                        .then(|| r.unrestorable.unwrap_or_default()),
                    turn_id: r.turn_id,
                })
                .collect())
        })
    }

    /// Bytes the session's checkpoints take.
    pub fn usage(&self, session_id: &str) -> Result<u64> {
        self.with_store(session_id, false, |store| {
            Ok(store.map_or(0, |s| s.total_bytes()))
        })
    }

    fn cached(&self, session_id: &str) -> record::Cached {
        lock(&self.cache)
            .iter()
            .find(|(s, ..)| s == session_id)
            .map(|(_, d, m)| (*d, Arc::clone(m)))
    }

    fn remember(&self, session_id: &str, d: Digest, m: Arc<Manifest>) {
        let mut cache = lock(&self.cache);
        cache.retain(|(s, ..)| s != session_id);
        cache.push_front((session_id.to_owned(), d, m));
        cache.truncate(CACHED_MANIFESTS);
    }
}

#[cfg(test)]
mod tests;
