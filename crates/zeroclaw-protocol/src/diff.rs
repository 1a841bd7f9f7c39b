//! `session/diff` (SPEC §22 "What a turn changed"): the files a turn, or the whole session
//! so far, added, modified and deleted, read from the file checkpoints of §18.

use crate::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::Mode;

/// `session/diff` params: one turn's changes, or without `turnId` the whole session's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The turn (its start to its end); absent: the session's first turn start to its
    /// latest checkpoint.
    #[serde(default, alias = "turn_id", skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
}

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    /// Relative to the session's working directory, `/`-separated.
    pub path: String,
    pub status: FileStatus,
    /// Lines added and removed (0 for a file that is not text).
    pub additions: u64,
    pub deletions: u64,
    /// A unified diff, for text files up to 256 KiB (both sides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// `session/diff` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffResult {
    /// In path order.
    pub files: Vec<FileDiff>,
    /// Why the checkpoints cannot tell (a turn still running, one recorded unrestorable,
    /// checkpoints off); `files` is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}
