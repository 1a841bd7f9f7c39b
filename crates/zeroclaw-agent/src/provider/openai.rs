//! The `openai` provider: any OpenAI-compatible `POST {base_url}/chat/completions`
//! with `stream: true`, parsed as server-sent events.
//!
//! Mapping: `choices[0].delta.content` → text, `delta.reasoning_content` /
//! `delta.reasoning` → thought, `delta.tool_calls` fragments assembled by
//! `index` (id and name first, arguments concatenated) and emitted when the
//! choice finishes (or at `[DONE]`), `usage` when reported. Errors: HTTP
//! status ≥ 400 (with the body's `error.message` when present), an `error`
//! object inside the stream, malformed event JSON, connect / first-byte /
//! idle timeouts, and a stream that ends with neither `[DONE]` nor a
//! `finish_reason` ("stream ended unexpectedly").
//!
//! Memory is bounded whatever the server sends (SPEC §17): an error body is
//! read up to [`MAX_ERROR_BODY`] bytes, one event over [`MAX_EVENT`] bytes
//! (see [`super::sse`]) and a response holding more than [`MAX_HELD`] bytes of
//! text, thinking and tool-call JSON (SPEC §17.2, [`super::held`]) fail the stream.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{Stream, StreamExt, stream};
use serde_json::Value;

use super::body_start::BodyStart;
use super::call::{Call, KeyHeader};
use super::held::Held;
use super::http;
use super::openai_chunk::Chunk;
use super::openai_request::request_body;
use super::request_json::encode;
use super::sse::SseDecoder;
use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream, Usage};
use crate::message::ToolCallRequest;

pub use super::http::MAX_ERROR_BODY;
/// Longest server-sent event, in bytes (its lines without their line ends).
pub const MAX_EVENT: usize = 8 * 1024 * 1024;
pub use super::held::MAX_HELD;

/// Connection settings of one OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// e.g. `http://127.0.0.1:11434/v1` (no trailing `/chat/completions`).
    pub base_url: String,
    /// Used as the Bearer token when non-empty.
    pub api_key: Option<String>,
    /// Name of an environment variable holding the key (read per request),
    /// used when `api_key` is empty.
    pub api_key_env: Option<String>,
    /// Model used when the request's model is empty.
    pub model: String,
    pub connect_timeout: Duration,
    /// Until the response headers arrive.
    pub first_byte_timeout: Duration,
    /// Longest silence allowed between two pieces of the body.
    pub idle_timeout: Duration,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            api_key_env: None,
            model: model.into(),
            connect_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

pub struct OpenAiProvider {
    config: OpenAiConfig,
    client: reqwest::Client,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let client = http::client(config.connect_timeout)?;
        Ok(OpenAiProvider { config, client })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn api_key(&self) -> Option<String> {
        if let Some(k) = self.config.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Some(k.clone());
        }
        let var = self.config.api_key_env.as_ref().filter(|v| !v.is_empty())?;
        std::env::var(var).ok().filter(|k| !k.is_empty())
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        let body = encode(&request_body(&req, &self.config.model))?;
        let idle = self.config.idle_timeout;
        Call {
            builder: self
                .client
                .post(self.endpoint())
                .header("accept", "text/event-stream"),
            body,
            base_url: &self.config.base_url,
            api_key: self.api_key(),
            key_header: KeyHeader::Bearer,
            first_byte_timeout: self.config.first_byte_timeout,
        }
        .events(|resp| sse_to_events(Box::pin(resp.bytes_stream()), idle))
        .await
    }

    fn kind(&self) -> &'static str {
        "openai"
    }
}

type Body = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

struct SseState {
    body: Body,
    decoder: SseDecoder,
    /// Data of received events not handled yet.
    ready: VecDeque<String>,
    /// The body ended (what is in `ready` is all there is).
    eof: bool,
    idle: Duration,
    pending: VecDeque<Result<ProviderEvent, ProviderError>>,
    calls: BTreeMap<u64, PartialCall>,
    /// What this response holds, against the bound of SPEC §17.2.
    held: Held,
    saw_finish: bool,
    finished: bool,
    start: BodyStart,
}

impl SseState {
    fn flush_calls(&mut self) {
        for (index, c) in std::mem::take(&mut self.calls) {
            let id = if c.id.is_empty() {
                format!("call_{index}")
            } else {
                c.id
            };
            self.pending
                .push_back(Ok(ProviderEvent::ToolCall(ToolCallRequest {
                    id,
                    name: c.name,
                    arguments: c.arguments,
                })));
        }
    }

    fn fail(&mut self, e: ProviderError) {
        self.pending.push_back(Err(e));
        self.finished = true;
    }

    /// Handles one `data:` payload (not `[DONE]`): read as a typed [`Chunk`], the text of
    /// its delta taken from the event without an intermediate tree.
    fn on_chunk(&mut self, data: &str) {
        let chunk: Chunk = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                let shown: String = data.chars().take(200).collect();
                return self.fail(ProviderError::Stream(format!(
                    "malformed event JSON ({e}): {shown}"
                )));
            }
        };
        if let Some(err) = chunk.error.filter(|e| !e.is_null()) {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return self.fail(ProviderError::Api(msg));
        }
        if let Some(choice) = chunk.choices.0 {
            if let Some(delta) = choice.delta {
                let thought = delta
                    .reasoning_content
                    .non_empty()
                    .or_else(|| delta.reasoning.non_empty());
                if let Some(t) = thought {
                    if let Err(e) = self.held.add(t.len()) {
                        return self.fail(e);
                    }
                    self.pending
                        .push_back(Ok(ProviderEvent::ThoughtDelta(t.to_string())));
                }
                if let Some(t) = delta.content.0.filter(|t| !t.is_empty()) {
                    if let Err(e) = self.held.add(t.len()) {
                        return self.fail(e);
                    }
                    self.pending
                        .push_back(Ok(ProviderEvent::TextDelta(t.into_owned())));
                }
                if let Some(calls) = delta.tool_calls.as_ref().and_then(Value::as_array)
                    && let Err(e) = self.on_tool_calls(calls)
                {
                    return self.fail(e);
                }
            }
            if choice.finish_reason.is_some() {
                self.saw_finish = true;
                self.flush_calls();
            }
        }
        if let Some(u) = chunk.usage.filter(Value::is_object) {
            self.pending.push_back(Ok(ProviderEvent::Usage(Usage {
                prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
                completion_tokens: u.get("completion_tokens").and_then(Value::as_u64),
                total_tokens: u.get("total_tokens").and_then(Value::as_u64),
                cache_read_tokens: u
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64),
                cache_write_tokens: None,
            })));
        }
    }

    /// Adds the `tool_calls` fragments of one delta to the calls being assembled.
    fn on_tool_calls(&mut self, calls: &[Value]) -> Result<(), ProviderError> {
        for (pos, frag) in calls.iter().enumerate() {
            let index = frag
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            if !self.calls.contains_key(&index) {
                // A call being assembled costs its slot, whatever it holds yet.
                self.held.add(std::mem::size_of::<PartialCall>())?;
            }
            let entry = self.calls.entry(index).or_default();
            if let Some(id) = frag.get("id").and_then(Value::as_str)
                && !id.is_empty()
                && entry.id.is_empty()
            {
                self.held.add(id.len())?;
                entry.id = id.to_string();
            }
            if let Some(f) = frag.get("function") {
                if let Some(n) = f.get("name").and_then(Value::as_str)
                    && !n.is_empty()
                    && entry.name.is_empty()
                {
                    self.held.add(n.len())?;
                    entry.name = n.to_string();
                }
                match f.get("arguments") {
                    Some(Value::String(a)) => {
                        self.held.add(a.len())?;
                        entry.arguments.push_str(a);
                    }
                    // Some servers send the arguments as an object.
                    Some(a @ Value::Object(_)) => {
                        let a = a.to_string();
                        self.held.add(a.len())?;
                        entry.arguments.push_str(&a);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn on_end(&mut self) {
        self.flush_calls();
        self.pending.push_back(Ok(ProviderEvent::Done));
        self.finished = true;
    }
}

/// Turns a response body of server-sent events into provider events (see the module doc).
fn sse_to_events(body: Body, idle: Duration) -> ProviderStream {
    let state = SseState {
        body,
        decoder: SseDecoder::new(MAX_EVENT),
        ready: VecDeque::new(),
        eof: false,
        idle,
        pending: VecDeque::new(),
        calls: BTreeMap::new(),
        held: Held::default(),
        saw_finish: false,
        finished: false,
        start: BodyStart::default(),
    };
    Box::pin(stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            if let Some(data) = st.ready.pop_front() {
                st.start.event();
                let data = data.trim();
                if data == "[DONE]" {
                    st.on_end();
                } else if !data.is_empty() {
                    st.on_chunk(data);
                }
                continue;
            }
            if st.eof {
                if st.saw_finish {
                    st.on_end();
                } else {
                    let e = st.start.ended_early();
                    st.fail(e);
                }
                continue;
            }
            match tokio::time::timeout(st.idle, st.body.next()).await {
                Err(_) => st.fail(ProviderError::Timeout(format!(
                    "no data for {} s",
                    st.idle.as_secs_f64()
                ))),
                Ok(None) => {
                    st.decoder.finish(&mut st.ready);
                    st.eof = true;
                }
                Ok(Some(Err(e))) => st.fail(ProviderError::Stream(e.to_string())),
                Ok(Some(Ok(piece))) => {
                    st.start.piece(&piece);
                    if let Err(e) = st.decoder.feed(&piece, &mut st.ready) {
                        st.fail(ProviderError::Stream(e.to_string()));
                    }
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::held::too_much;
    use serde_json::json;

    const MIB: usize = 1024 * 1024;

    async fn read(events: Vec<String>) -> Vec<Result<ProviderEvent, ProviderError>> {
        let body: Body = Box::pin(stream::iter(
            events.into_iter().map(|e| Ok(bytes::Bytes::from(e))),
        ));
        sse_to_events(body, Duration::from_secs(5)).collect().await
    }

    fn chunk(delta: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta}]})
        )
    }

    #[tokio::test]
    async fn reasoning_text_and_tool_call_arguments_count_against_one_bound() {
        let mut events = Vec::new();
        for _ in 0..4 {
            events.push(chunk(json!({"reasoning_content": "r".repeat(4 * MIB)})));
        }
        for _ in 0..2 {
            events.push(chunk(json!({"content": "x".repeat(4 * MIB)})));
        }
        events.push(chunk(json!({"tool_calls": [{"index": 0, "id": "c1",
            "function": {"name": "bash", "arguments": ""}}]})));
        // 24 MiB so far: the second 4 MiB of arguments crosses the bound.
        for _ in 0..3 {
            events.push(chunk(json!({"tool_calls": [{"index": 0,
                "function": {"arguments": "a".repeat(4 * MIB)}}]})));
        }
        events.push("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n".into());
        let out = read(events).await;
        assert_eq!(out.last(), Some(&Err(too_much())));
        assert_eq!(out.len(), 7, "four thoughts, two texts, the error");
        assert!(
            !out.iter()
                .any(|e| matches!(e, Ok(ProviderEvent::ToolCall(_))))
        );
    }

    #[tokio::test]
    async fn tool_call_slots_count_even_when_empty() {
        // Two events opening 300,000 calls each that hold nothing yet: their slots alone
        // are past the bound.
        let open = |from: u64| {
            let frags: Vec<Value> = (from..from + 300_000)
                .map(|i| json!({"index": i}))
                .collect();
            chunk(json!({"tool_calls": frags}))
        };
        let out = read(vec![open(0), open(300_000)]).await;
        assert_eq!(out, vec![Err(too_much())]);
    }
}
