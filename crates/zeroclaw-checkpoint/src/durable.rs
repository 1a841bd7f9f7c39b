//! Making writes durable: a file written whole under a temporary name then renamed into
//! place ([`write_atomic`]), directory fsyncs, and [`sync_many`] (one `fsync` per file for a
//! few files, one `syncfs` for many). A leaf.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{IoContext, Result};
use crate::limits::FSYNC_EACH_UP_TO;

/// The prefix of this crate's temporary files in its own directories (swept on load).
pub const TEMP_PREFIX: &str = ".tmp-";

/// A fresh temporary name in this process.
pub fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{TEMP_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes `bytes` to `path` atomically and durably: a temporary file in the same directory,
/// fsynced, renamed over `path`, then the directory fsynced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(temp_name());
    let written = (|| {
        let mut f = create_new(&temp)?;
        f.write_all(bytes)
            .ctx(|| format!("write {}", temp.display()))?;
        f.sync_all().ctx(|| format!("fsync {}", temp.display()))?;
        std::fs::rename(&temp, path)
            .ctx(|| format!("rename {} to {}", temp.display(), path.display()))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written?;
    sync_dir(dir)
}

/// Creates a new file (never follows or replaces anything at `path`), owner-only.
pub fn create_new(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ctx(|| format!("create {}", path.display()))
}

/// fsync of a directory, so the names created or removed in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .ctx(|| format!("fsync {}", dir.display()))
}

/// Makes the content of `files` durable (they are all on the file system of `anchor`).
pub fn sync_many(files: &[PathBuf], anchor: &Path) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    if files.len() > FSYNC_EACH_UP_TO && syncfs(anchor).is_ok() {
        return Ok(());
    }
    for f in files {
        File::open(f)
            .and_then(|f| f.sync_all())
            .ctx(|| format!("fsync {}", f.display()))?;
    }
    Ok(())
}

/// `syncfs(2)` of the file system holding `anchor`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn syncfs(anchor: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = File::open(anchor).ctx(|| format!("open {}", anchor.display()))?;
    // SAFETY: a valid open descriptor, borrowed for the call.
    let rc = unsafe { libc::syncfs(f.as_raw_fd()) };
    if rc != 0 {
        return Err(crate::error::io_error(
            format!("syncfs {}", anchor.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn syncfs(anchor: &Path) -> Result<()> {
    Err(crate::error::io_error(
        format!("syncfs {}", anchor.display()),
        std::io::Error::from(std::io::ErrorKind::Unsupported),
    ))
}

/// Removes this crate's leftover temporary files in `dir` (a crash between a write and its
/// rename leaves one).
pub fn sweep_temps(dir: &Path) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
