//! The front door every call passes: the handshake gate, the principal (re-resolved from
//! the current policy on every call), the transport the method may be called on and the
//! grant it needs; then the one handler of that [`Method`] in [`crate::methods`].
//!
//! The method table itself (names, grants, local-only, answers-in-place) is the
//! vocabulary's ([`zeroclaw_protocol::Method`]); this is the only place that maps a
//! method to its handler.

use std::sync::Arc;

use serde_json::Value;
use zeroclaw_protocol::Method;
use zeroclaw_rpc::message::{push_response_line, push_result_line_with};
use zeroclaw_rpc::{ErrorObject, Request};

use crate::auth::{self, Principal};
use crate::caller::ConnectionContext;
use crate::methods::{config, configure, file, history, initialize, models, session, status};
use crate::params::Params;
use crate::state::Daemon;
use crate::transport::TransportKind;

/// Runs one call of `method` from `conn` through the front door to its handler.
pub(crate) async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Method,
    params: Params,
) -> Result<Value, ErrorObject> {
    if method == Method::Initialize {
        return initialize::initialize(daemon, conn, params).await;
    }
    let principal = admit(daemon, conn, method)?;
    let p = &principal;
    match method {
        Method::Initialize => Err(ErrorObject::invalid_request("already initialized")),
        Method::Status => status::status(daemon, p),
        Method::DaemonShutdown => status::shutdown(),
        Method::ModelsList => models::list(daemon, p, params).await,
        Method::ConfigGet => config::get(daemon, params),
        Method::ConfigSet => config::set(daemon, conn, params).await,
        Method::ConfigSetMany => config::set_many(daemon, conn, params).await,
        Method::ConfigDelete => config::delete(daemon, conn, params).await,
        Method::SessionNew => session::new(daemon, p, params).await,
        Method::SessionPrompt => session::prompt(daemon, conn, p, params).await,
        Method::SessionCancel => session::cancel(daemon, conn, p, params),
        Method::SessionApprove => session::approve(daemon, p, params),
        Method::SessionClose => session::close(daemon, p, params).await,
        Method::SessionKill => session::kill(daemon, p, params).await,
        Method::SessionDelete => session::delete(daemon, p, params).await,
        Method::SessionSubscribe => session::subscribe(daemon, conn, p, params).await,
        Method::SessionUnsubscribe => session::unsubscribe(daemon, conn, p, params),
        Method::SessionList => session::list(daemon, p, params).await,
        Method::SessionMessages => session::messages(daemon, p, params).await,
        Method::SessionStatus => configure::status(daemon, p, params),
        Method::SessionConfigure => configure::configure(daemon, p, params).await,
        Method::SessionCompact => session::compact(daemon, conn, p, params).await,
        Method::SessionRewind => history::rewind(daemon, conn, p, params).await,
        Method::SessionFork => history::fork(daemon, p, params).await,
        Method::SessionSetTitle => history::set_title(daemon, p, params).await,
        Method::FileAttach => file::attach(daemon, conn, p, params).await,
        Method::FileUploadBegin => file::upload_begin(daemon, conn, p, params).await,
        Method::FileUploadChunk => file::upload_chunk(daemon, conn, params),
        Method::FileUploadCommit => file::upload_commit(daemon, conn, params).await,
    }
}

/// The front door proper, for every method but `initialize`: the handshake is done, the
/// credential still stands for someone (under the policy in force now), the method is
/// served on this transport and the principal holds its grant.
fn admit(
    daemon: &Daemon,
    conn: &ConnectionContext,
    method: Method,
) -> Result<Principal, ErrorObject> {
    if !conn.is_initialized() {
        return Err(ErrorObject::not_initialized(
            "not initialized: first call must be initialize",
        ));
    }
    let principal = daemon.principal(&conn.presented())?;
    auth::check_transport(method, conn.peer.kind == TransportKind::Local)?;
    auth::authorize(&principal, method)?;
    #[cfg(feature = "test-hooks")]
    crate::test_hooks::maybe_panic(method.name());
    Ok(principal)
}

/// Runs a call the connection loop answers in place and appends its answer line (none for
/// a notification) to `buf`. `status`, the call clients poll, is serialized straight into
/// `buf` after the same front door; everything else goes through [`call`].
pub(crate) async fn answer_in_place(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Option<Method>,
    request: Request,
    buf: &mut Vec<u8>,
) {
    let Request {
        id,
        method: name,
        params,
    } = request;
    if let (Some(Method::Status), Some(id)) = (method, &id) {
        let written = admit(daemon, conn, Method::Status).and_then(|principal| {
            push_result_line_with(buf, id, |buf| status::write(daemon, &principal, buf))
                .map_err(|e| ErrorObject::internal(format!("status: {e}")))
        });
        if let Err(error) = written {
            push_response_line(buf, id, &Err(error));
        }
        return;
    }
    let outcome = match method {
        Some(method) => call(daemon, conn, method, params).await,
        None => Err(ErrorObject::method_not_found(&name)),
    };
    if let Some(id) = id {
        push_response_line(buf, &id, &outcome);
    }
}
