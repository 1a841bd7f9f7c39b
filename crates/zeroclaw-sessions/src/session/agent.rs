//! The agent a turn runs: an [`AgentSpec`] built from the configuration in force when the
//! prompt was accepted (provider, model, tools, autonomy, limits, sandbox) and the session's
//! workspace and cwd. Providers are cached per session worker and rebuilt only when their
//! configuration changes (an HTTP client keeps its connection pool across turns).
//!
//! Layers: used by the turn; reads the live session only.

use std::sync::Arc;
use std::time::Duration;

use zeroclaw_agent::{
    AgentSpec, AnthropicProvider, Autonomy, EchoProvider, GeminiProvider, NativeConfig,
    OllamaProvider, OpenAiConfig, OpenAiProvider, Provider,
};
use zeroclaw_config::{Config, ProviderKind};

use super::error::SessionError;
use super::live::LiveSession;

/// What a turn needs from the configuration.
pub(crate) struct TurnAgent {
    pub spec: AgentSpec,
    pub max_context_tokens: usize,
    /// Compaction settings (SPEC §18).
    pub compaction: super::compaction::Settings,
}

/// The agent settings a native provider is built with (SPEC §19): output and thinking
/// budgets, context size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Budgets {
    max_output_tokens: u32,
    thinking_budget: u32,
    context_tokens: u32,
}

/// The last provider built, with the configuration it was built from.
#[derive(Default)]
pub(crate) struct ProviderCache {
    built: Option<(zeroclaw_config::Provider, Budgets, Arc<dyn Provider>)>,
}

impl ProviderCache {
    fn get(
        &mut self,
        name: &str,
        conf: &zeroclaw_config::Provider,
        budgets: Budgets,
    ) -> Result<Arc<dyn Provider>, SessionError> {
        if let Some((c, b, p)) = &self.built
            && c == conf
            && *b == budgets
        {
            return Ok(Arc::clone(p));
        }
        let timeout = Duration::from_secs(conf.timeout_secs.max(1));
        let failed = |e: zeroclaw_agent::ProviderError| {
            SessionError::failed(format!("provider {name}: {e}"))
        };
        let provider: Arc<dyn Provider> = match conf.kind {
            ProviderKind::Echo => Arc::new(EchoProvider::new()),
            ProviderKind::Openai => {
                let mut oc = OpenAiConfig::new(conf.effective_base_url(), conf.model.clone());
                oc.api_key = Some(conf.api_key.clone()).filter(|k| !k.is_empty());
                oc.api_key_env = Some(conf.api_key_env.clone()).filter(|k| !k.is_empty());
                oc.first_byte_timeout = timeout;
                oc.idle_timeout = timeout;
                Arc::new(OpenAiProvider::new(oc).map_err(failed)?)
            }
            ProviderKind::Anthropic => {
                let nc = native_config(conf, budgets, timeout);
                Arc::new(AnthropicProvider::new(nc).map_err(failed)?)
            }
            ProviderKind::Ollama => {
                let nc = native_config(conf, budgets, timeout);
                Arc::new(OllamaProvider::new(nc).map_err(failed)?)
            }
            ProviderKind::Gemini => {
                let nc = native_config(conf, budgets, timeout);
                Arc::new(GeminiProvider::new(nc).map_err(failed)?)
            }
        };
        self.built = Some((conf.clone(), budgets, Arc::clone(&provider)));
        Ok(provider)
    }
}

/// The settings of a native provider (SPEC §19) from its configuration and the agent's.
fn native_config(
    conf: &zeroclaw_config::Provider,
    budgets: Budgets,
    timeout: Duration,
) -> NativeConfig {
    let mut nc = NativeConfig::new(conf.effective_base_url(), conf.model.clone());
    nc.api_key = Some(conf.api_key.clone()).filter(|k| !k.is_empty());
    nc.api_key_env = Some(conf.effective_api_key_env().to_owned()).filter(|k| !k.is_empty());
    nc.max_output_tokens = budgets.max_output_tokens;
    nc.thinking_budget = budgets.thinking_budget;
    nc.context_tokens = budgets.context_tokens;
    nc.first_byte_timeout = timeout;
    nc.idle_timeout = timeout;
    nc
}

/// Builds the turn's agent for `session` from `config`.
pub(crate) fn build(
    config: &Config,
    session: &LiveSession,
    cache: &mut ProviderCache,
) -> Result<TurnAgent, SessionError> {
    let alias = &session.agent_alias;
    let agent = config
        .agents
        .get(alias)
        .ok_or_else(|| SessionError::invalid(format!("agent {alias} is no longer configured")))?;
    let conf = config.providers.get(&agent.provider).ok_or_else(|| {
        SessionError::invalid(format!(
            "agent {alias}: provider {} is not configured",
            agent.provider
        ))
    })?;
    let budgets = Budgets {
        max_output_tokens: agent.max_output_tokens,
        thinking_budget: agent.thinking_budget,
        context_tokens: agent.max_context_tokens,
    };
    let provider = cache.get(&agent.provider, conf, budgets)?;
    // The file tools work where `bash` does: the session's directory (SPEC §22), which
    // §17.1 already checked at `session/new`.
    let mut spec = AgentSpec::new(provider, session.cwd.clone());
    spec.model = agent.model.clone();
    spec.system_prompt = agent.system_prompt.clone();
    spec.tools = agent.tools.iter().filter_map(|t| t.parse().ok()).collect();
    spec.mcp = session.mcp();
    // `session/configure` settings of this session win over these, from the next
    // provider or tool call on (SPEC §16).
    spec.live = Some(session.live_settings());
    spec.autonomy = match agent.autonomy {
        zeroclaw_config::Autonomy::Supervised => Autonomy::Supervised,
        zeroclaw_config::Autonomy::Full => Autonomy::Full,
        zeroclaw_config::Autonomy::ReadOnly => Autonomy::ReadOnly,
        zeroclaw_config::Autonomy::Plan => Autonomy::Plan,
    };
    spec.max_tool_iterations = agent.max_tool_iterations;
    spec.cwd = session.cwd.clone();
    spec.hooks = super::hooks::set_for(config, session);
    spec.sandbox = super::sandbox::settings(config, alias);
    Ok(TurnAgent {
        spec,
        max_context_tokens: agent.max_context_tokens as usize,
        compaction: super::compaction::Settings::of(agent),
    })
}

/// The model a session of `alias` names in its provider calls: the session's choice, else
/// the agent's, else its provider's (empty when none is set anywhere).
pub(crate) fn effective_model(config: &Config, alias: &str, chosen: Option<&str>) -> String {
    if let Some(m) = chosen.filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let Some(agent) = config.agents.get(alias) else {
        return String::new();
    };
    if !agent.model.is_empty() {
        return agent.model.clone();
    }
    config
        .providers
        .get(&agent.provider)
        .map(|p| p.model.clone())
        .unwrap_or_default()
}
