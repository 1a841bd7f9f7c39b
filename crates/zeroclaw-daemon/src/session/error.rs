//! Errors of the sessions service ([`SessionError`]), and the one place they become
//! JSON-RPC errors (SPEC §6 codes; `data` as SPEC says for each).
//!
//! A leaf of the sessions service: every session module returns these; the method handlers
//! turn them into [`ErrorObject`]s with `?` through the single `From` impl below.

use serde_json::Value;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::StoreError;

/// Why a sessions operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// -32602: the request names something invalid (an unknown agent, a bad cwd, …).
    #[error("{0}")]
    InvalidParams(String),
    /// -32012: the principal may not do this; `data` names what (`resource`, `prop`).
    #[error("{message}")]
    Forbidden {
        message: String,
        data: Option<Value>,
    },
    /// -32000: no such session, or it is closed, killed or not served here.
    #[error("{0}")]
    NotFound(String),
    /// -32001: the live-session limit (daemon-wide or the principal's share) is reached.
    #[error("session limit reached ({0} live sessions)")]
    SessionLimit(usize),
    /// -32002: the session's prompt queue is full.
    #[error("{0}")]
    Busy(String),
    /// -32003: the caller does not own this session.
    #[error("caller does not own session {0}")]
    NotOwner(String),
    /// -32013: a per-session limit (`data {limit, value}`).
    #[error("{message}")]
    LimitExceeded {
        message: String,
        limit: u64,
        value: u64,
    },
    /// -32603.
    #[error("{0}")]
    Internal(String),
    /// A store failure: a missing, killed or foreign row is -32000, anything else -32603.
    #[error("storage failure: {0}")]
    Store(#[from] StoreError),
}

impl SessionError {
    pub fn invalid_params(message: impl Into<String>) -> Self {
        SessionError::InvalidParams(message.into())
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        SessionError::Forbidden {
            message: message.into(),
            data: None,
        }
    }

    /// -32012 with `data` naming what is forbidden.
    pub fn forbidden_with(message: impl Into<String>, data: Value) -> Self {
        SessionError::Forbidden {
            message: message.into(),
            data: Some(data),
        }
    }

    pub fn session_not_found(message: impl Into<String>) -> Self {
        SessionError::NotFound(message.into())
    }

    pub fn session_limit(limit: usize) -> Self {
        SessionError::SessionLimit(limit)
    }

    pub fn session_busy(message: impl Into<String>) -> Self {
        SessionError::Busy(message.into())
    }

    pub fn not_owner(session_id: &str) -> Self {
        SessionError::NotOwner(session_id.to_owned())
    }

    pub fn limit_exceeded(message: impl Into<String>, limit: u64, value: u64) -> Self {
        SessionError::LimitExceeded {
            message: message.into(),
            limit,
            value,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        SessionError::Internal(message.into())
    }
}

impl From<SessionError> for ErrorObject {
    fn from(e: SessionError) -> ErrorObject {
        match e {
            SessionError::InvalidParams(m) => ErrorObject::invalid_params(m),
            SessionError::Forbidden { message, data } => {
                let e = ErrorObject::forbidden(message);
                match data {
                    Some(data) => e.with_data(data),
                    None => e,
                }
            }
            SessionError::NotFound(m) => ErrorObject::session_not_found(m),
            SessionError::SessionLimit(limit) => ErrorObject::session_limit(limit),
            SessionError::Busy(m) => ErrorObject::session_busy(m),
            SessionError::NotOwner(id) => ErrorObject::not_owner(&id),
            SessionError::LimitExceeded {
                message,
                limit,
                value,
            } => ErrorObject::limit_exceeded(message, limit, value),
            SessionError::Internal(m) => ErrorObject::internal(m),
            SessionError::Store(e) => store_error(e),
        }
    }
}

/// Store failures as JSON-RPC errors.
fn store_error(e: StoreError) -> ErrorObject {
    match e {
        StoreError::NotFound { mode, session_id } => {
            ErrorObject::session_not_found(format!("session not found: {mode} {session_id}"))
        }
        StoreError::Killed { session_id, .. } => ErrorObject::session_not_found(format!(
            "session {session_id} was killed and cannot be resumed"
        )),
        StoreError::UnsupportedSurface {
            session_id,
            surface,
            ..
        } => ErrorObject::session_not_found(format!(
            "session {session_id} belongs to interaction surface {surface:?} and is not served here"
        )),
        // SPEC §18: a rewind or fork naming a turn the session does not have (or no longer
        // has) is a bad request; one racing an unfinished turn is "busy".
        e @ (StoreError::TurnNotFound { .. } | StoreError::TurnRewound { .. }) => {
            ErrorObject::invalid_params(e.to_string())
        }
        e @ StoreError::TurnStillOpen { .. } => ErrorObject::session_busy(e.to_string()),
        other => {
            tracing::error!("storage failure: {other}");
            ErrorObject::internal(format!("storage failure: {other}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use zeroclaw_rpc::code;

    #[test]
    fn each_error_keeps_its_wire_code_message_and_data() {
        let cases: Vec<(SessionError, i64, &str, Option<Value>)> = vec![
            (
                SessionError::invalid_params("bad"),
                code::INVALID_PARAMS,
                "bad",
                None,
            ),
            (
                SessionError::forbidden_with("no", json!({"prop": "cwd"})),
                code::FORBIDDEN,
                "no",
                Some(json!({"prop": "cwd"})),
            ),
            (
                SessionError::session_not_found("gone"),
                code::SESSION_NOT_FOUND,
                "gone",
                None,
            ),
            (
                SessionError::session_limit(64),
                code::SESSION_LIMIT,
                "session limit reached (64 live sessions)",
                Some(json!({"limit": 64})),
            ),
            (
                SessionError::session_busy("full"),
                code::SESSION_BUSY,
                "full",
                None,
            ),
            (
                SessionError::not_owner("s1"),
                code::NOT_OWNER,
                "caller does not own session s1",
                None,
            ),
            (
                SessionError::limit_exceeded("many", 16, 17),
                code::LIMIT_EXCEEDED,
                "many",
                Some(json!({"limit": 16, "value": 17})),
            ),
            (
                SessionError::internal("oops"),
                code::INTERNAL_ERROR,
                "oops",
                None,
            ),
            (
                SessionError::from(StoreError::Closed),
                code::INTERNAL_ERROR,
                "storage failure: the store thread has stopped",
                None,
            ),
        ];
        for (error, code, message, data) in cases {
            let shown = error.to_string();
            let wire = ErrorObject::from(error);
            assert_eq!(wire.code, code, "{shown}");
            assert_eq!(wire.message, message, "{shown}");
            assert_eq!(wire.data, data, "{shown}");
        }
    }

    #[test]
    fn a_missing_row_is_session_not_found() {
        let e = SessionError::from(StoreError::NotFound {
            mode: zeroclaw_store::Mode::Acp,
            session_id: "s1".into(),
        });
        let wire = ErrorObject::from(e);
        assert_eq!(wire.code, code::SESSION_NOT_FOUND);
        assert_eq!(wire.message, "session not found: acp s1");
    }
}
