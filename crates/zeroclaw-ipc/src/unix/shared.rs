//! The halves of an accepted Unix stream, sharing one socket: besides the usual read and
//! write halves, the connection gets a [`WriteNow`] handle on the same socket, so its
//! reading task can answer a request with one non-blocking write instead of handing the
//! line to its writer task (a task wake per call saved; who may write when is the
//! daemon's business, see its outbound queue).
//!
//! Like tokio's owned halves, dropping the write half shuts the socket down for writing,
//! and the socket closes once both halves are gone: the write-now handle does not keep it
//! open (whoever holds it may outlive the connection).

use std::io;
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::UnixStream;

use crate::WriteNow;

/// Splits `stream` into read and write halves plus a [`WriteNow`] handle, all on one socket.
pub(super) fn split_shared(stream: UnixStream) -> (SharedReader, SharedWriter, Arc<dyn WriteNow>) {
    let stream = Arc::new(stream);
    let now: Arc<dyn WriteNow> = Arc::new(NowWriter(Arc::downgrade(&stream)));
    (SharedReader(Arc::clone(&stream)), SharedWriter(stream), now)
}

/// Bytes from the peer.
pub(super) struct SharedReader(Arc<UnixStream>);

/// Bytes to the peer, waiting for room.
pub(super) struct SharedWriter(Arc<UnixStream>);

/// Bytes to the peer, never waiting; nothing once both halves are gone.
struct NowWriter(Weak<UnixStream>);

impl WriteNow for NowWriter {
    fn write_now(&self, bytes: &[u8]) -> io::Result<usize> {
        match self.0.upgrade() {
            Some(stream) => stream.try_write(bytes),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

impl AsyncRead for SharedReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let room = unfilled.len();
            let mut read = 0;
            // A read that did not fill the buffer has emptied the socket: its readiness is
            // cleared here (by reporting "would block" to `try_io`, which clears only if no
            // new data arrived meanwhile), so the next poll waits for the next data instead
            // of making a `read` that is sure to fail. tokio's own halves do the same.
            let result = self.0.try_io(Interest::READABLE, || {
                read = self.0.try_read(unfilled)?;
                match read > 0 && read < room {
                    true => Err(io::ErrorKind::WouldBlock.into()),
                    false => Ok(read),
                }
            });
            buf.advance(read);
            match result {
                // Readiness was stale; it is cleared now, so the next poll waits.
                Err(e) if read == 0 && e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if read == 0 => return Poll::Ready(Err(e)),
                // Bytes read, or none at the end of the stream.
                _ => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl SharedWriter {
    /// Waits until the socket takes bytes, then makes one non-blocking `write` of them.
    fn poll_write_with(
        &self,
        cx: &mut Context<'_>,
        write: impl Fn(&UnixStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match write(&self.0) {
                // Readiness was stale; the failed write cleared it, so the next poll waits.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                written => return Poll::Ready(written),
            }
        }
    }
}

impl AsyncWrite for SharedWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |stream| stream.try_write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |stream| stream.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(shutdown_write(&self.0))
    }
}

impl Drop for SharedWriter {
    fn drop(&mut self) {
        let _ = shutdown_write(&self.0);
    }
}

/// `shutdown(SHUT_WR)` on the shared socket, through a duplicate of its descriptor (tokio
/// offers it only on its owned write half).
fn shutdown_write(stream: &UnixStream) -> io::Result<()> {
    let fd = stream.as_fd().try_clone_to_owned()?;
    std::os::unix::net::UnixStream::from(fd).shutdown(Shutdown::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn both_writers_reach_the_peer_in_order_and_dropping_the_writer_ends_its_input() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut reader, mut writer, now) = split_shared(ours);
        let (mut their_read, mut their_write) = theirs.into_split();
        writer.write_all(b"queued\n").await.unwrap();
        assert_eq!(now.write_now(b"now\n").unwrap(), 4);
        their_write.write_all(b"hello").await.unwrap();
        drop(their_write);
        let mut got = String::new();
        reader.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "hello");
        drop(writer);
        let mut seen = String::new();
        // The reader still holds the socket; the dropped writer shut it for writing.
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            their_read.read_to_string(&mut seen),
        )
        .await
        .expect("EOF after the writer was dropped")
        .unwrap();
        assert_eq!(seen, "queued\nnow\n");
        // Both halves gone: the socket is closed, though the handle lives on.
        drop(reader);
        assert_eq!(
            now.write_now(b"late\n").unwrap_err().kind(),
            io::ErrorKind::NotConnected
        );
    }

    /// A read that leaves room in the buffer clears the socket's readiness: data that
    /// arrives afterwards must still wake the reader, every time, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn data_after_a_partial_read_still_wakes_the_reader() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut reader, _writer, _now) = split_shared(ours);
        let (_their_read, mut their_write) = theirs.into_split();
        let sender = tokio::spawn(async move {
            for round in 0..200u32 {
                their_write
                    .write_all(format!("{round:03}\n").as_bytes())
                    .await
                    .unwrap();
                if round % 7 == 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                } else {
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < 200 * 4 {
            let n = tokio::time::timeout(std::time::Duration::from_secs(5), reader.read(&mut buf))
                .await
                .expect("data sent after a partial read woke the reader")
                .unwrap();
            assert!(n > 0, "EOF before everything arrived");
            got.extend_from_slice(&buf[..n]);
        }
        sender.await.unwrap();
        let expected: String = (0..200u32).map(|round| format!("{round:03}\n")).collect();
        assert_eq!(String::from_utf8(got).unwrap(), expected);
    }

    #[tokio::test]
    async fn write_now_never_waits_on_a_peer_that_does_not_read() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let (_reader, _writer, now) = split_shared(ours);
        let chunk = vec![b'x'; 64 * 1024];
        let mut total = 0usize;
        loop {
            match now.write_now(&chunk) {
                Ok(n) => total += n,
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
                    break;
                }
            }
            assert!(total < 64 * 1024 * 1024, "the socket never filled");
        }
        assert!(total > 0);
    }
}
