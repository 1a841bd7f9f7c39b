//! `session/status` (SPEC §16): one live session as it is now — agent, autonomy and model
//! in force, running turn, queue, subscribers, token counts, MCP servers and the sandbox.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::McpState;
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::stream::{
    BackgroundShell, InstructionsFile, McpServerStatus, SessionStatusResult, SessionUsage,
    ShellOutputResult,
};
use zeroclaw_store::Mode;

use super::agent::effective_model;
use super::configure::effective_autonomy;
use super::error::SessionError;
use super::{SessionManager, check_owner};

impl SessionManager {
    /// `session/status` of a live session the caller may see.
    pub fn status(
        &self,
        principal: &Principal,
        config: &Config,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<SessionStatusResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self
            .get(&key)
            .ok_or_else(|| SessionError::not_found(format!("no live session {session_id}")))?;
        check_owner(principal, &live.owner, session_id)?;
        let overrides = live.overrides();
        let usage = live.usage();
        let window = config
            .agents
            .get(&live.agent_alias)
            .map_or(0, |a| a.max_context_tokens);
        let mcp_servers = live
            .mcp()
            .map(|m| m.status())
            .unwrap_or_default()
            .into_iter()
            .map(|s| McpServerStatus {
                name: s.name,
                state: McpState::parse(s.state).unwrap_or(McpState::Failed),
                tools: s.tools,
                error: s.error,
                pid: s.pid,
            })
            .collect();
        Ok(SessionStatusResult {
            session_id: session_id.clone(),
            mode: live.wire_mode(),
            agent_alias: live.agent_alias.clone(),
            autonomy: effective_autonomy(config, &live, &overrides),
            model: effective_model(config, &live.agent_alias, overrides.model.as_deref()),
            active_turn_id: live.running_turn(),
            queued_prompts: live.queued_prompts() as u64,
            subscribers: live.subscribers() as u64,
            usage: SessionUsage {
                session_total_tokens: usage.session_total,
                context_tokens: usage.context,
                context_window: window as u64,
                cost_usd: live.cost_usd(),
            },
            mcp_servers,
            replay_bytes: live.replay_bytes() as u64,
            sandbox: super::sandbox::status(config, &live.agent_alias),
            cwd: live.cwd.display().to_string(),
            provider: provider_kind(config, &live.agent_alias),
            instructions: live
                .instructions()
                .into_iter()
                .map(|(path, bytes)| InstructionsFile {
                    path: path.display().to_string(),
                    bytes,
                })
                .collect(),
            shells: live.shells.list().into_iter().map(wire_shell).collect(),
        })
    }

    /// `session/shell_output` (SPEC §26): a background process of a live session the
    /// caller may see, with the output it keeps; an unknown `shellId` is -32602.
    pub fn shell_output(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
        shell_id: &str,
    ) -> Result<ShellOutputResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self
            .get(&key)
            .ok_or_else(|| SessionError::not_found(format!("no live session {session_id}")))?;
        check_owner(principal, &live.owner, session_id)?;
        let seen = live.shells.peek(shell_id).ok_or_else(|| {
            SessionError::invalid(format!(
                "shellId: no background process `{shell_id}` in session {session_id}"
            ))
        })?;
        Ok(ShellOutputResult {
            shell: wire_shell(seen.info),
            output: seen.output,
            dropped_bytes: seen.dropped,
        })
    }
}

fn wire_shell(s: zeroclaw_agent::tools::background::ShellInfo) -> BackgroundShell {
    BackgroundShell {
        shell_id: s.shell_id,
        command: s.command,
        started_at: s.started_at,
        pid: s.pid,
        running: s.running,
        exit_code: s.exit_code,
    }
}

/// The kind of agent `alias`'s provider as the config spells it (`echo`, `openai`, …);
/// empty when the agent or its provider is gone from the config.
fn provider_kind(config: &Config, alias: &str) -> String {
    config
        .agents
        .get(alias)
        .and_then(|a| config.providers.get(&a.provider))
        .and_then(|p| serde_json::to_value(p.kind).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
