//! `session/status` and `session/configure` handlers (SPEC §16): typed params, then the
//! [`SessionManager`](crate::session::SessionManager).

use serde::Deserialize;
use serde_json::Value;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::Mode;

use crate::auth::Principal;
use crate::params::{self, Params};
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

/// `session/status {sessionId, mode?}`.
pub(crate) fn status(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: StatusParams = params::decode(params)?;
    let config = daemon.config.current();
    daemon
        .sessions
        .status(principal, &config, &p.session_id, p.mode)
        .map_err(Into::into)
}

/// `session/configure {sessionId, mode?, autonomy?, model?}`.
pub(crate) async fn configure(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: ConfigureParams = params::decode(params)?;
    let req = ConfigureRequest {
        autonomy: p.autonomy,
        model: p.model,
    };
    let config = daemon.config.current();
    daemon
        .sessions
        .configure(principal, &config, &p.session_id, p.mode, req)
        .await
        .map_err(Into::into)
}
