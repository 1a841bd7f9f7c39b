//! SPEC §22 handler: `session/diff`, the files a turn (or the whole session) changed; the
//! vocabulary's params in, the sessions service's answer out.

use zeroclaw_protocol::diff::{DiffParams, DiffResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::methods::mode;
use crate::state::Daemon;
use crate::wire_error;

/// `session/diff {sessionId, mode?, turnId?}`.
pub(crate) async fn diff(
    daemon: &Daemon,
    principal: &Principal,
    p: DiffParams,
) -> Result<DiffResult, ErrorObject> {
    daemon
        .sessions
        .diff(principal, &p.session_id, mode(p.mode), p.turn_id.as_deref())
        .await
        .map_err(wire_error::session)
}
