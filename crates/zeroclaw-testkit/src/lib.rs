//! Test helpers shared by the zeroclaw crates.
//!
//! Fake providers: [`FakeOpenAi`] is a real HTTP/1.1 server on `127.0.0.1:0` that answers
//! `POST /v1/chat/completions` with scripted `text/event-stream` responses, so the agent's
//! OpenAI provider (and the daemon's end-to-end tests) can be exercised over a real socket
//! without a network. [`FakeAnthropic`] does the same for Anthropic's Messages API,
//! [`FakeOllama`] for Ollama's `/api/chat` and [`FakeGemini`] for Gemini's
//! `streamGenerateContent`, each in its own wire format. [`Fake`] is a [`FakeOpenAi`] with
//! the runtime that serves it ([`Served`] does the same for the other fakes).
//!
//! The shared test client (Unix): [`daemon`] starts the real `zeroclaw` binary and speaks
//! to it ([`daemon::TestDaemon`], [`daemon::Conn`], [`daemon::UidConn`]); [`ws`] is a
//! WebSocket peer for it; [`screen`] reads what a program wrote to a terminal. Every test
//! crate's `tests/common/mod.rs` re-exports them, so tests say `common::…`.
//! [`frames`] reads updates out of received frames.

// Unsafe only for two libc calls of the test client (a signal to a child, the euid).
#![deny(unsafe_code)]

#[cfg(unix)]
mod bin_fresh;
#[cfg(all(unix, feature = "chat-window"))]
pub mod chat_window;
#[cfg(unix)]
pub mod daemon;
mod fake;
mod fake_anthropic;
mod fake_gemini;
mod fake_ollama;
mod fake_openai;
mod fake_push;
mod fake_serve;
pub mod frames;
pub mod screen;
#[cfg(unix)]
pub mod ws;

pub use fake::{Fake, Served};
pub use fake_anthropic::{FakeAnthropic, FakeUsage, Reply};
pub use fake_gemini::{FakeGemini, GeminiReply};
pub use fake_ollama::{FakeOllama, OllamaReply};
pub use fake_openai::{FakeOpenAi, FakeToolCall, Scripted};
pub use fake_push::{FakePush, PushRequest};
pub use fake_serve::RecordedRequest;
