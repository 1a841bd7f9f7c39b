//! The offline `echo` provider: streams the last user prompt back (a summarization request
//! gets the deterministic summary of [`echo_summary`] instead). Deterministic, no
//! network, never calls tools. The chunks keep their whitespace, so their concatenation is
//! exactly the prompt.
//!
//! Chunks are produced lazily, one each time the consumer asks (SPEC §17 "Memory is
//! bounded by the input"): the stream owns the prompt (moved out of the request, not
//! copied) and a read position, nothing per word. The first [`WORD_CHUNKS`] chunks are one
//! word each (a word and the whitespace after it), so a short answer streams word by word;
//! after that consecutive words are joined into chunks of up to [`MAX_CHUNK`] bytes, so a
//! long prompt does not become millions of notifications. No chunk exceeds `MAX_CHUNK`
//! bytes: a longer word is cut at a character boundary.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::stream;

use super::summary::is_summary_request;
use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::ChatMessage;

/// Chunks streamed one word each before words are joined.
pub const WORD_CHUNKS: usize = 64;
/// Longest chunk, in bytes.
pub const MAX_CHUNK: usize = 4 * 1024;
/// Characters of each message an `echo` summary keeps.
pub const ECHO_LINE_CHARS: usize = 80;

#[derive(Debug, Clone, Default)]
pub struct EchoProvider {
    /// Pause between chunks (zero by default); lets tests cancel mid-stream.
    pub chunk_delay: std::time::Duration,
}

impl EchoProvider {
    pub fn new() -> Self {
        EchoProvider::default()
    }

    pub fn with_delay(chunk_delay: std::time::Duration) -> Self {
        EchoProvider { chunk_delay }
    }
}

/// Length of the first word of `s` with the whitespace after it, looking at no more than
/// [`MAX_CHUNK`] bytes (the result is then cut at a character boundary at most that long).
fn first_word_len(s: &str) -> usize {
    let mut in_space = false;
    for (i, c) in s.char_indices() {
        if i + c.len_utf8() > MAX_CHUNK {
            return i;
        }
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            return i;
        }
    }
    s.len()
}

/// The text an echo answers with.
enum EchoText {
    Own(String),
    /// The content of message `.1` of a request's messages.
    Lent(Arc<Vec<ChatMessage>>, usize),
}

impl EchoText {
    fn as_str(&self) -> &str {
        match self {
            EchoText::Own(text) => text,
            EchoText::Lent(messages, at) => match messages.get(*at) {
                Some(ChatMessage::User { content }) => content,
                _ => "",
            },
        }
    }
}

/// The prompt still to be echoed and how many chunks were produced.
struct Chunks {
    text: EchoText,
    pos: usize,
    produced: usize,
}

impl Chunks {
    fn next_chunk(&mut self) -> Option<String> {
        let rest = &self.text.as_str()[self.pos..];
        if rest.is_empty() {
            return None;
        }
        let mut len = first_word_len(rest);
        if self.produced >= WORD_CHUNKS {
            while len < rest.len() {
                let next = first_word_len(&rest[len..]);
                if len + next > MAX_CHUNK {
                    break;
                }
                len += next;
            }
        }
        self.pos += len;
        self.produced += 1;
        Some(rest[..len].to_owned())
    }
}

/// Every chunk of `text`, eagerly (for tests and small texts).
pub fn chunks_of(text: &str) -> Vec<String> {
    let mut chunks = Chunks {
        text: EchoText::Own(text.to_owned()),
        pos: 0,
        produced: 0,
    };
    std::iter::from_fn(|| chunks.next_chunk()).collect()
}

/// The `echo` provider's summary of `messages`: one line per message, `role: ` and the
/// first [`ECHO_LINE_CHARS`] characters of its text (line breaks become spaces; an
/// assistant message with only tool calls shows `[calls NAME, …]`).
pub fn echo_summary(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        let text = match m {
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if content.is_empty() && !tool_calls.is_empty() => {
                let names: Vec<&str> = tool_calls.iter().map(|c| c.name.as_str()).collect();
                format!("[calls {}]", names.join(", "))
            }
            // Only a line of it is shown: a long answer is not read whole for it.
            ChatMessage::Assistant { content, .. } => {
                content.head(ECHO_LINE_CHARS * 4).0.into_owned()
            }
            other => other.content().into_owned(),
        };
        let line: String = text
            .chars()
            .take(ECHO_LINE_CHARS)
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        out.push_str(m.role());
        out.push_str(": ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[async_trait]
impl Provider for EchoProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        // A summarization call (SPEC §18) is answered with the deterministic summary of
        // the messages before the request, streamed like a prompt.
        let summary = is_summary_request(&req)
            .then(|| echo_summary(&req.messages[..req.messages.len().saturating_sub(1)]));
        // The prompt is echoed from the request itself (the turn's lent context), not
        // copied out of it.
        let text = match summary {
            Some(summary) => EchoText::Own(summary),
            None => req
                .messages
                .iter()
                .rposition(|m| matches!(m, ChatMessage::User { .. }))
                .map_or(EchoText::Own(String::new()), |at| {
                    EchoText::Lent(Arc::clone(&req.messages), at)
                }),
        };
        drop(req);
        let delay = self.chunk_delay;
        let chunks = Chunks {
            text,
            pos: 0,
            produced: 0,
        };
        // State: the chunks (None once `Done` was sent).
        let s = stream::unfold(Some(chunks), move |state| async move {
            let mut chunks = state?;
            match chunks.next_chunk() {
                Some(text) => {
                    if chunks.produced > 1 && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok(ProviderEvent::TextDelta(text)), Some(chunks)))
                }
                None => Some((Ok(ProviderEvent::Done), None)),
            }
        });
        Ok(Box::pin(s))
    }

    fn kind(&self) -> &'static str {
        "echo"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCallRequest;
    use crate::text::Text;
    use futures_util::StreamExt;

    #[test]
    fn echo_summary_is_one_line_per_message_cut_at_80_characters() {
        let long = "é".repeat(100);
        let msgs = vec![
            ChatMessage::user("two\nlines"),
            ChatMessage::assistant(long.clone()),
            ChatMessage::Assistant {
                content: Text::default(),
                tool_calls: vec![ToolCallRequest {
                    id: "a".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            },
            ChatMessage::tool_result("a", "bash", "ok"),
        ];
        let want = format!(
            "user: two lines\nassistant: {}\nassistant: [calls bash]\ntool: ok\n",
            "é".repeat(80)
        );
        assert_eq!(echo_summary(&msgs), want);
    }

    #[tokio::test]
    async fn echoes_last_user_prompt_word_by_word() {
        let p = EchoProvider::new();
        let prompt = "Hello  there,\nworld! ";
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: "sys".into(),
            messages: Arc::new(vec![
                ChatMessage::user("old"),
                ChatMessage::assistant("old"),
                ChatMessage::user(prompt),
            ]),
            tools: vec![],
        };
        let events: Vec<_> = p.stream(req).await.unwrap().collect().await;
        let mut text = String::new();
        let mut chunks = 0;
        for e in &events[..events.len() - 1] {
            match e {
                Ok(ProviderEvent::TextDelta(t)) => {
                    text.push_str(t);
                    chunks += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(events.last(), Some(&Ok(ProviderEvent::Done)));
        assert_eq!(text, prompt);
        assert_eq!(chunks, 3);
    }

    #[test]
    fn leading_space_and_unicode_round_trip() {
        for s in ["", " ", "  a", "a  b\n", "é è\tü", "x"] {
            assert_eq!(chunks_of(s).concat(), s, "{s:?}");
        }
        assert_eq!(chunks_of(" hi there"), vec![" ", "hi ", "there"]);
    }

    #[test]
    fn long_prompts_are_joined_into_bounded_chunks() {
        let prompt = "word ".repeat(100_000);
        let chunks = chunks_of(&prompt);
        assert_eq!(chunks.concat(), prompt);
        assert!(chunks[..WORD_CHUNKS].iter().all(|c| c == "word "));
        assert!(chunks.iter().all(|c| c.len() <= MAX_CHUNK));
        assert!(chunks.len() < WORD_CHUNKS + prompt.len() / (MAX_CHUNK / 2));
    }

    #[test]
    fn a_huge_word_is_cut_at_character_boundaries() {
        let prompt = "é".repeat(3 * MAX_CHUNK);
        let chunks = chunks_of(&prompt);
        assert_eq!(chunks.concat(), prompt);
        assert!(chunks.iter().all(|c| c.len() <= MAX_CHUNK && !c.is_empty()));
        assert_eq!(chunks.len(), 6);
    }
}
