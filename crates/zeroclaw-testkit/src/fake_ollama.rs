//! A scriptable fake of Ollama's own API: `POST /api/chat` answered as Ollama streams it
//! (`application/x-ndjson`, one JSON object per line, the last with `done: true` and the
//! token counts), errors as `{"error": "…"}` (an HTTP status, or a line mid-stream), and
//! `GET /api/tags`.
//!
//! Owns: one accept loop on `127.0.0.1:0` and a task per connection, stopped when the
//! [`FakeOllama`] is dropped. Each chat request takes the next [`OllamaReply`] (a short
//! text answer when the queue is empty) and is recorded.

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

/// One scripted answer to one `POST /api/chat`.
#[derive(Debug, Clone, PartialEq)]
pub enum OllamaReply {
    /// Thinking chunks, text chunks, then tool calls `(name, arguments)` in one line.
    Message {
        thinking: Vec<String>,
        text: Vec<String>,
        tools: Vec<(String, Value)>,
    },
    /// An HTTP error with an `{"error": message}` body (and `retry-after` when given).
    HttpError {
        status: u16,
        message: String,
        retry_after: Option<String>,
    },
    /// Text chunks, then an `{"error": message}` line.
    StreamError { text: Vec<String>, message: String },
    /// These lines verbatim, then the end of the body.
    Raw(Vec<String>),
    /// Text chunks, then silence with the connection open.
    Stall { text: Vec<String> },
}

impl OllamaReply {
    pub fn text(text: &str) -> OllamaReply {
        OllamaReply::Message {
            thinking: Vec::new(),
            text: split_words(text),
            tools: Vec::new(),
        }
    }

    pub fn thinking(thinking: &str, text: &str) -> OllamaReply {
        OllamaReply::Message {
            thinking: split_words(thinking),
            text: split_words(text),
            tools: Vec::new(),
        }
    }

    pub fn tools(tools: &[(&str, Value)]) -> OllamaReply {
        OllamaReply::Message {
            thinking: Vec::new(),
            text: Vec::new(),
            tools: tools
                .iter()
                .map(|(n, a)| (n.to_string(), a.clone()))
                .collect(),
        }
    }
}

struct State {
    queue: Mutex<VecDeque<OllamaReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    models: Mutex<Vec<String>>,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fake server. Dropping it stops the server and every open response.
pub struct FakeOllama {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl FakeOllama {
    pub async fn start() -> std::io::Result<FakeOllama> {
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            models: Mutex::new(vec!["llama3.2:latest".into(), "qwen3:8b".into()]),
            marks: Arc::default(),
        });
        let (addr, task) = serve(Arc::clone(&state), "fake ollama", handle).await?;
        Ok(FakeOllama { addr, state, task })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: OllamaReply) -> &Self {
        lock(&self.state.queue).push_back(reply);
        self
    }

    /// When the first text of each response was written and flushed (for measuring the
    /// daemon's added latency up to its first `agent_message_chunk`).
    pub fn first_text_marks(&self) -> Vec<std::time::Instant> {
        lock(&self.state.marks).clone()
    }

    pub fn pending(&self) -> usize {
        lock(&self.state.queue).len()
    }

    pub fn recorded(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// The JSON bodies of the `POST /api/chat` requests so far.
    pub fn chat_requests(&self) -> Vec<Value> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.body.clone())
            .collect()
    }
}

impl Drop for FakeOllama {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(mut stream: TcpStream, state: Arc<State>) {
    let Some((method, path, body)) = read_recorded(&mut stream, &state.requests).await else {
        return;
    };
    let model = body["model"].as_str().unwrap_or("llama3.2").to_string();
    let mut w = Lines {
        stream,
        started: false,
        model,
        marks: Arc::clone(&state.marks),
    };
    let _ = match (method.as_str(), path.as_str()) {
        ("GET", "/api/tags") => {
            let models: Vec<Value> = lock(&state.models)
                .iter()
                .map(|n| {
                    json!({"name": n, "model": n, "size": 2019393189u64,
                    "digest": "a80c4f17acd5", "details": {"format": "gguf"}})
                })
                .collect();
            w.json(200, &json!({"models": models}), None).await
        }
        ("POST", "/api/chat") => {
            let reply = lock(&state.queue)
                .pop_front()
                .unwrap_or_else(|| OllamaReply::text("Hello from the fake llama."));
            w.play(reply).await
        }
        _ => {
            w.json(404, &json!({"error": "404 page not found"}), None)
                .await
        }
    };
}

struct Lines {
    stream: TcpStream,
    started: bool,
    model: String,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
}

impl Lines {
    async fn json(
        &mut self,
        status: u16,
        body: &Value,
        retry_after: Option<&str>,
    ) -> std::io::Result<()> {
        let body = body.to_string();
        let extra = retry_after.map_or(String::new(), |r| format!("Retry-After: {r}\r\n"));
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json; charset=utf-8\r\n\
             Content-Length: {}\r\n{extra}Connection: close\r\n\r\n",
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
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\
                      Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                )
                .await?;
        }
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        self.stream.write_all(&out).await?;
        self.stream.flush().await
    }

    async fn line(&mut self, v: &Value) -> std::io::Result<()> {
        self.chunk(format!("{v}\n").as_bytes()).await
    }

    async fn message(&mut self, message: Value) -> std::io::Result<()> {
        let v = json!({"model": self.model, "created_at": "2025-01-01T00:00:00Z",
            "message": message, "done": false});
        self.line(&v).await
    }

    async fn end(&mut self) -> std::io::Result<()> {
        self.chunk(b"").await?;
        let _ = self.stream.shutdown().await;
        Ok(())
    }

    async fn play(&mut self, reply: OllamaReply) -> std::io::Result<()> {
        match reply {
            OllamaReply::HttpError {
                status,
                message,
                retry_after,
            } => {
                self.json(status, &json!({"error": message}), retry_after.as_deref())
                    .await
            }
            OllamaReply::Raw(lines) => {
                for l in lines {
                    self.chunk(format!("{l}\n").as_bytes()).await?;
                }
                self.end().await
            }
            OllamaReply::StreamError { text, message } => {
                for t in text {
                    self.message(json!({"role": "assistant", "content": t}))
                        .await?;
                }
                self.line(&json!({"error": message})).await?;
                self.end().await
            }
            OllamaReply::Stall { text } => {
                for t in text {
                    self.message(json!({"role": "assistant", "content": t}))
                        .await?;
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
            OllamaReply::Message {
                thinking,
                text,
                tools,
            } => {
                for t in thinking {
                    self.message(json!({"role": "assistant", "content": "", "thinking": t}))
                        .await?;
                }
                for (i, t) in text.into_iter().enumerate() {
                    // Marked before the write (an upper bound, as in the other fakes).
                    let sent = std::time::Instant::now();
                    self.message(json!({"role": "assistant", "content": t}))
                        .await?;
                    if i == 0 {
                        lock(&self.marks).push(sent);
                    }
                }
                if !tools.is_empty() {
                    let calls: Vec<Value> = tools
                        .iter()
                        .map(|(n, a)| json!({"function": {"name": n, "arguments": a}}))
                        .collect();
                    self.message(json!({"role": "assistant", "content": "", "tool_calls": calls}))
                        .await?;
                }
                let done = json!({"model": self.model, "created_at": "2025-01-01T00:00:01Z",
                    "message": {"role": "assistant", "content": ""}, "done": true,
                    "done_reason": "stop", "total_duration": 4883583458u64,
                    "prompt_eval_count": 26, "eval_count": 9});
                self.line(&done).await?;
                self.end().await
            }
        }
    }
}
