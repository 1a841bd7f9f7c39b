//! SPEC §18 "Sessions that last": the params and results of `session/rewind`,
//! `session/fork` and `session/set_title` (the `session_rewound` event is in
//! [`crate::update`]; `title`, `forkedFrom`, `search` and `includeRewound` extend the
//! `session/list` and `session/messages` types in [`crate::session`]).

use crate::ids::{SessionId, TurnId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::Mode;

/// `session/rewind` params: go back to just before turn `turnId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(alias = "turn_id")]
    pub turn_id: TurnId,
    /// Put back the files the agent's tools changed in the rewound turns (default true).
    #[serde(
        default,
        alias = "restore_files",
        skip_serializing_if = "Option::is_none"
    )]
    pub restore_files: Option<bool>,
    /// Also put back the paths someone else changed (listed in `conflicts` otherwise):
    /// admin only (SPEC §17.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// A file a rewind could not put back, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unrestorable {
    pub path: String,
    pub reason: String,
}

/// A path a rewind left alone because someone else changed it, and how (SPEC §17.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub path: String,
    pub reason: String,
}

/// `session/rewind` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindResult {
    pub session_id: SessionId,
    /// The turns this rewind took back, oldest first (`turnId` and every later turn not
    /// already rewound); empty when a rewind to the same turn already did.
    pub rewound_turns: Vec<String>,
    /// The rewound turn's prompt text, for a client to edit and send again.
    pub prompt: String,
    /// Paths (relative to the session's working directory) put back.
    pub restored_files: Vec<String>,
    pub unrestorable: Vec<Unrestorable>,
    /// Paths the rewound turns did not leave as they are now (someone else changed them):
    /// left alone unless `force` was passed.
    #[serde(default)]
    pub conflicts: Vec<Conflict>,
}

/// `session/fork` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The last turn to copy (default: the last finished turn).
    #[serde(default, alias = "turn_id", skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
}

/// Where a forked session came from (`session/fork`, `session/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub session_id: SessionId,
    /// The source's last turn copied; null when the source had no finished turn.
    pub turn_id: Option<TurnId>,
}

/// `session/fork` result: the new ACP session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkResult {
    pub session_id: SessionId,
    pub forked_from: ForkedFrom,
    /// Transcript rows copied.
    pub message_count: u64,
}

/// `session/set_title` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetTitleParams {
    #[serde(alias = "session_id")]
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// 1 to 200 characters.
    pub title: String,
}

/// `session/set_title` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetTitleResult {
    pub session_id: SessionId,
    pub title: String,
}
