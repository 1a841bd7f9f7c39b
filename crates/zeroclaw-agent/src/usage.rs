//! Token usage of provider calls (SPEC §16): the provider's own numbers when it reports
//! them, otherwise an estimate (about four bytes per token) of what was sent and received.
//!
//! [`CallUsage`] is one provider call; [`TurnUsage`] is the sum over a turn's calls.

use serde::{Deserialize, Serialize};

use crate::message::ToolCallRequest;
use crate::provider::{ProviderRequest, Usage};

/// Bytes per token of the estimate.
const BYTES_PER_TOKEN: usize = 4;

/// The tokens of one provider call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the numbers are the daemon's estimate, not the provider's.
    pub estimated: bool,
    /// Input tokens read from the provider's prompt cache, when it reported them
    /// (SPEC §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache, when it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// The tokens of a whole turn (every provider call of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl TurnUsage {
    pub fn add(&mut self, call: CallUsage) {
        self.input_tokens += call.input_tokens;
        self.output_tokens += call.output_tokens;
    }
}

fn tokens_of(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

/// The estimated input of a request: system prompt, messages and tool schemas as sent.
pub fn estimate_input(req: &ProviderRequest) -> u64 {
    let messages = serde_json::to_string(&req.messages).map_or(0, |s| s.len());
    let tools = serde_json::to_string(&req.tools).map_or(0, |s| s.len());
    tokens_of(req.system_prompt.len() + messages + tools)
}

/// The estimated output of a response: its text and tool calls.
pub fn estimate_output(text: &str, calls: &[ToolCallRequest]) -> u64 {
    let calls: usize = calls.iter().map(|c| c.name.len() + c.arguments.len()).sum();
    tokens_of(text.len() + calls)
}

/// The usage of one call: the provider's report when it has both numbers, else estimated.
pub fn of_call(
    reported: Option<Usage>,
    req: &ProviderRequest,
    text: &str,
    calls: &[ToolCallRequest],
) -> CallUsage {
    match reported {
        Some(Usage {
            prompt_tokens: Some(input),
            completion_tokens: Some(output),
            cache_read_tokens,
            cache_write_tokens,
            ..
        }) => CallUsage {
            input_tokens: input,
            output_tokens: output,
            estimated: false,
            cache_read_tokens,
            cache_write_tokens,
        },
        _ => CallUsage {
            input_tokens: estimate_input(req),
            output_tokens: estimate_output(text, calls),
            estimated: true,
            cache_read_tokens: None,
            cache_write_tokens: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ChatMessage;

    fn req() -> ProviderRequest {
        ProviderRequest {
            model: String::new(),
            system_prompt: "abcd".into(),
            messages: vec![ChatMessage::user("hello world")],
            tools: Vec::new(),
        }
    }

    #[test]
    fn reported_numbers_win() {
        let u = of_call(
            Some(Usage {
                prompt_tokens: Some(7),
                completion_tokens: Some(3),
                total_tokens: Some(10),
                ..Usage::default()
            }),
            &req(),
            "x",
            &[],
        );
        assert_eq!(
            u,
            CallUsage {
                input_tokens: 7,
                output_tokens: 3,
                estimated: false,
                ..CallUsage::default()
            }
        );
    }

    #[test]
    fn estimate_when_missing() {
        let u = of_call(None, &req(), "12345678", &[]);
        assert!(u.estimated);
        assert_eq!(u.output_tokens, 2);
        assert!(u.input_tokens >= 4, "{u:?}");
        let partial = Usage {
            prompt_tokens: Some(1),
            completion_tokens: None,
            total_tokens: None,
            ..Usage::default()
        };
        assert!(of_call(Some(partial), &req(), "", &[]).estimated);
        let mut t = TurnUsage::default();
        t.add(u);
        t.add(u);
        assert_eq!(t.output_tokens, 4);
    }
}
