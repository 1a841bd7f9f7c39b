//! The provider context: what the model is sent, turn after turn.
//!
//! Serde-serializable so the daemon can store snapshots of it. The system
//! prompt is never part of it (added at request time from the `AgentSpec`),
//! nor is hidden reasoning. Invariant kept by `run_turn` at the end of every
//! turn: each assistant tool call is followed by exactly one tool result with
//! its id ([`provider_safe`] restores that invariant for replayed histories).

use std::borrow::Cow;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::text::Text;

/// A tool call requested by the model, already assembled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them: a JSON document in a string.
    pub arguments: String,
}

/// One message of the provider context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        content: String,
    },
    Assistant {
        /// A long answer is spilled to a file ([`Text`]).
        #[serde(default)]
        content: Text,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
    },
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<Text>) -> Self {
        ChatMessage::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    pub fn tool_result(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        ChatMessage::Tool {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            content: content.into(),
        }
    }

    /// `"user"`, `"assistant"` or `"tool"`.
    pub fn role(&self) -> &'static str {
        match self {
            ChatMessage::User { .. } => "user",
            ChatMessage::Assistant { .. } => "assistant",
            ChatMessage::Tool { .. } => "tool",
        }
    }

    /// The text content of the message (a spilled answer read whole).
    pub fn content(&self) -> Cow<'_, str> {
        match self {
            ChatMessage::User { content } | ChatMessage::Tool { content, .. } => {
                Cow::Borrowed(content)
            }
            ChatMessage::Assistant { content, .. } => content.load(),
        }
    }

    fn char_count(&self) -> usize {
        match self {
            ChatMessage::User { content } => content.chars().count(),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                content.char_count()
                    + tool_calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.arguments.chars().count())
                        .sum::<usize>()
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
            } => tool_call_id.len() + name.len() + content.chars().count(),
        }
    }
}

/// Returns the messages with every tool call that lacks a matching tool
/// result removed, and every tool result that answers no earlier call
/// removed. An assistant message left with neither text nor tool calls is
/// dropped. Used when a context is rebuilt from a transcript, so the provider
/// never sees an unmatched call.
pub fn provider_safe(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    // A call is matched by a tool result that follows it before the next
    // user or assistant message (the shape providers accept).
    let mut matched: HashSet<(usize, String)> = HashSet::new();
    let mut open: Vec<(usize, String)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m {
            ChatMessage::Assistant { tool_calls, .. } => {
                open = tool_calls.iter().map(|c| (i, c.id.clone())).collect();
            }
            ChatMessage::User { .. } => open.clear(),
            ChatMessage::Tool { tool_call_id, .. } => {
                if let Some(pos) = open.iter().position(|(_, id)| id == tool_call_id) {
                    matched.insert(open.remove(pos));
                }
            }
        }
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut answered: HashSet<String> = HashSet::new();
    let mut allowed: HashSet<String> = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        match m {
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let kept: Vec<ToolCallRequest> = tool_calls
                    .iter()
                    .filter(|c| matched.contains(&(i, c.id.clone())))
                    .cloned()
                    .collect();
                allowed = kept.iter().map(|c| c.id.clone()).collect();
                answered.clear();
                if content.is_empty() && kept.is_empty() {
                    continue;
                }
                out.push(ChatMessage::Assistant {
                    content: content.clone(),
                    tool_calls: kept,
                });
            }
            ChatMessage::User { .. } => {
                allowed.clear();
                out.push(m.clone());
            }
            ChatMessage::Tool { tool_call_id, .. } => {
                if allowed.contains(tool_call_id) && answered.insert(tool_call_id.clone()) {
                    out.push(m.clone());
                }
            }
        }
    }
    out
}

/// A rough token estimate (characters / 4, rounded up), for trimming.
pub fn estimate_tokens(messages: &[ChatMessage]) -> usize {
    let chars: usize = messages.iter().map(|m| m.char_count() + 4).sum();
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn serde_shape() {
        let m = ChatMessage::Assistant {
            content: "hi".into(),
            tool_calls: vec![call("a")],
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"role":"assistant","content":"hi",
                "tool_calls":[{"id":"a","name":"bash","arguments":"{}"}]})
        );
        let back: ChatMessage = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
        let u: ChatMessage =
            serde_json::from_value(serde_json::json!({"role":"user","content":"x"})).unwrap();
        assert_eq!(u, ChatMessage::user("x"));
    }

    #[test]
    fn provider_safe_drops_unmatched_calls() {
        let msgs = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                content: "".into(),
                tool_calls: vec![call("a"), call("b")],
            },
            ChatMessage::tool_result("a", "bash", "ok"),
            ChatMessage::Assistant {
                content: "".into(),
                tool_calls: vec![call("c")],
            },
            ChatMessage::user("next"),
            ChatMessage::tool_result("zzz", "bash", "orphan"),
            ChatMessage::assistant("done"),
        ];
        let safe = provider_safe(&msgs);
        assert_eq!(
            safe,
            vec![
                ChatMessage::user("q"),
                ChatMessage::Assistant {
                    content: "".into(),
                    tool_calls: vec![call("a")],
                },
                ChatMessage::tool_result("a", "bash", "ok"),
                ChatMessage::user("next"),
                ChatMessage::assistant("done"),
            ]
        );
        // Idempotent.
        assert_eq!(provider_safe(&safe), safe);
    }

    #[test]
    fn provider_safe_keeps_text_of_unmatched_assistant() {
        let msgs = vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                content: "let me look".into(),
                tool_calls: vec![call("a")],
            },
        ];
        assert_eq!(
            provider_safe(&msgs),
            vec![
                ChatMessage::user("q"),
                ChatMessage::assistant("let me look")
            ]
        );
    }

    #[test]
    fn token_estimate_grows() {
        assert_eq!(estimate_tokens(&[]), 0);
        let small = estimate_tokens(&[ChatMessage::user("abcd")]);
        let big = estimate_tokens(&[ChatMessage::user("abcd".repeat(100))]);
        assert!(small >= 1 && big > 100 && big < 110);
    }
}
