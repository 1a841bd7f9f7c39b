//! `session/rewind` as the worker runs it (SPEC §18): queued like a prompt, so nothing
//! races it.

use serde_json::Value;

use super::error::SessionError;
use super::live::LiveSession;
use super::turn::Runner;

impl Runner {
    /// Goes back to just before turn `to`.
    pub(crate) async fn rewind(
        &mut self,
        _session: &LiveSession,
        _to: &str,
        _restore_files: bool,
    ) -> Result<Value, SessionError> {
        Err(SessionError::internal(
            "session/rewind is not implemented yet",
        ))
    }
}
