//! A linear decoder of server-sent events (the `text/event-stream` body of a streaming
//! completion): body pieces in, each event's `data` out. Only `data:` fields matter here;
//! comments and other fields are skipped. Each byte is looked at once, and the event being
//! received may not exceed a size limit (SPEC §17: one event over 8 MiB fails the turn),
//! so neither memory nor time grows faster than the body. A byte order mark at the start of
//! the body is skipped, as the event-stream format says.

use std::collections::VecDeque;

/// The event being received is larger than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLarge(pub usize);

impl std::fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a server-sent event exceeds {} bytes", self.0)
    }
}

#[derive(Debug)]
pub struct SseDecoder {
    max_event: usize,
    /// The line being received, without its line end.
    line: Vec<u8>,
    /// The `data` of the event being received (lines joined by `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// The last byte was `\r`: a `\n` right after it ends nothing more.
    after_cr: bool,
    /// No line has ended yet: the one being received may start with a byte order mark.
    first_line: bool,
}

/// U+FEFF in UTF-8, which a body may start with.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    pub fn new(max_event: usize) -> SseDecoder {
        SseDecoder {
            max_event,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
            first_line: true,
        }
    }

    /// Takes the next piece of the body; the data of each event it completes goes to `out`.
    pub fn feed(&mut self, piece: &[u8], out: &mut VecDeque<String>) -> Result<(), EventTooLarge> {
        let mut rest = piece;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.take(&rest[..end])?;
                    self.end_line(out);
                    let cr = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    if cr {
                        match rest.first() {
                            Some(b'\n') => rest = &rest[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                }
                None => {
                    self.take(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    /// The body ended: an unterminated last line and event still count (lenient to
    /// servers that omit the final blank line).
    pub fn finish(&mut self, out: &mut VecDeque<String>) {
        if !self.line.is_empty() {
            self.end_line(out);
        }
        self.end_line(out);
    }

    fn take(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        if self.data.len() + self.line.len() + bytes.len() > self.max_event {
            return Err(EventTooLarge(self.max_event));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut VecDeque<String>) {
        let mut line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.first_line) && line.starts_with(BYTE_ORDER_MARK) {
            line.drain(..BYTE_ORDER_MARK.len());
        }
        if line.is_empty() {
            if self.has_data {
                out.push_back(String::from_utf8_lossy(&self.data).into_owned());
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        self.line = line;
        self.line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(pieces: &[&[u8]]) -> Vec<String> {
        let mut d = SseDecoder::new(1024);
        let mut out = VecDeque::new();
        for p in pieces {
            d.feed(p, &mut out).unwrap();
        }
        d.finish(&mut out);
        out.into()
    }

    #[test]
    fn events_across_pieces_and_line_ends() {
        assert_eq!(
            decode(&[
                b"data: a\n\n",
                b"da",
                b"ta:b\r",
                b"\n\r\n: hi\ndata: c\r\rdata: d"
            ]),
            vec!["a", "b", "c", "d"]
        );
        assert_eq!(decode(&[b"data: x\ndata: y\n\nevent: e\n\n"]), vec!["x\ny"]);
        assert_eq!(decode(&[b"data: one\r", b"\r"]), vec!["one"]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_skipped() {
        assert_eq!(decode(&[b"\xEF\xBB\xBFdata: a\n\n"]), vec!["a"]);
        assert_eq!(
            decode(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\ndata: b\n\n"]),
            vec!["a", "b"]
        );
        // Only at the start of the body: later it is part of a field's name.
        assert_eq!(decode(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]), vec!["a"]);
    }

    #[test]
    fn an_oversized_event_is_refused() {
        let mut d = SseDecoder::new(10);
        let mut out = VecDeque::new();
        assert!(d.feed(b"data: 1234\n\n", &mut out).is_ok());
        assert_eq!(d.feed(b"data: 12345", &mut out), Err(EventTooLarge(10)));
        let mut d = SseDecoder::new(10);
        assert!(d.feed(b"data: 1234\ndata: 12", &mut out).is_err());
    }
}
