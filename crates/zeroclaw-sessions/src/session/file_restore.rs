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

/// What a restore put back, what it could not and what it left to others (path, reason).
#[derive(Debug, Default)]
pub(crate) struct FilesRestored {
    pub restored: Vec<String>,
    pub unrestorable: Vec<(String, String)>,
    pub conflicts: Vec<(String, String)>,
}

impl From<Restored> for FilesRestored {
    fn from(r: Restored) -> Self {
        FilesRestored {
            restored: r.restored,
            unrestorable: r.unrestorable,
            conflicts: r.conflicts,
        }
    }
}

/// Puts back, in `session`'s working directory, what the turns from `turn_id` on changed
/// and nobody changed since — everything with `force` — as it was at `turn_id`'s start
/// (SPEC §17.2). Without a checkpoint store (`None`)
/// nothing is restored and the whole directory is reported unrestorable.
pub(crate) async fn restore_for_rewind(
    files: Option<&FileCheckpoints>,
    session: &LiveSession,
    turn_id: &str,
    force: bool,
    budget_mb: u32,
) -> Result<FilesRestored, SessionError> {
    let Some(files) = files else {
        return Ok(FilesRestored {
            unrestorable: vec![(
                session.cwd.display().to_string(),
                "file checkpoints are off".to_owned(),
            )],
            ..FilesRestored::default()
        });
    };
    let done = files
        .restore_own(
            &session.key.session_id,
            turn_id,
            session.cwd.clone(),
            force,
            budget_mb,
        )
        .await?;
    Ok(done.into())
}
