//! The offline `echo` provider: streams the last user prompt back, word by
//! word. Deterministic, no network, never calls tools. The chunks keep their
//! whitespace, so their concatenation is exactly the prompt.

use async_trait::async_trait;
use futures_util::stream;

use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream};
use crate::message::ChatMessage;

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

/// Word chunks that keep their trailing whitespace.
pub fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            out.push(std::mem::take(&mut cur));
            in_space = false;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[async_trait]
impl Provider for EchoProvider {
    async fn stream(&self, req: ProviderRequest) -> Result<ProviderStream, ProviderError> {
        let prompt = req
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let delay = self.chunk_delay;
        let mut events: Vec<ProviderEvent> = split_words(&prompt)
            .into_iter()
            .map(ProviderEvent::TextDelta)
            .collect();
        events.push(ProviderEvent::Done);
        let s = stream::unfold(
            (events.into_iter(), true),
            move |(mut it, first)| async move {
                let ev = it.next()?;
                if !first && !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Some((Ok(ev), (it, false)))
            },
        );
        Ok(Box::pin(s))
    }

    fn kind(&self) -> &'static str {
        "echo"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn echoes_last_user_prompt_word_by_word() {
        let p = EchoProvider::new();
        let prompt = "Hello  there,\nworld! ";
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: "sys".into(),
            messages: vec![
                ChatMessage::user("old"),
                ChatMessage::assistant("old"),
                ChatMessage::user(prompt),
            ],
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
}
