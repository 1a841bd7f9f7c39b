//! SPEC §18 operations on a session's history: `session/rewind` (queued on the session's
//! worker like a prompt, see [`rewind`](super::rewind)), `session/fork` (a new live ACP
//! session from another's history, counted against the session limits like
//! `session/new`) and `session/set_title`.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::sync::Arc;

use tokio::sync::oneshot;
use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::UpdateKind;
use zeroclaw_protocol::history::{ForkResult, ForkedFrom, RewindResult, SetTitleResult};
use zeroclaw_protocol::{SessionId, TurnId};
use zeroclaw_store::{ForkRequest, MAX_TITLE_CHARS, Mode, SessionKey, StoreError, ToMessages};

use super::error::SessionError;
use super::link::{ClientLink, OnAnswer};
use super::live::{Job, JobAnswer, JobKind};
use super::manager::{Quota, SessionManager, check_owner};
use super::open::check_agent;
use super::persist;

/// Checks a `session/set_title` title: 1 to [`MAX_TITLE_CHARS`] characters, no control
/// characters (a title is shown on one line).
fn check_title(title: &str) -> Result<(), SessionError> {
    let n = title.chars().count();
    if n == 0 || n > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(SessionError::invalid(format!(
            "title: expected 1 to {MAX_TITLE_CHARS} characters without control characters"
        )));
    }
    Ok(())
}

pub(super) fn acp_only(key: &SessionKey, method: &str) -> Result<(), SessionError> {
    if key.mode != Mode::Acp {
        return Err(SessionError::invalid(format!(
            "{method} needs an ACP session (chat sessions keep a plain history)"
        )));
    }
    Ok(())
}

impl SessionManager {
    /// The owner of `key`'s session (live, else persisted), if `principal` may touch it.
    pub(super) async fn owner_checked(
        &self,
        principal: &Principal,
        key: &SessionKey,
    ) -> Result<String, SessionError> {
        let owner = match self.get(key) {
            Some(live) => live.owner.clone(),
            None => {
                self.store
                    .get_session(key)
                    .await?
                    .ok_or_else(|| {
                        SessionError::not_found(format!("session not found: {}", key.session_id))
                    })?
                    .owner
            }
        };
        check_owner(principal, &owner, &key.session_id)?;
        Ok(owner)
    }

    /// `session/rewind`: queued on the session's worker; -32002 while a turn runs or
    /// anything waits. A persisted session is brought back first, as a prompt would.
    /// `on_answer` is admitted once it is queued or refused (see [`SessionManager::prompt`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn rewind(
        self: &Arc<Self>,
        principal: &Principal,
        link: Arc<dyn ClientLink>,
        config: Arc<Config>,
        session_id: &SessionId,
        mode: Option<Mode>,
        turn_id: TurnId,
        restore_files: bool,
        force: bool,
        on_answer: &dyn OnAnswer,
    ) -> Result<RewindResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        acp_only(&key, "session/rewind")?;
        // Forcing reverts other people's changes: the daemon's owner alone decides that.
        if force && !principal.admin {
            return Err(SessionError::AdminOnly("force".to_owned()));
        }
        self.owner_checked(principal, &key).await?;
        let live = self.live_or_rehydrate(principal, &config, &key).await?;
        check_owner(principal, &live.owner, session_id)?;
        let (reply, answer) = oneshot::channel();
        let (queued, answered) = super::answered::pair();
        let submitted = live.submit(Job {
            kind: JobKind::Rewind {
                turn_id,
                restore_files,
                force,
            },
            link: Arc::clone(&link),
            config,
            reply,
            answered,
        });
        // As for a prompt: the connection's next request for this session goes once this
        // one is queued (or refused), so pipelined calls keep their order.
        link.record_prompt(&live.instance, submitted?);
        on_answer.admitted();
        let answer = answer.await;
        // The worker starts the next job once this answer is queued (SPEC §17.2).
        queued.after_answer(on_answer);
        answer
            .unwrap_or_else(|_| {
                Err(SessionError::not_found(format!(
                    "session {session_id} was closed before the rewind ran"
                )))
            })
            .and_then(JobAnswer::rewound)
    }

    /// `session/fork`: a new live ACP session of the source's owner, agent, cwd and saved
    /// settings, whose history is the source's up to `turn_id` (default: its last finished
    /// turn). The source is unchanged, running or not.
    pub async fn fork(
        self: &Arc<Self>,
        principal: &Principal,
        config: &Config,
        session_id: &SessionId,
        mode: Option<Mode>,
        turn_id: Option<String>,
    ) -> Result<ForkResult, SessionError> {
        let source = self.resolve_key(session_id, mode);
        acp_only(&source, "session/fork")?;
        let owner = self.owner_checked(principal, &source).await?;
        let row =
            self.store.get_session(&source).await?.ok_or_else(|| {
                SessionError::not_found(format!("session not found: {session_id}"))
            })?;
        if row.is_killed() {
            return Err(SessionError::not_found(format!(
                "session {session_id} was killed"
            )));
        }
        check_agent(config, principal, &row.agent_alias)?;
        let new_id = uuid::Uuid::new_v4().to_string();
        let new_key = SessionKey::acp(new_id.clone());
        // Room first (an idle session may be unloaded for it, SPEC §22), so a refused fork
        // writes nothing; the registration checks again.
        let quota = Quota {
            owner: &owner,
            limit: Quota::of(principal, config).limit,
        };
        self.make_room(&new_key, quota).await?;
        let to_messages: ToMessages =
            Box::new(|ctx| Ok(serde_json::to_value(persist::context_from(ctx))?));
        let forked = self
            .store
            .fork(
                ForkRequest {
                    source: source.clone(),
                    turn_id,
                    new_session_id: new_id.clone(),
                },
                to_messages,
            )
            .await
            .map_err(|e| match e {
                e @ StoreError::TurnStillOpen { .. } => {
                    SessionError::invalid(format!("{e}: fork from a finished turn"))
                }
                other => SessionError::from(other),
            })?;
        if let Err(e) = self.live_or_rehydrate(principal, config, &new_key).await {
            // Not live, not kept: the fork counts against the limits like session/new.
            if let Err(d) = self.store.delete(&new_key).await {
                tracing::warn!(session = %new_id, "refused fork not removed: {d}");
            }
            return Err(e);
        }
        tracing::info!(source = %session_id, session = %new_id, turn = ?forked.forked_from.turn_id, "session forked");
        Ok(ForkResult {
            session_id: new_id.into(),
            forked_from: ForkedFrom {
                session_id: forked.forked_from.session_id.into(),
                turn_id: forked.forked_from.turn_id.map(Into::into),
            },
            message_count: super::wire::count(forked.row.message_count),
        })
    }

    /// `session/set_title`: owner or admin; any mode.
    pub async fn set_title(
        &self,
        principal: &Principal,
        session_id: &SessionId,
        mode: Option<Mode>,
        title: String,
    ) -> Result<SetTitleResult, SessionError> {
        check_title(&title)?;
        let key = self.resolve_key(session_id, mode);
        self.owner_checked(principal, &key).await?;
        self.store.set_title(&key, &title).await?;
        // Every watcher learns it at once (SPEC §25: an editor shows it without a turn).
        if let Some(live) = self.get(&key) {
            let updated_at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            live.stream.emit_note(&UpdateKind::SessionInfo {
                title: title.clone(),
                updated_at,
            });
        }
        Ok(SetTitleResult {
            session_id: session_id.clone(),
            title,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_one_to_two_hundred_characters_on_one_line() {
        assert!(check_title("a").is_ok());
        assert!(check_title(&"é".repeat(200)).is_ok());
        assert!(check_title("").is_err());
        assert!(check_title(&"é".repeat(201)).is_err());
        assert!(check_title("two\nlines").is_err());
    }
}
