//! `usage/summary {since?}` (SPEC §24.2): tokens and cost per UTC day, principal and
//! agent. Admins get every principal's rows, others their own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `usage/summary` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageSummaryParams {
    /// The first day (`YYYY-MM-DD`, UTC) to include; default: 30 days ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// One day's usage of one principal on one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageDayRow {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub principal: String,
    pub agent: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// US dollars, from `[pricing]` (0 for models without a price).
    pub cost_usd: f64,
}

/// `usage/summary` result: oldest day first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageSummaryResult {
    pub since: String,
    pub days: Vec<UsageDayRow>,
}
