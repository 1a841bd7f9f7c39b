//! Bringing a session live beyond its worker (SPEC §16): its saved settings and token
//! totals are restored from the store before it takes a prompt, and its MCP servers (the
//! agent's `[agents.NAME.mcp_servers]` plus those `session/new` named) are started in the
//! background — nothing here waits for a server — in the sandbox of SPEC §21.2.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::sync::Arc;

use zeroclaw_agent::mcp::{McpServerConfig, McpSet, READY_TIMEOUT};
use zeroclaw_config::Config;
use zeroclaw_config::schema::valid_mcp_name;
use zeroclaw_protocol::session::McpServer;

use super::SessionManager;
use super::error::SessionError;
use super::live::{LiveSession, Overrides, UsageTotals};
use super::wire;

/// Servers one `session/new` may add.
pub const MAX_SESSION_SERVERS: usize = 16;

/// -32602 unless every server has a usable, distinct name and a command.
pub fn check_session_servers(servers: &[McpServer]) -> Result<(), SessionError> {
    if servers.len() > MAX_SESSION_SERVERS {
        return Err(SessionError::invalid(format!(
            "at most {MAX_SESSION_SERVERS} mcpServers per session"
        )));
    }
    for (i, s) in servers.iter().enumerate() {
        if !valid_mcp_name(&s.name) {
            return Err(SessionError::invalid(format!(
                "mcpServers[{i}].name {:?}: use 1-64 letters, digits, '-' or single '_'",
                s.name
            )));
        }
        if s.command.trim().is_empty() {
            return Err(SessionError::invalid(format!(
                "mcpServers[{i}].command is empty"
            )));
        }
        if servers[..i].iter().any(|o| o.name == s.name) {
            return Err(SessionError::invalid(format!(
                "mcpServers[{i}].name {:?} is used twice",
                s.name
            )));
        }
    }
    Ok(())
}

/// The servers of a session of agent `alias`: the agent's, then the session's own (a
/// session server replaces an agent server of the same name). Each starts in the sandbox
/// (SPEC §21.2) of the session's autonomy as it is now: a later `session/configure` does
/// not change what a running server may write.
pub fn servers_for(
    config: &Config,
    alias: &str,
    session: &[McpServer],
    live: &LiveSession,
) -> Vec<McpServerConfig> {
    let mut out: Vec<McpServerConfig> = Vec::new();
    let base = config
        .agents
        .get(alias)
        .map(|a| a.autonomy)
        .unwrap_or_default();
    let read_only = matches!(
        live.overrides().autonomy.unwrap_or(base),
        zeroclaw_config::Autonomy::ReadOnly | zeroclaw_config::Autonomy::Plan
    );
    let rules = super::sandbox::mcp_rules(config, alias, read_only, &live.cwd);
    let inherit = super::sandbox::settings(config, alias).env;
    if let Some(agent) = config.agents.get(alias) {
        for (name, m) in &agent.mcp_servers {
            if session.iter().any(|s| &s.name == name) {
                continue;
            }
            out.push(McpServerConfig {
                name: name.clone(),
                command: m.command.clone(),
                args: m.args.clone(),
                env: m.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: Some(live.cwd.clone()),
                sandbox: rules.clone(),
                inherit: inherit.clone(),
            });
        }
    }
    for s in session {
        out.push(McpServerConfig {
            name: s.name.clone(),
            command: s.command.clone(),
            args: s.args.clone(),
            env: s
                .env
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
            cwd: Some(live.cwd.clone()),
            sandbox: rules.clone(),
            inherit: inherit.clone(),
        });
    }
    out
}

impl SessionManager {
    /// Before `live` is registered: restores its saved settings and totals (`resumed`: a
    /// new row has none), and starts its MCP servers in the background.
    pub(crate) async fn prepare_live(
        &self,
        live: &Arc<LiveSession>,
        config: &Config,
        session_servers: &[McpServer],
        resumed: bool,
    ) -> Result<(), SessionError> {
        let saved = if resumed {
            self.store.settings(&live.key).await?
        } else {
            None
        };
        if let Some(saved) = saved {
            live.set_overrides(Overrides {
                autonomy: saved.autonomy.as_deref().and_then(wire::parse_autonomy),
                model: saved.model,
            });
            live.set_usage(UsageTotals {
                session_total: saved.total_tokens,
                context: saved.context_tokens,
            });
        }
        super::hooks::session_start(config, live);
        // SPEC §26: the instructions files as they are at start, for `session/status`
        // before the first turn (each turn reads them again if they changed).
        if config
            .agents
            .get(&live.agent_alias)
            .is_some_and(|a| a.instructions_files)
        {
            let user = super::instructions::user_dir_of(&live.owner, &self.config_dir);
            let cwd = live.cwd.clone();
            let load = move || super::instructions::Instructions::load(user.as_deref(), &cwd, None);
            if let Ok(found) = tokio::task::spawn_blocking(load).await {
                live.set_instructions(found.files);
            }
        }
        let servers = servers_for(config, &live.agent_alias, session_servers, live);
        if !servers.is_empty() {
            live.set_mcp(McpSet::start(servers, READY_TIMEOUT));
        }
        Ok(())
    }
}
