//! The `anthropic` provider: the Messages API, `POST {base_url}/v1/messages` with
//! `stream: true` (SPEC §19).
//!
//! Request: the system prompt as one text block and the last block of the last message
//! both marked `cache_control: {type: "ephemeral"}` (prompt caching: each call of a long
//! session reads what the previous one wrote); user text, `tool_use` blocks in assistant
//! messages, tool results as `tool_result` blocks of a user message (consecutive messages
//! of one role are merged, as the API wants); `max_tokens` = the agent's
//! `max_output_tokens`; `thinking: {type: "enabled", budget_tokens}` when its
//! `thinking_budget` is set.
//!
//! Stream (server-sent events): `message_start` (input usage), `content_block_start` /
//! `content_block_delta` (`text_delta` → text, `thinking_delta` → thought,
//! `signature_delta`, `input_json_delta` → tool arguments) / `content_block_stop`,
//! `message_delta` (output usage), `message_stop` (done), `ping` (nothing), `error` (the
//! turn fails with its message). Unknown event types are skipped, as the API asks.
//!
//! Thinking blocks, with their signatures, must be sent back with the tool calls they
//! preceded for the rest of the turn's tool loop. They are kept here, in memory only,
//! keyed by the id of the first tool call of their response ([`KeptThinking`]), and
//! dropped when a new turn starts (a request whose last message is the user's prompt):
//! they never reach the context, a snapshot or the transcript. What one response holds
//! (text, thinking, signatures, tool-call JSON) counts against one bound
//! ([`super::held`], SPEC §17.2), and so do the kept blocks, all responses together: the
//! oldest go first.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::body::{self, Framing, Out, Payloads};
use super::call::KeyHeader;
use super::held::{Held, MAX_HELD};
use super::request_json::{self, Json, encode};
use super::settings::NativeConfig;
use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream, Usage};
use crate::message::{ChatMessage, ToolCallRequest};

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// Responses whose thinking is kept at most (a turn's tool rounds; the oldest go first).
const MAX_KEPT: usize = 64;

/// Thinking blocks of this turn's responses, by the id of the first tool call each
/// response made.
#[derive(Default)]
struct KeptThinking {
    /// `(call id, blocks, their bytes)`, oldest first.
    blocks: VecDeque<(String, Vec<Value>, usize)>,
    /// The bytes of all of them.
    bytes: usize,
}

impl KeptThinking {
    /// Keeps one response's blocks, which hold `bytes`; the oldest go while there are more
    /// than [`MAX_KEPT`] responses or [`MAX_HELD`] bytes (the newest always stays: it is
    /// what the next request must send back).
    fn keep(&mut self, call_id: String, blocks: Vec<Value>, bytes: usize) {
        self.blocks.push_back((call_id, blocks, bytes));
        self.bytes += bytes;
        while self.blocks.len() > MAX_KEPT || (self.bytes > MAX_HELD && self.blocks.len() > 1) {
            if let Some((_, _, gone)) = self.blocks.pop_front() {
                self.bytes -= gone;
            }
        }
    }

    fn clear(&mut self) {
        self.blocks.clear();
        self.bytes = 0;
    }

    fn of(&self, call_id: &str) -> Option<&[Value]> {
        self.blocks
            .iter()
            .rev()
            .find(|(id, _, _)| id == call_id)
            .map(|(_, b, _)| b.as_slice())
    }
}

pub struct AnthropicProvider {
    config: NativeConfig,
    client: reqwest::Client,
    kept: Arc<Mutex<KeptThinking>>,
}

impl AnthropicProvider {
    pub fn new(config: NativeConfig) -> Result<Self, ProviderError> {
        Ok(AnthropicProvider {
            client: config.client()?,
            config,
            kept: Arc::default(),
        })
    }

    pub fn config(&self) -> &NativeConfig {
        &self.config
    }
}

fn lock(m: &Mutex<KeptThinking>) -> std::sync::MutexGuard<'_, KeptThinking> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The tool call's arguments as the object the API wants (`{}` when they are not one).
fn input_of(call: &ToolCallRequest) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// The JSON body of one streaming request, borrowing the conversation's texts.
/// `thinking_of` gives the kept thinking blocks of a response by the id of its first tool
/// call.
pub fn request_body<'a>(
    req: &'a ProviderRequest,
    config: &'a NativeConfig,
    thinking_of: impl Fn(&str) -> Option<&'a [Value]>,
) -> Json<'a> {
    // (role, blocks), consecutive roles merged.
    let mut turns: Vec<(&str, Vec<Json<'a>>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Json<'a>>| {
        if blocks.is_empty() {
            return;
        }
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    };
    let text = |text: Json<'a>| Json::object([("type", "text".into()), ("text", text)]);
    for m in req.messages.iter() {
        match m {
            ChatMessage::User { content } => push("user", vec![text(content.as_str().into())]),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(first) = tool_calls.first()
                    && let Some(kept) = thinking_of(&first.id)
                {
                    blocks.extend(kept.iter().map(Json::Borrowed));
                }
                if !content.is_empty() {
                    blocks.push(text(content.into()));
                }
                for c in tool_calls {
                    blocks.push(Json::object([
                        ("type", "tool_use".into()),
                        ("id", c.id.as_str().into()),
                        ("name", c.name.as_str().into()),
                        ("input", input_of(c).into()),
                    ]));
                }
                push("assistant", blocks);
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => push(
                "user",
                vec![Json::object([
                    ("type", "tool_result".into()),
                    ("tool_use_id", tool_call_id.as_str().into()),
                    ("content", content.as_str().into()),
                ])],
            ),
        }
    }
    // Prompt caching: the last block of the last message (a thinking block cannot carry it).
    if let Some((_, blocks)) = turns.last_mut()
        && let Some(last) = blocks.last_mut()
        && !matches!(last.str_at("type"), Some("thinking" | "redacted_thinking"))
    {
        last.set("cache_control", json!({"type": "ephemeral"}).into());
    }
    let messages: Vec<Json<'a>> = turns
        .into_iter()
        .map(|(role, content)| Json::object([("role", role.into()), ("content", content.into())]))
        .collect();
    let mut body = Json::object([
        ("model", config.model_for(&req.model).into()),
        ("max_tokens", json!(config.max_output_tokens).into()),
        ("stream", json!(true).into()),
        ("messages", messages.into()),
    ]);
    if !req.system_prompt.is_empty() {
        body.set(
            "system",
            vec![Json::object([
                ("type", "text".into()),
                ("text", req.system_prompt.as_str().into()),
                ("cache_control", json!({"type": "ephemeral"}).into()),
            ])]
            .into(),
        );
    }
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| request_json::tool(t, "input_schema"))
            .collect::<Vec<_>>();
        body.set("tools", tools.into());
    }
    if config.thinking_budget > 0 {
        body.set(
            "thinking",
            json!({"type": "enabled", "budget_tokens": config.thinking_budget}).into(),
        );
    }
    body
}

#[async_trait]
impl Provider for AnthropicProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        let builder = self
            .client
            .post(format!("{}/v1/messages", self.config.base()))
            .header("anthropic-version", API_VERSION)
            .header("accept", "text/event-stream");
        // Serialized under the lock: the body borrows the kept blocks (no await meanwhile).
        let body = {
            let mut kept = lock(&self.kept);
            // A request ending with the user's prompt starts a turn: the last turn's
            // thinking is not needed any more.
            if matches!(req.messages.last(), Some(ChatMessage::User { .. })) {
                kept.clear();
            }
            encode(&request_body(&req, &self.config, |id| kept.of(id)))?
        };
        let parser = Messages {
            kept: Arc::clone(&self.kept),
            ..Messages::default()
        };
        let idle = self.config.idle_timeout;
        self.config
            .call(builder, body, KeyHeader::Named("x-api-key"))
            .events(|resp| body::events(resp, Framing::Sse, idle, parser))
            .await
    }

    fn kind(&self) -> &'static str {
        "anthropic"
    }
}

/// A content block being received.
enum Block {
    Text,
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(Value),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// The reading of one Messages stream.
#[derive(Default)]
struct Messages {
    kept: Arc<Mutex<KeptThinking>>,
    blocks: BTreeMap<u64, Block>,
    /// Thinking blocks of this response, as they go back to the API.
    thinking: Vec<Value>,
    first_call: Option<String>,
    /// What this response holds, against the bound of SPEC §17.2.
    held: Held,
    /// Of it, the bytes of `thinking` (what the kept blocks cost).
    thinking_bytes: usize,
    usage: Usage,
    input: u64,
}

impl Messages {
    fn fail(&mut self, out: &mut Out, e: ProviderError) -> bool {
        out.push_back(Err(e));
        true
    }

    /// Starts a block; false (and the error pushed) when what it brings is past the bound.
    fn start_block(&mut self, index: u64, block: &Value, out: &mut Out) -> bool {
        let str_len = |k: &str| block[k].as_str().map_or(0, str::len);
        let brings = match block["type"].as_str() {
            Some("thinking") => str_len("thinking") + str_len("signature"),
            Some("redacted_thinking") => str_len("data"),
            Some("tool_use") => str_len("id") + str_len("name"),
            _ => 0,
        } + std::mem::size_of::<Block>(); // an open block costs its slot
        if let Err(e) = self.held.add(brings) {
            return self.fail(out, e);
        }
        if matches!(
            block["type"].as_str(),
            Some("thinking" | "redacted_thinking")
        ) {
            self.thinking_bytes += brings;
        }
        let b = match block["type"].as_str() {
            Some("text") => Block::Text,
            Some("thinking") => Block::Thinking {
                thinking: block["thinking"].as_str().unwrap_or_default().to_string(),
                signature: block["signature"].as_str().unwrap_or_default().to_string(),
            },
            Some("redacted_thinking") => Block::Redacted(block.clone()),
            Some("tool_use") => Block::ToolUse {
                id: block["id"].as_str().unwrap_or_default().to_string(),
                name: block["name"].as_str().unwrap_or_default().to_string(),
                json: String::new(),
            },
            _ => Block::Other,
        };
        self.blocks.insert(index, b);
        false
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut Out) -> bool {
        let Some(block) = self.blocks.get_mut(&index) else {
            return false;
        };
        match (delta["type"].as_str(), block) {
            (Some("text_delta"), _) => {
                if let Some(t) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                    if let Err(e) = self.held.add(t.len()) {
                        return self.fail(out, e);
                    }
                    out.push_back(Ok(ProviderEvent::TextDelta(t.to_string())));
                }
            }
            (Some("thinking_delta"), Block::Thinking { thinking, .. }) => {
                if let Some(t) = delta["thinking"].as_str().filter(|t| !t.is_empty()) {
                    if let Err(e) = self.held.add(t.len()) {
                        return self.fail(out, e);
                    }
                    self.thinking_bytes += t.len();
                    thinking.push_str(t);
                    out.push_back(Ok(ProviderEvent::ThoughtDelta(t.to_string())));
                }
            }
            (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                let part = delta["signature"].as_str().unwrap_or_default();
                if let Err(e) = self.held.add(part.len()) {
                    return self.fail(out, e);
                }
                self.thinking_bytes += part.len();
                signature.push_str(part);
            }
            (Some("input_json_delta"), Block::ToolUse { json, .. }) => {
                let part = delta["partial_json"].as_str().unwrap_or_default();
                if let Err(e) = self.held.add(part.len()) {
                    return self.fail(out, e);
                }
                json.push_str(part);
            }
            _ => {}
        }
        false
    }

    fn stop_block(&mut self, index: u64, out: &mut Out) {
        match self.blocks.remove(&index) {
            Some(Block::Thinking {
                thinking,
                signature,
            }) => self
                .thinking
                .push(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
            Some(Block::Redacted(block)) => self.thinking.push(block),
            Some(Block::ToolUse { id, name, json }) => {
                if self.first_call.is_none() {
                    self.first_call = Some(id.clone());
                }
                let arguments = if json.trim().is_empty() {
                    "{}".to_string()
                } else {
                    json
                };
                out.push_back(Ok(ProviderEvent::ToolCall(ToolCallRequest {
                    id,
                    name,
                    arguments,
                })));
            }
            _ => {}
        }
    }

    fn usage_of(&mut self, u: &Value) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(n) = get("input_tokens") {
            self.input = n;
        }
        if let Some(n) = get("cache_read_input_tokens") {
            self.usage.cache_read_tokens = Some(n);
        }
        if let Some(n) = get("cache_creation_input_tokens") {
            self.usage.cache_write_tokens = Some(n);
        }
        if let Some(n) = get("output_tokens") {
            self.usage.completion_tokens = Some(n);
        }
        // What the model read: new input plus what came from and went to the cache.
        let prompt = self.input
            + self.usage.cache_read_tokens.unwrap_or(0)
            + self.usage.cache_write_tokens.unwrap_or(0);
        self.usage.prompt_tokens = Some(prompt);
        self.usage.total_tokens = Some(prompt + self.usage.completion_tokens.unwrap_or(0));
    }

    fn finish(&mut self, out: &mut Out) -> bool {
        if let Some(id) = self.first_call.take()
            && !self.thinking.is_empty()
        {
            lock(&self.kept).keep(id, std::mem::take(&mut self.thinking), self.thinking_bytes);
        }
        out.push_back(Ok(ProviderEvent::Usage(self.usage)));
        out.push_back(Ok(ProviderEvent::Done));
        true
    }
}

impl Payloads for Messages {
    fn payload(&mut self, data: &str, out: &mut Out) -> bool {
        let Some(v) = body::parse(data, out) else {
            return true;
        };
        let index = v["index"].as_u64().unwrap_or(0);
        match v["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage_of(u);
                }
                false
            }
            "content_block_start" => self.start_block(index, &v["content_block"], out),
            "content_block_delta" => self.delta(index, &v["delta"], out),
            "content_block_stop" => {
                self.stop_block(index, out);
                false
            }
            "message_delta" => {
                if let Some(u) = v.get("usage") {
                    self.usage_of(u);
                }
                false
            }
            "message_stop" => self.finish(out),
            "error" => {
                let msg = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| v["error"].to_string());
                self.fail(out, ProviderError::Api(msg))
            }
            _ => false, // `ping`, and event types added later
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::provider::ToolSchema;

    #[test]
    fn body_shape_with_caching_tools_and_kept_thinking() {
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: "be nice".into(),
            messages: Arc::new(vec![
                ChatMessage::user("hi"),
                ChatMessage::Assistant {
                    content: "let me look".into(),
                    tool_calls: vec![
                        ToolCallRequest {
                            id: "toolu_1".into(),
                            name: "bash".into(),
                            arguments: "{\"command\":\"ls\"}".into(),
                        },
                        ToolCallRequest {
                            id: "toolu_2".into(),
                            name: "read_file".into(),
                            arguments: "not json".into(),
                        },
                    ],
                },
                ChatMessage::tool_result("toolu_1", "bash", "a.txt"),
                ChatMessage::tool_result("toolu_2", "read_file", "x"),
            ]),
            tools: vec![ToolSchema {
                name: "bash".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let mut config = NativeConfig::new("http://h", "claude-x");
        config.thinking_budget = 2048;
        let thinking = [json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})];
        let b = serde_json::to_value(request_body(&req, &config, |id| {
            (id == "toolu_1").then_some(&thinking[..])
        }))
        .expect("encodes");
        assert_eq!(
            b,
            json!({
                "model": "claude-x", "max_tokens": 8192, "stream": true,
                "system": [{"type": "text", "text": "be nice",
                            "cache_control": {"type": "ephemeral"}}],
                "thinking": {"type": "enabled", "budget_tokens": 2048},
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "text", "text": "let me look"},
                        {"type": "tool_use", "id": "toolu_1", "name": "bash",
                         "input": {"command": "ls"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read_file",
                         "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x",
                         "cache_control": {"type": "ephemeral"}}]},
                ],
                "tools": [{"name": "bash", "description": "d",
                           "input_schema": {"type": "object"}}],
            })
        );
    }

    fn read(events: &[Value]) -> Vec<Result<ProviderEvent, ProviderError>> {
        body::read_all(Messages::default(), events)
    }

    #[test]
    fn a_stream_with_thinking_text_and_two_tool_calls() {
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5,
                "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50,
                "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "c2ln"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "text_delta", "text": "ok"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2,
                "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}}),
            json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "and\":\"ls\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3,
                "content_block": {"type": "tool_use", "id": "t2", "name": "read_file",
                "input": {}}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 30}}),
            json!({"type": "message_stop"}),
        ];
        let out = read(&events);
        let call = |id: &str, name: &str, args: &str| {
            Ok(ProviderEvent::ToolCall(ToolCallRequest {
                id: id.into(),
                name: name.into(),
                arguments: args.into(),
            }))
        };
        assert_eq!(
            out,
            vec![
                Ok(ProviderEvent::ThoughtDelta("hmm".into())),
                Ok(ProviderEvent::TextDelta("ok".into())),
                call("t1", "bash", "{\"command\":\"ls\"}"),
                call("t2", "read_file", "{}"),
                Ok(ProviderEvent::Usage(Usage {
                    prompt_tokens: Some(155),
                    completion_tokens: Some(30),
                    total_tokens: Some(185),
                    cache_read_tokens: Some(50),
                    cache_write_tokens: Some(100),
                })),
                Ok(ProviderEvent::Done),
            ]
        );
    }

    #[test]
    fn an_error_event_fails_with_its_message() {
        let out = read(&[
            json!({"type": "message_start", "message": {"usage": {}}}),
            json!({"type": "error", "error": {"type": "overloaded_error",
                "message": "Overloaded"}}),
        ]);
        assert_eq!(out, vec![Err(ProviderError::Api("Overloaded".into()))]);
    }

    /// A message of `blocks` thinking blocks, each `thinking` bytes of thinking and
    /// `signature` bytes of signature, then the message's end.
    fn thinking_blocks(blocks: u64, thinking: usize, signature: usize) -> Vec<Value> {
        let mut events = vec![json!({"type": "message_start", "message": {"usage": {}}})];
        for i in 0..blocks {
            events.push(json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
            events.push(json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "thinking_delta", "thinking": "t".repeat(thinking)}}));
            events.push(json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "signature_delta", "signature": "s".repeat(signature)}}));
            events.push(json!({"type": "content_block_stop", "index": i}));
        }
        events.push(json!({"type": "message_stop"}));
        events
    }

    #[test]
    fn thinking_and_signatures_of_many_blocks_count_against_one_bound() {
        const MIB: usize = 1024 * 1024;
        // 12 blocks of 1 + 2 MiB: 36 MiB, past the bound in the 11th block's signature.
        let out = read(&thinking_blocks(12, MIB, 2 * MIB));
        assert_eq!(out.last(), Some(&Err(crate::provider::held::too_much())));
        let thoughts = out
            .iter()
            .filter(|e| matches!(e, Ok(ProviderEvent::ThoughtDelta(_))))
            .count();
        assert_eq!(thoughts, 11);
        assert!(!out.contains(&Ok(ProviderEvent::Done)));
        // Under the bound the same stream completes.
        let out = read(&thinking_blocks(4, MIB, 2 * MIB));
        assert_eq!(out.last(), Some(&Ok(ProviderEvent::Done)));
    }

    #[test]
    fn text_and_tool_call_json_share_the_bound_with_thinking() {
        const MIB: usize = 1024 * 1024;
        let mut events = thinking_blocks(1, 8 * MIB, 8 * MIB);
        events.pop(); // message_stop
        events.push(json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "text", "text": ""}}));
        events.push(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": "x".repeat(8 * MIB)}}));
        events.push(json!({"type": "content_block_stop", "index": 1}));
        events.push(json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}}));
        for _ in 0..8 {
            events.push(json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": " ".repeat(MIB)}}));
        }
        events.push(json!({"type": "content_block_stop", "index": 2}));
        events.push(json!({"type": "message_stop"}));
        let out = read(&events);
        assert_eq!(out.last(), Some(&Err(crate::provider::held::too_much())));
        assert!(
            !out.iter()
                .any(|e| matches!(e, Ok(ProviderEvent::ToolCall(_)))),
            "the call that crossed the bound never came out"
        );
    }

    #[test]
    fn kept_thinking_is_bounded_in_all_and_keeps_the_newest() {
        let mut kept = KeptThinking::default();
        let block = |n: usize| vec![json!({"type": "thinking", "thinking": "t".repeat(n)})];
        for i in 0..5 {
            kept.keep(format!("call_{i}"), block(1), MAX_HELD / 3);
        }
        assert!(kept.bytes <= MAX_HELD, "{}", kept.bytes);
        assert_eq!(kept.blocks.len(), 3);
        assert!(kept.of("call_4").is_some() && kept.of("call_1").is_none());
        // One response over the bound on its own is still kept: the next request needs it.
        kept.keep("big".into(), block(1), MAX_HELD + 1);
        assert_eq!(kept.blocks.len(), 1);
        assert!(kept.of("big").is_some());
        for i in 0..(MAX_KEPT + 10) {
            kept.keep(format!("small_{i}"), block(1), 1);
        }
        assert_eq!(kept.blocks.len(), MAX_KEPT);
        kept.clear();
        assert_eq!((kept.blocks.len(), kept.bytes), (0, 0));
    }
}
