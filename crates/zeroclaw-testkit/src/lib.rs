//! Test helpers shared by the zeroclaw crates.
//!
//! [`FakeOpenAi`] is a real HTTP/1.1 server on `127.0.0.1:0` that answers
//! `POST /v1/chat/completions` with scripted `text/event-stream` responses, so
//! the agent's OpenAI provider (and the daemon's integration tests) can be
//! exercised over a real socket without a network. [`FakeAnthropic`] does the same for
//! Anthropic's Messages API, [`FakeOllama`] for Ollama's `/api/chat` and [`FakeGemini`] for
//! Gemini's `streamGenerateContent`, each in its own
//! wire format.

#![forbid(unsafe_code)]

mod fake_anthropic;
mod fake_gemini;
mod fake_ollama;
mod fake_openai;

pub use fake_anthropic::{FakeAnthropic, FakeUsage, Reply};
pub use fake_gemini::{FakeGemini, GeminiReply};
pub use fake_ollama::{FakeOllama, OllamaReply};
pub use fake_openai::{FakeOpenAi, FakeToolCall, RecordedRequest, Scripted};
