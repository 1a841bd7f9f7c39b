//! `IpcError`: every way resolving directories, naming the endpoint or binding it can fail.
//!
//! Messages are lowercase, name the path or variable involved, and are meant to be printed
//! as-is by the daemon before it exits non-zero.

use std::io;
use std::path::PathBuf;

/// Errors from directory resolution, endpoint naming and binding the local endpoint.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    /// An environment variable or flag that names a directory was set to an empty value.
    #[error("{name} is set but empty; give it a directory or unset it")]
    EmptyValue {
        /// The variable or flag, e.g. `ZEROCLAW_CONFIG_DIR` or `--config-dir`.
        name: &'static str,
    },
    /// An environment variable holds bytes that are not valid Unicode.
    #[error("{name} is not valid unicode")]
    NotUnicode {
        /// The variable.
        name: &'static str,
    },
    /// No home directory to put the default `~/.zeroclaw` in.
    #[error("cannot find the home directory; set HOME or ZEROCLAW_CONFIG_DIR or pass --config-dir")]
    NoHome,
    /// A path could not be made absolute (the current directory is unavailable).
    #[error("cannot make {path} absolute: {source}")]
    Absolute {
        /// The relative path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The socket path does not fit in `sockaddr_un.sun_path`.
    #[error(
        "socket path {path} is {len} bytes; it must be shorter than {limit} bytes on this platform"
    )]
    PathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The `sun_path` size (108 on Linux, 104 on macOS and the BSDs).
        limit: usize,
    },
    /// The private staging path used to create the socket without a permission window is
    /// too long, although the socket path itself would fit.
    #[error(
        "socket path {path} is too close to the {limit}-byte limit to be created safely in \
         its shared parent directory; use a shorter path or a private (0700) directory"
    )]
    StagingPathTooLong {
        /// The socket path.
        path: PathBuf,
        /// The `sun_path` size.
        limit: usize,
    },
    /// The socket path has no parent directory.
    #[error("socket path {path} has no parent directory")]
    NoParent {
        /// The socket path.
        path: PathBuf,
    },
    /// The socket's parent directory is not safe to put a socket in.
    #[error("refusing to use directory {path} for the socket: {reason}")]
    UnsafeParent {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The lock file exists but is not something this daemon may lock.
    #[error("refusing to use lock file {path}: {reason}")]
    UnsafeLockFile {
        /// The lock file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Another process holds the endpoint's lock (Unix) or owns the pipe name (Windows).
    #[error("another daemon owns {path}")]
    Locked {
        /// The socket path or pipe name.
        path: PathBuf,
    },
    /// Something accepted a connection at the socket path.
    #[error("already serving at {path}")]
    AlreadyServing {
        /// The socket path.
        path: PathBuf,
    },
    /// A file that is not a socket sits at the socket path; it is never removed.
    #[error("refusing to replace {path}: it exists and is not a socket")]
    NotASocket {
        /// The socket path.
        path: PathBuf,
    },
    /// `bind` was called outside a tokio runtime.
    #[error("binding {path} needs a running tokio runtime")]
    NoRuntime {
        /// The socket path or pipe name.
        path: PathBuf,
    },
    /// An operating-system call failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What was being done, e.g. "create directory".
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

impl IpcError {
    /// Builds an [`IpcError::Io`]; handy in `map_err`.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| IpcError::Io { op, path, source }
    }
}
