//! `zeroclaw usage [--since DAY]` (SPEC §24.2): tokens and cost per day, agent and
//! principal, from `usage/summary` (as JSON with `--json`).

use std::path::PathBuf;

use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::usage::UsageSummaryParams;

use super::error::CliError;
use super::{human, rpc};

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    since: Option<String>,
    json: bool,
) -> Result<(), CliError> {
    let summary =
        rpc::call::<call::UsageSummary>(config_dir, socket, &UsageSummaryParams { since }).await?;
    if json {
        rpc::print_json(&summary);
    } else {
        print!("{}", describe(&summary));
    }
    Ok(())
}

/// The summary as a table, with a total line.
pub fn describe(s: &Value) -> String {
    let empty = Vec::new();
    let days = s["days"].as_array().unwrap_or(&empty);
    let since = s["since"].as_str().unwrap_or("?");
    if days.is_empty() {
        return format!("no usage since {since}\n");
    }
    let num = |d: &Value, key: &str| d[key].as_u64().unwrap_or(0);
    let cost = |x: f64| format!("${x:.4}");
    let (mut tokens, mut usd) = (0u64, 0.0f64);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for d in days {
        let c = d["costUsd"].as_f64().unwrap_or(0.0);
        tokens = tokens.saturating_add(num(d, "totalTokens"));
        usd += c;
        rows.push(vec![
            d["day"].as_str().unwrap_or("?").to_string(),
            d["principal"].as_str().unwrap_or("?").to_string(),
            d["agent"].as_str().unwrap_or("?").to_string(),
            num(d, "inputTokens").to_string(),
            num(d, "outputTokens").to_string(),
            num(d, "totalTokens").to_string(),
            cost(c),
        ]);
    }
    rows.push(vec![
        "total".into(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        tokens.to_string(),
        cost(usd),
    ]);
    human::table(
        &["day", "principal", "agent", "in", "out", "tokens", "cost"],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_table_with_a_total() {
        let s = json!({"since": "2026-12-01", "days": [
            {"day": "2026-12-07", "principal": "operator", "agent": "default",
             "inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "costUsd": 0.000075},
        ]});
        let text = super::describe(&s);
        assert!(text.contains("2026-12-07"), "{text}");
        assert!(text.contains("$0.0001"), "{text}");
        assert!(
            text.lines().last().unwrap_or("").starts_with("total"),
            "{text}"
        );
        assert_eq!(
            super::describe(&json!({"since": "2026-12-01", "days": []})),
            "no usage since 2026-12-01\n"
        );
    }
}
