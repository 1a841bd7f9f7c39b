//! Errors of the sessions service ([`SessionError`]): what went wrong, in the service's
//! own terms. A leaf of the sessions service: every session module returns these; the
//! daemon's method handlers turn them into JSON-RPC errors through the one mapping in its
//! `wire_error.rs` (`wire_error::session`).

use zeroclaw_protocol::SessionId;
use zeroclaw_store::StoreError;

/// Why a sessions operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The request names something that cannot be: an unknown agent, a bad session id or
    /// cwd, a turn the session does not have, a setting out of range.
    #[error("{0}")]
    Invalid(String),
    /// The principal may not use this agent.
    #[error("principal {principal} may not use agent {agent}")]
    AgentNotAllowed { principal: String, agent: String },
    /// Only an admin may pass this parameter (`prop`).
    #[error("only an admin may pass {0}")]
    AdminOnly(String),
    /// The requested cwd is outside the agent's workspace.
    #[error("cwd {0:?} is outside the agent's workspace")]
    CwdOutsideWorkspace(String),
    /// A non-admin asked for a session autonomy above its agent's (SPEC §17.2: a non-admin
    /// may lower a fence, never raise it).
    #[error(
        "principal {principal} may not raise the autonomy of a session of agent {agent} above \
         the agent's {base} (to {requested}); only an admin may"
    )]
    AutonomyRaised {
        principal: String,
        agent: String,
        base: &'static str,
        requested: &'static str,
    },
    /// No such session, or it is closed, killed or not served here.
    #[error("{0}")]
    NotFound(String),
    /// No further live session may start: `limit` live sessions (daemon-wide, or the
    /// principal's share) already run.
    #[error("session limit reached ({0} live sessions)")]
    TooManySessions(usize),
    /// The daemon-wide limit is reached and no live session is idle enough to unload
    /// (SPEC §22): every one runs or waits for a turn, asks a person or has a client.
    #[error(
        "session limit reached: all {0} live sessions are busy (a turn running or queued, a \
         person being asked, or a client attached); close one with `zeroclaw sessions close \
         ID` (`zeroclaw status --json` lists their ids) or wait for one to finish"
    )]
    AllBusy(usize),
    /// The session cannot take this now: its prompt queue is full, or a turn runs.
    #[error("{0}")]
    Busy(String),
    /// The caller does not own this session.
    #[error("caller does not own session {0}")]
    NotOwner(String),
    /// The session has `limit` subscribers already; this one would be the `value`th.
    #[error("session {session_id} has {limit} subscribers already")]
    TooManySubscribers {
        session_id: SessionId,
        limit: usize,
        value: usize,
    },
    /// Something failed inside the daemon (a provider, a panic, an encoding).
    #[error("{0}")]
    Failed(String),
    /// A store failure: a missing, killed or foreign row, a turn it does not have, or
    /// storage failing.
    #[error("storage failure: {0}")]
    Store(#[from] StoreError),
}

impl SessionError {
    pub fn invalid(message: impl Into<String>) -> Self {
        SessionError::Invalid(message.into())
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        SessionError::NotFound(message.into())
    }

    pub fn busy(message: impl Into<String>) -> Self {
        SessionError::Busy(message.into())
    }

    pub fn not_owner(session_id: &str) -> Self {
        SessionError::NotOwner(session_id.to_owned())
    }

    pub fn failed(message: impl Into<String>) -> Self {
        SessionError::Failed(message.into())
    }
}
