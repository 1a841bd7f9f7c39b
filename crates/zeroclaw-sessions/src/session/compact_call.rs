//! `session/compact` (SPEC §18) as the sessions service takes it: the same checks as a
//! prompt (a persisted session is brought back, owner or admin), then the compaction is
//! queued behind the prompts already waiting and the call answers when the worker has run
//! it ([`compact`](super::compact)).

use std::sync::Arc;

use tokio::sync::oneshot;
use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::compact::CompactResult;
use zeroclaw_store::Mode;

use super::error::SessionError;
use super::link::{ClientLink, OnAnswer};
use super::live::{Job, JobAnswer, JobKind};
use super::{SessionManager, check_owner};

/// Longest `instructions`, in bytes.
pub const MAX_INSTRUCTIONS: usize = 16 * 1024;

impl SessionManager {
    /// `session/compact {sessionId, mode?, instructions?}`, queued like a prompt:
    /// `on_answer` is admitted once it is queued or refused (see [`SessionManager::prompt`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn compact(
        self: &Arc<Self>,
        principal: &Principal,
        link: Arc<dyn ClientLink>,
        config: Arc<Config>,
        session_id: &SessionId,
        mode: Option<Mode>,
        instructions: Option<String>,
        on_answer: &dyn OnAnswer,
    ) -> Result<CompactResult, SessionError> {
        if instructions
            .as_ref()
            .is_some_and(|i| i.len() > MAX_INSTRUCTIONS)
        {
            return Err(SessionError::invalid(format!(
                "instructions are longer than {MAX_INSTRUCTIONS} bytes"
            )));
        }
        let key = self.resolve_key(session_id, mode);
        let live = self.live_or_rehydrate(principal, &config, &key).await?;
        check_owner(principal, &live.owner, session_id)?;
        // The caller sees `context_compacted` like a prompter sees its turn's events.
        let _ = live
            .stream
            .subscribe_prompter(&link, &principal.id, principal.admin);
        let (reply, answer) = oneshot::channel();
        let (queued, answered) = super::answered::pair();
        let submitted = live.submit(Job {
            kind: JobKind::Compact { instructions },
            link: Arc::clone(&link),
            config,
            reply,
            answered,
        });
        link.record_prompt(&live.instance, submitted?);
        on_answer.admitted();
        let answer = answer
            .await
            .unwrap_or_else(|_| Err(SessionError::failed("the session stopped before answering")));
        // The worker starts the next job once this answer is queued (SPEC §17.2).
        queued.after_answer(on_answer);
        match answer {
            Err(SessionError::Failed(_) | SessionError::Store(_)) if live.is_closing() => {
                Err(SessionError::not_found(format!(
                    "session {session_id} was closed before the compaction was answered"
                )))
            }
            other => other.and_then(JobAnswer::compacted),
        }
    }
}
