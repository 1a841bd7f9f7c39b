//! `initialize`: the handshake (SPEC §4). Checks the protocol version, authenticates the
//! peer (local uid; over WebSocket a pairing token, a dashboard session token, or a
//! dashboard login code exchanged here for a session token, SPEC §20) and records what the
//! client can do. Failed logins over WebSocket count against the credential's prefix from
//! the peer's source and against the connection ([`crate::login_rate`]).

use serde_json::json;
use zeroclaw_protocol::system::{
    InitializeParams, InitializeResult, PROTOCOL_VERSION, PrincipalInfo,
};
use zeroclaw_rpc::ErrorObject;

use crate::auth::{self, AuthError};
use crate::caller::{ConnectionContext, Handshake};
use crate::login_rate::Attempt;
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
    let remote = conn.peer.kind == TransportKind::WebSocket;
    let (auth_token, issued) = credentials(daemon, conn, p.auth_token, p.auth_code)?;
    let principal = match daemon.principal(&conn.presenting(auth_token.as_deref())) {
        Ok(principal) => principal,
        Err(e) => {
            if remote && counts_as_failed_login(&e) {
                failed_login(daemon, conn, auth_token.as_deref());
            }
            return Err(e.into());
        }
    };
    if let Some(token) = auth_token.as_deref().filter(|_| remote) {
        // WebSocket peers are counted per token from here on.
        let per_token = daemon.config.current().limits.connections_per_principal as usize;
        let key = format!("token:{}", &zeroclaw_sessions::pairing::fingerprint(token));
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
    let client = client_label(p.client_info.as_ref().map(|i| i.as_value()));
    let handshake = Handshake {
        auth_token,
        elicitation,
        client,
    };
    if conn.handshake.set(handshake).is_err() {
        return Err(ErrorObject::invalid_request("already initialized"));
    }
    tracing::info!(conn = conn.id, peer = %conn.peer.label, principal = %principal.id, "initialized");
    let capabilities = auth::capabilities(&principal, conn.peer.kind == TransportKind::Local);
    let mut result = InitializeResult::new(
        env!("CARGO_PKG_VERSION"),
        daemon.pid,
        PrincipalInfo {
            id: principal.id,
            admin: principal.admin,
        },
        capabilities.into_iter().map(str::to_owned).collect(),
    );
    result.auth_token = issued;
    Ok(result)
}

/// Longest client name kept for `decidedBy.client`.
const CLIENT_NAME_CHARS: usize = 64;

/// The face a client is, from `clientInfo.name` (SPEC §22 `decidedBy.client`): the
/// project's own clients by their short names, any other by the name it gave (printable
/// characters, at most 64), `rpc` when it gave none.
fn client_label(info: Option<&serde_json::Value>) -> String {
    let name = info
        .and_then(|i| i.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("");
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(CLIENT_NAME_CHARS)
        .collect();
    match name.trim() {
        "" | "zeroclaw-cli" => "rpc".to_owned(),
        "zeroclaw-dashboard" => "dashboard".to_owned(),
        "zeroclaw-acp" => "acp".to_owned(),
        other => other.to_owned(),
    }
}

/// The token this connection will present from now on, and the dashboard session token to
/// answer when `authCode` was exchanged for it (SPEC §20). Over WebSocket, a credential
/// prefix past its failed logins from this source, or a connection past its own, is
/// refused first; a bad code counts as a failure.
fn credentials(
    daemon: &Daemon,
    conn: &ConnectionContext,
    auth_token: Option<String>,
    auth_code: Option<String>,
) -> Result<(Option<String>, Option<String>), ErrorObject> {
    if conn.peer.kind != TransportKind::WebSocket {
        if auth_code.is_some() {
            return Err(ErrorObject::invalid_params(
                "authCode is for WebSocket connections (the local endpoint knows its peer)",
            ));
        }
        return Ok((auth_token, None));
    }
    let presented = auth_code.as_deref().or(auth_token.as_deref());
    if let Some(attempt) = attempt(conn, presented)
        && let Err(wait) = daemon.gateway.failures.check(&attempt)
    {
        let ip = attempt.ip;
        let retry_after_secs = wait.as_secs().max(1);
        return Err(AuthError::RateLimited {
            ip,
            retry_after_secs,
        }
        .into());
    }
    let Some(code) = auth_code else {
        return Ok((auth_token, None));
    };
    if auth_token.is_some() {
        return Err(ErrorObject::invalid_params(
            "send authToken or authCode, not both",
        ));
    }
    match daemon.gateway.logins.redeem(&code) {
        Ok((token, _)) => Ok((Some(token.clone()), Some(token))),
        Err(e) => {
            failed_login(daemon, conn, Some(&code));
            Err(AuthError::from(e).into())
        }
    }
}

/// Whether a refusal is a bad or missing credential (not, say, a missing grant).
fn counts_as_failed_login(e: &AuthError) -> bool {
    matches!(
        e,
        AuthError::NoToken | AuthError::Token(_) | AuthError::Login(_)
    )
}

/// A login attempt on `conn` presenting `credential`, when `conn` has an address.
fn attempt<'a>(conn: &ConnectionContext, credential: Option<&'a str>) -> Option<Attempt<'a>> {
    conn.peer.ip.map(|ip| Attempt {
        ip,
        credential,
        conn: Some(conn.id),
    })
}

fn failed_login(daemon: &Daemon, conn: &ConnectionContext, credential: Option<&str>) {
    if let Some(attempt) = attempt(conn, credential) {
        tracing::info!(conn = conn.id, peer = %conn.peer.label, "failed login");
        daemon.gateway.failures.failed(&attempt);
    }
}

#[cfg(test)]
mod client_label_tests {
    use serde_json::json;

    use super::client_label;

    #[test]
    fn the_project_clients_have_short_names_and_others_keep_theirs() {
        assert_eq!(client_label(None), "rpc");
        assert_eq!(client_label(Some(&json!({"name": "zeroclaw-cli"}))), "rpc");
        assert_eq!(
            client_label(Some(&json!({"name": "zeroclaw-dashboard"}))),
            "dashboard"
        );
        assert_eq!(client_label(Some(&json!({"name": "zeroclaw-acp"}))), "acp");
        assert_eq!(client_label(Some(&json!({"name": "chat"}))), "chat");
        assert_eq!(
            client_label(Some(&json!({"name": "my\neditor"}))),
            "myeditor"
        );
        assert_eq!(client_label(Some(&json!({"name": 7}))), "rpc");
        assert_eq!(
            client_label(Some(&json!({"name": "x".repeat(100)}))).len(),
            64
        );
    }
}
