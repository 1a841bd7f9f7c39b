//! `usage/summary {since?}` (SPEC §24.2): the sessions service's daily totals as the wire
//! shows them.

use zeroclaw_protocol::usage::{UsageDayRow, UsageSummaryParams, UsageSummaryResult};
use zeroclaw_rpc::ErrorObject;

use crate::auth::Principal;
use crate::state::Daemon;
use crate::wire_error;

/// `usage/summary {since?}`.
pub(crate) async fn summary(
    daemon: &Daemon,
    principal: &Principal,
    p: UsageSummaryParams,
) -> Result<UsageSummaryResult, ErrorObject> {
    let (since, rows) = daemon
        .sessions
        .usage_summary(principal, p.since.as_deref())
        .await
        .map_err(wire_error::session)?;
    let days = rows
        .into_iter()
        .map(|r| UsageDayRow {
            total_tokens: r.input_tokens.saturating_add(r.output_tokens),
            day: r.day,
            principal: r.principal,
            agent: r.agent,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cost_usd: r.cost_usd,
        })
        .collect();
    Ok(UsageSummaryResult { since, days })
}
