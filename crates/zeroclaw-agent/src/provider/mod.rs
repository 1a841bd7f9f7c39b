//! The provider abstraction: one streaming chat completion per call.
//!
//! A provider turns a [`ProviderRequest`] (system prompt, context, offered
//! tools) into a stream of [`ProviderEvent`]s. Tool calls come out already
//! assembled. A well-formed stream ends with [`ProviderEvent::Done`]; any
//! failure (HTTP status, timeout, malformed data, truncated stream) is a
//! [`ProviderError`] item, after which the stream yields nothing more.
//! Dropping the stream aborts the underlying request.
//!
//! The providers (`openai`, and the native `anthropic`, `ollama`, `gemini` of SPEC §19) are
//! written here rather than with a provider SDK crate: each is a request body and a small
//! event parser over one shared, linear SSE decoder ([`sse`]) and body reader ([`body`])
//! whose §17 bounds (event size, idle time, error body size) are tested; a crate per API
//! would bring three more dependency trees with their own HTTP and SSE handling, whose
//! bounds would have to be checked again (the SSE library used before was quadratic). The
//! retry policy every provider shares is [`retry`]; the turn loop runs it. What one response
//! may hold, all providers alike, is bounded by [`held`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ChatMessage, ToolCallRequest};

pub mod anthropic;
pub mod body;
mod body_start;
mod call;
pub mod echo;
pub mod gemini;
pub mod held;
mod http;
mod http_date;
pub mod models;
pub mod ollama;
pub mod openai;
mod openai_chunk;
mod openai_request;
pub mod request_body;
mod request_json;
pub mod retry;
pub mod settings;
pub(crate) mod shown;
pub mod sse;
pub mod summary;

pub use anthropic::AnthropicProvider;
pub use echo::EchoProvider;
pub use gemini::GeminiProvider;
pub use models::{ModelApi, ModelCatalog};
pub use ollama::OllamaProvider;
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use settings::NativeConfig;

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Everything one provider call needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRequest {
    /// Empty = the provider's own default model.
    pub model: String,
    /// Sent first, as the system message (omitted when empty).
    pub system_prompt: String,
    /// The conversation. A turn lends its own context here for the call rather than
    /// copying it (a large prompt is not held twice while the provider streams), and
    /// takes it back when the call has ended: a provider reads it and lets it go.
    pub messages: Arc<Vec<ChatMessage>>,
    pub tools: Vec<ToolSchema>,
}

/// Token usage, when the provider reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    /// Input tokens read from the provider's prompt cache (SPEC §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    TextDelta(String),
    ThoughtDelta(String),
    ToolCall(ToolCallRequest),
    Usage(Usage),
    Done,
}

/// A provider failure; `Display` carries the provider's own message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("provider returned HTTP {status}: {message}")]
    Http {
        status: u16,
        message: String,
        /// The server's `retry-after`, when it sent one (SPEC §19).
        retry_after: Option<Duration>,
    },
    #[error("provider request failed: {0}")]
    Request(String),
    #[error("provider timed out: {0}")]
    Timeout(String),
    #[error("provider stream error: {0}")]
    Stream(String),
    #[error("provider error: {0}")]
    Api(String),
    #[error("provider configuration error: {0}")]
    Config(String),
}

impl ProviderError {
    /// The same error with `f` applied to its text (its message, or what it carries).
    pub(crate) fn map_text(self, f: impl FnOnce(String) -> String) -> ProviderError {
        match self {
            ProviderError::Http {
                status,
                message,
                retry_after,
            } => ProviderError::Http {
                status,
                message: f(message),
                retry_after,
            },
            ProviderError::Request(t) => ProviderError::Request(f(t)),
            ProviderError::Timeout(t) => ProviderError::Timeout(f(t)),
            ProviderError::Stream(t) => ProviderError::Stream(f(t)),
            ProviderError::Api(t) => ProviderError::Api(f(t)),
            ProviderError::Config(t) => ProviderError::Config(f(t)),
        }
    }
}

pub type ProviderStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ProviderError>> + Send>>;

#[async_trait]
pub trait Provider: Send + Sync {
    /// Starts one streaming completion. Errors that happen before the first
    /// event (connect, HTTP status) may be returned here or as the first
    /// stream item.
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError>;

    /// Short name for logs (`"echo"`, `"openai"`).
    fn kind(&self) -> &'static str;
}
