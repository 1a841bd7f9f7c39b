//! SPEC §18 handlers: `session/rewind`, `session/fork`, `session/set_title`: the
//! vocabulary's params (decoded once by [`crate::dispatch`]) in, the
//! [`SessionManager`](zeroclaw_sessions::session::SessionManager) run, its typed result out.

use std::sync::Arc;

use zeroclaw_protocol::history::{
    ForkParams, ForkResult, RewindParams, RewindResult, SetTitleParams, SetTitleResult,
};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::session::link::ClientLink;

use crate::answering::Answering;
use crate::auth::Principal;
use crate::caller::ConnectionContext;
use crate::methods::mode;
use crate::state::Daemon;
use crate::wire_error;

/// `session/rewind {sessionId, mode?, turnId, restoreFiles?, force?}`.
pub(crate) async fn rewind(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    p: RewindParams,
    answering: &Answering,
) -> Result<RewindResult, ErrorObject> {
    daemon
        .sessions
        .rewind(
            principal,
            Arc::clone(conn) as Arc<dyn ClientLink>,
            daemon.config.current(),
            &p.session_id,
            mode(p.mode),
            p.turn_id,
            p.restore_files.unwrap_or(true),
            p.force.unwrap_or(false),
            answering,
        )
        .await
        .map_err(wire_error::session)
}

/// `session/fork {sessionId, mode?, turnId?}`.
pub(crate) async fn fork(
    daemon: &Daemon,
    principal: &Principal,
    p: ForkParams,
) -> Result<ForkResult, ErrorObject> {
    daemon
        .sessions
        .fork(
            principal,
            &daemon.config.current(),
            &p.session_id,
            mode(p.mode),
            p.turn_id.map(Into::into),
        )
        .await
        .map_err(wire_error::session)
}

/// `session/set_title {sessionId, mode?, title}`.
pub(crate) async fn set_title(
    daemon: &Daemon,
    principal: &Principal,
    p: SetTitleParams,
) -> Result<SetTitleResult, ErrorObject> {
    daemon
        .sessions
        .set_title(principal, &p.session_id, mode(p.mode), p.title)
        .await
        .map_err(wire_error::session)
}
