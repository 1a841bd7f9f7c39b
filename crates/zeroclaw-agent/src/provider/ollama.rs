//! The `ollama` provider: Ollama's own `POST {base_url}/api/chat` with `stream: true`
//! (SPEC §19), so that the agent's context size is honoured (`options.num_ctx` =
//! `max_context_tokens`; the OpenAI-compatible endpoint ignores it and cuts long sessions
//! to the server's default).
//!
//! Request: a `system` message, user and assistant messages, assistant `tool_calls` with
//! their arguments as objects, tool results as `role: "tool"` messages naming the tool
//! (`tool_name`); `options.num_predict` = `max_output_tokens`; `think: true` when the
//! agent's `thinking_budget` is set.
//!
//! Stream: one JSON object per line. `message.content` → text, `message.thinking` →
//! thought, `message.tool_calls` → tool calls (Ollama sends each whole, without an id: the
//! turn gives it one), the last line has `done: true` with `prompt_eval_count` and
//! `eval_count` (usage). A line `{"error": "…"}` (or `{"error": {"message": "…"}}`, as a
//! gateway before Ollama may send) fails the turn with that message. Text, thinking and
//! tool calls of one response count against [`super::held`]'s bound (SPEC §17.2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::body::{self, Framing, Out, Payloads};
use super::call::KeyHeader;
use super::held::Held;
use super::request_json::{self, Json, encode};
use super::settings::NativeConfig;
use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream, Usage};
use crate::message::{ChatMessage, ToolCallRequest};

pub struct OllamaProvider {
    config: NativeConfig,
    client: reqwest::Client,
}

impl OllamaProvider {
    pub fn new(config: NativeConfig) -> Result<Self, ProviderError> {
        Ok(OllamaProvider {
            client: config.client()?,
            config,
        })
    }
}

/// The JSON body of one streaming request, borrowing the conversation's texts.
pub fn request_body<'a>(req: &'a ProviderRequest, config: &'a NativeConfig) -> Json<'a> {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system_prompt.is_empty() {
        messages.push(Json::object([
            ("role", "system".into()),
            ("content", req.system_prompt.as_str().into()),
        ]));
    }
    for m in req.messages.iter() {
        messages.push(match m {
            ChatMessage::User { content } => Json::object([
                ("role", "user".into()),
                ("content", content.as_str().into()),
            ]),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut msg =
                    Json::object([("role", "assistant".into()), ("content", content.into())]);
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| {
                            let args = serde_json::from_str::<Value>(&c.arguments)
                                .ok()
                                .filter(Value::is_object)
                                .unwrap_or_else(|| json!({}));
                            Json::object([(
                                "function",
                                Json::object([
                                    ("name", c.name.as_str().into()),
                                    ("arguments", args.into()),
                                ]),
                            )])
                        })
                        .collect::<Vec<_>>();
                    msg.set("tool_calls", calls.into());
                }
                msg
            }
            ChatMessage::Tool { name, content, .. } => Json::object([
                ("role", "tool".into()),
                ("content", content.as_str().into()),
                ("tool_name", name.as_str().into()),
            ]),
        });
    }
    let mut body = Json::object([
        ("model", config.model_for(&req.model).into()),
        ("messages", messages.into()),
        ("stream", json!(true).into()),
        (
            "options",
            json!({"num_ctx": config.context_tokens, "num_predict": config.max_output_tokens})
                .into(),
        ),
    ]);
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| {
                Json::object([
                    ("type", "function".into()),
                    ("function", request_json::tool(t, "parameters")),
                ])
            })
            .collect::<Vec<_>>();
        body.set("tools", tools.into());
    }
    if config.thinking_budget > 0 {
        body.set("think", json!(true).into());
    }
    body
}

#[async_trait]
impl Provider for OllamaProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        let body = encode(&request_body(&req, &self.config))?;
        let idle = self.config.idle_timeout;
        self.config
            .call(
                self.client.post(format!("{}/api/chat", self.config.base())),
                body,
                KeyHeader::Bearer,
            )
            .events(|resp| body::events(resp, Framing::Ndjson, idle, Lines::default()))
            .await
    }

    fn kind(&self) -> &'static str {
        "ollama"
    }
}

/// The reading of one `/api/chat` stream.
#[derive(Default)]
struct Lines {
    /// What this response holds, against the bound of SPEC §17.2.
    held: Held,
}

impl Payloads for Lines {
    fn payload(&mut self, data: &str, out: &mut Out) -> bool {
        let Some(v) = body::parse(data, out) else {
            return true;
        };
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            // A string as Ollama sends it; an OpenAI-style object from a gateway before it.
            let msg = err
                .as_str()
                .or_else(|| err.get("message").and_then(Value::as_str))
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            out.push_back(Err(ProviderError::Api(msg)));
            return true;
        }
        let msg = &v["message"];
        if let Some(t) = msg["thinking"].as_str().filter(|t| !t.is_empty()) {
            if let Err(e) = self.held.add(t.len()) {
                out.push_back(Err(e));
                return true;
            }
            out.push_back(Ok(ProviderEvent::ThoughtDelta(t.to_string())));
        }
        if let Some(t) = msg["content"].as_str().filter(|t| !t.is_empty()) {
            if let Err(e) = self.held.add(t.len()) {
                out.push_back(Err(e));
                return true;
            }
            out.push_back(Ok(ProviderEvent::TextDelta(t.to_string())));
        }
        for call in msg["tool_calls"].as_array().into_iter().flatten() {
            let f = &call["function"];
            let arguments = match &f["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            let id = call["id"].as_str().unwrap_or_default().to_string();
            let name = f["name"].as_str().unwrap_or_default().to_string();
            if let Err(e) = self.held.add(arguments.len() + id.len() + name.len()) {
                out.push_back(Err(e));
                return true;
            }
            out.push_back(Ok(ProviderEvent::ToolCall(ToolCallRequest {
                id,
                name,
                arguments,
            })));
        }
        if v["done"] == json!(true) {
            let input = v["prompt_eval_count"].as_u64();
            let output = v["eval_count"].as_u64();
            out.push_back(Ok(ProviderEvent::Usage(Usage {
                prompt_tokens: input,
                completion_tokens: output,
                total_tokens: input.zip(output).map(|(a, b)| a + b),
                ..Usage::default()
            })));
            out.push_back(Ok(ProviderEvent::Done));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::ToolSchema;
    use super::*;

    #[test]
    fn lines_become_events() {
        let mut p = Lines::default();
        let mut out = Out::new();
        let lines = [
            json!({"message": {"role": "assistant", "content": "", "thinking": "hm"}, "done": false}),
            json!({"message": {"role": "assistant", "content": "Hi"}, "done": false}),
            json!({"message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "bash", "arguments": {"command": "ls"}}}]}, "done": false}),
            json!({"message": {"role": "assistant", "content": ""}, "done": true,
                   "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 9}),
        ];
        let mut done = false;
        for l in &lines {
            done = p.payload(&l.to_string(), &mut out);
        }
        assert!(done);
        assert_eq!(
            Vec::from(out),
            vec![
                Ok(ProviderEvent::ThoughtDelta("hm".into())),
                Ok(ProviderEvent::TextDelta("Hi".into())),
                Ok(ProviderEvent::ToolCall(ToolCallRequest {
                    id: String::new(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                })),
                Ok(ProviderEvent::Usage(Usage {
                    prompt_tokens: Some(26),
                    completion_tokens: Some(9),
                    total_tokens: Some(35),
                    ..Usage::default()
                })),
                Ok(ProviderEvent::Done),
            ]
        );
        let mut out = Out::new();
        assert!(Lines::default().payload(r#"{"error":"model 'x' not found"}"#, &mut out));
        assert_eq!(
            Vec::from(out),
            vec![Err(ProviderError::Api("model 'x' not found".into()))]
        );
        let mut out = Out::new();
        let gateway = r#"{"error":{"message":"quota exceeded","type":"quota"}}"#;
        assert!(Lines::default().payload(gateway, &mut out));
        assert_eq!(
            Vec::from(out),
            vec![Err(ProviderError::Api("quota exceeded".into()))]
        );
    }

    #[test]
    fn tools_are_declared_as_functions() {
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
        let config = NativeConfig::new("http://h", "llama-x");
        let b = serde_json::to_value(request_body(&req, &config)).expect("encodes");
        assert_eq!(
            b["tools"],
            json!([{"type": "function", "function": {"name": "bash",
                "description": "Runs a command.",
                "parameters": {"type": "object", "required": ["command"]}}}])
        );
    }

    #[test]
    fn thinking_text_and_calls_count_against_one_bound() {
        const MIB: usize = 1024 * 1024;
        let mut p = Lines::default();
        let mut out = Out::new();
        let line = |m: Value| json!({"message": m, "done": false}).to_string();
        let mut ended = false;
        for _ in 0..3 {
            for m in [
                json!({"role": "assistant", "content": "", "thinking": "t".repeat(5 * MIB)}),
                json!({"role": "assistant", "content": "x".repeat(5 * MIB)}),
                json!({"role": "assistant", "content": "", "tool_calls": [{"function":
                    {"name": "bash", "arguments": {"command": "c".repeat(2 * MIB)}}}]}),
            ] {
                if p.payload(&line(m), &mut out) {
                    ended = true;
                    break;
                }
            }
            if ended {
                break;
            }
        }
        assert!(ended);
        assert_eq!(out.back(), Some(&Err(crate::provider::held::too_much())));
        // 12 MiB a round: the third round's text crosses the bound.
        assert_eq!(out.len(), 8, "two rounds of three, one thought, the error");
    }
}
