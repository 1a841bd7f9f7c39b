//! Reading a local file named by a `file/attach` `path` (SPEC §17 "Path attachments read
//! safely"), so that no file can stall the daemon.
//!
//! The file is opened non-blocking (a FIFO or a device cannot hold the `open`), then the
//! opened handle — not the path, which may have been swapped since — must be a regular
//! file. At most the limit plus one byte is read whatever size the file claims (`/proc`
//! files claim 0). All of it runs on a dedicated thread awaited with a deadline: a read
//! that never returns fails the request and its thread is abandoned, and only a few such
//! threads may be outstanding at once, so they cannot pile up either.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long one path read may take before the request gives up on it.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);
/// Reader threads that may be running at once (abandoned ones included).
pub const MAX_PENDING_READS: usize = 8;

static PENDING: AtomicUsize = AtomicUsize::new(0);

/// One of the [`MAX_PENDING_READS`] reader slots, given back when the reader ends.
struct Slot;

impl Slot {
    fn take() -> Result<Slot, String> {
        let taken = PENDING.fetch_add(1, Ordering::SeqCst);
        if taken >= MAX_PENDING_READS {
            PENDING.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "{taken} earlier path reads have not finished; try again later"
            ));
        }
        Ok(Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        PENDING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads the regular file at `path` (at most `limit` bytes) off the async threads, giving
/// up after [`READ_DEADLINE`]. The error is a reason fit for a -32602 message.
pub async fn read_path(path: PathBuf, limit: usize) -> Result<Vec<u8>, String> {
    let shown = path.display().to_string();
    run_with_deadline(READ_DEADLINE, move || read_regular(&path, limit))
        .await
        .map_err(|e| format!("{shown}: {e}"))
}

/// Runs `job` on its own thread and waits for it at most `deadline`.
async fn run_with_deadline<T: Send + 'static>(
    deadline: Duration,
    job: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let slot = Slot::take()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("zeroclaw-path-read".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let _slot = slot;
            let _ = tx.send(job());
        })
        .map_err(|e| format!("cannot start a reader thread: {e}"))?;
    match tokio::time::timeout(deadline, rx).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("the reader thread ended without an answer".into()),
        Err(_) => Err(format!(
            "reading did not finish within {} s; abandoned",
            deadline.as_secs_f64()
        )),
    }
}

fn not_regular() -> String {
    "not a regular file".into()
}

/// The blocking part: a first check of the name, then the opened handle, then a capped read.
fn read_regular(path: &Path, limit: usize) -> Result<Vec<u8>, String> {
    // A cheap first refusal, so that devices are not even opened (opening some has effects).
    let named = fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !named.is_file() {
        return Err(not_regular());
    }
    let (file, size) = open_regular(path)?;
    let cap = (limit as u64).saturating_add(1);
    let mut bytes = Vec::with_capacity(size.min(cap) as usize);
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| match e.kind() {
            ErrorKind::WouldBlock => "reading would block: not an ordinary file".to_string(),
            _ => format!("cannot read: {e}"),
        })?;
    if bytes.len() > limit {
        return Err(format!(
            "more than {limit} bytes (whatever size it claims); at most {limit} are allowed"
        ));
    }
    Ok(bytes)
}

/// Opens `path` without blocking and checks what was opened (the name may have been
/// swapped since any earlier check): a regular file, with the size it claims.
fn open_regular(path: &Path) -> Result<(File, u64), String> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: a FIFO opens at once instead of waiting for a writer, and reads
        // that would wait (`/proc/kmsg`) fail instead.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options
        .open(path)
        .map_err(|e| format!("cannot open: {e}"))?;
    let opened = file.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    if !opened.file_type().is_file() {
        return Err(not_regular());
    }
    Ok((file, opened.len()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;

    #[allow(unsafe_code)]
    fn mkfifo(path: &Path) {
        let c = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[tokio::test]
    async fn regular_files_are_read_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_path(path.clone(), 10).await.unwrap(), b"0123456789");
        let e = read_path(path, 9).await.unwrap_err();
        assert!(e.contains("more than 9 bytes"), "{e}");
    }

    #[tokio::test]
    async fn non_regular_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let started = Instant::now();
        for path in [fifo.as_path(), dir.path(), Path::new("/dev/null")] {
            let e = read_path(path.to_path_buf(), 100).await.unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
        // The opened handle is checked too: a FIFO reaching the open is refused at once.
        assert_eq!(open_regular(&fifo).unwrap_err(), not_regular());
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn files_larger_than_they_claim_are_cut_off() {
        // `/proc/self/pagemap` claims size 0 but reads on for gigabytes (in 8-byte
        // records: the read of the one byte past the cap is refused by the kernel).
        let started = Instant::now();
        let e = read_path("/proc/self/pagemap".into(), 4096)
            .await
            .unwrap_err();
        assert!(
            e.contains("more than 4096 bytes") || e.contains("Invalid argument"),
            "{e}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        // A file that is larger than it claims: more than the cap is never read.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        fs::write(&path, vec![7u8; 5000]).unwrap();
        let e = read_path(path, 4096).await.unwrap_err();
        assert!(e.contains("more than 4096 bytes"), "{e}");
    }

    #[tokio::test]
    async fn a_read_that_never_ends_is_abandoned_at_the_deadline() {
        let ended = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ended);
        let started = Instant::now();
        let e = run_with_deadline(Duration::from_millis(100), move || {
            std::thread::sleep(Duration::from_millis(600));
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(e.contains("did not finish"), "{e}");
        assert!(started.elapsed() < Duration::from_millis(500));
        assert!(
            !ended.load(Ordering::SeqCst),
            "answered before the job ended"
        );
    }
}
