//! A message text that may live on disk rather than in memory (issue 27, item 3).
//!
//! A provider may stream up to 32 MiB of text in one turn (SPEC §17), and the session's
//! next call sends it again, so an answer held in memory made a turn's growth as large as
//! its answer. [`Text`] is either a short text held as a `String` or a long one written to
//! a spill file ([`SpillWriter`], one file per text, in the directory [`set_spill_dir`]
//! names) and read back a piece at a time: its writer in the store, its request body, its
//! head for a result. Reading it whole ([`Text::load`]) is left to the rare caller that
//! needs all of it at once (a compaction's summary request, a snapshot).
//!
//! The file is removed when the last clone of its text is dropped. A daemon killed before
//! that leaves its files in `<dir>/<pid>/`; [`set_spill_dir`] removes those of processes
//! that no longer run. No file descriptor is held between reads, so a long session with
//! many long answers costs no descriptors.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod json;

use json::{escaped_len, splice_here};

/// Where spill files go: `<dir>/<pid>/`. Unset, the system's temporary directory.
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

fn process_dir() -> PathBuf {
    let base = SPILL_DIR
        .get()
        .cloned()
        .unwrap_or_else(|| std::env::temp_dir().join("zeroclaw-spill"));
    base.join(std::process::id().to_string())
}

/// Removes `<dir>/<pid>/` of every pid that no longer runs (Unix; elsewhere a process's
/// files are removed as its texts are dropped).
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

#[cfg(not(unix))]
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

/// The text of a message: held, or spilled to a file.
#[derive(Clone)]
pub enum Text {
    Held(String),
    Spilled(Arc<Spilled>),
}

/// A text written to a spill file, removed when dropped.
pub struct Spilled {
    path: PathBuf,
    len: usize,
    chars: usize,
    /// Its length as a JSON string's contents (escaped), for a request body's length.
    json_len: usize,
}

impl Drop for Spilled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::Held(String::new())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::Held(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::Held(s.to_owned())
    }
}

impl Text {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Text::Held(s) => s.len(),
            Text::Spilled(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its length in characters (counted as it was spilled, not read again).
    pub fn char_count(&self) -> usize {
        match self {
            Text::Held(s) => s.chars().count(),
            Text::Spilled(f) => f.chars,
        }
    }

    /// Its length as the contents of a JSON string (escaped).
    pub fn json_len(&self) -> usize {
        match self {
            Text::Held(s) => escaped_len(s.as_bytes()),
            Text::Spilled(f) => f.json_len,
        }
    }

    /// The text when it is held in memory.
    pub fn as_held(&self) -> Option<&str> {
        match self {
            Text::Held(s) => Some(s),
            Text::Spilled(_) => None,
        }
    }

    /// The whole text: borrowed when held, read from its file when spilled. A spill file
    /// that cannot be read gives what could be read, the failure logged.
    pub fn load(&self) -> Cow<'_, str> {
        match self {
            Text::Held(s) => Cow::Borrowed(s),
            Text::Spilled(f) => Cow::Owned(self.piece(0, f.len).into_owned()),
        }
    }

    /// The text from byte `from` (a character boundary), at most `max` bytes of it cut
    /// back to a character boundary, but at least one character; empty only at the end.
    pub fn piece(&self, from: usize, max: usize) -> Cow<'_, str> {
        match self {
            Text::Held(s) => {
                let rest = s.get(from..).unwrap_or_default();
                let mut end = rest.floor_char_boundary(max.min(rest.len()));
                if end == 0 && !rest.is_empty() {
                    end = rest.ceil_char_boundary(1);
                }
                Cow::Borrowed(&rest[..end])
            }
            Text::Spilled(f) => Cow::Owned(f.read_piece(from, max)),
        }
    }

    /// Whether byte `at` starts a character (or is the end).
    pub fn is_char_boundary(&self, at: usize) -> bool {
        match self {
            Text::Held(s) => s.is_char_boundary(at),
            Text::Spilled(_) if at == 0 || at == self.len() => true,
            Text::Spilled(_) if at > self.len() => false,
            // A piece from `at` starts with a whole character only if `at` is a boundary.
            Text::Spilled(_) => {
                let mut first = [0u8; 1];
                let read = self.read_bytes(at, &mut first);
                read == 1 && (first[0] & 0xC0) != 0x80
            }
        }
    }

    /// Reads raw bytes at `at` of a spilled text; how many were read.
    fn read_bytes(&self, at: usize, buf: &mut [u8]) -> usize {
        match self {
            Text::Held(s) => {
                let src = s.as_bytes().get(at..).unwrap_or_default();
                let n = src.len().min(buf.len());
                buf[..n].copy_from_slice(&src[..n]);
                n
            }
            Text::Spilled(f) => File::open(&f.path)
                .and_then(|file| read_at(&file, buf, at as u64))
                .unwrap_or(0)
                .min(f.len.saturating_sub(at)),
        }
    }

    /// At most its first `max` bytes, cut back to a character boundary, and whether that
    /// is less than the whole text.
    pub fn head(&self, max: usize) -> (Cow<'_, str>, bool) {
        if self.len() <= max {
            return (self.load(), false);
        }
        let head = match self {
            Text::Held(s) => Cow::Borrowed(&s[..s.floor_char_boundary(max)]),
            Text::Spilled(f) => Cow::Owned(f.read_piece(0, max)),
        };
        (head, true)
    }

    /// Calls `f` with each piece of at most `max` bytes (cut at character boundaries), in
    /// order, until it fails.
    pub fn for_each_piece<E>(
        &self,
        max: usize,
        mut f: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut from = 0;
        while from < self.len() {
            let piece = self.piece(from, max);
            if piece.is_empty() {
                break;
            }
            f(&piece)?;
            from += piece.len();
        }
        Ok(())
    }

    /// A text of `s`, spilled to a file when it is at least [`SPILL_AT`] long and a file
    /// could be written (else held).
    pub fn spilled_if_long(s: String) -> Text {
        if s.len() < SPILL_AT {
            return Text::Held(s);
        }
        let mut w = SpillWriter::default();
        match w.write(&s) {
            Ok(()) => w.finish().unwrap_or(Text::Held(s)),
            Err(_) => Text::Held(s),
        }
    }

    /// Whether both are the same spilled text, not merely equal ones.
    fn same_file(&self, other: &Text) -> bool {
        matches!((self, other), (Text::Spilled(a), Text::Spilled(b)) if Arc::ptr_eq(a, b))
    }
}

/// Texts this long or longer are spilled when a turn's step ends (shorter ones stay in
/// memory: a message of a few pages costs less held than written).
pub const SPILL_AT: usize = 64 * 1024;

impl Spilled {
    fn read_piece(&self, from: usize, max: usize) -> String {
        read_piece(&self.path, self.len, from, max)
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
/// into a [`Text`]. Dropped unfinished, its file is removed.
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
            let dir = process_dir();
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

    /// Reads back bytes `from..` of what was written (see [`Text::piece`]).
    pub fn piece(&self, from: usize, max: usize) -> String {
        match &self.file {
            Some((_, path)) => read_piece(path, self.len, from, max),
            None => String::new(),
        }
    }

    /// The written text; `None` when nothing was written.
    pub fn finish(mut self) -> Option<Text> {
        let (file, path) = self.file.take()?;
        drop(file);
        Some(Text::Spilled(Arc::new(Spilled {
            path,
            len: self.len,
            chars: self.chars,
            json_len: self.json_len,
        })))
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

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Text::Held(s) => s.fmt(f),
            Text::Spilled(s) => write!(f, "Text::Spilled({} bytes)", s.len),
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.same_file(other) || (self.len() == other.len() && self.load() == other.load())
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.len() == other.len() && self.load() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// Serialized as the string it is. A spilled one is read whole for it, unless it goes
/// into a request body, which splices it in from its file as it is sent.
impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Text::Held(s) => serializer.serialize_str(s),
            Text::Spilled(_) if splice_here(self) => serializer.serialize_str(""),
            Text::Spilled(_) => serializer.serialize_str(&self.load()),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::Held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spilled(s: &str) -> Text {
        let mut w = SpillWriter::default();
        w.write(s).expect("spill");
        w.finish().expect("written")
    }

    #[test]
    fn a_spilled_text_reads_back_as_written_in_whole_characters() {
        let s = "aé€😀".repeat(1000);
        let t = spilled(&s);
        assert!(t.as_held().is_none());
        assert_eq!(t.len(), s.len());
        assert_eq!(t.char_count(), s.chars().count());
        assert!(t.load() == s, "whole read");
        for max in [1, 2, 3, 5, 7, 64, 1000] {
            let mut back = String::new();
            t.for_each_piece(max, |p| {
                assert!(!p.is_empty() && (p.len() <= max || p.chars().count() == 1));
                back.push_str(p);
                Ok::<(), ()>(())
            })
            .expect("pieces");
            assert!(back == s, "pieces of {max} rebuild the text");
            let held = Text::from(s.clone());
            assert_eq!(t.head(max).0, held.head(max).0, "head of {max}");
            assert!(t.head(max).1);
        }
        assert!(!t.head(s.len()).1);
    }

    #[test]
    fn its_file_is_removed_with_its_last_clone() {
        let t = spilled("hello");
        let Text::Spilled(f) = &t else { panic!("held") };
        let path = f.path.clone();
        let clone = t.clone();
        drop(t);
        assert!(path.exists());
        assert_eq!(clone, Text::from("hello"));
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
    fn only_long_texts_are_spilled_and_they_serialize_as_strings() {
        assert!(Text::spilled_if_long("short".into()).as_held().is_some());
        let long = "x".repeat(SPILL_AT);
        let t = Text::spilled_if_long(long.clone());
        assert!(t.as_held().is_none());
        let json = serde_json::to_string(&t).expect("json");
        let back: Text = serde_json::from_str(&json).expect("back");
        assert!(back == t && back.as_held() == Some(long.as_str()));
    }
}
