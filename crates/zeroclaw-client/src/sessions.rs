//! The typed layer over the session methods (SPEC §7, §14, §17): `session/new`,
//! `session/prompt`, `session/cancel`, `session/approve`, `session/subscribe`, … with the
//! vocabulary's params and results, and the answer to the daemon's `elicitation/create`
//! questions (the `ask_user` tool).
//!
//! A turn is driven from two places at once: one task waits for [`ClientHandle::prompt`]
//! to answer while another reads [`Events`](crate::Events) (updates, questions) and answers
//! with [`ClientHandle::approve`], [`ClientHandle::cancel`] or
//! [`ClientHandle::answer_elicitation`] on a clone of the same handle.

use std::time::Duration;

use zeroclaw_protocol::session::{
    ApproveParams, ListParams, Prompt, SessionNewParams, SessionNewResult, SessionPromptParams,
    SessionRef, SessionSummary, TurnResult,
};
use zeroclaw_protocol::stream::{SubscribeParams, SubscribeResult};
use zeroclaw_protocol::{Call, Decision, call};

use crate::connection::ClientHandle;
use crate::elicitation::{ElicitationAnswer, ElicitationRequest};
use crate::error::ClientError;

/// How long [`ClientHandle::prompt`] waits for a turn to end. Turns legitimately wait on
/// people (approvals up to 120 s each, questions up to 300 s each), so this is generous;
/// cancel a turn with [`ClientHandle::cancel`] rather than by timing out.
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Params naming one session (any mode).
fn session(session_id: &str) -> SessionRef {
    SessionRef {
        session_id: session_id.into(),
        mode: None,
    }
}

impl ClientHandle {
    /// A call whose answer only has to be a success (`session/cancel`, `session/approve`,
    /// `session/close`, `session/unsubscribe`: their results only echo the request).
    async fn acknowledged<C: Call>(&self, params: &C::Params) -> Result<(), ClientError> {
        self.call_typed_value::<C>(params).await.map(drop)
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        params: &SessionNewParams,
    ) -> Result<SessionNewResult, ClientError> {
        self.call_typed::<call::SessionNew>(params).await
    }

    /// `session/prompt`: waits until the turn ends (up to [`PROMPT_TIMEOUT`]). The turn's
    /// `session/update`s arrive meanwhile on the [`Events`](crate::Events) queue; run this
    /// in its own task (or `select!` on it) while reading them. Every update the daemon
    /// sent before its answer is queued before this returns: drain the rest with
    /// [`Events::try_recv`](crate::Events::try_recv) (a `select!` that saw the answer may
    /// not have seen the last updates, the reader runs on another thread).
    pub async fn prompt(&self, session_id: &str, prompt: &str) -> Result<TurnResult, ClientError> {
        let params = SessionPromptParams {
            session_id: session_id.into(),
            prompt: Prompt::Text(prompt.to_owned()),
            mode: None,
            attachments: None,
        };
        self.call_typed_within::<call::SessionPrompt>(&params, PROMPT_TIMEOUT)
            .await
    }

    /// `session/cancel`: stops the running turn (its `prompt` then answers `cancelled`).
    pub async fn cancel(&self, session_id: &str) -> Result<(), ClientError> {
        self.acknowledged::<call::SessionCancel>(&session(session_id))
            .await
    }

    /// `session/approve`: answers an `approval_request` (without replacement arguments;
    /// send [`ApproveParams`] with [`ClientHandle::approve_with`] for those).
    pub async fn approve(
        &self,
        session_id: &str,
        request_id: &str,
        decision: Decision,
    ) -> Result<(), ClientError> {
        self.approve_with(&ApproveParams {
            session_id: session_id.into(),
            request_id: request_id.to_owned(),
            decision,
            replacement: None,
            raise_by: None,
            mode: None,
        })
        .await
    }

    /// `session/approve` of a `budget_request` (SPEC §24.2): `Some(amount)` raises the
    /// budget by it, `None` stops the turn.
    pub async fn answer_budget(
        &self,
        session_id: &str,
        request_id: &str,
        raise_by: Option<f64>,
    ) -> Result<(), ClientError> {
        self.approve_with(&ApproveParams {
            session_id: session_id.into(),
            request_id: request_id.to_owned(),
            decision: if raise_by.is_some() {
                Decision::Raise
            } else {
                Decision::Stop
            },
            replacement: None,
            raise_by,
            mode: None,
        })
        .await
    }

    /// `session/approve` with every field the method takes.
    pub async fn approve_with(&self, params: &ApproveParams) -> Result<(), ClientError> {
        self.acknowledged::<call::SessionApprove>(params).await
    }

    /// `session/subscribe`: receive the session's updates from now on, after a replay of
    /// the buffered ones past `(turn_id, after_event_seq)` (the running turn's when `None`).
    pub async fn subscribe(
        &self,
        session_id: &str,
        cursor: Option<(&str, u64)>,
    ) -> Result<SubscribeResult, ClientError> {
        let params = SubscribeParams {
            session_id: session_id.into(),
            mode: None,
            turn_id: cursor.map(|(turn_id, _)| turn_id.into()),
            after_event_seq: cursor.map(|(_, after)| after),
        };
        self.call_typed::<call::SessionSubscribe>(&params).await
    }

    /// `session/unsubscribe`.
    pub async fn unsubscribe(&self, session_id: &str) -> Result<(), ClientError> {
        self.acknowledged::<call::SessionUnsubscribe>(&session(session_id))
            .await
    }

    /// `session/close`: unloads the live session (history stays).
    pub async fn close_session(&self, session_id: &str) -> Result<(), ClientError> {
        self.acknowledged::<call::SessionClose>(&session(session_id))
            .await
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
        let params = ListParams {
            mode: None,
            limit,
            cursor: cursor.map(str::to_owned),
            search: None,
            cwd: None,
        };
        let page = self.call_typed::<call::SessionList>(&params).await?;
        Ok((page.sessions, page.next_cursor))
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
