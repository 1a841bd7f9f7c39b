//! Who is calling: the per-connection state the method handlers see ([`ConnectionContext`]:
//! the peer, what `initialize` established, its outbound queue and pending requests, its
//! slot in the connection limits, its last prompt per session).
//!
//! The connection loop ([`crate::connection`]) creates and owns one per connection and
//! hands it to dispatch and the handlers; this module sits below all of them, so none of
//! them imports the loop. Services below the handlers see less still: a
//! [`Presented`] credential, the [`Principal`](crate::auth::Principal) resolved from it, and
//! the connection as a [`ClientLink`](zeroclaw_sessions::session::link::ClientLink).

use std::sync::OnceLock;

use zeroclaw_protocol::TurnId;
use zeroclaw_rpc::Pending;
use zeroclaw_sessions::session::LiveId;

use crate::auth::Presented;
use crate::ordering::LastPrompts;
use crate::outbound::Outbound;
use crate::registry::Admission;
use crate::transport::{PeerIdentity, TransportKind};

/// What `initialize` established for a connection.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    /// Token presented at `initialize` (WebSocket); re-checked on every call.
    pub auth_token: Option<String>,
    /// The client declared `clientCapabilities.elicitation`.
    pub elicitation: bool,
    /// The face it is (`chat`, `dashboard`, `acp`, `rpc` or its own name), for
    /// `approval_resolved.decidedBy` (SPEC §22).
    pub client: String,
}

/// A context that is no connection: an unattended turn started for a source that is not a
/// client (a webhook delivery, SPEC §23.1, or a schedule's run, §24.1), acting as a principal.
#[derive(Debug, Clone)]
pub(crate) struct Unattended {
    /// The principal id the calls act as (`operator` or `user:NAME`), resolved under the
    /// policy in force at each call.
    pub owner: String,
    /// What the turn's `user_message.promptedBy` names (`webhook:NAME`, `schedule:NAME`).
    pub by: String,
    /// The id the turn takes, when it was chosen before the turn starts (a webhook
    /// delivery's answer names it).
    pub turn_id: Option<TurnId>,
}

/// Everything handlers may know about the connection a call came on.
pub(crate) struct ConnectionContext {
    pub id: u64,
    pub peer: PeerIdentity,
    pub out: Outbound,
    /// Our outbound requests to this peer (`elicitation/create`).
    pub pending: Pending,
    pub handshake: OnceLock<Handshake>,
    /// This connection's slot in the connection limits.
    pub admission: std::sync::Mutex<Admission>,
    /// This connection's last prompt to each live session (what a cancel applies to).
    pub prompts: LastPrompts,
    /// When it last sent a request, in ms since [`activity_epoch`] (SPEC §24.3: a face
    /// active lately is watching).
    pub last_request: std::sync::atomic::AtomicU64,
    /// Set for an unattended turn's context; `None` for every connection. Boxed: every
    /// connection carries the field, few contexts fill it.
    pub unattended: Option<Box<Unattended>>,
}

/// The instant activity times count from.
fn activity_epoch() -> std::time::Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

/// [`ConnectionContext::last_request`] once the peer hung up.
const HUNG_UP: u64 = u64::MAX;

fn activity_now() -> u64 {
    u64::try_from(activity_epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl ConnectionContext {
    pub fn new(id: u64, peer: PeerIdentity, out: Outbound, admission: Admission) -> Self {
        ConnectionContext {
            id,
            peer,
            out,
            pending: Pending::new(),
            handshake: OnceLock::new(),
            admission: std::sync::Mutex::new(admission),
            prompts: LastPrompts::default(),
            last_request: std::sync::atomic::AtomicU64::new(activity_now()),
            unattended: None,
        }
    }

    /// Notes that a request came in now (unless the peer already hung up).
    pub fn touch(&self) {
        let now = activity_now();
        let _ = self.last_request.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |last| (last != HUNG_UP).then_some(now),
        );
    }

    /// The peer hung up (its requests still finish): it is no longer active.
    pub fn hung_up(&self) {
        self.last_request
            .store(HUNG_UP, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a request came in within `window` (never after [`Self::hung_up`]).
    pub fn active_within(&self, window: std::time::Duration) -> bool {
        let last = self.last_request.load(std::sync::atomic::Ordering::Relaxed);
        let window = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        last != HUNG_UP && activity_now().saturating_sub(last) <= window
    }

    /// This context makes its calls for `unattended` rather than with a peer's credential.
    pub fn acting_for(mut self, unattended: Unattended) -> Self {
        self.unattended = Some(Box::new(unattended));
        self
    }

    pub fn is_initialized(&self) -> bool {
        self.handshake.get().is_some()
    }

    /// The client this connection is (SPEC §22 `decidedBy.client`); `rpc` before
    /// `initialize`.
    pub fn client_name(&self) -> &str {
        self.handshake.get().map_or("rpc", |h| h.client.as_str())
    }

    /// The credential this connection presents with `token` (the one `initialize` offers).
    pub fn presenting<'a>(&'a self, token: Option<&'a str>) -> Presented<'a> {
        if let Some(u) = &self.unattended {
            return Presented::Unattended { owner: &u.owner };
        }
        match self.peer.kind {
            TransportKind::Local => Presented::Local {
                uid: self.peer.uid,
                lineage: self.peer.lineage,
            },
            TransportKind::WebSocket => Presented::WebSocket { token },
        }
    }

    /// The credential this connection presented at `initialize`, to be checked again.
    pub fn presented(&self) -> Presented<'_> {
        let token = self.handshake.get().and_then(|h| h.auth_token.as_deref());
        self.presenting(token)
    }

    /// Records that prompt number `seq` of `live` came from this connection.
    pub fn prompted(&self, live: &LiveId, seq: u64) {
        self.prompts.record(live, seq);
    }

    /// The number of this connection's last prompt to `live` (0: none).
    pub fn last_prompt(&self, live: &LiveId) -> u64 {
        self.prompts.get(live)
    }
}
