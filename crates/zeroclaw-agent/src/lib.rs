//! zeroclaw-agent: providers, tools and the turn loop.
//!
//! Knows nothing about sockets, JSON-RPC or storage: the daemon drives a turn
//! with [`run_turn`] and receives its events through a [`TurnHost`].

// Unsafe only for libc / Win32 calls, each allowed where it is made.
#![deny(unsafe_code)]

pub mod compact;
pub mod hooks;
pub mod mcp;
pub mod message;
pub mod provider;
pub mod sandbox;
pub mod tools;
pub mod turn;
pub mod usage;

pub use message::{ChatMessage, ToolCallRequest, estimate_tokens, provider_safe};
pub use provider::{
    AnthropicProvider, EchoProvider, GeminiProvider, ModelApi, ModelCatalog, NativeConfig,
    OllamaProvider, OpenAiConfig, OpenAiProvider, Provider, ProviderError, ProviderEvent,
    ProviderRequest, ProviderStream, ToolSchema, Usage,
};
pub use tools::{AskUser, ToolLimits, ToolName};
pub use turn::{
    AgentSpec, ApprovalAsk, ApprovalDecision, Autonomy, LiveSettings, MAX_TURN_TEXT, TurnEvent,
    TurnHost, TurnOutcome, TurnResult, run_turn,
};
pub use usage::{CallUsage, TurnUsage};
