//! Compaction of the retained provider context (SPEC §18): which messages are summarized
//! and which are kept ([`plan`]), the summarization call on the session's own provider
//! ([`summarize`]: same model, no tools, the streamed text collected) and the context that
//! replaces the old one ([`compacted_context`]). The request's marker line lives below, in
//! [`crate::provider::summary`], where the `echo` provider recognizes it (and answers with
//! its deterministic summary, so the whole path runs offline).
//!
//! Knows nothing about storage: the daemon commits the new context as a snapshot and
//! only then tells the clients.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::message::ChatMessage;
pub use crate::provider::summary::{SUMMARY_REQUEST, is_summary_request};
use crate::provider::{Provider, ProviderError, ProviderEvent, ProviderRequest};

/// System prompt of the summarization call.
pub const SUMMARY_SYSTEM: &str =
    "You summarize conversations between a user and a coding agent, faithfully and concisely.";

/// Start of the user message holding a summary in a compacted context.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation]\n";

/// Longest summary accepted, in bytes: a provider streaming more fails the compaction.
pub const MAX_SUMMARY: usize = 1024 * 1024;

/// Which messages a compaction summarizes: `context[..cut]`; `context[cut..]` is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub cut: usize,
}

/// Indices where turns start: every user message, and index 0 whatever it is.
fn turn_starts(context: &[ChatMessage]) -> Vec<usize> {
    context
        .iter()
        .enumerate()
        .filter(|(i, m)| *i == 0 || matches!(m, ChatMessage::User { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// Whether `m` is the summary message a compaction put first.
pub fn is_summary(m: &ChatMessage) -> bool {
    matches!(m, ChatMessage::User { content } if content.starts_with(SUMMARY_PREFIX))
}

/// Keeps the last `keep_recent_turns` whole turns of `context` (a turn starts at a user
/// message) and summarizes everything before them. `None` when nothing would be
/// summarized: the context has no more turns than are kept, or all that precedes them is
/// the summary of an earlier compaction.
pub fn plan(context: &[ChatMessage], keep_recent_turns: usize) -> Option<Plan> {
    let starts = turn_starts(context);
    let cut = if keep_recent_turns == 0 {
        context.len()
    } else if keep_recent_turns >= starts.len() {
        return None;
    } else {
        starts[starts.len() - keep_recent_turns]
    };
    let only_a_summary = cut == 1 && is_summary(&context[0]);
    (cut > 0 && !only_a_summary).then_some(Plan { cut })
}

/// The summarization request: `summarized` followed by one user message asking for the
/// summary (plus the caller's `instructions`); no tools are offered.
pub fn summary_request(
    model: &str,
    summarized: &[ChatMessage],
    instructions: Option<&str>,
) -> ProviderRequest {
    let mut ask = SUMMARY_REQUEST.to_owned();
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        ask.push_str("\nAdditional instructions: ");
        ask.push_str(extra);
    }
    let mut messages = Vec::with_capacity(summarized.len() + 1);
    messages.extend_from_slice(summarized);
    messages.push(ChatMessage::user(ask));
    ProviderRequest {
        model: model.to_owned(),
        system_prompt: SUMMARY_SYSTEM.to_owned(),
        messages: Arc::new(messages),
        tools: Vec::new(),
    }
}

/// Why a summary could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the provider returned an empty summary")]
    Empty,
    #[error("the summary is longer than {MAX_SUMMARY} bytes")]
    TooLong,
    #[error("cancelled")]
    Cancelled,
}

/// Makes the summarization call and collects the streamed text (thoughts and tool calls
/// are ignored). Stops at the first provider error, or when `cancel` fires.
pub async fn summarize(
    provider: &dyn Provider,
    req: ProviderRequest,
    cancel: &CancellationToken,
) -> Result<String, SummaryError> {
    let mut stream = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(SummaryError::Cancelled),
        s = provider.stream(req) => s?,
    };
    let mut text = String::new();
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(SummaryError::Cancelled),
            it = stream.next() => it,
        };
        match item {
            None | Some(Ok(ProviderEvent::Done)) => break,
            Some(Ok(ProviderEvent::TextDelta(t))) => {
                if text.len() + t.len() > MAX_SUMMARY {
                    return Err(SummaryError::TooLong);
                }
                text.push_str(&t);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(SummaryError::Provider(e)),
        }
    }
    let summary = text.trim();
    if summary.is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(summary.to_owned())
}

/// The context after a compaction: one user message holding the summary, then `kept`.
pub fn compacted_context(summary: &str, kept: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(kept.len() + 1);
    out.push(ChatMessage::user(format!("{SUMMARY_PREFIX}{summary}")));
    out.extend_from_slice(kept);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCallRequest;
    use crate::provider::EchoProvider;
    use crate::text::Text;

    fn turns(n: usize) -> Vec<ChatMessage> {
        let mut ctx = Vec::new();
        for i in 0..n {
            ctx.push(ChatMessage::user(format!("question {i}")));
            ctx.push(ChatMessage::Assistant {
                content: Text::default(),
                tool_calls: vec![ToolCallRequest {
                    id: format!("c{i}"),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            });
            ctx.push(ChatMessage::tool_result(format!("c{i}"), "bash", "out"));
            ctx.push(ChatMessage::assistant(format!("answer {i}")));
        }
        ctx
    }

    #[test]
    fn plan_keeps_the_last_whole_turns() {
        let ctx = turns(4);
        assert_eq!(plan(&ctx, 2), Some(Plan { cut: 8 }));
        assert_eq!(plan(&ctx, 1), Some(Plan { cut: 12 }));
        assert_eq!(plan(&ctx, 0), Some(Plan { cut: 16 }));
        assert_eq!(plan(&ctx, 4), None, "nothing older than the kept turns");
        assert_eq!(plan(&ctx, 9), None);
        assert_eq!(plan(&[], 0), None);
        assert_eq!(plan(&[], 2), None);
    }

    #[test]
    fn an_earlier_summary_alone_is_not_summarized_again() {
        let mut ctx = compacted_context("old", &turns(2));
        assert!(is_summary(&ctx[0]));
        assert_eq!(plan(&ctx, 2), None);
        ctx.extend(turns(1));
        assert_eq!(plan(&ctx, 2), Some(Plan { cut: 5 }), "with the next turn");
    }

    #[test]
    fn plan_counts_a_leading_non_user_message_as_a_turn() {
        let mut ctx = vec![ChatMessage::assistant("orphan")];
        ctx.extend(turns(1));
        assert_eq!(plan(&ctx, 1), Some(Plan { cut: 1 }));
        assert_eq!(plan(&ctx, 2), None);
    }

    #[test]
    fn request_carries_the_instructions_and_no_tools() {
        let ctx = turns(1);
        let req = summary_request("m", &ctx, Some("  keep the numbers "));
        assert!(req.tools.is_empty());
        assert_eq!(req.model, "m");
        assert_eq!(&req.messages[..ctx.len()], &ctx[..]);
        let last = req
            .messages
            .last()
            .map(ChatMessage::content)
            .unwrap_or_default();
        assert!(last.starts_with(SUMMARY_REQUEST));
        assert!(last.ends_with("Additional instructions: keep the numbers"));
        assert!(is_summary_request(&req));
        let plain = summary_request("m", &ctx, Some("  "));
        assert_eq!(
            plain.messages.last().map(ChatMessage::content).as_deref(),
            Some(SUMMARY_REQUEST)
        );
    }

    #[tokio::test]
    async fn echo_summarizes_deterministically() {
        let ctx = turns(2);
        let req = summary_request("", &ctx[..4], None);
        let got = summarize(&EchoProvider::new(), req, &CancellationToken::new())
            .await
            .expect("summary");
        assert_eq!(
            got,
            "user: question 0\nassistant: [calls bash]\ntool: out\nassistant: answer 0"
        );
        let new = compacted_context(&got, &ctx[4..]);
        assert_eq!(new.len(), 5);
        assert_eq!(new[0], ChatMessage::user(format!("{SUMMARY_PREFIX}{got}")));
    }

    #[tokio::test]
    async fn a_cancelled_or_empty_summary_is_an_error() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let req = summary_request("", &turns(1), None);
        assert_eq!(
            summarize(&EchoProvider::new(), req, &cancel).await,
            Err(SummaryError::Cancelled)
        );
        // Not a summary request: echo echoes the (empty) last prompt.
        let req = ProviderRequest {
            model: String::new(),
            system_prompt: String::new(),
            messages: Arc::new(vec![ChatMessage::user("  ")]),
            tools: Vec::new(),
        };
        assert_eq!(
            summarize(&EchoProvider::new(), req, &CancellationToken::new()).await,
            Err(SummaryError::Empty)
        );
    }
}
