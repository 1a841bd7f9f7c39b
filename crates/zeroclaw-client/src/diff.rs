//! The typed call of `session/diff` (SPEC §22 "What a turn changed").

use zeroclaw_protocol::call;
use zeroclaw_protocol::diff::{DiffParams, DiffResult};

use crate::connection::ClientHandle;
use crate::error::ClientError;

impl ClientHandle {
    /// `session/diff`: the files turn `turn_id` changed, or with `None` those the whole
    /// session changed so far.
    pub async fn diff(
        &self,
        session_id: &str,
        turn_id: Option<&str>,
    ) -> Result<DiffResult, ClientError> {
        let params = DiffParams {
            session_id: session_id.into(),
            mode: None,
            turn_id: turn_id.map(Into::into),
        };
        self.call_typed::<call::SessionDiff>(&params).await
    }
}
