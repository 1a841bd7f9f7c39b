//! Whether the `zeroclaw` binary the tests found was built from the sources as they are now.
//!
//! `cargo test -p zeroclaw-e2e` builds no binary of another package, so after an edit the
//! end-to-end tests would run yesterday's daemon and fail (or pass) for reasons that are
//! not in the code. Cargo writes beside every binary it builds a dep-info file
//! (`target/debug/zeroclaw.d`: `BINARY: SOURCE SOURCE …`) naming each file that went into
//! it; the binary is stale when one of those is newer than it or gone. [`check`] then fails
//! with the command that rebuilds it. Cargo writes that file only for a binary that was the
//! command's own target (`cargo build -p zeroclaw`), not for one built as a dependency of
//! tests (`cargo test --workspace` on a fresh checkout writes none), and a target dir copied
//! from another checkout has one naming that checkout's files: with no file, or one that
//! names another binary, there is nothing to judge by and the binary is taken as it is.
//! Only the binary found next to the test executable is checked: one given by
//! `ZEROCLAW_TEST_BIN` is the caller's choice.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The command that builds the binary the tests expect.
pub const BUILD: &str = "cargo build -p zeroclaw --features test-hooks";

/// Panics, naming [`BUILD`], when `bin` is older than a source it was built from.
pub fn check(bin: &Path) {
    if let Err(why) = freshness(bin) {
        panic!(
            "the zeroclaw binary {} is stale: {why}. The end-to-end tests run the real \
             binary and `cargo test -p zeroclaw-e2e` does not build it; rebuild it with \
             its test hooks first:\n\n    {BUILD}\n\n(`cargo test --workspace` builds it too; \
             set ZEROCLAW_TEST_BIN to run another binary without this check)",
            bin.display()
        );
    }
}

/// `Err` (why) when `bin`'s dep-info file names `bin` itself and a source newer than it
/// or gone; `Ok` otherwise (no dep-info, or one written for a binary elsewhere: nothing to
/// judge by).
fn freshness(bin: &Path) -> Result<(), String> {
    let built = modified(bin)?;
    let dep_info = bin.with_extension("d");
    let Ok(text) = std::fs::read_to_string(&dep_info) else {
        return Ok(());
    };
    let Some((target, sources)) = rule(&text) else {
        return Ok(());
    };
    if canonical(&target) != canonical(bin) {
        return Ok(());
    }
    for source in sources {
        if modified(&source)? > built {
            return Err(format!("{} changed after it was built", source.display()));
        }
    }
    Ok(())
}

fn modified(path: &Path) -> Result<SystemTime, String> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// A dep-info file's first rule, `TARGET: SOURCE SOURCE …`, where `\ ` is a space inside
/// a path (make's escaping, which cargo writes).
fn rule(text: &str) -> Option<(PathBuf, Vec<PathBuf>)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut target = None;
    let mut chars = text.lines().next()?.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.push(chars.next().unwrap_or('\\')),
            ':' if target.is_none() && chars.peek().is_none_or(|n| *n == ' ') => {
                target = Some(PathBuf::from(std::mem::take(&mut word)));
            }
            ' ' => {
                if !word.is_empty() {
                    words.push(PathBuf::from(std::mem::take(&mut word)));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(PathBuf::from(word));
    }
    Some((target?, words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_rule_is_its_target_and_the_words_after_it_with_escaped_spaces() {
        let (target, sources) =
            rule("/t/zeroclaw: /w/a.rs /w/my\\ dir/b.rs  /w/c.rs\n\n/w/a.rs:\n").unwrap();
        assert_eq!(target, PathBuf::from("/t/zeroclaw"));
        let want: Vec<PathBuf> = ["/w/a.rs", "/w/my dir/b.rs", "/w/c.rs"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(sources, want);
        assert!(rule("no rule here").is_none());
    }

    #[test]
    fn a_binary_older_than_a_source_is_stale_and_one_without_its_own_dep_info_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("main.rs");
        let bin = dir.path().join("zeroclaw");
        std::fs::write(&source, b"").unwrap();
        std::fs::write(&bin, b"").unwrap();
        let rule_of = |target: &Path| format!("{}: {}\n", target.display(), source.display());
        let set_time = |p: &Path, t: SystemTime| {
            let f = std::fs::File::options().write(true).open(p).unwrap();
            f.set_modified(t).unwrap();
        };
        let now = SystemTime::now();
        // Built after its one source: fresh.
        std::fs::write(bin.with_extension("d"), rule_of(&bin)).unwrap();
        set_time(&source, now - Duration::from_secs(60));
        set_time(&bin, now);
        assert_eq!(freshness(&bin), Ok(()));
        // The source edited since: stale, naming it.
        set_time(&source, now + Duration::from_secs(60));
        let err = freshness(&bin).unwrap_err();
        assert!(err.contains("main.rs changed after"), "{err}");
        set_time(&source, now - Duration::from_secs(60));
        // The source gone: stale.
        std::fs::remove_file(&source).unwrap();
        assert!(freshness(&bin).unwrap_err().contains("main.rs"));
        std::fs::write(&source, b"").unwrap();
        set_time(&source, now - Duration::from_secs(60));
        // The dep-info of a binary built somewhere else (a copied target dir), even with a
        // source newer than the binary there: nothing to judge by.
        let elsewhere = dir.path().join("other/zeroclaw");
        std::fs::write(bin.with_extension("d"), rule_of(&elsewhere)).unwrap();
        set_time(&source, now + Duration::from_secs(60));
        assert_eq!(freshness(&bin), Ok(()));
        // No dep-info file at all (`cargo test --workspace` on a fresh checkout): the same.
        std::fs::remove_file(bin.with_extension("d")).unwrap();
        assert_eq!(freshness(&bin), Ok(()));
    }
}
