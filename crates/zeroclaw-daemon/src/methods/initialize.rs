//! `initialize`: the handshake (SPEC §4). Checks the protocol version, authenticates the
//! peer (local uid, or a pairing token over WebSocket) and records what the client can do.

use serde_json::json;
use zeroclaw_protocol::system::{
    InitializeParams, InitializeResult, PROTOCOL_VERSION, PrincipalInfo,
};
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::caller::{ConnectionContext, Handshake};
use crate::state::Daemon;
use crate::transport::TransportKind;

/// Refuses a second handshake before its params are looked at.
pub(crate) fn check_first(conn: &ConnectionContext) -> Result<(), ErrorObject> {
    if conn.is_initialized() {
        return Err(ErrorObject::invalid_request("already initialized"));
    }
    Ok(())
}

/// `initialize {protocolVersion?, clientCapabilities?, authToken?, clientInfo?}`, once
/// [`check_first`] let it through.
pub(crate) async fn initialize(
    daemon: &Daemon,
    conn: &ConnectionContext,
    p: InitializeParams,
) -> Result<InitializeResult, ErrorObject> {
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
        .is_some_and(|c| c.elicitation());
    let handshake = Handshake {
        auth_token: p.auth_token,
        elicitation,
    };
    if conn.handshake.set(handshake).is_err() {
        return Err(ErrorObject::invalid_request("already initialized"));
    }
    tracing::info!(conn = conn.id, peer = %conn.peer.label, principal = %principal.id, "initialized");
    let capabilities = auth::capabilities(&principal, conn.peer.kind == TransportKind::Local);
    Ok(InitializeResult::new(
        env!("CARGO_PKG_VERSION"),
        daemon.pid,
        PrincipalInfo {
            id: principal.id,
            admin: principal.admin,
        },
        capabilities.into_iter().map(str::to_owned).collect(),
    ))
}
