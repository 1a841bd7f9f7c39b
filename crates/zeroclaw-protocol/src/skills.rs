//! `skills/list {cwd?}` (SPEC §26): the skills a session in `cwd` would have, with the
//! directory each was found in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `skills/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsListParams {
    /// An absolute directory; default: only the user's skills (`~/.zeroclaw/skills`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    /// The skill's directory.
    pub path: String,
    /// `user`, `.zeroclaw`, `.claude` or `.agents`.
    pub source: String,
}

/// `skills/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsListResult {
    pub skills: Vec<SkillEntry>,
}
