//! The front door every call passes: the handshake gate, the principal (re-resolved from
//! the current policy on every call), the grant the method needs, and the transport it may
//! be called on; then the handler in [`crate::methods`]. The list of methods and their
//! grants is the policy's ([`zeroclaw_config::policy::CLIENT_METHODS`]).

use std::sync::Arc;

use serde_json::{Value, json};
use zeroclaw_config::policy::CLIENT_METHODS;
use zeroclaw_rpc::message::{push_response_line, push_result_line_with};
use zeroclaw_rpc::{ErrorObject, Request};

use crate::auth::{self, Principal};
use crate::connection::ConnectionContext;
use crate::methods;
use crate::state::Daemon;
use crate::transport::TransportKind;

/// The served method named `method`, as a `'static` name.
fn find(method: &str) -> Option<&'static str> {
    CLIENT_METHODS.iter().copied().find(|m| *m == method)
}

/// Whether `method` is one this daemon serves (to anyone).
pub fn is_known(method: &str) -> bool {
    find(method).is_some()
}

/// Methods served on the local endpoint only (refused over WebSocket with -32012).
fn local_only(method: &str) -> bool {
    method.starts_with("file/upload/")
}

/// Methods that answer from memory without waiting on anything: the connection loop runs
/// them in place, in order, instead of spawning a task for each.
pub fn is_immediate(method: &str) -> bool {
    matches!(method, "status" | "config/get")
}

/// Runs a call the connection loop answers in place and appends its answer line (none
/// for a notification) to `buf`. `status`, the call clients poll, writes its result
/// straight into `buf` after the same front door as [`call`] (it is neither `initialize`
/// nor local-only); everything else goes through [`call`].
pub async fn answer_in_place(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    request: Request,
    buf: &mut Vec<u8>,
) {
    let Request { id, method, params } = request;
    if method == "status" && conn.is_initialized() {
        let Some(id) = id else { return };
        let admitted = auth::principal_of(daemon, conn)
            .and_then(|principal| auth::authorize(&principal, "status").map(|()| principal));
        let written = match &admitted {
            Ok(principal) => push_result_line_with(buf, &id, |buf| {
                methods::status::write(daemon, principal, buf)
            })
            .map_err(|e| ErrorObject::internal(format!("status: {e}"))),
            Err(error) => Err(error.clone()),
        };
        if let Err(error) = written {
            push_response_line(buf, &id, &Err(error));
        }
        return;
    }
    let outcome = call(daemon, conn, &method, params).await;
    if let Some(id) = id {
        push_response_line(buf, &id, &outcome);
    }
}

/// The methods this principal may call on this transport (`initialize` included).
pub fn capabilities(principal: &Principal, kind: TransportKind) -> Vec<&'static str> {
    principal.capabilities(kind == TransportKind::Local)
}

/// Runs one call from `conn` through the front door to its handler.
pub async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let Some(method) = find(method) else {
        return Err(ErrorObject::method_not_found(method));
    };
    if method == "initialize" {
        return methods::initialize::call(daemon, conn, params).await;
    }
    if !conn.is_initialized() {
        return Err(ErrorObject::not_initialized(
            "not initialized: first call must be initialize",
        ));
    }
    let principal = auth::principal_of(daemon, conn)?;
    if local_only(method) && conn.peer.kind == TransportKind::WebSocket {
        return Err(ErrorObject::forbidden(format!(
            "{method} is served on the local endpoint only"
        ))
        .with_data(json!({"resource": method})));
    }
    auth::authorize(&principal, method)?;
    match method {
        "status" => methods::status::call(daemon, &principal).await,
        "daemon/shutdown" => Ok(json!({"shuttingDown": true})),
        "models/list" => methods::models::call(daemon, &principal, params).await,
        m if m.starts_with("config/") => methods::config::call(daemon, conn, m, params).await,
        m if m.starts_with("session/") => {
            methods::session::call(daemon, conn, &principal, m, params).await
        }
        m if m.starts_with("file/") => {
            methods::file::call(daemon, conn, &principal, m, params).await
        }
        _ => Err(ErrorObject::method_not_found(method)),
    }
}
