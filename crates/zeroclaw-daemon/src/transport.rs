//! The transport abstraction (SPEC §11): a source of inbound frames and a sink for
//! outbound lines, plus who the peer is. Dispatch and sessions never touch a socket.
//!
//! The local stream transport (Unix socket, Windows pipe) frames bytes as NDJSON with the
//! capped decoder; message-framed transports (WebSocket) carry one message per frame.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use zeroclaw_ipc::WriteNow;
use zeroclaw_rpc::{Frame, FrameReader, MAX_FRAME_BYTES};

use crate::lineage::Lineage;

/// Which kind of transport a connection came in on; some methods are local-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Local,
    WebSocket,
}

/// Who is on the other end, as far as the transport knows.
#[derive(Debug, Clone)]
pub struct PeerIdentity {
    /// Audit label: `unix:pid=…,uid=…`, `unix:unknown`, `pipe:<pid>`, `ws:<ip>:<port>`.
    pub label: String,
    /// Local peer uid, when the OS told us.
    pub uid: Option<u32>,
    pub kind: TransportKind,
    /// A network peer's address (what failed logins are counted by, SPEC §20).
    pub ip: Option<std::net::IpAddr>,
    /// A local peer's standing with respect to the programs the daemon started (SPEC
    /// §17.2); always `Outside` over WebSocket.
    pub lineage: Lineage,
}

/// A boxed future: keeps the traits object-safe-ish and spawnable from generic code (the
/// compiler cannot yet prove `Send` for generic `async fn` in traits with borrowed args).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One inbound unit of a transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// One message's bytes (a line without its `\n`, or a WebSocket text message).
    Message(Vec<u8>),
    /// A line over the frame cap (its bytes were skipped).
    Oversize,
    /// A binary WebSocket message: JSON-RPC travels as text.
    Binary,
}

/// Inbound frames of one connection.
pub trait FrameSource: Send + 'static {
    /// The next frame; `None` when the peer closed the connection.
    fn next_frame(&mut self) -> BoxFuture<'_, io::Result<Option<Incoming>>>;

    /// Whether more input is already buffered (the next frame may come without waiting).
    fn has_buffered(&self) -> bool {
        false
    }

    /// Lifts the cap of [`PRE_INITIALIZE_FRAME_BYTES`] that holds until the connection
    /// has completed `initialize`: from now on frames may have the contract's full size.
    fn lift_frame_limit(&mut self);
}

/// The largest frame a peer may send before `initialize` succeeds (SPEC §17.1), so an
/// unauthenticated peer can make the daemon hold no more than this per connection.
pub const PRE_INITIALIZE_FRAME_BYTES: usize = 64 * 1024;

/// Outbound lines of one connection. Each line ends with `\n`.
pub trait FrameSink: Send + 'static {
    fn send_lines<'a>(&'a mut self, lines: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>>;
    fn shutdown(&mut self) -> BoxFuture<'_, ()>;

    /// A way to the same peer that never waits, usable while the sink is busy elsewhere,
    /// where the transport has one (see [`crate::outbound::Outbound::send`]).
    fn write_now_handle(&self) -> Option<Arc<dyn WriteNow>> {
        None
    }
}

/// Read buffer per local connection: small, so idle connections stay cheap (the buffer is
/// zero-filled, so all of it is resident: 8 KiB was more than half of an idle connection's
/// memory). 4 KiB still holds a 64-deep window of small pipelined requests.
const READ_BUFFER: usize = 4 * 1024;

/// NDJSON over a byte stream (Unix socket or named pipe read half).
pub struct StreamSource<R> {
    frames: FrameReader<BufReader<R>>,
}

impl<R: AsyncRead + Send + Unpin + 'static> StreamSource<R> {
    pub fn new(reader: R) -> Self {
        StreamSource {
            frames: FrameReader::with_limit(
                BufReader::with_capacity(READ_BUFFER, reader),
                PRE_INITIALIZE_FRAME_BYTES,
            ),
        }
    }
}

impl<R: AsyncRead + Send + Unpin + 'static> FrameSource for StreamSource<R> {
    fn has_buffered(&self) -> bool {
        !self.frames.get_ref().buffer().is_empty()
    }

    fn lift_frame_limit(&mut self) {
        self.frames.set_limit(MAX_FRAME_BYTES);
    }

    fn next_frame(&mut self) -> BoxFuture<'_, io::Result<Option<Incoming>>> {
        Box::pin(async {
            Ok(self.frames.next_frame().await?.map(|frame| match frame {
                Frame::Line(line) => Incoming::Message(line),
                Frame::Oversize => Incoming::Oversize,
            }))
        })
    }
}

/// NDJSON lines written to a byte stream (write half). A batch of lines goes out in
/// vectored writes straight from the lines' shared buffers when the stream supports them
/// (a Unix socket does); otherwise the small lines are first gathered into one buffer.
pub struct StreamSink<W> {
    writer: W,
    scratch: Vec<u8>,
    write_now: Option<Arc<dyn WriteNow>>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> StreamSink<W> {
    pub fn new(writer: W) -> Self {
        StreamSink {
            writer,
            scratch: Vec::new(),
            write_now: None,
        }
    }

    /// The same, with the stream's non-blocking second way in (an accepted Unix socket).
    pub fn with_write_now(writer: W, write_now: Option<Arc<dyn WriteNow>>) -> Self {
        StreamSink {
            write_now,
            ..StreamSink::new(writer)
        }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> FrameSink for StreamSink<W> {
    fn send_lines<'a>(&'a mut self, lines: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(self.write_lines(lines))
    }

    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            let _ = self.writer.shutdown().await;
        })
    }

    fn write_now_handle(&self) -> Option<Arc<dyn WriteNow>> {
        self.write_now.clone()
    }
}

/// Lines at least this long are written from their own (shared) buffer, never copied into
/// the gathering one: a peer that stops reading mid-write pins no copy of a big line.
const GATHER_LINE_BYTES: usize = 64 * 1024;

/// Lines handed to one vectored write (Linux's `IOV_MAX`).
pub const MAX_SLICES: usize = 1024;

impl<W: AsyncWrite + Send + Unpin + 'static> StreamSink<W> {
    async fn write_lines(&mut self, lines: &[Bytes]) -> io::Result<()> {
        if let [line] = lines {
            return self.writer.write_all(line).await;
        }
        if self.writer.is_write_vectored() {
            return self.write_vectored_all(lines).await;
        }
        self.scratch.clear();
        let mut result = Ok(());
        for line in lines {
            if line.len() < GATHER_LINE_BYTES {
                self.scratch.extend_from_slice(line);
                continue;
            }
            result = self.write_gathered().await;
            if result.is_err() {
                break;
            }
            result = self.writer.write_all(line).await;
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = self.write_gathered().await;
        }
        if self.scratch.capacity() > 2 * GATHER_LINE_BYTES {
            self.scratch = Vec::new();
        }
        result
    }

    /// Writes all of `lines` from their own buffers, [`MAX_SLICES`] at most per write: no
    /// copy, so 16 subscribers of a streaming turn hold no 16 gathering buffers.
    async fn write_vectored_all(&mut self, lines: &[Bytes]) -> io::Result<()> {
        // `lines[next]` is the first line not fully written, `done` bytes of it are.
        let (mut next, mut done) = (0, 0);
        let mut slices = Vec::with_capacity(lines.len().min(MAX_SLICES));
        while next < lines.len() {
            slices.clear();
            slices.push(io::IoSlice::new(&lines[next][done..]));
            slices.extend(
                lines[next + 1..]
                    .iter()
                    .take(MAX_SLICES - 1)
                    .map(|line| io::IoSlice::new(line)),
            );
            let mut written = self.writer.write_vectored(&slices).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            // Also steps over empty lines, which no write would ever take.
            while next < lines.len() && (written > 0 || lines[next].len() == done) {
                let left = lines[next].len() - done;
                if written < left {
                    done += written;
                    written = 0;
                } else {
                    written -= left;
                    next += 1;
                    done = 0;
                }
            }
        }
        Ok(())
    }

    /// Writes the lines gathered so far, if any.
    async fn write_gathered(&mut self) -> io::Result<()> {
        if self.scratch.is_empty() {
            return Ok(());
        }
        let result = self.writer.write_all(&self.scratch).await;
        self.scratch.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context, Poll};

    /// A stream that takes at most `step` bytes per write, vectored or not.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
        vectored: bool,
        writes: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            self.writes += 1;
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            // A wrong offset after a partial write would loop here for ever: fail instead.
            if self.writes > 100_000 {
                return Poll::Ready(Err(io::Error::other("no progress")));
            }
            let mut left = self.step;
            for buf in bufs {
                let n = buf.len().min(left);
                self.out.extend_from_slice(&buf[..n]);
                left -= n;
            }
            self.writes += 1;
            Poll::Ready(Ok(self.step - left))
        }

        fn is_write_vectored(&self) -> bool {
            self.vectored
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_batch_goes_out_whole_and_in_order_through_partial_vectored_writes() {
        // More lines than one vectored write takes, one of them empty and one long.
        let mut lines: Vec<Bytes> = (0..MAX_SLICES + 300)
            .map(|i| Bytes::from(format!("{{\"n\":{i}}}\n")))
            .collect();
        lines.insert(5, Bytes::new());
        lines.push(Bytes::new());
        lines.insert(9, Bytes::from(vec![b'x'; GATHER_LINE_BYTES + 3]));
        let expected: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied()).collect();
        for (step, vectored) in [(7, true), (4096, true), (usize::MAX, true), (7, false)] {
            let mut sink = StreamSink::new(Trickle {
                out: Vec::new(),
                step,
                vectored,
                writes: 0,
            });
            sink.send_lines(&lines).await.expect("written");
            assert_eq!(
                sink.writer.out, expected,
                "step {step}, vectored {vectored}"
            );
            if step == usize::MAX {
                assert_eq!(
                    sink.writer.writes, 2,
                    "two writes of at most {MAX_SLICES} lines"
                );
            }
        }
    }
}
