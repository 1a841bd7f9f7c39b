//! `models/list {agentAlias?}` (SPEC §16): the models of the agent's provider (or of every
//! configured provider), each marked `current` when it is the one in use. A provider whose
//! list cannot be had shows its configured model alone, with the `error`.

use serde_json::{Value, json};
use zeroclaw_protocol::system::{ModelEntry, ModelsListParams, ModelsListResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::params::{self, Params};
use crate::state::Daemon;

/// `models/list {agentAlias?}`.
pub(crate) async fn list(
    daemon: &Daemon,
    principal: &Principal,
    params: Params,
) -> Result<Value, ErrorObject> {
    let p: ModelsListParams = params::decode(params)?;
    let config = daemon.config.current();
    // (provider name, the model in use with it)
    let targets: Vec<(String, String)> = match &p.agent_alias {
        Some(alias) => {
            let agent = config
                .agents
                .get(alias)
                .ok_or_else(|| ErrorObject::invalid_params(format!("unknown agent {alias:?}")))?;
            if !principal.may_use_agent(alias) {
                return Err(ErrorObject::forbidden(format!(
                    "principal {} may not use agent {alias}",
                    principal.id
                ))
                .with_data(json!({"resource": format!("agents.{alias}")})));
            }
            let model = if agent.model.is_empty() {
                config
                    .providers
                    .get(&agent.provider)
                    .map(|p| p.model.clone())
                    .unwrap_or_default()
            } else {
                agent.model.clone()
            };
            vec![(agent.provider.clone(), model)]
        }
        None => config
            .providers
            .iter()
            .map(|(name, p)| (name.clone(), p.model.clone()))
            .collect(),
    };
    let mut models = Vec::new();
    for (provider, current) in targets {
        let kind_echo = config
            .providers
            .get(&provider)
            .is_some_and(|p| p.kind == zeroclaw_config::ProviderKind::Echo);
        let current = if kind_echo && current.is_empty() {
            "echo".to_owned()
        } else {
            current
        };
        match daemon.sessions.provider_models(&config, &provider).await {
            Ok(list) => {
                for model in list {
                    models.push(ModelEntry {
                        provider: provider.clone(),
                        current: model == current,
                        model,
                        error: None,
                    });
                }
            }
            Err(error) => models.push(ModelEntry {
                provider,
                model: current,
                current: true,
                error: Some(error),
            }),
        }
    }
    params::encode(&ModelsListResult { models })
}
