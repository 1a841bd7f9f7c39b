//! Compaction as the session's worker runs it (SPEC §18): [`Runner::compact_job`] for a
//! `session/compact` taken from the queue (its own turn) and [`Runner::auto_compact`] for
//! the running turn before its first provider call. One compaction itself is
//! [`compaction::compact`]; the turn's later calls go through its host's `MidTurn`.
//!
//! Layers: an `impl` of the turn's [`Runner`]; reads the agent settings from the
//! configuration, writes through the store.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use zeroclaw_agent::compact::{self as plan, SummaryError};
use zeroclaw_agent::{ChatMessage, estimate_tokens};
use zeroclaw_config::Config;
use zeroclaw_protocol::Outcome;
use zeroclaw_protocol::TurnId;
use zeroclaw_protocol::compact::CompactResult;
use zeroclaw_store::Mode;

use super::agent;
use super::compaction::{self, Boundary, Compacted, Request, Settings, model_of};
use super::error::SessionError;
use super::live::LiveSession;
use super::turn::Runner;

impl Runner {
    /// Compacts the whole retained context (no turn running).
    pub(crate) async fn compact(
        &mut self,
        session: &LiveSession,
        req: Request<'_>,
    ) -> Result<Compacted, SessionError> {
        let end = self.context.len();
        compaction::compact(
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
        turn_id: &TurnId,
        cancel: CancellationToken,
    ) -> Result<CompactResult, SessionError> {
        if session.key.mode != Mode::Acp {
            return Err(SessionError::invalid(
                "compaction needs an ACP session (a chat session keeps no retained context)",
            ));
        }
        let mut agent = agent::build(config, session, &mut self.providers)?;
        if let Some(hooks) = &mut agent.spec.hooks {
            Arc::make_mut(hooks).turn_id = Some(turn_id.to_string());
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
            Ok(CompactResult {
                session_id: session.key.session_id.clone().into(),
                turn_id: turn_id.clone(),
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
