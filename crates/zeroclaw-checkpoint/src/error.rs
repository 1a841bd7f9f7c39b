//! Errors of the checkpoint store ([`Error`]), and the helper that names the path an I/O
//! error happened on. A leaf: every other module returns these.

use std::fmt::Display;

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file system call failed; `context` says which and on what.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Stored checkpoint data does not read back as written (a damaged manifest, record or
    /// object).
    #[error("damaged checkpoint data: {0}")]
    Damaged(String),
    /// No checkpoint was recorded for this turn of this session.
    #[error("no file checkpoint of turn {0}")]
    UnknownTurn(String),
    /// The session's checkpoints were deleted.
    #[error("the checkpoints of this session were deleted")]
    Deleted,
}

pub type Result<T> = std::result::Result<T, Error>;

/// Adds the operation and path to an I/O error.
pub(crate) trait IoContext<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            context: what(),
            source,
        })
    }
}

/// An I/O error with its context, for the places that build one by hand.
pub(crate) fn io_error(context: impl Display, source: std::io::Error) -> Error {
    Error::Io {
        context: context.to_string(),
        source,
    }
}

impl Error {
    /// Whether this is an I/O error of kind `kind`.
    pub fn is_io(&self, kind: std::io::ErrorKind) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == kind)
    }
}
