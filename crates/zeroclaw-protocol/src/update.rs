//! What the daemon sends unasked: the `session/update` notification (SPEC §7.2, §14, §16)
//! with one [`UpdateKind`] per event type, and the `elicitation/create` request (§7.4).
//!
//! An update is one flat object: the envelope (`sessionId`, `turnId`, `eventSeq`,
//! `replay`) beside the event's `type` and fields. `turn_complete` and `replay_gap` name
//! their turn with the envelope's `turnId`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::TurnUsage;
use crate::types::{Decision, ElicitationAction, Outcome, ResolvedReason};

/// The `type` of a piece of the agent's answer text.
pub const AGENT_MESSAGE_CHUNK: &str = "agent_message_chunk";
/// The `type` of a turn's last event (the stream marks the turn done when it is sent).
pub const TURN_COMPLETE: &str = "turn_complete";
/// The `type` of the marker a replay starts with when events before its cursor are gone.
pub const REPLAY_GAP: &str = "replay_gap";

/// Every event `type`, in the order of [`UpdateKind`]'s variants.
pub const UPDATE_TYPES: &[&str] = &[
    AGENT_MESSAGE_CHUNK,
    "agent_thought_chunk",
    "tool_call",
    "tool_result",
    "approval_request",
    "approval_resolved",
    "history_trimmed",
    "usage",
    TURN_COMPLETE,
    REPLAY_GAP,
];

/// `session/update` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdate {
    pub session_id: String,
    /// The turn the event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// 1, 2, 3 … per turn in emission order, no gaps (absent on `replay_gap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    /// Sent again from the replay buffer after `session/subscribe`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    #[serde(flatten)]
    pub kind: UpdateKind,
}

/// The event an update reports, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum UpdateKind {
    /// Streamed answer text.
    AgentMessageChunk { text: String },
    /// Streamed reasoning text.
    AgentThoughtChunk { text: String },
    /// The model asked for a tool.
    ToolCall {
        tool_call_id: String,
        name: String,
        raw_input: Value,
    },
    /// A tool finished (or was refused).
    ToolResult {
        tool_call_id: String,
        name: String,
        raw_output: Value,
    },
    /// A tool waits for `session/approve`.
    ApprovalRequest {
        request_id: String,
        tool_name: String,
        arguments_summary: String,
        timeout_secs: u64,
    },
    /// An approval request was settled, here or elsewhere.
    ApprovalResolved {
        request_id: String,
        decision: Decision,
        reason: ResolvedReason,
    },
    /// Old turns left the model's context (the transcript keeps them).
    HistoryTrimmed {
        dropped_messages: u64,
        kept_messages: u64,
        checkpoint_seq: i64,
        /// `max_context_tokens`.
        reason: String,
    },
    /// Tokens of one provider call, and the session's running totals.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        session_total_tokens: u64,
        context_tokens: u64,
        context_window: u64,
        /// The daemon counted; the provider reported nothing.
        estimated: bool,
    },
    /// The turn's last event, sent just before the prompt's answer.
    TurnComplete {
        outcome: Outcome,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TurnUsage>,
    },
    /// A replay could not start at the cursor: events before `firstEventSeq` are gone.
    ReplayGap { first_event_seq: u64 },
}

impl UpdateKind {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        let i = match self {
            UpdateKind::AgentMessageChunk { .. } => 0,
            UpdateKind::AgentThoughtChunk { .. } => 1,
            UpdateKind::ToolCall { .. } => 2,
            UpdateKind::ToolResult { .. } => 3,
            UpdateKind::ApprovalRequest { .. } => 4,
            UpdateKind::ApprovalResolved { .. } => 5,
            UpdateKind::HistoryTrimmed { .. } => 6,
            UpdateKind::Usage { .. } => 7,
            UpdateKind::TurnComplete { .. } => 8,
            UpdateKind::ReplayGap { .. } => 9,
        };
        UPDATE_TYPES[i]
    }
}

/// `elicitation/create` params: a question for the user (the `ask_user` tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationParams {
    pub session_id: String,
    /// `form`.
    pub mode: String,
    pub message: String,
    /// A JSON Schema of the answer: `answer` (free text), `choice` or `choices`.
    pub requested_schema: Value,
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ElicitationResult {
    pub action: ElicitationAction,
    /// With `accept`: the requested properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names_match_serde() {
        let kinds = [
            UpdateKind::AgentMessageChunk { text: "a".into() },
            UpdateKind::ReplayGap { first_event_seq: 3 },
            UpdateKind::Usage {
                input_tokens: 1,
                output_tokens: 2,
                session_total_tokens: 3,
                context_tokens: 4,
                context_window: 5,
                estimated: true,
            },
        ];
        for k in kinds {
            let v = serde_json::to_value(&k).unwrap();
            assert_eq!(v["type"], json!(k.type_name()));
        }
    }
}
