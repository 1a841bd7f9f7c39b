//! File checkpoints where the system has none (SPEC §18): `zeroclaw-checkpoint` walks and
//! restores trees with Unix no-follow file operations, so on other systems the daemon runs
//! without them. The same interface as the Unix module: nothing is recorded, and every
//! rewind reports the working directory unrestorable, with the reason.
//!
//! A leaf of the sessions service: it imports only [`error`](super::error).

use std::path::{Path, PathBuf};

use super::error::SessionError;

/// What a restore put back, and what it could not (path, reason).
#[derive(Debug, Default)]
pub struct Restored {
    pub restored: Vec<String>,
    pub unrestorable: Vec<(String, String)>,
    pub conflicts: Vec<(String, String)>,
}

/// The daemon's checkpoint store: none on this system.
#[derive(Clone)]
pub struct FileCheckpoints;

const UNSUPPORTED: &str = "file checkpoints need a Unix system";

impl FileCheckpoints {
    pub fn open(_dir: &Path) -> FileCheckpoints {
        FileCheckpoints
    }

    pub async fn record_turn_start(
        &self,
        _session_id: &str,
        _turn_id: &str,
        _root: PathBuf,
        _budget_mb: u32,
    ) {
    }

    pub async fn record_turn_end(
        &self,
        _session_id: &str,
        _turn_id: &str,
        _root: PathBuf,
        _budget_mb: u32,
    ) {
    }

    pub async fn unload(&self, _session_id: &str) {}

    pub async fn restore_own(
        &self,
        _session_id: &str,
        _turn_id: &str,
        root: PathBuf,
        _force: bool,
        _budget_mb: u32,
    ) -> Result<Restored, SessionError> {
        Ok(Restored {
            unrestorable: vec![(root.display().to_string(), UNSUPPORTED.to_owned())],
            ..Restored::default()
        })
    }

    pub async fn delete_session(&self, _session_id: &str) {}

    pub async fn diff(
        &self,
        _session_id: &str,
        _turn_id: Option<&str>,
    ) -> Result<zeroclaw_protocol::diff::DiffResult, SessionError> {
        Ok(zeroclaw_protocol::diff::DiffResult {
            files: Vec::new(),
            unavailable: Some(UNSUPPORTED.to_owned()),
        })
    }
}
