//! The ACP session life cycle beyond `new`, `load` and `list` (SPEC §25): `session/resume`
//! (the session followed again, without its transcript replayed), `session/close` (the
//! editor's turn cancelled, its permission requests withdrawn, the session no longer
//! followed: the daemon session itself stays, for its other clients), and `authenticate`
//! (the token of the gateway's `/acp`, given as `_meta.token`).

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, ResumeSessionRequest, ResumeSessionResponse,
};
use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::session::SessionRef;
use zeroclaw_rpc::ErrorObject;

use super::bridge::{Bridge, decode};
use super::{daemon, info, opening, options, turns};

/// The one authentication method of `/acp`.
pub const TOKEN_METHOD: &str = "zeroclaw-token";

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// `authenticate {methodId:"zeroclaw-token", _meta:{token}}`: connects to the daemon with
/// the token; a token the daemon refuses is -32000 and leaves the editor unauthenticated.
/// Over stdio there is nothing to authenticate (no method is offered): answered `{}`.
pub async fn authenticate(
    bridge: &Arc<Bridge>,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let method = AGENT_METHOD_NAMES.authenticate;
    let req: AuthenticateRequest = decode(method, params)?;
    if !bridge.daemon.needs_token() {
        return encode(&AuthenticateResponse::new());
    }
    if &*req.method_id.0 != TOKEN_METHOD {
        return Err(ErrorObject::invalid_params(format!(
            "{method}: methodId: unknown method {:?} (offered: {TOKEN_METHOD})",
            req.method_id.0
        )));
    }
    let token = req
        .meta
        .as_ref()
        .and_then(|m| m.get("token"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "{method}: _meta.token: a pairing or dashboard token is required"
            ))
        })?;
    if bridge.daemon.is_linked() {
        return Err(ErrorObject::invalid_request(format!(
            "{method}: already authenticated"
        )));
    }
    bridge.daemon.set_token(Some(token.to_owned()));
    if let Err(e) = bridge.link().await {
        bridge.daemon.set_token(None);
        return Err(e);
    }
    encode(&AuthenticateResponse::new())
}

/// `session/resume {sessionId, cwd, mcpServers}`: the daemon session brought back (live
/// again) and followed; nothing replayed.
pub async fn resume(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: ResumeSessionRequest = decode(AGENT_METHOD_NAMES.session_resume, params)?;
    let session_id = req.session_id.0.to_string();
    let alias = opening::reopen(bridge, &session_id, &req.cwd, &req.mcp_servers).await?;
    opening::follow(bridge, &session_id).await;
    info::refresh(bridge, &session_id).await;
    let modes = opening::modes(bridge, &alias).await;
    let options = options::current(bridge, &session_id).await;
    encode(
        &ResumeSessionResponse::new()
            .modes(modes)
            .config_options(options),
    )
}

/// `session/close {sessionId}`: as `session/cancel` for a running prompt of the editor,
/// then the session is no longer followed nor known to the bridge.
pub async fn close(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: CloseSessionRequest = decode(AGENT_METHOD_NAMES.session_close, params)?;
    let session_id = req.session_id.0.to_string();
    if !bridge.sessions().contains_key(&session_id) {
        return Err(daemon::session_not_found(&session_id));
    }
    let cancel = serde_json::to_value(CancelNotification::new(session_id.clone())).ok();
    turns::cancel(bridge, cancel).await;
    let open = bridge
        .sessions()
        .remove(&session_id)
        .map(|s| {
            s.approvals
                .into_values()
                .chain(s.questions.into_values())
                .collect()
        })
        .unwrap_or_default();
    turns::withdraw(bridge, &session_id, open).await;
    let params = SessionRef {
        session_id: session_id.clone().into(),
        mode: None,
    };
    if let Err(e) = bridge.send::<call::SessionUnsubscribe>(&params).await {
        tracing::debug!("unsubscribing from {session_id}: {}", e.message);
    }
    encode(&CloseSessionResponse::new())
}
