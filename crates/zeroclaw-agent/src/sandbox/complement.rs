//! Granting "everything beneath a place but these denied paths" with Landlock, which can
//! only allow (SPEC §17.2): the places to put a rule on, found by walking the tree.
//!
//! For a place P: when no denied path is at or beneath P, one rule on P covers it; when P
//! is at or beneath a denied path, nothing; otherwise each entry of P in turn. A denied
//! file's temporaries beside it (`.NAME.…`, as the daemon writes `config.toml`) are denied
//! with it. Symbolic links are not followed (what they name is granted, or not, where it
//! really lives: Landlock checks the file's real place).
//!
//! The cost, by design: an ancestor of a denied path has no rule of its own, so it cannot
//! be listed, and an entry made in it after the walk is out of reach of the program.

use std::path::{Path, PathBuf};

/// At most this many rules for one ruleset: past it the sandbox fails closed.
pub const MAX_RULES: usize = 65_536;

/// The places beneath which everything of `root` but `denied` lies (pushed to `out`).
/// `denied` must hold real paths (canonical, no symlink). Errors when past [`MAX_RULES`].
pub fn grants(root: &Path, denied: &[PathBuf], out: &mut Vec<PathBuf>) -> Result<(), String> {
    if denied.iter().any(|d| root.starts_with(d)) {
        return Ok(());
    }
    if !denied.iter().any(|d| d.starts_with(root)) {
        if out.len() >= MAX_RULES {
            return Err(format!(
                "more than {MAX_RULES} places to grant beside the denied paths"
            ));
        }
        out.push(root.to_path_buf());
        return Ok(());
    }
    // An ancestor of a denied path: its entries one by one. One that cannot be listed (or
    // vanished) is left out: out of reach is the safe side.
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        if is_temporary_of_denied(&path, denied) {
            continue;
        }
        grants(&path, denied, out)?;
    }
    Ok(())
}

/// `DIR/.NAME.…` for a denied `DIR/NAME`.
fn is_temporary_of_denied(path: &Path, denied: &[PathBuf]) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return false;
    };
    denied.iter().any(|d| {
        d.parent() == Some(dir)
            && d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|dn| name.starts_with(&format!(".{dn}.")))
    })
}

/// The real paths of `denied` that exist now (a missing one shapes nothing).
pub fn real_paths(denied: &[PathBuf]) -> Vec<PathBuf> {
    denied
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_everything_but_the_denied_and_their_temporaries() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["a/b", "a/c", "agents/x/workspace", "data"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["config.toml", ".config.toml.tmp1", "a/f", "other"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(root.join("data"), root.join("a/link")).unwrap();
        let denied = real_paths(&[
            root.join("config.toml"),
            root.join("data"),
            root.join("a/b"),
            root.join("missing"),
        ]);
        assert_eq!(denied.len(), 3);
        let mut out = Vec::new();
        grants(&root, &denied, &mut out).unwrap();
        out.sort();
        let mut want: Vec<PathBuf> = ["a/c", "a/f", "agents", "other"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        want.sort();
        assert_eq!(out, want);

        // Nothing denied beneath: one rule; beneath a denied path: none.
        let mut out = Vec::new();
        grants(&root.join("agents"), &denied, &mut out).unwrap();
        assert_eq!(out, vec![root.join("agents")]);
        let mut out = Vec::new();
        grants(&root.join("data"), &denied, &mut out).unwrap();
        assert!(out.is_empty());
    }
}
