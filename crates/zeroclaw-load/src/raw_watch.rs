//! A cheap reader of one subscriber's stream for `fanout`: large reads into one reused
//! buffer, lines found in place (no copy, no allocation per line), and only a fixed-size
//! prefix of each line looked at. Two lines per turn are parsed as JSON: the first chunk
//! and the `turn_complete` (their `turnId` and `eventSeq` check that nothing was lost), so
//! the client spends as little as it can of the CPU it shares with the daemon under test.
//!
//! Set-up (initialize, subscribe) is async; the turn itself is read by [`RawConn::watch`]
//! on an OS thread of its own with blocking reads, one thread per subscriber, so that
//! subscribers keep up with the daemon instead of taking turns on one client thread. Each
//! publishes the chunks it has read so far ([`Progress`]) for the lag to be measured.

use std::io::Read;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::path::Path;
use std::time::{Duration, Instant};
use zeroclaw_protocol::SESSION_UPDATE;
use zeroclaw_protocol::update::{AGENT_MESSAGE_CHUNK, TURN_COMPLETE};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::client::initialize_line;
use crate::error::Result;

/// Bytes asked of the socket per read.
const READ_BYTES: usize = 256 * 1024;
/// How long one read may take before the run is declared failed.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a line is looked at to classify it (the `type` follows the session id).
const HEAD: usize = 192;

/// The byte patterns a line is classified by (built once from the vocabulary's names).
struct Needles {
    update: Vec<u8>,
    chunk: memchr::memmem::Finder<'static>,
    complete: memchr::memmem::Finder<'static>,
    method: memchr::memmem::Finder<'static>,
    error: memchr::memmem::Finder<'static>,
}

static NEEDLES: LazyLock<Needles> = LazyLock::new(|| Needles {
    update: format!(r#"{{"jsonrpc":"2.0","method":"{SESSION_UPDATE}""#).into_bytes(),
    chunk: memchr::memmem::Finder::new(&format!(r#""type":"{AGENT_MESSAGE_CHUNK}""#)).into_owned(),
    complete: memchr::memmem::Finder::new(&format!(r#""type":"{TURN_COMPLETE}""#)).into_owned(),
    method: memchr::memmem::Finder::new(br#""method""#).into_owned(),
    error: memchr::memmem::Finder::new(br#""error""#).into_owned(),
});

/// Chunks one subscriber has read so far, published for the lag measurement.
pub type Progress = std::sync::Arc<AtomicUsize>;

/// What one subscriber saw of a turn.
pub struct Seen {
    /// `agent_message_chunk` updates.
    pub chunks: usize,
    /// All `session/update` lines.
    pub updates: u64,
    /// Start → first chunk.
    pub first: Duration,
    /// First chunk → last chunk.
    pub streaming: Duration,
    /// `turnId` of the first chunk.
    pub turn_id: String,
    /// `eventSeq` of `turn_complete`.
    pub complete_seq: u64,
}

impl Seen {
    pub fn rate(&self) -> f64 {
        self.chunks.saturating_sub(1) as f64 / self.streaming.as_secs_f64().max(1e-9)
    }
}

/// One connection read raw.
pub struct RawConn {
    stream: UnixStream,
    lines: Lines,
}

/// The read buffer: unread bytes are `buf[start..end]`.
struct Lines {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Lines {
    /// The next complete line (without `\n`), if one is buffered.
    fn next(&mut self) -> Option<&[u8]> {
        let nl = memchr::memchr(b'\n', &self.buf[self.start..self.end])?;
        let line = &self.buf[self.start..self.start + nl];
        self.start += nl + 1;
        Some(line)
    }

    /// Room for the next read: the partial line moved to the front, the buffer grown only
    /// for a line longer than a read.
    fn room(&mut self) -> &mut [u8] {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buf.len() - self.end < READ_BYTES {
            self.buf.resize(self.end + READ_BYTES, 0);
        }
        &mut self.buf[self.end..]
    }

    fn filled(&mut self, read: usize) -> Result<()> {
        if read == 0 {
            return Err("server closed the connection".into());
        }
        self.end += read;
        Ok(())
    }
}

fn head(line: &[u8]) -> &[u8] {
    &line[..line.len().min(HEAD)]
}

/// `(turnId, eventSeq)` of an update line.
fn position(line: &[u8]) -> Result<(String, u64)> {
    let v: Value = serde_json::from_slice(line)?;
    let p = &v["params"];
    let turn = p["turnId"].as_str().ok_or("update without turnId")?;
    let seq = p["eventSeq"].as_u64().ok_or("update without eventSeq")?;
    Ok((turn.to_owned(), seq))
}

impl RawConn {
    /// Connects and initializes.
    pub async fn open(socket: &Path) -> Result<RawConn> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        let mut conn = RawConn {
            stream,
            lines: Lines {
                buf: vec![0; READ_BYTES * 2],
                start: 0,
                end: 0,
            },
        };
        conn.send(&initialize_line()).await?;
        conn.answers(1).await?;
        Ok(conn)
    }

    /// Writes one request line (`line` without its `\n`).
    pub async fn send(&mut self, line: &str) -> Result<()> {
        self.stream.write_all(line.as_bytes()).await?;
        self.stream.write_all(b"\n").await?;
        Ok(())
    }

    /// Reads until `n` answers have arrived; an error answer fails.
    pub async fn answers(&mut self, n: usize) -> Result<()> {
        let mut left = n;
        let mut failed = None;
        self.scan(|line| {
            if NEEDLES.method.find(head(line)).is_none() {
                if NEEDLES.error.find(line).is_some() {
                    failed = Some(String::from_utf8_lossy(line).into_owned());
                }
                left -= 1;
            }
            Ok(left == 0)
        })
        .await?;
        match failed {
            Some(answer) => Err(format!("request failed: {answer}").into()),
            None => Ok(()),
        }
    }

    /// Reads one turn on an OS thread of its own: until its `turn_complete` and `answers`
    /// more answers; `progress` counts the chunks read as they come.
    pub fn watch(
        self,
        start: Instant,
        answers: usize,
        progress: Progress,
    ) -> Result<std::thread::JoinHandle<Result<Seen>>> {
        let stream = self.stream.into_std()?;
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        let lines = self.lines;
        Ok(std::thread::Builder::new()
            .name("subscriber".into())
            .spawn(move || watch_turn(stream, lines, start, answers, &progress))?)
    }

    /// Hands each complete line (without `\n`) to `f` until it returns `true`.
    async fn scan(&mut self, mut f: impl FnMut(&[u8]) -> Result<bool>) -> Result<()> {
        loop {
            while let Some(line) = self.lines.next() {
                if !line.is_empty() && f(line)? {
                    return Ok(());
                }
            }
            let read = tokio::time::timeout(READ_TIMEOUT, self.stream.read(self.lines.room()))
                .await
                .map_err(|_| format!("nothing received within {READ_TIMEOUT:?}"))??;
            self.lines.filled(read)?;
        }
    }
}

/// [`RawConn::watch`]'s thread: blocking reads of one subscriber's turn.
fn watch_turn(
    mut stream: std::os::unix::net::UnixStream,
    mut lines: Lines,
    start: Instant,
    answers: usize,
    progress: &AtomicUsize,
) -> Result<Seen> {
    let (mut chunks, mut updates, mut left) = (0usize, 0u64, answers);
    let (mut first, mut last) = (None, start);
    let mut turn_id = None;
    let mut complete_seq = None;
    'read: loop {
        while let Some(line) = lines.next() {
            if line.is_empty() {
                continue;
            }
            let h = head(line);
            if h.starts_with(&NEEDLES.update) {
                updates += 1;
                if NEEDLES.chunk.find(h).is_some() {
                    let now = Instant::now();
                    if first.is_none() {
                        first = Some(now);
                        turn_id = Some(position(line)?.0);
                    }
                    last = now;
                    chunks += 1;
                } else if NEEDLES.complete.find(h).is_some() {
                    complete_seq = Some(position(line)?.1);
                }
            } else if NEEDLES.method.find(h).is_none() {
                left = left.saturating_sub(1);
            }
            if complete_seq.is_some() && left == 0 {
                break 'read;
            }
        }
        progress.store(chunks, Ordering::Relaxed);
        let read = match stream.read(lines.room()) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!("nothing received within {READ_TIMEOUT:?}").into());
            }
            read => read?,
        };
        lines.filled(read)?;
    }
    progress.store(chunks, Ordering::Relaxed);
    let first = first.ok_or("no chunk received")?;
    Ok(Seen {
        chunks,
        updates,
        first: first - start,
        streaming: last - first,
        turn_id: turn_id.unwrap_or_default(),
        complete_seq: complete_seq.unwrap_or_default(),
    })
}
