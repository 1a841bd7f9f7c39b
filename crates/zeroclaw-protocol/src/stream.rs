//! Params and results of the methods about watching and tuning a live session:
//! `session/subscribe`, `session/unsubscribe` (SPEC §14), `session/status` and
//! `session/configure` (§16).

use crate::ids::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{Autonomy, McpState, Mode};

/// `session/subscribe` params: the cursor is the last event the client saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, alias = "turn_id", skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// Default 0.
    #[serde(
        default,
        alias = "after_event_seq",
        skip_serializing_if = "Option::is_none"
    )]
    pub after_event_seq: Option<u64>,
}

/// `session/subscribe` result; the replay follows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    pub session_id: SessionId,
    pub subscribed: bool,
    pub active_turn_id: Option<TurnId>,
    pub last_transcript_seq: i64,
    /// Approval requests waiting for an answer.
    pub pending_approvals: Vec<String>,
}

/// `session/unsubscribe` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnsubscribeResult {
    pub session_id: SessionId,
    pub subscribed: bool,
}

/// `session/configure` params: changes the live session only, from its next provider call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigureParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `session/configure` result: the settings now in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigureResult {
    pub session_id: SessionId,
    pub autonomy: Autonomy,
    pub model: String,
}

/// A session's token counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsage {
    pub session_total_tokens: u64,
    pub context_tokens: u64,
    pub context_window: u64,
    /// The cost of the session's priced calls since it was loaded, in US dollars (SPEC
    /// §24.2); absent when none was priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// One MCP tool server of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerStatus {
    pub name: String,
    pub state: McpState,
    /// Tool names offered to the model (`SERVER__TOOL`) while ready.
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The server's process (group) id, once spawned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// One instructions file in a session's system prompt (SPEC §26).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InstructionsFile {
    pub path: String,
    /// Bytes of it in the system prompt (less than its length when the 64 KiB cut it).
    pub bytes: u64,
}

/// One background process of a session (SPEC §26), as `session/status` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundShell {
    pub shell_id: String,
    pub command: String,
    /// Unix ms.
    pub started_at: i64,
    /// Its process (and process group) id.
    pub pid: u32,
    pub running: bool,
    /// Once it exited (absent while it runs, or when a signal ended it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// `session/shell_output` params (SPEC §26): one background process of a live session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShellOutputParams {
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub shell_id: String,
}

/// `session/shell_output` result: the process as `session/status` lists it and the
/// output it keeps (its newest 64 KiB, stdout and stderr together). Reading it here does
/// not move the agent's `bash_output` position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShellOutputResult {
    #[serde(flatten)]
    pub shell: BackgroundShell,
    pub output: String,
    /// Bytes printed before the kept output.
    pub dropped_bytes: u64,
}

/// `session/status` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatusResult {
    pub session_id: SessionId,
    pub mode: Mode,
    pub agent_alias: String,
    pub autonomy: Autonomy,
    pub model: String,
    pub active_turn_id: Option<TurnId>,
    pub queued_prompts: u64,
    pub subscribers: u64,
    pub usage: SessionUsage,
    pub mcp_servers: Vec<McpServerStatus>,
    /// Bytes of serialized updates held for replay now (at most 8 MiB, SPEC §14).
    #[serde(default)]
    pub replay_bytes: u64,
    /// What confines the session's tools (SPEC §21.2): `landlock vN`, `unavailable` or
    /// `off`.
    #[serde(default)]
    pub sandbox: String,
    /// Where its tools run (SPEC §22).
    #[serde(default)]
    pub cwd: String,
    /// The kind of the agent's provider (`echo`, `openai`, …; SPEC §22 banner).
    #[serde(default)]
    pub provider: String,
    /// The instructions files as read at session start and again at each turn, outermost
    /// first (SPEC §26).
    #[serde(default)]
    pub instructions: Vec<InstructionsFile>,
    /// The background processes, oldest first (SPEC §26).
    #[serde(default)]
    pub shells: Vec<BackgroundShell>,
}
