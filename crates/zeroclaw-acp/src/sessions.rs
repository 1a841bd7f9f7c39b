//! The ACP session methods that map onto single daemon calls (SPEC §15, first table, and
//! §25): `initialize`, `session/new`, `session/load` (with the transcript replayed as
//! updates), `session/list` (each session with its own `cwd`) and `session/set_mode`. A session the editor opened is
//! followed (daemon `session/subscribe`), so turns other clients prompt in it reach the
//! editor too, their prompt first (SPEC §18).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, AgentCapabilities, AuthMethod, AuthMethodAgent, CLIENT_METHOD_NAMES,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionInfo, SessionListCapabilities, SessionNotification, SessionResumeCapabilities,
    SetSessionModeRequest, SetSessionModeResponse,
};
use serde_json::Value;
use zeroclaw_client::protocol::session::{MessagesParams, SessionRef, SessionSummary};
use zeroclaw_client::protocol::stream::ConfigureParams;
use zeroclaw_client::protocol::{Autonomy, Role, call};
use zeroclaw_client::{Method, Mode};
use zeroclaw_rpc::{ErrorObject, code};

use super::bridge::{Bridge, Session, decode};
use super::opening::{acp_sessions, daemon_new, encode, follow, modes, remember, reopen, rfc3339};
use super::{daemon, info, lifecycle, options, updates};

/// Sessions per `session/list` page.
const LIST_PAGE: usize = 50;
/// Longest title taken from a session's first prompt (characters).
const TITLE_CHARS: usize = 80;

pub async fn initialize(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: InitializeRequest = decode(AGENT_METHOD_NAMES.initialize, params)?;
    let elicitation = req.client_capabilities.elicitation.is_some();
    bridge.elicitation.store(elicitation, Ordering::Relaxed);
    // Over `/acp` without a bearer the daemon is reached once `authenticate` gives a token.
    let daemon = &bridge.daemon;
    if !daemon.needs_token() || daemon.has_token() {
        bridge.link().await?;
    }
    let auth_methods = if daemon.needs_token() {
        vec![AuthMethod::Agent(
            AuthMethodAgent::new(lifecycle::TOKEN_METHOD, "zeroclaw token").description(
                "a pairing token (zeroclaw pair) or a dashboard session token, as _meta.token",
            ),
        )]
    } else {
        Vec::new()
    };
    // What the bridge does, no more: MCP servers only as commands (no http/sse), no
    // images or audio in prompts.
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        );
    encode(
        &InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .auth_methods(auth_methods)
            .agent_info(Implementation::new("zeroclaw", env!("CARGO_PKG_VERSION"))),
    )
}

pub async fn new_session(
    bridge: &Arc<Bridge>,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let req: NewSessionRequest = decode(AGENT_METHOD_NAMES.session_new, params)?;
    let params = daemon_new(&bridge.agent, &req.cwd, &req.mcp_servers)?;
    let session_id = bridge
        .call::<call::SessionNew>(&params)
        .await?
        .session_id
        .into_string();
    remember(bridge, &session_id, req.cwd);
    follow(bridge, &session_id).await;
    let modes = modes(bridge, &bridge.agent).await;
    let options = options::current(bridge, &session_id).await;
    encode(
        &NewSessionResponse::new(session_id)
            .modes(modes)
            .config_options(options),
    )
}

/// Every transcript row of a session, oldest first (following `session/messages` pages).
async fn transcript(bridge: &Arc<Bridge>, session_id: &str) -> Result<Vec<Value>, ErrorObject> {
    let mut pages: Vec<Vec<Value>> = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let params = MessagesParams {
            session_id: session_id.into(),
            mode: Some(Mode::Acp),
            limit: None,
            before_seq: before,
            include_rewound: None,
        };
        let page = bridge.send::<call::SessionMessages>(&params).await?;
        let rows = page
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let first = rows
            .first()
            .and_then(|r| r.get("seq"))
            .and_then(Value::as_i64);
        let more = page
            .get("hasMore")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        pages.push(rows);
        match first {
            Some(seq) if more && before.is_none_or(|b| seq < b) => before = Some(seq),
            _ => break,
        }
    }
    Ok(pages.into_iter().rev().flatten().collect())
}

pub async fn load(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: LoadSessionRequest = decode(AGENT_METHOD_NAMES.session_load, params)?;
    let session_id = req.session_id.0.to_string();
    let alias = reopen(bridge, &session_id, &req.cwd, &req.mcp_servers).await?;
    for row in transcript(bridge, &session_id).await? {
        if let Some(update) = updates::from_row(&row) {
            // Each transcript row is one message.
            let update = match row.get("seq").and_then(Value::as_i64) {
                Some(seq) => updates::with_message_id(update, format!("{session_id}-m{seq}")),
                None => update,
            };
            let note = SessionNotification::new(session_id.clone(), update);
            bridge
                .editor
                .notify(CLIENT_METHOD_NAMES.session_update, &note)
                .await;
        }
    }
    // After the transcript: a turn running now is replayed from its start, then followed.
    follow(bridge, &session_id).await;
    info::refresh(bridge, &session_id).await;
    let modes = modes(bridge, &alias).await;
    let options = options::current(bridge, &session_id).await;
    encode(
        &LoadSessionResponse::new()
            .modes(modes)
            .config_options(options),
    )
}

/// The start of a session's first prompt.
async fn title(bridge: &Arc<Bridge>, session_id: &str) -> Option<String> {
    let params = MessagesParams {
        session_id: session_id.into(),
        mode: Some(Mode::Acp),
        limit: Some(1),
        before_seq: Some(2),
        include_rewound: None,
    };
    let page = bridge.call::<call::SessionMessages>(&params).await.ok()?;
    let first = page.messages.first()?;
    if first.role != Role::User {
        return None;
    }
    let text = first.content.trim();
    let line = text.lines().next().unwrap_or("");
    let mut chars = line.chars();
    let mut title: String = chars.by_ref().take(TITLE_CHARS).collect();
    if chars.next().is_some() {
        title.push('…');
    }
    (!title.is_empty()).then_some(title)
}

pub async fn list(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: ListSessionsRequest = decode(AGENT_METHOD_NAMES.session_list, params)?;
    let start: usize = match &req.cursor {
        Some(c) => c.parse().map_err(|_| {
            ErrorObject::invalid_params(format!(
                "{}: bad cursor {c:?}",
                AGENT_METHOD_NAMES.session_list
            ))
        })?,
        None => 0,
    };
    // Read as sent, for each entry's `cwd` (a field newer daemons list).
    let raw = bridge.send::<call::SessionList>(&acp_sessions()).await?;
    let mut all: Vec<(SessionSummary, Option<PathBuf>)> = raw
        .get("sessions")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| {
                    let summary = serde_json::from_value::<SessionSummary>(e.clone()).ok()?;
                    Some((summary, cwd_of(e)))
                })
                .collect()
        })
        .unwrap_or_default();
    all.sort_by_key(|(s, _)| std::cmp::Reverse(s.last_activity));
    let mut sessions = Vec::new();
    for (entry, listed_cwd) in all.iter().skip(start).take(LIST_PAGE) {
        let id = entry.session_id.as_str();
        // A daemon that says nothing of a session it did not open here (before SPEC §25's
        // `cwd` in its answers) leaves only the root to name.
        let cwd = session_cwd(bridge, id, listed_cwd.clone())
            .await
            .unwrap_or_else(|| PathBuf::from("/"));
        let title = match &entry.title {
            Some(t) => Some(t.clone()),
            None => title(bridge, id).await,
        };
        sessions.push(
            SessionInfo::new(id.to_string(), cwd)
                .title(title)
                .updated_at(rfc3339(entry.last_activity)),
        );
    }
    let next = start + LIST_PAGE;
    let response = ListSessionsResponse::new(sessions)
        .next_cursor((next < all.len()).then(|| next.to_string()));
    encode(&response)
}

/// A `cwd` field of a daemon answer, when it holds an absolute path.
fn cwd_of(value: &Value) -> Option<PathBuf> {
    value
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// A session's own working directory: as listed, else as `session/status` gives it, else
/// as the editor opened it through this bridge. Never the bridge's own directory.
async fn session_cwd(bridge: &Arc<Bridge>, id: &str, listed: Option<PathBuf>) -> Option<PathBuf> {
    if listed.is_some() {
        return listed;
    }
    let params = SessionRef {
        session_id: id.to_owned().into(),
        mode: Some(Mode::Acp),
    };
    if let Ok(status) = bridge.send::<call::SessionStatus>(&params).await
        && let Some(cwd) = cwd_of(&status)
    {
        return Some(cwd);
    }
    bridge
        .sessions()
        .get(id)
        .map(|s: &Session| s.cwd.clone())
        .filter(|p| !p.as_os_str().is_empty())
}

pub async fn set_mode(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: SetSessionModeRequest = decode(AGENT_METHOD_NAMES.session_set_mode, params)?;
    let session_id = req.session_id.0.to_string();
    let mode = req.mode_id.0.to_string();
    let Some(autonomy) = Autonomy::parse(&mode) else {
        return Err(ErrorObject::invalid_params(format!(
            "unknown mode {mode:?} (supervised, full, read_only, plan)"
        )));
    };
    if !bridge.sessions().contains_key(&session_id) {
        return Err(daemon::session_not_found(&session_id));
    }
    let params = ConfigureParams {
        session_id: session_id.into(),
        mode: None,
        autonomy: Some(autonomy),
        model: None,
    };
    match bridge.send::<call::SessionConfigure>(&params).await {
        Ok(_) => encode(&SetSessionModeResponse::new()),
        Err(e) if e.code == code::METHOD_NOT_FOUND => Err(ErrorObject::new(
            code::METHOD_NOT_FOUND,
            format!(
                "{} needs a daemon with {} (SPEC §16); this daemon does not have it yet",
                AGENT_METHOD_NAMES.session_set_mode,
                Method::SessionConfigure
            ),
        )),
        Err(e) => Err(e),
    }
}
