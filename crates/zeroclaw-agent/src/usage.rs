//! Token usage of provider calls (SPEC §16): the provider's own numbers when it reports
//! them, otherwise an estimate (about four bytes per token) of what was sent and received.
//!
//! [`CallUsage`] is one provider call; [`TurnUsage`] is the sum over a turn's calls.

use serde::{Deserialize, Serialize};

use crate::message::{ChatMessage, ToolCallRequest};
use crate::provider::{ProviderRequest, ToolSchema, Usage};

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
    estimate_input_of(&req.system_prompt, &req.messages, &req.tools)
}

/// [`estimate_input`] from the parts of a request (the request itself may have been
/// handed to the provider). The JSON is counted, never built: a context holding a large
/// prompt is not serialized into a second copy just to be measured.
pub fn estimate_input_of(
    system_prompt: &str,
    messages: &[ChatMessage],
    tools: &[ToolSchema],
) -> u64 {
    tokens_of(system_prompt.len() + json_len(messages) + json_len(tools))
}

/// Bytes of the compact JSON of `value` (0 if it cannot be encoded).
fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |_| count.0)
}

/// The estimated output of a response: its text and tool calls.
pub fn estimate_output(text_len: usize, calls: &[ToolCallRequest]) -> u64 {
    let calls: usize = calls.iter().map(|c| c.name.len() + c.arguments.len()).sum();
    tokens_of(text_len + calls)
}

/// The usage of one call: the provider's report when it has both numbers, else estimated.
pub fn of_call(
    reported: Option<Usage>,
    input: impl FnOnce() -> u64,
    text_len: usize,
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
            input_tokens: input(),
            output_tokens: estimate_output(text_len, calls),
            estimated: true,
            cache_read_tokens: None,
            cache_write_tokens: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn req() -> ProviderRequest {
        ProviderRequest {
            model: String::new(),
            system_prompt: "abcd".into(),
            messages: Arc::new(vec![ChatMessage::user("hello world")]),
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
            || estimate_input(&req()),
            1,
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
        let u = of_call(None, || estimate_input(&req()), 8, &[]);
        assert!(u.estimated);
        assert_eq!(u.output_tokens, 2);
        assert!(u.input_tokens >= 4, "{u:?}");
        let partial = Usage {
            prompt_tokens: Some(1),
            completion_tokens: None,
            total_tokens: None,
            ..Usage::default()
        };
        assert!(of_call(Some(partial), || estimate_input(&req()), 0, &[]).estimated);
        let mut t = TurnUsage::default();
        t.add(u);
        t.add(u);
        assert_eq!(t.output_tokens, 4);
    }
}
