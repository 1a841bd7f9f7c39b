//! [`FilesError`]: every way the files service refuses or fails, and its one mapping to a
//! JSON-RPC error (SPEC §8, §9): codes, messages and `data` as the contract names them.

use std::path::PathBuf;

use serde_json::json;
use zeroclaw_rpc::{ErrorObject, code};

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

    // The session (-32000, -32003, -32012).
    #[error("session {0} not found")]
    SessionNotFound(String),
    #[error("session {0} was closed or re-created; nothing was stored")]
    SessionGone(String),
    #[error("caller does not own session {0}")]
    NotOwner(String),
    #[error("principal {principal} may not use agent {agent}")]
    AgentNotAllowed { principal: String, agent: String },
    /// The policy or the pairing tokens refused the caller (their own error, unchanged).
    #[error("{0}")]
    Denied(ErrorObject),

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

/// The one mapping of files errors to the wire.
impl From<FilesError> for ErrorObject {
    fn from(e: FilesError) -> ErrorObject {
        use FilesError::*;
        let message = e.to_string();
        match e {
            UnknownUpload(_)
            | DeclaredTooLarge { .. }
            | BadSha256
            | ChunkTooLarge { .. }
            | Gap { .. }
            | PastSize { .. }
            | Conflict(_)
            | Incomplete { .. }
            | FilenameTooLong { .. }
            | FileTooLarge { .. } => ErrorObject::invalid_params(message),
            HashMismatch { expected, actual } => ErrorObject::invalid_params(message)
                .with_data(json!({"expected": expected, "actual": actual})),
            TooManyStaged { staged, limit } => {
                ErrorObject::limit_exceeded(message, limit as u64, staged as u64 + 1)
            }
            BudgetExhausted { needed, budget } => {
                ErrorObject::limit_exceeded(message, budget, needed)
            }
            SessionNotFound(_) | SessionGone(_) => ErrorObject::session_not_found(message),
            NotOwner(_) => ErrorObject::new(code::NOT_OWNER, message),
            AgentNotAllowed { .. } => ErrorObject::forbidden(message),
            Denied(e) => e,
            Busy
            | TokensHeld(_)
            | WriterLost(_)
            | WriteTimeout(_)
            | CreateWorkspace { .. }
            | UploadsNotADirectory(_)
            | CreateUploads { .. }
            | InspectUploads { .. }
            | Write { .. } => ErrorObject::internal(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_messages_and_data_are_the_contracts() {
        let e = ErrorObject::from(FilesError::NotOwner("s1".into()));
        assert_eq!(e, ErrorObject::not_owner("s1"));
        let e = ErrorObject::from(FilesError::TooManyStaged {
            staged: 4,
            limit: 4,
        });
        assert_eq!(
            (e.code, e.data),
            (code::LIMIT_EXCEEDED, Some(json!({"limit": 4, "value": 5})))
        );
        let e = ErrorObject::from(FilesError::HashMismatch {
            expected: "a".into(),
            actual: "b".into(),
        });
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert_eq!(e.data, Some(json!({"expected": "a", "actual": "b"})));
        let denied = ErrorObject::forbidden("no").with_data(json!({"resource": "files"}));
        assert_eq!(
            ErrorObject::from(FilesError::Denied(denied.clone())),
            denied
        );
        let e = ErrorObject::from(FilesError::WriteTimeout(std::time::Duration::from_secs(30)));
        assert_eq!(
            (e.code, e.message.as_str()),
            (code::INTERNAL_ERROR, "storing did not finish within 30 s")
        );
    }
}
