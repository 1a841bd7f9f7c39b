//! zeroclaw-ipc: the local IPC endpoint shared by the daemon and its command-line client.
//!
//! - [`Dirs`]: config and data directories (SPEC §2);
//! - [`endpoint_path`]: the socket path or pipe name for a data dir;
//! - [`LocalListener`] / [`connect`]: the Unix socket (or Windows named pipe) endpoint,
//!   yielding [`LocalConnection`]s split into read and write halves with a [`PeerInfo`]
//!   audit label (SPEC §4, §11), and on an accepted Unix socket a [`WriteNow`] handle;
//! - [`IpcError`]: everything that can go wrong, with messages naming paths.
//!
//! Framing, JSON-RPC and authorization live elsewhere; this crate only moves bytes.
//!
//! Unsafe code is denied but for two OS calls std does not wrap, each `#[allow]`ed where it
//! is made: `geteuid` (the owner the socket directory must have, on Unix) and
//! `GetNamedPipeClientProcessId` (the peer's pid for the audit label, on Windows).

#![deny(unsafe_code)]

mod connection;
mod dirs;
mod endpoint;
mod error;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

pub use connection::{LocalConnection, PeerInfo, WriteNow};
pub use dirs::{DEFAULT_DIR_NAME, Dirs, ENV_CONFIG_DIR, ENV_DATA_DIR};
pub use endpoint::{
    ENV_SOCKET, SOCKET_FILE_NAME, default_endpoint, endpoint_hash, endpoint_path,
    endpoint_path_with, pipe_name,
};
pub use error::IpcError;
#[cfg(unix)]
pub use unix::{
    BindOptions, LocalListener, SUN_PATH_MAX, check_socket_path_len, connect, lock_path,
};
#[cfg(windows)]
pub use windows::{BindOptions, LocalListener, connect};
