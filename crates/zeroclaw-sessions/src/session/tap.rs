//! A daemon-wide observer of the sessions' updates ([`UpdateTap`], SPEC §24.3
//! notifications): each live session's stream shows it the updates it calls notable, with
//! the session's owner and whether one of the owner's subscribed faces was active within
//! the tap's window, and `ask_user` questions as they are put. The tap must never wait: it
//! is called on the session's path, after the update has gone to the subscribers.
//!
//! Layers: a leaf (the vocabulary only); the stream and the manager hold it.

use std::sync::Arc;
use std::time::Duration;

use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::UpdateKind;

/// What watches every session's updates.
pub trait UpdateTap: Send + Sync {
    /// Whether `update` interests the tap (asked before anything else is worked out).
    fn notable(&self, update: &UpdateKind) -> bool;
    /// How recently a face must have been active to count as watching.
    fn active_window(&self) -> Duration;
    /// A notable update of `session_id`, owned by `owner`.
    fn update(&self, session_id: &SessionId, owner: &str, watched: bool, update: &UpdateKind);
    /// An `ask_user` question waits (it has no update of its own until settled).
    fn asked(
        &self,
        session_id: &SessionId,
        owner: &str,
        watched: bool,
        request_id: &str,
        message: &str,
    );
}

/// The tap as one session's stream holds it.
pub(crate) struct SessionTap {
    pub sink: Arc<dyn UpdateTap>,
    pub owner: String,
}
