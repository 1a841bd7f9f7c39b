//! [`ConfigError`]: why a config read or write was refused or failed, and its one mapping
//! to a JSON-RPC error (SPEC §6, §4.1). A batch entry (`config/set-many`) is named by its
//! `index`; `data` carries `{index?, prop}` where the contract says so.

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use zeroclaw_rpc::ErrorObject;

use crate::path::PropPath;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A property path over `limit` bytes: named by size, never echoed.
    #[error("{}property path of {bytes} bytes is over the limit of {limit} bytes", entry_prefix(*index))]
    PropTooLong {
        bytes: usize,
        limit: usize,
        index: Option<usize>,
    },
    /// A written property path that does not parse.
    #[error("{}", bad_path_message(raw, reason, *index))]
    BadPath {
        raw: String,
        reason: String,
        index: Option<usize>,
    },
    /// A `config/get` path that does not parse.
    #[error("{0}")]
    BadQuery(String),
    /// `config/set-many` with no entry or too many.
    #[error("sets must hold 1 to {max} entries, got {got}")]
    BatchSize { got: usize, max: usize },
    /// A value, or the configuration it would make, is invalid at `at` (`prop` is the
    /// property written or read).
    #[error("{}", invalid_message(*index, prop, at, message))]
    Invalid {
        index: Option<usize>,
        prop: PropPath,
        at: PropPath,
        message: String,
    },
    /// The writer may not write `prop` (outside its `config_write_paths`, or admin-only).
    #[error("{}", not_writable_message(*index, prop, principal, *admin_only))]
    NotWritable {
        index: Option<usize>,
        prop: PropPath,
        principal: String,
        admin_only: bool,
    },
    /// The write would bring about what its (non-admin) writer may not: give some principal
    /// more than the writer holds (SPEC §4.1), change an admin-only setting from a table
    /// above it, or take an identity (SPEC §17.1). See [`crate::guard`].
    #[error("{}", refused_message(*index, prop, reason))]
    Refused {
        index: Option<usize>,
        prop: PropPath,
        reason: String,
    },
    /// The file could not be written; nothing changed.
    #[error("cannot write {}: {source}", path.display())]
    Persist {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn entry_prefix(index: Option<usize>) -> String {
    index.map_or_else(String::new, |i| format!("config entry {i}: "))
}

fn bad_path_message(raw: &str, reason: &str, index: Option<usize>) -> String {
    match index {
        Some(i) => format!("config entry {i} ({raw}): {reason}"),
        None => format!("{raw}: {reason}"),
    }
}

/// Where the problem is (`at`) and the property written (`prop`) are each named once.
fn invalid_message(index: Option<usize>, prop: &PropPath, at: &PropPath, msg: &str) -> String {
    let detail = if at == prop {
        msg.to_string()
    } else {
        format!("{at}: {msg}")
    };
    match index {
        Some(i) => format!("config entry {i} ({prop}): {detail}"),
        None => {
            let name = prop.to_string();
            // `at` below `prop`, or a message that already names `prop`: no prefix.
            let names_prop = at != prop && (at.starts_with(prop) || msg.contains(&name));
            match names_prop {
                true => detail,
                false => format!("{name}: {detail}"),
            }
        }
    }
}

fn not_writable_message(
    index: Option<usize>,
    prop: &PropPath,
    principal: &str,
    admin_only: bool,
) -> String {
    let why = match admin_only {
        true => {
            " (admin-only: it decides which programs the daemon runs, or where it connects \
             and with which key)"
        }
        false => "",
    };
    match index {
        Some(i) => {
            format!(
                "config entry {i} ({prop}): principal {principal} may not write this property{why}"
            )
        }
        None => format!("principal {principal} may not write config property {prop}{why}"),
    }
}

fn refused_message(index: Option<usize>, prop: &PropPath, reason: &str) -> String {
    match index {
        Some(i) => format!("config entry {i} ({prop}): {reason}"),
        None => format!("config property {prop}: {reason}"),
    }
}

/// `data {index?, prop?}`; `None` when there is neither.
fn entry_data(index: Option<usize>, prop: Option<String>) -> Option<Value> {
    let mut data = Map::new();
    if let Some(i) = index {
        data.insert("index".into(), json!(i));
    }
    if let Some(p) = prop {
        data.insert("prop".into(), json!(p));
    }
    (!data.is_empty()).then_some(Value::Object(data))
}

/// The one mapping of config errors to the wire.
impl From<ConfigError> for ErrorObject {
    fn from(e: ConfigError) -> ErrorObject {
        use ConfigError::*;
        let message = e.to_string();
        let (error, data) = match e {
            PropTooLong { index, .. } => (
                ErrorObject::invalid_params(message),
                entry_data(index, None),
            ),
            BadPath { raw, index, .. } => (
                ErrorObject::invalid_params(message),
                entry_data(index, Some(raw)),
            ),
            BadQuery(_) | BatchSize { .. } => (ErrorObject::invalid_params(message), None),
            Invalid { index, prop, .. } => (
                ErrorObject::invalid_params(message),
                entry_data(index, Some(prop.to_string())),
            ),
            NotWritable { index, prop, .. } | Refused { index, prop, .. } => (
                ErrorObject::forbidden(message),
                entry_data(index, Some(prop.to_string())),
            ),
            Persist { .. } => (ErrorObject::internal(message), None),
        };
        match data {
            Some(data) => error.with_data(data),
            None => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroclaw_rpc::code;

    fn path(p: &str) -> PropPath {
        PropPath::parse(p).unwrap()
    }

    #[test]
    fn batch_entries_are_named_by_index_and_prop() {
        let e = ErrorObject::from(ConfigError::Invalid {
            index: Some(2),
            prop: path("wss.port"),
            at: path("wss.port"),
            message: "expected an integer".into(),
        });
        assert_eq!(
            e,
            ErrorObject::invalid_entry(
                2,
                "wss.port",
                "config entry 2 (wss.port): expected an integer"
            )
        );
        let e = ErrorObject::from(ConfigError::Refused {
            index: None,
            prop: path("users.bob"),
            reason: "no".into(),
        });
        assert_eq!(e.code, code::FORBIDDEN);
        assert_eq!(e.message, "config property users.bob: no");
        assert_eq!(e.data, Some(json!({"prop": "users.bob"})));
        let e = ErrorObject::from(ConfigError::PropTooLong {
            bytes: 2000,
            limit: 1024,
            index: Some(1),
        });
        assert_eq!(e.data, Some(json!({"index": 1})));
        assert_eq!(
            e.message,
            "config entry 1: property path of 2000 bytes is over the limit of 1024 bytes"
        );
        let e = ErrorObject::from(ConfigError::BadQuery("bad".into()));
        assert_eq!((e.code, e.data), (code::INVALID_PARAMS, None));
    }
}
