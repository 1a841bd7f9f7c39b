//! The one place where the services' errors become JSON-RPC errors (SPEC §3.4): which code
//! each gets, and the `data` members the contract names. The services (`zeroclaw-config`,
//! sessions, files, pairing, the policy checks of `auth.rs`) say what went wrong in their
//! own terms and know nothing of the wire; the messages are their `Display` text, unchanged.
//!
//! Errors of this crate convert with `?` (`From` impls). Those of `zeroclaw-config` and of
//! the services (`zeroclaw-sessions`) cannot (neither type is ours): handlers call
//! [`config`], [`policy`], [`session`], [`files`], [`commit`] or [`pairing`], and the config
//! store's writes, generic over their error, use [`Wire`].

use serde_json::{Map, Value, json};
use zeroclaw_config::{ConfigError, PolicyError};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::files::commit::Refused;
use zeroclaw_sessions::files::error::FilesError;
use zeroclaw_sessions::logins::LoginError;
use zeroclaw_sessions::pairing::PairingError;
use zeroclaw_sessions::session::error::SessionError;
use zeroclaw_store::StoreError;

use crate::auth::AuthError;

/// A config read or write refused or failed: invalid params with `data {index?, prop?}`,
/// forbidden with `data {index?, prop}`, internal when the file could not be written.
pub(crate) fn config(e: ConfigError) -> ErrorObject {
    use ConfigError::*;
    let error = match e {
        PropTooLong { .. } | BadPath { .. } | BadQuery(_) | BatchSize { .. } | Invalid { .. } => {
            ErrorObject::invalid_params(e.to_string())
        }
        NotWritable { .. } | Refused { .. } => ErrorObject::forbidden(e.to_string()),
        Persist { .. } => return ErrorObject::internal(e.to_string()),
    };
    let mut data = Map::new();
    if let Some(i) = e.index() {
        data.insert("index".into(), json!(i));
    }
    if let Some(p) = e.prop() {
        data.insert("prop".into(), json!(p));
    }
    match data.is_empty() {
        true => error,
        false => error.with_data(Value::Object(data)),
    }
}

/// A caller the policy knows as nobody (not initialized: authentication failed), or a
/// principal lacking a grant (forbidden, `data {resource, verb}`).
pub(crate) fn policy(e: PolicyError) -> ErrorObject {
    match &e {
        PolicyError::MissingGrant { resource, verb, .. } => {
            let data = json!({"resource": resource, "verb": verb});
            ErrorObject::forbidden(e.to_string()).with_data(data)
        }
        PolicyError::UnmappedUid(_)
        | PolicyError::UntrustedPipeClient
        | PolicyError::UnknownUser(_) => ErrorObject::not_initialized(e.to_string()),
    }
}

/// A wire error already mapped, for code generic over an error that must convert from
/// [`ConfigError`] (the config store's writes, whose authorization step is the daemon's).
pub(crate) struct Wire(pub ErrorObject);

impl From<ConfigError> for Wire {
    fn from(e: ConfigError) -> Wire {
        Wire(config(e))
    }
}

impl From<AuthError> for Wire {
    fn from(e: AuthError) -> Wire {
        Wire(e.into())
    }
}

impl From<Wire> for ErrorObject {
    fn from(w: Wire) -> ErrorObject {
        w.0
    }
}

/// An unknown or revoked pairing token: not initialized (authentication failed).
pub(crate) fn pairing(e: PairingError) -> ErrorObject {
    ErrorObject::not_initialized(e.to_string())
}

/// Nobody (not initialized), or somebody who may not (forbidden; a local-only method named
/// in `data {resource}`).
impl From<AuthError> for ErrorObject {
    fn from(e: AuthError) -> ErrorObject {
        match e {
            AuthError::NoToken | AuthError::NoPeerCredentials | AuthError::SessionProgram(_) => {
                ErrorObject::not_initialized(e.to_string())
            }
            AuthError::Token(e) => pairing(e),
            AuthError::Login(LoginError::TooManyCodes | LoginError::TooManySessions) => {
                ErrorObject::new(zeroclaw_rpc::code::LIMIT_EXCEEDED, e.to_string())
            }
            AuthError::Login(LoginError::Random(_)) => ErrorObject::internal(e.to_string()),
            AuthError::Login(_) => ErrorObject::not_initialized(e.to_string()),
            AuthError::RateLimited {
                retry_after_secs, ..
            } => ErrorObject::not_initialized(e.to_string())
                .with_data(json!({"retryAfterSecs": retry_after_secs})),
            AuthError::Policy(e) => policy(e),
            AuthError::NotAdmin { .. } => ErrorObject::forbidden(e.to_string()),
            AuthError::LocalOnly(method) => {
                ErrorObject::forbidden(e.to_string()).with_data(json!({"resource": method.name()}))
            }
        }
    }
}

/// A session service error: bad params, forbidden with the refused `data`, not found,
/// limits, busy, not the owner, or internal; store failures as [`store`] maps them.
pub(crate) fn session(e: SessionError) -> ErrorObject {
    let message = e.to_string();
    match e {
        SessionError::Invalid(_) => ErrorObject::invalid_params(message),
        SessionError::AgentNotAllowed { agent, .. } => ErrorObject::forbidden(message)
            .with_data(json!({"resource": format!("agents.{agent}")})),
        SessionError::CwdOutsideWorkspace(_) => {
            ErrorObject::forbidden(message).with_data(json!({"prop": "cwd"}))
        }
        SessionError::AdminOnly(prop) => {
            ErrorObject::forbidden(message).with_data(json!({ "prop": prop }))
        }
        SessionError::AutonomyRaised { .. } => {
            ErrorObject::forbidden(message).with_data(json!({"prop": "autonomy"}))
        }
        SessionError::NotFound(_) => ErrorObject::session_not_found(message),
        SessionError::TooManySessions(limit) => ErrorObject::session_limit(limit),
        SessionError::AllBusy(limit) => {
            ErrorObject::new(zeroclaw_rpc::code::SESSION_LIMIT, message)
                .with_data(json!({"limit": limit, "allBusy": true}))
        }
        SessionError::Busy(_) => ErrorObject::session_busy(message),
        SessionError::NotOwner(id) => ErrorObject::not_owner(&id),
        SessionError::TooManySubscribers { limit, value, .. } => {
            ErrorObject::limit_exceeded(message, limit as u64, value as u64)
        }
        SessionError::Failed(_) => ErrorObject::internal(message),
        SessionError::Store(e) => store(e),
    }
}

/// Store failures: a missing, killed or foreign row is "session not found"; a turn the
/// session does not have is a bad request, one still open "busy"; anything else internal.
fn store(e: StoreError) -> ErrorObject {
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

/// A commit that stored nothing: the files service's reason, or the caller's credential
/// or grant refused under the configuration it held.
pub(crate) fn commit(e: Refused<AuthError>) -> ErrorObject {
    match e {
        Refused::Files(e) => files(e),
        Refused::Denied(e) => e.into(),
    }
}

/// A files service error: bad params (a hash mismatch with `data {expected, actual}`),
/// limits, the session's codes, or internal.
pub(crate) fn files(e: FilesError) -> ErrorObject {
    use FilesError::*;
    let message = e.to_string();
    match e {
        UnknownUpload(_)
        | DeclaredTooLarge { .. }
        | BadSha256
        | ChunkTooLarge { .. }
        | Gap { .. }
        | PastSize { .. }
        | Conflict(_)
        | Incomplete { .. }
        | FilenameTooLong { .. }
        | FileTooLarge { .. } => ErrorObject::invalid_params(message),
        HashMismatch { expected, actual } => ErrorObject::invalid_params(message)
            .with_data(json!({"expected": expected, "actual": actual})),
        TooManyStaged { staged, limit } => {
            ErrorObject::limit_exceeded(message, limit as u64, staged as u64 + 1)
        }
        BudgetExhausted { needed, budget } => ErrorObject::limit_exceeded(message, budget, needed),
        ShareExhausted { needed, share } => ErrorObject::limit_exceeded(message, share, needed),
        SessionNotFound(_) | SessionGone(_) => ErrorObject::session_not_found(message),
        NotOwner(id) => ErrorObject::not_owner(&id),
        AgentNotAllowed { .. } => ErrorObject::forbidden(message),
        Busy
        | TokensHeld(_)
        | WriterLost(_)
        | WriteTimeout(_)
        | CreateWorkspace { .. }
        | UploadsNotADirectory(_)
        | CreateUploads { .. }
        | InspectUploads { .. }
        | Write { .. } => ErrorObject::internal(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroclaw_config::PropPath;
    use zeroclaw_protocol::Method;
    use zeroclaw_rpc::code;

    fn path(p: &str) -> PropPath {
        PropPath::parse(p).unwrap()
    }

    #[test]
    fn config_errors_name_their_entry_and_prop() {
        let e = config(ConfigError::Invalid {
            index: Some(2),
            prop: path("wss.port"),
            at: path("wss.port"),
            message: "expected an integer".into(),
        });
        assert_eq!(
            e,
            ErrorObject::invalid_entry(
                2,
                "wss.port",
                "config entry 2 (wss.port): expected an integer"
            )
        );
        let e = config(ConfigError::Refused {
            index: None,
            prop: path("users.bob"),
            reason: "no".into(),
        });
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(e.message, "config property users.bob: no");
        assert_eq!(e.data, Some(json!({"prop": "users.bob"})));
        let e = config(ConfigError::PropTooLong {
            bytes: 2000,
            limit: 1024,
            index: Some(1),
        });
        assert_eq!(e.data, Some(json!({"index": 1})));
        assert_eq!(
            e.message,
            "config entry 1: property path of 2000 bytes is over the limit of 1024 bytes"
        );
        let e = config(ConfigError::BadQuery("bad".into()));
        assert_eq!((e.code, e.data), (code::INVALID_PARAMS, None));
        let e = config(ConfigError::Persist {
            path: "/x/config.toml".into(),
            source: std::io::Error::other("disk full"),
        });
        assert_eq!(
            (e.code, e.message.as_str(), e.data),
            (
                code::INTERNAL_ERROR,
                "cannot write /x/config.toml: disk full",
                None
            )
        );
    }

    #[test]
    fn policy_and_auth_errors() {
        let e = policy(PolicyError::UnmappedUid(0));
        assert_eq!(e.code, code::NOT_INITIALIZED);
        assert_eq!(
            e.message,
            "authentication failed: uid 0 is not mapped to a user"
        );
        let e = policy(PolicyError::MissingGrant {
            principal: "user:alice".into(),
            resource: "sessions".into(),
            verb: "delete".into(),
            method: "session/kill".into(),
        });
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(
            e.message,
            "principal user:alice lacks sessions:delete (required by session/kill)"
        );
        assert_eq!(
            e.data,
            Some(json!({"resource": "sessions", "verb": "delete"}))
        );
        let e = ErrorObject::from(AuthError::NoToken);
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                code::NOT_INITIALIZED,
                "authentication failed: authToken is required over WebSocket"
            )
        );
        let e = ErrorObject::from(AuthError::Token(PairingError::UnknownToken));
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                code::NOT_INITIALIZED,
                "authentication failed: unknown or revoked token"
            )
        );
        let e = ErrorObject::from(AuthError::LocalOnly(Method::FileUploadBegin));
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(
            e.message,
            "file/upload/begin is served on the local endpoint only"
        );
        assert_eq!(e.data, Some(json!({"resource": "file/upload/begin"})));
    }

    #[test]
    fn each_session_error_keeps_its_wire_code_message_and_data() {
        let cases: Vec<(SessionError, i64, &str, Option<Value>)> = vec![
            (
                SessionError::invalid("bad"),
                code::INVALID_PARAMS,
                "bad",
                None,
            ),
            (
                SessionError::AgentNotAllowed {
                    principal: "user:bob".into(),
                    agent: "coder".into(),
                },
                code::FORBIDDEN,
                "principal user:bob may not use agent coder",
                Some(json!({"resource": "agents.coder"})),
            ),
            (
                SessionError::CwdOutsideWorkspace("/etc".into()),
                code::FORBIDDEN,
                "cwd \"/etc\" is outside the agent's workspace",
                Some(json!({"prop": "cwd"})),
            ),
            (
                SessionError::not_found("gone"),
                code::SESSION_NOT_FOUND,
                "gone",
                None,
            ),
            (
                SessionError::TooManySessions(64),
                code::SESSION_LIMIT,
                "session limit reached (64 live sessions)",
                Some(json!({"limit": 64})),
            ),
            (SessionError::busy("full"), code::SESSION_BUSY, "full", None),
            (
                SessionError::not_owner("s1"),
                code::NOT_OWNER,
                "caller does not own session s1",
                None,
            ),
            (
                SessionError::TooManySubscribers {
                    session_id: "s1".into(),
                    limit: 16,
                    value: 17,
                },
                code::LIMIT_EXCEEDED,
                "session s1 has 16 subscribers already",
                Some(json!({"limit": 16, "value": 17})),
            ),
            (
                SessionError::failed("oops"),
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
            let wire = session(error);
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
        let wire = session(e);
        assert_eq!(wire.code, code::SESSION_NOT_FOUND);
        assert_eq!(wire.message, "session not found: acp s1");
    }

    #[test]
    fn files_codes_messages_and_data_are_the_contracts() {
        let e = files(FilesError::NotOwner("s1".into()));
        assert_eq!(e, ErrorObject::not_owner("s1"));
        let e = files(FilesError::TooManyStaged {
            staged: 4,
            limit: 4,
        });
        assert_eq!(
            (e.code, e.data),
            (code::LIMIT_EXCEEDED, Some(json!({"limit": 4, "value": 5})))
        );
        let e = files(FilesError::HashMismatch {
            expected: "a".into(),
            actual: "b".into(),
        });
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"expected": "a", "actual": "b"})));
        let denied = AuthError::LocalOnly(Method::FileUploadChunk);
        assert_eq!(
            commit(Refused::Denied(denied.clone())),
            ErrorObject::from(denied)
        );
        let e = files(FilesError::WriteTimeout(std::time::Duration::from_secs(30)));
        assert_eq!(
            (e.code, e.message.as_str()),
            (code::INTERNAL_ERROR, "storing did not finish within 30 s")
        );
    }
}
