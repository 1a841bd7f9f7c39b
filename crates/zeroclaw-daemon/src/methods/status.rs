//! `status`: what the daemon is and what it serves right now (SPEC §5); and the answer to
//! `daemon/shutdown` (the connection loop starts the stop once that answer is queued).

use serde_json::{Value, json};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::methods::initialize::PROTOCOL_VERSION;
use crate::state::Daemon;

/// `status`: host fields (paths, pid, endpoint) only for an admin.
pub(crate) fn status(daemon: &Daemon, principal: &Principal) -> Result<Value, ErrorObject> {
    let visible = daemon.sessions.visible(principal);
    // An ACP and a chat session may share an id: list it once, in a stable order.
    let mut session_ids: Vec<String> = visible.iter().map(|s| s.key.session_id.clone()).collect();
    session_ids.sort_unstable();
    session_ids.dedup();
    let mut status = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "serverVersion": env!("CARGO_PKG_VERSION"),
        "serverPid": daemon.pid,
        "uptimeSecs": daemon.started.elapsed().as_secs(),
        "endpoint": daemon.endpoint.display().to_string(),
        "configDir": daemon.dirs.config_dir.display().to_string(),
        "dataDir": daemon.dirs.data_dir.display().to_string(),
        "connections": daemon.connections.open_count(),
        "activeSessions": visible.len(),
        "sessionIds": session_ids,
    });
    if !principal.admin
        && let Some(fields) = status.as_object_mut()
    {
        // These describe the daemon's host, not the caller's sessions (SPEC §5).
        for host_only in HOST_FIELDS {
            fields.remove(*host_only);
        }
    }
    Ok(status)
}

/// The fields only an admin principal is shown.
const HOST_FIELDS: &[&str] = &["configDir", "dataDir", "serverPid", "endpoint"];

/// `daemon/shutdown`: the answer; the stop itself follows it.
pub(crate) fn shutdown() -> Value {
    json!({"shuttingDown": true})
}
