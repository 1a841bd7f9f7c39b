//! `session/*` handlers (SPEC §7): decode typed params (both spellings), then call the
//! [`SessionManager`](crate::session::SessionManager). Grants were checked by the
//! dispatcher; ownership and agent permission are checked by the manager.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::Mode;

use crate::auth::Principal;
use crate::caller::ConnectionContext;
use crate::files;
use crate::methods::file;
use crate::params::{self, Params};
use crate::session::lifecycle::parse_decision;
use crate::session::link::ClientLink;
use crate::session::mcp::{SessionServer, check_session_servers};
use crate::session::open::NewRequest;
use crate::session::stream::Cursor;
use crate::state::Daemon;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewParams {
    agent_alias: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    mode: Option<Mode>,
    /// ACP-shaped stdio MCP servers for this session (admins only).
    #[serde(default)]
    mcp_servers: Vec<SessionServer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams {
    session_id: String,
    prompt: Value,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    attachments: Option<Vec<Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CompactParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    instructions: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApproveParams {
    session_id: String,
    request_id: String,
    decision: String,
    #[serde(default)]
    replacement: Option<Value>,
    #[serde(default)]
    mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscribeParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    turn_id: Option<String>,
    #[serde(default)]
    after_event_seq: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    search: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessagesParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    before_seq: Option<i64>,
    #[serde(default)]
    include_rewound: Option<bool>,
}

/// The prompt text: a string, or ACP-style content blocks whose `text` parts are joined.
fn prompt_text(prompt: Value) -> Result<String, ErrorObject> {
    match prompt {
        Value::String(s) => Ok(s),
        Value::Array(blocks) => {
            let mut out = String::new();
            for b in &blocks {
                match b.get("text").and_then(Value::as_str) {
                    Some(t) => out.push_str(t),
                    None => {
                        return Err(ErrorObject::invalid_params(
                            "invalid params: prompt blocks must be {type:\"text\", text}",
                        ));
                    }
                }
            }
            Ok(out)
        }
        _ => Err(ErrorObject::invalid_params(
            "invalid params: prompt must be a string",
        )),
    }
}

/// `session/new {agentAlias, sessionId?, cwd?, mode?, mcpServers?}`.
pub(crate) async fn new(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: NewParams = params::decode(params)?;
    if !p.mcp_servers.is_empty() {
        // They run as the daemon's user (SPEC §16).
        if !principal.admin {
            return Err(ErrorObject::forbidden(format!(
                "principal {} may not start MCP servers (mcpServers needs an admin)",
                principal.id
            ))
            .with_data(serde_json::json!({"resource": "mcpServers"})));
        }
        check_session_servers(&p.mcp_servers)?;
    }
    let req = NewRequest {
        agent_alias: p.agent_alias,
        session_id: p.session_id,
        cwd: p.cwd,
        mode: p.mode.unwrap_or(Mode::Acp),
        mcp_servers: p.mcp_servers,
    };
    daemon
        .sessions
        .new_session(principal, &daemon.config.current(), req)
        .await
        .map_err(Into::into)
}

/// `session/prompt {sessionId, prompt, mode?, attachments?}`: attachments are stored first
/// (the same commit step as `file/attach`), their markers follow the prompt text.
pub(crate) async fn prompt(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let sessions = &daemon.sessions;
    let p: PromptParams = params::decode(params)?;
    let mut prompt = prompt_text(p.prompt)?;
    if let Some(attachments) = p.attachments.filter(|a| !a.is_empty()) {
        // Stored through the same commit step as file/attach; the markers follow
        // the prompt, one per line.
        let key = sessions.resolve_key(&p.session_id, p.mode);
        // A persisted session is brought back first, as the prompt would.
        sessions
            .live_or_rehydrate(principal, &daemon.config.current(), &key)
            .await?;
        let target = files::commit::target_of(&daemon.sessions, principal, &key)?;
        let items = file::decode_inputs(conn, principal, attachments).await?;
        let presented = conn.presented();
        for stored in
            files::commit::commit(daemon.file_stores(), &presented, &target, items).await?
        {
            prompt.push('\n');
            prompt.push_str(&stored.marker);
        }
    }
    sessions
        .prompt(
            principal,
            Arc::clone(conn) as Arc<dyn ClientLink>,
            daemon.config.current(),
            &p.session_id,
            p.mode,
            prompt,
        )
        .await
        .map_err(Into::into)
}

/// `session/compact {sessionId, mode?, instructions?}` (SPEC §18): queued like a prompt.
pub(crate) async fn compact(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: CompactParams = params::decode(params)?;
    daemon
        .sessions
        .compact(
            principal,
            Arc::clone(conn) as Arc<dyn ClientLink>,
            daemon.config.current(),
            &p.session_id,
            p.mode,
            p.instructions,
        )
        .await
        .map_err(Into::into)
}

/// `session/cancel {sessionId, mode?}`: this connection's last prompt, or a later turn.
pub(crate) fn cancel(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: IdParams = params::decode(params)?;
    daemon
        .sessions
        .cancel(principal, conn, &p.session_id, p.mode)
        .map_err(Into::into)
}

/// `session/approve {sessionId, requestId, decision, replacement?, mode?}`.
pub(crate) fn approve(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: ApproveParams = params::decode(params)?;
    let decision = parse_decision(&p.decision, p.replacement)?;
    daemon
        .sessions
        .approve(principal, &p.session_id, p.mode, &p.request_id, decision)
        .map_err(Into::into)
}

/// `session/close {sessionId, mode?}`.
pub(crate) async fn close(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: IdParams = params::decode(params)?;
    daemon
        .sessions
        .close(principal, &p.session_id, p.mode)
        .await
        .map_err(Into::into)
}

/// `session/kill {sessionId, mode?}`.
pub(crate) async fn kill(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: IdParams = params::decode(params)?;
    daemon
        .sessions
        .kill(principal, &p.session_id, p.mode)
        .await
        .map_err(Into::into)
}

/// `session/delete {sessionId, mode?}`.
pub(crate) async fn delete(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: IdParams = params::decode(params)?;
    daemon
        .sessions
        .delete(principal, &p.session_id, p.mode)
        .await
        .map_err(Into::into)
}

/// `session/subscribe {sessionId, mode?, turnId?, afterEventSeq?}`.
pub(crate) async fn subscribe(
    daemon: &Daemon,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: SubscribeParams = params::decode(params)?;
    let cursor = Cursor {
        turn_id: p.turn_id,
        after_event_seq: p.after_event_seq.unwrap_or(0),
    };
    let link = Arc::clone(conn) as Arc<dyn ClientLink>;
    daemon
        .sessions
        .subscribe(
            principal,
            &daemon.config.current(),
            link,
            &p.session_id,
            p.mode,
            cursor,
        )
        .await
        .map_err(Into::into)
}

/// `session/unsubscribe {sessionId, mode?}`.
pub(crate) fn unsubscribe(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: IdParams = params::decode(params)?;
    daemon
        .sessions
        .unsubscribe(principal, conn, &p.session_id, p.mode)
        .map_err(Into::into)
}

/// `session/list {mode?, limit?, cursor?, search?}`.
pub(crate) async fn list(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: ListParams = params::decode(params)?;
    daemon
        .sessions
        .list(principal, p.mode, p.limit, p.cursor.as_deref(), p.search)
        .await
        .map_err(Into::into)
}

/// `session/messages {sessionId, mode?, limit?, beforeSeq?, includeRewound?}`.
pub(crate) async fn messages(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: MessagesParams = params::decode(params)?;
    daemon
        .sessions
        .messages(
            principal,
            &p.session_id,
            p.mode,
            p.limit,
            p.before_seq,
            p.include_rewound.unwrap_or(false),
        )
        .await
        .map_err(Into::into)
}
