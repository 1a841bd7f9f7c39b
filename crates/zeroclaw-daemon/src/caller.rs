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
    /// A schedule's run (SPEC §24.1): the calls are its creator's, and its prompts say
    /// `schedule:NAME`.
    pub scheduled: Option<Scheduled>,
}

/// Who a schedule's run acts as, and what its prompts say sent them.
#[derive(Debug, Clone)]
pub(crate) struct Scheduled {
    /// The schedule creator's principal id.
    pub owner: String,
    /// `schedule:NAME`.
    pub prompted_by: String,
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
            scheduled: None,
        }
    }

    /// The context a schedule's run calls in, as `scheduled.owner`.
    pub fn scheduled(
        id: u64,
        peer: PeerIdentity,
        out: Outbound,
        admission: Admission,
        scheduled: Scheduled,
    ) -> Self {
        let mut ctx = ConnectionContext::new(id, peer, out, admission);
        ctx.scheduled = Some(scheduled);
        ctx
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
        if let Some(s) = &self.scheduled {
            return Presented::Schedule { owner: &s.owner };
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
