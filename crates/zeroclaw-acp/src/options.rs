//! The session's model and autonomy as ACP session config options (SPEC §25): offered
//! with `session/new`, `session/load` and `session/resume`, and set with
//! `session/set_config_option`, which changes the session as daemon `session/configure`
//! does. The autonomy is also offered as ACP modes (`session/set_mode`, in [`super::sessions`]).

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
};
use serde_json::Value;
use zeroclaw_client::protocol::session::SessionRef;
use zeroclaw_client::protocol::stream::ConfigureParams;
use zeroclaw_client::protocol::system::ModelsListParams;
use zeroclaw_client::protocol::{Autonomy, call};
use zeroclaw_rpc::ErrorObject;

use super::bridge::{Bridge, decode};
use super::daemon;
use super::opening::MODES;

/// The option id of the autonomy level.
pub const MODE: &str = "mode";
/// The option id of the model.
pub const MODEL: &str = "model";

/// The session's config options as the daemon has them now. A daemon that cannot say
/// (no `session/status`) gives none; the model list is the provider's when the principal
/// may read it (`models/list`), else the current model alone.
pub async fn current(bridge: &Arc<Bridge>, session_id: &str) -> Option<Vec<SessionConfigOption>> {
    let status = bridge
        .call::<call::SessionStatus>(&SessionRef {
            session_id: session_id.to_owned().into(),
            mode: None,
        })
        .await
        .ok()?;
    let modes: Vec<SessionConfigSelectOption> = MODES
        .iter()
        .map(|(id, name, about)| {
            SessionConfigSelectOption::new(id.as_str(), *name).description(*about)
        })
        .collect();
    let mut models: Vec<String> = match bridge
        .call::<call::ModelsList>(&ModelsListParams {
            agent_alias: Some(status.agent_alias.clone()),
        })
        .await
    {
        Ok(list) => list.models.into_iter().map(|m| m.model).collect(),
        Err(_) => Vec::new(),
    };
    if !models.contains(&status.model) {
        models.insert(0, status.model.clone());
    }
    models.dedup();
    let models: Vec<SessionConfigSelectOption> = models
        .into_iter()
        .map(|m| SessionConfigSelectOption::new(m.clone(), m))
        .collect();
    Some(vec![
        SessionConfigOption::select(MODE, "Autonomy", status.autonomy.as_str(), modes)
            .category(SessionConfigOptionCategory::Mode)
            .description("what the agent's tools may do without asking"),
        SessionConfigOption::select(MODEL, "Model", status.model, models)
            .category(SessionConfigOptionCategory::Model),
    ])
}

/// `session/set_config_option {sessionId, configId, value}` → daemon `session/configure`,
/// answered with every option as it now stands.
pub async fn set(bridge: &Arc<Bridge>, params: Option<Value>) -> Result<Value, ErrorObject> {
    let method = AGENT_METHOD_NAMES.session_set_config_option;
    let req: SetSessionConfigOptionRequest = decode(method, params)?;
    let session_id = req.session_id.0.to_string();
    if !bridge.sessions().contains_key(&session_id) {
        return Err(daemon::session_not_found(&session_id));
    }
    let SessionConfigOptionValue::ValueId { value } = &req.value else {
        return Err(ErrorObject::invalid_params(format!(
            "{method}: value: {:?} takes a value id, not a boolean",
            req.config_id.0
        )));
    };
    let value = value.0.to_string();
    let mut configure = ConfigureParams {
        session_id: session_id.clone().into(),
        mode: None,
        autonomy: None,
        model: None,
    };
    match &*req.config_id.0 {
        MODE => {
            let autonomy = Autonomy::parse(&value).ok_or_else(|| {
                ErrorObject::invalid_params(format!(
                    "{method}: value: unknown autonomy {value:?} (supervised, full, read_only, plan)"
                ))
            })?;
            configure.autonomy = Some(autonomy);
        }
        MODEL => configure.model = Some(value),
        other => {
            return Err(ErrorObject::invalid_params(format!(
                "{method}: configId: unknown option {other:?} ({MODE}, {MODEL})"
            )));
        }
    }
    bridge.send::<call::SessionConfigure>(&configure).await?;
    let options = current(bridge, &session_id).await.unwrap_or_default();
    serde_json::to_value(SetSessionConfigOptionResponse::new(options))
        .map_err(|e| ErrorObject::internal(e.to_string()))
}
