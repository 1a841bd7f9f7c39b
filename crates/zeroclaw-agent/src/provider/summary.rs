//! The summarization request as a provider sees it (SPEC §18): the marker line that opens
//! the last user message ([`SUMMARY_REQUEST`]) and how to recognize such a request
//! ([`is_summary_request`]).
//!
//! It sits below both of its users: `crate::compact` builds the request, and the `echo`
//! provider recognizes it and answers with its deterministic summary. Keeping it here, not
//! in `compact`, means no provider imports the compaction above it.

use super::ProviderRequest;
use crate::message::ChatMessage;

/// First line of the user message that asks for the summary. The `echo` provider
/// recognizes it and answers with `echo::echo_summary` of the messages before it.
pub const SUMMARY_REQUEST: &str = "[zeroclaw:summarize] Summarize the conversation above so that it can replace it: \
keep the goals, decisions, facts, file names, commands and open questions a continuation needs. \
Answer with the summary only.";

/// Whether `req` is a summarization request made by `crate::compact::summary_request`:
/// no tools offered, and the last message is a user message opening with
/// [`SUMMARY_REQUEST`].
pub fn is_summary_request(req: &ProviderRequest) -> bool {
    req.tools.is_empty()
        && matches!(req.messages.last(),
            Some(ChatMessage::User { content }) if content.starts_with(SUMMARY_REQUEST))
}
