//! [`FilesError`]: every way the files service refuses or fails (SPEC §8, §9), in its own
//! terms; `wire_error.rs` maps it to the wire. The groups below say which code each gets.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    // Bad requests (-32602).
    #[error("unknown upload {0}")]
    UnknownUpload(String),
    #[error("size_bytes {size} exceeds the {limit}-byte file limit")]
    DeclaredTooLarge { size: u64, limit: usize },
    #[error("sha256 must be 64 hex digits")]
    BadSha256,
    #[error("chunk is {size} bytes; at most {limit} are allowed")]
    ChunkTooLarge { size: usize, limit: usize },
    #[error("offset {offset} leaves a gap: {received} bytes received so far")]
    Gap { offset: u64, received: u64 },
    #[error("chunk ends at byte {end}, past the declared size_bytes {size}")]
    PastSize { end: u64, size: usize },
    #[error("chunk at offset {0} differs from the bytes already accepted there")]
    Conflict(u64),
    #[error("upload incomplete: {received} of {size} bytes received")]
    Incomplete { received: usize, size: usize },
    /// `data {expected, actual}`.
    #[error("sha256 mismatch: declared {expected}, received {actual}; nothing was stored")]
    HashMismatch { expected: String, actual: String },
    #[error("filename is {size} bytes; at most {limit} are allowed")]
    FilenameTooLong { size: usize, limit: usize },
    #[error("file is {size} bytes; at most {limit} are allowed")]
    FileTooLarge { size: usize, limit: usize },

    // Limits (-32013, `data {limit, value}`).
    /// `staged` uploads held, at most `limit`.
    #[error("this connection already stages {staged} uploads")]
    TooManyStaged { staged: usize, limit: usize },
    /// `needed`: the budget in use plus this upload's cost.
    #[error("staged upload budget exhausted; commit or wait for uploads to finish")]
    BudgetExhausted { needed: u64, budget: u64 },
    /// `needed`: what the caller's principal holds plus this upload's cost.
    #[error(
        "this principal's share of the staged upload budget is used up; commit or wait for its uploads to finish"
    )]
    ShareExhausted { needed: u64, share: u64 },

    // The session (-32000, -32003, -32012).
    #[error("session {0} not found")]
    SessionNotFound(String),
    #[error("session {0} was closed or re-created; nothing was stored")]
    SessionGone(String),
    #[error("caller does not own session {0}")]
    NotOwner(String),
    #[error("principal {principal} may not use agent {agent}")]
    AgentNotAllowed { principal: String, agent: String },

    // Storing failed (-32603); nothing was stored.
    #[error("an earlier store for this session has not finished; nothing was stored")]
    Busy,
    #[error("nothing was stored: {0}")]
    TokensHeld(String),
    #[error("storing failed: {0}")]
    WriterLost(String),
    #[error("storing did not finish within {} s", .0.as_secs())]
    WriteTimeout(std::time::Duration),
    #[error("cannot create workspace {}: {source}", path.display())]
    CreateWorkspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a directory (a symlink?); refusing to write through it", .0.display())]
    UploadsNotADirectory(PathBuf),
    #[error("cannot create {}: {source}", path.display())]
    CreateUploads {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    InspectUploads {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The code, message and `data` a [`FilesError`] reaches the client with, as the daemon's
/// `wire_error.rs` gives them (its tests check that mapping against the contract): the
/// tests of this service state what a caller would see, without a wire crate.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Shown {
    pub code: i64,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

#[cfg(test)]
impl From<FilesError> for Shown {
    fn from(e: FilesError) -> Shown {
        use FilesError::*;
        use serde_json::json;
        use zeroclaw_protocol::code::*;
        let message = e.to_string();
        let (code, data) = match e {
            UnknownUpload(_)
            | DeclaredTooLarge { .. }
            | BadSha256
            | ChunkTooLarge { .. }
            | Gap { .. }
            | PastSize { .. }
            | Conflict(_)
            | Incomplete { .. }
            | FilenameTooLong { .. }
            | FileTooLarge { .. } => (INVALID_PARAMS, None),
            HashMismatch { expected, actual } => (
                INVALID_PARAMS,
                Some(json!({"expected": expected, "actual": actual})),
            ),
            TooManyStaged { staged, limit } => (
                LIMIT_EXCEEDED,
                Some(json!({"limit": limit, "value": staged + 1})),
            ),
            BudgetExhausted { needed, budget } => (
                LIMIT_EXCEEDED,
                Some(json!({"limit": budget, "value": needed})),
            ),
            ShareExhausted { needed, share } => (
                LIMIT_EXCEEDED,
                Some(json!({"limit": share, "value": needed})),
            ),
            SessionNotFound(_) | SessionGone(_) => (SESSION_NOT_FOUND, None),
            NotOwner(_) => (NOT_OWNER, None),
            AgentNotAllowed { .. } => (FORBIDDEN, None),
            _ => (INTERNAL_ERROR, None),
        };
        Shown {
            code,
            message,
            data,
        }
    }
}

/// A call the tests expect to be refused, as the client would see the refusal.
#[cfg(test)]
pub(crate) trait Refusal {
    /// The refusal shown; panics when the call succeeded.
    fn refusal(self) -> Shown;
}

#[cfg(test)]
impl<T: std::fmt::Debug> Refusal for Result<T, FilesError> {
    fn refusal(self) -> Shown {
        match self {
            Ok(v) => panic!("expected a refusal, got {v:?}"),
            Err(e) => Shown::from(e),
        }
    }
}
