//! The `.gitignore` rules a checkpoint walk applies, read within bounds ([`Rules`], SPEC
//! §17.2 "Ignore files are bounded").
//!
//! Ignore files are read only from the repository root (the nearest directory at or above
//! the walked root holding a `.git`), or from the walked root when there is no repository,
//! down: never from the directories above. Each is opened without following a link and
//! read through a bounded reader — at most [`MAX_IGNORE_FILE_BYTES`] and
//! [`MAX_IGNORE_PATTERNS`] patterns, and all the files of one walk together no more than
//! one file may hold ([`MAX_TOTAL_BYTES`], [`MAX_TOTAL_PATTERNS`]) — so a huge file is
//! never held or parsed whole: past a bound the walk stops and the turn is unrestorable,
//! saying which file and why.
//!
//! The totals are there because compiled patterns cost far more than their text: one file
//! at its bounds (10,000 patterns of a `**` glob each, about 300 KB once trimmed) takes the
//! daemon's peak RSS up by about 120 MiB, and five of them in one tree took it up by
//! 222 MiB before the totals (`ignore_files_at_their_bounds_cost_bounded_memory` in
//! `crates/zeroclaw-e2e/tests/e2e/hardening3_files.rs`).
//!
//! Precedence is git's: the rules of the deepest directory first, then its parents', then
//! the repository's `.git/info/exclude`; the last matching pattern of a file decides.
//! The `ignore` crate's [`Gitignore`] does the matching (negations, anchors, directory-only
//! patterns). A leaf: it names no other module of the crate.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Largest ignore file read.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;
/// Most patterns taken from one ignore file.
pub const MAX_IGNORE_PATTERNS: usize = 10_000;
/// Most patterns taken from all the ignore files of one walk.
pub const MAX_TOTAL_PATTERNS: usize = MAX_IGNORE_PATTERNS;
/// Most bytes read from all the ignore files of one walk.
pub const MAX_TOTAL_BYTES: u64 = MAX_IGNORE_FILE_BYTES;

/// The rules of one directory and of the directories above it (deepest first).
pub struct Chain {
    rules: Option<Gitignore>,
    parent: Option<Arc<Chain>>,
}

impl Chain {
    /// Whether `path` (absolute, beneath every directory of the chain) is ignored, with
    /// `exclude` the repository's `info/exclude` rules.
    pub fn ignored(&self, path: &Path, is_dir: bool, exclude: Option<&Gitignore>) -> bool {
        let mut link = Some(self);
        while let Some(c) = link {
            if let Some(rules) = &c.rules {
                let m = rules.matched(path, is_dir);
                if !m.is_none() {
                    return m.is_ignore();
                }
            }
            link = c.parent.as_deref();
        }
        exclude.is_some_and(|x| x.matched(path, is_dir).is_ignore())
    }
}

/// Loads ignore files within the bounds of one walk.
pub struct Rules {
    exclude: Option<Gitignore>,
    /// Patterns taken so far.
    total: usize,
    /// Bytes read so far.
    bytes: u64,
}

/// Why a walk cannot apply the ignore rules: the turn's reason.
pub type Over = String;

impl Rules {
    /// The rules above `root` (canonical): the repository's exclude file and the chain of
    /// `.gitignore` files from the repository root down to `root`'s parent (empty without
    /// a repository). `Err` when a file is over the bounds, or `root` itself is ignored
    /// there (the whole tree is).
    pub fn above(root: &Path) -> Result<(Rules, Option<Arc<Chain>>), Over> {
        let mut rules = Rules {
            exclude: None,
            total: 0,
            bytes: 0,
        };
        let Some(repo) = repository_of(root) else {
            return Ok((rules, None));
        };
        rules.exclude = rules.load(&repo, &repo.join(".git/info/exclude"))?;
        let mut chain: Option<Arc<Chain>> = None;
        let mut dir = repo.clone();
        let below: Vec<PathBuf> = root
            .strip_prefix(&repo)
            .map(|rel| rel.iter().map(PathBuf::from).collect())
            .unwrap_or_default();
        for part in below {
            chain = Some(rules.enter(&dir, chain)?);
            dir.push(part);
            if let Some(c) = &chain
                && c.ignored(&dir, true, rules.exclude.as_ref())
            {
                return Err(format!(
                    "the whole tree is ignored by the .gitignore rules of {}: not recorded",
                    repo.display()
                ));
            }
        }
        Ok((rules, chain))
    }

    /// The chain for directory `dir`: its own `.gitignore` on top of `parent`.
    pub fn enter(&mut self, dir: &Path, parent: Option<Arc<Chain>>) -> Result<Arc<Chain>, Over> {
        let rules = self.load(dir, &dir.join(".gitignore"))?;
        Ok(Arc::new(Chain { rules, parent }))
    }

    /// The repository's exclude rules.
    pub fn exclude(&self) -> Option<&Gitignore> {
        self.exclude.as_ref()
    }

    /// The rules of the ignore file `file`, rooted at `dir`; `None` when there is none (or
    /// it is a link, or not a regular file, or unreadable: as git, which skips those).
    fn load(&mut self, dir: &Path, file: &Path) -> Result<Option<Gitignore>, Over> {
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(file);
        let Ok(f) = opened else { return Ok(None) };
        match f.metadata() {
            Ok(m) if m.is_file() => {}
            _ => return Ok(None),
        }
        let over = |why: String| format!("the ignore file {} {why}: not recorded", file.display());
        let Some(bytes) = read_bounded(f) else {
            return Err(over(format!(
                "is over {} MiB",
                MAX_IGNORE_FILE_BYTES / (1024 * 1024)
            )));
        };
        self.bytes += bytes.len() as u64;
        if self.bytes > MAX_TOTAL_BYTES {
            return Err(over(format!(
                "brings the tree's ignore files over {} MiB",
                MAX_TOTAL_BYTES / (1024 * 1024)
            )));
        }
        let mut builder = GitignoreBuilder::new(dir);
        let mut patterns = 0usize;
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let Ok(mut line) = std::str::from_utf8(raw) else {
                continue;
            };
            if i == 0 {
                line = line.trim_start_matches('\u{feff}');
            }
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            patterns += 1;
            if patterns > MAX_IGNORE_PATTERNS {
                return Err(over(format!("has over {MAX_IGNORE_PATTERNS} patterns")));
            }
            self.total += 1;
            if self.total > MAX_TOTAL_PATTERNS {
                return Err(over(format!(
                    "brings the tree's ignore patterns over {MAX_TOTAL_PATTERNS}"
                )));
            }
            // A line that is not a valid pattern is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        match builder.build() {
            Ok(g) if g.is_empty() => Ok(None),
            Ok(g) => Ok(Some(g)),
            Err(e) => Err(over(format!("cannot be compiled ({e})"))),
        }
    }
}

/// The whole file when it is at most [`MAX_IGNORE_FILE_BYTES`], else `None` (never more
/// than one byte over the bound is read).
fn read_bounded(f: File) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let read = f.take(MAX_IGNORE_FILE_BYTES + 1).read_to_end(&mut bytes);
    match read {
        Ok(n) if n as u64 <= MAX_IGNORE_FILE_BYTES => Some(bytes),
        Ok(_) => None,
        // Unreadable midway: as no file.
        Err(_) => Some(Vec::new()),
    }
}

/// The nearest directory at or above `root` that holds a `.git` (directory or file).
fn repository_of(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_file_is_refused_after_reading_at_most_one_byte_over() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let fresh = || Rules::above(&root).unwrap().0;
        let f = std::fs::File::create(root.join(".gitignore")).unwrap();
        f.set_len(MAX_IGNORE_FILE_BYTES + 1).unwrap();
        let e = fresh().enter(&root, None).err().unwrap();
        assert!(e.contains("is over 1 MiB"), "{e}");
        std::fs::write(
            root.join(".gitignore"),
            "x\n".repeat(MAX_IGNORE_PATTERNS + 1),
        )
        .unwrap();
        let e = fresh().enter(&root, None).err().unwrap();
        assert!(e.contains("over 10000 patterns"), "{e}");
        std::fs::write(
            root.join(".gitignore"),
            "# c\n\nx\n".repeat(MAX_IGNORE_PATTERNS),
        )
        .unwrap();
        let mut rules = fresh();
        assert!(rules.enter(&root, None).is_ok());
        // A second file would take the walk over its total.
        let e = rules.enter(&root, None).err().unwrap();
        assert!(e.contains("ignore patterns over"), "{e}");
    }

    #[test]
    fn files_above_the_repository_are_not_read_and_an_ignored_root_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().canonicalize().unwrap();
        std::fs::write(top.join(".gitignore"), "*\n").unwrap();
        std::fs::create_dir_all(top.join("repo/.git/info")).unwrap();
        std::fs::create_dir_all(top.join("repo/a/b")).unwrap();
        // Not a repository's: never read.
        let (rules, chain) = Rules::above(&top.join("repo/a")).unwrap();
        let c = chain.unwrap();
        assert!(!c.ignored(&top.join("repo/a/f"), false, rules.exclude()));
        // The repository's own rules apply from its root down.
        std::fs::write(top.join("repo/.gitignore"), "b/\n").unwrap();
        let e = Rules::above(&top.join("repo/a/b")).err().unwrap();
        assert!(e.contains("whole tree is ignored"), "{e}");
        std::fs::write(top.join("repo/.gitignore"), "*\n").unwrap();
        let e = Rules::above(&top.join("repo/a")).err().unwrap();
        assert!(e.contains("whole tree is ignored"), "{e}");
        std::fs::write(top.join("repo/.gitignore"), "").unwrap();
        std::fs::write(top.join("repo/.git/info/exclude"), "f\n").unwrap();
        let (rules, chain) = Rules::above(&top.join("repo/a")).unwrap();
        assert!(
            chain
                .unwrap()
                .ignored(&top.join("repo/a/f"), false, rules.exclude())
        );
    }
}
