//! Who the caller is and what it may do, decided from the policy in force at each call
//! (SPEC §4): a grant removed or a token unpaired takes effect on the next call.
//!
//! A caller is known by what it [`Presented`] (its peer uid, or its pairing token); that is
//! turned into a [`Credential`] and a [`Principal`] again at every check. Which grant a
//! method needs is the vocabulary's ([`Method::requirement`]); this module checks it.

use serde_json::json;
use zeroclaw_config::Config;
use zeroclaw_config::policy::{self, Credential};
use zeroclaw_protocol::{Method, Requirement};
use zeroclaw_rpc::ErrorObject;

pub(crate) use zeroclaw_config::policy::Principal;

use crate::pairing::TokenStore;

/// What a caller presents to prove who it is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Presented<'a> {
    /// A local-endpoint peer: its uid, when the OS told us (the pipe itself on Windows).
    Local { uid: Option<u32> },
    /// A WebSocket peer: the pairing token it gave at `initialize`, if any.
    WebSocket { token: Option<&'a str> },
}

impl Presented<'_> {
    /// Whether this credential depends on the pairing-token file.
    pub fn is_token(&self) -> bool {
        matches!(self, Presented::WebSocket { .. })
    }
}

/// The credential behind what a caller presented: its peer uid locally, its token's user
/// over WebSocket (-32010 for a missing, unknown or revoked token).
pub(crate) fn credential(
    tokens: &TokenStore,
    presented: &Presented,
) -> Result<Credential, ErrorObject> {
    match *presented {
        Presented::Local { uid } => local_credential(uid),
        Presented::WebSocket { token } => {
            let token = token.ok_or_else(|| {
                ErrorObject::not_initialized(
                    "authentication failed: authToken is required over WebSocket",
                )
            })?;
            Ok(tokens.resolve(token)?)
        }
    }
}

/// A Unix-socket peer presents its uid (SO_PEERCRED).
#[cfg(not(windows))]
fn local_credential(uid: Option<u32>) -> Result<Credential, ErrorObject> {
    uid.map(Credential::LocalUid).ok_or_else(|| {
        ErrorObject::not_initialized("authentication failed: peer credentials unavailable")
    })
}

/// A named-pipe client got through the pipe's ACL: it is the daemon's own user (SPEC §2).
#[cfg(windows)]
fn local_credential(_uid: Option<u32>) -> Result<Credential, ErrorObject> {
    Ok(Credential::PipeClient)
}

/// The caller's principal under `config` (-32010 once its credential is revoked);
/// `daemon_uid` is the daemon's own uid.
pub(crate) fn principal(
    config: &Config,
    tokens: &TokenStore,
    daemon_uid: u32,
    presented: &Presented,
) -> Result<Principal, ErrorObject> {
    let cred = credential(tokens, presented)?;
    policy::resolve(config, &cred, daemon_uid)
}

/// Whether `principal` meets what `method` requires (-32012 otherwise).
pub(crate) fn authorize(principal: &Principal, method: Method) -> Result<(), ErrorObject> {
    match method.requirement() {
        Requirement::Open => Ok(()),
        Requirement::Grant { resource, verb } => principal.require(resource, verb, method.name()),
        Requirement::Admin if principal.admin => Ok(()),
        Requirement::Admin => Err(ErrorObject::forbidden(format!(
            "principal {} is not an admin (required by {method})",
            principal.id
        ))),
    }
}

/// Refuses a local-only method over WebSocket (-32012, data `{resource: <method>}`).
pub(crate) fn check_transport(method: Method, local: bool) -> Result<(), ErrorObject> {
    if local || !method.local_only() {
        return Ok(());
    }
    Err(
        ErrorObject::forbidden(format!("{method} is served on the local endpoint only"))
            .with_data(json!({"resource": method.name()})),
    )
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
    use zeroclaw_rpc::code;

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
        let e = authorize(&a, Method::SessionKill).expect_err("lacks sessions:delete");
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(
            e.message,
            "principal user:alice lacks sessions:delete (required by session/kill)"
        );
        assert_eq!(
            e.data,
            Some(json!({"resource": "sessions", "verb": "delete"}))
        );
        let e = authorize(&a, Method::DaemonShutdown).expect_err("not an admin");
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
        let e = check_transport(Method::FileUploadChunk, false).expect_err("local only");
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(e.data, Some(json!({"resource": "file/upload/chunk"})));
        assert!(check_transport(Method::FileUploadChunk, true).is_ok());
    }
}
