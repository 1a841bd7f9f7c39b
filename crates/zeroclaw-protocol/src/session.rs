//! Params and results of the session lifecycle methods (SPEC §7.1, §17): `session/new`,
//! `session/prompt`, `session/cancel`, `session/approve`, `session/close`, `session/kill`,
//! `session/delete`, `session/list`, `session/messages`.
//!
//! Unknown params fields are ignored here, as the daemon does for session methods.

use crate::ids::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::FileInput;
use crate::types::{Decision, Mode, Outcome, Role};
use crate::unchecked::Unchecked;

/// Params that only name a session: `session/cancel`, `session/close`, `session/kill`,
/// `session/delete`, `session/unsubscribe`, `session/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    /// Without it: the live session with that id (the ACP one if both or none are live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
}

/// An MCP tool server added to one session (the ACP shape; admin principals only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<EnvVar>,
}

/// One environment variable of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// `session/new` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNewParams {
    #[serde(alias = "agent_alias")]
    pub agent_alias: String,
    /// Resume (or create) the session with this id.
    #[serde(default, alias = "session_id", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Where `bash` runs; an existing directory (default: the agent's workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Default `acp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(
        default,
        alias = "mcp_servers",
        skip_serializing_if = "Option::is_none"
    )]
    pub mcp_servers: Option<Vec<McpServer>>,
}

impl SessionNewParams {
    /// Params for a new session of agent `alias` (every other field absent).
    pub fn agent(alias: impl Into<String>) -> Self {
        SessionNewParams {
            agent_alias: alias.into(),
            ..Default::default()
        }
    }

    /// Resume (or create) the session with this id.
    pub fn with_id(mut self, session_id: impl Into<SessionId>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Where `bash` runs.
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }
}

/// `session/new` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNewResult {
    pub session_id: SessionId,
    pub agent_alias: String,
    pub mode: Mode,
    pub message_count: u64,
    /// The agent's workspace (absolute): uploads go there.
    pub workspace_dir: String,
    /// An existing session was resumed with its history.
    pub resumed: bool,
}

/// A prompt: plain text, or ACP-style content blocks whose `text` parts are joined. Any
/// JSON value with a string `text` counts as a block (its `type` is not checked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Prompt {
    Text(String),
    Blocks(Vec<TextBlock>),
}

impl Prompt {
    /// The text the turn runs with: the blocks' texts joined.
    pub fn into_text(self) -> String {
        match self {
            Prompt::Text(text) => text,
            Prompt::Blocks(blocks) => blocks.into_iter().map(|b| b.text).collect(),
        }
    }
}

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(text) => Ok(Prompt::Text(text)),
            Value::Array(blocks) => blocks
                .iter()
                .map(|b| match b.get("text").and_then(Value::as_str) {
                    Some(text) => Ok(TextBlock {
                        kind: b.get("type").and_then(Value::as_str).map(str::to_owned),
                        text: text.to_owned(),
                    }),
                    None => Err(D::Error::custom(
                        "prompt blocks must be {type:\"text\", text}",
                    )),
                })
                .collect::<Result<_, _>>()
                .map(Prompt::Blocks),
            _ => Err(D::Error::custom("prompt must be a string")),
        }
    }
}

/// A text content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextBlock {
    /// `text`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub text: String,
}

/// `session/prompt` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPromptParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    pub prompt: Prompt,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Files stored as by `file/attach`; their markers follow the prompt, one per line.
    /// Each is checked once the session is known, so its error can name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<Unchecked<FileInput>>>,
}

/// Tokens a whole turn used (`session/prompt` result and `turn_complete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// `session/prompt` result: how the turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnResult {
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub outcome: Outcome,
    /// Completed: the final text. Cancelled: the partial text. Failed: the error message.
    /// At most 1 MiB; see `truncated`.
    pub content: String,
    /// `content` was cut at 1 MiB (the streamed chunks and the transcript keep it whole).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TurnUsage>,
    /// Why a cancelled turn ended, when not by `session/cancel`: `budget` (SPEC §24.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `session/cancel` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResult {
    pub session_id: SessionId,
    pub cancelled: bool,
}

/// `session/approve` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApproveParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(alias = "request_id")]
    pub request_id: String,
    pub decision: Decision,
    /// With `reject_with_edit`: the arguments the tool runs with instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<Value>,
    /// With `raise` (SPEC §24.2): how much the budget grows, in its unit (tokens or US
    /// dollars); required and > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raise_by: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
}

/// `session/approve` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApproveResult {
    pub session_id: SessionId,
    pub request_id: String,
    pub acknowledged: bool,
}

/// `session/close` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseResult {
    pub session_id: SessionId,
    pub closed: bool,
}

/// `session/kill` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KillResult {
    pub session_id: SessionId,
    pub killed: bool,
}

/// `session/delete` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteResult {
    pub session_id: SessionId,
    pub deleted: bool,
}

/// `session/list` params (SPEC §17: paged, newest activity first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Default and maximum 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only sessions whose `title` contains this, ignoring case (SPEC §18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// Only sessions working in this directory (SPEC §22): absolute, compared once
    /// resolved (symlinks followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One `session/list` entry. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: SessionId,
    pub mode: Mode,
    pub agent_alias: String,
    pub created_at: i64,
    pub last_activity: i64,
    pub message_count: u64,
    pub live: bool,
    /// `rpc` for sessions made over the daemon's endpoint.
    pub interaction_surface: String,
    /// The running turn, if any (SPEC §14).
    #[serde(default)]
    pub active_turn_id: Option<TurnId>,
    /// Subscribed connections (SPEC §14).
    #[serde(default)]
    pub subscribers: u32,
    /// The title set with `session/set_title`, else the first line of the first prompt cut
    /// to 80 characters; null when there is neither (SPEC §18).
    #[serde(default)]
    pub title: Option<String>,
    /// The session this one was forked from (SPEC §18).
    #[serde(default)]
    pub forked_from: Option<crate::history::ForkedFrom>,
    /// Where its tools run (SPEC §22); null for a session made before it was recorded.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `session/list` result. `nextCursor` is null on the last page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    pub sessions: Vec<SessionSummary>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// `session/messages` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessagesParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The last `limit` rows before `beforeSeq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Exclusive upper bound on `seq`.
    #[serde(default, alias = "before_seq", skip_serializing_if = "Option::is_none")]
    pub before_seq: Option<i64>,
    /// Also list the rows a rewind left behind, each with `rewound: true` (SPEC §18).
    #[serde(
        default,
        alias = "include_rewound",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_rewound: Option<bool>,
}

/// One transcript row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageRow {
    pub seq: i64,
    pub role: Role,
    /// At most 1 MiB; see `truncated`. Tool rows hold compact JSON.
    pub content: String,
    pub turn_id: Option<TurnId>,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// A rewind went back to before this row's turn (listed only with `includeRewound`,
    /// SPEC §18).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewound: bool,
}

/// `session/messages` result: rows in ascending `seq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessagesResult {
    pub session_id: SessionId,
    pub messages: Vec<MessageRow>,
    /// Every row of the session.
    pub total: u64,
    /// Rows older than this page remain (the page was cut to fit one frame or `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompt_is_text_or_blocks_with_text() {
        let p = |v: Value| serde_json::from_value::<Prompt>(v).map(Prompt::into_text);
        assert_eq!(p(json!("hi")).expect("text"), "hi");
        let blocks = json!([{"type": "text", "text": "a"}, {"text": "b", "type": 5}]);
        assert_eq!(p(blocks).expect("blocks"), "ab");
        assert_eq!(p(json!([])).expect("none"), "");
        let e = p(json!([{"type": "text"}])).expect_err("no text");
        assert!(e.to_string().contains("prompt blocks must be"), "{e}");
        let e = p(json!(5)).expect_err("number");
        assert!(e.to_string().contains("prompt must be a string"), "{e}");
    }
}
