//! What clients do to sessions once they exist (SPEC §7.1): prompt, cancel, approve,
//! close, kill, delete, list, messages.
//!
//! Kill and delete follow DURABILITY.md: cancel the running turn first (cheap, cannot
//! fail), then the SQLite work, then unregister. When the SQLite work fails the live
//! session stays registered and the caller gets -32603.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use zeroclaw_agent::ApprovalDecision;
use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::history::ForkedFrom;
use zeroclaw_protocol::session::{
    ApproveResult, CancelResult, CloseResult, DeleteResult, KillResult, ListResult, MessagesResult,
    SessionSummary, TurnResult,
};
use zeroclaw_protocol::{DecidedBy, Decision};
use zeroclaw_store::{
    DEFAULT_PAGE_BYTES, ListCursor, ListQuery, MAX_LIST_LIMIT, MessagesQuery, Mode, SessionKey,
    SessionRow,
};

use super::error::SessionError;
use super::link::{ClientLink, OnAnswer};
use super::live::{Job, JobAnswer, JobKind, LiveSession};
use super::prompted::{Incoming, Prompted};
use super::wire;
use super::{SessionManager, check_owner};

/// How long close/kill/delete wait for a cancelled turn to persist before answering.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// A `session/approve` decision.
pub fn approval_decision(decision: Decision, replacement: Option<Value>) -> ApprovalDecision {
    match decision {
        Decision::AllowOnce => ApprovalDecision::AllowOnce,
        Decision::AllowAlways => ApprovalDecision::AllowAlways,
        Decision::Reject => ApprovalDecision::Reject,
        Decision::RejectWithEdit => ApprovalDecision::RejectWithEdit(replacement),
        // Budget answers never reach a tool approval: `answer_budget` takes them.
        Decision::Raise | Decision::Stop => ApprovalDecision::Reject,
    }
}

fn not_live(session_id: &str) -> SessionError {
    SessionError::not_found(format!("no live session {session_id}"))
}

impl SessionManager {
    /// The live session for `(id, mode)` that `principal` may touch.
    fn live_owned(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<Arc<LiveSession>, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self.get(&key).ok_or_else(|| not_live(session_id))?;
        check_owner(principal, &live.owner, session_id)?;
        Ok(live)
    }

    /// `session/prompt`: queues the prompt, subscribes the sending connection to the
    /// session (when there is room), and waits for the turn's result. `on_answer` is
    /// admitted once the prompt is queued or refused, before the wait: the caller's next request
    /// for this session may then go ahead (SPEC §14 "Order").
    #[allow(clippy::too_many_arguments)]
    pub async fn prompt(
        self: &Arc<Self>,
        principal: &Principal,
        link: Arc<dyn ClientLink>,
        config: Arc<Config>,
        session_id: &SessionId,
        mode: Option<Mode>,
        prompt: Incoming,
        on_answer: &dyn OnAnswer,
    ) -> Result<TurnResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let (reply, answer) = oneshot::channel();
        let (queued, answered) = super::answered::pair();
        let mut job = Job {
            kind: JobKind::Prompt {
                prompted: Prompted::new(
                    prompt.text_len,
                    prompt.attachments,
                    prompt.by.as_deref().unwrap_or(&principal.id),
                ),
                prompt: prompt.text,
                turn_id: prompt.turn_id,
            },
            link: Arc::clone(&link),
            config: Arc::clone(&config),
            reply,
            answered,
        };
        // A session that rested (SPEC §22) just as this prompt found it refuses the job as
        // closed; it is brought back from the store and the prompt goes there, once.
        let mut tries = 0;
        let (live, submitted) = loop {
            tries += 1;
            let live = self.live_or_rehydrate(principal, &config, &key).await?;
            check_owner(principal, &live.owner, session_id)?;
            if !live
                .stream
                .subscribe_prompter(&link, &principal.id, principal.admin)
            {
                tracing::debug!(session = %session_id, "prompt accepted without a subscription: the session has the most subscribers");
            }
            match live.submit_or_return(job) {
                Err((_, back)) if tries < 2 && live.rest.rested() => {
                    live.stream.unsubscribe(link.id());
                    job = *back;
                }
                other => break (live, other.map_err(|(e, _)| e)),
            }
        };
        // A refusal (busy) is returned without admitting: the caller lets its next request
        // for this session go only once the refusal is answered, so refusals keep sending
        // order. Queued: recorded first (a later `session/cancel` must see it), then the
        // next request may go ahead while this one waits for its turn.
        link.record_prompt(&live.instance, submitted?);
        on_answer.admitted();
        let answer = answer
            .await
            .unwrap_or_else(|_| Err(SessionError::failed("the session stopped before answering")));
        // The worker starts the next job once this answer is queued (SPEC §17.2).
        queued.after_answer(on_answer);
        // A prompt that raced the close, kill or delete of its session lost to it: that is
        // "no such session", not an internal failure (SPEC §17.1).
        match answer {
            Err(SessionError::Failed(_) | SessionError::Store(_)) if live.is_closing() => {
                Err(SessionError::not_found(format!(
                    "session {session_id} was closed before the prompt was answered"
                )))
            }
            other => other.and_then(JobAnswer::turn),
        }
    }

    /// `session/cancel`: applies to this connection's last prompt to the session or a later
    /// one, never to an earlier turn (SPEC §14 "Order").
    pub fn cancel(
        &self,
        principal: &Principal,
        link: &dyn ClientLink,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<CancelResult, SessionError> {
        let live = self.live_owned(principal, session_id, mode)?;
        if !live.cancel_from(link.last_prompt(&live.instance)) {
            return Err(SessionError::not_found(format!(
                "no active turn in session {session_id}"
            )));
        }
        Ok(CancelResult {
            session_id: session_id.clone(),
            cancelled: true,
        })
    }

    /// `session/approve`: only the session's owner may answer, from any of its
    /// connections; `client` names the face it answered from (SPEC §22 `decidedBy`).
    pub fn approve(
        &self,
        principal: &Principal,
        client: &str,
        session_id: &SessionId,
        mode: Option<Mode>,
        request_id: &str,
        decision: ApprovalDecision,
    ) -> Result<ApproveResult, SessionError> {
        let (live, by) = self.owners_answer(principal, client, session_id, mode)?;
        if !live.approvals.answer(request_id, decision, by) {
            return Err(SessionError::invalid(format!(
                "no pending approval {request_id} in session {session_id}"
            )));
        }
        Ok(acknowledged(session_id, request_id))
    }

    /// `session/approve` of a `budget_request` (SPEC §24.2): `raise_by` raises the budget
    /// (`Some`, > 0), `None` stops the turn. Only the owner may answer.
    pub fn answer_budget(
        &self,
        principal: &Principal,
        client: &str,
        session_id: &SessionId,
        mode: Option<Mode>,
        request_id: &str,
        raise_by: Option<f64>,
    ) -> Result<ApproveResult, SessionError> {
        let (live, by) = self.owners_answer(principal, client, session_id, mode)?;
        if !live.budgets.answer(request_id, raise_by, by) {
            return Err(SessionError::invalid(format!(
                "requestId: no pending budget request {request_id} in session {session_id}"
            )));
        }
        Ok(acknowledged(session_id, request_id))
    }

    /// The live session an answer (approval or budget) is for, and who decided it: only its
    /// owner may answer.
    fn owners_answer(
        &self,
        principal: &Principal,
        client: &str,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<(Arc<LiveSession>, DecidedBy), SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self.get(&key).ok_or_else(|| not_live(session_id))?;
        if principal.id != live.owner {
            return Err(SessionError::not_owner(session_id));
        }
        let by = DecidedBy {
            principal: principal.id.clone(),
            client: client.to_owned(),
        };
        Ok((live, by))
    }

    /// Unregisters and stops a live session, waiting for its cancelled turn to persist;
    /// once it stopped, its file checkpoints leave memory too.
    async fn unload(&self, live: &Arc<LiveSession>) {
        self.remove(live);
        live.close();
        if live.wait_stopped(STOP_WAIT).await && live.key.mode == Mode::Acp {
            self.files.unload(&live.key.session_id).await;
        }
    }

    /// `session/close`: unloads the live session; its history stays recoverable.
    pub async fn close(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<CloseResult, SessionError> {
        let live = self.live_owned(principal, session_id, mode)?;
        self.unload(&live).await;
        Ok(CloseResult {
            session_id: session_id.clone(),
            closed: true,
        })
    }

    /// The live session (if any) and the key a kill/delete addresses, ownership checked
    /// against the live owner or the persisted row.
    async fn target(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<(SessionKey, Option<Arc<LiveSession>>), SessionError> {
        let key = self.resolve_key(session_id, mode);
        if let Some(live) = self.get(&key) {
            check_owner(principal, &live.owner, session_id)?;
            return Ok((key, Some(live)));
        }
        self.owned_row(principal, &key, session_id).await?;
        Ok((key, None))
    }

    /// The persisted row for `key`, if the caller may touch it (-32000 when there is none,
    /// -32003 when it belongs to someone else).
    async fn owned_row(
        &self,
        principal: &Principal,
        key: &SessionKey,
        session_id: &SessionId,
    ) -> Result<SessionRow, SessionError> {
        let row =
            self.store.get_session(key).await?.ok_or_else(|| {
                SessionError::not_found(format!("session not found: {session_id}"))
            })?;
        check_owner(principal, &row.owner, session_id)?;
        Ok(row)
    }

    /// `session/kill`: tombstones the row (never rehydrated again; transcript readable).
    pub async fn kill(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<KillResult, SessionError> {
        self.kill_or_delete(principal, session_id, mode, Removal::Kill)
            .await?;
        Ok(KillResult {
            session_id: session_id.clone(),
            killed: true,
        })
    }

    /// `session/delete`: removes the row with its transcript and checkpoints, then the
    /// live session. The other mode's session with the same id is left alone.
    pub async fn delete(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<DeleteResult, SessionError> {
        self.kill_or_delete(principal, session_id, mode, Removal::Delete)
            .await?;
        Ok(DeleteResult {
            session_id: session_id.clone(),
            deleted: true,
        })
    }

    /// Kill and delete share their order: cancel the running turn first (cheap, cannot
    /// fail), then the fallible SQLite work, and only after it succeeded unload the live
    /// session — a storage failure leaves the live session and its registration in place.
    async fn kill_or_delete(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
        how: Removal,
    ) -> Result<(), SessionError> {
        let (key, live) = self.target(principal, session_id, mode).await?;
        if let Some(live) = &live {
            live.cancel_turn();
        }
        match how {
            Removal::Kill => self.store.kill(&key).await?,
            Removal::Delete => {
                self.store.delete(&key).await?;
                if key.mode == Mode::Acp {
                    self.files.delete_session(&key.session_id).await;
                    if live.is_none() {
                        // No turn of it can be running: the id is free at once.
                        self.files.unload(&key.session_id).await;
                    }
                }
            }
        }
        if let Some(live) = &live {
            self.unload(live).await;
        }
        match how {
            Removal::Kill => {
                tracing::info!(session = %session_id, mode = %key.mode, "session killed")
            }
            Removal::Delete => {
                tracing::info!(session = %session_id, mode = %key.mode, "session deleted")
            }
        }
        Ok(())
    }

    /// `session/list`: one page of the persisted, non-tombstoned rows the caller may see,
    /// newest activity first (SPEC §17): at most `limit` (default and maximum 500) rows and
    /// never more than [`DEFAULT_PAGE_BYTES`] of them; `nextCursor` continues the walk (null
    /// on the last page).
    pub async fn list(
        &self,
        principal: &Principal,
        mode: Option<Mode>,
        limit: Option<u32>,
        cursor: Option<&str>,
        search: Option<String>,
        cwd: Option<String>,
    ) -> Result<ListResult, SessionError> {
        let limit = match limit {
            Some(0) => return Err(SessionError::invalid("limit: expected 1 or more")),
            Some(n) => n.min(MAX_LIST_LIMIT),
            None => MAX_LIST_LIMIT,
        };
        let after = match cursor {
            Some(text) => Some(
                ListCursor::decode(text)
                    .ok_or_else(|| SessionError::invalid("cursor: not a session/list cursor"))?,
            ),
            None => None,
        };
        let page = self
            .store
            .list_page(ListQuery {
                mode,
                owner: (!principal.admin).then(|| principal.id.clone()),
                limit,
                after,
                search: search.filter(|s| !s.is_empty()),
                cwd: cwd.filter(|c| !c.is_empty()).map(|c| resolved_dir(&c)),
            })
            .await?;
        let count = page.rows.len();
        let mut sessions = Vec::with_capacity(count);
        let mut used = 0usize;
        let mut last = None;
        for (cursor, r) in page.rows {
            let live = self.get(&r.key());
            let entry = SessionSummary {
                session_id: r.session_id.into(),
                mode: wire::mode(r.mode),
                agent_alias: r.agent_alias,
                created_at: r.created_at,
                last_activity: r.last_activity,
                message_count: wire::count(r.message_count),
                live: live.is_some(),
                interaction_surface: r.interaction_surface,
                active_turn_id: live.as_ref().and_then(|l| l.running_turn()),
                subscribers: live.as_ref().map_or(0, |l| l.stream.subscriber_count()) as u32,
                title: r.title,
                forked_from: r.forked_from.map(|f| ForkedFrom {
                    session_id: f.session_id.into(),
                    turn_id: f.turn_id.map(Into::into),
                }),
                cwd: r.cwd,
            };
            let size = serde_json::to_vec(&entry).map_or(0, |v| v.len()) + 1;
            if used + size > DEFAULT_PAGE_BYTES && !sessions.is_empty() {
                break;
            }
            used += size;
            sessions.push(entry);
            last = Some(cursor);
        }
        let next = if sessions.len() < count || page.has_more {
            last.map(|c| c.encode())
        } else {
            None
        };
        Ok(ListResult {
            sessions,
            next_cursor: next,
        })
    }

    /// `session/messages`: the raw visible transcript, paged to fit one frame.
    pub async fn messages(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
        limit: Option<u32>,
        before_seq: Option<i64>,
        include_rewound: bool,
    ) -> Result<MessagesResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        self.owned_row(principal, &key, session_id).await?;
        let page = self
            .store
            .messages(
                &key,
                MessagesQuery {
                    limit,
                    before_seq,
                    include_rewound,
                    ..MessagesQuery::default()
                },
            )
            .await?;
        Ok(MessagesResult {
            session_id: session_id.clone(),
            messages: page.rows.into_iter().map(wire::message).collect(),
            total: wire::count(page.total),
            has_more: Some(page.has_more),
        })
    }
}

/// A `session/list` `cwd` filter as sessions record theirs: resolved (symlinks followed)
/// when it exists, else as given (it then matches nothing a session recorded).
fn resolved_dir(dir: &str) -> String {
    std::path::Path::new(dir)
        .canonicalize()
        .map_or_else(|_| dir.to_owned(), |p| p.display().to_string())
}

/// What `session/kill` and `session/delete` do to the persisted row.
#[derive(Clone, Copy)]
enum Removal {
    /// Tombstone it.
    Kill,
    /// Remove it with its transcript and checkpoints.
    Delete,
}

/// The answer to an approval or budget request that was taken.
fn acknowledged(session_id: &SessionId, request_id: &str) -> ApproveResult {
    ApproveResult {
        session_id: session_id.clone(),
        request_id: request_id.to_owned(),
        acknowledged: true,
    }
}
