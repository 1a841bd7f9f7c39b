//! `session/status` and `session/configure` handlers (SPEC §16): typed params, then the
//! [`SessionManager`](crate::session::SessionManager).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::Mode;

use crate::auth::Principal;
use crate::params;
use crate::session::configure::ConfigureRequest;
use crate::state::Daemon;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigureParams {
    session_id: String,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    autonomy: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

pub async fn call(
    daemon: &Arc<Daemon>,
    principal: &Principal,
    method: &str,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let config = daemon.config.current();
    match method {
        "session/status" => {
            let p: StatusParams = params::decode(params)?;
            daemon
                .sessions
                .status(principal, &config, &p.session_id, p.mode)
                .map_err(Into::into)
        }
        "session/configure" => {
            let p: ConfigureParams = params::decode(params)?;
            let req = ConfigureRequest {
                autonomy: p.autonomy,
                model: p.model,
            };
            daemon
                .sessions
                .configure(principal, &config, &p.session_id, p.mode, req)
                .await
                .map_err(Into::into)
        }
        _ => Err(ErrorObject::method_not_found(method)),
    }
}
