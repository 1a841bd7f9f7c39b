//! [`Served`]: a fake provider server with the tokio runtime that serves it, usable from a
//! synchronous test (which talks to the daemon over blocking sockets) and from an async one
//! alike: the runtime is built on a thread of its own and shut down without blocking, so
//! neither starting nor dropping it needs to be outside a runtime. [`Fake`] is the fake
//! OpenAI server served so, with its scripting at hand.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::{FakeAnthropic, FakeGemini, FakeOllama, FakeOpenAi, Scripted};

/// A server served by two worker threads of its own (`Served::<FakeAnthropic>::start()`).
pub struct Served<S> {
    pub server: S,
    rt: Option<tokio::runtime::Runtime>,
}

/// The fake OpenAI server, served.
pub type Fake = Served<FakeOpenAi>;

impl<S: Send + 'static> Served<S> {
    /// Builds the runtime and starts the server on it with `start` (a fake's `start`).
    pub fn serve<F, Fut>(start: F, what: &'static str) -> Served<S>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = std::io::Result<S>>,
    {
        // Built on a plain thread: a test already inside a runtime cannot block on another.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let server = rt
                .block_on(start())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            Served {
                server,
                rt: Some(rt),
            }
        })
        .join()
        .unwrap_or_else(|_| panic!("{what} did not start"))
    }
}

impl<S> Served<S> {
    /// Runs `future` on the server's runtime (from a synchronous test only: it blocks).
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.rt
            .as_ref()
            .expect("the server's runtime")
            .block_on(future)
    }
}

impl<S> Drop for Served<S> {
    fn drop(&mut self) {
        // Maybe dropped inside a test's runtime: no blocking shutdown there.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Served<FakeOpenAi> {
    pub fn start() -> Fake {
        Served::serve(FakeOpenAi::start, "fake openai")
    }

    pub fn push(&self, response: Scripted) {
        self.server.push(response);
    }

    /// Request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.server.requests()
    }

    /// Whether `n` requests arrived within `limit` (from a synchronous test only).
    pub fn wait_requests(&self, n: usize, limit: Duration) -> bool {
        self.block_on(self.server.wait_for_requests(n, limit))
    }
}

impl Served<FakeAnthropic> {
    pub fn start() -> Served<FakeAnthropic> {
        Served::serve(FakeAnthropic::start, "fake anthropic")
    }
}

impl Served<FakeOllama> {
    pub fn start() -> Served<FakeOllama> {
        Served::serve(FakeOllama::start, "fake ollama")
    }
}

impl Served<FakeGemini> {
    pub fn start() -> Served<FakeGemini> {
        Served::serve(FakeGemini::start, "fake gemini")
    }
}
