//! A read allowance for message-framed transports before `initialize` (SPEC §17.1).
//!
//! The WebSocket library assembles a whole message before handing it over, up to the
//! contract's 8 MiB. Until the connection has completed `initialize`, [`Gated`] lets the
//! library read at most [`PRE_INITIALIZE_FRAME_BYTES`] (plus the read-ahead of one read)
//! per message from the socket; a peer that sends more gets its read failed, which the
//! connection reports as an oversize frame and closes on. Once `initialize` succeeds the
//! gate opens for good and reads go straight through.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::transport::PRE_INITIALIZE_FRAME_BYTES;

/// The state shared by the gated stream and the connection that opens it.
#[derive(Default)]
pub struct ReadGate {
    open: AtomicBool,
    /// Bytes read since the last message was delivered (while closed).
    read: AtomicUsize,
    /// Set when a read was refused for passing the allowance.
    overflowed: AtomicBool,
}

impl ReadGate {
    /// Reads go straight through from now on.
    pub fn open(&self) {
        self.open.store(true, Ordering::Release);
    }

    /// A message was delivered: the next one gets a fresh allowance.
    pub fn message_delivered(&self) {
        self.read.store(0, Ordering::Relaxed);
    }

    /// Whether a read was refused for passing the allowance.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Acquire)
    }
}

/// A stream whose reads draw on a [`ReadGate`]'s allowance until it opens.
pub struct Gated<S> {
    inner: S,
    gate: Arc<ReadGate>,
}

impl<S> Gated<S> {
    pub fn new(inner: S, gate: Arc<ReadGate>) -> Self {
        Gated { inner, gate }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gated<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.gate.open.load(Ordering::Acquire) {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let read = self.gate.read.load(Ordering::Relaxed);
        let allowed = PRE_INITIALIZE_FRAME_BYTES.saturating_sub(read);
        if allowed == 0 {
            self.gate.overflowed.store(true, Ordering::Release);
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message before initialize exceeds {PRE_INITIALIZE_FRAME_BYTES} bytes"),
            )));
        }
        let room = buf.remaining().min(allowed);
        // A smaller buffer over the same memory (zeroed first: this runs only before
        // `initialize`, on at most the allowance).
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(room));
        let poll = Pin::new(&mut self.inner).poll_read(cx, &mut limited);
        let filled = limited.filled().len();
        if let Poll::Ready(Ok(())) = &poll {
            buf.advance(filled);
            self.gate.read.fetch_add(filled, Ordering::Relaxed);
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gated<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
