//! How a resumed chat words the transcript rows that are not messages (SPEC §22): a
//! `rewind` row (JSON `{toTurnId, rewoundTurns, restoredFiles, restoreFiles}`) and a failed
//! turn's `error` row (JSON `{message, retries}`). Text that is not the JSON expected is
//! shown as it is, never a panic.

use serde_json::Value;

/// A `rewind` row as a sentence: how many turns went back and which files came back.
pub fn rewind_row(content: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(content) else {
        return "rewound".to_owned();
    };
    let turns = v["rewoundTurns"].as_array().map_or(0, Vec::len);
    let files: Vec<&str> = v["restoredFiles"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str()).collect())
        .unwrap_or_default();
    let mut text = format!("rewound {turns} turn(s)");
    if v["restoreFiles"] == false {
        text.push_str("; files kept as they were");
    } else if !files.is_empty() {
        text.push_str(&format!("; files restored: {}", files.join(", ")));
    }
    text
}

/// An `error` row as `MESSAGE (after N retries)`.
pub fn error_row(content: &str) -> String {
    let error: Value = serde_json::from_str(content).unwrap_or(Value::Null);
    let message = error["message"].as_str().unwrap_or(content);
    let retries = match error["retries"].as_u64() {
        Some(0) | None => String::new(),
        Some(1) => " (after 1 retry)".to_owned(),
        Some(n) => format!(" (after {n} retries)"),
    };
    format!("{message}{retries}")
}

#[cfg(test)]
mod tests {
    use super::{error_row, rewind_row};

    #[test]
    fn a_rewind_row_reads_as_a_sentence() {
        assert_eq!(
            rewind_row(
                r#"{"toTurnId":"t2","rewoundTurns":["t2","t3"],"restoredFiles":["a","b"],"restoreFiles":true}"#
            ),
            "rewound 2 turn(s); files restored: a, b"
        );
        assert_eq!(
            rewind_row(
                r#"{"toTurnId":"t2","rewoundTurns":["t2"],"restoredFiles":[],"restoreFiles":false}"#
            ),
            "rewound 1 turn(s); files kept as they were"
        );
        assert_eq!(rewind_row("not json"), "rewound");
    }

    #[test]
    fn an_error_row_names_its_message_and_retries() {
        assert_eq!(
            error_row(r#"{"message":"upstream 500","retries":2}"#),
            "upstream 500 (after 2 retries)"
        );
        assert_eq!(error_row(r#"{"message":"bad key","retries":0}"#), "bad key");
        assert_eq!(error_row("plain text"), "plain text");
    }
}
