//! The Windows named-pipe endpoint: `LocalListener` (daemon side) and `connect` (client
//! side), with the same API as the Unix socket endpoint.
//!
//! The first instance is created with `first_pipe_instance(true)`, so binding fails if any
//! other process already owns the name ("another daemon owns <name>"). Remote clients are
//! rejected and the pipe keeps the default ACL: full control for the creating user, SYSTEM
//! and administrators, read-only for Everyone. Only a client that can write, so one running
//! as the daemon's own user (or a more privileged one), can send a frame; a read-only opener
//! can never get past `initialize`. The client's process id, from
//! `GetNamedPipeClientProcessId`, labels it `pipe:<pid>`.
//!
//! One server instance is always pending: when it gets a client, the next instance is
//! created before the connected one is handed over, so the name never disappears (which
//! would let another process claim it).

use std::fmt;
use std::io;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeServer, ServerOptions};
use tokio::sync::Mutex;
use windows_sys::Win32::System::Pipes::GetNamedPipeClientProcessId;

use crate::{Dirs, IpcError, LocalConnection, PeerInfo};

/// `ERROR_ACCESS_DENIED`: the first-instance flag was refused, the name is taken.
const ERROR_ACCESS_DENIED: i32 = 5;
/// `ERROR_PIPE_BUSY`: every server instance is busy; the client retries briefly.
const ERROR_PIPE_BUSY: i32 = 231;
/// How long `connect` keeps retrying a busy pipe.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Options for [`LocalListener::bind_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// Ignored on Windows (kept for a platform-independent call site).
    pub tighten_parent: bool,
    /// A file held open without sharing while the listener lives: a second daemon on the
    /// same data dir is refused even where the first-instance flag is not enforced (Wine).
    pub lock: Option<PathBuf>,
}

impl BindOptions {
    /// The data dir's `daemon.lock` guards the pipe too.
    pub fn for_endpoint(dirs: &Dirs, _path: &Path) -> BindOptions {
        BindOptions {
            tighten_parent: false,
            lock: Some(dirs.data_dir.join(LOCK_FILE_NAME)),
        }
    }
}

/// The lock file in the data dir.
const LOCK_FILE_NAME: &str = "daemon.lock";
/// `ERROR_SHARING_VIOLATION`: another daemon holds the lock file open.
const ERROR_SHARING_VIOLATION: i32 = 32;

/// Opens `lock` with no sharing: fails with "another daemon owns <pipe>" while another
/// process has it open.
fn take_lock(lock: &Path, pipe: &Path) -> Result<std::fs::File, IpcError> {
    use std::os::windows::fs::OpenOptionsExt;
    if let Some(parent) = lock.parent() {
        std::fs::create_dir_all(parent).map_err(IpcError::io("create directory", parent))?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .share_mode(0)
        .open(lock)
        .map_err(|e| {
            if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION) {
                IpcError::Locked {
                    path: pipe.to_path_buf(),
                }
            } else {
                IpcError::io("open lock file", lock)(e)
            }
        })
}

/// A named pipe accepting local connections.
pub struct LocalListener {
    name: PathBuf,
    pending: Mutex<NamedPipeServer>,
    /// Held (unshared) for the listener's lifetime; see [`BindOptions::lock`].
    _lock: Option<std::fs::File>,
}

impl fmt::Debug for LocalListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalListener")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn server_instance(name: &Path, first: bool) -> io::Result<NamedPipeServer> {
    ServerOptions::new()
        .first_pipe_instance(first)
        .reject_remote_clients(true)
        .create(name)
}

impl LocalListener {
    /// Creates the first instance of pipe `path`. Must be called within a tokio runtime.
    pub fn bind(path: &Path) -> Result<LocalListener, IpcError> {
        LocalListener::bind_with(path, BindOptions::default())
    }

    /// Same as [`LocalListener::bind`], holding `options.lock` first when given.
    pub fn bind_with(path: &Path, options: BindOptions) -> Result<LocalListener, IpcError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(IpcError::NoRuntime {
                path: path.to_path_buf(),
            });
        }
        let lock = match &options.lock {
            Some(lock) => Some(take_lock(lock, path)?),
            None => None,
        };
        let first = server_instance(path, true).map_err(|e| {
            if e.raw_os_error() == Some(ERROR_ACCESS_DENIED) {
                IpcError::Locked {
                    path: path.to_path_buf(),
                }
            } else {
                IpcError::io("create pipe", path)(e)
            }
        })?;
        Ok(LocalListener {
            name: path.to_path_buf(),
            pending: Mutex::new(first),
            _lock: lock,
        })
    }

    /// The pipe name.
    pub fn path(&self) -> &Path {
        &self.name
    }

    /// Waits for the next client. Peer label `pipe:<client pid>` (`pipe:local` if Windows
    /// does not say).
    pub async fn accept(&self) -> io::Result<LocalConnection> {
        let mut pending = self.pending.lock().await;
        if let Err(e) = pending.connect().await {
            // This instance is unusable now; put a fresh one in its place.
            *pending = server_instance(&self.name, false)?;
            return Err(e);
        }
        let next = server_instance(&self.name, false)?;
        let connected = std::mem::replace(&mut *pending, next);
        drop(pending);
        let peer = PeerInfo::pipe_client(client_pid(&connected));
        let (reader, writer) = tokio::io::split(connected);
        Ok(LocalConnection {
            reader: Box::new(reader),
            writer: Box::new(writer),
            peer,
            write_now: None,
        })
    }
}

/// The process id of the client connected to `pipe`, when Windows reports it.
#[allow(unsafe_code)]
fn client_pid(pipe: &NamedPipeServer) -> Option<u32> {
    let mut pid = 0u32;
    // SAFETY: the handle is open for the lifetime of `pipe`; `pid` is a valid out pointer.
    let ok = unsafe { GetNamedPipeClientProcessId(pipe.as_raw_handle(), &mut pid) };
    (ok != 0 && pid != 0).then_some(pid)
}

/// Connects to a daemon's pipe (client side), retrying briefly while it is busy.
pub async fn connect(path: &Path) -> io::Result<LocalConnection> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let client = loop {
        match ClientOptions::new().open(path) {
            Ok(client) => break client,
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) && Instant::now() < deadline => {}
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (reader, writer) = tokio::io::split(client);
    Ok(LocalConnection {
        reader: Box::new(reader),
        writer: Box::new(writer),
        peer: PeerInfo {
            pid: None,
            uid: None,
            label: "pipe:server".to_string(),
        },
        write_now: None,
    })
}
