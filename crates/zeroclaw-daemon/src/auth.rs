//! Who the caller is and what it may do, decided from the policy in force at each call
//! (SPEC §4): a grant removed or a token unpaired takes effect on the next call.
//!
//! A caller is known by what it [`Presented`] (its peer uid, or its pairing token); that is
//! turned into a [`Credential`] and a [`Principal`] again at every check. Which grant a
//! method needs is the vocabulary's ([`Method::requirement`]); this module checks it.
//!
//! Refusals are [`AuthError`]s; `wire_error.rs` turns them into JSON-RPC errors.

use zeroclaw_config::policy::{self, Credential};
use zeroclaw_config::{Config, PolicyError};
use zeroclaw_protocol::{Method, Requirement};

pub(crate) use zeroclaw_config::policy::Principal;
use zeroclaw_sessions::logins::{LoginError, Logins};
use zeroclaw_sessions::pairing::{PairingError, TokenStore};

use crate::lineage::Lineage;

/// Why a caller may not make a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A WebSocket peer that gave no pairing token.
    #[error("authentication failed: authToken is required over WebSocket")]
    NoToken,
    /// A local peer whose uid the OS did not tell (a pipe client has none to tell).
    #[cfg_attr(windows, allow(dead_code))]
    #[error("authentication failed: peer credentials unavailable")]
    NoPeerCredentials,
    /// A local peer that is a program the daemon started for a session, or descends from
    /// one, or that could not be vetted (SPEC §17.2): it runs as the daemon's user, but is
    /// no operator.
    #[error("{}", session_program_refusal(*.0))]
    SessionProgram(Lineage),
    /// A token that is unknown or revoked.
    #[error(transparent)]
    Token(#[from] PairingError),
    /// A dashboard login code or session token that is unknown, used or expired (SPEC §20).
    #[error(transparent)]
    Login(#[from] LoginError),
    /// Too many failed logins from this address (SPEC §20).
    #[error("too many failed logins from {ip}: try again in {retry_after_secs} s")]
    RateLimited {
        ip: std::net::IpAddr,
        retry_after_secs: u64,
    },
    /// The policy knows nobody by this credential, or the principal lacks a grant.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// An admin-only method called by a non-admin.
    #[error("principal {principal} is not an admin (required by {method})")]
    NotAdmin { principal: String, method: Method },
    /// A local-only method called over WebSocket.
    #[error("{0} is served on the local endpoint only")]
    LocalOnly(Method),
}

/// The message of [`AuthError::SessionProgram`].
fn session_program_refusal(lineage: Lineage) -> String {
    match lineage {
        Lineage::Unvetted(why) => format!(
            "authentication failed: this local peer cannot be vetted ({why}); a program the \
             daemon started may not call it (SPEC §17.2)"
        ),
        _ => "authentication failed: this local peer is a program the daemon started for a \
              session (a tool, a process it left, an MCP server or a hook), or one of its \
              descendants; such programs may not call the daemon (SPEC §17.2)"
            .to_owned(),
    }
}

/// What a caller presents to prove who it is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Presented<'a> {
    /// A local-endpoint peer: its uid, when the OS told us (the pipe itself on Windows),
    /// and whether it is a program the daemon started (SPEC §17.2).
    Local { uid: Option<u32>, lineage: Lineage },
    /// A WebSocket peer: the pairing token it gave at `initialize`, if any.
    WebSocket { token: Option<&'a str> },
    /// An unattended turn's context (a webhook delivery, SPEC §23.1; a schedule's run,
    /// §24.1): the principal id it acts as, whoever the policy says that is now.
    Unattended { owner: &'a str },
}

impl Presented<'_> {
    /// Whether this credential depends on the pairing-token file.
    pub fn is_token(&self) -> bool {
        matches!(self, Presented::WebSocket { .. })
    }
}

/// Where bearer tokens are looked up: pairing tokens, and dashboard session tokens.
#[derive(Clone, Copy)]
pub(crate) struct Bearers<'a> {
    pub tokens: &'a TokenStore,
    pub logins: &'a Logins,
}

/// The credential behind what a caller presented: its peer uid locally; over the network
/// its pairing token's user, or the credential its dashboard session stands for (a
/// missing, unknown, revoked or expired token is refused).
pub(crate) fn credential(
    bearers: Bearers<'_>,
    presented: &Presented,
) -> Result<Credential, AuthError> {
    match *presented {
        Presented::Local { lineage, .. } if lineage != Lineage::Outside => {
            Err(AuthError::SessionProgram(lineage))
        }
        Presented::Local { uid, .. } => local_credential(uid),
        // The operator is resolved in [`principal`], which knows the daemon's uid.
        Presented::Unattended { owner } => owner
            .strip_prefix("user:")
            .map(|user| Credential::Token {
                user: user.to_owned(),
            })
            .ok_or(AuthError::NoPeerCredentials),
        Presented::WebSocket { token } => {
            let token = token.ok_or(AuthError::NoToken)?;
            if Logins::is_session_token(token) {
                return bearers
                    .logins
                    .session(token)
                    .ok_or(AuthError::Token(PairingError::UnknownToken));
            }
            Ok(bearers.tokens.resolve(token)?)
        }
    }
}

/// A Unix-socket peer presents its uid (SO_PEERCRED).
#[cfg(not(windows))]
fn local_credential(uid: Option<u32>) -> Result<Credential, AuthError> {
    uid.map(Credential::LocalUid)
        .ok_or(AuthError::NoPeerCredentials)
}

/// A named-pipe client got through the pipe's ACL: it is the daemon's own user (SPEC §2).
#[cfg(windows)]
fn local_credential(_uid: Option<u32>) -> Result<Credential, AuthError> {
    Ok(Credential::PipeClient)
}

/// The daemon's owner, as the local endpoint would know it.
#[cfg(not(windows))]
fn owner_credential(daemon_uid: u32) -> Credential {
    Credential::LocalUid(daemon_uid)
}

#[cfg(windows)]
fn owner_credential(_daemon_uid: u32) -> Credential {
    Credential::PipeClient
}

/// The caller's principal under `config` (refused once its credential is revoked);
/// `daemon_uid` is the daemon's own uid.
pub(crate) fn principal(
    config: &Config,
    bearers: Bearers<'_>,
    daemon_uid: u32,
    presented: &Presented,
) -> Result<Principal, AuthError> {
    let cred = match presented {
        // A webhook's turn run as the daemon's owner, and the operator's schedules.
        Presented::Unattended {
            owner: policy::OPERATOR,
        } => owner_credential(daemon_uid),
        _ => credential(bearers, presented)?,
    };
    Ok(policy::resolve(config, &cred, daemon_uid)?)
}

/// Whether `principal` meets what `method` requires.
pub(crate) fn authorize(principal: &Principal, method: Method) -> Result<(), AuthError> {
    match method.requirement() {
        Requirement::Open => Ok(()),
        Requirement::Grant { resource, verb } => {
            Ok(principal.require(resource, verb, method.name())?)
        }
        Requirement::Admin if principal.admin => Ok(()),
        Requirement::Admin => Err(AuthError::NotAdmin {
            principal: principal.id.clone(),
            method,
        }),
    }
}

/// Refuses a local-only method over WebSocket.
pub(crate) fn check_transport(method: Method, local: bool) -> Result<(), AuthError> {
    if local || !method.local_only() {
        return Ok(());
    }
    Err(AuthError::LocalOnly(method))
}

/// The methods `principal` may call on a local (or WebSocket) connection, `initialize`
/// included, in [`Method::ALL`] order.
pub(crate) fn capabilities(principal: &Principal, local: bool) -> Vec<&'static str> {
    Method::ALL
        .iter()
        .filter(|m| local || !m.local_only())
        .filter(|m| authorize(principal, **m).is_ok())
        .map(|m| m.name())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use zeroclaw_rpc::{ErrorObject, code};

    fn holding(grants: &[(&str, &str)]) -> Principal {
        let mut p = Principal::holding_nothing("user:alice".into());
        for (r, v) in grants {
            p.grants
                .entry((*r).to_string())
                .or_default()
                .insert((*v).to_string());
        }
        p
    }

    #[test]
    fn methods_need_their_grant() {
        let a = holding(&[("sessions", "read"), ("system", "read")]);
        assert!(authorize(&a, Method::SessionList).is_ok());
        assert!(authorize(&a, Method::Initialize).is_ok());
        let e = ErrorObject::from(authorize(&a, Method::SessionKill).expect_err("lacks grant"));
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(
            e.message,
            "principal user:alice lacks sessions:delete (required by session/kill)"
        );
        assert_eq!(
            e.data,
            Some(json!({"resource": "sessions", "verb": "delete"}))
        );
        let e = ErrorObject::from(authorize(&a, Method::DaemonShutdown).expect_err("not admin"));
        assert_eq!((e.code, e.data), (code::FORBIDDEN, None));
        assert_eq!(
            e.message,
            "principal user:alice is not an admin (required by daemon/shutdown)"
        );
        assert!(authorize(&Principal::operator(), Method::DaemonShutdown).is_ok());
    }

    #[test]
    fn capabilities_follow_grants_and_transport() {
        let nobody = holding(&[]);
        assert_eq!(capabilities(&nobody, true), ["initialize"]);
        let op = Principal::operator();
        assert_eq!(capabilities(&op, true).len(), Method::ALL.len());
        let remote = capabilities(&op, false);
        assert!(!remote.contains(&"file/upload/begin") && remote.contains(&"file/attach"));
        let e =
            ErrorObject::from(check_transport(Method::FileUploadChunk, false).expect_err("local"));
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(e.data, Some(json!({"resource": "file/upload/chunk"})));
        assert!(check_transport(Method::FileUploadChunk, true).is_ok());
    }
}
