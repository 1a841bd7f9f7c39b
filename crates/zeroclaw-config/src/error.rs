//! The crate's errors, in its own terms (no protocol here; the daemon maps them to the
//! wire in one place):
//! - [`ConfigError`]: why a config read or write was refused or failed (SPEC §6, §4.1). A
//!   batch entry (`config/set-many`) is named by its [`ConfigError::index`], the property
//!   by [`ConfigError::prop`];
//! - [`PolicyError`]: why a credential stands for nobody, or a principal lacks a grant
//!   (SPEC §4).

use std::path::PathBuf;

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

impl ConfigError {
    /// The `config/set-many` entry to blame, if the error is about one.
    pub fn index(&self) -> Option<usize> {
        use ConfigError::*;
        match self {
            PropTooLong { index, .. }
            | BadPath { index, .. }
            | Invalid { index, .. }
            | NotWritable { index, .. }
            | Refused { index, .. } => *index,
            BadQuery(_) | BatchSize { .. } | Persist { .. } => None,
        }
    }

    /// The property the error is about, as written when it did not parse. `None` for a
    /// path too long to echo, and for errors about no one property.
    pub fn prop(&self) -> Option<String> {
        use ConfigError::*;
        match self {
            BadPath { raw, .. } => Some(raw.clone()),
            Invalid { prop, .. } | NotWritable { prop, .. } | Refused { prop, .. } => {
                Some(prop.to_string())
            }
            PropTooLong { .. } | BadQuery(_) | BatchSize { .. } | Persist { .. } => None,
        }
    }
}

/// Why the policy refuses a caller (SPEC §4): its credential stands for nobody, or its
/// principal lacks a grant a method needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A local peer whose uid no user maps.
    #[error("authentication failed: uid {0} is not mapped to a user")]
    UnmappedUid(u32),
    /// A pipe client (the daemon's own user) while that user is not trusted.
    #[error(
        "authentication failed: a pipe client is the daemon's own user, which is not trusted \
         (security.trust_daemon_uid = false)"
    )]
    UntrustedPipeClient,
    /// A token naming a user the config no longer has.
    #[error("authentication failed: user {0:?} does not exist")]
    UnknownUser(String),
    /// The principal lacks `resource:verb`, which `method` requires.
    #[error("principal {principal} lacks {resource}:{verb} (required by {method})")]
    MissingGrant {
        principal: String,
        resource: String,
        verb: String,
        method: String,
    },
}

impl PolicyError {
    /// Whether the caller is nobody (as opposed to somebody lacking a grant).
    pub fn is_unauthenticated(&self) -> bool {
        !matches!(self, PolicyError::MissingGrant { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> PropPath {
        PropPath::parse(p).unwrap()
    }

    #[test]
    fn batch_entries_are_named_by_index_and_prop() {
        let e = ConfigError::Invalid {
            index: Some(2),
            prop: path("wss.port"),
            at: path("wss.port"),
            message: "expected an integer".into(),
        };
        assert_eq!(
            e.to_string(),
            "config entry 2 (wss.port): expected an integer"
        );
        assert_eq!((e.index(), e.prop()), (Some(2), Some("wss.port".into())));
        let e = ConfigError::Refused {
            index: None,
            prop: path("users.bob"),
            reason: "no".into(),
        };
        assert_eq!(e.to_string(), "config property users.bob: no");
        assert_eq!((e.index(), e.prop()), (None, Some("users.bob".into())));
        let e = ConfigError::PropTooLong {
            bytes: 2000,
            limit: 1024,
            index: Some(1),
        };
        assert_eq!((e.index(), e.prop()), (Some(1), None));
        assert_eq!(
            e.to_string(),
            "config entry 1: property path of 2000 bytes is over the limit of 1024 bytes"
        );
        let e = ConfigError::BadQuery("bad".into());
        assert_eq!((e.index(), e.prop()), (None, None));
    }
}
