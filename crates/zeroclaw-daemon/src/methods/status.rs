//! `status`: what the daemon is and what it serves right now (SPEC §5); and the answer to
//! `daemon/shutdown` (the connection loop starts the stop once that answer is queued).

use std::sync::Arc;

use zeroclaw_protocol::gateway::GatewayInfo;
use zeroclaw_protocol::system::{
    NoParams, PROTOCOL_VERSION, SessionCounts, ShutdownResult, StatusResult,
};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::session::LiveSession;

use crate::auth::Principal;
use crate::state::Daemon;
use crate::status_text::{FixedText, Live};

/// `status`: host fields (paths, pid, endpoint) only for an admin (SPEC §5).
pub(crate) fn status(
    daemon: &Daemon,
    principal: &Principal,
    _: NoParams,
) -> Result<StatusResult, ErrorObject> {
    Ok(result(daemon, principal))
}

/// The `status` result for `principal`, appended to `buf` as JSON: the same text
/// [`status`]'s value prints as, without building that value (`status` is the call clients
/// poll). What cannot change while the daemon runs is encoded once ([`FixedText`]).
pub(crate) fn write(daemon: &Daemon, principal: &Principal, buf: &mut Vec<u8>) {
    let fixed = daemon.status_text.get_or_init(|| {
        FixedText::new(
            daemon.pid,
            &daemon.endpoint.display().to_string(),
            &daemon.dirs.config_dir.display().to_string(),
            &daemon.dirs.data_dir.display().to_string(),
        )
    });
    let visible = daemon.sessions.visible(principal);
    let session_ids = session_ids(&visible);
    let live = Live {
        uptime_secs: daemon.started.elapsed().as_secs(),
        connections: daemon.connections.open_count() as u64,
        active_sessions: visible.len() as u64,
        session_ids: &session_ids,
        session_counts: counts(&visible),
        gateway: daemon.gateway.url(),
    };
    fixed.write(principal.admin, &live, buf);
}

fn result(daemon: &Daemon, principal: &Principal) -> StatusResult {
    let visible = daemon.sessions.visible(principal);
    let session_ids = session_ids(&visible)
        .into_iter()
        .map(str::to_owned)
        .collect();
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
        session_counts: counts(&visible),
        session_ids,
        gateway: daemon.gateway.url().map(|url| GatewayInfo {
            url: format!("{url}/"),
        }),
    }
}

/// `visible` counted by what each does now (SPEC §22).
fn counts(visible: &[Arc<LiveSession>]) -> SessionCounts {
    let c = zeroclaw_sessions::session::rest::counts(visible);
    SessionCounts {
        live: c.live,
        running: c.running,
        waiting: c.waiting,
        idle: c.idle,
    }
}

/// The ids of `visible`: an ACP and a chat session may share an id, so each is listed once,
/// in a stable order.
fn session_ids(visible: &[Arc<LiveSession>]) -> Vec<&str> {
    let mut ids: Vec<&str> = visible.iter().map(|s| s.key.session_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// `daemon/shutdown`: the answer; the stop itself follows it.
pub(crate) fn shutdown(_: NoParams) -> Result<ShutdownResult, ErrorObject> {
    Ok(ShutdownResult {
        shutting_down: true,
    })
}
