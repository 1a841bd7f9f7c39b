//! Atomic replacement of the config file: a temp file in the same directory, mode 0600,
//! written and fsynced, renamed over the target, then the directory fsynced so the rename
//! itself survives a crash. Readers see the old bytes or the new bytes, never a mix.

use std::io::{self, Write};
use std::path::Path;

/// Writes `text` to `path` atomically (mode 0600). With `no_clobber`, an existing `path`
/// is left alone and `AlreadyExists` is returned.
pub(crate) fn write_atomic(path: &Path, text: &str, no_clobber: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // `.config.toml.<6 random letters and digits>`: the name the start-up sweep removes.
    let mut tmp = tempfile::Builder::new()
        .prefix(crate::sweep::TEMP_PREFIX)
        .suffix("")
        .rand_bytes(6)
        .tempfile_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.write_all(text.as_bytes())?;
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
