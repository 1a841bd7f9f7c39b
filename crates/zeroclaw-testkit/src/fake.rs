//! [`Fake`]: a scriptable fake OpenAI server with the tokio runtime that serves it, usable
//! from a synchronous test (which talks to the daemon over blocking sockets) and from an
//! async one alike: the runtime is built on a thread of its own and shut down without
//! blocking, so neither starting nor dropping it needs to be outside a runtime.

use std::time::Duration;

use serde_json::Value;

use crate::{FakeOpenAi, Scripted};

/// A [`FakeOpenAi`] served by two worker threads of its own.
pub struct Fake {
    pub server: FakeOpenAi,
    rt: Option<tokio::runtime::Runtime>,
}

impl Fake {
    pub fn start() -> Fake {
        // Built on a plain thread: a test already inside a runtime cannot block on another.
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let server = rt.block_on(FakeOpenAi::start()).expect("fake openai");
            Fake {
                server,
                rt: Some(rt),
            }
        })
        .join()
        .expect("fake provider started")
    }

    pub fn push(&self, response: Scripted) {
        self.server.push(response);
    }

    /// Request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.server.requests()
    }

    /// Whether `n` requests arrived within `limit` (from a synchronous test only: it blocks
    /// on the fake's runtime).
    pub fn wait_requests(&self, n: usize, limit: Duration) -> bool {
        let rt = self.rt.as_ref().expect("the fake's runtime");
        rt.block_on(self.server.wait_for_requests(n, limit))
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        // Maybe dropped inside a test's runtime: no blocking shutdown there.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
