//! `SocketIdentity`: which file our socket is, so shutdown unlinks the socket path only if
//! it still names that file (SPEC §2 step 5).
//!
//! An inode number alone is not enough: once our socket file is unlinked (say, by a newer
//! daemon replacing it) the filesystem may hand the same number to the replacement. On
//! Linux we therefore keep an `O_PATH` descriptor on the socket file, which keeps its inode
//! allocated so no other file can get its number while we live. Where `O_PATH` does not
//! exist (sockets cannot be opened there), the change time is compared as well; a false
//! "changed" only leaves a dead socket behind, which the next daemon clears as stale.

use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

#[derive(Debug)]
pub(crate) struct SocketIdentity {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
    /// Keeps the inode allocated (Linux/Android only).
    pin: Option<File>,
}

impl SocketIdentity {
    /// Identifies the socket file now at `path`; fails if it is not a socket.
    pub(crate) fn capture(path: &Path) -> io::Result<SocketIdentity> {
        let pin = pin(path)?;
        let meta = match &pin {
            Some(file) => file.metadata()?,
            None => fs::symlink_metadata(path)?,
        };
        if !meta.file_type().is_socket() {
            return Err(io::Error::other("it is not a socket"));
        }
        Ok(SocketIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: ctime(&meta),
            pin,
        })
    }

    /// Whether `path` still names the file captured.
    pub(crate) fn still_at(&self, path: &Path) -> bool {
        match fs::symlink_metadata(path) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => {
                self.pin.is_some() || ctime(&m) == self.ctime
            }
            _ => false,
        }
    }
}

fn ctime(meta: &Metadata) -> (i64, i64) {
    (meta.ctime(), meta.ctime_nsec())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn pin(path: &Path) -> io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_PATH opens any file type without reading it; NOFOLLOW keeps it to the entry itself.
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
        .map(Some)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn pin(_path: &Path) -> io::Result<Option<File>> {
    Ok(None)
}
