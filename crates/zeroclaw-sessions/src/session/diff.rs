//! `session/diff` (SPEC §22 "What a turn changed"): the files a turn, or the whole session
//! so far, changed, read from the session's file checkpoints (§18). A read: it does not
//! wait for the session's worker and works on a session that is not live.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block) over the
//! checkpoint leaf; errors are [`SessionError`](super::error::SessionError).

use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::diff::DiffResult;
use zeroclaw_store::Mode;

use super::error::SessionError;
use super::history::acp_only;
use super::manager::SessionManager;

impl SessionManager {
    /// `session/diff {sessionId, turnId?}`: an unknown session is not found (-32000), an
    /// unknown turn invalid (-32602, naming `turnId`).
    pub async fn diff(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
        turn_id: Option<&str>,
    ) -> Result<DiffResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        acp_only(&key, "session/diff")?;
        self.owner_checked(principal, &key).await?;
        self.files.diff(&key.session_id, turn_id).await
    }
}
