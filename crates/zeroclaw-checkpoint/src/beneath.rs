//! Writing a file beneath a root without following any link ([`Root`]), for the daemon's
//! own file writes (SPEC §17.2 "The daemon's own file writes follow no link"): the
//! agent's `write_file`, uploads' commit and (through [`tree`](crate::tree), which opens
//! directories the same way) checkpoint restores.
//!
//! Only the root is opened by path (it is the configured workspace or working directory).
//! Every component below it is opened relative to its parent's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY`, and the file itself relative to its parent's descriptor with
//! `O_NOFOLLOW`, so a program racing the write — swapping a component for a symlink
//! between any two steps — gets the write refused ([`Error::Link`]), never a write
//! elsewhere. A link in the path is refused even when it would lead back inside the root:
//! there is no resolving a link without following it.
//!
//! A leaf: it names no other module of the crate. Its `*at` calls have no safe std
//! wrapper; each has a SAFETY note.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Why a write beneath the root failed.
#[derive(Debug)]
pub enum Error {
    /// `at` (relative to the root) is a symlink, or was swapped for one during the write.
    Link { at: String },
    /// `at` exists but is not a directory where one is needed, or not a regular file
    /// where the file goes.
    NotFileOrDir { at: String },
    /// Any other failure of the system call at `at`.
    Io { at: String, source: io::Error },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Link { at } => write!(f, "{at} is a symlink (links are never followed)"),
            Error::NotFileOrDir { at } => write!(f, "{at} is not a regular file or directory"),
            Error::Io { at, source } => write!(f, "{at}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

type Result<T> = std::result::Result<T, Error>;

/// Numbers the temporary names of replaced hard-linked files (unique in the process).
static TEMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn open_at(
    dir: RawFd,
    name: &OsStr,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated string, both alive for
    // the call.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by openat, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a live stat.
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Whether `name` in `dir` is a symlink now (not following it).
fn is_link_at(dir: RawFd, name: &OsStr) -> bool {
    let Ok(c) = cstr(name) else { return false };
    // SAFETY: an all-zero stat is valid; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, a NUL-terminated name and a live stat.
    let rc = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The error for a failed open of `name` in `dir`: a link when it was (or is now) one.
fn classify(dir: RawFd, name: &OsStr, at: &str, e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => Error::Link { at: at.to_owned() },
        Some(libc::ENOTDIR) if is_link_at(dir, name) => Error::Link { at: at.to_owned() },
        Some(libc::ENOTDIR) => Error::NotFileOrDir { at: at.to_owned() },
        _ => Error::Io {
            at: at.to_owned(),
            source: e,
        },
    }
}

fn joined(done: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if done.is_empty() {
        name.into_owned()
    } else {
        format!("{done}/{name}")
    }
}

/// A directory opened once by path; everything beneath it is reached without links.
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens `path` (followed if it is a link: it is the configured root).
    pub fn open(path: &Path) -> io::Result<Root> {
        let c = cstr(path.as_os_str())?;
        // SAFETY: a NUL-terminated path alive for the call.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just returned by open, owned by nobody else.
        Ok(Root {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// The directory `parts` beneath the root (empty = the root), each component opened
    /// without following a link; with `create`, missing ones are made (mode 0777 less the
    /// umask, as `mkdir -p`).
    pub fn dir(&self, parts: &[OsString], create: bool) -> Result<OwnedFd> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let mut cur =
            open_at(self.fd.as_raw_fd(), OsStr::new("."), flags, 0).map_err(|e| Error::Io {
                at: ".".to_owned(),
                source: e,
            })?;
        let mut done = String::new();
        for name in parts {
            let at = joined(&done, name);
            let parent = cur.as_raw_fd();
            let next = match open_at(parent, name, flags, 0) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    let c = cstr(name).map_err(|e| Error::Io {
                        at: at.clone(),
                        source: e,
                    })?;
                    // SAFETY: a valid descriptor and a NUL-terminated name.
                    let rc = unsafe { libc::mkdirat(parent, c.as_ptr(), 0o777) };
                    let made = if rc < 0 {
                        Err(io::Error::last_os_error())
                    } else {
                        Ok(())
                    };
                    match made {
                        // Made by someone else meanwhile: opened like any other below.
                        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                            return Err(Error::Io { at, source: e });
                        }
                        _ => open_at(parent, name, flags, 0),
                    }
                }
                other => other,
            };
            cur = next.map_err(|e| classify(parent, name, &at, e))?;
            done = at;
        }
        Ok(cur)
    }

    /// Makes the regular file `parts` (the last one its name) hold `bytes`, creating it
    /// (mode 0666 less the umask) and, with `create_dirs`, its missing directories.
    ///
    /// A regular file with one link is rewritten in place (its mode and inode stay, as an
    /// editor's save keeps them); one with several links (another may be outside the root)
    /// is replaced by a new file renamed over it. A symlink anywhere, the file included,
    /// is refused ([`Error::Link`]); so is anything else that is not a regular file.
    pub fn write(&self, parts: &[OsString], bytes: &[u8], create_dirs: bool) -> Result<()> {
        let Some((name, dirs)) = parts.split_last() else {
            return Err(Error::NotFileOrDir { at: ".".to_owned() });
        };
        let dir = self.dir(dirs, create_dirs)?;
        let at = parts
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let io_err = |source: io::Error| Error::Io {
            at: at.clone(),
            source,
        };
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = open_at(dir.as_raw_fd(), name, flags, 0o666)
            .map_err(|e| classify(dir.as_raw_fd(), name, &at, e))?;
        let st = fstat(fd.as_raw_fd()).map_err(io_err)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Error::NotFileOrDir { at });
        }
        if st.st_nlink > 1 {
            drop(fd);
            let n = TEMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temp = OsString::from(format!(".zcwrite-{}-{n}", std::process::id()));
            return self.replace_in(&dir, name, &temp, bytes, 0o666, &at);
        }
        let mut f = File::from(fd);
        f.set_len(0).map_err(io_err)?;
        f.write_all(bytes).map_err(io_err)
    }

    /// Writes `bytes` to a new file `temp` (mode `mode`) in directory `parts[..last]` and
    /// renames it over the last part, fsynced; whatever was there (a symlink included) is
    /// replaced, never followed. The directories must exist (none is created).
    pub fn replace(&self, parts: &[OsString], temp: &OsStr, bytes: &[u8], mode: u32) -> Result<()> {
        let Some((name, dirs)) = parts.split_last() else {
            return Err(Error::NotFileOrDir { at: ".".to_owned() });
        };
        let dir = self.dir(dirs, false)?;
        let at = parts
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        self.replace_in(&dir, name, temp, bytes, mode, &at)?;
        // SAFETY: a valid descriptor.
        if unsafe { libc::fsync(dir.as_raw_fd()) } < 0 {
            return Err(Error::Io {
                at,
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    fn replace_in(
        &self,
        dir: &OwnedFd,
        name: &OsStr,
        temp: &OsStr,
        bytes: &[u8],
        mode: u32,
        at: &str,
    ) -> Result<()> {
        let io_err = |source: io::Error| Error::Io {
            at: at.to_owned(),
            source,
        };
        let d = dir.as_raw_fd();
        unlink_quiet(d, temp);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = open_at(d, temp, flags, mode).map_err(io_err)?;
        let written = (|| {
            let mut f = File::from(fd);
            f.write_all(bytes)?;
            f.sync_all()?;
            let from = cstr(temp)?;
            let to = cstr(name)?;
            // SAFETY: a valid descriptor and NUL-terminated names.
            if unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })();
        if written.is_err() {
            unlink_quiet(d, temp);
        }
        written.map_err(io_err)
    }
}

fn unlink_quiet(dir: RawFd, name: &OsStr) {
    if let Ok(c) = cstr(name) {
        // SAFETY: a valid descriptor and a NUL-terminated name.
        unsafe { libc::unlinkat(dir, c.as_ptr(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn parts(s: &str) -> Vec<OsString> {
        s.split('/').map(OsString::from).collect()
    }

    #[test]
    fn writes_creates_and_rewrites_in_place() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::open(d.path()).unwrap();
        root.write(&parts("a/b/c.txt"), b"one", true).unwrap();
        assert_eq!(std::fs::read(d.path().join("a/b/c.txt")).unwrap(), b"one");
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(d.path().join("a/b/c.txt")).unwrap().ino();
        root.write(&parts("a/b/c.txt"), b"2", false).unwrap();
        let meta = std::fs::metadata(d.path().join("a/b/c.txt")).unwrap();
        assert_eq!((meta.ino(), meta.len()), (ino, 1), "rewritten in place");
        let e = root.write(&parts("x/y"), b"", false).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(!d.path().join("x").exists());
    }

    #[test]
    fn links_anywhere_are_refused_and_nothing_is_written_through_them() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(ws.join("real")).unwrap();
        symlink(outside.path(), ws.join("out")).unwrap();
        symlink(ws.join("real"), ws.join("inside")).unwrap();
        symlink(outside.path().join("f"), ws.join("dangling")).unwrap();
        let root = Root::open(&ws).unwrap();
        for p in ["out/f", "out/new/f", "inside/f", "dangling"] {
            let e = root.write(&parts(p), b"x", true).unwrap_err();
            assert!(matches!(e, Error::Link { .. }), "{p}: {e}");
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(!ws.join("real/f").exists());
    }

    #[test]
    fn a_hard_linked_file_is_replaced_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("other"), b"keep").unwrap();
        std::fs::hard_link(d.path().join("other"), d.path().join("f")).unwrap();
        let root = Root::open(d.path()).unwrap();
        root.write(&parts("f"), b"new", false).unwrap();
        assert_eq!(std::fs::read(d.path().join("other")).unwrap(), b"keep");
        assert_eq!(std::fs::read(d.path().join("f")).unwrap(), b"new");
    }

    #[test]
    fn replace_swaps_a_link_for_the_file() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("up")).unwrap();
        symlink(outside.path().join("t"), d.path().join("up/f")).unwrap();
        let root = Root::open(d.path()).unwrap();
        root.replace(&parts("up/f"), OsStr::new(".tmp-1"), b"z", 0o600)
            .unwrap();
        assert_eq!(std::fs::read(d.path().join("up/f")).unwrap(), b"z");
        assert!(!outside.path().join("t").exists());
        std::fs::remove_dir_all(d.path().join("up")).unwrap();
        symlink(outside.path(), d.path().join("up")).unwrap();
        let e = root
            .replace(&parts("up/f"), OsStr::new(".tmp-1"), b"z", 0o600)
            .unwrap_err();
        assert!(matches!(e, Error::Link { .. }), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
