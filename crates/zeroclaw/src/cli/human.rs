//! Text for people: durations and ages, aligned tables, JSON values as plain text or TOML.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// `45s`, `3m 12s`, `2h 5m`, `4d 1h`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {s}s")
    } else {
        format!("{s}s")
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How long ago a millisecond timestamp was (`3m ago`); `?` when it is not a number.
pub fn age(timestamp_ms: &Value, now_ms: i64) -> String {
    match timestamp_ms.as_i64() {
        Some(t) => {
            let secs = (now_ms.saturating_sub(t)).max(0) / 1000;
            let text = duration(secs as u64);
            // Only the coarsest unit: `3m`, not `3m 12s`.
            let first = text.split(' ').next().unwrap_or(&text).to_string();
            format!("{first} ago")
        }
        None => "?".to_string(),
    }
}

/// Columns padded to their widest cell (by characters); the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 < row.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A JSON value for a person: strings without quotes, tables as TOML, the rest as JSON.
pub fn value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "(not set)".to_string(),
        Value::Object(_) => toml_text(v).unwrap_or_else(|| pretty_json(v)),
        other => other.to_string(),
    }
}

fn pretty_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A JSON object as TOML (nulls, which TOML lacks, are left out).
pub fn toml_text(v: &Value) -> Option<String> {
    let table: toml::Table = serde_json::from_value(without_nulls(v)).ok()?;
    let text = toml::to_string(&table).ok()?;
    Some(text.trim_end().to_string())
}

fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The first line of `text`, at most `max` characters (with `…` when cut).
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn durations_and_ages() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(192), "3m 12s");
        assert_eq!(duration(7500), "2h 5m");
        assert_eq!(duration(90_000), "1d 1h");
        assert_eq!(age(&json!(1_000), 181_000), "3m ago");
        assert_eq!(age(&json!("x"), 0), "?");
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["ID", "AGENT"],
            &[
                vec!["a".into(), "default".into()],
                vec!["long-id".into(), "x".into()],
            ],
        );
        assert_eq!(t, "ID       AGENT\na        default\nlong-id  x\n");
    }

    #[test]
    fn values_for_people() {
        assert_eq!(value(&json!("tiny")), "tiny");
        assert_eq!(value(&json!(3)), "3");
        assert_eq!(value(&json!(["a"])), "[\"a\"]");
        assert_eq!(
            value(&json!({"kind": "echo", "x": null})),
            "kind = \"echo\""
        );
        assert_eq!(first_line("\n  hello there\nmore", 8), "hello t…");
    }
}
