//! `session/compact` (SPEC §18): its params and result. The `context_compacted` event is
//! in [`crate::update`].

use crate::ids::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{Mode, Outcome};

/// `session/compact` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Added to the summarization instruction (what to keep, what to stress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// `session/compact` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    pub session_id: SessionId,
    /// The compaction's own turn.
    pub turn_id: TurnId,
    /// `completed` (also when there was nothing old enough to summarize:
    /// `summarizedMessages` is then 0 and nothing changed), `cancelled` or `failed` (the
    /// summary call failed: the context is unchanged).
    pub outcome: Outcome,
    /// Estimated tokens of the retained context before and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Messages of the retained context replaced by the summary.
    pub summarized_messages: u64,
    /// With `failed`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
