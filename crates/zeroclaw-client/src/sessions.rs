//! The typed layer over the session methods (SPEC §7): `session/new`, `session/prompt`,
//! `session/cancel`, `session/approve`, …, the `session/update` notifications a turn
//! streams, and the daemon's `elicitation/create` questions (the `ask_user` tool).
//!
//! A turn is driven from two places at once: one task waits for [`ClientHandle::prompt`]
//! to answer while another reads [`Events`](crate::Events) (updates, questions) and answers
//! with [`ClientHandle::approve`], [`ClientHandle::cancel`] or
//! [`ClientHandle::answer_elicitation`] on a clone of the same handle.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use crate::elicitation::{ElicitationAnswer, ElicitationRequest};
use crate::{ClientError, ClientHandle, ServerMessage};

/// How long [`ClientHandle::prompt`] waits for a turn to end. Turns legitimately wait on
/// people (approvals up to 120 s each, questions up to 300 s each), so this is generous;
/// cancel a turn with [`ClientHandle::cancel`] rather than by timing out.
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// `session/new` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSession {
    pub agent_alias: String,
    /// Resume (or create) the session with this id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Where `bash` runs (default: the agent's workspace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `"acp"` (default) or `"chat"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

impl NewSession {
    pub fn agent(alias: impl Into<String>) -> Self {
        NewSession {
            agent_alias: alias.into(),
            ..Default::default()
        }
    }

    pub fn with_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    pub fn with_mode(mut self, mode: impl Into<String>) -> Self {
        self.mode = Some(mode.into());
        self
    }
}

/// The result of `session/new`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionInfo {
    #[serde(deserialize_with = "lenient_string")]
    pub session_id: String,
    #[serde(deserialize_with = "lenient_string")]
    pub agent_alias: String,
    #[serde(deserialize_with = "lenient_string")]
    pub mode: String,
    pub message_count: u64,
    #[serde(deserialize_with = "lenient_string")]
    pub workspace_dir: String,
    pub resumed: bool,
}

/// One entry of `session/list`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionSummary {
    #[serde(deserialize_with = "lenient_string")]
    pub session_id: String,
    #[serde(deserialize_with = "lenient_string")]
    pub mode: String,
    #[serde(deserialize_with = "lenient_string")]
    pub agent_alias: String,
    pub created_at: Value,
    pub last_activity: Value,
    pub message_count: u64,
    pub live: bool,
    #[serde(deserialize_with = "lenient_string")]
    pub interaction_surface: String,
}

/// How a turn ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TurnOutcome {
    #[default]
    Completed,
    Cancelled,
    Failed,
    /// A value this client does not know.
    Other(String),
}

impl TurnOutcome {
    pub fn as_str(&self) -> &str {
        match self {
            TurnOutcome::Completed => "completed",
            TurnOutcome::Cancelled => "cancelled",
            TurnOutcome::Failed => "failed",
            TurnOutcome::Other(s) => s,
        }
    }
}

impl From<&str> for TurnOutcome {
    fn from(s: &str) -> Self {
        match s {
            "completed" => TurnOutcome::Completed,
            "cancelled" => TurnOutcome::Cancelled,
            "failed" => TurnOutcome::Failed,
            other => TurnOutcome::Other(other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for TurnOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(TurnOutcome::from(s.as_str()))
    }
}

/// The answer to `session/prompt`, and the payload of a `turn_complete` update.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TurnResult {
    #[serde(deserialize_with = "lenient_string")]
    pub session_id: String,
    #[serde(deserialize_with = "lenient_string")]
    pub turn_id: String,
    pub outcome: TurnOutcome,
    /// Completed: the final text. Cancelled: the partial text. Failed: the error message.
    #[serde(deserialize_with = "lenient_string")]
    pub content: String,
}

/// The answer to `session/subscribe`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    #[serde(deserialize_with = "lenient_string")]
    pub session_id: String,
    #[serde(default)]
    pub active_turn_id: Option<String>,
    #[serde(default)]
    pub last_transcript_seq: i64,
    #[serde(default)]
    pub pending_approvals: Vec<String>,
}

/// A `session/update` notification.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionUpdate {
    pub session_id: String,
    /// The turn the update belongs to (SPEC §14; absent from older daemons).
    pub turn_id: Option<String>,
    /// Position in its turn: 1, 2, 3 … without gaps.
    pub event_seq: Option<u64>,
    /// Sent again from the replay buffer after a `session/subscribe`.
    pub replay: bool,
    pub kind: SessionUpdateKind,
}

/// What a `session/update` reports (its `type`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionUpdateKind {
    AgentMessageChunk {
        #[serde(deserialize_with = "lenient_string")]
        text: String,
    },
    AgentThoughtChunk {
        #[serde(deserialize_with = "lenient_string")]
        text: String,
    },
    ToolCall {
        #[serde(default, deserialize_with = "lenient_string")]
        tool_call_id: String,
        #[serde(default, deserialize_with = "lenient_string")]
        name: String,
        #[serde(default)]
        raw_input: Value,
    },
    ToolResult {
        #[serde(default, deserialize_with = "lenient_string")]
        tool_call_id: String,
        #[serde(default, deserialize_with = "lenient_string")]
        name: String,
        #[serde(default)]
        raw_output: Value,
    },
    ApprovalRequest {
        #[serde(deserialize_with = "lenient_string")]
        request_id: String,
        #[serde(default, deserialize_with = "lenient_string")]
        tool_name: String,
        #[serde(default, deserialize_with = "lenient_string")]
        arguments_summary: String,
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    HistoryTrimmed {
        #[serde(default)]
        dropped_messages: u64,
        #[serde(default)]
        kept_messages: u64,
        #[serde(default)]
        checkpoint_seq: Option<i64>,
        #[serde(default, deserialize_with = "lenient_string")]
        reason: String,
    },
    TurnComplete(TurnResult),
    /// An approval request was settled (answered here or elsewhere, timed out, cancelled).
    ApprovalResolved {
        #[serde(deserialize_with = "lenient_string")]
        request_id: String,
        #[serde(default, deserialize_with = "lenient_string")]
        decision: String,
        #[serde(default, deserialize_with = "lenient_string")]
        reason: String,
    },
    /// A replay could not start at the cursor: events before `first_event_seq` are gone.
    ReplayGap {
        #[serde(default, deserialize_with = "lenient_string")]
        turn_id: String,
        #[serde(default)]
        first_event_seq: u64,
    },
    /// A `type` this client does not know, kept whole.
    #[serde(skip)]
    Unknown {
        kind: String,
        params: Value,
    },
}

const KNOWN_UPDATES: [&str; 9] = [
    "approval_resolved",
    "replay_gap",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_result",
    "approval_request",
    "history_trimmed",
    "turn_complete",
];

impl SessionUpdate {
    /// Parses `session/update` params. An unknown `type` gives
    /// [`SessionUpdateKind::Unknown`]; a known one with missing or mistyped fields is an
    /// error.
    pub fn parse(params: &Value) -> Result<SessionUpdate, String> {
        let obj = params
            .as_object()
            .ok_or("session/update params are not an object")?;
        let session_id = obj
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or("session/update without a sessionId")?
            .to_string();
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or("session/update without a type")?;
        let kind = if KNOWN_UPDATES.contains(&kind) {
            SessionUpdateKind::deserialize(params)
                .map_err(|e| format!("session/update {kind}: {e}"))?
        } else {
            SessionUpdateKind::Unknown {
                kind: kind.to_string(),
                params: params.clone(),
            }
        };
        Ok(SessionUpdate {
            session_id,
            turn_id: obj.get("turnId").and_then(Value::as_str).map(str::to_owned),
            event_seq: obj.get("eventSeq").and_then(Value::as_u64),
            replay: obj.get("replay").and_then(Value::as_bool).unwrap_or(false),
            kind,
        })
    }
}

/// An answer to an `approval_request` (`session/approve` `decision`).
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowAlways,
    Reject,
    /// Refuse the call as proposed; with replacement arguments the tool runs with those.
    RejectWithEdit(Option<Value>),
}

impl Decision {
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow_once",
            Decision::AllowAlways => "allow_always",
            Decision::Reject => "reject",
            Decision::RejectWithEdit(_) => "reject_with_edit",
        }
    }
}

/// Something the daemon sent unasked, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A `session/update` notification.
    Update(SessionUpdate),
    /// An `elicitation/create` request (must be answered).
    Elicitation(ElicitationRequest),
    /// Anything else, including malformed updates and unknown requests (a request must
    /// still be answered, e.g. with a -32601 error).
    Other(ServerMessage),
}

impl Event {
    pub fn from_message(message: ServerMessage) -> Event {
        let parsed = match &message {
            ServerMessage::Notification { method, params } if method == "session/update" => {
                SessionUpdate::parse(params).map(Event::Update)
            }
            ServerMessage::Request { id, method, params }
                if method == ElicitationRequest::METHOD =>
            {
                ElicitationRequest::parse(id.clone(), params).map(Event::Elicitation)
            }
            _ => return Event::Other(message),
        };
        parsed.unwrap_or_else(|why| {
            tracing::warn!("daemon sent a malformed message: {why}");
            Event::Other(message)
        })
    }
}

/// Deserializes a string, accepting a number (rendered) or null (empty) too: ids and
/// free-form fields some daemons send as numbers.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    })
}

fn decode<T: for<'de> Deserialize<'de>>(method: &str, value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value)
        .map_err(|e| ClientError::Unexpected(format!("{method} result: {e}")))
}

impl ClientHandle {
    /// `session/new`.
    pub async fn new_session(&self, params: &NewSession) -> Result<SessionInfo, ClientError> {
        let params = serde_json::to_value(params).unwrap_or_default();
        decode("session/new", self.call("session/new", params).await?)
    }

    /// `session/prompt`: waits until the turn ends (up to [`PROMPT_TIMEOUT`]). The turn's
    /// `session/update`s arrive meanwhile on the [`Events`](crate::Events) queue; run this
    /// in its own task (or `select!` on it) while reading them. Every update the daemon
    /// sent before its answer is queued before this returns: drain the rest with
    /// [`Events::try_recv`](crate::Events::try_recv) (a `select!` that saw the answer may
    /// not have seen the last updates, the reader runs on another thread).
    pub async fn prompt(&self, session_id: &str, prompt: &str) -> Result<TurnResult, ClientError> {
        let params = json!({"sessionId": session_id, "prompt": prompt});
        let result = self
            .call_within("session/prompt", params, PROMPT_TIMEOUT)
            .await?;
        decode("session/prompt", result)
    }

    /// `session/cancel`: stops the running turn (its `prompt` then answers `cancelled`).
    pub async fn cancel(&self, session_id: &str) -> Result<(), ClientError> {
        self.call("session/cancel", json!({"sessionId": session_id}))
            .await
            .map(drop)
    }

    /// `session/approve`: answers an `approval_request`.
    pub async fn approve(
        &self,
        session_id: &str,
        request_id: &str,
        decision: Decision,
    ) -> Result<(), ClientError> {
        let mut params = json!({
            "sessionId": session_id,
            "requestId": request_id,
            "decision": decision.as_str(),
        });
        if let Decision::RejectWithEdit(Some(replacement)) = decision {
            params["replacement"] = replacement;
        }
        self.call("session/approve", params).await.map(drop)
    }

    /// `session/subscribe`: receive the session's updates from now on, after a replay of
    /// the buffered ones past `(turn_id, after_event_seq)` (the running turn's when `None`).
    pub async fn subscribe(
        &self,
        session_id: &str,
        cursor: Option<(&str, u64)>,
    ) -> Result<Subscription, ClientError> {
        let mut params = json!({"sessionId": session_id});
        if let Some((turn_id, after)) = cursor {
            params["turnId"] = json!(turn_id);
            params["afterEventSeq"] = json!(after);
        }
        decode(
            "session/subscribe",
            self.call("session/subscribe", params).await?,
        )
    }

    /// `session/unsubscribe`.
    pub async fn unsubscribe(&self, session_id: &str) -> Result<(), ClientError> {
        self.call("session/unsubscribe", json!({"sessionId": session_id}))
            .await
            .map(drop)
    }

    /// `session/close`: unloads the live session (history stays).
    pub async fn close_session(&self, session_id: &str) -> Result<(), ClientError> {
        self.call("session/close", json!({"sessionId": session_id}))
            .await
            .map(drop)
    }

    /// `session/list`, every page: the sessions newest activity first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let (page, next) = self.list_sessions_page(cursor.as_deref(), None).await?;
            all.extend(page);
            match next {
                // A cursor that does not move would loop forever: stop there.
                Some(next) if cursor.as_deref() != Some(next.as_str()) => cursor = Some(next),
                _ => return Ok(all),
            }
        }
    }

    /// One page of `session/list` (SPEC §17): its sessions and the cursor of the next page
    /// (`None` on the last one).
    pub async fn list_sessions_page(
        &self,
        cursor: Option<&str>,
        limit: Option<u32>,
    ) -> Result<(Vec<SessionSummary>, Option<String>), ClientError> {
        let mut params = json!({});
        if let Some(cursor) = cursor {
            params["cursor"] = json!(cursor);
        }
        if let Some(limit) = limit {
            params["limit"] = json!(limit);
        }
        let mut result = self.call("session/list", params).await?;
        let next = result["nextCursor"].as_str().map(str::to_owned);
        let sessions = decode("session/list", result["sessions"].take())?;
        Ok((sessions, next))
    }

    /// Answers an `elicitation/create` request.
    pub async fn answer_elicitation(
        &self,
        request: &ElicitationRequest,
        answer: &ElicitationAnswer,
    ) -> Result<(), ClientError> {
        self.respond(request.id.clone(), Ok(answer.to_value()))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(params: Value) -> SessionUpdateKind {
        let u = SessionUpdate::parse(&params).unwrap();
        assert_eq!(u.session_id, "s1");
        u.kind
    }

    #[test]
    fn parses_every_update_type() {
        assert_eq!(
            update(json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "Hi"})),
            SessionUpdateKind::AgentMessageChunk { text: "Hi".into() }
        );
        assert_eq!(
            update(json!({"sessionId": "s1", "type": "agent_thought_chunk", "text": "hmm"})),
            SessionUpdateKind::AgentThoughtChunk { text: "hmm".into() }
        );
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "tool_call", "toolCallId": "tc_1",
                          "name": "bash", "rawInput": {"command": "ls"}})
            ),
            SessionUpdateKind::ToolCall {
                tool_call_id: "tc_1".into(),
                name: "bash".into(),
                raw_input: json!({"command": "ls"}),
            }
        );
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "tool_result", "toolCallId": "tc_1",
                          "name": "bash", "rawOutput": "a\nb"})
            ),
            SessionUpdateKind::ToolResult {
                tool_call_id: "tc_1".into(),
                name: "bash".into(),
                raw_output: json!("a\nb"),
            }
        );
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "approval_request", "requestId": "ap-1",
                          "toolName": "bash", "argumentsSummary": "rm -rf x",
                          "timeoutSecs": 120})
            ),
            SessionUpdateKind::ApprovalRequest {
                request_id: "ap-1".into(),
                tool_name: "bash".into(),
                arguments_summary: "rm -rf x".into(),
                timeout_secs: Some(120),
            }
        );
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "history_trimmed", "droppedMessages": 4,
                          "keptMessages": 6, "checkpointSeq": 17, "reason": "context"})
            ),
            SessionUpdateKind::HistoryTrimmed {
                dropped_messages: 4,
                kept_messages: 6,
                checkpoint_seq: Some(17),
                reason: "context".into(),
            }
        );
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "turn_complete", "turnId": "t-3",
                          "outcome": "cancelled", "content": "part"})
            ),
            SessionUpdateKind::TurnComplete(TurnResult {
                session_id: "s1".into(),
                turn_id: "t-3".into(),
                outcome: TurnOutcome::Cancelled,
                content: "part".into(),
            })
        );
    }

    #[test]
    fn unknown_and_malformed_updates() {
        let params = json!({"sessionId": "s1", "type": "plan", "entries": []});
        assert_eq!(
            update(params.clone()),
            SessionUpdateKind::Unknown {
                kind: "plan".into(),
                params,
            }
        );
        assert!(
            SessionUpdate::parse(&json!({"type": "agent_message_chunk", "text": "x"})).is_err()
        );
        assert!(
            SessionUpdate::parse(&json!({"sessionId": "s1", "type": "agent_message_chunk"}))
                .is_err()
        );
        assert!(SessionUpdate::parse(&json!([1])).is_err());
        // Numeric ids and unknown outcomes are tolerated.
        assert_eq!(
            update(
                json!({"sessionId": "s1", "type": "turn_complete", "turnId": 7,
                          "outcome": "exploded", "content": null})
            ),
            SessionUpdateKind::TurnComplete(TurnResult {
                session_id: "s1".into(),
                turn_id: "7".into(),
                outcome: TurnOutcome::Other("exploded".into()),
                content: String::new(),
            })
        );
    }

    #[test]
    fn typed_events() {
        let msg = ServerMessage::Notification {
            method: "session/update".into(),
            params: json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "x"}),
        };
        assert!(matches!(Event::from_message(msg), Event::Update(_)));
        let msg = ServerMessage::Request {
            id: json!("zc-out-0"),
            method: "elicitation/create".into(),
            params: json!({"sessionId": "s1", "mode": "form", "message": "Name?",
                           "requestedSchema": {"type": "object",
                               "properties": {"answer": {"type": "string"}}}}),
        };
        let Event::Elicitation(req) = Event::from_message(msg) else {
            panic!("not an elicitation");
        };
        assert_eq!(req.id, json!("zc-out-0"));
        assert_eq!(req.message, "Name?");
        let bad = ServerMessage::Notification {
            method: "session/update".into(),
            params: json!({"type": "tool_call"}),
        };
        assert_eq!(Event::from_message(bad.clone()), Event::Other(bad));
        let other = ServerMessage::Notification {
            method: "x/y".into(),
            params: json!({}),
        };
        assert_eq!(Event::from_message(other.clone()), Event::Other(other));
    }

    #[test]
    fn session_payloads() {
        let info: SessionInfo = serde_json::from_value(json!({
            "sessionId": "s1", "agentAlias": "default", "mode": "acp", "messageCount": 4,
            "workspaceDir": "/w", "resumed": true, "extra": 1
        }))
        .unwrap();
        assert_eq!(info.session_id, "s1");
        assert_eq!(info.message_count, 4);
        assert!(info.resumed);
        assert_eq!(
            serde_json::to_value(NewSession::agent("default").with_id("abc")).unwrap(),
            json!({"agentAlias": "default", "sessionId": "abc"})
        );
        assert_eq!(
            serde_json::to_value(NewSession::agent("a").with_cwd("/tmp").with_mode("chat"))
                .unwrap(),
            json!({"agentAlias": "a", "cwd": "/tmp", "mode": "chat"})
        );
        let result: TurnResult = serde_json::from_value(json!({
            "sessionId": "s1", "turnId": "t1", "outcome": "failed", "content": "boom"
        }))
        .unwrap();
        assert_eq!(result.outcome, TurnOutcome::Failed);
        assert_eq!(result.outcome.as_str(), "failed");
        assert_eq!(Decision::RejectWithEdit(None).as_str(), "reject_with_edit");
    }

    #[test]
    fn stream_fields_and_the_stream_only_kinds_parse() {
        let u = SessionUpdate::parse(&json!({"sessionId": "s1", "type": "approval_resolved",
            "turnId": "t1", "eventSeq": 7, "replay": true,
            "requestId": "apr_0", "decision": "reject", "reason": "timeout"}))
        .unwrap();
        assert_eq!(
            (u.turn_id.as_deref(), u.event_seq, u.replay),
            (Some("t1"), Some(7), true)
        );
        assert_eq!(
            u.kind,
            SessionUpdateKind::ApprovalResolved {
                request_id: "apr_0".into(),
                decision: "reject".into(),
                reason: "timeout".into()
            }
        );
        let gap = update(
            json!({"sessionId": "s1", "type": "replay_gap", "turnId": "t2", "firstEventSeq": 40}),
        );
        assert_eq!(
            gap,
            SessionUpdateKind::ReplayGap {
                turn_id: "t2".into(),
                first_event_seq: 40
            }
        );
        let old = SessionUpdate::parse(
            &json!({"sessionId": "s1", "type": "agent_message_chunk", "text": "x"}),
        )
        .unwrap();
        assert_eq!(
            (old.turn_id, old.event_seq, old.replay),
            (None, None, false)
        );
    }
}
