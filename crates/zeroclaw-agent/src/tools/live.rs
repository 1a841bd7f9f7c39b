//! Live tool output (SPEC §22 "Live tool output"): what a running `bash` prints, passed on
//! in throttled pieces while it runs.
//!
//! The tool pushes every byte it keeps for the model into an [`OutputThrottle`]; the
//! throttle hands a stream's pending bytes on as one [`LiveChunk`] at most every
//! [`CHUNK_INTERVAL`] or as soon as [`CHUNK_BYTES`] are pending. Only bytes within the tool's
//! output limit reach it (the rest is counted by the tool and said in its result), so the
//! chunks of one call never exceed that limit.
//!
//! The chunks go to the turn over a bounded channel ([`live_channel`]) and are never waited
//! for: when the channel is full the bytes stay pending (bounded by the output limit) and
//! go with the next flush, so a slow reader never slows the command.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// A stream's pending output is passed on at most this often…
pub const CHUNK_INTERVAL: Duration = Duration::from_millis(100);
/// …or as soon as this many bytes are pending (a chunk carries at most this many).
pub const CHUNK_BYTES: usize = 4 * 1024;
/// Chunks waiting for the turn to take them.
pub const CHANNEL_CHUNKS: usize = 32;

/// Which of the command's outputs a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    /// The wire name: `stdout`, `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// One piece of a running tool's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveChunk {
    pub stream: OutputStream,
    pub text: String,
}

/// The tool's end of the channel.
pub type LiveSink = mpsc::Sender<LiveChunk>;

/// A bounded channel for one call's chunks.
pub fn live_channel() -> (LiveSink, mpsc::Receiver<LiveChunk>) {
    mpsc::channel(CHANNEL_CHUNKS)
}

/// Pending bytes of one stream and when they were last passed on.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    last_sent: Option<Instant>,
}

/// Why a stream is flushed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    /// [`CHUNK_BYTES`] gathered: whole pieces go now, the rest waits for its time.
    Full,
    /// Its time came: everything pending goes.
    Due,
    /// The command ended: everything goes, an incomplete character included.
    Last,
}

/// Gathers a command's output and passes it on in throttled chunks (see the module doc).
pub struct OutputThrottle<'a> {
    sink: Option<&'a LiveSink>,
    out: Pending,
    err: Pending,
}

impl<'a> OutputThrottle<'a> {
    /// A throttle passing chunks to `sink`; with `None` it keeps nothing.
    pub fn new(sink: Option<&'a LiveSink>) -> Self {
        OutputThrottle {
            sink,
            out: Pending::default(),
            err: Pending::default(),
        }
    }

    fn pending(&mut self, stream: OutputStream) -> &mut Pending {
        match stream {
            OutputStream::Stdout => &mut self.out,
            OutputStream::Stderr => &mut self.err,
        }
    }

    /// Takes bytes the command printed (already within the output limit); passes on what
    /// is due.
    pub fn push(&mut self, stream: OutputStream, bytes: &[u8]) {
        if self.sink.is_none() || bytes.is_empty() {
            return;
        }
        self.pending(stream).bytes.extend_from_slice(bytes);
        if self.pending(stream).bytes.len() >= CHUNK_BYTES {
            self.flush_stream(stream, Flush::Full);
        }
    }

    /// When the next flush is due: `None` while nothing is pending.
    pub fn next_due(&self) -> Option<Instant> {
        [&self.out, &self.err]
            .into_iter()
            .filter(|p| !p.bytes.is_empty())
            .map(|p| match p.last_sent {
                Some(t) => t + CHUNK_INTERVAL,
                None => Instant::now(),
            })
            .min()
    }

    /// Passes on whatever is due now.
    pub fn flush_due(&mut self) {
        let now = Instant::now();
        for stream in [OutputStream::Stdout, OutputStream::Stderr] {
            let p = self.pending(stream);
            let due = !p.bytes.is_empty() && p.last_sent.is_none_or(|t| t + CHUNK_INTERVAL <= now);
            if due {
                self.flush_stream(stream, Flush::Due);
            }
        }
    }

    /// Passes on everything pending (the command ended).
    pub fn finish(&mut self) {
        self.flush_stream(OutputStream::Stdout, Flush::Last);
        self.flush_stream(OutputStream::Stderr, Flush::Last);
    }

    /// Sends the stream's pending bytes in pieces of at most [`CHUNK_BYTES`] (only whole
    /// pieces for [`Flush::Full`]), cut at character boundaries (an incomplete character
    /// at the end waits for its rest unless [`Flush::Last`]). A full channel leaves the
    /// rest pending.
    fn flush_stream(&mut self, stream: OutputStream, how: Flush) {
        let Some(sink) = self.sink else { return };
        let last = how == Flush::Last;
        let p = self.pending(stream);
        while !p.bytes.is_empty() && (how != Flush::Full || p.bytes.len() >= CHUNK_BYTES) {
            let mut end = p.bytes.len().min(CHUNK_BYTES);
            let text = match std::str::from_utf8(&p.bytes[..end]) {
                Ok(s) => s.to_owned(),
                Err(e) if e.valid_up_to() > 0 && e.error_len().is_none() => {
                    // An incomplete character at the cut: send up to it.
                    end = e.valid_up_to();
                    String::from_utf8_lossy(&p.bytes[..end]).into_owned()
                }
                Err(e) if e.error_len().is_none() && !last && end == p.bytes.len() => {
                    // Only the start of a character is pending: wait for the rest.
                    break;
                }
                Err(_) => String::from_utf8_lossy(&p.bytes[..end]).into_owned(),
            };
            match sink.try_send(LiveChunk { stream, text }) {
                Ok(()) => {
                    p.bytes.drain(..end);
                    p.last_sent = Some(Instant::now());
                }
                // Full: kept for the next flush. Closed: nobody reads; drop it all.
                Err(mpsc::error::TrySendError::Full(_)) => break,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    p.bytes.clear();
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn big_output_goes_in_pieces_and_characters_stay_whole() {
        let (tx, mut rx) = live_channel();
        let mut t = OutputThrottle::new(Some(&tx));
        t.push(OutputStream::Stdout, &[b'a'; CHUNK_BYTES + 10]);
        let c = rx.try_recv().unwrap();
        assert_eq!(c.text.len(), CHUNK_BYTES);
        assert!(rx.try_recv().is_err(), "the rest waits for its time");
        // "é" is two bytes: its first one alone is held back.
        t.push(OutputStream::Stderr, &"é".as_bytes()[..1]);
        t.flush_due();
        assert!(rx.try_recv().is_err());
        t.push(OutputStream::Stderr, &"é".as_bytes()[1..]);
        t.flush_due();
        let c = rx.try_recv().unwrap();
        assert_eq!((c.stream, c.text.as_str()), (OutputStream::Stderr, "é"));
        t.finish();
        let c = rx.try_recv().unwrap();
        assert_eq!((c.stream, c.text.len()), (OutputStream::Stdout, 10));
    }

    #[tokio::test]
    async fn a_full_channel_keeps_bytes_pending() {
        let (tx, mut rx) = mpsc::channel(1);
        let mut t = OutputThrottle::new(Some(&tx));
        t.push(OutputStream::Stdout, &[b'x'; 3 * CHUNK_BYTES]);
        assert_eq!(rx.try_recv().unwrap().text.len(), CHUNK_BYTES);
        t.finish();
        assert_eq!(rx.try_recv().unwrap().text.len(), CHUNK_BYTES);
        t.finish();
        assert_eq!(rx.try_recv().unwrap().text.len(), CHUNK_BYTES);
        assert!(t.next_due().is_none());
    }
}
