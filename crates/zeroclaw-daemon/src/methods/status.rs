//! `status`: what the daemon is and what it serves right now (SPEC §5).

use std::sync::Arc;

use serde_json::{Value, json};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::methods::initialize::PROTOCOL_VERSION;
use crate::state::Daemon;

pub async fn call(daemon: &Arc<Daemon>, _principal: &Principal) -> Result<Value, ErrorObject> {
    let session_ids: Vec<String> = Vec::new();
    Ok(json!({
        "protocolVersion": PROTOCOL_VERSION,
        "serverVersion": env!("CARGO_PKG_VERSION"),
        "serverPid": daemon.pid,
        "uptimeSecs": daemon.started.elapsed().as_secs(),
        "endpoint": daemon.endpoint.display().to_string(),
        "configDir": daemon.dirs.config_dir.display().to_string(),
        "dataDir": daemon.dirs.data_dir.display().to_string(),
        "connections": daemon.connections.open_count(),
        "activeSessions": session_ids.len(),
        "sessionIds": session_ids,
    }))
}
