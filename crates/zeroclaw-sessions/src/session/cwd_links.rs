//! Where a requested `cwd` that does not resolve would lead ([`leads_outside`]): the
//! answer a non-admin gets for a `cwd` that is a link inside the workspace to a missing
//! path outside it is -32012, like one to an existing path (SPEC §17.2, last bullet), not
//! -32602 (which would tell whether the path outside exists).
//!
//! The path is followed as far as the disk goes — each symlink met replaced by its target
//! (never opened, only read) — and the rest is taken lexically. A leaf.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Most links followed (as the kernel's `ELOOP` bound); past it the path leads nowhere.
const MAX_LINKS: usize = 40;

fn parts(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(s) => Some(s.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        _ => None,
    })
}

/// Whether `workspace.join(requested)` (`workspace` canonical) leads outside `workspace`
/// through its links, existing or not; a link loop leads nowhere (`false`).
pub fn leads_outside(workspace: &Path, requested: &str) -> bool {
    let full = workspace.join(requested);
    let mut pending: VecDeque<OsString> = parts(&full).collect();
    let mut cur = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            cur.pop();
            continue;
        }
        let cand = cur.join(&part);
        match std::fs::read_link(&cand) {
            Ok(target) => {
                links += 1;
                if links > MAX_LINKS {
                    return false;
                }
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                for p in parts(&target).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(p);
                }
            }
            Err(_) => cur = cand,
        }
    }
    !cur.starts_with(workspace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_to_missing_paths_are_followed_lexically() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().canonicalize().unwrap();
        let ws = top.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        symlink(top.join("gone/deeper"), ws.join("out")).unwrap();
        symlink("../../elsewhere", ws.join("sub/rel")).unwrap();
        symlink("sub/missing", ws.join("in")).unwrap();
        symlink("loop", ws.join("loop")).unwrap();
        assert!(leads_outside(&ws, "out"));
        assert!(leads_outside(&ws, "out/x"));
        assert!(leads_outside(&ws, "sub/rel"));
        assert!(!leads_outside(&ws, "in"));
        assert!(!leads_outside(&ws, "missing/dir"));
        assert!(!leads_outside(&ws, "loop"));
    }
}
