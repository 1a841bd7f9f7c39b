//! A scriptable fake of the OpenAI `chat/completions` streaming endpoint.
//!
//! Owns: one accept loop on `127.0.0.1:0` and one task per connection, all
//! stopped when the [`FakeOpenAi`] is dropped. Each request to
//! `POST /v1/chat/completions` takes the next [`Scripted`] response from a
//! FIFO queue (a default text answer when the queue is empty) and records the
//! request (path, headers, JSON body). Responses are real HTTP/1.1:
//! `text/event-stream` with chunked transfer encoding, `Connection: close`
//! (one request per connection, so a dropped client is visible as a write
//! failure, counted by [`FakeOpenAi::aborted_responses`]).
//!
//! Usage: a finished response ends with a usage chunk (10 prompt + 5 completion tokens)
//! when the request asked for it (`stream_options.include_usage`), unless
//! [`FakeOpenAi::set_usage`] turned that off. `GET /v1/models` answers the list set with
//! [`FakeOpenAi::set_models`] (404 until then, or the HTTP status set instead).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::fake_serve::{RecordedRequest, read_recorded, serve};

/// One tool call the fake model asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    pub id: String,
    pub name: String,
    /// The JSON arguments as the model would send them (a string).
    pub arguments: String,
    /// How many `arguments` fragments to split the string into (at least 1).
    pub fragments: usize,
}

impl FakeToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        FakeToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
            fragments: 3,
        }
    }
}

/// One scripted answer, consumed by one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Scripted {
    /// Content chunks, `delay` before each chunk after the first.
    Text {
        chunks: Vec<String>,
        delay: Duration,
    },
    /// Optional text chunks, then tool calls split across many deltas (id
    /// and name in the first delta of each call, arguments in fragments),
    /// then `finish_reason: "tool_calls"`.
    ToolCalls {
        text: Vec<String>,
        calls: Vec<FakeToolCall>,
    },
    /// `reasoning_content` chunks, then content chunks.
    Reasoning {
        reasoning: Vec<String>,
        text: Vec<String>,
    },
    /// A non-2xx answer with an OpenAI error JSON body.
    HttpError { status: u16, message: String },
    /// A non-2xx answer with an OpenAI error JSON body and a `retry-after` header.
    Throttled {
        status: u16,
        message: String,
        retry_after: String,
    },
    /// The connection is closed without any answer (a connection failure before the
    /// first byte).
    Hangup,
    /// Headers and these content chunks, then the connection is closed
    /// without `[DONE]`, without a finish reason and without the final
    /// chunk of the chunked encoding.
    BrokenStream { chunks: Vec<String> },
    /// Waits `delay` before the first byte, then answers with `then`.
    Slow {
        delay: Duration,
        then: Box<Scripted>,
    },
    /// These `data:` payloads written verbatim (no automatic `[DONE]`), then
    /// a clean end of the response body.
    Raw { events: Vec<String> },
    /// A non-2xx answer whose body of `len` bytes is produced lazily, 64 KiB
    /// at a time, as the client reads it (bytes written are counted by
    /// [`FakeOpenAi::error_bytes_written`]).
    HugeError { status: u16, len: usize },
}

impl Scripted {
    /// Text streamed word by word (chunks keep their spaces).
    pub fn text(text: &str) -> Self {
        Scripted::Text {
            chunks: split_words(text),
            delay: Duration::ZERO,
        }
    }

    /// Text streamed in the given chunks with `delay` between them.
    pub fn chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>, delay: Duration) -> Self {
        Scripted::Text {
            chunks: chunks.into_iter().map(Into::into).collect(),
            delay,
        }
    }

    /// A single tool call, arguments split into 3 fragments.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Scripted::ToolCalls {
            text: Vec::new(),
            calls: vec![FakeToolCall::new(id, name, arguments)],
        }
    }

    /// Several tool calls in one response.
    pub fn tool_calls(calls: Vec<FakeToolCall>) -> Self {
        Scripted::ToolCalls {
            text: Vec::new(),
            calls,
        }
    }

    /// Reasoning chunks, then text, both streamed word by word.
    pub fn reasoning(reasoning: &str, text: &str) -> Self {
        Scripted::Reasoning {
            reasoning: split_words(reasoning),
            text: split_words(text),
        }
    }

    pub fn http_error(status: u16, message: &str) -> Self {
        Scripted::HttpError {
            status,
            message: message.to_string(),
        }
    }

    /// A non-2xx answer carrying `retry-after: {retry_after}`.
    pub fn throttled(status: u16, message: &str, retry_after: &str) -> Self {
        Scripted::Throttled {
            status,
            message: message.to_string(),
            retry_after: retry_after.to_string(),
        }
    }

    pub fn broken<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        Scripted::BrokenStream {
            chunks: chunks.into_iter().map(Into::into).collect(),
        }
    }

    pub fn slow(delay: Duration, then: Scripted) -> Self {
        Scripted::Slow {
            delay,
            then: Box::new(then),
        }
    }

    pub fn huge_error(status: u16, len: usize) -> Self {
        Scripted::HugeError { status, len }
    }

    pub fn raw<S: Into<String>>(events: impl IntoIterator<Item = S>) -> Self {
        Scripted::Raw {
            events: events.into_iter().map(Into::into).collect(),
        }
    }
}

/// Splits text into word chunks that keep their trailing whitespace, so the
/// chunks concatenate to the input exactly.
pub fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            out.push(std::mem::take(&mut cur));
            in_space = false;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct State {
    queue: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<RecordedRequest>>,
    default_text: Mutex<String>,
    aborted: AtomicUsize,
    error_written: Arc<AtomicUsize>,
    usage: std::sync::atomic::AtomicBool,
    models: Mutex<Result<Vec<String>, u16>>,
    /// How long `GET /models` waits before answering.
    models_delay: Mutex<Duration>,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
    /// Text chunks written so far, all responses together.
    text_sent: Arc<AtomicUsize>,
    /// While set, connections are held open without a byte read (see [`FakeOpenAi::set_deaf`]).
    deaf: std::sync::atomic::AtomicBool,
    /// Connections held that way so far.
    held_unread: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fake server. Dropping it stops the server and every open response.
pub struct FakeOpenAi {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl FakeOpenAi {
    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    pub async fn start() -> std::io::Result<FakeOpenAi> {
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            default_text: Mutex::new("Hello from the fake model.".to_string()),
            aborted: AtomicUsize::new(0),
            error_written: Arc::new(AtomicUsize::new(0)),
            usage: std::sync::atomic::AtomicBool::new(true),
            models: Mutex::new(Err(404)),
            models_delay: Mutex::new(Duration::ZERO),
            marks: Arc::default(),
            text_sent: Arc::default(),
            deaf: std::sync::atomic::AtomicBool::new(false),
            held_unread: AtomicUsize::new(0),
        });
        let (addr, task) = serve(Arc::clone(&state), "fake openai", handle_conn).await?;
        Ok(FakeOpenAi { addr, state, task })
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// While `on`, every new connection is accepted and held open without a byte of its
    /// request read (a server that never reads); turned off, those connections close.
    pub fn set_deaf(&self, on: bool) {
        self.state.deaf.store(on, Ordering::SeqCst);
    }

    /// Connections held unread so far (see [`FakeOpenAi::set_deaf`]).
    pub fn held_unread(&self) -> usize {
        self.state.held_unread.load(Ordering::SeqCst)
    }

    /// Appends one scripted response to the queue.
    pub fn push(&self, response: Scripted) -> &Self {
        lock(&self.state.queue).push_back(response);
        self
    }

    /// Appends several scripted responses, in order.
    pub fn push_all(&self, responses: impl IntoIterator<Item = Scripted>) -> &Self {
        lock(&self.state.queue).extend(responses);
        self
    }

    /// The text answered (word by word) once the queue is empty.
    pub fn set_default_text(&self, text: &str) {
        *lock(&self.state.default_text) = text.to_string();
    }

    /// Whether finished responses carry a usage chunk (when the request asked for one).
    pub fn set_usage(&self, on: bool) {
        self.state.usage.store(on, Ordering::SeqCst);
    }

    /// What `GET /v1/models` answers: `Ok(ids)` a model list, `Err(status)` an HTTP error.
    pub fn set_models(&self, models: Result<Vec<String>, u16>) {
        *lock(&self.state.models) = models;
    }

    /// How long `GET /v1/models` waits before it answers (default: not at all).
    pub fn set_models_delay(&self, delay: Duration) {
        *lock(&self.state.models_delay) = delay;
    }

    /// When the first text of each response was written and flushed (for measuring the
    /// daemon's added latency up to its first `agent_message_chunk`).
    pub fn first_text_marks(&self) -> Vec<std::time::Instant> {
        lock(&self.state.marks).clone()
    }

    /// Text chunks written so far (`Scripted::Text`, all responses together): how far a
    /// streamed reply has got, for measuring how far behind its readers are.
    pub fn text_chunks_sent(&self) -> usize {
        self.state.text_sent.load(Ordering::Relaxed)
    }

    /// Scripted responses not consumed yet.
    pub fn pending(&self) -> usize {
        lock(&self.state.queue).len()
    }

    /// The JSON bodies of every request received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state.requests)
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// Every request received so far with its method, path and headers.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }

    /// Responses that could not be written completely because the client
    /// went away (e.g. a cancelled turn dropped its stream).
    pub fn aborted_responses(&self) -> usize {
        self.state.aborted.load(Ordering::SeqCst)
    }

    /// Body bytes of [`Scripted::HugeError`] answers written to clients so far.
    pub fn error_bytes_written(&self) -> usize {
        self.state.error_written.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` requests were received, or `timeout` passes.
    /// Returns whether the count was reached.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.request_count() >= n {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle_conn(mut stream: TcpStream, state: Arc<State>) {
    if state.deaf.load(Ordering::SeqCst) {
        // A server that never reads the request: the connection stays open, unread,
        // until deafness ends (then it is closed) or the server stops.
        state.held_unread.fetch_add(1, Ordering::SeqCst);
        while state.deaf.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        return;
    }
    let Some((method, path, body_json)) = read_recorded(&mut stream, &state.requests).await else {
        return;
    };
    let is_completions = method == "POST" && path.ends_with("/chat/completions");
    let is_models = method == "GET" && path.ends_with("/models");
    if is_models {
        let delay = *lock(&state.models_delay);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let models = lock(&state.models).clone();
        let _ = match models {
            Ok(ids) => write_models(&mut stream, &ids).await,
            Err(status) => write_error(&mut stream, status, "models unavailable").await,
        };
        return;
    }
    if !is_completions {
        let _ = write_error(&mut stream, 404, "not found").await;
        return;
    }
    let model = body_json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    let script = lock(&state.queue).pop_front().unwrap_or_else(|| {
        let text = lock(&state.default_text).clone();
        Scripted::text(&text)
    });
    let usage = state.usage.load(Ordering::SeqCst)
        && body_json["stream_options"]["include_usage"] == json!(true);
    let mut w = Writer {
        stream,
        model,
        started: false,
        error_written: Arc::clone(&state.error_written),
        usage,
        marks: Arc::clone(&state.marks),
        text_sent: Arc::clone(&state.text_sent),
    };
    if w.play(script).await.is_err() {
        state.aborted.fetch_add(1, Ordering::SeqCst);
    }
}

async fn write_error(stream: &mut TcpStream, status: u16, message: &str) -> std::io::Result<()> {
    write_error_with(stream, status, message, "").await
}

/// An OpenAI error answer; `extra` holds more header lines, each ending in CRLF.
async fn write_error_with(
    stream: &mut TcpStream,
    status: u16,
    message: &str,
    extra: &str,
) -> std::io::Result<()> {
    let body =
        json!({"error": {"message": message, "type": "server_error", "code": null}}).to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}

async fn write_models(stream: &mut TcpStream, ids: &[String]) -> std::io::Result<()> {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "owned_by": "fake"}))
        .collect();
    let body = json!({"object": "list", "data": data}).to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await?;
    let _ = stream.shutdown().await;
    Ok(())
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Error",
    }
}

struct Writer {
    stream: TcpStream,
    model: String,
    started: bool,
    error_written: Arc<AtomicUsize>,
    /// End finished responses with a usage chunk.
    usage: bool,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
    text_sent: Arc<AtomicUsize>,
}

impl Writer {
    async fn play(&mut self, script: Scripted) -> std::io::Result<()> {
        let mut script = script;
        // Unroll `Slow` wrappers iteratively (no async recursion needed).
        while let Scripted::Slow { delay, then } = script {
            tokio::time::sleep(delay).await;
            script = *then;
        }
        match script {
            Scripted::Slow { .. } => unreachable!("unrolled above"),
            Scripted::HttpError { status, message } => {
                write_error(&mut self.stream, status, &message).await
            }
            Scripted::Throttled {
                status,
                message,
                retry_after,
            } => {
                let extra = format!("Retry-After: {retry_after}\r\n");
                write_error_with(&mut self.stream, status, &message, &extra).await
            }
            Scripted::Hangup => {
                let _ = self.stream.shutdown().await;
                Ok(())
            }
            Scripted::Text { chunks, delay } => {
                for (i, c) in chunks.iter().enumerate() {
                    if i > 0 && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    // Marked before the write: the figure is an upper bound that
                    // includes this server's own write.
                    let sent = std::time::Instant::now();
                    self.delta(json!({"content": c}), None).await?;
                    self.text_sent.fetch_add(1, Ordering::Relaxed);
                    if i == 0 {
                        lock(&self.marks).push(sent);
                    }
                }
                self.finish("stop").await
            }
            Scripted::Reasoning { reasoning, text } => {
                for r in reasoning {
                    self.delta(json!({"reasoning_content": r}), None).await?;
                }
                for t in text {
                    self.delta(json!({"content": t}), None).await?;
                }
                self.finish("stop").await
            }
            Scripted::ToolCalls { text, calls } => {
                for t in text {
                    self.delta(json!({"content": t}), None).await?;
                }
                for (index, call) in calls.iter().enumerate() {
                    self.delta(
                        json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": ""}}]}),
                        None,
                    )
                    .await?;
                    for frag in split_n(&call.arguments, call.fragments.max(1)) {
                        self.delta(
                            json!({"tool_calls": [{"index": index, "function": {"arguments": frag}}]}),
                            None,
                        )
                        .await?;
                    }
                }
                self.finish("tool_calls").await
            }
            Scripted::BrokenStream { chunks } => {
                for c in chunks {
                    self.delta(json!({"content": c}), None).await?;
                }
                // Close without the terminating chunk: the body is cut short.
                self.stream.flush().await?;
                let _ = self.stream.shutdown().await;
                Ok(())
            }
            Scripted::HugeError { status, len } => {
                let head = format!(
                    "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
                    reason(status)
                );
                self.stream.write_all(head.as_bytes()).await?;
                let piece = vec![b'x'; 64 * 1024];
                let mut left = len;
                while left > 0 {
                    let n = left.min(piece.len());
                    self.stream.write_all(&piece[..n]).await?;
                    self.error_written.fetch_add(n, Ordering::SeqCst);
                    left -= n;
                }
                self.stream.flush().await
            }
            Scripted::Raw { events } => {
                self.headers().await?;
                for e in events {
                    self.chunk(format!("data: {e}\n\n").as_bytes()).await?;
                }
                self.end_body().await
            }
        }
    }

    async fn headers(&mut self) -> std::io::Result<()> {
        if !self.started {
            self.started = true;
            self.stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                )
                .await?;
            self.stream.flush().await?;
        }
        Ok(())
    }

    async fn chunk(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.headers().await?;
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        self.stream.write_all(&out).await?;
        self.stream.flush().await
    }

    async fn event(&mut self, value: &Value) -> std::io::Result<()> {
        self.chunk(format!("data: {value}\n\n").as_bytes()).await
    }

    async fn delta(&mut self, delta: Value, finish: Option<&str>) -> std::io::Result<()> {
        let mut delta = delta;
        if !self.started
            && let Some(obj) = delta.as_object_mut()
        {
            obj.insert("role".into(), json!("assistant"));
        }
        let v = json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        self.event(&v).await
    }

    async fn finish(&mut self, reason: &str) -> std::io::Result<()> {
        self.delta(json!({}), Some(reason)).await?;
        if self.usage {
            let usage = json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": self.model,
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            });
            self.event(&usage).await?;
        }
        self.chunk(b"data: [DONE]\n\n").await?;
        self.end_body().await
    }

    async fn end_body(&mut self) -> std::io::Result<()> {
        self.headers().await?;
        self.stream.write_all(b"0\r\n\r\n").await?;
        self.stream.flush().await?;
        let _ = self.stream.shutdown().await;
        Ok(())
    }
}

/// Splits `s` into `n` pieces on char boundaries (some may be empty).
fn split_n(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(n).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn split_words_round_trips() {
        for s in ["hello world", "  a  b ", "", "one", "x\ny\tz"] {
            assert_eq!(split_words(s).concat(), s);
        }
        assert_eq!(split_words("hi there you"), vec!["hi ", "there ", "you"]);
    }

    #[test]
    fn split_n_round_trips() {
        let s = r#"{"command":"echo hi"}"#;
        let parts = split_n(s, 3);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.concat(), s);
    }

    #[tokio::test]
    async fn serves_sse_and_records() {
        let fake = FakeOpenAi::start().await.unwrap();
        fake.push(Scripted::text("hi there"));
        let mut s = TcpStream::connect(fake.addr()).await.unwrap();
        let body = r#"{"model":"m","stream":true}"#;
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK"));
        assert!(out.contains("text/event-stream"));
        assert!(out.contains("\"hi \""));
        assert!(out.contains("[DONE]"));
        assert_eq!(fake.requests(), vec![json!({"model":"m","stream":true})]);
    }
}
