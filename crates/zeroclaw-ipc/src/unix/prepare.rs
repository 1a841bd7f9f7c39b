//! Steps 1–3 of the Unix bind sequence (SPEC §2): the path-length check, the socket's
//! parent directory, the `<socket>.lock` lock file, and clearing a stale socket.
//!
//! Invariants: nothing that is not a socket is ever unlinked; the lock file is never opened
//! through a symlink; a shared parent is only used if other users cannot replace our files
//! in it (sticky bit) or cannot write to it at all.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::IpcError;

/// Size of `sockaddr_un.sun_path` on this platform (108 on Linux, 104 on macOS/BSD).
/// A path must be strictly shorter, leaving room for the terminating NUL.
pub const SUN_PATH_MAX: usize =
    std::mem::size_of::<libc::sockaddr_un>() - std::mem::offset_of!(libc::sockaddr_un, sun_path);

/// The sticky bit (`S_ISVTX`), as a `u32` on every Unix (`mode_t` is 16 bits on macOS).
const STICKY: u32 = 0o1000;

/// How long probing an existing socket may take before it counts as alive.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Who can reach into the socket's parent directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParentKind {
    /// Owned by our euid, no group/other permission bits: nobody else can reach the socket
    /// while it is being created.
    Private,
    /// Others can traverse it (and, if sticky, create entries in it).
    Shared,
}

#[allow(unsafe_code)]
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a socket path that does not fit in `sun_path` (with its NUL).
pub fn check_socket_path_len(path: &Path) -> Result<(), IpcError> {
    let len = path.as_os_str().len();
    if len >= SUN_PATH_MAX {
        return Err(IpcError::PathTooLong {
            path: path.to_path_buf(),
            len,
            limit: SUN_PATH_MAX,
        });
    }
    Ok(())
}

/// Step 1: creates the parent 0700 if missing, tightens it to 0700 if asked (the default
/// data dir), otherwise accepts it only if sticky or ours and not group/other-writable.
pub(crate) fn prepare_parent(parent: &Path, tighten: bool) -> Result<ParentKind, IpcError> {
    let created = match fs::symlink_metadata(parent) {
        Ok(_) => false,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(IpcError::io("create directory", parent))?;
            true
        }
        Err(e) => return Err(IpcError::io("inspect", parent)(e)),
    };
    let unsafe_parent = |reason: String| IpcError::UnsafeParent {
        path: parent.to_path_buf(),
        reason,
    };
    let meta = fs::metadata(parent).map_err(IpcError::io("inspect", parent))?;
    if !meta.is_dir() {
        return Err(unsafe_parent("it is not a directory".into()));
    }
    let me = euid();
    let mode = meta.mode() & 0o7777;
    if created || tighten {
        // Re-checked even when we just created it: a concurrent creator may have won.
        if meta.uid() != me {
            return Err(unsafe_parent(format!(
                "it is owned by uid {}, not by this daemon's uid {me}",
                meta.uid()
            )));
        }
        if mode != 0o700 {
            fs::set_permissions(parent, Permissions::from_mode(0o700))
                .map_err(IpcError::io("set mode 0700 on", parent))?;
        }
        return Ok(ParentKind::Private);
    }
    if meta.uid() == me && mode & 0o022 == 0 {
        return Ok(if mode & 0o077 == 0 {
            ParentKind::Private
        } else {
            ParentKind::Shared
        });
    }
    if mode & STICKY != 0 {
        return Ok(ParentKind::Shared);
    }
    Err(unsafe_parent(if meta.uid() == me {
        format!("it is group- or other-writable (mode {mode:o}) without the sticky bit")
    } else {
        format!(
            "it is owned by uid {}, not by this daemon's uid {me}, and has no sticky bit",
            meta.uid()
        )
    }))
}

/// `<socket>.lock`.
pub fn lock_path(socket: &Path) -> PathBuf {
    let mut s = socket.as_os_str().to_os_string();
    s.push(".lock");
    PathBuf::from(s)
}

/// Step 2: opens (creating 0600, never through a symlink) and exclusively locks the lock
/// file. The returned `File` holds the lock until it is dropped.
pub(crate) fn take_lock(lock: &Path, socket: &Path) -> Result<File, IpcError> {
    let refuse = |reason: String| IpcError::UnsafeLockFile {
        path: lock.to_path_buf(),
        reason,
    };
    // O_NONBLOCK: opening a FIFO planted at the lock path must not hang the daemon.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(lock)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                refuse("it is a symbolic link".into())
            } else {
                IpcError::io("open lock file", lock)(e)
            }
        })?;
    let meta = file
        .metadata()
        .map_err(IpcError::io("inspect lock file", lock))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    let me = euid();
    if meta.uid() != me {
        return Err(refuse(format!(
            "it is owned by uid {}, not by this daemon's uid {me}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(0o600))
            .map_err(IpcError::io("set mode 0600 on", lock))?;
    }
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(IpcError::Locked {
            path: socket.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(e)) => Err(IpcError::io("lock", lock)(e)),
    }
}

/// Outcome of connecting to an existing socket file.
enum Probe {
    Alive,
    Refused,
    Gone,
    Failed(io::Error),
}

fn probe(path: &Path) -> Probe {
    // std's connect has no timeout (it can block while a live server's backlog is full),
    // so it runs on a helper thread; no answer in time means someone is there.
    let (tx, rx) = mpsc::channel();
    let target = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("zeroclaw-ipc-probe".into())
        .spawn(move || {
            let _ = tx.send(UnixStream::connect(&target).map(drop));
        });
    if let Err(e) = spawned {
        return Probe::Failed(e);
    }
    match rx.recv_timeout(PROBE_TIMEOUT) {
        Ok(Ok(())) | Err(mpsc::RecvTimeoutError::Timeout) => Probe::Alive,
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Probe::Refused,
        Ok(Err(e)) if e.kind() == io::ErrorKind::NotFound => Probe::Gone,
        Ok(Err(e)) => Probe::Failed(e),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Probe::Failed(io::Error::other("probe thread ended without an answer"))
        }
    }
}

/// Step 3: whatever sits at the socket path must be a dead socket, which is removed.
pub(crate) fn clear_stale(path: &Path) -> Result<(), IpcError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IpcError::io("inspect", path)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(IpcError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    match probe(path) {
        Probe::Alive => Err(IpcError::AlreadyServing {
            path: path.to_path_buf(),
        }),
        Probe::Gone => Ok(()),
        Probe::Failed(e) => Err(IpcError::io("connect to existing socket", path)(e)),
        Probe::Refused => {
            // Unlink only the very socket that refused, not something swapped in since.
            match fs::symlink_metadata(path) {
                Ok(now) if now.dev() == meta.dev() && now.ino() == meta.ino() => {}
                Ok(_) => {
                    return Err(IpcError::Io {
                        op: "replace stale socket",
                        path: path.to_path_buf(),
                        source: io::Error::other("it changed while being checked"),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(IpcError::io("inspect", path)(e)),
            }
            tracing::info!(path = %path.display(), "removing stale socket");
            match fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(IpcError::io("remove stale socket", path)(e)),
            }
        }
    }
}
