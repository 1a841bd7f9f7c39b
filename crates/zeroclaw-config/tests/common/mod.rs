//! How these tests look at a refusal: what kind it is, its message, and the entry and
//! property it names, read from the crate's own errors (the daemon turns them into wire
//! errors; `crates/zeroclaw-e2e/tests/e2e/hardening_config*.rs` check those through the binary).

#![allow(dead_code)]

use serde_json::{Map, Value, json};
use zeroclaw_config::{ConfigError, PolicyError};

/// What kind of refusal it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request is malformed or would make an invalid configuration.
    Invalid,
    /// The writer may not (a path it may not write, an escalation, a missing grant).
    Forbidden,
    /// The caller is nobody.
    Unauthenticated,
    /// Writing failed.
    Failed,
}

/// A refusal as seen by a test (`data` as the contract shapes it).
#[derive(Debug)]
pub struct Seen {
    pub kind: Kind,
    pub message: String,
    /// `{index?, prop?}`, or `None` when it names neither.
    pub data: Option<Value>,
}

impl From<ConfigError> for Seen {
    fn from(e: ConfigError) -> Seen {
        use ConfigError::*;
        let kind = match e {
            PropTooLong { .. }
            | BadPath { .. }
            | BadQuery(_)
            | BatchSize { .. }
            | Invalid { .. } => Kind::Invalid,
            NotWritable { .. } | Refused { .. } => Kind::Forbidden,
            Persist { .. } => Kind::Failed,
        };
        let mut data = Map::new();
        if let Some(i) = e.index() {
            data.insert("index".into(), json!(i));
        }
        if let Some(p) = e.prop() {
            data.insert("prop".into(), json!(p));
        }
        Seen {
            kind,
            message: e.to_string(),
            data: (!data.is_empty()).then_some(Value::Object(data)),
        }
    }
}

impl From<PolicyError> for Seen {
    fn from(e: PolicyError) -> Seen {
        let (kind, data) = match &e {
            PolicyError::MissingGrant { resource, verb, .. } => (
                Kind::Forbidden,
                Some(json!({"resource": resource, "verb": verb})),
            ),
            _ => (Kind::Unauthenticated, None),
        };
        Seen {
            kind,
            message: e.to_string(),
            data,
        }
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.message, self.kind)
    }
}
