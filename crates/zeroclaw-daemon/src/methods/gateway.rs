//! `gateway/start` and `dashboard/login` (SPEC §20), both local only: start the gateway on
//! the loopback address, and hand the caller a one-time code for the web dashboard.
//!
//! `dashboard/login` starts the gateway when none runs (as `gateway/start` would), so one
//! call is enough to get a working URL.

use zeroclaw_protocol::gateway::{DashboardLoginResult, GatewayInfo};
use zeroclaw_protocol::system::NoParams;
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::caller::ConnectionContext;
use crate::state::Daemon;

/// The gateway's base URL, started on 127.0.0.1 at `wss.port` (or a free port) if none
/// runs.
fn running(daemon: &Daemon) -> Result<String, ErrorObject> {
    let port = daemon.config.current().wss.port;
    daemon.gateway.start(port).map_err(ErrorObject::internal)
}

/// `gateway/start {}` → `{url}`; the same `{url}` while it runs.
pub(crate) fn start(daemon: &Daemon, _: NoParams) -> Result<GatewayInfo, ErrorObject> {
    Ok(GatewayInfo {
        url: format!("{}/", running(daemon)?),
    })
}

/// `dashboard/login {}` → `{url, code, expiresAt}`: a code standing for the caller's own
/// credential, valid once and for 60 s.
pub(crate) fn login(
    daemon: &Daemon,
    conn: &ConnectionContext,
    _: NoParams,
) -> Result<DashboardLoginResult, ErrorObject> {
    let credential = auth::credential(daemon.bearers(), &conn.presented())?;
    let base = running(daemon)?;
    let issued = daemon
        .gateway
        .logins
        .issue(credential)
        .map_err(auth::AuthError::from)?;
    tracing::info!(conn = conn.id, "dashboard login code issued");
    Ok(DashboardLoginResult {
        url: format!("{base}/#code={}", issued.code),
        code: issued.code,
        expires_at: issued.expires_at,
    })
}
