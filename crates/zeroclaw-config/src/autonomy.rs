//! How much an agent may do without asking (SPEC §7, §17.2, §26): the autonomy levels and
//! their order. A leaf of the configuration, so that the sections naming an autonomy
//! (agents in `schema.rs`, webhooks in `webhooks.rs`) need not import each other.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    #[default]
    Supervised,
    Full,
    ReadOnly,
    /// Plan mode (SPEC §26): reads only, and ends a turn with a proposed plan.
    Plan,
}

impl Autonomy {
    /// How much it lets the agent do without asking, to compare two: `read_only` = `plan`
    /// < `supervised` < `full` (SPEC §17.2: nobody but an admin raises a session past its
    /// agent's; a webhook's is at most its agent's).
    pub fn latitude(self) -> u8 {
        match self {
            Autonomy::ReadOnly | Autonomy::Plan => 0,
            Autonomy::Supervised => 1,
            Autonomy::Full => 2,
        }
    }
}
