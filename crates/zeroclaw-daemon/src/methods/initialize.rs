//! `initialize`: the handshake (SPEC §4). Checks the protocol version, authenticates the
//! peer (local uid, or a pairing token over WebSocket) and records what the client can do.

use serde::Deserialize;
use serde_json::{Value, json};
use zeroclaw_protocol::system::{InitializeResult, PROTOCOL_VERSION, PrincipalInfo};
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::caller::{ConnectionContext, Handshake};
use crate::params::{self, Params};
use crate::state::Daemon;
use crate::transport::TransportKind;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    protocol_version: Option<Value>,
    #[serde(default)]
    client_capabilities: Option<Value>,
    #[serde(default)]
    auth_token: Option<String>,
    #[serde(default, rename = "clientInfo")]
    _client_info: Option<Value>,
}

/// `initialize {protocolVersion?, clientCapabilities?, authToken?, clientInfo?}`.
pub(crate) async fn initialize(
    daemon: &Daemon,
    conn: &ConnectionContext,
    params: Params,
) -> Result<Value, ErrorObject> {
    if conn.is_initialized() {
        return Err(ErrorObject::invalid_request("already initialized"));
    }
    let p: InitializeParams = params::decode(params)?;
    let requested = p.protocol_version.unwrap_or(json!(PROTOCOL_VERSION));
    if requested.as_u64() != Some(PROTOCOL_VERSION) {
        return Err(ErrorObject::version_mismatch(PROTOCOL_VERSION, &requested));
    }
    let principal = daemon.principal(&conn.presenting(p.auth_token.as_deref()))?;
    if let Some(token) = p
        .auth_token
        .as_deref()
        .filter(|_| conn.peer.kind == TransportKind::WebSocket)
    {
        // WebSocket peers are counted per token from here on.
        let per_token = daemon.config.current().limits.connections_per_principal as usize;
        let key = format!("token:{}", &crate::pairing::fingerprint(token));
        let mut admission = conn.admission.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = admission.assign(&key, per_token) {
            drop(admission);
            conn.out.close_after_flush();
            return Err(error);
        }
    }
    // What is queued to this connection counts in its principal's total (SPEC §17.1).
    conn.out
        .count_in(daemon.connections.principal_queue(&principal.id));
    let elicitation = p
        .client_capabilities
        .as_ref()
        .and_then(|c| c.get("elicitation"))
        .is_some_and(|e| !e.is_null());
    let handshake = Handshake {
        auth_token: p.auth_token,
        elicitation,
    };
    if conn.handshake.set(handshake).is_err() {
        return Err(ErrorObject::invalid_request("already initialized"));
    }
    tracing::info!(conn = conn.id, peer = %conn.peer.label, principal = %principal.id, "initialized");
    let capabilities = auth::capabilities(&principal, conn.peer.kind == TransportKind::Local);
    params::encode(&InitializeResult::new(
        env!("CARGO_PKG_VERSION"),
        daemon.pid,
        PrincipalInfo {
            id: principal.id,
            admin: principal.admin,
        },
        capabilities.into_iter().map(str::to_owned).collect(),
    ))
}
