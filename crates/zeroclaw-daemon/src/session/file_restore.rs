//! The file side of `session/rewind` (SPEC §18 "File checkpoints"): puts the session's
//! working directory back as it was when a turn started, through the daemon's
//! [`FileCheckpoints`] (helper "files" built the store; this is where the rewind calls it).
//!
//! A rewind's files are restored after its store transaction committed: the checkpoint
//! store journals a restore, so a kill -9 midway is completed when the daemon next opens
//! it, and the transcript side is already whole either way.

use super::error::SessionError;
use super::file_checkpoints::{FileCheckpoints, Restored};
use super::live::LiveSession;

/// What a restore put back, and what it could not (path, reason).
#[derive(Debug, Default)]
pub(crate) struct FilesRestored {
    pub restored: Vec<String>,
    pub unrestorable: Vec<(String, String)>,
}

impl From<Restored> for FilesRestored {
    fn from(r: Restored) -> Self {
        FilesRestored {
            restored: r.restored,
            unrestorable: r.unrestorable,
        }
    }
}

/// Restores the files of `session`'s working directory to their state at the start of
/// turn `turn_id`. Without a checkpoint store (`None`) nothing is restored and the whole
/// directory is reported unrestorable.
pub(crate) async fn restore_for_rewind(
    files: Option<&FileCheckpoints>,
    session: &LiveSession,
    turn_id: &str,
) -> Result<FilesRestored, SessionError> {
    let Some(files) = files else {
        return Ok(FilesRestored {
            restored: Vec::new(),
            unrestorable: vec![(
                session.cwd.display().to_string(),
                "file checkpoints are off".to_owned(),
            )],
        });
    };
    let done = files
        .restore(&session.key.session_id, turn_id, session.cwd.clone())
        .await?;
    Ok(done.into())
}
