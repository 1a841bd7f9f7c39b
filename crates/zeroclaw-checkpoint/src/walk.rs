//! The walk of a working directory ([`walk`]): every regular file, directory and symlink
//! under the root with its metadata, sorted by path, as `.gitignore` rules leave them.
//!
//! Rules (SPEC §18 "File checkpoints", §17.2 "Ignore files are bounded"): the `.gitignore`
//! files from the repository root (or the root when there is none) down and the
//! repository's `.git/info/exclude` apply, whether or not the tree is a git repository,
//! read within bounds by [`ignores`](crate::ignores); the user's global git excludes do
//! not (the daemon's own environment must not change what is recorded); anything named
//! `.git` is skipped, and so is the checkpoint store itself when it lies in the tree;
//! hidden files are walked like any other; symlinks are reported as such and never
//! followed; other file types (sockets, FIFOs, devices) are left out. The walk stops early
//! when the tree is over the limits, an ignore file is over its bounds, the deadline
//! passes, or every path of the tree is ignored (reported, never silently recorded empty).
//!
//! A leaf above [`manifest`](crate::manifest) (for [`Stat`]) and
//! [`ignores`](crate::ignores).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, IoContext, Result};
use crate::ignores::{Chain, Rules};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    TooManyFiles(usize),
    TooManyBytes(u64),
    Deadline,
    /// An ignore file over its bounds, or a tree wholly ignored: the reason in full.
    Ignores(String),
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
            Stop::Ignores(why) => why,
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

/// Walks `spec.root`; `Ok(Err(stop))` when a limit, an ignore file or the deadline
/// stopped it.
pub fn walk(spec: &WalkSpec) -> Result<std::result::Result<Vec<Found>, Stop>> {
    let root_meta = std::fs::metadata(spec.root).ctx(|| format!("stat {}", spec.root.display()))?;
    if !root_meta.is_dir() {
        return Err(Error::Io {
            context: format!("{} is not a directory", spec.root.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotADirectory),
        });
    }
    let (mut rules, above) = match Rules::above(spec.root) {
        Ok(found) => found,
        Err(why) => return Ok(Err(Stop::Ignores(why))),
    };
    let mut walker = Walker {
        spec,
        out: Vec::new(),
        files: 0,
        bytes: 0,
        seen: 0,
        ignored: 0,
    };
    // Directories still to read, each with the rules above it (depth first).
    let mut todo: Vec<(PathBuf, Option<Arc<Chain>>)> = vec![(spec.root.to_path_buf(), above)];
    while let Some((dir, parent)) = todo.pop() {
        let chain = match rules.enter(&dir, parent) {
            Ok(c) => c,
            Err(why) => return Ok(Err(Stop::Ignores(why))),
        };
        // An unreadable directory is left out, as are its children.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let Ok(entry) = entry else { continue };
            if let Err(stop) = walker.tick() {
                return Ok(Err(stop));
            }
            let path = entry.path();
            if entry.file_name() == ".git" || spec.skip.is_some_and(|s| path == s) {
                continue;
            }
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let file_type = meta.file_type();
            let kind = if file_type.is_symlink() {
                FoundKind::Symlink
            } else if file_type.is_dir() {
                FoundKind::Dir
            } else if file_type.is_file() {
                FoundKind::File
            } else {
                continue;
            };
            let is_dir = kind == FoundKind::Dir;
            if chain.ignored(&path, is_dir, rules.exclude()) {
                walker.ignored += 1;
                continue;
            }
            if let Err(stop) = walker.found(&path, kind, &meta) {
                return Ok(Err(stop));
            }
            if is_dir {
                todo.push((path, Some(Arc::clone(&chain))));
            }
        }
    }
    if walker.out.is_empty() && walker.ignored > 0 {
        return Ok(Err(Stop::Ignores(format!(
            "every path of the tree is ignored by .gitignore rules ({} ignored): not recorded",
            walker.ignored
        ))));
    }
    let mut out = walker.out;
    out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(Ok(out))
}

/// The walk's findings and counts.
struct Walker<'a> {
    spec: &'a WalkSpec<'a>,
    out: Vec<Found>,
    files: usize,
    bytes: u64,
    /// Entries read (for the deadline check).
    seen: usize,
    /// Entries left out by the ignore rules.
    ignored: usize,
}

impl Walker<'_> {
    fn tick(&mut self) -> std::result::Result<(), Stop> {
        self.seen += 1;
        if self.seen.is_multiple_of(256) && self.spec.deadline.is_some_and(|d| Instant::now() >= d)
        {
            return Err(Stop::Deadline);
        }
        Ok(())
    }

    fn found(
        &mut self,
        path: &Path,
        kind: FoundKind,
        meta: &std::fs::Metadata,
    ) -> std::result::Result<(), Stop> {
        let Ok(rel) = path.strip_prefix(self.spec.root) else {
            return Ok(());
        };
        if kind != FoundKind::Dir {
            self.files += 1;
            if self.files > self.spec.max_files {
                return Err(Stop::TooManyFiles(self.spec.max_files));
            }
        }
        if kind == FoundKind::File
            && let Some((per_file, total)) = self.spec.max_bytes
            && meta.len() <= per_file
        {
            self.bytes += meta.len();
            if self.bytes > total {
                return Err(Stop::TooManyBytes(total));
            }
        }
        self.out.push(Found {
            path: rel.as_os_str().as_bytes().to_vec(),
            kind,
            stat: stat_of(meta),
            mode: meta.mode() & 0o7777,
        });
        Ok(())
    }
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
