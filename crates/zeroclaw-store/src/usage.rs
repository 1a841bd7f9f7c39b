//! Token and cost totals per UTC day, principal and agent (SPEC §24.2): added to after
//! every provider call, read for a daily budget and for `usage/summary`.

use rusqlite::{Connection, params};

use crate::db::Db;
use crate::error::Result;

/// One row of the daily totals.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageDay {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub principal: String,
    pub agent: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn as_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Adds one provider call's tokens and cost to its day's row.
pub(crate) fn add(db: &mut Db, row: &UsageDay) -> Result<()> {
    db.write(|conn| {
        conn.execute(
            "INSERT INTO usage_daily (day, principal, agent, input_tokens, output_tokens, cost_usd) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (day, principal, agent) DO UPDATE SET \
               input_tokens = input_tokens + ?4, output_tokens = output_tokens + ?5, \
               cost_usd = cost_usd + ?6",
            params![
                row.day,
                row.principal,
                row.agent,
                as_i64(row.input_tokens),
                as_i64(row.output_tokens),
                row.cost_usd
            ],
        )?;
        Ok(())
    })
}

/// A principal's tokens and cost on `day`, over all agents.
pub(crate) fn day_total(db: &mut Db, day: &str, principal: &str) -> Result<(u64, f64)> {
    db.read(|conn: &Connection| {
        let (tokens, cost): (i64, f64) = conn.query_row(
            "SELECT COALESCE(SUM(input_tokens + output_tokens), 0), COALESCE(SUM(cost_usd), 0) \
             FROM usage_daily WHERE day = ?1 AND principal = ?2",
            params![day, principal],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((as_u64(tokens), cost))
    })
}

/// The rows from `since` (a `YYYY-MM-DD` day, inclusive) on, of one principal or of all,
/// oldest day first; at most `limit` rows.
pub(crate) fn summary(
    db: &mut Db,
    since: &str,
    principal: Option<&str>,
    limit: usize,
) -> Result<Vec<UsageDay>> {
    db.read(|conn: &Connection| {
        let mut stmt = conn.prepare(
            "SELECT day, principal, agent, input_tokens, output_tokens, cost_usd \
             FROM usage_daily WHERE day >= ?1 AND (?2 IS NULL OR principal = ?2) \
             ORDER BY day, principal, agent LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![since, principal, as_i64(limit as u64)], |r| {
            Ok(UsageDay {
                day: r.get(0)?,
                principal: r.get(1)?,
                agent: r.get(2)?,
                input_tokens: as_u64(r.get(3)?),
                output_tokens: as_u64(r.get(4)?),
                cost_usd: r.get(5)?,
            })
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        Ok(out)
    })
}
