//! The Unix-domain-socket endpoint: `LocalListener` (daemon side) and `connect` (client
//! side).
//!
//! [`LocalListener::bind_with`] runs the SPEC §2 sequence in order: path length, parent
//! directory ([`prepare`]), exclusive lock on `<socket>.lock`, stale-socket check, race-free
//! creation of a 0600 socket ([`create`]). The listener owns the lock for its whole life;
//! dropping it unlinks the socket only if the path still holds the inode it created.
//!
//! An accepted stream is split by [`shared`], which adds a non-blocking write handle on the
//! same socket ([`crate::WriteNow`]); a dialled one by tokio's owned halves.

mod create;
mod identity;
mod prepare;
mod shared;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

use identity::SocketIdentity;

pub use prepare::{SUN_PATH_MAX, check_socket_path_len, lock_path};

use crate::{Dirs, IpcError, LocalConnection, PeerInfo};

/// Options for [`LocalListener::bind_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// Set when the socket's parent is the daemon's own data dir: an existing parent is then
    /// tightened to 0700 (it must be owned by our euid) instead of merely checked.
    pub tighten_parent: bool,
}

impl BindOptions {
    /// Tightens the parent exactly when `path` sits directly in `dirs.data_dir`.
    pub fn for_endpoint(dirs: &Dirs, path: &Path) -> BindOptions {
        BindOptions {
            tighten_parent: path.parent() == Some(dirs.data_dir.as_path()),
        }
    }
}

/// The socket file we created; unlinked on drop only if the path still names it.
#[derive(Debug)]
struct OwnedSocketFile {
    path: PathBuf,
    identity: SocketIdentity,
}

impl Drop for OwnedSocketFile {
    fn drop(&mut self) {
        // A later daemon (or anyone) may have replaced the path; leave theirs alone. The
        // check-then-unlink gap is only reachable by someone who can write the parent.
        if self.identity.still_at(&self.path) {
            if let Err(e) = fs::remove_file(&self.path) {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove socket");
            }
        } else {
            tracing::debug!(path = %self.path.display(), "socket path replaced; left as is");
        }
    }
}

/// A bound, locked Unix socket accepting local connections.
///
/// Field order is drop order: stop listening, unlink our socket, then release the lock.
/// The lock file itself is left on disk: unlinking it would let a new daemon lock a fresh
/// inode at the same name while another still held the old one, giving two owners.
#[derive(Debug)]
pub struct LocalListener {
    listener: UnixListener,
    socket: OwnedSocketFile,
    _lock: File,
}

impl LocalListener {
    /// Binds `path` with default options (an existing parent is checked, not tightened).
    ///
    /// Must be called from within a tokio runtime (the listener registers with its
    /// reactor); outside one it returns [`IpcError::NoRuntime`].
    pub fn bind(path: &Path) -> Result<LocalListener, IpcError> {
        LocalListener::bind_with(path, BindOptions::default())
    }

    /// Binds `path` following SPEC §2 steps 1–4. Must be called within a tokio runtime.
    pub fn bind_with(path: &Path, options: BindOptions) -> Result<LocalListener, IpcError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(IpcError::NoRuntime {
                path: path.to_path_buf(),
            });
        }
        let path = crate::dirs::absolute(path)?;
        check_socket_path_len(&path)?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => return Err(IpcError::NoParent { path }),
        };
        let kind = prepare::prepare_parent(&parent, options.tighten_parent)?;
        let lock = prepare::take_lock(&lock_path(&path), &path)?;
        prepare::clear_stale(&path)?;
        let created = create::create_socket(&path, &parent, kind)?;
        let socket = OwnedSocketFile {
            path,
            identity: created.identity,
        };
        created
            .listener
            .set_nonblocking(true)
            .map_err(IpcError::io("configure", &socket.path))?;
        let listener = UnixListener::from_std(created.listener)
            .map_err(IpcError::io("register with the runtime", &socket.path))?;
        tracing::debug!(path = %socket.path.display(), "listening");
        Ok(LocalListener {
            listener,
            socket,
            _lock: lock,
        })
    }

    /// The absolute socket path.
    pub fn path(&self) -> &Path {
        &self.socket.path
    }

    /// Waits for the next connection and identifies the peer from SO_PEERCRED
    /// (`unix:unknown` if the credentials cannot be read).
    ///
    /// An error concerns that one attempt (e.g. `EMFILE`); the listener stays usable, so an
    /// accept loop should log it, back off briefly and call `accept` again.
    pub async fn accept(&self) -> io::Result<LocalConnection> {
        let (stream, _addr) = self.listener.accept().await?;
        let peer = match stream.peer_cred() {
            Ok(cred) => PeerInfo::from_unix_creds(
                cred.pid().and_then(|pid| u32::try_from(pid).ok()),
                Some(cred.uid()),
            ),
            Err(_) => PeerInfo::unix_unknown(),
        };
        let (reader, writer, write_now) = shared::split_shared(stream);
        Ok(LocalConnection {
            reader: Box::new(reader),
            writer: Box::new(writer),
            peer,
            write_now: Some(write_now),
        })
    }
}

/// Connects to a daemon's socket (client side). The peer label is `unix:server`; `pid` and
/// `uid` are the server's credentials when the OS reports them.
pub async fn connect(path: &Path) -> io::Result<LocalConnection> {
    let stream = UnixStream::connect(path).await?;
    let (pid, uid) = match stream.peer_cred() {
        Ok(cred) => (
            cred.pid().and_then(|pid| u32::try_from(pid).ok()),
            Some(cred.uid()),
        ),
        Err(_) => (None, None),
    };
    let peer = PeerInfo {
        pid,
        uid,
        label: "unix:server".to_string(),
    };
    Ok(split(stream, peer))
}

fn split(stream: UnixStream, peer: PeerInfo) -> LocalConnection {
    let (reader, writer) = stream.into_split();
    LocalConnection {
        reader: Box::new(reader),
        writer: Box::new(writer),
        peer,
        write_now: None,
    }
}
