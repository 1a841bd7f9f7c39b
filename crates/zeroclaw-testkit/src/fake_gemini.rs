//! A scriptable fake of Google's Gemini API: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
//! answered as server-sent events of `GenerateContentResponse` (`candidates[0].content.parts`
//! with `text`, `thought: true` and `functionCall` + `thoughtSignature` parts,
//! `finishReason`, `usageMetadata`), errors in its shape (`{"error": {code, message,
//! status}}`), and `GET /v1beta/models`.
//!
//! Owns: one accept loop on `127.0.0.1:0` and a task per connection, stopped when the
//! [`FakeGemini`] is dropped. Each generate request takes the next [`GeminiReply`] (a short
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

/// One scripted answer to one `streamGenerateContent`.
#[derive(Debug, Clone, PartialEq)]
pub enum GeminiReply {
    /// Thought chunks, text chunks, then function calls `(name, args, thoughtSignature)`.
    Message {
        thoughts: Vec<String>,
        text: Vec<String>,
        calls: Vec<(String, Value, Option<String>)>,
    },
    /// An HTTP error in Google's shape (`status` e.g. `RESOURCE_EXHAUSTED`).
    HttpError {
        code: u16,
        message: String,
        status: String,
        retry_after: Option<String>,
    },
    /// Text chunks, then an `{"error": …}` event.
    StreamError { text: Vec<String>, message: String },
    /// These `data:` payloads verbatim, then the end of the body.
    Raw(Vec<String>),
    /// Text chunks, then silence with the connection open.
    Stall { text: Vec<String> },
}

impl GeminiReply {
    pub fn text(text: &str) -> GeminiReply {
        GeminiReply::Message {
            thoughts: Vec::new(),
            text: split_words(text),
            calls: Vec::new(),
        }
    }

    pub fn thinking(thought: &str, text: &str) -> GeminiReply {
        GeminiReply::Message {
            thoughts: split_words(thought),
            text: split_words(text),
            calls: Vec::new(),
        }
    }

    /// Function calls `(name, args, thoughtSignature)`.
    pub fn calls(calls: &[(&str, Value, Option<&str>)]) -> GeminiReply {
        GeminiReply::Message {
            thoughts: Vec::new(),
            text: Vec::new(),
            calls: calls
                .iter()
                .map(|(n, a, s)| (n.to_string(), a.clone(), s.map(str::to_string)))
                .collect(),
        }
    }
}

struct State {
    queue: Mutex<VecDeque<GeminiReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fake server. Dropping it stops the server and every open response.
pub struct FakeGemini {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl FakeGemini {
    pub async fn start() -> std::io::Result<FakeGemini> {
        let state = Arc::new(State {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            marks: Arc::default(),
        });
        let (addr, task) = serve(Arc::clone(&state), "fake gemini", handle).await?;
        Ok(FakeGemini { addr, state, task })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, reply: GeminiReply) -> &Self {
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

    /// The JSON bodies of the generate requests so far.
    pub fn generate_requests(&self) -> Vec<Value> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.body.clone())
            .collect()
    }
}

impl Drop for FakeGemini {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(mut stream: TcpStream, state: Arc<State>) {
    let Some((method, path, _)) = read_recorded(&mut stream, &state.requests).await else {
        return;
    };
    let mut w = Events {
        stream,
        started: false,
        marks: Arc::clone(&state.marks),
    };
    let _ = match method.as_str() {
        "GET" if path.starts_with("/v1beta/models") => {
            let models = json!({"models": [
                {"name": "models/gemini-fake-flash", "displayName": "Fake Flash",
                 "supportedGenerationMethods": ["generateContent"]},
                {"name": "models/gemini-fake-pro", "displayName": "Fake Pro",
                 "supportedGenerationMethods": ["generateContent"]}]});
            w.json(200, &models, None).await
        }
        "POST" if path.contains(":streamGenerateContent") => {
            let reply = lock(&state.queue)
                .pop_front()
                .unwrap_or_else(|| GeminiReply::text("Hello from the fake Gemini."));
            w.play(reply).await
        }
        _ => {
            let e = json!({"error": {"code": 404, "message": "Not found", "status": "NOT_FOUND"}});
            w.json(404, &e, None).await
        }
    };
}

fn usage() -> Value {
    json!({"promptTokenCount": 40, "candidatesTokenCount": 6, "cachedContentTokenCount": 32,
           "thoughtsTokenCount": 4, "totalTokenCount": 50})
}

struct Events {
    stream: TcpStream,
    started: bool,
    marks: Arc<Mutex<Vec<std::time::Instant>>>,
}

impl Events {
    async fn json(
        &mut self,
        status: u16,
        body: &Value,
        retry_after: Option<&str>,
    ) -> std::io::Result<()> {
        let body = body.to_string();
        let extra = retry_after.map_or(String::new(), |r| format!("Retry-After: {r}\r\n"));
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json; charset=UTF-8\r\n\
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
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
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

    async fn event(&mut self, v: &Value) -> std::io::Result<()> {
        self.chunk(format!("data: {v}\r\n\r\n").as_bytes()).await
    }

    async fn parts(&mut self, parts: Vec<Value>, finish: Option<&str>) -> std::io::Result<()> {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        let mut v = json!({"modelVersion": "gemini-fake"});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
            v["usageMetadata"] = usage();
        }
        v["candidates"] = json!([candidate]);
        self.event(&v).await
    }

    async fn end(&mut self) -> std::io::Result<()> {
        self.chunk(b"").await?;
        let _ = self.stream.shutdown().await;
        Ok(())
    }

    async fn play(&mut self, reply: GeminiReply) -> std::io::Result<()> {
        match reply {
            GeminiReply::HttpError {
                code,
                message,
                status,
                retry_after,
            } => {
                let e = json!({"error": {"code": code, "message": message, "status": status}});
                self.json(code, &e, retry_after.as_deref()).await
            }
            GeminiReply::Raw(events) => {
                for e in events {
                    self.chunk(format!("data: {e}\r\n\r\n").as_bytes()).await?;
                }
                self.end().await
            }
            GeminiReply::StreamError { text, message } => {
                for t in text {
                    self.parts(vec![json!({"text": t})], None).await?;
                }
                let e = json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}});
                self.event(&e).await?;
                self.end().await
            }
            GeminiReply::Stall { text } => {
                for t in text {
                    self.parts(vec![json!({"text": t})], None).await?;
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
            GeminiReply::Message {
                thoughts,
                text,
                calls,
            } => {
                for t in thoughts {
                    self.parts(vec![json!({"text": t, "thought": true})], None)
                        .await?;
                }
                for (i, t) in text.into_iter().enumerate() {
                    // Marked before the write (an upper bound, as in the other fakes).
                    let sent = std::time::Instant::now();
                    self.parts(vec![json!({"text": t})], None).await?;
                    if i == 0 {
                        lock(&self.marks).push(sent);
                    }
                }
                let parts: Vec<Value> = calls
                    .into_iter()
                    .map(|(name, args, sig)| {
                        let mut p = json!({"functionCall": {"name": name, "args": args}});
                        if let Some(s) = sig {
                            p["thoughtSignature"] = json!(s);
                        }
                        p
                    })
                    .collect();
                self.parts(parts, Some("STOP")).await?;
                self.end().await
            }
        }
    }
}
