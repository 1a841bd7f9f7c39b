//! `status`: what the daemon is and what it serves right now (SPEC §5).
//!
//! The answer is a borrowed view serialized straight into the reply: `status` is the call
//! clients poll, and building a JSON tree for it cost more than everything else it does.

use std::fmt::Display;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::methods::initialize::PROTOCOL_VERSION;
use crate::state::Daemon;

pub async fn call(daemon: &Arc<Daemon>, principal: &Principal) -> Result<Value, ErrorObject> {
    let (active, session_ids) = sessions(daemon, principal);
    serde_json::to_value(view(daemon, principal, active, &session_ids))
        .map_err(|e| ErrorObject::internal(format!("status: {e}")))
}

/// The `status` result for `principal`, appended to `buf` as JSON (the same text as
/// [`call`]'s value prints as).
pub fn write(daemon: &Daemon, principal: &Principal, buf: &mut Vec<u8>) -> serde_json::Result<()> {
    let (active, session_ids) = sessions(daemon, principal);
    serde_json::to_writer(buf, &view(daemon, principal, active, &session_ids))
}

/// The live sessions `principal` may see: how many, and their ids (an ACP and a chat
/// session may share an id: each listed once, in a stable order).
fn sessions(daemon: &Daemon, principal: &Principal) -> (usize, Vec<String>) {
    let visible = daemon.sessions.visible(principal);
    let mut ids: Vec<String> = visible.iter().map(|s| s.key.session_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    (visible.len(), ids)
}

fn view<'a>(
    daemon: &'a Daemon,
    principal: &Principal,
    active_sessions: usize,
    session_ids: &'a [String],
) -> Status<'a> {
    // These describe the daemon's host, not the caller's sessions (SPEC §5).
    let host = principal.admin.then_some(daemon);
    Status {
        protocol_version: PROTOCOL_VERSION,
        server_version: env!("CARGO_PKG_VERSION"),
        server_pid: host.map(|d| d.pid),
        uptime_secs: daemon.started.elapsed().as_secs(),
        endpoint: host.map(|d| Shown(d.endpoint.display())),
        config_dir: host.map(|d| Shown(d.dirs.config_dir.display())),
        data_dir: host.map(|d| Shown(d.dirs.data_dir.display())),
        connections: daemon.connections.open_count(),
        active_sessions,
        session_ids,
    }
}

/// The `status` result, member for member `zeroclaw_protocol::system::StatusResult` and in
/// its order (the order the answer always had); the host fields (`serverPid`, `endpoint`,
/// `configDir`, `dataDir`) only for an admin principal.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    protocol_version: u64,
    server_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_pid: Option<u32>,
    uptime_secs: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<Shown<std::path::Display<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_dir: Option<Shown<std::path::Display<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_dir: Option<Shown<std::path::Display<'a>>>,
    connections: usize,
    active_sessions: usize,
    session_ids: &'a [String],
}

/// A value serialized as the string it displays as (no intermediate `String`).
struct Shown<T>(T);

impl<T: Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}
