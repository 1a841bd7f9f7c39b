//! The working directory as a restore touches it ([`Tree`]): every operation goes through
//! directory descriptors opened one component at a time with `O_NOFOLLOW`, so a symlink
//! planted anywhere in the tree (as the file itself or as one of its parent directories) is
//! never followed: it is replaced or removed as a link, and nothing is ever written through
//! it (SPEC §18). Files are written under a temporary name in their own directory and
//! renamed over the target, which replaces a link rather than writing where it points.
//!
//! Only the root itself is opened by path (it is the session's configured directory). A
//! leaf above [`manifest`](crate::manifest) (for [`Stat`]) and [`digest`](crate::digest).
//!
//! The `*at` calls have no safe std wrapper: this module is where the crate's unsafe code
//! is allowed, each call with a SAFETY note.

#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::digest::Digest;
use crate::manifest::Stat;

/// The temporary name a restore writes `name` under (deterministic, so that a restore
/// interrupted by a crash can find and remove it).
pub fn temp_for(name: &[u8]) -> Vec<u8> {
    format!(".zcrestore-{}", &Digest::of(name).to_hex()[..16]).into_bytes()
}

/// What is at a path now (never following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Current {
    Absent,
    /// A regular file and its permission bits.
    File(Stat, u32),
    /// A directory and its permission bits.
    Dir(u32),
    Symlink,
    Other,
}

/// Splits `a/b/c` into (`a/b`, `c`) and `c` into (``, `c`).
pub fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&[], path),
    }
}

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn open_at(dir: RawFd, name: &[u8], flags: libc::c_int, mode: libc::c_uint) -> io::Result<OwnedFd> {
    let name = cstr(name)?;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string, both alive for
    // the call.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by openat, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and a pointer to a live stat.
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

// The field types differ between platforms (the casts are needed on some).
#[allow(clippy::unnecessary_cast)]
fn stat_of(st: &libc::stat) -> Stat {
    Stat {
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
        ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
        ino: st.st_ino as u64,
    }
}

fn kind_of(st: &libc::stat) -> libc::mode_t {
    st.st_mode & libc::S_IFMT
}

/// Sets the permission bits and the mtime of a file just written.
fn finish(f: &File, mode: u32, mtime_ns: i64) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    check(unsafe { libc::fchmod(f.as_raw_fd(), (mode & 0o7777) as libc::mode_t) })?;
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: mtime_ns.div_euclid(1_000_000_000) as libc::time_t,
            tv_nsec: mtime_ns.rem_euclid(1_000_000_000) as _,
        },
    ];
    // SAFETY: a valid descriptor and two live timespecs.
    check(unsafe { libc::futimens(f.as_raw_fd(), times.as_ptr()) })
}

/// A directory's descriptors, cached by relative path.
pub struct Tree {
    root: OwnedFd,
    dirs: HashMap<Vec<u8>, OwnedFd>,
}

/// Cached directory descriptors beyond this are dropped (a bound on open files).
const MAX_CACHED_DIRS: usize = 256;

impl Tree {
    pub fn open(root: &Path) -> io::Result<Tree> {
        let path = cstr(root.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path alive for the call.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tree {
            // SAFETY: a descriptor just returned by open, owned by nobody else.
            root: unsafe { OwnedFd::from_raw_fd(fd) },
            dirs: HashMap::new(),
        })
    }

    /// The descriptor of directory `rel` ("" = the root), each component opened without
    /// following symlinks; with `create`, missing components are made (mode 0755).
    pub fn dir(&mut self, rel: &[u8], create: bool) -> io::Result<RawFd> {
        if rel.is_empty() {
            return Ok(self.root.as_raw_fd());
        }
        if let Some(fd) = self.dirs.get(rel) {
            return Ok(fd.as_raw_fd());
        }
        let (parent, name) = split(rel);
        let parent_fd = self.dir(parent, create)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let fd = match open_at(parent_fd, name, flags, 0) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                let c = cstr(name)?;
                // SAFETY: valid descriptor and NUL-terminated name.
                check(unsafe { libc::mkdirat(parent_fd, c.as_ptr(), 0o755) })?;
                open_at(parent_fd, name, flags, 0)?
            }
            other => other?,
        };
        if self.dirs.len() >= MAX_CACHED_DIRS {
            self.dirs.clear();
        }
        let raw = fd.as_raw_fd();
        self.dirs.insert(rel.to_vec(), fd);
        Ok(raw)
    }

    /// Forgets cached descriptors of `path` and everything under it (it was removed or
    /// replaced).
    pub fn forget(&mut self, path: &[u8]) {
        self.dirs.retain(|k, _| {
            !(k.as_slice() == path || (k.starts_with(path) && k.get(path.len()) == Some(&b'/')))
        });
    }

    /// What is at `path`; `Absent` also when a parent is missing or not a directory.
    pub fn current(&mut self, path: &[u8]) -> io::Result<Current> {
        let (parent, name) = split(path);
        let dir = match self.dir(parent, false) {
            Ok(fd) => fd,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
                ) =>
            {
                return Ok(Current::Absent);
            }
            Err(e) => return Err(e),
        };
        let c = cstr(name)?;
        // SAFETY: an all-zero stat is valid; fstatat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor, NUL-terminated name, live stat.
        let rc = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(Current::Absent)
            } else {
                Err(e)
            };
        }
        let mode = (st.st_mode & 0o7777) as u32;
        Ok(match kind_of(&st) {
            libc::S_IFREG => Current::File(stat_of(&st), mode),
            libc::S_IFDIR => Current::Dir(mode),
            libc::S_IFLNK => Current::Symlink,
            _ => Current::Other,
        })
    }

    /// The content of the regular file at `path` (not following a symlink there).
    pub fn read_file(&mut self, path: &[u8]) -> io::Result<Vec<u8>> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, false)?;
        let fd = open_at(
            dir,
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        )?;
        if kind_of(&fstat(fd.as_raw_fd())?) != libc::S_IFREG {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let mut out = Vec::new();
        File::from(fd).read_to_end(&mut out)?;
        Ok(out)
    }

    /// The target of the symlink at `path`.
    pub fn read_link(&mut self, path: &[u8]) -> io::Result<Vec<u8>> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, false)?;
        let c = cstr(name)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: valid descriptor, NUL-terminated name, a buffer of the length given.
        let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(buf)
    }

    /// Removes the file, symlink or (empty) directory at `path`; a missing one is fine.
    pub fn remove(&mut self, path: &[u8], is_dir: bool) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, false)?;
        let c = cstr(name)?;
        let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: valid descriptor and NUL-terminated name.
        let rc = unsafe { libc::unlinkat(dir, c.as_ptr(), flags) };
        if is_dir {
            self.forget(path);
        }
        match check(rc) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Makes directory `path` (its parents must exist).
    pub fn make_dir(&mut self, path: &[u8], mode: u32) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, true)?;
        let c = cstr(name)?;
        // SAFETY: valid descriptor and NUL-terminated name.
        check(unsafe { libc::mkdirat(dir, c.as_ptr(), (mode & 0o7777) as libc::mode_t) })
    }

    /// Sets the permission bits of the file or directory at `path` (never through a link).
    pub fn chmod(&mut self, path: &[u8], mode: u32) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, false)?;
        let fd = open_at(
            dir,
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        )?;
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fchmod(fd.as_raw_fd(), (mode & 0o7777) as libc::mode_t) })
    }

    /// Makes the regular file at `path` hold `bytes`, with `mode` and `mtime_ns`.
    ///
    /// A regular file with no other hard link is rewritten in place (opened without
    /// following a link, checked once open): creating and dropping an inode per file costs
    /// milliseconds on a busy ext4. Anything else — a missing file, a symlink, a file with
    /// several links (one may be outside the tree) — is replaced by a temporary file
    /// renamed over it. A crash midway leaves the journal, so the restore runs again.
    pub fn write_file(
        &mut self,
        path: &[u8],
        bytes: &[u8],
        mode: u32,
        mtime_ns: i64,
    ) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, true)?;
        let opened = open_at(
            dir,
            name,
            libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        );
        if let Ok(fd) = opened {
            let st = fstat(fd.as_raw_fd())?;
            if kind_of(&st) == libc::S_IFREG && st.st_nlink == 1 {
                let mut f = File::from(fd);
                f.set_len(0)?;
                f.write_all(bytes)?;
                return finish(&f, mode, mtime_ns);
            }
        }
        self.replace_file(path, bytes, mode, mtime_ns, false)
    }

    /// Writes `bytes` to a temporary file next to `path` with `mode` and `mtime_ns`, then
    /// renames it over `path` (fsynced first when `sync`).
    pub fn replace_file(
        &mut self,
        path: &[u8],
        bytes: &[u8],
        mode: u32,
        mtime_ns: i64,
        sync: bool,
    ) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, true)?;
        let temp = temp_for(name);
        self.unlink_quiet(dir, &temp);
        let fd = open_at(
            dir,
            &temp,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o600,
        )?;
        let written = (|| {
            let mut f = File::from(fd);
            f.write_all(bytes)?;
            finish(&f, mode, mtime_ns)?;
            if sync {
                f.sync_all()?;
            }
            self.rename_into(dir, &temp, name)
        })();
        if written.is_err() {
            self.unlink_quiet(dir, &temp);
        }
        written
    }

    /// Makes `path` a symlink to `target` (a new link renamed over whatever is there).
    pub fn replace_symlink(&mut self, path: &[u8], target: &[u8]) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, true)?;
        let temp = temp_for(name);
        self.unlink_quiet(dir, &temp);
        let t = cstr(target)?;
        let c = cstr(&temp)?;
        // SAFETY: valid descriptor and NUL-terminated strings.
        check(unsafe { libc::symlinkat(t.as_ptr(), dir, c.as_ptr()) })?;
        let renamed = self.rename_into(dir, &temp, name);
        if renamed.is_err() {
            self.unlink_quiet(dir, &temp);
        }
        renamed
    }

    /// Removes a leftover temporary of `path` (a restore interrupted by a crash).
    pub fn remove_temp_of(&mut self, path: &[u8]) {
        let (parent, name) = split(path);
        if let Ok(dir) = self.dir(parent, false) {
            self.unlink_quiet(dir, &temp_for(name));
        }
    }

    /// fsync of the regular file at `path`.
    pub fn sync_file(&mut self, path: &[u8]) -> io::Result<()> {
        let (parent, name) = split(path);
        let dir = self.dir(parent, false)?;
        let fd = open_at(
            dir,
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        )?;
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(fd.as_raw_fd()) })
    }

    /// fsync of directory `rel`, if it (still) exists.
    pub fn sync_dir(&mut self, rel: &[u8]) -> io::Result<()> {
        let fd = match self.dir(rel, false) {
            Ok(fd) => fd,
            Err(_) => return Ok(()),
        };
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(fd) })
    }

    fn rename_into(&self, dir: RawFd, from: &[u8], to: &[u8]) -> io::Result<()> {
        let f = cstr(from)?;
        let t = cstr(to)?;
        // SAFETY: valid descriptor and NUL-terminated names.
        check(unsafe { libc::renameat(dir, f.as_ptr(), dir, t.as_ptr()) })
    }

    fn unlink_quiet(&self, dir: RawFd, name: &[u8]) {
        if let Ok(c) = cstr(name) {
            // SAFETY: valid descriptor and NUL-terminated name.
            unsafe { libc::unlinkat(dir, c.as_ptr(), 0) };
        }
    }
}
