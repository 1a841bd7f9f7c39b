//! What the daemon sends unasked: the `session/update` notification (SPEC §7.2, §14, §16, §18)
//! with one [`UpdateKind`] per event type, and the `elicitation/create` request (§7.4).
//!
//! An update is one flat object: the envelope (`sessionId`, `turnId`, `eventSeq`,
//! `replay`) beside the event's `type` and fields. `turn_complete` and `replay_gap` name
//! their turn with the envelope's `turnId`.

use crate::ids::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::TurnUsage;
use crate::types::{DecidedBy, Decision, ElicitationAction, Outcome, ResolvedReason};

/// Declares [`UpdateKind`] (each event with its fields) and [`UpdateType`] (the event
/// types alone) from one table, so each wire `type` is written once: it is both the serde
/// tag of its [`UpdateKind`] variant and what [`UpdateType::as_str`] returns.
macro_rules! update_kinds {
    ($(
        $(#[$vm:meta])*
        $variant:ident = $wire:literal {
            $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)?
        }
    ),+ $(,)?) => {
        /// The event an update reports, tagged by `type`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", rename_all_fields = "camelCase")]
        pub enum UpdateKind {
            $(
                $(#[$vm])*
                #[serde(rename = $wire)]
                $variant { $($(#[$fm])* $field: $ty),* },
            )+
        }

        /// The `type` of a `session/update` event, without its fields.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UpdateType {
            $($(#[$vm])* $variant,)+
        }

        impl UpdateType {
            /// Every event type, in declaration order.
            pub const ALL: &'static [UpdateType] = &[$(UpdateType::$variant,)+];

            /// The wire `type`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(UpdateType::$variant => $wire,)+
                }
            }

            /// The event type spelled `name` on the wire; `None` for one this vocabulary
            /// does not know (a newer daemon's event).
            pub fn from_wire(name: &str) -> Option<UpdateType> {
                match name {
                    $($wire => Some(UpdateType::$variant),)+
                    _ => None,
                }
            }
        }

        impl UpdateKind {
            /// The event type of this update.
            pub fn update_type(&self) -> UpdateType {
                match self {
                    $(UpdateKind::$variant { .. } => UpdateType::$variant,)+
                }
            }
        }
    };
}

update_kinds! {
    /// The turn's prompt, whoever sent it: the first event of every prompted turn (SPEC §18).
    UserMessage = "user_message" {
        /// The prompt as sent, without its attachments' markers; at most 1 MiB (see
        /// `truncated`).
        text: String,
        /// Files sent with the prompt (their markers follow `text` in the model's prompt).
        attachments: Vec<PromptAttachment>,
        /// The sender's principal label: `operator`, `user:<name>`.
        prompted_by: String,
        /// `text` was cut at 1 MiB (the transcript keeps the whole prompt).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// Streamed answer text.
    AgentMessageChunk = "agent_message_chunk" { text: String },
    /// Streamed reasoning text.
    AgentThoughtChunk = "agent_thought_chunk" { text: String },
    /// The model asked for a tool.
    ToolCall = "tool_call" {
        tool_call_id: String,
        name: String,
        raw_input: Value,
        /// When the call was made, in milliseconds since the Unix epoch (SPEC §22: a face
        /// shows how long a tool has been running).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at: Option<i64>,
    },
    /// A tool finished (or was refused).
    ToolResult = "tool_result" {
        tool_call_id: String,
        name: String,
        raw_output: Value,
    },
    /// A tool waits for `session/approve`.
    ApprovalRequest = "approval_request" {
        request_id: String,
        tool_name: String,
        arguments_summary: String,
        timeout_secs: u64,
    },
    /// An approval request was settled, here or elsewhere.
    ApprovalResolved = "approval_resolved" {
        request_id: String,
        decision: Decision,
        reason: ResolvedReason,
        /// Who answered (SPEC §22): absent when nobody did (timeout, cancel).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<DecidedBy>,
    },
    /// Old turns left the model's context (the transcript keeps them).
    HistoryTrimmed = "history_trimmed" {
        dropped_messages: u64,
        kept_messages: u64,
        checkpoint_seq: i64,
        /// `max_context_tokens`.
        reason: String,
    },
    /// The retained context was compacted (SPEC §18): sent only after the new snapshot
    /// was committed.
    ContextCompacted = "context_compacted" {
        tokens_before: u64,
        tokens_after: u64,
        summarized_messages: u64,
        summary: String,
    },
    /// Tokens of one provider call, and the session's running totals.
    Usage = "usage" {
        input_tokens: u64,
        output_tokens: u64,
        session_total_tokens: u64,
        context_tokens: u64,
        context_window: u64,
        /// The daemon counted; the provider reported nothing.
        estimated: bool,
        /// Input tokens read from the provider's prompt cache, when it reports them
        /// (SPEC §19).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_read_tokens: Option<u64>,
        /// Input tokens written to the provider's prompt cache, when it reports them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_tokens: Option<u64>,
        /// The call's cost in US dollars, when `[pricing]` names the model (SPEC §24.2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// A provider call failed before streaming and is tried again after `delaySecs`
    /// (SPEC §19).
    ProviderRetry = "provider_retry" {
        /// The retry's number, from 1.
        attempt: u32,
        delay_secs: f64,
        reason: String,
    },
    /// A hook ran (SPEC §21.1): its event, command, outcome (`ok`, `deny`, `allow`,
    /// `continue`, `error`) and how long it took.
    Hook = "hook" {
        event: String,
        command: String,
        outcome: String,
        duration_ms: u64,
        /// A deny's or continue's reason, or what went wrong.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The turn's last event, sent just before the prompt's answer.
    TurnComplete = "turn_complete" {
        outcome: Outcome,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TurnUsage>,
        /// Why a cancelled turn ended, when not by `session/cancel`: `budget` (SPEC §24.2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A replay could not start at the cursor: events before `firstEventSeq` are gone.
    ReplayGap = "replay_gap" { first_event_seq: u64 },
    /// `session/rewind` went back to just before turn `toTurnId` (SPEC §18); the first
    /// event of the rewind's own turn, sent after the rewind committed.
    SessionRewound = "session_rewound" {
        to_turn_id: String,
        rewound_turns: Vec<String>,
        restored_files: Vec<String>,
    },
    /// A piece of a running tool's output (`bash`; SPEC §22 "Live tool output"): sent at
    /// most every 100 ms or 4 KiB per stream, in all no more than the tool's output limit
    /// (the result says how much more there was).
    ToolOutputChunk = "tool_output_chunk" {
        tool_call_id: String,
        stream: ToolStream,
        text: String,
    },
    /// The session's title was set (`session/set_title`, SPEC §18/§25): `updatedAt` in ms
    /// since the Unix epoch. Sent in the running turn, else after the last one's end.
    SessionInfo = "session_info" {
        title: String,
        updated_at: i64,
    },
    /// An `ask_user` question (`elicitation/create`, asked of every connection of the
    /// owner that can answer) was settled: answered by one of them, timed out, or its
    /// turn went away (SPEC §22 "Approvals reach every face"). A face still showing the
    /// question with this `requestId` closes it.
    AskUserResolved = "ask_user_resolved" {
        request_id: String,
        reason: ResolvedReason,
        /// Who answered: absent when nobody did (timeout, cancel).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<DecidedBy>,
    },
    /// The turn paused before a provider call that would pass a budget (SPEC §24.2): it
    /// waits for `session/approve` with `raise` (and `raiseBy`) or `stop`, at most
    /// `timeoutSecs`. `budget`: `turn_tokens`, `session_tokens`, `daily_tokens`,
    /// `turn_usd` or `daily_usd`; `used` and `limit` in its unit.
    BudgetRequest = "budget_request" {
        request_id: String,
        budget: String,
        used: f64,
        limit: f64,
        timeout_secs: u64,
    },
    /// A budget request was settled: `raise` (with `raisedBy`) or `stop`, answered, timed
    /// out (stopped) or cancelled with its turn.
    BudgetResolved = "budget_resolved" {
        request_id: String,
        decision: Decision,
        reason: ResolvedReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raised_by: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<DecidedBy>,
    },
    /// A plan-mode turn's proposed plan (SPEC §26), markdown: sent when the agent calls
    /// `propose_plan`, before the turn ends; the transcript keeps it as a `plan` row.
    Plan = "plan" { plan: String },
}

/// Which output of a tool a `tool_output_chunk` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolStream {
    Stdout,
    Stderr,
}

/// A file sent with a prompt, as `user_message` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptAttachment {
    /// The name the client gave (or the stored file's name when it gave none).
    pub filename: String,
    /// What the model's prompt carries for it (`[Document: …] path`, `[IMAGE:path]`).
    pub marker: String,
}

/// The `type` of a turn's first event: its prompt.
pub const USER_MESSAGE: &str = UpdateType::UserMessage.as_str();
/// The `type` of a piece of the agent's answer text.
pub const AGENT_MESSAGE_CHUNK: &str = UpdateType::AgentMessageChunk.as_str();
/// The `type` of a turn's last event (the stream marks the turn done when it is sent).
pub const TURN_COMPLETE: &str = UpdateType::TurnComplete.as_str();
/// The `type` of the marker a replay starts with when events before its cursor are gone.
pub const REPLAY_GAP: &str = UpdateType::ReplayGap.as_str();

/// `session/update` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdate {
    pub session_id: SessionId,
    /// The turn the event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// 1, 2, 3 … per turn in emission order, no gaps (absent on `replay_gap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    /// Sent again from the replay buffer after `session/subscribe`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    #[serde(flatten)]
    pub kind: UpdateKind,
}

impl UpdateKind {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        self.update_type().as_str()
    }
}

/// `elicitation/create` params: a question for the user (the `ask_user` tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationParams {
    pub session_id: SessionId,
    /// `form`.
    pub mode: String,
    pub message: String,
    /// A JSON Schema of the answer: `answer` (free text), `choice` or `choices`.
    pub requested_schema: Value,
    /// The question's own id, the same in every copy sent to the owner's connections
    /// (the JSON-RPC ids differ): `ask_user_resolved` names it when it is settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
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

    /// One update of each type. The match is exhaustive, so a new type needs a sample here.
    fn sample(t: UpdateType) -> UpdateKind {
        match t {
            UpdateType::UserMessage => UpdateKind::UserMessage {
                text: "hi".into(),
                attachments: vec![PromptAttachment {
                    filename: "a.txt".into(),
                    marker: "[Document: a.txt] /w/uploads/x.txt".into(),
                }],
                prompted_by: "user:bob".into(),
                truncated: false,
            },
            UpdateType::AgentMessageChunk => UpdateKind::AgentMessageChunk { text: "a".into() },
            UpdateType::AgentThoughtChunk => UpdateKind::AgentThoughtChunk { text: "t".into() },
            UpdateType::ToolCall => UpdateKind::ToolCall {
                tool_call_id: "tc_1".into(),
                name: "bash".into(),
                raw_input: json!({"command": "ls"}),
                started_at: Some(1_700_000_000_000),
            },
            UpdateType::ToolOutputChunk => UpdateKind::ToolOutputChunk {
                tool_call_id: "tc_1".into(),
                stream: ToolStream::Stderr,
                text: "warning\n".into(),
            },
            UpdateType::ToolResult => UpdateKind::ToolResult {
                tool_call_id: "tc_1".into(),
                name: "bash".into(),
                raw_output: json!("out"),
            },
            UpdateType::ApprovalRequest => UpdateKind::ApprovalRequest {
                request_id: "r1".into(),
                tool_name: "bash".into(),
                arguments_summary: "ls".into(),
                timeout_secs: 120,
            },
            UpdateType::ApprovalResolved => UpdateKind::ApprovalResolved {
                request_id: "r1".into(),
                decision: Decision::AllowOnce,
                reason: ResolvedReason::Answered,
                decided_by: Some(DecidedBy {
                    principal: "operator".into(),
                    client: "chat".into(),
                }),
            },
            UpdateType::AskUserResolved => UpdateKind::AskUserResolved {
                request_id: "ask_1".into(),
                reason: ResolvedReason::Answered,
                decided_by: Some(DecidedBy {
                    principal: "operator".into(),
                    client: "dashboard".into(),
                }),
            },
            UpdateType::HistoryTrimmed => UpdateKind::HistoryTrimmed {
                dropped_messages: 2,
                kept_messages: 3,
                checkpoint_seq: 9,
                reason: "max_context_tokens".into(),
            },
            UpdateType::ContextCompacted => UpdateKind::ContextCompacted {
                tokens_before: 900,
                tokens_after: 100,
                summarized_messages: 8,
                summary: "user: hi".into(),
            },
            UpdateType::Usage => UpdateKind::Usage {
                input_tokens: 1,
                output_tokens: 2,
                session_total_tokens: 3,
                context_tokens: 4,
                context_window: 5,
                estimated: true,
                cache_read_tokens: Some(6),
                cache_write_tokens: None,
                cost_usd: Some(0.25),
            },
            UpdateType::ProviderRetry => UpdateKind::ProviderRetry {
                attempt: 1,
                delay_secs: 1.5,
                reason: "HTTP 429: slow down".into(),
            },
            UpdateType::Hook => UpdateKind::Hook {
                event: "pre_tool_use".into(),
                command: "./check".into(),
                outcome: "deny".into(),
                duration_ms: 12,
                message: Some("no".into()),
            },
            UpdateType::TurnComplete => UpdateKind::TurnComplete {
                outcome: Outcome::Completed,
                content: "done".into(),
                truncated: false,
                usage: None,
                reason: None,
            },
            UpdateType::ReplayGap => UpdateKind::ReplayGap { first_event_seq: 3 },
            UpdateType::SessionRewound => UpdateKind::SessionRewound {
                to_turn_id: "turn_1".into(),
                rewound_turns: vec!["turn_1".into(), "turn_2".into()],
                restored_files: vec!["a.txt".into()],
            },
            UpdateType::SessionInfo => UpdateKind::SessionInfo {
                title: "Fix the build".into(),
                updated_at: 1_700_000_000_000,
            },
            UpdateType::BudgetRequest => UpdateKind::BudgetRequest {
                request_id: "bud_0".into(),
                budget: "turn_tokens".into(),
                used: 900.0,
                limit: 1000.0,
                timeout_secs: 120,
            },
            UpdateType::BudgetResolved => UpdateKind::BudgetResolved {
                request_id: "bud_0".into(),
                decision: Decision::Raise,
                reason: ResolvedReason::Answered,
                raised_by: Some(5000.0),
                decided_by: Some(DecidedBy {
                    principal: "operator".into(),
                    client: "chat".into(),
                }),
            },
            UpdateType::Plan => UpdateKind::Plan {
                plan: "1. Read `main.rs`\n2. Fix the bug".into(),
            },
        }
    }

    #[test]
    fn every_kind_serializes_with_its_table_name_and_parses_back() {
        for &t in UpdateType::ALL {
            let kind = sample(t);
            assert_eq!(kind.update_type(), t);
            let v = serde_json::to_value(&kind).unwrap();
            assert_eq!(v["type"], json!(t.as_str()), "{t:?}");
            assert_eq!(kind.type_name(), t.as_str());
            assert_eq!(UpdateType::from_wire(t.as_str()), Some(t));
            let back: UpdateKind = serde_json::from_value(v).unwrap();
            assert_eq!(back, kind);
        }
    }

    #[test]
    fn table_names_are_distinct_and_unknown_names_are_none() {
        let mut names: Vec<&str> = UpdateType::ALL.iter().map(|t| t.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), UpdateType::ALL.len());
        assert_eq!(UpdateType::from_wire("user_message_chunk"), None);
        assert_eq!(UpdateType::from_wire("TURN_COMPLETE"), None);
        assert_eq!(TURN_COMPLETE, "turn_complete");
        assert_eq!(REPLAY_GAP, "replay_gap");
        assert_eq!(AGENT_MESSAGE_CHUNK, "agent_message_chunk");
        assert_eq!(USER_MESSAGE, "user_message");
    }

    #[test]
    fn user_message_has_the_spec_shape() {
        let v = serde_json::to_value(sample(UpdateType::UserMessage)).unwrap();
        assert_eq!(
            v,
            json!({"type": "user_message", "text": "hi",
                   "attachments": [{"filename": "a.txt", "marker": "[Document: a.txt] /w/uploads/x.txt"}],
                   "promptedBy": "user:bob"})
        );
    }
}
