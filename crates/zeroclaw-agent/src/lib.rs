//! zeroclaw-agent: providers, tools and the turn loop.
//!
//! Knows nothing about sockets, JSON-RPC or storage: the daemon drives a turn
//! with [`run_turn`] and receives its events through a [`TurnHost`].
//!
//! Unsafe code is denied but for OS calls std does not wrap, each `#[allow]`ed where it is
//! made with a SAFETY note: signalling a child's process group (`kill(-pgid)`: bash
//! commands, hooks, MCP servers) and probing whether a pid still runs, on Unix; Landlock's
//! version query and, between fork and exec, `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self` (the sandbox, on Linux); the job object that holds and ends a
//! bash command's process tree, and whether a pid still runs (`OpenProcess`, for the
//! spill files a killed daemon left), on Windows.

#![deny(unsafe_code)]

pub mod compact;
pub mod hooks;
pub mod mcp;
pub mod message;
pub mod provider;
pub mod sandbox;
pub mod spawned;
pub mod step_text;
pub mod text;
pub mod tools;
pub mod turn;
pub mod usage;

pub use message::{ChatMessage, ToolCallRequest, estimate_tokens, provider_safe};
pub use provider::{
    AnthropicProvider, EchoProvider, GeminiProvider, ModelApi, ModelCatalog, NativeConfig,
    OllamaProvider, OpenAiConfig, OpenAiProvider, Provider, ProviderError, ProviderEvent,
    ProviderRequest, ProviderStream, ToolSchema, Usage,
};
pub use step_text::StepText;
pub use text::Text;
pub use tools::live::{LiveChunk, OutputStream};
pub use tools::{AskUser, ToolLimits, ToolName};
pub use turn::{
    AgentSpec, ApprovalAsk, ApprovalDecision, Autonomy, LiveSettings, MAX_TURN_TEXT, TurnEvent,
    TurnHost, TurnOutcome, TurnResult, run_turn,
};
pub use usage::{CallUsage, TurnUsage};
