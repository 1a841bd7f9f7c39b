//! The file side of `session/rewind` (SPEC §18 "File checkpoints"): puts the session's
//! working directory back as it was when a turn started.
//!
//! CALL SITE FOR THE FILE CHECKPOINTS: [`restore_for_rewind`] is what the rewind calls when
//! `restoreFiles` is true. File checkpoints (helper "files", crate `zeroclaw-checkpoint`)
//! are not merged on this branch yet, so it restores nothing; wiring it means calling that
//! crate's `restore(session_id, turn_id, root)` on a blocking thread here.

use super::live::LiveSession;

/// What a restore put back, and what it could not (path, reason).
#[derive(Debug, Default)]
pub(crate) struct FilesRestored {
    pub restored: Vec<String>,
    pub unrestorable: Vec<(String, String)>,
}

/// Restores the files of `session`'s working directory to their state at the start of
/// turn `turn_id`.
pub(crate) async fn restore_for_rewind(session: &LiveSession, turn_id: &str) -> FilesRestored {
    tracing::debug!(session = %session.key.session_id, turn_id, cwd = %session.cwd.display(), "no file checkpoints on this build: nothing restored");
    FilesRestored::default()
}
