//! SPEC §18 handlers: `session/rewind`, `session/fork`, `session/set_title`. Params are
//! decoded straight into the vocabulary's types (both spellings), then the
//! [`SessionManager`](crate::session::SessionManager) runs them.

use std::sync::Arc;

use serde_json::Value;
use zeroclaw_protocol::history::{ForkParams, RewindParams, SetTitleParams};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::Mode;

use crate::auth::Principal;
use crate::caller::ConnectionContext;
use crate::params::{self, Params};
use crate::session::link::ClientLink;
use crate::state::Daemon;

/// The wire's session mode as the store names it.
fn mode(m: Option<zeroclaw_protocol::Mode>) -> Option<Mode> {
    m.map(|m| match m {
        zeroclaw_protocol::Mode::Acp => Mode::Acp,
        zeroclaw_protocol::Mode::Chat => Mode::Chat,
    })
}

/// `session/rewind {sessionId, mode?, turnId, restoreFiles?}`.
pub(crate) async fn rewind(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: RewindParams = params::decode(params)?;
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
        )
        .await
        .map_err(Into::into)
}

/// `session/fork {sessionId, mode?, turnId?}`.
pub(crate) async fn fork(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: ForkParams = params::decode(params)?;
    daemon
        .sessions
        .fork(
            principal,
            &daemon.config.current(),
            &p.session_id,
            mode(p.mode),
            p.turn_id,
        )
        .await
        .map_err(Into::into)
}

/// `session/set_title {sessionId, mode?, title}`.
pub(crate) async fn set_title(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: SetTitleParams = params::decode(params)?;
    daemon
        .sessions
        .set_title(principal, &p.session_id, mode(p.mode), p.title)
        .await
        .map_err(Into::into)
}
