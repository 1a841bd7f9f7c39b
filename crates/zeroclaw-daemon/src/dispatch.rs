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
use zeroclaw_rpc::ErrorObject;

use crate::auth;
use crate::caller::ConnectionContext;
use crate::methods::{config, configure, file, initialize, models, session, status};
use crate::state::Daemon;
use crate::transport::TransportKind;

/// Runs one call of `method` from `conn` through the front door to its handler.
pub(crate) async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Method,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    if method == Method::Initialize {
        return initialize::initialize(daemon, conn, params).await;
    }
    if !conn.is_initialized() {
        return Err(ErrorObject::not_initialized(
            "not initialized: first call must be initialize",
        ));
    }
    let principal = daemon.principal(&conn.presented())?;
    auth::check_transport(method, conn.peer.kind == TransportKind::Local)?;
    auth::authorize(&principal, method)?;
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
        Method::FileAttach => file::attach(daemon, conn, p, params).await,
        Method::FileUploadBegin => file::upload_begin(daemon, conn, p, params).await,
        Method::FileUploadChunk => file::upload_chunk(daemon, conn, params),
        Method::FileUploadCommit => file::upload_commit(daemon, conn, params).await,
    }
}
