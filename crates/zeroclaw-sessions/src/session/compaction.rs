//! Compaction of a retained provider context (SPEC §18), the parts that know nothing of
//! the session's worker: the agent's [`Settings`], one [`compact`] (plan → summarization
//! call on the session's provider → ONE store transaction writing the visible
//! `compaction` row and the snapshot `[summary] + kept turns` → only then the context in
//! memory replaced and `context_compacted` sent), and [`MidTurn`], which the turn's host
//! runs before a turn's later provider calls. The worker's side (a queued
//! `session/compact`, auto-compaction at a turn's start) is in [`compact`](super::compact).
//!
//! A failed write sends nothing and keeps the old context, which the old snapshot still
//! describes; a kill before the commit leaves the old snapshot in force.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;
use zeroclaw_agent::compact::{self as plan, SummaryError};
use zeroclaw_agent::{AgentSpec, ChatMessage, Provider, estimate_tokens};
use zeroclaw_protocol::UpdateKind;
use zeroclaw_store::{Store, StoreError};

use super::error::SessionError;
use super::live::LiveSession;
use super::tuning::Tuning;

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
    let ask = plan::summary_request(&req.model, &before_turn[..cut.cut], req.instructions);
    let summary = match plan::summarize(req.provider.as_ref(), ask, req.cancel).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(session = %session.key.session_id, turn = %req.turn_id, "no summary, the context is not compacted: {e}");
            return Ok(Compacted::NoSummary(e));
        }
    };
    let retained = plan::compacted_context(&summary, &before_turn[cut.cut..]);
    // Encoded as it is written, a spilled answer copied from its file (issue 27).
    let messages = super::long_answers::Snapshot(retained.clone());
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
        return Err(SessionError::failed(format!(
            "the compaction could not be saved: {e}"
        )));
    }
    context.splice(..turn_start, retained);
    let tokens_after = estimate_tokens(context);
    // What the context amounts to now, for `session/status` (the dashboard's meter) until
    // the next provider call reports it (SPEC §22).
    let mut usage = session.usage();
    usage.context = tokens_after as u64;
    session.set_usage(usage);
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
