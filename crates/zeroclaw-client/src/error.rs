//! [`ClientError`]: every way a call to the daemon can fail (the daemon's own error, a
//! timeout, a closed connection, an I/O failure, an answer of the wrong shape).

use zeroclaw_rpc::{ErrorObject, PeerError};

/// Why a call to the daemon failed.
#[derive(Debug)]
pub enum ClientError {
    /// The daemon answered with an error.
    Rpc(ErrorObject),
    Timeout,
    Closed,
    Io(std::io::Error),
    /// The daemon's answer did not have the expected shape.
    Unexpected(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Rpc(e) => write!(f, "{} (code {})", e.message, e.code),
            ClientError::Timeout => f.write_str("the daemon did not answer in time"),
            ClientError::Closed => f.write_str("the daemon closed the connection"),
            ClientError::Io(e) => write!(f, "{e}"),
            ClientError::Unexpected(why) => write!(f, "unexpected answer from the daemon: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<PeerError> for ClientError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Remote(e) => ClientError::Rpc(e),
            PeerError::Timeout => ClientError::Timeout,
            PeerError::Closed => ClientError::Closed,
        }
    }
}
