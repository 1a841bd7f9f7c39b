//! The daemon's side of a running turn ([`TurnHost`]): turn events become `session/update`s
//! on the session's [`stream`](super::stream) (SPEC §7.2 wire names, §14 numbering and
//! fan-out) and checkpoint progress for the [`Persister`](super::persist::Persister);
//! approvals wait on the session's approval registry and end with `approval_resolved`;
//! `ask_user` becomes an outbound `elicitation/create` request to every connection of the
//! owner that can answer ([`ask_all`](super::ask_all), SPEC §7.4, §13, §14, §22). Before the turn's later provider calls it may compact the
//! context ([`MidTurn`], SPEC §18).
//!
//! No lock is held while waiting for a client: updates are queued without waiting, and a
//! question waits on its own request.
//!
//! Layers: used by the turn only; it reads the live session (stream, approvals, usage) and
//! reaches clients through [`ClientLink`]. Updates are built as the vocabulary's
//! [`UpdateKind`], so their wire names are written once, in `zeroclaw-protocol`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use zeroclaw_agent::OutputStream;
use zeroclaw_agent::{ApprovalAsk, ApprovalDecision, AskUser, ChatMessage, TurnEvent, TurnHost};
use zeroclaw_protocol::update::{ElicitationParams, ToolStream};
use zeroclaw_protocol::{DecidedBy, Decision, ResolvedReason, UpdateKind};

use super::ask_all::{Settled, ask_everyone, next_request_id};
use super::compaction::MidTurn;
use super::link::ClientLink;
use super::live::LiveSession;
use super::persist::{self, Op, ProgressTx};
use super::tuning::Tuning;

pub(crate) struct SessionHost<'a> {
    pub session: &'a Arc<LiveSession>,
    pub progress: Option<ProgressTx>,
    /// The connection that sent the prompt.
    pub prompter: &'a Arc<dyn ClientLink>,
    pub tuning: &'a Tuning,
    /// The agent's `max_context_tokens` (`contextWindow` of `usage` updates).
    pub context_window: u64,
    /// Auto-compaction before the turn's later provider calls (ACP, `auto_compact` on).
    pub mid_turn: Option<MidTurn>,
    /// Provider calls of this turn tried again (a failed turn's `error` row, SPEC §22).
    pub retries: std::sync::atomic::AtomicU32,
    /// The turn's budgets and the cost of its calls (SPEC §24.2).
    pub budget: super::budget::Gate,
    /// The plan a plan-mode turn proposed (SPEC §26): its `plan` row, after the turn's.
    pub plan: std::sync::Mutex<Option<String>>,
}

/// Milliseconds since the Unix epoch (`startedAt` of `tool_call`).
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// An approval decision as the vocabulary names it.
fn decision_of(decision: &ApprovalDecision) -> Decision {
    match decision {
        ApprovalDecision::AllowOnce => Decision::AllowOnce,
        ApprovalDecision::AllowAlways => Decision::AllowAlways,
        ApprovalDecision::Reject => Decision::Reject,
        ApprovalDecision::RejectWithEdit(_) => Decision::RejectWithEdit,
    }
}

/// Announces `approval_resolved` for a request when dropped: with the decision once one is
/// known, else as cancelled (the turn that waited for it went away).
struct Resolution<'a> {
    session: &'a LiveSession,
    request_id: String,
    outcome: Option<(Decision, ResolvedReason, Option<DecidedBy>)>,
}

impl Drop for Resolution<'_> {
    fn drop(&mut self) {
        let (decision, reason, decided_by) =
            self.outcome
                .take()
                .unwrap_or((Decision::Reject, ResolvedReason::Cancelled, None));
        self.session
            .stream
            .emit_update(&UpdateKind::ApprovalResolved {
                request_id: std::mem::take(&mut self.request_id),
                decision,
                reason,
                decided_by,
            });
    }
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

    fn update(&self, update: UpdateKind) {
        self.update_ref(&update);
    }

    fn update_ref(&self, update: &UpdateKind) {
        self.session.stream.emit_update(update);
    }

    /// Who should be asked now: the prompting connection if it can answer, else the
    /// owner's most recently subscribed connection that can.
    fn asker(&self) -> Option<Arc<dyn ClientLink>> {
        if self.prompter.is_open() && self.prompter.can_elicit() {
            return Some(Arc::clone(self.prompter));
        }
        self.session.stream.elicitation_target(&self.session.owner)
    }
}

#[async_trait]
impl TurnHost for SessionHost<'_> {
    async fn emit(&self, event: TurnEvent<'_>) {
        match event {
            TurnEvent::MessageChunk { text, so_far } => {
                // The persister records the call's text from the turn's own (shared)
                // buffer, so it keeps no copy of the streamed text.
                self.update(UpdateKind::AgentMessageChunk { text });
                self.persist(Op::Chunk(so_far)).await;
            }
            TurnEvent::ThoughtChunk { text } => {
                self.update(UpdateKind::AgentThoughtChunk { text });
            }
            TurnEvent::ToolCall {
                tool_call_id,
                name,
                raw_input,
            } => self.update(UpdateKind::ToolCall {
                tool_call_id,
                name,
                raw_input,
                started_at: Some(now_millis()),
            }),
            TurnEvent::ToolOutput {
                tool_call_id,
                stream,
                text,
            } => self.update(UpdateKind::ToolOutputChunk {
                tool_call_id,
                stream: match stream {
                    OutputStream::Stdout => ToolStream::Stdout,
                    OutputStream::Stderr => ToolStream::Stderr,
                },
                text,
            }),
            TurnEvent::ToolResult {
                tool_call_id,
                name,
                raw_output,
            } => self.update(UpdateKind::ToolResult {
                tool_call_id,
                name,
                raw_output: Value::String(raw_output),
            }),
            TurnEvent::ContextAppended { message } => match &*message {
                // Not progress: the prompt row was written by `begin_turn`.
                ChatMessage::User { .. } => {}
                // The context's own message, lent: only what the checkpoint still needs
                // is copied, a piece at a time for a long answer.
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    if let Some(tx) = &self.progress {
                        persist::send_step(tx, content, tool_calls).await;
                    }
                }
                ChatMessage::Tool { .. } => self.persist(Op::Step(message.into_owned())).await,
            },
            TurnEvent::Usage { usage } => {
                let totals = self
                    .session
                    .add_usage(usage.input_tokens, usage.output_tokens);
                let cost_usd = self
                    .budget
                    .record(
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cache_read_tokens,
                    )
                    .await;
                if let Some(usd) = cost_usd {
                    self.session.add_cost(usd);
                }
                self.update(UpdateKind::Usage {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    session_total_tokens: totals.session_total,
                    context_tokens: totals.context,
                    context_window: self.context_window,
                    estimated: usage.estimated,
                    cache_read_tokens: usage.cache_read_tokens,
                    cache_write_tokens: usage.cache_write_tokens,
                    cost_usd,
                });
            }
            TurnEvent::ProviderRetry {
                attempt,
                delay,
                reason,
            } => {
                self.retries
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.update(UpdateKind::ProviderRetry {
                    attempt,
                    delay_secs: delay.as_secs_f64(),
                    reason,
                })
            }
            TurnEvent::Hook { report } => self.update(super::hooks::update_of(report)),
            TurnEvent::Plan { plan } => {
                self.update_ref(&UpdateKind::Plan { plan: plan.clone() });
                // Never poisoned: nothing panics while it is held.
                if let Ok(mut slot) = self.plan.lock() {
                    *slot = Some(plan);
                }
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
        self.update(UpdateKind::ApprovalRequest {
            request_id: guard.id.clone(),
            tool_name: ask.tool_name.clone(),
            arguments_summary: ask.arguments_summary.clone(),
            timeout_secs: timeout.as_millis().div_ceil(1000) as u64,
        });
        let mut resolution = Resolution {
            session: self.session,
            request_id: guard.id.clone(),
            outcome: None,
        };
        let decision = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok((decision, by))) => {
                resolution.outcome =
                    Some((decision_of(&decision), ResolvedReason::Answered, Some(by)));
                decision
            }
            _ => {
                tracing::info!(session = %self.session.key.session_id, request = %guard.id, "approval unanswered; rejected");
                resolution.outcome = Some((Decision::Reject, ResolvedReason::Timeout, None));
                ApprovalDecision::Reject
            }
        };
        drop(guard);
        drop(resolution);
        if decision == ApprovalDecision::AllowAlways {
            approvals.allow_always(&ask.tool_name);
        }
        decision
    }

    async fn ask_user(&self, ask: AskUser) -> Option<String> {
        // A person is asked: the session counts as waiting and does not rest (SPEC §22).
        let _asking = self.session.rest.ask();
        let request_id = next_request_id();
        let params = ElicitationParams {
            session_id: self.session.key.session_id.clone().into(),
            mode: "form".to_owned(),
            message: ask.question.clone(),
            requested_schema: requested_schema(&ask),
            request_id: Some(request_id.clone()),
        };
        let params = match serde_json::to_value(params) {
            Ok(params) => params,
            Err(e) => {
                tracing::error!(session = %self.session.key.session_id, "cannot encode a question: {e}");
                return None;
            }
        };
        let deadline = tokio::time::Instant::now() + self.tuning.ask_user_timeout;
        let mut settled = Settled::new(self.session, &request_id);
        let result =
            ask_everyone(self.session, self.prompter, &params, deadline, &mut settled).await;
        drop(settled);
        answer_of(&result?)
    }

    async fn before_call(&self, context: &mut Vec<ChatMessage>, turn_start: usize) -> usize {
        match &self.mid_turn {
            Some(m) => m.before_call(self.session, context, turn_start).await,
            None => turn_start,
        }
    }

    async fn budget_allows(&self) -> bool {
        self.budget.allows(self.session).await
    }

    fn can_ask_user(&self) -> bool {
        self.asker().is_some()
    }

    /// The answer goes on the wire cut to this (`turn_complete`, the prompt's result).
    fn result_text_max(&self) -> usize {
        super::text::MAX_CONTENT
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
