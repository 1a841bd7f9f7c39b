//! JSON with spilled texts spliced in from their files rather than read whole (issue 27).
//!
//! `serde` hands a serializer a string whole, so a spilled [`Text`](super::Text) cannot
//! stream itself through one. Instead, while a value is encoded by one of the functions
//! here, a spilled text serializes as an empty string `""` and notes where it went
//! ([`splice_here`]); the writer below the serializer then puts the text's escaped bytes
//! between those quotes, a piece at a time, as it passes that point ([`write_spliced`]),
//! or counts them ([`spliced_len`]), or leaves them to be spliced later
//! ([`encode_deferred`], a request body sent as the connection reads it). Outside these
//! functions a spilled text is serialized whole, as any string.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::rc::Rc;
use std::sync::Arc;

use serde::Serialize;

use super::escape::escape_into;
use super::spill::Spilled;

/// A spilled text noted by the encoding, with the position of the `""` it wrote.
type Noted = (usize, Arc<Spilled>);

/// Where the value being encoded on this thread is, and the texts noted to splice.
#[derive(Clone, Default)]
struct Encoding {
    /// Bytes the serializer has written so far.
    at: Rc<Cell<usize>>,
    /// Spilled texts, with the position of the `""` each wrote, in order.
    noted: Rc<RefCell<VecDeque<Noted>>>,
}

thread_local! {
    static ENCODING: RefCell<Option<Encoding>> = const { RefCell::new(None) };
}

/// Called by a spilled text about to serialize as `""`: when a value is being encoded
/// here on this thread, notes that `text` goes between those quotes and returns true.
pub(crate) fn splice_here(text: &Arc<Spilled>) -> bool {
    ENCODING.with_borrow(|e| match e {
        Some(e) => {
            e.noted
                .borrow_mut()
                .push_back((e.at.get(), Arc::clone(text)));
            true
        }
        None => false,
    })
}

/// Runs `encode` with `encoding` as this thread's (restoring the one before).
fn encoding_with<R>(encoding: &Encoding, encode: impl FnOnce() -> R) -> R {
    let before = ENCODING.replace(Some(encoding.clone()));
    let out = encode();
    ENCODING.set(before);
    out
}

/// A misplaced splice: a serializer that did not write `""` where the text noted itself.
fn misplaced() -> io::Error {
    io::Error::other("a spilled text was not written where it was noted")
}

/// The writer under the serializer: counts what passes, and at each noted text either
/// writes its escaped bytes (`count_only` false) or counts them.
struct Splicing<W: Write> {
    out: W,
    encoding: Encoding,
    count_only: bool,
    /// Bytes passed on, spliced texts included.
    total: usize,
    /// The last byte the serializer wrote.
    last: u8,
}

impl<W: Write> Splicing<W> {
    /// Writes (or counts) `text` escaped.
    fn splice(&mut self, text: &Spilled) -> io::Result<()> {
        if self.count_only {
            self.total += text.json_len();
            return Ok(());
        }
        let (mut escaped, mut written) = (Vec::new(), 0);
        text.for_each_piece(SPLICE_PIECE, |piece| {
            escaped.clear();
            escape_into(piece.as_bytes(), &mut escaped);
            written += escaped.len();
            self.out.write_all(&escaped)
        })?;
        self.total += written;
        if written != text.json_len() {
            // Its file could no longer be read whole: no shorter text in its place.
            return Err(io::Error::other("a spilled text could not be read"));
        }
        Ok(())
    }
}

/// Bytes of a spilled text read at a time while splicing.
const SPLICE_PIECE: usize = 32 * 1024;

impl<W: Write> Write for Splicing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let start = self.encoding.at.get();
        let mut done = 0;
        loop {
            // A noted text goes right after the opening quote of its `""`.
            let next = self.encoding.noted.borrow().front().map(|(at, _)| *at + 1);
            let Some(cut) = next.filter(|&cut| cut <= start + buf.len()) else {
                break;
            };
            let cut = cut.checked_sub(start).ok_or_else(misplaced)?;
            if cut < done {
                return Err(misplaced());
            }
            let before = &buf[done..cut];
            let opening = before.last().copied().unwrap_or(self.last);
            if opening != b'"' || buf.get(cut).is_some_and(|&b| b != b'"') {
                return Err(misplaced());
            }
            self.passthrough(before)?;
            let noted = self.encoding.noted.borrow_mut().pop_front();
            if let Some((_, text)) = noted {
                self.splice(&text)?;
            }
            done = cut;
        }
        self.passthrough(&buf[done..])?;
        self.encoding.at.set(start + buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Splicing<W> {
    fn passthrough(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(&b) = bytes.last() {
            self.last = b;
        }
        self.total += bytes.len();
        if self.count_only {
            return Ok(());
        }
        self.out.write_all(bytes)
    }
}

fn encode_into<W: Write>(out: W, value: &impl Serialize, count_only: bool) -> io::Result<usize> {
    let encoding = Encoding::default();
    let mut w = Splicing {
        out,
        encoding: encoding.clone(),
        count_only,
        total: 0,
        last: 0,
    };
    encoding_with(&encoding, || serde_json::to_writer(&mut w, value)).map_err(io::Error::other)?;
    if !encoding.noted.borrow().is_empty() {
        return Err(misplaced());
    }
    w.flush()?;
    Ok(w.total)
}

/// Writes `value`'s compact JSON to `out`, spilled texts read from their files a piece at
/// a time; returns the bytes written.
pub fn write_spliced(out: impl Write, value: &impl Serialize) -> io::Result<usize> {
    encode_into(out, value, false)
}

/// The length of what [`write_spliced`] writes, without reading any spilled text.
pub fn spliced_len(value: &impl Serialize) -> io::Result<usize> {
    encode_into(io::sink(), value, true)
}

/// Spilled texts left out of an encoding, each with the offset it goes at.
pub type Deferred = Vec<(usize, Arc<Spilled>)>;

/// `value`'s JSON with each spilled text left out (an empty string in its place), and
/// where each goes: the offset just after that string's opening quote.
pub fn encode_deferred(value: &impl Serialize) -> serde_json::Result<(Vec<u8>, Deferred)> {
    let encoding = Encoding::default();
    let mut out = Counted {
        bytes: Vec::new(),
        at: Rc::clone(&encoding.at),
    };
    encoding_with(&encoding, || serde_json::to_writer(&mut out, value))?;
    let noted: Deferred = encoding.noted.borrow_mut().drain(..).collect();
    let bytes = out.bytes;
    let mut splices = Vec::with_capacity(noted.len());
    for (at, text) in noted {
        if bytes.get(at..at + 2) != Some(b"\"\"") {
            return Err(serde_json::Error::io(misplaced()));
        }
        splices.push((at + 1, text));
    }
    Ok((bytes, splices))
}

/// A buffer that keeps the encoding's position.
struct Counted {
    bytes: Vec<u8>,
    at: Rc<Cell<usize>>,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        self.at.set(self.bytes.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Text;
    use crate::text::spilled_for_tests as spilled;

    /// A writer that takes at most `step` bytes a call, as a buffered one may hand them on.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn spliced_json_is_the_json_of_the_whole_texts() {
        let a = "line \"one\"\n\t\u{1}é€😀\\ ".repeat(3000);
        let b = "b".repeat(70_000);
        let texts = vec![
            (spilled(&a), "x".to_owned()),
            (Text::from("held"), String::new()),
            (spilled(""), "y".to_owned()),
            (spilled(&b), "\"".to_owned()),
        ];
        let whole: Vec<(&str, &str)> = vec![(&a, "x"), ("held", ""), ("", "y"), (&b, "\"")];
        let expected = serde_json::to_vec(&whole).expect("json");
        assert_eq!(spliced_len(&texts).expect("len"), expected.len());
        let mut out = Vec::new();
        assert_eq!(
            write_spliced(&mut out, &texts).expect("write"),
            expected.len()
        );
        assert!(out == expected, "spliced as serde_json writes the texts");
        // However the serializer's writes are cut (through a buffer here).
        for step in [1, 2, 3, 7, 100] {
            let trickle = Trickle {
                out: Vec::new(),
                step,
            };
            let mut buffered = io::BufWriter::with_capacity(5, trickle);
            write_spliced(&mut buffered, &texts).expect("write");
            let trickle = buffered
                .into_inner()
                .map_err(|e| e.into_error())
                .expect("flush");
            assert!(trickle.out == expected, "writes of {step} bytes");
        }
        let (bytes, splices) = encode_deferred(&texts).expect("deferred");
        assert_eq!(splices.len(), 3);
        assert!(bytes.len() < 100);
    }

    #[test]
    fn outside_an_encoding_a_spilled_text_serializes_whole() {
        let long = "x".repeat(100);
        let json = serde_json::to_string(&spilled(&long)).expect("json");
        assert_eq!(json, format!("\"{long}\""));
    }
}
