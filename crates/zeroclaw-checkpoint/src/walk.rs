//! The walk of a working directory ([`walk`]): every regular file, directory and symlink
//! under the root with its metadata, sorted by path, as `.gitignore` rules leave them.
//!
//! Rules (SPEC §18 "File checkpoints"): `.gitignore` files in the tree and above it and
//! `.git/info/exclude` apply, whether or not the tree is a git repository; the user's global
//! git excludes do not (the daemon's own environment must not change what is recorded);
//! anything named `.git` is skipped, and so is the checkpoint store itself when it lies in
//! the tree; hidden files are walked like any other; symlinks are reported as such and never
//! followed; other file types (sockets, FIFOs, devices) are left out. The walk stops early
//! when the tree is over the limits or the deadline passes.
//!
//! The `ignore` crate (ripgrep's walker) implements gitignore semantics in full (negations,
//! anchored and directory-only patterns, nested files); writing that again would be worse.
//! A leaf above [`manifest`](crate::manifest) (for [`Stat`]).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{Error, IoContext, Result};
use crate::manifest::Stat;

/// What a walk found at one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundKind {
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone)]
pub struct Found {
    /// Relative to the root, `/`-separated.
    pub path: Vec<u8>,
    pub kind: FoundKind,
    pub stat: Stat,
    /// Permission bits.
    pub mode: u32,
}

/// Why a walk stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    TooManyFiles(usize),
    TooManyBytes(u64),
    Deadline,
}

impl Stop {
    /// The reason as a turn's record and a restore report it.
    pub fn describe(self) -> String {
        match self {
            Stop::TooManyFiles(n) => format!("the tree has over {n} files: not recorded"),
            Stop::TooManyBytes(n) => format!(
                "the tree's files add up to over {} MiB: not recorded",
                n / (1024 * 1024)
            ),
            Stop::Deadline => "the checkpoint did not finish in time".to_owned(),
        }
    }
}

/// What to walk and when to stop.
pub struct WalkSpec<'a> {
    /// An absolute, canonical directory.
    pub root: &'a Path,
    /// A directory never walked into (the checkpoint store), canonical.
    pub skip: Option<&'a Path>,
    /// Stop after this many regular files and symlinks.
    pub max_files: usize,
    /// Stop once the regular files of at most `.0` bytes add up to more than `.1`.
    pub max_bytes: Option<(u64, u64)>,
    pub deadline: Option<Instant>,
}

/// Walks `spec.root`; `Ok(Err(stop))` when a limit or the deadline stopped it.
pub fn walk(spec: &WalkSpec) -> Result<std::result::Result<Vec<Found>, Stop>> {
    let root_meta = std::fs::metadata(spec.root).ctx(|| format!("stat {}", spec.root.display()))?;
    if !root_meta.is_dir() {
        return Err(Error::Io {
            context: format!("{} is not a directory", spec.root.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotADirectory),
        });
    }
    let skip: Option<PathBuf> = spec.skip.map(Path::to_path_buf);
    let walker = ignore::WalkBuilder::new(spec.root)
        .hidden(false)
        .parents(true)
        .ignore(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && skip.as_deref().is_none_or(|s| e.path() != s)
        })
        .build();
    let mut out = Vec::new();
    let mut files = 0usize;
    let mut bytes = 0u64;
    for (n, item) in walker.enumerate() {
        if n % 256 == 255 && spec.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Err(Stop::Deadline));
        }
        // An unreadable directory is left out, as are its children.
        let Ok(entry) = item else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        let kind = if file_type.is_symlink() {
            FoundKind::Symlink
        } else if file_type.is_dir() {
            FoundKind::Dir
        } else if file_type.is_file() {
            FoundKind::File
        } else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(spec.root) else {
            continue;
        };
        if kind != FoundKind::Dir {
            files += 1;
            if files > spec.max_files {
                return Ok(Err(Stop::TooManyFiles(spec.max_files)));
            }
        }
        if kind == FoundKind::File
            && let Some((per_file, total)) = spec.max_bytes
            && meta.len() <= per_file
        {
            bytes += meta.len();
            if bytes > total {
                return Ok(Err(Stop::TooManyBytes(total)));
            }
        }
        out.push(Found {
            path: rel.as_os_str().as_bytes().to_vec(),
            kind,
            stat: stat_of(&meta),
            mode: meta.mode() & 0o7777,
        });
    }
    out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(Ok(out))
}

/// The [`Stat`] of some metadata.
pub fn stat_of(meta: &std::fs::Metadata) -> Stat {
    Stat {
        size: meta.len(),
        mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        ino: meta.ino(),
    }
}
