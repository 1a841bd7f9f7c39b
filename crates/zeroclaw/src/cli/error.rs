//! How a command fails: one line for the user and the exit status that tells scripts why
//! (1 = the daemon refused or the command failed, 2 = usage, 3 = the daemon is not running).

use std::path::Path;

use serde_json::Value;
use zeroclaw_client::{ClientError, ErrorObject};

/// The daemon or the command refused (`error.code` from the daemon, a missing file, …).
pub const FAILED: u8 = 1;
/// The daemon is not running (nothing listens at the endpoint).
pub const NOT_RUNNING: u8 = 3;

#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub exit: u8,
}

impl CliError {
    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            exit: FAILED,
        }
    }

    /// Nothing answers at `endpoint`: says so, with the command that starts the daemon.
    pub fn not_running(endpoint: &Path, config_dir: Option<&Path>) -> CliError {
        CliError {
            message: format!(
                "cannot connect to {}: the daemon is not running; start it with `{}`",
                endpoint.display(),
                start_command(config_dir)
            ),
            exit: NOT_RUNNING,
        }
    }

    /// A failed call: the daemon's message and the offending entry, or what went wrong.
    pub fn from_client(e: ClientError) -> CliError {
        match e {
            ClientError::Rpc(error) => CliError::failed(describe_rpc(&error)),
            other => CliError::failed(other.to_string()),
        }
    }
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::failed(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        CliError::failed(message)
    }
}

/// `zeroclaw daemon`, with `--config-dir` when the user gave one.
pub fn start_command(config_dir: Option<&Path>) -> String {
    match config_dir {
        Some(dir) => format!("zeroclaw daemon --config-dir {}", dir.display()),
        None => "zeroclaw daemon".to_string(),
    }
}

/// The daemon's message, followed by the entry and property `error.data` names when the
/// message does not already name them.
pub fn describe_rpc(error: &ErrorObject) -> String {
    let mut text = error.message.clone();
    let data = error.data.as_ref();
    let mut details = Vec::new();
    if let Some(index) = data.and_then(|d| d.get("index")).and_then(Value::as_u64) {
        let entry = format!("entry {index}");
        if !text.contains(&entry) {
            details.push(entry);
        }
    }
    if let Some(prop) = data.and_then(|d| d.get("prop")).and_then(Value::as_str)
        && !text.contains(prop)
    {
        details.push(format!("property {prop}"));
    }
    if !details.is_empty() {
        text.push_str(&format!(" ({})", details.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zeroclaw_client::ErrorObject;

    use super::describe_rpc;

    fn error(message: &str, data: Option<serde_json::Value>) -> ErrorObject {
        ErrorObject {
            code: -32602,
            message: message.into(),
            data,
        }
    }

    #[test]
    fn names_index_and_prop_once() {
        assert_eq!(describe_rpc(&error("bad value", None)), "bad value");
        assert_eq!(
            describe_rpc(&error(
                "bad value",
                Some(json!({"index": 2, "prop": "a.b"}))
            )),
            "bad value (entry 2, property a.b)"
        );
        assert_eq!(
            describe_rpc(&error(
                "config entry 2 (a.b): expected integer",
                Some(json!({"index": 2, "prop": "a.b"}))
            )),
            "config entry 2 (a.b): expected integer"
        );
    }
}
