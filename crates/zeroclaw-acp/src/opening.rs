//! What opening a session takes, shared by the ACP methods that open one (`session/new`,
//! `session/load`, `session/resume`) and those that describe one: the daemon's params for
//! it, the autonomy levels offered as modes, bringing a listed session back, following it
//! (daemon `session/subscribe`), and the time format of `updatedAt`.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{McpServer, SessionMode, SessionModeState};
use serde_json::Value;
use zeroclaw_client::Mode;
use zeroclaw_client::protocol::config::{ConfigGetParams, ConfigGetResult};
use zeroclaw_client::protocol::session::{
    ListParams, McpServer as DaemonMcpServer, SessionNewParams, SessionSummary,
};
use zeroclaw_client::protocol::stream::SubscribeParams;
use zeroclaw_client::protocol::{Autonomy, call};
use zeroclaw_rpc::ErrorObject;

use super::bridge::Bridge;
use super::daemon;

pub(crate) fn encode<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// The autonomy levels, offered as ACP session modes (the mode id is the wire spelling).
pub(crate) const MODES: [(Autonomy, &str, &str); 4] = [
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
    (
        Autonomy::Plan,
        "Plan",
        "nothing is changed; the agent investigates and proposes a plan (SPEC §26)",
    ),
];

/// A config property under an agent, quoting the alias when it needs it.
pub(crate) fn agent_prop(alias: &str, key: &str) -> String {
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
pub(crate) async fn modes(bridge: &Arc<Bridge>, alias: &str) -> SessionModeState {
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
pub(crate) fn daemon_new(
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
pub(crate) fn acp_sessions() -> ListParams {
    ListParams {
        mode: Some(Mode::Acp),
        ..Default::default()
    }
}

pub(crate) fn remember(bridge: &Bridge, session_id: &str, cwd: PathBuf) {
    bridge
        .sessions()
        .entry(session_id.to_string())
        .or_default()
        .cwd = cwd;
}

/// The daemon's `session/list` entry of an ACP session, if it has one.
pub(crate) async fn find(
    bridge: &Arc<Bridge>,
    session_id: &str,
) -> Result<Option<SessionSummary>, ErrorObject> {
    let list = bridge.call::<call::SessionList>(&acp_sessions()).await?;
    Ok(list
        .sessions
        .into_iter()
        .find(|s| s.session_id == session_id))
}

/// Brings a listed ACP session back to life in the daemon (daemon `session/new` with its
/// id) and remembers it as opened by the editor; its agent alias is returned.
pub(crate) async fn reopen(
    bridge: &Arc<Bridge>,
    session_id: &str,
    cwd: &std::path::Path,
    mcp: &[McpServer],
) -> Result<String, ErrorObject> {
    let Some(entry) = find(bridge, session_id).await? else {
        return Err(daemon::session_not_found(session_id));
    };
    let params = daemon_new(&entry.agent_alias, cwd, mcp)?.with_id(session_id.to_owned());
    bridge.send::<call::SessionNew>(&params).await?;
    remember(bridge, session_id, cwd.to_path_buf());
    Ok(entry.agent_alias)
}

/// Subscribes to the session's updates (SPEC §14), so the editor sees every turn of it,
/// whoever prompts it. A refusal (the session has the most watchers it may have) only
/// means other clients' turns are not shown: the editor's own prompts still are.
pub(crate) async fn follow(bridge: &Arc<Bridge>, session_id: &str) {
    let params = SubscribeParams {
        session_id: session_id.to_owned().into(),
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
