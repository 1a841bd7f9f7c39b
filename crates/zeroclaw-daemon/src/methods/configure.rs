//! `session/status` and `session/configure` handlers (SPEC §16): typed params in, the
//! [`SessionManager`](zeroclaw_sessions::session::SessionManager) called, a typed result out.

use zeroclaw_protocol::session::SessionRef;
use zeroclaw_protocol::stream::{
    ConfigureParams, ConfigureResult, SessionStatusResult, ShellOutputParams, ShellOutputResult,
};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::session::configure::ConfigureRequest;
use zeroclaw_sessions::session::wire::configured_autonomy;

use crate::auth::Principal;
use crate::methods::mode;
use crate::state::Daemon;
use crate::wire_error;

/// `session/status {sessionId, mode?}`.
pub(crate) fn status(
    daemon: &Daemon,
    principal: &Principal,
    p: SessionRef,
) -> Result<SessionStatusResult, ErrorObject> {
    let config = daemon.config.current();
    daemon
        .sessions
        .status(principal, &config, &p.session_id, mode(p.mode))
        .map_err(wire_error::session)
}

/// `session/shell_output {sessionId, mode?, shellId}` (SPEC §26).
pub(crate) fn shell_output(
    daemon: &Daemon,
    principal: &Principal,
    p: ShellOutputParams,
) -> Result<ShellOutputResult, ErrorObject> {
    daemon
        .sessions
        .shell_output(principal, &p.session_id, mode(p.mode), &p.shell_id)
        .map_err(wire_error::session)
}

/// `session/configure {sessionId, mode?, autonomy?, model?}`.
pub(crate) async fn configure(
    daemon: &Daemon,
    principal: &Principal,
    p: ConfigureParams,
) -> Result<ConfigureResult, ErrorObject> {
    let req = ConfigureRequest {
        autonomy: p.autonomy.map(configured_autonomy),
        model: p.model,
    };
    let config = daemon.config.current();
    daemon
        .sessions
        .configure(principal, &config, &p.session_id, mode(p.mode), req)
        .await
        .map_err(wire_error::session)
}
