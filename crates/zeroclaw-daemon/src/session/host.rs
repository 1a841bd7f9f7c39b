//! The daemon's side of a running turn ([`TurnHost`]): turn events become `session/update`
//! notifications to the connection that sent the prompt (SPEC §7.2 wire names) and
//! checkpoint progress for the [`Persister`](super::persist::Persister); approvals wait on
//! the session's approval registry; `ask_user` becomes an outbound `elicitation/create`
//! request (SPEC §7.4, §13).
//!
//! A closed connection never stops a turn: the first failed send marks the connection gone
//! and later notifications are dropped. No lock is held while waiting for the client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use zeroclaw_agent::{ApprovalAsk, ApprovalDecision, AskUser, TurnEvent, TurnHost};
use zeroclaw_rpc::message::request_line;

use super::Tuning;
use super::live::LiveSession;
use super::persist::{Op, ProgressTx};
use crate::connection::ConnectionContext;

/// Sends `session/update` notifications of one session to one connection.
pub(crate) struct Notifier {
    conn: Arc<ConnectionContext>,
    session_id: String,
    gone: AtomicBool,
}

impl Notifier {
    pub fn new(conn: Arc<ConnectionContext>, session_id: &str) -> Notifier {
        Notifier {
            conn,
            session_id: session_id.to_owned(),
            gone: AtomicBool::new(false),
        }
    }

    /// Sends `{sessionId, type, ...fields}`; dropped once the connection is gone.
    pub async fn update(&self, kind: &str, fields: Value) {
        if self.gone.load(Ordering::Relaxed) {
            return;
        }
        let mut params = Map::new();
        params.insert("sessionId".into(), Value::String(self.session_id.clone()));
        params.insert("type".into(), Value::String(kind.to_owned()));
        if let Value::Object(fields) = fields {
            params.extend(fields);
        }
        let line = request_line(None, "session/update", Some(&Value::Object(params)));
        if self.conn.out.send(line).await.is_err() {
            self.gone.store(true, Ordering::Relaxed);
            tracing::debug!(session = %self.session_id, "connection gone; updates dropped");
        }
    }
}

pub(crate) struct SessionHost<'a> {
    pub session: &'a Arc<LiveSession>,
    pub notifier: &'a Notifier,
    pub progress: Option<ProgressTx>,
    pub conn: &'a Arc<ConnectionContext>,
    pub tuning: &'a Tuning,
    /// The agent's `max_context_tokens` (`contextWindow` of `usage` updates).
    pub context_window: u64,
}

impl SessionHost<'_> {
    /// Hands a step to the persister; when the store falls behind, the turn waits here
    /// (the queue is bounded) rather than memory growing.
    async fn persist(&self, op: Op) {
        if let Some(tx) = &self.progress {
            // The persister outlives the turn loop; a send can only fail after it stopped.
            let _ = tx.send(op).await;
        }
    }
}

#[async_trait]
impl TurnHost for SessionHost<'_> {
    async fn emit(&self, event: TurnEvent) {
        match event {
            TurnEvent::MessageChunk { text } => {
                self.persist(Op::Chunk(text.clone())).await;
                self.notifier
                    .update("agent_message_chunk", json!({"text": text}))
                    .await;
            }
            TurnEvent::ThoughtChunk { text } => {
                self.notifier
                    .update("agent_thought_chunk", json!({"text": text}))
                    .await;
            }
            TurnEvent::ToolCall {
                tool_call_id,
                name,
                raw_input,
            } => {
                self.notifier
                    .update(
                        "tool_call",
                        json!({"toolCallId": tool_call_id, "name": name, "rawInput": raw_input}),
                    )
                    .await;
            }
            TurnEvent::ToolResult {
                tool_call_id,
                name,
                raw_output,
            } => {
                self.notifier
                    .update(
                        "tool_result",
                        json!({"toolCallId": tool_call_id, "name": name, "rawOutput": raw_output}),
                    )
                    .await;
            }
            TurnEvent::ContextAppended { message } => self.persist(Op::Step(message)).await,
            TurnEvent::Usage { usage } => {
                let totals = self
                    .session
                    .add_usage(usage.input_tokens, usage.output_tokens);
                self.notifier
                    .update(
                        "usage",
                        json!({
                            "inputTokens": usage.input_tokens,
                            "outputTokens": usage.output_tokens,
                            "sessionTotalTokens": totals.session_total,
                            "contextTokens": totals.context,
                            "contextWindow": self.context_window,
                            "estimated": usage.estimated,
                        }),
                    )
                    .await;
            }
        }
    }

    async fn approve(&self, ask: ApprovalAsk) -> ApprovalDecision {
        let approvals = &self.session.approvals;
        if approvals.always_allows(&ask.tool_name) {
            return ApprovalDecision::AllowOnce;
        }
        let (guard, rx) = approvals.register();
        let timeout = self.tuning.approval_timeout;
        self.notifier
            .update(
                "approval_request",
                json!({
                    "requestId": guard.id,
                    "toolName": ask.tool_name,
                    "argumentsSummary": ask.arguments_summary,
                    "timeoutSecs": timeout.as_millis().div_ceil(1000) as u64,
                }),
            )
            .await;
        let decision = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(decision)) => decision,
            _ => {
                tracing::info!(session = %self.session.key.session_id, request = %guard.id, "approval unanswered; rejected");
                ApprovalDecision::Reject
            }
        };
        drop(guard);
        if decision == ApprovalDecision::AllowAlways {
            approvals.allow_always(&ask.tool_name);
        }
        decision
    }

    async fn ask_user(&self, ask: AskUser) -> Option<String> {
        if !self.can_ask_user() {
            return None;
        }
        let ticket = self.conn.pending.register()?;
        let params = json!({
            "sessionId": self.session.key.session_id,
            "mode": "form",
            "message": ask.question,
            "requestedSchema": requested_schema(&ask),
        });
        let line = request_line(
            Some(&Value::String(ticket.id.clone())),
            "elicitation/create",
            Some(&params),
        );
        if self.conn.out.send(line).await.is_err() {
            return None;
        }
        match ticket.wait(self.tuning.ask_user_timeout).await {
            Ok(result) => answer_of(&result),
            Err(e) => {
                tracing::info!(session = %self.session.key.session_id, "ask_user got no answer: {e}");
                None
            }
        }
    }

    fn can_ask_user(&self) -> bool {
        !self.conn.out.is_closed() && self.conn.handshake.get().is_some_and(|h| h.elicitation)
    }
}

/// SPEC §13: `choice` (one of) or `choices` (any of) with `{const, title}` options, or a
/// free-text `answer`.
pub fn requested_schema(ask: &AskUser) -> Value {
    match &ask.choices {
        Some(choices) if !choices.is_empty() => {
            let options: Vec<Value> = choices
                .iter()
                .map(|c| json!({"const": c, "title": c}))
                .collect();
            if ask.multiple {
                json!({
                    "type": "object",
                    "properties": {"choices": {
                        "type": "array", "title": ask.question,
                        "items": {"anyOf": options}, "minItems": 1,
                    }},
                    "required": ["choices"],
                })
            } else {
                json!({
                    "type": "object",
                    "properties": {"choice": {
                        "type": "string", "title": ask.question, "oneOf": options,
                    }},
                    "required": ["choice"],
                })
            }
        }
        _ => json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "title": ask.question}},
            "required": ["answer"],
        }),
    }
}

/// The answer in an `elicitation/create` result; `None` unless the user accepted with
/// content we understand.
pub fn answer_of(result: &Value) -> Option<String> {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    let content = result.get("content")?;
    if let Some(a) = content.get("answer").and_then(Value::as_str) {
        return Some(a.to_owned());
    }
    if let Some(c) = content.get("choice").and_then(Value::as_str) {
        return Some(c.to_owned());
    }
    let picked: Vec<&str> = content
        .get("choices")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Some(picked.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_follow_the_contract() {
        let free = AskUser {
            question: "Name?".into(),
            choices: None,
            multiple: false,
        };
        assert_eq!(
            requested_schema(&free)["properties"]["answer"]["type"],
            "string"
        );
        let one = AskUser {
            question: "Pick".into(),
            choices: Some(vec!["a".into(), "b".into()]),
            multiple: false,
        };
        let s = requested_schema(&one);
        assert_eq!(
            s["properties"]["choice"]["oneOf"][1],
            json!({"const": "b", "title": "b"})
        );
        let many = AskUser {
            multiple: true,
            ..one
        };
        let s = requested_schema(&many);
        assert_eq!(
            s["properties"]["choices"]["items"]["anyOf"][0]["const"],
            "a"
        );
    }

    #[test]
    fn answers() {
        let a = |v: Value| answer_of(&v);
        assert_eq!(
            a(json!({"action":"accept","content":{"answer":"x"}})),
            Some("x".into())
        );
        assert_eq!(
            a(json!({"action":"accept","content":{"choice":"b"}})),
            Some("b".into())
        );
        assert_eq!(
            a(json!({"action":"accept","content":{"choices":["a","b"]}})),
            Some("a, b".into())
        );
        assert_eq!(a(json!({"action":"decline"})), None);
        assert_eq!(a(json!({"action":"cancel"})), None);
        assert_eq!(a(Value::Null), None);
        assert_eq!(a(json!({"action":"accept"})), None);
    }
}
