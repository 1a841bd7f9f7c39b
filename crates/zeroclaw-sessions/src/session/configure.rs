//! `session/configure` (SPEC §16): one live session's autonomy and model, changed for that
//! session only, saved with it (so a resumed session keeps them) and read by its turns
//! before every provider and tool call. Also the provider model lists it validates
//! against, shared with `models/list`.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::sync::Arc;

use zeroclaw_config::policy::Principal;
use zeroclaw_config::{Config, ProviderKind};
use zeroclaw_protocol::SessionId;
use zeroclaw_protocol::stream::ConfigureResult;
use zeroclaw_store::Mode;

use super::SessionManager;
use super::agent::effective_model;
use super::error::SessionError;
use super::live::{LiveSession, Overrides};
use super::wire;

/// Model ids shown in an "unknown model" message.
const SHOWN_MODELS: usize = 20;

/// What `session/configure` asks for.
#[derive(Debug, Clone, Default)]
pub struct ConfigureRequest {
    pub autonomy: Option<zeroclaw_config::Autonomy>,
    /// `Some("")` = back to the agent's model.
    pub model: Option<String>,
}

impl SessionManager {
    /// The models provider `name` offers: `echo` for the echo provider, the provider's
    /// `GET /models` (cached) for an OpenAI-compatible one.
    pub async fn provider_models(
        &self,
        config: &Config,
        name: &str,
    ) -> Result<Vec<String>, String> {
        let Some(p) = config.providers.get(name) else {
            return Err(format!("provider {name} is not configured"));
        };
        match p.kind {
            ProviderKind::Echo => Ok(vec!["echo".to_owned()]),
            ProviderKind::Openai
            | ProviderKind::Anthropic
            | ProviderKind::Ollama
            | ProviderKind::Gemini => {
                let api = match p.kind {
                    ProviderKind::Anthropic => zeroclaw_agent::ModelApi::Anthropic,
                    ProviderKind::Ollama => zeroclaw_agent::ModelApi::Ollama,
                    ProviderKind::Gemini => zeroclaw_agent::ModelApi::Gemini,
                    _ => zeroclaw_agent::ModelApi::OpenAi,
                };
                let key = p.resolve_api_key();
                self.models
                    .list_api(api, p.effective_base_url(), key.as_deref())
                    .await
            }
        }
    }

    /// `session/configure`: owner only.
    pub async fn configure(
        self: &Arc<Self>,
        principal: &Principal,
        config: &Config,
        session_id: &SessionId,
        mode: Option<Mode>,
        req: ConfigureRequest,
    ) -> Result<ConfigureResult, SessionError> {
        let autonomy = req.autonomy;
        let key = self.resolve_key(session_id, mode);
        let live = self.live_or_rehydrate(principal, config, &key).await?;
        if principal.id != live.owner {
            return Err(SessionError::not_owner(session_id));
        }
        if let Some(requested) = autonomy {
            check_not_raised(principal, config, &live.agent_alias, requested)?;
        }
        if let Some(model) = req.model.as_deref().filter(|m| !m.is_empty()) {
            self.check_model(config, &live, model).await?;
        }
        let mut next = live.overrides();
        if let Some(a) = autonomy {
            next.autonomy = Some(a);
        }
        if let Some(m) = req.model {
            next.model = Some(m).filter(|m| !m.is_empty());
        }
        self.store
            .set_overrides(
                &live.key,
                next.autonomy.map(|a| wire::autonomy(a).as_str().to_owned()),
                next.model.clone(),
            )
            .await?;
        live.set_overrides(next.clone());
        tracing::info!(session = %session_id, ?next, "session configured");
        Ok(ConfigureResult {
            session_id: session_id.clone(),
            autonomy: effective_autonomy(config, &live, &next),
            model: effective_model(config, &live.agent_alias, next.model.as_deref()),
        })
    }

    /// -32602 when the provider's list can be had and does not contain `model`.
    async fn check_model(
        &self,
        config: &Config,
        live: &LiveSession,
        model: &str,
    ) -> Result<(), SessionError> {
        let Some(agent) = config.agents.get(&live.agent_alias) else {
            return Err(SessionError::invalid(format!(
                "agent {} is no longer configured",
                live.agent_alias
            )));
        };
        match self.provider_models(config, &agent.provider).await {
            Ok(models) if !models.iter().any(|m| m == model) => {
                let shown: Vec<&str> = models
                    .iter()
                    .take(SHOWN_MODELS)
                    .map(String::as_str)
                    .collect();
                Err(SessionError::invalid(format!(
                    "unknown model {model:?}: provider {} offers {}{}",
                    agent.provider,
                    shown.join(", "),
                    if models.len() > SHOWN_MODELS {
                        ", …"
                    } else {
                        ""
                    }
                )))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::info!(
                    model,
                    "model list unavailable, model accepted unchecked: {e}"
                );
                Ok(())
            }
        }
    }
}

/// SPEC §17.2: a non-admin may set a session's autonomy to its agent's or lower, never
/// higher (the agent's autonomy is an admin-only fence). An admin may set any.
fn check_not_raised(
    principal: &Principal,
    config: &Config,
    agent: &str,
    requested: zeroclaw_config::Autonomy,
) -> Result<(), SessionError> {
    if principal.admin {
        return Ok(());
    }
    let base = config
        .agents
        .get(agent)
        .map(|a| a.autonomy)
        .unwrap_or(zeroclaw_config::Autonomy::ReadOnly);
    if requested.latitude() <= base.latitude() {
        return Ok(());
    }
    Err(SessionError::AutonomyRaised {
        principal: principal.id.clone(),
        agent: agent.to_owned(),
        base: wire::autonomy(base).as_str(),
        requested: wire::autonomy(requested).as_str(),
    })
}

/// The autonomy the session's turns use.
pub(crate) fn effective_autonomy(
    config: &Config,
    live: &LiveSession,
    overrides: &Overrides,
) -> zeroclaw_protocol::Autonomy {
    let base = config
        .agents
        .get(&live.agent_alias)
        .map(|a| a.autonomy)
        .unwrap_or_default();
    wire::autonomy(overrides.autonomy.unwrap_or(base))
}
