//! The sandbox settings of a session's agent (SPEC §21.2), read from the configuration:
//! what the turn's `bash` and the session's MCP servers are confined by, and what
//! `session/status` shows. The rules themselves live in `zeroclaw_agent::sandbox`.
//!
//! Layers: a leaf (the configuration only).

use std::path::{Path, PathBuf};

use zeroclaw_agent::sandbox::{self, Plan, Rules, SandboxMode, SandboxSettings};
use zeroclaw_config::{Config, SandboxMode as ConfigMode};

/// The sandbox settings of agent `alias` (the defaults for an agent no longer configured).
pub(crate) fn settings(config: &Config, alias: &str) -> SandboxSettings {
    let Some(agent) = config.agents.get(alias) else {
        return SandboxSettings::default();
    };
    SandboxSettings {
        mode: match agent.sandbox {
            ConfigMode::Auto => SandboxMode::Auto,
            ConfigMode::Off => SandboxMode::Off,
        },
        writable: agent.sandbox_writable.iter().map(PathBuf::from).collect(),
        network: agent.sandbox_network,
        deny_read: agent
            .sandbox_deny_read
            .iter()
            .filter_map(|p| expand_home(p))
            .collect(),
        env: agent.env.clone(),
    }
}

/// `~/…` under the daemon's `HOME` (an entry is dropped, and logged, when `HOME` is unset);
/// any other path as it is.
fn expand_home(path: &str) -> Option<PathBuf> {
    let Some(rest) = path.strip_prefix("~/") else {
        return Some(PathBuf::from(path));
    };
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Some(PathBuf::from(home).join(rest)),
        None => {
            tracing::warn!("sandbox_deny_read: {path} is skipped: HOME is not set");
            None
        }
    }
}

/// `session/status`'s `sandbox`: `landlock vN`, `unavailable` or `off`.
pub(crate) fn status(config: &Config, alias: &str) -> String {
    sandbox::status(&settings(config, alias))
}

/// The rules an MCP server of a session in `cwd` starts under, `read_only` or not; `None`
/// = unconfined (the sandbox is off or unavailable: in `read_only` such a server's tools
/// not annotated read-only are refused anyway).
pub(crate) fn mcp_rules(
    config: &Config,
    alias: &str,
    read_only: bool,
    cwd: &Path,
) -> Option<Rules> {
    match sandbox::plan(&settings(config, alias), read_only, cwd) {
        Plan::Confine(rules) => Some(rules),
        Plan::Unconfined | Plan::Refuse(_) => None,
    }
}
