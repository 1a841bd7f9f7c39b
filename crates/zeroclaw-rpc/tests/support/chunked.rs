//! Test support shared by the codec's own tests (`src/codec.rs`) and the fuzz test
//! (`tests/fuzz.rs`), both of which include it with `#[path]`: an in-memory reader that
//! hands out its input in chosen chunk sizes, and [`frames`], which decodes all of it.
//!
//! It names `Frame` and `FrameReader` through `super`, so each includer brings them into
//! scope (`crate::codec` in one, `zeroclaw_rpc` in the other).

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, BufReader, ReadBuf};

use super::{Frame, FrameReader};

/// Hands out the input in the given chunk sizes, one chunk per read (the rest at once when
/// the sizes run out; a size of 0 counts as 1).
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    next: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let size = self
            .sizes
            .get(self.next)
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        self.next += 1;
        let n = size.min(self.data.len() - self.pos).min(buf.remaining());
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// Every frame a [`FrameReader`] capped at `max` bytes finds in `data`, read through a
/// `buf_cap`-byte buffer from a source that delivers `sizes`-long chunks.
pub fn frames(data: &[u8], sizes: Vec<usize>, max: usize, buf_cap: usize) -> Vec<Frame> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let src = Chunked {
            data: data.to_vec(),
            pos: 0,
            sizes,
            next: 0,
        };
        let mut reader = FrameReader::with_limit(BufReader::with_capacity(buf_cap, src), max);
        let mut out = Vec::new();
        while let Some(frame) = reader
            .next_frame()
            .await
            .expect("in-memory reads never fail")
        {
            out.push(frame);
        }
        out
    })
}
