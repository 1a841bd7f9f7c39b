//! Compaction of a session's retained provider context (SPEC §18), run by the session's
//! worker: [`Runner::compact_job`] for a `session/compact` taken from the queue (its own
//! turn), [`Runner::auto_compact`] for the running turn before its first provider call,
//! and [`MidTurn`] (through the turn's host) before its later ones.
//!
//! One compaction: plan (the last `keep_recent_turns` whole turns are kept) → the
//! summarization call on the session's provider (same model, no tools) → ONE store
//! transaction writing the visible `compaction` row and the new snapshot `[summary] + kept
//! turns` with its boundary → only then the in-memory context is replaced and
//! `context_compacted` is sent. A failed write sends nothing and keeps the old context,
//! which the old snapshot still describes; a kill before the commit leaves the old
//! snapshot in force.
//!
//! Layers: an `impl` of the turn's [`Runner`]; reads the agent settings from the
//! configuration, writes through the store.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::compact::{self as plan, SummaryError};
use zeroclaw_agent::{AgentSpec, ChatMessage, Provider, estimate_tokens};
use zeroclaw_config::Config;
use zeroclaw_protocol::compact::CompactResult;
use zeroclaw_protocol::{Outcome, UpdateKind};
use zeroclaw_store::{Mode, Store, StoreError};

use super::agent;
use super::error::{SessionError, encode};
use super::live::LiveSession;
use super::tuning::Tuning;
use super::turn::Runner;

/// The agent's compaction settings (SPEC §18).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    pub keep_recent_turns: usize,
    pub auto_compact: bool,
    pub compact_threshold: f64,
}

impl Settings {
    pub fn of(agent: &zeroclaw_config::Agent) -> Settings {
        Settings {
            keep_recent_turns: agent.keep_recent_turns as usize,
            auto_compact: agent.auto_compact,
            compact_threshold: agent.compact_threshold,
        }
    }

    /// Whether a provider call with `context` (tokens estimated) goes over
    /// `compact_threshold` × `max_context_tokens`.
    pub fn over_threshold(&self, context_tokens: usize, max_context_tokens: usize) -> bool {
        self.auto_compact
            && context_tokens as f64 > self.compact_threshold * max_context_tokens as f64
    }
}

/// What a compaction did.
#[derive(Debug)]
pub(crate) enum Compacted {
    /// Nothing older than the kept turns: nothing changed.
    Nothing { tokens: usize },
    Done {
        tokens_before: usize,
        tokens_after: usize,
        summarized: usize,
    },
    /// The summary call failed or was cancelled: nothing changed.
    NoSummary(SummaryError),
}

/// Where the new snapshot's boundary lies.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Boundary {
    /// A compaction of its own: the snapshot covers the whole transcript, its own
    /// `compaction` row included.
    OwnRow,
    /// Inside a running turn: the snapshot covers the rows up to this seq (the row before
    /// the turn's prompt), so recovery replays the turn after it.
    Before(i64),
}

/// One compaction request, as the worker runs it.
pub(crate) struct Request<'a> {
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub settings: Settings,
    pub instructions: Option<&'a str>,
    pub turn_id: &'a str,
    pub boundary: Boundary,
    pub cancel: &'a CancellationToken,
    /// The session's hooks: `pre_compact` runs once there is something to compact.
    pub hooks: Option<Arc<zeroclaw_agent::hooks::HookSet>>,
}

/// The model the session's next provider call names (its `session/configure` choice
/// first): the summary is asked of the same model.
pub(crate) fn model_of(spec: &AgentSpec) -> String {
    spec.live
        .as_ref()
        .and_then(|l| l.model())
        .unwrap_or_else(|| spec.model.clone())
}

/// Compacts what precedes `turn_start` in `context` (SPEC §18): see the module doc.
/// `context[turn_start..]` (the running turn's messages, when there is one) stays as it
/// is after the compacted part, and is not in the snapshot. `Err` only when the commit
/// failed (the context is then unchanged and nothing was sent).
pub(crate) async fn compact(
    store: &Store,
    tuning: &Tuning,
    session: &LiveSession,
    context: &mut Vec<ChatMessage>,
    turn_start: usize,
    req: Request<'_>,
) -> Result<Compacted, SessionError> {
    let tokens_before = estimate_tokens(context);
    let before_turn = &context[..turn_start];
    let Some(cut) = plan::plan(before_turn, req.settings.keep_recent_turns) else {
        return Ok(Compacted::Nothing {
            tokens: tokens_before,
        });
    };
    let manual = matches!(req.boundary, Boundary::OwnRow);
    super::hooks::pre_compact(req.hooks.as_deref(), session, manual).await;
    let before_turn = &context[..turn_start];
    let ask = plan::summary_request(&req.model, &before_turn[..cut.cut], req.instructions);
    let summary = match plan::summarize(req.provider.as_ref(), ask, req.cancel).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(session = %session.key.session_id, turn = %req.turn_id, "no summary, the context is not compacted: {e}");
            return Ok(Compacted::NoSummary(e));
        }
    };
    let retained = plan::compacted_context(&summary, &before_turn[cut.cut..]);
    let messages = serde_json::to_value(&retained)
        .map_err(|e| SessionError::internal(format!("cannot encode a snapshot: {e}")))?;
    let covers = match req.boundary {
        Boundary::OwnRow => None,
        Boundary::Before(seq) => Some(seq),
    };
    let committed = if tuning.fail_snapshots.load(Ordering::SeqCst) {
        Err(StoreError::InjectedFailure)
    } else {
        store
            .commit_compaction(&session.key, req.turn_id, &summary, covers, messages)
            .await
    };
    if let Err(e) = committed {
        tracing::warn!(session = %session.key.session_id, "compaction not saved, the context stays: {e}");
        return Err(SessionError::internal(format!(
            "the compaction could not be saved: {e}"
        )));
    }
    context.splice(..turn_start, retained);
    let tokens_after = estimate_tokens(context);
    session.stream.emit_update(&UpdateKind::ContextCompacted {
        tokens_before: tokens_before as u64,
        tokens_after: tokens_after as u64,
        summarized_messages: cut.cut as u64,
        summary,
    });
    Ok(Compacted::Done {
        tokens_before,
        tokens_after,
        summarized: cut.cut,
    })
}

/// Whether a provider call with `context` should compact what precedes `turn_start` first.
pub(crate) fn wants(
    settings: &Settings,
    max_context_tokens: usize,
    context: &[ChatMessage],
    turn_start: usize,
) -> bool {
    settings.over_threshold(estimate_tokens(context), max_context_tokens)
        && plan::plan(&context[..turn_start], settings.keep_recent_turns).is_some()
}

/// What the running turn's host needs to compact before a later provider call of the
/// turn (after tool rounds), with the same boundary as at the turn's start.
pub(crate) struct MidTurn {
    pub store: Store,
    pub tuning: Tuning,
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub settings: Settings,
    pub max_context_tokens: usize,
    pub turn_id: String,
    pub cancel: CancellationToken,
    /// The turn's prompt row, once `begin_turn` committed it.
    pub prompt_seq: Arc<OnceLock<i64>>,
    pub hooks: Option<Arc<zeroclaw_agent::hooks::HookSet>>,
}

impl MidTurn {
    /// Compacts before the call when it would go over the threshold; returns where the
    /// turn's messages start afterwards. Nothing happens before the prompt row is on disk.
    pub async fn before_call(
        &self,
        session: &LiveSession,
        context: &mut Vec<ChatMessage>,
        turn_start: usize,
    ) -> usize {
        let Some(&prompt_seq) = self.prompt_seq.get() else {
            return turn_start;
        };
        if !wants(&self.settings, self.max_context_tokens, context, turn_start) {
            return turn_start;
        }
        let req = Request {
            provider: Arc::clone(&self.provider),
            model: self.model.clone(),
            settings: self.settings,
            instructions: None,
            turn_id: &self.turn_id,
            boundary: Boundary::Before(prompt_seq - 1),
            cancel: &self.cancel,
            hooks: self.hooks.clone(),
        };
        let len = context.len();
        match compact(&self.store, &self.tuning, session, context, turn_start, req).await {
            Ok(_) => turn_start - (len - context.len()),
            Err(e) => {
                tracing::warn!(session = %session.key.session_id, "auto-compaction failed: {e}");
                turn_start
            }
        }
    }
}

impl Runner {
    /// Compacts the whole retained context (no turn running).
    pub(crate) async fn compact(
        &mut self,
        session: &LiveSession,
        req: Request<'_>,
    ) -> Result<Compacted, SessionError> {
        let end = self.context.len();
        compact(
            &self.store,
            &self.tuning,
            session,
            &mut self.context,
            end,
            req,
        )
        .await
    }

    /// A queued `session/compact`, run as its own turn `turn_id`.
    pub(crate) async fn compact_job(
        &mut self,
        session: &Arc<LiveSession>,
        config: &Config,
        instructions: Option<&str>,
        turn_id: &str,
        cancel: CancellationToken,
    ) -> Result<Value, SessionError> {
        if session.key.mode != Mode::Acp {
            return Err(SessionError::invalid_params(
                "compaction needs an ACP session (a chat session keeps no retained context)",
            ));
        }
        let mut agent = agent::build(config, session, &mut self.providers)?;
        if let Some(hooks) = &mut agent.spec.hooks {
            Arc::make_mut(hooks).turn_id = Some(turn_id.to_owned());
        }
        if self.needs_recover {
            self.reload(session).await?;
        }
        let req = Request {
            provider: Arc::clone(&agent.spec.provider),
            model: model_of(&agent.spec),
            settings: agent.compaction,
            instructions,
            turn_id,
            boundary: Boundary::OwnRow,
            cancel: &cancel,
            hooks: agent.spec.hooks.clone(),
        };
        let result = |outcome, before: usize, after: usize, summarized: usize, error| {
            encode(CompactResult {
                session_id: session.key.session_id.clone(),
                turn_id: turn_id.to_owned(),
                outcome,
                tokens_before: before as u64,
                tokens_after: after as u64,
                summarized_messages: summarized as u64,
                error,
            })
        };
        match self.compact(session, req).await? {
            Compacted::Nothing { tokens } => result(Outcome::Completed, tokens, tokens, 0, None),
            Compacted::Done {
                tokens_before,
                tokens_after,
                summarized,
            } => result(
                Outcome::Completed,
                tokens_before,
                tokens_after,
                summarized,
                None,
            ),
            Compacted::NoSummary(SummaryError::Cancelled) => {
                let tokens = estimate_tokens(&self.context);
                result(Outcome::Cancelled, tokens, tokens, 0, None)
            }
            Compacted::NoSummary(e) => {
                let tokens = estimate_tokens(&self.context);
                result(Outcome::Failed, tokens, tokens, 0, Some(e.to_string()))
            }
        }
    }

    /// Auto-compaction (SPEC §18) before the running turn's provider call: when the
    /// context plus `prompt` would go over the threshold, the whole turns before this one
    /// are compacted, with the snapshot boundary just before the turn's prompt row
    /// (`prompt_seq`). Its events belong to the running turn. A failure leaves the context
    /// as it was (auto-trim still applies at the turn's end).
    pub(crate) async fn auto_compact(
        &mut self,
        session: &LiveSession,
        req: Request<'_>,
    ) -> Option<Compacted> {
        match self.compact(session, req).await {
            Ok(done) => Some(done),
            Err(e) => {
                tracing::warn!(session = %session.key.session_id, "auto-compaction failed: {e}");
                None
            }
        }
    }

    /// Whether the running turn should compact before its first provider call: the
    /// context plus `prompt` would go over the threshold.
    pub(crate) fn wants_auto_compact(
        &self,
        settings: &Settings,
        max_context_tokens: usize,
        prompt: &str,
    ) -> bool {
        let tokens = estimate_tokens(&self.context) + estimate_tokens(&[ChatMessage::user(prompt)]);
        settings.over_threshold(tokens, max_context_tokens)
            && plan::plan(&self.context, settings.keep_recent_turns).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_a_fraction_of_the_window() {
        let s = Settings {
            keep_recent_turns: 2,
            auto_compact: true,
            compact_threshold: 0.8,
        };
        assert!(!s.over_threshold(80, 100));
        assert!(s.over_threshold(81, 100));
        let off = Settings {
            auto_compact: false,
            ..s
        };
        assert!(!off.over_threshold(1_000, 100));
    }
}
