//! `status`: what the daemon is and what it serves right now (SPEC §5); and the answer to
//! `daemon/shutdown` (the connection loop starts the stop once that answer is queued).

use zeroclaw_protocol::gateway::GatewayInfo;
use zeroclaw_protocol::system::{NoParams, PROTOCOL_VERSION, ShutdownResult, StatusResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::state::Daemon;

/// `status`: host fields (paths, pid, endpoint) only for an admin (SPEC §5).
pub(crate) fn status(
    daemon: &Daemon,
    principal: &Principal,
    _: NoParams,
) -> Result<StatusResult, ErrorObject> {
    Ok(result(daemon, principal))
}

/// The `status` result for `principal`, appended to `buf` as JSON (the text [`status`]'s
/// value prints as, without building that value: `status` is the call clients poll).
pub(crate) fn write(
    daemon: &Daemon,
    principal: &Principal,
    buf: &mut Vec<u8>,
) -> serde_json::Result<()> {
    serde_json::to_writer(buf, &result(daemon, principal))
}

fn result(daemon: &Daemon, principal: &Principal) -> StatusResult {
    let visible = daemon.sessions.visible(principal);
    // An ACP and a chat session may share an id: list it once, in a stable order.
    let mut session_ids: Vec<String> = visible.iter().map(|s| s.key.session_id.clone()).collect();
    session_ids.sort_unstable();
    session_ids.dedup();
    // These describe the daemon's host, not the caller's sessions.
    let host = |value: String| principal.admin.then_some(value);
    StatusResult {
        protocol_version: PROTOCOL_VERSION,
        server_version: env!("CARGO_PKG_VERSION").to_owned(),
        server_pid: principal.admin.then_some(daemon.pid),
        uptime_secs: daemon.started.elapsed().as_secs(),
        endpoint: host(daemon.endpoint.display().to_string()),
        config_dir: host(daemon.dirs.config_dir.display().to_string()),
        data_dir: host(daemon.dirs.data_dir.display().to_string()),
        connections: daemon.connections.open_count() as u64,
        active_sessions: visible.len() as u64,
        session_ids,
        gateway: daemon.gateway.url().map(|url| GatewayInfo {
            url: format!("{url}/"),
        }),
    }
}

/// `daemon/shutdown`: the answer; the stop itself follows it.
pub(crate) fn shutdown(_: NoParams) -> Result<ShutdownResult, ErrorObject> {
    Ok(ShutdownResult {
        shutting_down: true,
    })
}
