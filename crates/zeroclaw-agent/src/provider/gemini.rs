//! The `gemini` provider: `POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`
//! with the key in `x-goog-api-key` (SPEC §19).
//!
//! Request: `systemInstruction`, `contents` with roles `user` and `model` (consecutive
//! ones merged), a tool call as a `functionCall` part carrying the `thoughtSignature` it
//! came with, a tool result as a `functionResponse` part (`response: {result}`), tools as
//! `functionDeclarations`, `generationConfig.maxOutputTokens` and, when the agent's
//! `thinking_budget` is set, `thinkingConfig {thinkingBudget, includeThoughts}`.
//!
//! Stream: server-sent events, each a `GenerateContentResponse`. Parts with
//! `thought: true` → thought, other `text` parts → text, `functionCall` parts → tool calls
//! (Gemini may give no id: one is made here, unique in the provider); `usageMetadata` →
//! usage (`cachedContentTokenCount` as cache reads, thinking tokens counted as output). The
//! response is complete when the body ends after a candidate's `finishReason`. An
//! `{error: …}` event fails the turn with its message.
//!
//! A function call's `thoughtSignature` must go back with it in the next request, or the
//! API refuses it. Signatures are kept here, in memory only, by tool call id, and dropped
//! when a new turn starts (a request whose last message is the user's prompt). What one
//! response holds (text, thoughts, calls, signatures) counts against [`super::held`]'s
//! bound (SPEC §17.2), and the kept signatures are bounded by it in all.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Signatures kept at most (the oldest go first).
const MAX_KEPT: usize = 256;

/// Thought signatures of this turn's function calls, by tool call id.
#[derive(Default)]
struct Signatures {
    by_call: VecDeque<(String, String)>,
    /// Bytes of the ids and signatures kept.
    bytes: usize,
}

impl Signatures {
    /// Keeps one; the oldest go while there are more than [`MAX_KEPT`] or they hold more
    /// than [`MAX_HELD`] bytes in all (SPEC §17.2; the newest always stays).
    fn keep(&mut self, call_id: String, signature: String) {
        self.bytes += call_id.len() + signature.len();
        self.by_call.push_back((call_id, signature));
        while self.by_call.len() > MAX_KEPT || (self.bytes > MAX_HELD && self.by_call.len() > 1) {
            if let Some((id, sig)) = self.by_call.pop_front() {
                self.bytes -= id.len() + sig.len();
            }
        }
    }

    fn of(&self, call_id: &str) -> Option<&str> {
        self.by_call
            .iter()
            .rev()
            .find(|(id, _)| id == call_id)
            .map(|(_, s)| s.as_str())
    }
}

fn lock(m: &Mutex<Signatures>) -> std::sync::MutexGuard<'_, Signatures> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct GeminiProvider {
    config: NativeConfig,
    client: reqwest::Client,
    kept: Arc<Mutex<Signatures>>,
    /// Numbers the ids made for calls that came without one (unique in the session).
    calls: Arc<AtomicU64>,
}

impl GeminiProvider {
    pub fn new(config: NativeConfig) -> Result<Self, ProviderError> {
        Ok(GeminiProvider {
            client: config.client()?,
            config,
            kept: Arc::default(),
            // Started at the clock's microseconds, so ids made after a rebuild of the
            // provider do not repeat those of earlier turns of the session.
            calls: Arc::new(AtomicU64::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64),
            )),
        })
    }
}

/// The JSON body of one streaming request, borrowing the conversation's texts;
/// `signature_of` gives a call's kept signature.
pub fn request_body<'a>(
    req: &'a ProviderRequest,
    config: &'a NativeConfig,
    signature_of: impl Fn(&str) -> Option<&'a str>,
) -> Json<'a> {
    let mut contents: Vec<(&str, Vec<Json<'a>>)> = Vec::new();
    let mut push = |role: &'static str, parts: Vec<Json<'a>>| {
        if parts.is_empty() {
            return;
        }
        match contents.last_mut() {
            Some((r, p)) if *r == role => p.extend(parts),
            _ => contents.push((role, parts)),
        }
    };
    let text = |text: Json<'a>| Json::object([("text", text)]);
    for m in req.messages.iter() {
        match m {
            ChatMessage::User { content } => push("user", vec![text(content.as_str().into())]),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts = Vec::new();
                if !content.is_empty() {
                    parts.push(text(content.into()));
                }
                for c in tool_calls {
                    let args = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    let mut part = Json::object([(
                        "functionCall",
                        Json::object([("name", c.name.as_str().into()), ("args", args.into())]),
                    )]);
                    if let Some(sig) = signature_of(&c.id) {
                        part.set("thoughtSignature", sig.into());
                    }
                    parts.push(part);
                }
                push("model", parts);
            }
            ChatMessage::Tool { name, content, .. } => push(
                "user",
                vec![Json::object([(
                    "functionResponse",
                    Json::object([
                        ("name", name.as_str().into()),
                        (
                            "response",
                            Json::object([("result", content.as_str().into())]),
                        ),
                    ]),
                )])],
            ),
        }
    }
    let contents: Vec<Json<'a>> = contents
        .into_iter()
        .map(|(role, parts)| Json::object([("role", role.into()), ("parts", parts.into())]))
        .collect();
    let mut generation = json!({"maxOutputTokens": config.max_output_tokens});
    if config.thinking_budget > 0 {
        generation["thinkingConfig"] =
            json!({"thinkingBudget": config.thinking_budget, "includeThoughts": true});
    }
    let mut body = Json::object([
        ("contents", contents.into()),
        ("generationConfig", generation.into()),
    ]);
    if !req.system_prompt.is_empty() {
        body.set(
            "systemInstruction",
            Json::object([(
                "parts",
                vec![text(req.system_prompt.as_str().into())].into(),
            )]),
        );
    }
    if !req.tools.is_empty() {
        let decls = req
            .tools
            .iter()
            .map(|t| request_json::tool(t, "parameters"))
            .collect::<Vec<_>>();
        body.set(
            "tools",
            vec![Json::object([("functionDeclarations", decls.into())])].into(),
        );
    }
    body
}

#[async_trait]
impl Provider for GeminiProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        let url = format!(
            "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
            self.config.base(),
            self.config.model_for(&req.model)
        );
        // Serialized under the lock: the body borrows the kept signatures (no await
        // meanwhile).
        let body = {
            let mut kept = lock(&self.kept);
            if matches!(req.messages.last(), Some(ChatMessage::User { .. })) {
                kept.by_call.clear();
                kept.bytes = 0;
            }
            encode(&request_body(&req, &self.config, |id| kept.of(id)))?
        };
        let parser = Responses {
            kept: Arc::clone(&self.kept),
            calls: Arc::clone(&self.calls),
            ..Responses::default()
        };
        let idle = self.config.idle_timeout;
        self.config
            .call(
                self.client.post(url),
                body,
                KeyHeader::Named("x-goog-api-key"),
            )
            .events(|resp| body::events(resp, Framing::Sse, idle, parser))
            .await
    }

    fn kind(&self) -> &'static str {
        "gemini"
    }
}

/// The reading of one `streamGenerateContent` stream.
#[derive(Default)]
struct Responses {
    kept: Arc<Mutex<Signatures>>,
    calls: Arc<AtomicU64>,
    usage: Option<Usage>,
    finished: bool,
    /// What this response holds, against the bound of SPEC §17.2.
    held: Held,
}

impl Payloads for Responses {
    fn payload(&mut self, data: &str, out: &mut Out) -> bool {
        let Some(v) = body::parse(data, out) else {
            return true;
        };
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let msg = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            out.push_back(Err(ProviderError::Api(msg)));
            return true;
        }
        if let Some(c) = v.pointer("/candidates/0") {
            for part in c
                .pointer("/content/parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(call) = part.get("functionCall") {
                    let arguments = call
                        .get("args")
                        .filter(|a| !a.is_null())
                        .map_or_else(|| "{}".to_string(), Value::to_string);
                    let name = call["name"].as_str().unwrap_or_default();
                    let signature = part.get("thoughtSignature").and_then(Value::as_str);
                    let brings = arguments.len() + name.len() + signature.map_or(0, str::len);
                    if let Err(e) = self.held.add(brings) {
                        out.push_back(Err(e));
                        return true;
                    }
                    let id = match call.get("id").and_then(Value::as_str) {
                        Some(id) if !id.is_empty() => id.to_string(),
                        _ => format!("gemini_call_{}", self.calls.fetch_add(1, Ordering::Relaxed)),
                    };
                    if let Some(sig) = signature {
                        lock(&self.kept).keep(id.clone(), sig.to_string());
                    }
                    out.push_back(Ok(ProviderEvent::ToolCall(ToolCallRequest {
                        id,
                        name: name.to_string(),
                        arguments,
                    })));
                } else if let Some(t) = part["text"].as_str().filter(|t| !t.is_empty()) {
                    if let Err(e) = self.held.add(t.len()) {
                        out.push_back(Err(e));
                        return true;
                    }
                    out.push_back(Ok(if part["thought"] == json!(true) {
                        ProviderEvent::ThoughtDelta(t.to_string())
                    } else {
                        ProviderEvent::TextDelta(t.to_string())
                    }));
                }
            }
            if c.get("finishReason").is_some_and(|f| !f.is_null()) {
                self.finished = true;
            }
        }
        if let Some(u) = v.get("usageMetadata") {
            let get = |k: &str| u.get(k).and_then(Value::as_u64);
            let output =
                get("candidatesTokenCount").unwrap_or(0) + get("thoughtsTokenCount").unwrap_or(0);
            self.usage = Some(Usage {
                prompt_tokens: get("promptTokenCount"),
                completion_tokens: Some(output),
                total_tokens: get("totalTokenCount"),
                cache_read_tokens: get("cachedContentTokenCount"),
                cache_write_tokens: None,
            });
        }
        false
    }

    fn end_of_body(&mut self, out: &mut Out) -> bool {
        if !self.finished {
            return false;
        }
        if let Some(u) = self.usage {
            out.push_back(Ok(ProviderEvent::Usage(u)));
        }
        out.push_back(Ok(ProviderEvent::Done));
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::ToolSchema;
    use super::*;
    use crate::text::Text;

    #[test]
    fn signatures_go_back_with_their_calls() {
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: "sys".into(),
            messages: Arc::new(vec![
                ChatMessage::user("hi"),
                ChatMessage::Assistant {
                    content: Text::default(),
                    tool_calls: vec![ToolCallRequest {
                        id: "gemini_call_0".into(),
                        name: "bash".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    }],
                },
                ChatMessage::tool_result("gemini_call_0", "bash", "out"),
            ]),
            tools: Vec::new(),
        };
        let config = NativeConfig::new("http://h", "gemini-x");
        let b = serde_json::to_value(request_body(&req, &config, |id| {
            (id == "gemini_call_0").then_some("SIG")
        }))
        .expect("encodes");
        assert_eq!(
            b,
            json!({
                "systemInstruction": {"parts": [{"text": "sys"}]},
                "generationConfig": {"maxOutputTokens": 8192},
                "contents": [
                    {"role": "user", "parts": [{"text": "hi"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "bash",
                        "args": {"command": "ls"}}, "thoughtSignature": "SIG"}]},
                    {"role": "user", "parts": [{"functionResponse": {"name": "bash",
                        "response": {"result": "out"}}}]},
                ],
            })
        );
    }

    #[test]
    fn tools_are_declared_as_function_declarations() {
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: String::new(),
            messages: Arc::new(vec![ChatMessage::user("hi")]),
            tools: vec![ToolSchema {
                name: "bash".into(),
                description: "Runs a command.".into(),
                parameters: json!({"type": "object", "required": ["command"]}),
            }],
        };
        let config = NativeConfig::new("http://h", "gemini-x");
        let b = serde_json::to_value(request_body(&req, &config, |_| None)).expect("encodes");
        assert_eq!(
            b["tools"],
            json!([{"functionDeclarations": [{"name": "bash", "description": "Runs a command.",
                "parameters": {"type": "object", "required": ["command"]}}]}])
        );
    }

    fn read(events: &[Value]) -> Vec<Result<ProviderEvent, ProviderError>> {
        body::read_all(Responses::default(), events)
    }

    #[test]
    fn thoughts_text_calls_and_signatures_count_against_one_bound() {
        const MIB: usize = 1024 * 1024;
        let part = |p: Value| json!({"candidates": [{"content": {"parts": [p]}}]});
        let mut events = Vec::new();
        for _ in 0..4 {
            events.push(part(json!({"text": "t".repeat(4 * MIB), "thought": true})));
            events.push(part(json!({"text": "x".repeat(4 * MIB)})));
            events.push(part(json!({"functionCall": {"name": "bash",
                "args": {"command": "c".repeat(MIB)}}, "thoughtSignature": "s".repeat(MIB)})));
        }
        let out = read(&events);
        // 10 MiB a round: the fourth round's thought crosses the bound.
        assert_eq!(out.last(), Some(&Err(crate::provider::held::too_much())));
        assert_eq!(out.len(), 10, "three rounds of three, the error");
    }

    #[test]
    fn kept_signatures_are_bounded_in_all() {
        let mut kept = Signatures::default();
        for i in 0..4 {
            kept.keep(format!("c{i}"), "s".repeat(MAX_HELD / 3));
        }
        assert!(kept.bytes <= MAX_HELD);
        assert_eq!(kept.by_call.len(), 2);
        assert!(kept.of("c3").is_some() && kept.of("c1").is_none());
    }
}
