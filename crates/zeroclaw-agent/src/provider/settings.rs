//! Connection and generation settings of a native provider (`anthropic`, `ollama`,
//! `gemini`; SPEC §19): where it is, its key, and the agent's output and thinking budgets.

use std::time::Duration;

use super::ProviderError;
use super::call::{Call, KeyHeader};
use super::request_body::RequestBody;

/// One native provider endpoint, with the settings of the agent that uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeConfig {
    /// e.g. `https://api.anthropic.com` (no API path).
    pub base_url: String,
    /// Sent when non-empty.
    pub api_key: Option<String>,
    /// An environment variable holding the key (read per request), used when `api_key`
    /// is empty.
    pub api_key_env: Option<String>,
    /// Model used when the request's model is empty.
    pub model: String,
    /// Longest answer, in tokens (`max_tokens`, `maxOutputTokens`, `num_predict`).
    pub max_output_tokens: u32,
    /// Tokens the model may think before answering; 0 = thinking off.
    pub thinking_budget: u32,
    /// The agent's context size (`num_ctx` for Ollama).
    pub context_tokens: u32,
    pub connect_timeout: Duration,
    /// Until the response headers arrive.
    pub first_byte_timeout: Duration,
    /// Longest silence allowed between two pieces of the body.
    pub idle_timeout: Duration,
}

impl NativeConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        NativeConfig {
            base_url: base_url.into(),
            api_key: None,
            api_key_env: None,
            model: model.into(),
            max_output_tokens: 8192,
            thinking_budget: 0,
            context_tokens: 32000,
            connect_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(120),
        }
    }

    /// The key: `api_key`, else the variable `api_key_env` names.
    pub fn api_key(&self) -> Option<String> {
        if let Some(k) = self.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Some(k.clone());
        }
        let var = self.api_key_env.as_ref().filter(|v| !v.is_empty())?;
        std::env::var(var).ok().filter(|k| !k.is_empty())
    }

    /// `base_url` without a trailing `/`.
    pub fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// `model`, or this endpoint's default when empty.
    pub fn model_for<'a>(&'a self, requested: &'a str) -> &'a str {
        if requested.is_empty() {
            &self.model
        } else {
            requested
        }
    }

    /// A request to this endpoint, ready to send: `builder` carries every header but the
    /// key, which goes as `key_header` says.
    pub(super) fn call(
        &self,
        builder: reqwest::RequestBuilder,
        body: RequestBody,
        key_header: KeyHeader,
    ) -> Call<'_> {
        Call {
            builder,
            body,
            base_url: &self.base_url,
            api_key: self.api_key(),
            key_header,
            first_byte_timeout: self.first_byte_timeout,
        }
    }

    /// The HTTP client of a provider on this endpoint.
    pub fn client(&self) -> Result<reqwest::Client, ProviderError> {
        super::http::client(self.connect_timeout)
    }
}
