//! `models/list {agentAlias?}` (SPEC §16): the models of the agent's provider (or of every
//! provider the caller may reach), each marked `current` when it is the one in use. A
//! provider whose list cannot be had shows its configured model alone, with the `error`.
//!
//! SPEC §17.1: a non-admin sees only the providers of agents it may use
//! (`allowed_agents`); an admin sees every provider. An `error` never carries credentials
//! (the catalog leaves them out; the text is masked again here, URL credentials and key).

use serde_json::json;
use zeroclaw_config::secret::redact;
use zeroclaw_protocol::system::{ModelEntry, ModelsListParams, ModelsListResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::state::Daemon;

/// `models/list {agentAlias?}`.
pub(crate) async fn list(
    daemon: &Daemon,
    principal: &Principal,
    p: ModelsListParams,
) -> Result<ModelsListResult, ErrorObject> {
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
            .filter(|(name, _)| may_reach(&config, principal, name))
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
            Err(error) => {
                let key = config
                    .providers
                    .get(&provider)
                    .and_then(|p| p.resolve_api_key())
                    .unwrap_or_default();
                models.push(ModelEntry {
                    provider,
                    model: current,
                    current: true,
                    error: Some(redact(&error, &[&key])),
                })
            }
        }
    }
    Ok(ModelsListResult { models })
}

/// Whether `principal` may see provider `name`: an admin any, others only the providers of
/// agents they may use.
fn may_reach(config: &zeroclaw_config::Config, principal: &Principal, name: &str) -> bool {
    principal.admin
        || config
            .agents
            .iter()
            .any(|(alias, a)| a.provider == name && principal.may_use_agent(alias))
}
