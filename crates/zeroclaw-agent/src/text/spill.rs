//! Spill files: where a long [`Text`](super::Text) lives instead of memory (issue 27,
//! item 3).
//!
//! One file per text, `<dir>/<pid>/<n>.txt` under the directory [`set_spill_dir`] names
//! (the daemon's data dir; until it is named nothing is spilled), written once by a
//! [`SpillWriter`] and read back a piece at a time. A file is removed when the last clone
//! of its text is dropped, or when its writer is dropped unfinished. A process killed
//! before that leaves its directory behind; [`set_spill_dir`] removes those of processes
//! that no longer run. No file descriptor is held between reads, so a long session with
//! many long answers costs none.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::escape::escaped_len;

/// Where spill files go: `<dir>/<pid>/`. Unset, nothing is spilled.
static SPILL_DIR: OnceLock<PathBuf> = OnceLock::new();
/// Names the next spill file of this process.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// Puts this process's spill files under `dir` (the daemon's data dir: spilled texts are
/// disk, not memory; a `/tmp` on tmpfs would be memory again) and removes what processes
/// that no longer run left there. Only the first call counts.
pub fn set_spill_dir(dir: &Path) {
    if SPILL_DIR.set(dir.to_path_buf()).is_ok() {
        remove_orphans(dir);
    }
}

/// A spill directory for tests: a temporary one, kept for the process's life.
#[doc(hidden)]
pub fn set_spill_dir_for_tests() {
    if SPILL_DIR.get().is_none()
        && let Ok(dir) = tempfile::Builder::new().prefix("zeroclaw-spill").tempdir()
    {
        set_spill_dir(&dir.keep());
    }
}

/// This process's directory of spill files; `None` when none was set (texts are then
/// held: a shared temporary directory is no place for a session's answers).
fn process_dir() -> io::Result<PathBuf> {
    let base = SPILL_DIR
        .get()
        .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no spill directory was set"))?;
    Ok(base.join(std::process::id().to_string()))
}

/// Removes `<dir>/<pid>/` of every pid that no longer runs (asked of the system on Unix
/// and Windows; elsewhere every process is taken to run).
fn remove_orphans(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !process_runs(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(unix)]
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; it only asks whether `pid` exists.
    #[allow(unsafe_code)]
    let alive = unsafe { libc::kill(pid, 0) == 0 };
    alive || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(windows)]
#[allow(unsafe_code)]
fn process_runs(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{
        CloseHandle, ERROR_INVALID_PARAMETER, GetLastError, STILL_ACTIVE,
    };
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: OpenProcess takes plain values and returns a handle or null; a handle is
    // passed to GetExitCodeProcess with a valid out pointer, then closed once.
    unsafe {
        let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if handle.is_null() {
            // No such process; any other failure (access denied) may be a running one.
            return GetLastError() != ERROR_INVALID_PARAMETER;
        }
        let mut code = 0u32;
        let known = GetExitCodeProcess(handle, &mut code) != 0;
        CloseHandle(handle);
        !known || code == STILL_ACTIVE as u32
    }
}

#[cfg(not(any(unix, windows)))]
fn process_runs(_pid: u32) -> bool {
    true
}

/// Reads up to `buf.len()` bytes at `offset` (fewer only at the end of the file).
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<usize> {
    let mut read = 0;
    while !buf.is_empty() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, buf, offset)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset)?;
        if n == 0 {
            break;
        }
        read += n;
        offset += n as u64;
        buf = &mut buf[n..];
    }
    Ok(read)
}

/// A text written to a spill file, removed when dropped.
pub struct Spilled {
    path: PathBuf,
    len: usize,
    chars: usize,
    /// Its length as a JSON string's contents (escaped), for a request body's length.
    json_len: usize,
}

impl std::fmt::Debug for Spilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spilled({} bytes)", self.len)
    }
}

impl Drop for Spilled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Spilled {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its length in characters, counted as it was written.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// Its length as the contents of a JSON string (escaped), counted as it was written.
    pub fn json_len(&self) -> usize {
        self.json_len
    }

    /// Bytes `from..`, at most `max`, cut back to a character boundary (at least one
    /// character when there is one); empty at the end, or when the file cannot be read.
    pub fn read_piece(&self, from: usize, max: usize) -> String {
        read_piece(&self.path, self.len, from, max)
    }

    /// Calls `f` with each piece of at most `max` bytes, in order, until it fails. A file
    /// that can no longer be read ends it early (the caller sees fewer bytes than
    /// [`Spilled::len`]).
    pub fn for_each_piece<E>(
        &self,
        max: usize,
        mut f: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut from = 0;
        while from < self.len {
            let piece = self.read_piece(from, max);
            if piece.is_empty() {
                break;
            }
            f(&piece)?;
            from += piece.len();
        }
        Ok(())
    }

    /// Its file (tests remove it to see a reader fail).
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether byte `at` starts a character (or is the end).
    pub fn is_char_boundary(&self, at: usize) -> bool {
        if at == 0 || at == self.len {
            return true;
        }
        if at > self.len {
            return false;
        }
        let mut first = [0u8; 1];
        let read = File::open(&self.path).and_then(|file| read_at(&file, &mut first, at as u64));
        matches!(read, Ok(1)) && (first[0] & 0xC0) != 0x80
    }
}

/// Bytes `from..` of the `len` bytes of text in the file at `path`, at most `max`, cut
/// back to a character boundary (at least one character when there is one).
fn read_piece(path: &Path, len: usize, from: usize, max: usize) -> String {
    let want = max.min(len.saturating_sub(from));
    if want == 0 {
        return String::new();
    }
    // Room for the rest of a character the cut would split.
    let mut buf = vec![0u8; want + 3];
    let read = File::open(path).and_then(|f| read_at(&f, &mut buf, from as u64));
    let read = match read {
        Ok(n) => n.min(len - from),
        Err(e) => {
            tracing::error!(path = %path.display(), "spilled text unreadable: {e}");
            return String::new();
        }
    };
    buf.truncate(read);
    let mut end = want.min(read);
    while end > 0 && end < read && (buf[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    if end == 0 {
        // A single character longer than `max`: give it whole.
        end = 1;
        while end < read && (buf[end] & 0xC0) == 0x80 {
            end += 1;
        }
    }
    buf.truncate(end);
    match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(path = %path.display(), "spilled text damaged: {e}");
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    }
}

/// A spill file being written: texts appended in order, then [`SpillWriter::finish`]ed
/// into a [`Spilled`]. Dropped unfinished, its file is removed.
#[derive(Default)]
pub struct SpillWriter {
    file: Option<(File, PathBuf)>,
    len: usize,
    chars: usize,
    json_len: usize,
}

impl SpillWriter {
    /// Appends `s`, creating the file on the first write.
    pub fn write(&mut self, s: &str) -> io::Result<()> {
        if self.file.is_none() {
            let dir = process_dir()?;
            std::fs::create_dir_all(&dir)?;
            let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("{n}.txt"));
            let file = File::options().write(true).create_new(true).open(&path)?;
            self.file = Some((file, path));
        }
        if let Some((file, _)) = &mut self.file {
            file.write_all(s.as_bytes())?;
        }
        self.len += s.len();
        self.chars += s.chars().count();
        self.json_len += escaped_len(s.as_bytes());
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads back bytes `from..` of what was written (see [`Spilled::read_piece`]).
    pub fn piece(&self, from: usize, max: usize) -> String {
        match &self.file {
            Some((_, path)) => read_piece(path, self.len, from, max),
            None => String::new(),
        }
    }

    /// The written text; `None` when nothing was written.
    pub fn finish(mut self) -> Option<Arc<Spilled>> {
        let (file, path) = self.file.take()?;
        drop(file);
        Some(Arc::new(Spilled {
            path,
            len: self.len,
            chars: self.chars,
            json_len: self.json_len,
        }))
    }
}

impl Drop for SpillWriter {
    fn drop(&mut self) {
        if let Some((file, path)) = self.file.take() {
            drop(file);
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_removed_with_its_last_clone_or_its_unfinished_writer() {
        set_spill_dir_for_tests();
        let mut w = SpillWriter::default();
        w.write("hello").expect("spill");
        let t = w.finish().expect("written");
        let path = t.path.clone();
        let clone = Arc::clone(&t);
        drop(t);
        assert!(path.exists());
        assert_eq!(clone.read_piece(0, 100), "hello");
        drop(clone);
        assert!(!path.exists());
        let mut w = SpillWriter::default();
        w.write("unfinished").expect("spill");
        let Some((_, path)) = &w.file else {
            panic!("no file")
        };
        let path = path.clone();
        drop(w);
        assert!(!path.exists(), "an unfinished spill leaves no file");
    }

    #[test]
    fn the_directories_of_processes_that_no_longer_run_are_removed() {
        let base = tempfile::tempdir().expect("tempdir");
        // No process has pid 0 to signal here, nor a pid above the kernel's maximum.
        let gone = base.path().join("4294967295");
        let mine = base.path().join(std::process::id().to_string());
        let other = base.path().join("not-a-pid");
        for dir in [&gone, &mine, &other] {
            std::fs::create_dir_all(dir).expect("mkdir");
            std::fs::write(dir.join("0.txt"), "x").expect("write");
        }
        remove_orphans(base.path());
        assert!(!gone.exists(), "a dead process's files go");
        assert!(mine.exists() && other.exists(), "the rest stays");
    }
}
