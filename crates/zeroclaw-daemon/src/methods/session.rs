//! `session/*` handlers (SPEC §7): not served yet.

use std::sync::Arc;

use serde_json::Value;
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::connection::ConnectionContext;
use crate::state::Daemon;

pub async fn call(
    _daemon: &Arc<Daemon>,
    _conn: &Arc<ConnectionContext>,
    _principal: &Principal,
    method: &str,
    _params: Option<Value>,
) -> Result<Value, ErrorObject> {
    Err(ErrorObject::method_not_found(method))
}
