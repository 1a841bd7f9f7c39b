//! `session/subscribe` and `session/unsubscribe` (SPEC §14): a connection of the owner (or
//! an admin) starts or stops receiving a session's updates; a subscription replays the
//! buffered events after its cursor right after its answer.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::sync::Arc;

use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::stream::{SubscribeResult, UnsubscribeResult};
use zeroclaw_store::{MessagesQuery, Mode};

use super::error::SessionError;
use super::link::{ClientLink, OnAnswer};
use super::stream::Cursor;
use super::{SessionManager, check_owner};

impl SessionManager {
    /// `session/subscribe`: a persisted session that is not live is brought back first.
    /// The replay is released once the answer is queued (`on_answer`).
    #[allow(clippy::too_many_arguments)]
    pub async fn subscribe(
        self: &Arc<Self>,
        principal: &Principal,
        config: &Config,
        link: Arc<dyn ClientLink>,
        session_id: &SessionId,
        mode: Option<Mode>,
        cursor: Cursor,
        on_answer: &dyn OnAnswer,
    ) -> Result<SubscribeResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let mut live = self.live_or_rehydrate(principal, config, &key).await?;
        if live.is_closing() && live.rest.rested() {
            // It rested (SPEC §22) just as it was found: bring it back.
            live = self.live_or_rehydrate(principal, config, &key).await?;
        }
        check_owner(principal, &live.owner, session_id)?;
        let last = self
            .store
            .messages(
                &key,
                MessagesQuery {
                    limit: Some(1),
                    // Only the row's seq is needed.
                    max_content: 0,
                    ..MessagesQuery::default()
                },
            )
            .await?;
        let last_seq = last.rows.last().map_or(0, |r| r.seq);
        let link_id = link.id();
        live.stream
            .subscribe(link, &principal.id, principal.admin, &cursor)?;
        let released = Arc::clone(&live);
        on_answer.after_answer(Box::new(move || released.stream.release(link_id)));
        Ok(SubscribeResult {
            session_id: session_id.clone(),
            subscribed: true,
            active_turn_id: live.running_turn(),
            last_transcript_seq: last_seq,
            pending_approvals: {
                let mut ids = live.approvals.pending_ids();
                ids.extend(live.budgets.pending_ids());
                ids
            },
        })
    }

    /// `session/unsubscribe`: the connection stops receiving the session's updates (a
    /// prompting connection stays unsubscribed until its next prompt).
    pub fn unsubscribe(
        &self,
        principal: &Principal,
        link: &dyn ClientLink,
        session_id: &SessionId,
        mode: Option<Mode>,
    ) -> Result<UnsubscribeResult, SessionError> {
        let key = self.resolve_key(session_id, mode);
        let live = self
            .get(&key)
            .ok_or_else(|| SessionError::not_found(format!("no live session {session_id}")))?;
        check_owner(principal, &live.owner, session_id)?;
        live.stream.unsubscribe(link.id());
        Ok(UnsubscribeResult {
            session_id: session_id.clone(),
            subscribed: false,
        })
    }
}
