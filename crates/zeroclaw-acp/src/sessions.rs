//! The ACP session methods that map onto single daemon calls (SPEC §15, first table):
//! `initialize`, `session/new`, `session/load` (with the transcript replayed as
//! updates), `session/list` and `session/set_mode`. A session the editor opened is
//! followed (daemon `session/subscribe`), so turns other clients prompt in it reach the
//! editor too, their prompt first (SPEC §18).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, AgentCapabilities, CLIENT_METHOD_NAMES, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, SessionCapabilities, SessionInfo,
    SessionListCapabilities, SessionMode, SessionModeState, SessionNotification,
    SetSessionModeRequest, SetSessionModeResponse,
};
use serde_json::Value;
use zeroclaw_client::protocol::config::{ConfigGetParams, ConfigGetResult};
use zeroclaw_client::protocol::session::{
    ListParams, McpServer as DaemonMcpServer, MessagesParams, SessionNewParams, SessionSummary,
};
use zeroclaw_client::protocol::stream::{ConfigureParams, SubscribeParams};
use zeroclaw_client::protocol::{Autonomy, Role, call};
use zeroclaw_client::{Method, Mode};
use zeroclaw_rpc::{ErrorObject, code};

use super::bridge::{Bridge, Session, decode};
use super::{daemon, updates};

/// The autonomy levels, offered as ACP session modes (the mode id is the wire spelling).
const MODES: [(Autonomy, &str, &str); 3] = [
    (
        Autonomy::Supervised,
        "Supervised",
        "bash and write_file ask for approval",
    ),
    (Autonomy::Full, "Full", "every tool runs without asking"),
    (
        Autonomy::ReadOnly,
        "Read only",
        "bash and write_file are refused",
    ),
];
/// Sessions per `session/list` page.
const LIST_PAGE: usize = 50;
/// Longest title taken from a session's first prompt (characters).
const TITLE_CHARS: usize = 80;

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

pub async fn initialize(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: InitializeRequest = decode(AGENT_METHOD_NAMES.initialize, params)?;
    let elicitation = req.client_capabilities.elicitation.is_some();
    bridge.elicitation.store(elicitation, Ordering::Relaxed);
    bridge.link().await?;
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
    encode(
        &InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("zeroclaw", env!("CARGO_PKG_VERSION"))),
    )
}

/// A config property under an agent, quoting the alias when it needs it.
fn agent_prop(alias: &str, key: &str) -> String {
    if alias
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!("agents.{alias}.{key}")
    } else {
        format!("agents.{}.{key}", Value::String(alias.to_string()))
    }
}

/// The modes offered, with the agent's configured autonomy as the current one.
async fn modes(bridge: &Arc<Bridge>, alias: &str) -> SessionModeState {
    let params = ConfigGetParams {
        prop: Some(agent_prop(alias, "autonomy")),
    };
    let current = match bridge.call::<call::ConfigGet>(&params).await {
        Ok(ConfigGetResult::Prop { value, .. }) => value.as_str().and_then(Autonomy::parse),
        _ => None,
    }
    .unwrap_or(Autonomy::Supervised);
    let available = MODES
        .iter()
        .map(|(id, name, about)| SessionMode::new(id.as_str(), *name).description(*about))
        .collect();
    SessionModeState::new(current.as_str(), available)
}

/// `session/new` params for the daemon. `mcpServers` goes only when there are some, so
/// daemons without SPEC §16 accept the call; an editor's server the daemon cannot run (no
/// command to start) and a directory that is not UTF-8 are refused here.
fn daemon_new(
    alias: &str,
    cwd: &std::path::Path,
    mcp: &[McpServer],
) -> Result<SessionNewParams, ErrorObject> {
    let cwd = cwd.to_str().ok_or_else(|| {
        ErrorObject::invalid_params(format!("cwd {} is not UTF-8", cwd.display()))
    })?;
    let mcp_servers = if mcp.is_empty() {
        None
    } else {
        let servers = serde_json::from_value::<Vec<DaemonMcpServer>>(encode(&mcp)?)
            .map_err(|e| ErrorObject::invalid_params(format!("invalid params: mcpServers: {e}")))?;
        Some(servers)
    };
    Ok(SessionNewParams {
        mcp_servers,
        ..SessionNewParams::agent(alias).with_cwd(cwd)
    })
}

/// `session/list` params: every ACP session.
fn acp_sessions() -> ListParams {
    ListParams {
        mode: Some(Mode::Acp),
        ..Default::default()
    }
}

fn remember(bridge: &Bridge, session_id: &str, cwd: PathBuf) {
    bridge
        .sessions()
        .entry(session_id.to_string())
        .or_default()
        .cwd = cwd;
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
    encode(&NewSessionResponse::new(session_id).modes(modes))
}

/// The daemon's `session/list` entry of an ACP session, if it has one.
async fn find(
    bridge: &Arc<Bridge>,
    session_id: &str,
) -> Result<Option<SessionSummary>, ErrorObject> {
    let list = bridge.call::<call::SessionList>(&acp_sessions()).await?;
    Ok(list
        .sessions
        .into_iter()
        .find(|s| s.session_id == session_id))
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
    let Some(entry) = find(bridge, &session_id).await? else {
        return Err(daemon::session_not_found(&session_id));
    };
    let params =
        daemon_new(&entry.agent_alias, &req.cwd, &req.mcp_servers)?.with_id(session_id.clone());
    bridge.send::<call::SessionNew>(&params).await?;
    remember(bridge, &session_id, req.cwd);
    for row in transcript(bridge, &session_id).await? {
        if let Some(update) = updates::from_row(&row) {
            let note = SessionNotification::new(session_id.clone(), update);
            bridge
                .editor
                .notify(CLIENT_METHOD_NAMES.session_update, &note)
                .await;
        }
    }
    // After the transcript: a turn running now is replayed from its start, then followed.
    follow(bridge, &session_id).await;
    Ok(Value::Null)
}

/// Subscribes to the session's updates (SPEC §14), so the editor sees every turn of it,
/// whoever prompts it. A refusal (the session has the most watchers it may have) only
/// means other clients' turns are not shown: the editor's own prompts still are.
async fn follow(bridge: &Arc<Bridge>, session_id: &str) {
    let params = SubscribeParams {
        session_id: session_id.into(),
        mode: None,
        turn_id: None,
        after_event_seq: None,
    };
    if let Err(e) = bridge.send::<call::SessionSubscribe>(&params).await {
        tracing::warn!(
            "not following other clients' turns in {session_id}: {}",
            e.message
        );
    }
}

/// Milliseconds since the epoch as an RFC 3339 UTC time.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
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
    let mut all = bridge
        .call::<call::SessionList>(&acp_sessions())
        .await?
        .sessions;
    all.sort_by_key(|s| std::cmp::Reverse(s.last_activity));
    let fallback_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut sessions = Vec::new();
    for entry in all.iter().skip(start).take(LIST_PAGE) {
        let id = entry.session_id.as_str();
        let cwd = bridge
            .sessions()
            .get(id)
            .map(|s: &Session| s.cwd.clone())
            .unwrap_or_else(|| fallback_cwd.clone());
        sessions.push(
            SessionInfo::new(id.to_string(), cwd)
                .title(title(bridge, id).await)
                .updated_at(rfc3339(entry.last_activity)),
        );
    }
    let next = start + LIST_PAGE;
    let response = ListSessionsResponse::new(sessions)
        .next_cursor((next < all.len()).then(|| next.to_string()));
    encode(&response)
}

pub async fn set_mode(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let req: SetSessionModeRequest = decode(AGENT_METHOD_NAMES.session_set_mode, params)?;
    let session_id = req.session_id.0.to_string();
    let mode = req.mode_id.0.to_string();
    let Some(autonomy) = Autonomy::parse(&mode) else {
        return Err(ErrorObject::invalid_params(format!(
            "unknown mode {mode:?} (supervised, full, read_only)"
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn times_and_props() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199_000), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(agent_prop("default", "autonomy"), "agents.default.autonomy");
        assert_eq!(
            agent_prop("my.agent", "autonomy"),
            "agents.\"my.agent\".autonomy"
        );
    }

    #[test]
    fn mcp_servers_are_passed_on_only_when_there_are_some() {
        let cwd = std::path::Path::new("/w");
        let wire = |servers: &[McpServer]| encode(&daemon_new("a", cwd, servers).unwrap()).unwrap();
        assert_eq!(wire(&[]), json!({"agentAlias": "a", "cwd": "/w"}));
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "fs", "command": "/bin/mcp-fs", "args": ["--ro"], "env": [{"name": "K", "value": "v"}]}
        ]))
        .unwrap();
        assert_eq!(
            wire(&servers)["mcpServers"],
            json!([{"name": "fs", "command": "/bin/mcp-fs", "args": ["--ro"], "env": [{"name": "K", "value": "v"}]}])
        );
    }
}
