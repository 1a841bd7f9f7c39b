//! The plain data of MCP tool servers (SPEC §16): how one is started, the tools it offers
//! and what `session/status` shows of it, with the naming and timing constants. Shared by
//! the set ([`super::McpSet`]) and each server's task ([`super::server`]); imports neither.

use std::path::PathBuf;
use std::time::Duration;

use crate::provider::ToolSchema;
use crate::sandbox::Rules;

/// Separates the server's name from its tool's in the name offered to the model.
pub const SEPARATOR: &str = "__";
/// How long a server has to answer `initialize` and `tools/list`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How to start one stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// The server's own variables, added to what it inherits.
    pub env: Vec<(String, String)>,
    /// Names of the daemon's variables it inherits beyond the short list (the agent's `env`
    /// allowlist, SPEC §17.2; [`crate::sandbox::env`]).
    pub inherit: Vec<String>,
    /// Working directory of the server (the session's cwd).
    pub cwd: Option<PathBuf>,
    /// The sandbox rules it starts under (SPEC §21.2), with a private temporary directory
    /// of its own; `None` = unconfined.
    pub sandbox: Option<Rules>,
}

/// A tool of a ready server, as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `SERVER__TOOL`.
    pub schema: ToolSchema,
    /// The server's own name of the tool.
    pub tool: String,
    /// Annotated `readOnlyHint: true`: runs without approval under supervised autonomy.
    pub read_only: bool,
}

/// What `session/status` shows of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerStatus {
    pub name: String,
    /// `starting`, `ready`, `failed` or `stopped`.
    pub state: &'static str,
    /// The names offered to the model (`SERVER__TOOL`) while ready.
    pub tools: Vec<String>,
    pub error: Option<String>,
    /// The server's process (group) id, once spawned.
    pub pid: Option<u32>,
}
