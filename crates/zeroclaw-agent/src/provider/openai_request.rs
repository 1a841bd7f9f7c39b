//! The body of one OpenAI streaming request (`POST /chat/completions`), as types that
//! borrow from the [`ProviderRequest`]: serialized straight into the bytes sent, so a long
//! conversation is held once more while it is sent (the bytes), not twice (a JSON tree of
//! copied strings, then its bytes).
//!
//! Shape: the system prompt first (omitted when empty), then each message: `user`,
//! `assistant` (`content` null when it only calls tools, `tool_calls` as `function`
//! calls), `tool` (`tool_call_id`, `content`); `stream: true` with the usage chunk asked
//! for (SPEC §16); `tools` as `function` schemas when the agent has any.

use serde::Serialize;
use serde_json::Value;

use super::ProviderRequest;
use crate::message::ChatMessage;
use crate::text::Text;

#[derive(Serialize)]
pub struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    /// Always written; null for an assistant message that only calls tools.
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's text: borrowed from the request, an answer possibly from its spill file.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Str(&'a str),
    Text(&'a Text),
}

impl<'a> Message<'a> {
    fn text(role: &'static str, content: Content<'a>) -> Self {
        Message {
            role,
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The body of `req`; `default_model` when the request names none.
pub fn request_body<'a>(req: &'a ProviderRequest, default_model: &'a str) -> RequestBody<'a> {
    let model = if req.model.is_empty() {
        default_model
    } else {
        &req.model
    };
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system_prompt.is_empty() {
        messages.push(Message::text("system", Content::Str(&req.system_prompt)));
    }
    messages.extend(req.messages.iter().map(|m| {
        match m {
            ChatMessage::User { content } => Message::text("user", Content::Str(content)),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => Message {
                role: "assistant",
                content: (!content.is_empty()).then_some(Content::Text(content)),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| Call {
                        id: &c.id,
                        kind: "function",
                        function: CallFunction {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect(),
                tool_call_id: None,
            },
            ChatMessage::Assistant { content, .. } => {
                Message::text("assistant", Content::Text(content))
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => Message {
                tool_call_id: Some(tool_call_id),
                ..Message::text("tool", Content::Str(content))
            },
        }
    }));
    RequestBody {
        model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: req
            .tools
            .iter()
            .map(|t| Tool {
                kind: "function",
                function: ToolFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::message::ToolCallRequest;
    use crate::provider::ToolSchema;

    #[test]
    fn body_shape() {
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: "be nice".into(),
            messages: Arc::new(vec![
                ChatMessage::user("hi"),
                ChatMessage::Assistant {
                    content: Text::default(),
                    tool_calls: vec![ToolCallRequest {
                        id: "c1".into(),
                        name: "bash".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    }],
                },
                ChatMessage::tool_result("c1", "bash", "out"),
            ]),
            tools: vec![ToolSchema {
                name: "bash".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let b = serde_json::to_value(request_body(&req, "dflt")).expect("encodes");
        assert_eq!(
            b,
            json!({
                "model": "dflt", "stream": true, "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "be nice"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "out"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "bash", "description": "d", "parameters": {"type": "object"}}}],
            })
        );
    }

    #[test]
    fn texts_are_written_escaped_and_read_back_whole() {
        let text = "quote \" backslash \\ newline \n tab \t nul \u{0} é 🦀 ".repeat(10_000);
        let req = ProviderRequest {
            model: "m".into(),
            system_prompt: String::new(),
            messages: Arc::new(vec![
                ChatMessage::user(text.clone()),
                ChatMessage::assistant(text.clone()),
            ]),
            tools: Vec::new(),
        };
        let bytes = serde_json::to_vec(&request_body(&req, "dflt")).expect("encodes");
        let back: Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(back["model"], "m");
        assert_eq!(
            back["messages"][0],
            json!({"role": "user", "content": text})
        );
        assert_eq!(
            back["messages"][1],
            json!({"role": "assistant", "content": text})
        );
        assert!(back.get("tools").is_none(), "no tools member without tools");
    }
}
