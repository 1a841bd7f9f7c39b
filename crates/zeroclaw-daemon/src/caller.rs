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

/// A context that is no connection: an unattended turn started for a source that is not a
/// client (a webhook delivery, SPEC §23.1), run as a configured user.
#[derive(Debug, Clone)]
pub(crate) struct RunAs {
    /// The user the calls run as; `None`: the daemon's owner (its own uid).
    pub user: Option<String>,
    /// What the turn's `user_message.promptedBy` names (`webhook:NAME`).
    pub by: String,
    /// The id the turn takes, chosen before it starts (the delivery answered it).
    pub turn_id: String,
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
    /// Set for an unattended turn's context ([`RunAs`]); `None` for every connection.
    pub run_as: Option<RunAs>,
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
            run_as: None,
        }
    }

    /// This context runs its calls as `run_as` rather than as a peer's credential.
    pub fn running_as(mut self, run_as: RunAs) -> Self {
        self.run_as = Some(run_as);
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
        if let Some(run_as) = &self.run_as {
            return Presented::RunAs {
                user: run_as.user.as_deref(),
            };
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
