//! The endpoint name: which socket path (Unix) or pipe name (Windows) a daemon serves and a
//! client connects to (SPEC §2).
//!
//! `ZEROCLAW_SOCKET` (trimmed; empty means unset) wins on every platform. Otherwise each data
//! dir has its own endpoint: `<data dir>/daemon.sock` on Unix, and on Windows
//! `\\.\pipe\zeroclaw-<h>` where `<h>` is the first 16 hex digits of the SHA-256 of the
//! absolute data-dir path. The hash is computed the same way on every platform so it can be
//! tested anywhere and stays stable across builds.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Dirs, IpcError};

/// Environment variable overriding the endpoint path or pipe name.
pub const ENV_SOCKET: &str = "ZEROCLAW_SOCKET";
/// File name of the default socket inside the data dir.
pub const SOCKET_FILE_NAME: &str = "daemon.sock";

/// The endpoint for `dirs`, honouring the real `ZEROCLAW_SOCKET`.
pub fn endpoint_path(dirs: &Dirs) -> Result<PathBuf, IpcError> {
    if let Some(value) = std::env::var_os(ENV_SOCKET)
        && value.to_str().is_none()
    {
        return Err(IpcError::NotUnicode { name: ENV_SOCKET });
    }
    endpoint_path_with(dirs, &|name| std::env::var(name).ok())
}

/// The endpoint for `dirs` with the environment given as a function (pure, for tests).
///
/// A relative `ZEROCLAW_SOCKET` on Unix is made absolute against the current directory.
pub fn endpoint_path_with(
    dirs: &Dirs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, IpcError> {
    if let Some(value) = env(ENV_SOCKET) {
        let value = value.trim();
        if !value.is_empty() {
            return explicit_endpoint(value);
        }
    }
    Ok(default_endpoint(dirs))
}

/// The endpoint a daemon uses for `dirs` when `ZEROCLAW_SOCKET` is not set.
pub fn default_endpoint(dirs: &Dirs) -> PathBuf {
    #[cfg(windows)]
    {
        PathBuf::from(pipe_name(&dirs.data_dir))
    }
    #[cfg(not(windows))]
    {
        dirs.data_dir.join(SOCKET_FILE_NAME)
    }
}

#[cfg(not(windows))]
fn explicit_endpoint(value: &str) -> Result<PathBuf, IpcError> {
    crate::dirs::absolute(Path::new(value))
}

#[cfg(windows)]
fn explicit_endpoint(value: &str) -> Result<PathBuf, IpcError> {
    // A pipe name (`\\.\pipe\...`) is used verbatim.
    Ok(PathBuf::from(value))
}

/// `\\.\pipe\zeroclaw-<h>` for a data dir; see [`endpoint_hash`].
pub fn pipe_name(data_dir: &Path) -> String {
    format!(r"\\.\pipe\zeroclaw-{}", endpoint_hash(data_dir))
}

/// First 16 lowercase hex digits of SHA-256 over the UTF-8 bytes of the (absolute) data-dir
/// path. Non-unicode parts are replaced by U+FFFD first, identically on every platform.
pub fn endpoint_hash(data_dir: &Path) -> String {
    let digest = Sha256::digest(data_dir.to_string_lossy().as_bytes());
    let mut hex = hex::encode(digest);
    hex.truncate(16);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> Dirs {
        Dirs::from_config_dir(Path::new("/home/u/.zeroclaw")).unwrap()
    }

    #[test]
    fn hash_is_stable() {
        // Fixed value: sha256("/home/u/.zeroclaw/data") truncated, computed once.
        let h = endpoint_hash(Path::new("/home/u/.zeroclaw/data"));
        assert_eq!(h, "df698a322aab2314");
        assert_eq!(h.len(), 16);
        assert_eq!(
            pipe_name(Path::new("/home/u/.zeroclaw/data")),
            format!(r"\\.\pipe\zeroclaw-{h}")
        );
        assert_ne!(h, endpoint_hash(Path::new("/home/v/.zeroclaw/data")));
    }

    #[test]
    fn hash_of_a_windows_path_is_stable() {
        let h = endpoint_hash(Path::new(r"C:\Users\u\.zeroclaw\data"));
        assert_eq!(h, "ec1e6dbfaa850c5e");
    }

    #[test]
    fn env_socket_wins_trimmed() {
        let env = |k: &str| (k == ENV_SOCKET).then(|| "  /run/zc.sock \n".to_string());
        assert_eq!(
            endpoint_path_with(&dirs(), &env).unwrap(),
            PathBuf::from("/run/zc.sock")
        );
    }

    #[test]
    fn empty_env_socket_is_unset() {
        for v in ["", "   "] {
            let env = |k: &str| (k == ENV_SOCKET).then(|| v.to_string());
            assert_eq!(
                endpoint_path_with(&dirs(), &env).unwrap(),
                default_endpoint(&dirs())
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn default_is_daemon_sock_in_data_dir() {
        let p = endpoint_path_with(&dirs(), &|_| None).unwrap();
        assert_eq!(p, PathBuf::from("/home/u/.zeroclaw/data/daemon.sock"));
    }

    #[cfg(unix)]
    #[test]
    fn relative_env_socket_is_made_absolute() {
        let env = |k: &str| (k == ENV_SOCKET).then(|| "x.sock".to_string());
        let p = endpoint_path_with(&dirs(), &env).unwrap();
        assert_eq!(p, std::env::current_dir().unwrap().join("x.sock"));
    }
}
