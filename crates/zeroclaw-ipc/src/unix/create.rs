//! Step 4 of the Unix bind sequence: create the socket file with mode 0600 and no moment at
//! which anyone else could connect to it with wider permissions, and record its inode.
//!
//! Why not `umask(0o177)` around `bind`: the umask is process-wide, so while it is set any
//! other thread creating a file or directory (config writes, SQLite, workspaces) would get
//! the narrowed mode too — a mutex only orders our own binds, not theirs. Instead:
//!
//! - Private parent (ours, no group/other bits, the normal case): nobody else can even
//!   traverse to the socket, so `bind` then `chmod 0600` has no observable window.
//! - Shared parent (`/tmp`-like, or ours but traversable): bind in a fresh 0700 staging
//!   directory inside the parent, `chmod 0600` there, then `link` it to the real name. The
//!   socket appears at its public path already 0600; `link` never replaces an existing
//!   entry (unlike `rename`). The staging name and directory are removed afterwards.

use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use super::identity::SocketIdentity;
use super::prepare::{ParentKind, SUN_PATH_MAX};
use crate::IpcError;

/// How many staging directory names to try before giving up.
const STAGING_ATTEMPTS: u32 = 100;

/// A freshly created socket file and its listener.
pub(crate) struct Created {
    pub listener: UnixListener,
    pub identity: SocketIdentity,
}

pub(crate) fn create_socket(
    path: &Path,
    parent: &Path,
    kind: ParentKind,
) -> Result<Created, IpcError> {
    let listener = match kind {
        ParentKind::Private => {
            let listener = UnixListener::bind(path).map_err(IpcError::io("bind", path))?;
            if let Err(e) = fs::set_permissions(path, Permissions::from_mode(0o600)) {
                let _ = fs::remove_file(path);
                return Err(IpcError::io("set mode 0600 on", path)(e));
            }
            listener
        }
        ParentKind::Shared => bind_staged(path, parent)?,
    };
    let identity =
        SocketIdentity::capture(path).map_err(IpcError::io("inspect new socket", path))?;
    Ok(Created { listener, identity })
}

/// Removes the staging socket and directory however `bind_staged` ends.
struct Staging {
    dir: PathBuf,
    socket: PathBuf,
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.socket);
        let _ = fs::remove_dir(&self.dir);
    }
}

fn bind_staged(path: &Path, parent: &Path) -> Result<UnixListener, IpcError> {
    let staging = make_staging_dir(path, parent)?;
    let listener =
        UnixListener::bind(&staging.socket).map_err(IpcError::io("bind", &staging.socket))?;
    fs::set_permissions(&staging.socket, Permissions::from_mode(0o600))
        .map_err(IpcError::io("set mode 0600 on", &staging.socket))?;
    fs::hard_link(&staging.socket, path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            IpcError::Io {
                op: "create socket",
                path: path.to_path_buf(),
                source: io::Error::other("another file appeared at this path while binding"),
            }
        } else {
            IpcError::io("link socket to", path)(e)
        }
    })?;
    Ok(listener)
}

fn make_staging_dir(path: &Path, parent: &Path) -> Result<Staging, IpcError> {
    for n in 0..STAGING_ATTEMPTS {
        // Short names: the staging socket must fit in sun_path as well.
        let dir = parent.join(format!(".zc{n}"));
        let socket = dir.join("s");
        if socket.as_os_str().len() >= SUN_PATH_MAX {
            return Err(IpcError::StagingPathTooLong {
                path: path.to_path_buf(),
                limit: SUN_PATH_MAX,
            });
        }
        match DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let staging = Staging { dir, socket };
                // The umask may have narrowed it; it must stay usable and private.
                fs::set_permissions(&staging.dir, Permissions::from_mode(0o700))
                    .map_err(IpcError::io("set mode 0700 on", &staging.dir))?;
                return Ok(staging);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(IpcError::io("create directory", &dir)(e)),
        }
    }
    Err(IpcError::Io {
        op: "create a staging directory in",
        path: parent.to_path_buf(),
        source: io::Error::other(format!("all {STAGING_ATTEMPTS} names .zc0 … are taken")),
    })
}
