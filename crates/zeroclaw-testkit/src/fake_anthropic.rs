//! A scriptable fake of Anthropic's Messages API: `POST /v1/messages` with `stream: true`
//! answered in its wire format (`event: NAME` + `data: JSON` server-sent events:
//! `message_start`, `content_block_start` / `content_block_delta` / `content_block_stop`,
//! `ping`, `message_delta`, `message_stop`, `error`), errors in its shape
//! (`{"type":"error","error":{"type":…,"message":…}}`), and `GET /v1/models`.
//!
//! Owns: one accept loop on `127.0.0.1:0` and a task per connection, stopped when the
//! [`FakeAnthropic`] is dropped. Each `POST /v1/messages` takes the next [`Reply`] from a
//! FIFO queue (a short text answer when it is empty) and is recorded with its headers.
//! Every finished message reports the usage set with [`FakeAnthropic::set_usage`].

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::fake_openai::{reason, split_words};
use crate::fake_serve::{RecordedRequest, read_recorded, serve};

/// One scripted answer to one `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A message: an optional thinking block `(thinking, signature)`, text chunks, then
    /// `tool_use` blocks `(id, name, input)` (stop reason `tool_use` when there are any).
    Message {
        thinking: Option<(String, String)>,
        text: Vec<String>,
        tools: Vec<(String, String, Value)>,
        /// Waited before each text chunk after the first.
        delay: Duration,
    },
    /// An HTTP error in Anthropic's shape, with a `retry-after` header when given.
    HttpError {
        status: u16,
        kind: String,
        message: String,
        retry_after: Option<String>,
    },
    /// Text chunks, then an `error` event (e.g. `overloaded_error`) and the end.
    StreamError {
        text: Vec<String>,
        kind: String,
        message: String,
    },
    /// These `(event, data)` pairs verbatim, then the end of the body.
    Raw(Vec<(String, String)>),
    /// Text chunks, then nothing more while the connection stays open.
    Stall { text: Vec<String> },
}

impl Reply {
    pub fn text(text: &str) -> Reply {
        Reply::Message {
            thinking: None,
            text: split_words(text),
            tools: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn thinking(thinking: &str, signature: &str, text: &str) -> Reply {
        Reply::Message {
            thinking: Some((thinking.into(), signature.into())),
            text: split_words(text),
            tools: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// `tool_use` blocks `(id, name, input)`, after an optional thinking block.
    pub fn tools(thinking: Option<(&str, &str)>, tools: &[(&str, &str, Value)]) -> Reply {
        Reply::Message {
            thinking: thinking.map(|(t, s)| (t.into(), s.into())),
            text: Vec::new(),
            tools: tools
                .iter()
                .map(|(i, n, v)| (i.to_string(), n.to_string(), v.clone()))
                .collect(),
            delay: Duration::ZERO,
        }
    }

    pub fn http_error(status: u16, kind: &str, message: &str, retry_after: Option<&str>) -> Reply {
        Reply::HttpError {
            status,
            kind: kind.into(),
            message: message.into(),
            retry_after: retry_after.map(str::to_string),
        }
    }

    pub fn stream_error(text: &str, kind: &str, message: &str) -> Reply {
        Reply::StreamError {
            text: split_words(text),
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// `usage` numbers every finished message reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

struct State {
    queue: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    usage: Mutex<FakeUsage>,
    models: Mutex<Vec<String>>,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fake server. Dropping it stops the server and every open response.
pub struct FakeAnthropic {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl FakeAnthropic {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub async fn start() -> std::io::Result<FakeAnthropic> {
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            usage: Mutex::new(FakeUsage {
                input_tokens: 12,
                output_tokens: 7,
                cache_creation_input_tokens: 100,
                cache_read_input_tokens: 50,
            }),
            models: Mutex::new(vec!["claude-fake-1".into(), "claude-fake-2".into()]),
            marks: Arc::default(),
        });
        let (addr, task) = serve(Arc::clone(&state), "fake anthropic", handle).await?;
        Ok(FakeAnthropic { addr, state, task })
    }

    /// `http://127.0.0.1:PORT` (the API paths start with `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.state.queue).push_back(reply);
        self
    }

    pub fn set_usage(&self, usage: FakeUsage) {
        *lock(&self.state.usage) = usage;
    }

    /// When the first text of each response was written and flushed (for measuring the
    /// daemon's added latency up to its first `agent_message_chunk`).
    pub fn first_text_marks(&self) -> Vec<std::time::Instant> {
        lock(&self.state.marks).clone()
    }

    pub fn set_models(&self, ids: Vec<String>) {
        *lock(&self.state.models) = ids;
    }

    /// Replies not consumed yet.
    pub fn pending(&self) -> usize {
        lock(&self.state.queue).len()
    }

    /// Every request so far (`POST /v1/messages` and `GET /v1/models`), in order.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// The JSON bodies of the `POST /v1/messages` requests so far.
    pub fn messages_requests(&self) -> Vec<Value> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.body.clone())
            .collect()
    }
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(mut stream: TcpStream, state: Arc<State>) {
    let Some((method, path, body)) = read_recorded(&mut stream, &state.requests).await else {
        return;
    };
    let mut w = Writer {
        stream,
        started: false,
        marks: Arc::clone(&state.marks),
        marked: false,
    };
    let _ = match (method.as_str(), path.as_str()) {
        ("GET", p) if p.starts_with("/v1/models") => {
            let data: Vec<Value> = lock(&state.models)
                .iter()
                .map(|id| {
                    json!({"type": "model", "id": id, "display_name": id,
                    "created_at": "2025-01-01T00:00:00Z"})
                })
                .collect();
            let first = data.first().map(|m| m["id"].clone());
            let last = data.last().map(|m| m["id"].clone());
            w.json(
                200,
                &json!({"data": data, "has_more": false, "first_id": first, "last_id": last}),
                None,
            )
            .await
        }
        ("POST", "/v1/messages") => {
            let reply = lock(&state.queue)
                .pop_front()
                .unwrap_or_else(|| Reply::text("Hello from the fake Claude."));
            let usage = *lock(&state.usage);
            let model = body["model"].as_str().unwrap_or("claude-fake").to_string();
            w.play(reply, &model, usage).await
        }
        _ => {
            w.json(404, &error_body("not_found_error", "Not found"), None)
                .await
        }
    };
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

struct Writer {
    stream: TcpStream,
    started: bool,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
    /// This response's first text was marked.
    marked: bool,
}

impl Writer {
    async fn json(
        &mut self,
        status: u16,
        body: &Value,
        retry_after: Option<&str>,
    ) -> std::io::Result<()> {
        let body = body.to_string();
        let extra = retry_after.map_or(String::new(), |r| format!("retry-after: {r}\r\n"));
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             request-id: req_fake\r\n{extra}connection: close\r\n\r\n",
            reason(status),
            body.len()
        );
        self.stream.write_all(head.as_bytes()).await?;
        self.stream.write_all(body.as_bytes()).await?;
        self.stream.flush().await?;
        let _ = self.stream.shutdown().await;
        Ok(())
    }

    async fn chunk(&mut self, data: &[u8]) -> std::io::Result<()> {
        if !self.started {
            self.started = true;
            self.stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                      cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                      connection: close\r\n\r\n",
                )
                .await?;
        }
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        self.stream.write_all(&out).await?;
        self.stream.flush().await
    }

    async fn event(&mut self, name: &str, data: &Value) -> std::io::Result<()> {
        self.chunk(format!("event: {name}\ndata: {data}\n\n").as_bytes())
            .await
    }

    async fn end(&mut self) -> std::io::Result<()> {
        self.chunk(b"").await.ok();
        self.stream.flush().await?;
        let _ = self.stream.shutdown().await;
        Ok(())
    }

    async fn start(&mut self, model: &str, usage: FakeUsage) -> std::io::Result<()> {
        self.event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": usage.input_tokens,
                          "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                          "cache_read_input_tokens": usage.cache_read_input_tokens,
                          "output_tokens": 1}}}),
        )
        .await
    }

    async fn text_block(
        &mut self,
        index: usize,
        text: &[String],
        delay: Duration,
    ) -> std::io::Result<()> {
        self.event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
        )
        .await?;
        for (i, t) in text.iter().enumerate() {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            // Marked before the write (an upper bound, as in the other fakes).
            let sent = std::time::Instant::now();
            self.event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": t}}),
            )
            .await?;
            if !self.marked {
                self.marked = true;
                lock(&self.marks).push(sent);
            }
        }
        self.event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        )
        .await
    }

    async fn play(&mut self, reply: Reply, model: &str, usage: FakeUsage) -> std::io::Result<()> {
        match reply {
            Reply::HttpError {
                status,
                kind,
                message,
                retry_after,
            } => {
                self.json(status, &error_body(&kind, &message), retry_after.as_deref())
                    .await
            }
            Reply::Raw(events) => {
                for (name, data) in events {
                    self.chunk(format!("event: {name}\ndata: {data}\n\n").as_bytes())
                        .await?;
                }
                self.end().await
            }
            Reply::StreamError {
                text,
                kind,
                message,
            } => {
                self.start(model, usage).await?;
                self.text_block(0, &text, Duration::ZERO).await?;
                self.event("error", &error_body(&kind, &message)).await?;
                self.end().await
            }
            Reply::Stall { text } => {
                self.start(model, usage).await?;
                self.event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}),
                )
                .await?;
                for t in text {
                    self.event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": t}}),
                    )
                    .await?;
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
            Reply::Message {
                thinking,
                text,
                tools,
                delay,
            } => {
                self.start(model, usage).await?;
                let mut index = 0;
                if let Some((thought, signature)) = thinking {
                    self.event(
                        "content_block_start",
                        &json!({"type": "content_block_start", "index": index,
                                "content_block": {"type": "thinking", "thinking": ""}}),
                    )
                    .await?;
                    for t in split_words(&thought) {
                        self.event(
                            "content_block_delta",
                            &json!({"type": "content_block_delta", "index": index,
                                    "delta": {"type": "thinking_delta", "thinking": t}}),
                        )
                        .await?;
                    }
                    self.event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": index,
                                "delta": {"type": "signature_delta", "signature": signature}}),
                    )
                    .await?;
                    self.event(
                        "content_block_stop",
                        &json!({"type": "content_block_stop", "index": index}),
                    )
                    .await?;
                    index += 1;
                }
                self.event("ping", &json!({"type": "ping"})).await?;
                if !text.is_empty() {
                    self.text_block(index, &text, delay).await?;
                    index += 1;
                }
                for (id, name, input) in &tools {
                    self.event(
                        "content_block_start",
                        &json!({"type": "content_block_start", "index": index,
                                "content_block": {"type": "tool_use", "id": id, "name": name,
                                                  "input": {}}}),
                    )
                    .await?;
                    let input = input.to_string();
                    let mid = input.len() / 2;
                    let mid = (0..=mid)
                        .rev()
                        .find(|&i| input.is_char_boundary(i))
                        .unwrap_or(0);
                    for part in [&input[..mid], &input[mid..]] {
                        self.event(
                            "content_block_delta",
                            &json!({"type": "content_block_delta", "index": index,
                                    "delta": {"type": "input_json_delta", "partial_json": part}}),
                        )
                        .await?;
                    }
                    self.event(
                        "content_block_stop",
                        &json!({"type": "content_block_stop", "index": index}),
                    )
                    .await?;
                    index += 1;
                }
                let stop = if tools.is_empty() {
                    "end_turn"
                } else {
                    "tool_use"
                };
                self.event(
                    "message_delta",
                    &json!({"type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": null},
                            "usage": {"output_tokens": usage.output_tokens}}),
                )
                .await?;
                self.event("message_stop", &json!({"type": "message_stop"}))
                    .await?;
                self.end().await
            }
        }
    }
}
