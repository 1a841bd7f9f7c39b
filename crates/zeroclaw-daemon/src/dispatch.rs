//! The method table and the front door every call passes: the handshake gate, the
//! principal (re-resolved from the current policy on every call), the grant the method
//! needs, and the transport it may be called on. Handlers live in [`crate::methods`].

use std::sync::Arc;

use serde_json::Value;
use zeroclaw_rpc::ErrorObject;

use crate::auth::{self, Principal};
use crate::connection::ConnectionContext;
use crate::methods;
use crate::state::Daemon;
use crate::transport::TransportKind;

/// One client → daemon method.
pub struct MethodSpec {
    pub name: &'static str,
    /// Served on the local endpoint only (refused over WebSocket with -32012).
    pub local_only: bool,
}

const fn local(name: &'static str) -> MethodSpec {
    MethodSpec {
        name,
        local_only: true,
    }
}
const fn any(name: &'static str) -> MethodSpec {
    MethodSpec {
        name,
        local_only: false,
    }
}

/// Every method a client may call, in the order `initialize.capabilities` lists them.
pub const METHODS: &[MethodSpec] = &[
    any("initialize"),
    any("status"),
    any("config/get"),
    any("config/set"),
    any("config/set-many"),
    any("config/delete"),
    any("session/new"),
    any("session/prompt"),
    any("session/cancel"),
    any("session/approve"),
    any("session/close"),
    any("session/kill"),
    any("session/delete"),
    any("session/list"),
    any("session/messages"),
    any("file/attach"),
    local("file/upload/begin"),
    local("file/upload/chunk"),
    local("file/upload/commit"),
    any("daemon/shutdown"),
];

pub fn find(method: &str) -> Option<&'static MethodSpec> {
    METHODS.iter().find(|m| m.name == method)
}

/// The methods this principal may call on this transport (`initialize` included).
pub fn capabilities(principal: &Principal, kind: TransportKind) -> Vec<&'static str> {
    principal
        .capabilities(kind == TransportKind::Local)
        .into_iter()
        .filter(|name| {
            find(name).is_some_and(|m| !(m.local_only && kind == TransportKind::WebSocket))
        })
        .collect()
}

/// Runs one call from `conn` through the front door to its handler.
pub async fn call(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let spec = find(method);
    if method == "initialize" {
        return methods::initialize::call(daemon, conn, params).await;
    }
    if !conn.is_initialized() {
        return Err(match spec {
            Some(_) => {
                ErrorObject::not_initialized("not initialized: first call must be initialize")
            }
            None => ErrorObject::method_not_found(method),
        });
    }
    let Some(spec) = spec else {
        return Err(ErrorObject::method_not_found(method));
    };
    let principal = auth::principal_of(daemon, conn)?;
    if spec.local_only && conn.peer.kind == TransportKind::WebSocket {
        return Err(ErrorObject::forbidden(format!(
            "{method} is served on the local endpoint only"
        ))
        .with_data(serde_json::json!({"resource": method})));
    }
    auth::authorize(&principal, method)?;
    match method {
        "status" => methods::status::call(daemon, &principal).await,
        "daemon/shutdown" => Ok(serde_json::json!({"shuttingDown": true})),
        m if m.starts_with("config/") => {
            methods::config::call(daemon, conn, spec.name, params).await
        }
        m if m.starts_with("session/") => {
            methods::session::call(daemon, conn, &principal, m, params).await
        }
        m if m.starts_with("file/") => {
            methods::file::call(daemon, conn, &principal, m, params).await
        }
        _ => Err(ErrorObject::method_not_found(method)),
    }
}
