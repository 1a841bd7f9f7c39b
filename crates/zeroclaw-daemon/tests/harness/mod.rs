//! The in-process test bed of tests/timing.rs: a daemon ([`zeroclaw_daemon::harness`]) on a
//! temporary config dir, clients over in-memory pipes, and the fake OpenAI server on a
//! runtime of its own (so jumps of the test's clock never touch it): `zeroclaw-testkit`'s
//! [`Fake`], the one the end-to-end tests use.
//!
//! Time: tests run on a current-thread runtime whose clock runs normally, and [`skip`]
//! jumps it forward in one step (the timers due fire at once). Waiting is done with the
//! clock running and a deadline ([`Client::recv`]), never while it is paused: a paused
//! clock auto-advances whenever the runtime looks idle, and the runtime looks idle while
//! the store thread or the fake server is working, so a paused wait could fire a timeout
//! early. Tests that need no store or provider may pause for good ([`tokio::time::pause`])
//! and measure virtual time.

#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use zeroclaw_daemon::harness::Harness;
pub use zeroclaw_testkit::Fake;
#[allow(unused_imports)] // tests/timing.rs uses it, tests/fuzz_dispatch.rs does not
pub use zeroclaw_testkit::frames::updates_of;

/// How long a test waits for a frame it expects (with the clock running).
pub const EXPECT_WITHIN: Duration = Duration::from_secs(10);
/// Pipe buffer of a client (bytes each way).
pub const PIPE: usize = 64 * 1024;

/// Jumps the clock forward by `by`: every timer due by then fires now.
pub async fn skip(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// A daemon on a temporary config dir.
pub struct Bed {
    pub harness: Harness,
    pub fake: Option<Fake>,
    dir: tempfile::TempDir,
}

impl Bed {
    /// A daemon whose agent `default` (tools `bash` and `ask_user`, supervised) talks to a
    /// fresh fake provider.
    pub async fn with_fake() -> Bed {
        let fake = Fake::start();
        let config = format!(
            r#"[providers.fake]
kind = "openai"
base_url = "{}"
model = "m"
timeout_secs = 10

[agents.default]
provider = "fake"
tools = ["bash", "ask_user"]
autonomy = "supervised"
max_tool_iterations = 5
"#,
            fake.server.base_url()
        );
        Bed::open(&config, Some(fake)).await
    }

    /// A daemon with the default configuration and no provider.
    pub async fn plain() -> Bed {
        Bed::open("", None).await
    }

    async fn open(config: &str, fake: Option<Fake>) -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        if !config.is_empty() {
            std::fs::write(dir.path().join("config.toml"), config).expect("config");
        }
        let harness = Harness::open(dir.path()).await.expect("daemon");
        Bed { harness, fake, dir }
    }

    pub fn config_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn fake(&self) -> &Fake {
        self.fake.as_ref().expect("a bed with a fake provider")
    }

    /// A new connection, not yet initialized.
    pub fn connect(&self) -> Client {
        Client::new(self.harness.connect(PIPE).expect("admitted"))
    }

    /// A new initialized connection (`elicitation`: it declares it can answer questions).
    pub async fn client(&self, elicitation: bool) -> Client {
        let mut c = self.connect();
        let caps = if elicitation {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        c.result(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
        )
        .await;
        c
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.harness.shutdown();
    }
}

/// One client connection speaking NDJSON over an in-memory pipe.
pub struct Client {
    reader: BufReader<ReadHalf<DuplexStream>>,
    pub writer: WriteHalf<DuplexStream>,
    /// Bytes of a line not complete yet (a cancelled read keeps them here).
    partial: Vec<u8>,
    next_id: u64,
}

impl Client {
    pub fn new(stream: DuplexStream) -> Client {
        let (reader, writer) = tokio::io::split(stream);
        Client {
            reader: BufReader::new(reader),
            writer,
            partial: Vec::new(),
            next_id: 1,
        }
    }

    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.writer.write_all(&line).await.expect("send");
    }

    /// Sends a request with a fresh numeric id; returns the id.
    pub async fn send_call(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The next frame, or `None` once the daemon closed the connection. Cancel-safe.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let n = self
                .reader
                .read_until(b'\n', &mut self.partial)
                .await
                .ok()?;
            if self.partial.ends_with(b"\n") {
                let line = std::mem::take(&mut self.partial);
                return Some(serde_json::from_slice(&line).expect("a JSON frame"));
            }
            if n == 0 {
                return None;
            }
        }
    }

    /// The next frame, expected within [`EXPECT_WITHIN`] (the clock must be running).
    pub async fn recv(&mut self) -> Value {
        tokio::time::timeout(EXPECT_WITHIN, self.next())
            .await
            .expect("a frame in time")
            .expect("connection open")
    }

    /// Reads until the response to `id`: (every frame before it, the response).
    pub async fn collect_until(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return (seen, msg);
            }
            seen.push(msg);
        }
    }

    /// Reads until a `session/update` of type `kind` (or a request of method `kind`):
    /// (every frame before it, that frame).
    pub async fn until(&mut self, kind: &str) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg["method"] == kind
                || (msg["method"] == "session/update" && msg["params"]["type"] == kind)
            {
                return (seen, msg);
            }
            seen.push(msg);
        }
    }

    /// Calls `method` and returns its response (frames before it are dropped).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_call(method, params).await;
        self.collect_until(&id).await.1
    }

    /// Calls `method` and returns its result; panics on an error.
    pub async fn result(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params).await;
        resp.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {resp}"))
    }

    /// Calls `method` and returns its error code; panics on a result.
    pub async fn error_code(&mut self, method: &str, params: Value) -> i64 {
        let resp = self.call(method, params).await;
        resp["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{method} should fail: {resp}"))
    }
}
