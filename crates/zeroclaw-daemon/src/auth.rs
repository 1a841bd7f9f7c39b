//! Who the caller is and what it may do, decided from the policy in force at each call
//! (SPEC §4): a grant removed or a token unpaired takes effect on the next call.

use std::sync::Arc;

use zeroclaw_config::policy::{self, Credential};
use zeroclaw_rpc::ErrorObject;

pub use zeroclaw_config::policy::Principal;

use crate::connection::ConnectionContext;
use crate::pairing::Presented;
use crate::state::Daemon;
use crate::transport::TransportKind;

/// The credential a connection presents: its peer uid locally (the pipe itself on Windows),
/// its token over WebSocket.
fn credential(
    daemon: &Daemon,
    conn: &ConnectionContext,
    token: Option<&str>,
) -> Result<Credential, ErrorObject> {
    Ok(daemon.tokens.resolve(&presented(conn, token)?)?)
}

/// What a connection presents, its token not yet looked up.
fn presented(conn: &ConnectionContext, token: Option<&str>) -> Result<Presented, ErrorObject> {
    match conn.peer.kind {
        TransportKind::Local => local_credential(conn.peer.uid).map(Presented::Local),
        TransportKind::WebSocket => {
            let token = token.ok_or_else(|| {
                ErrorObject::not_initialized(
                    "authentication failed: authToken is required over WebSocket",
                )
            })?;
            Ok(Presented::Token(token.to_string()))
        }
    }
}

/// What an initialized connection presented at `initialize` (re-checked by steps that
/// must see the token file unchanged, such as a file commit).
pub fn presented_by(conn: &ConnectionContext) -> Result<Presented, ErrorObject> {
    presented(
        conn,
        conn.handshake.get().and_then(|h| h.auth_token.as_deref()),
    )
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

/// The credential of an initialized connection, as presented at `initialize`.
pub fn credential_of(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
) -> Result<Credential, ErrorObject> {
    let token = conn.handshake.get().and_then(|h| h.auth_token.as_deref());
    credential(daemon, conn, token)
}

/// Authenticates the peer at `initialize`.
pub fn authenticate(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    token: Option<&str>,
) -> Result<Principal, ErrorObject> {
    let cred = credential(daemon, conn, token)?;
    policy::resolve(&daemon.config.current(), &cred, daemon.uid)
}

/// The caller's principal under the current policy (-32010 once its credential is revoked).
pub fn principal_of(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
) -> Result<Principal, ErrorObject> {
    let token = conn.handshake.get().and_then(|h| h.auth_token.as_deref());
    authenticate(daemon, conn, token)
}

/// Whether `principal` holds the grant `method` requires (-32012 otherwise).
pub fn authorize(principal: &Principal, method: &str) -> Result<(), ErrorObject> {
    principal.check_method(method)
}
