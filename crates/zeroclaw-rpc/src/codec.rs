//! Capped NDJSON framing (SPEC §3, §13 "Framing").
//!
//! [`FrameReader`] yields one frame per `\n`-terminated line. A line longer than the cap
//! (counting its `\n`) is reported once as [`Frame::Oversize`] as soon as it is known to be
//! too long; the rest of it is skipped without being buffered, and the next line is read
//! normally. A trailing `\r` is stripped and blank or whitespace-only lines are skipped.
//! A final line without `\n` at end of stream is still delivered.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The frame cap of the contract: 8 MiB including the `\n`.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// Buffers larger than this are released after their line is delivered, so one big frame
/// does not pin memory on an otherwise idle connection.
const RETAINED_CAPACITY: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// One line, without `\n` and trailing `\r`; never blank.
    Line(Vec<u8>),
    /// A line over the cap; its bytes are being discarded.
    Oversize,
}

pub struct FrameReader<R> {
    inner: R,
    max: usize,
    line: Vec<u8>,
    discarding: bool,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_FRAME_BYTES)
    }

    /// `max` counts the whole line including its `\n`.
    pub fn with_limit(inner: R, max: usize) -> Self {
        FrameReader {
            inner,
            max,
            line: Vec::new(),
            discarding: false,
        }
    }

    /// Changes the cap for the lines read from now on (`max` counts the `\n`).
    pub fn set_limit(&mut self, max: usize) {
        self.max = max;
    }

    /// The cap in force.
    pub fn limit(&self) -> usize {
        self.max
    }

    /// The reader underneath (e.g. to see whether it holds buffered input).
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The next frame, or `None` at end of stream.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.discarding = false;
                if self.line.is_empty() {
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.line);
                match self.finish(line) {
                    Some(frame) => return Ok(Some(frame)),
                    None => return Ok(None),
                }
            }
            match available.iter().position(|b| *b == b'\n') {
                Some(end) => {
                    let consumed = end + 1;
                    if self.discarding {
                        self.discarding = false;
                        self.inner.consume(consumed);
                        continue;
                    }
                    if self.line.len() + consumed > self.max {
                        self.line.clear();
                        self.inner.consume(consumed);
                        return Ok(Some(Frame::Oversize));
                    }
                    let mut line = std::mem::take(&mut self.line);
                    line.extend_from_slice(&available[..end]);
                    self.inner.consume(consumed);
                    if let Some(frame) = self.finish(line) {
                        return Ok(Some(frame));
                    }
                }
                None => {
                    let len = available.len();
                    if self.discarding {
                        self.inner.consume(len);
                        continue;
                    }
                    // Without its `\n` yet, this line already has at least len + 1 bytes.
                    if self.line.len() + len >= self.max {
                        self.line = Vec::new();
                        self.discarding = true;
                        self.inner.consume(len);
                        return Ok(Some(Frame::Oversize));
                    }
                    self.line.extend_from_slice(available);
                    self.inner.consume(len);
                }
            }
        }
    }

    /// Strips `\r` and drops blank lines (keeping a small buffer for reuse).
    fn finish(&mut self, mut line: Vec<u8>) -> Option<Frame> {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            if line.capacity() <= RETAINED_CAPACITY {
                line.clear();
                self.line = line;
            }
            return None;
        }
        Some(Frame::Line(line))
    }
}

/// The chunked test reader, shared with `tests/fuzz.rs`.
#[cfg(test)]
#[path = "../tests/support/chunked.rs"]
mod chunked;

#[cfg(test)]
mod tests {
    use super::chunked::frames;
    use super::*;
    use proptest::prelude::*;

    fn line(s: &str) -> Frame {
        Frame::Line(s.as_bytes().to_vec())
    }

    #[test]
    fn splits_lines_strips_cr_and_skips_blanks() {
        let got = frames(b"a\r\n\n  \r\n{\"x\":1}\nlast", vec![], 100, 8);
        assert_eq!(got, vec![line("a"), line("{\"x\":1}"), line("last")]);
    }

    #[test]
    fn cap_counts_the_newline() {
        // max = 5: "abcd\n" (5 bytes) is served, "abcde\n" (6 bytes) is not.
        let got = frames(b"abcd\nabcde\nok\n", vec![], 5, 3);
        assert_eq!(got, vec![line("abcd"), Frame::Oversize, line("ok")]);
    }

    #[test]
    fn oversize_line_is_reported_once_and_not_buffered() {
        let mut data = vec![b'x'; 10_000];
        data.push(b'\n');
        data.extend_from_slice(b"next\n");
        let got = frames(&data, vec![7; 2000], 100, 16);
        assert_eq!(got, vec![Frame::Oversize, line("next")]);
    }

    fn frame_model(data: &[u8], max: usize) -> Vec<Frame> {
        // The reference: split on '\n' with the rules applied to whole lines.
        let mut out = Vec::new();
        let mut parts: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
        let unterminated = parts.pop().unwrap_or(&[]);
        for part in parts {
            if part.len() + 1 > max {
                out.push(Frame::Oversize);
                continue;
            }
            push_line(&mut out, part);
        }
        if unterminated.len() >= max {
            out.push(Frame::Oversize);
        } else {
            push_line(&mut out, unterminated);
        }
        out
    }

    fn push_line(out: &mut Vec<Frame>, part: &[u8]) {
        let part = part.strip_suffix(b"\r").unwrap_or(part);
        if !part.iter().all(u8::is_ascii_whitespace) {
            out.push(Frame::Line(part.to_vec()));
        }
    }

    proptest! {
        #[test]
        fn any_split_yields_the_same_frames(
            data in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), Just(b'a'), Just(b'{')], 0..400),
            sizes in proptest::collection::vec(1usize..40, 0..100),
            buf_cap in 1usize..64,
            max in 2usize..30,
        ) {
            prop_assert_eq!(frames(&data, sizes, max, buf_cap), frame_model(&data, max));
        }
    }
}
