//! Atomic file replacement, the one way zeroclaw writes a file others read (the config
//! file, stored uploads, the pairing tokens): a fresh temp file in the target's directory
//! (created exclusively, mode 0600), written and fsynced, renamed over the target, then the
//! directory fsynced so the rename itself survives a crash. Readers see the old bytes or
//! the new bytes, never a mix; the rename replaces a symlink at the target without
//! following it.
//!
//! Temp files are named `<prefix><6 random ASCII letters and digits>`; an interrupted write
//! leaves one behind, which [`sweep_temp_files`] (run by whoever owns the directory, with
//! no writer in flight) removes.

use std::io::{self, Write};
use std::path::Path;

/// Random characters after a temp file's prefix.
const RANDOM_LEN: usize = 6;

/// Writes `bytes` to `path` atomically (mode 0600), through a temp file named
/// `<temp_prefix><random>` beside it. With `no_clobber`, an existing `path` is left alone
/// and `AlreadyExists` is returned.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    temp_prefix: &str,
    no_clobber: bool,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(temp_prefix)
        .suffix("")
        .rand_bytes(RANDOM_LEN)
        .tempfile_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if no_clobber {
        tmp.persist_noclobber(path).map_err(|e| e.error)?;
    } else {
        tmp.persist(path).map_err(|e| e.error)?;
    }
    sync_dir(dir)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    // Windows cannot open a directory as a file to flush it; the rename is durable once
    // MoveFileEx returns with the file already flushed.
    Ok(())
}

/// Whether `name` is a temp file [`write_atomic`] makes with `temp_prefix`.
pub fn is_temp_name(name: &str, temp_prefix: &str) -> bool {
    name.strip_prefix(temp_prefix)
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes the regular files in `dir` named `<temp_prefix><random>` (see [`is_temp_name`]);
/// every other entry stays. Call only while no writer using that prefix is in flight.
/// Returns how many were removed; failures are logged, never fatal.
pub fn sweep_temp_files(dir: &Path, temp_prefix: &str) -> usize {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot list a directory to sweep");
            return 0;
        }
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_name(name, temp_prefix) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!(file = name, error = %e, "cannot remove a temp file"),
        }
    }
    if removed > 0 {
        tracing::info!(removed, dir = %dir.display(), "removed temp files left by an interrupted write");
    }
    removed
}

/// Creates `dir` (and parents) if missing; new directories get mode 0700.
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_files_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"one", ".f.json.", false).unwrap();
        write_atomic(&path, b"two", ".f.json.", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let e = write_atomic(&path, b"three", ".f.json.", true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"secret").unwrap();
        let path = dir.path().join("f");
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        write_atomic(&path, b"new", ".f.", false).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    }

    #[test]
    fn sweeps_only_its_own_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in [".t.abc123", ".t.Z", "t", ".t.", ".t.a-b", ".u.abc123"] {
            std::fs::write(d.join(name), "x").unwrap();
        }
        std::fs::create_dir(d.join(".t.dir1")).unwrap();
        assert_eq!(sweep_temp_files(d, ".t."), 2);
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [".t.", ".t.a-b", ".t.dir1", ".u.abc123", "t"]);
        assert_eq!(sweep_temp_files(&d.join("missing"), ".t."), 0);
    }
}
