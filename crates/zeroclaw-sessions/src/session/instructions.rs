//! Instructions files (SPEC §26): the `AGENTS.md` (else `CLAUDE.md`) of the user's
//! `~/.zeroclaw` (the daemon's config dir), then of each directory from the repository root
//! (the nearest ancestor of the cwd holding `.git`; none → the cwd alone) down to the cwd,
//! outermost first, at most [`BUDGET`] bytes in all, added to the system prompt under a
//! heading per file.
//!
//! The files are found and stat'ed before every turn; they are read again only when one
//! appeared, went, or changed its modification time or length. Reads are bounded: only
//! regular files are read (opened non-blocking, so a FIFO cannot hang the open), and never
//! more than what is left of the budget.
//!
//! Layers: a leaf of the sessions service (std only); blocking, so callers run it off the
//! async threads.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The most bytes of instructions put in the system prompt, all files together.
pub(crate) const BUDGET: usize = 64 * 1024;

/// The names looked for in each directory, first found wins.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// What one directory's file looked like when stat'ed: path, modification time, length.
type Seen = (PathBuf, Option<SystemTime>, u64);

/// The instructions files as last read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Instructions {
    /// Each file put in the prompt, with the bytes of it that were.
    pub files: Vec<(PathBuf, u64)>,
    /// The text appended to the system prompt (empty when there are no files).
    pub text: String,
    seen: Vec<Seen>,
}

impl Instructions {
    /// The instructions for a session in `cwd`, with `user_dir` the daemon's config dir
    /// for the operator's own sessions ([`user_dir_of`]); `previous` is reused as is when no
    /// file changed since it was read.
    pub(crate) fn load(
        user_dir: Option<&Path>,
        cwd: &Path,
        previous: Option<&Instructions>,
    ) -> Self {
        let seen = find(user_dir, cwd);
        if let Some(p) = previous
            && p.seen == seen
        {
            return p.clone();
        }
        read_all(seen)
    }
}

/// The user-level directory of a session owned by `owner`: the daemon's config dir holds
/// the operator's own `AGENTS.md` and skills, which are the operator's alone — another
/// principal's session does not get them (it could ask the model to repeat them).
pub(crate) fn user_dir_of(owner: &str, config_dir: &Path) -> Option<PathBuf> {
    (owner == zeroclaw_config::policy::OPERATOR).then(|| config_dir.to_path_buf())
}

/// `system_prompt` with the instructions `text` after it.
pub(crate) fn append(system_prompt: &str, text: &str) -> String {
    match (system_prompt.is_empty(), text.is_empty()) {
        (_, true) => system_prompt.to_owned(),
        (true, false) => text.to_owned(),
        (false, false) => format!("{system_prompt}\n\n{text}"),
    }
}

/// The directories whose file counts, outermost first: the user's, then the repository
/// root down to `cwd`.
fn dirs(user_dir: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let mut chain: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    let mut all: Vec<PathBuf> = user_dir.map(Path::to_path_buf).into_iter().collect();
    for d in chain {
        if !all.contains(&d) {
            all.push(d);
        }
    }
    all
}

/// Each directory's file (regular files only), stat'ed.
fn find(user_dir: Option<&Path>, cwd: &Path) -> Vec<Seen> {
    let mut seen = Vec::new();
    for dir in dirs(user_dir, cwd) {
        for name in NAMES {
            let path = dir.join(name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_file() {
                seen.push((path, meta.modified().ok(), meta.len()));
                break;
            }
        }
    }
    seen
}

/// Reads the files found, within the budget.
fn read_all(seen: Vec<Seen>) -> Instructions {
    let mut files = Vec::new();
    let mut text = String::new();
    let mut left = BUDGET;
    let mut cut: Vec<String> = Vec::new();
    for (path, _, len) in &seen {
        if left == 0 {
            cut.push(path.display().to_string());
            continue;
        }
        let Some(bytes) = read_bounded(path, left) else {
            continue;
        };
        let body = String::from_utf8_lossy(&bytes);
        left -= bytes.len();
        files.push((path.clone(), bytes.len() as u64));
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("# Instructions from {}\n\n", path.display()));
        text.push_str(body.trim_end());
        if (bytes.len() as u64) < *len {
            cut.push(path.display().to_string());
        }
    }
    if !cut.is_empty() {
        text.push_str(&format!(
            "\n\n[instructions cut: {} KiB in all are read; the rest of {} was left out]",
            BUDGET / 1024,
            cut.join(", ")
        ));
    }
    Instructions { files, text, seen }
}

/// At most `limit` bytes of `path`, if it is a regular file that can be read.
fn read_bounded(path: &Path, limit: usize) -> Option<Vec<u8>> {
    let file = open_nonblocking(path).ok()?;
    // It may have been swapped for a FIFO or a device since it was stat'ed.
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::with_capacity(limit.min(BUDGET));
    file.take(limit as u64).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_root_down_to_cwd_after_the_user_file() {
        let t = tempfile::tempdir().unwrap();
        let user = t.path().join("home");
        let repo = t.path().join("repo");
        let cwd = repo.join("a/b");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(t.path().join("AGENTS.md"), "above the repo").unwrap();
        std::fs::write(user.join("AGENTS.md"), "user").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "root").unwrap();
        std::fs::write(repo.join("a/AGENTS.md"), "a").unwrap();
        std::fs::write(repo.join("a/CLAUDE.md"), "not read: AGENTS.md wins").unwrap();
        std::fs::write(cwd.join("AGENTS.md"), "b").unwrap();
        let i = Instructions::load(Some(&user), &cwd, None);
        let names: Vec<_> = i.files.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(
            names,
            [
                user.join("AGENTS.md"),
                repo.join("CLAUDE.md"),
                repo.join("a/AGENTS.md"),
                cwd.join("AGENTS.md")
            ]
        );
        assert!(!i.text.contains("above the repo") && !i.text.contains("not read"));
        let again = Instructions::load(Some(&user), &cwd, Some(&i));
        assert_eq!(again.text, i.text);
    }

    #[test]
    fn the_budget_cuts_with_a_note() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("AGENTS.md"), "x".repeat(BUDGET + 10)).unwrap();
        let i = Instructions::load(Some(&t.path().join("nohome")), t.path(), None);
        assert_eq!(i.files[0].1, BUDGET as u64);
        assert!(i.text.contains("[instructions cut"));
    }
}
