//! `session/status` (SPEC §16): one live session as it is now — agent, autonomy and model
//! in force, running turn, queue, subscribers, token counts and MCP servers.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use serde_json::{Value, json};
use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
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
        session_id: &str,
        mode: Option<Mode>,
    ) -> Result<Value, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self.get(&key).ok_or_else(|| {
            SessionError::session_not_found(format!("no live session {session_id}"))
        })?;
        check_owner(principal, &live.owner, session_id)?;
        let overrides = live.overrides();
        let usage = live.usage();
        let window = config
            .agents
            .get(&live.agent_alias)
            .map_or(0, |a| a.max_context_tokens);
        let servers: Vec<Value> = live
            .mcp()
            .map(|m| m.status())
            .unwrap_or_default()
            .into_iter()
            .map(|s| {
                let mut v = json!({"name": s.name, "state": s.state, "tools": s.tools});
                if let Some(e) = s.error {
                    v["error"] = Value::String(e);
                }
                if let Some(pid) = s.pid {
                    v["pid"] = json!(pid);
                }
                v
            })
            .collect();
        Ok(json!({
            "sessionId": session_id,
            "mode": live.key.mode.as_str(),
            "agentAlias": live.agent_alias,
            "autonomy": effective_autonomy(config, &live, &overrides),
            "model": effective_model(config, &live.agent_alias, overrides.model.as_deref()),
            "activeTurnId": live.running_turn(),
            "queuedPrompts": live.queued_prompts(),
            "subscribers": live.subscribers(),
            "usage": {
                "sessionTotalTokens": usage.session_total,
                "contextTokens": usage.context,
                "contextWindow": window,
            },
            "mcpServers": servers,
        }))
    }
}
