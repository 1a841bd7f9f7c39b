//! A request body as it is sent: its JSON bytes, with each spilled answer ([`Text`])
//! spliced in from its file while the connection reads it, never held whole (issue 27,
//! item 3). A conversation whose answers are long is then held in memory as its short
//! parts only, and sent a piece at a time.
//!
//! [`encode`] serializes a body as usual, but while it does, a spilled text serializes as
//! an empty string and notes where it goes ([`splice_here`]); its escaped length is known
//! from when it was spilled, so the body's length is exact before a byte is sent.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use serde::Serialize;

use super::ProviderError;
use crate::text::Text;

/// A serialized request body: `bytes`, with `splices` inserted at their offsets.
#[derive(Debug, Default)]
pub struct RequestBody {
    bytes: Vec<u8>,
    /// In increasing order of `at`.
    splices: Vec<Splice>,
}

#[derive(Debug)]
struct Splice {
    /// Inserted before `bytes[at]` (between the quotes of an empty string).
    at: usize,
    text: Text,
}

/// A body of plain bytes.
impl From<Vec<u8>> for RequestBody {
    fn from(bytes: Vec<u8>) -> Self {
        RequestBody {
            bytes,
            splices: Vec::new(),
        }
    }
}

/// Where a reader of a [`RequestBody`] is: a part (even: bytes between splices; odd: a
/// splice) and how far into it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Cursor {
    part: usize,
    offset: usize,
}

impl RequestBody {
    /// Its length in bytes as sent.
    pub fn len(&self) -> usize {
        self.bytes.len()
            + self
                .splices
                .iter()
                .map(|s| s.text.json_len())
                .sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next piece after `cursor` (about `max` bytes), moving it on; `None` at the end.
    pub fn next_piece(&self, cursor: &mut Cursor, max: usize) -> Option<Vec<u8>> {
        loop {
            let k = cursor.part / 2;
            if cursor.part.is_multiple_of(2) {
                let start = if k == 0 { 0 } else { self.splices[k - 1].at };
                let end = self.splices.get(k).map_or(self.bytes.len(), |s| s.at);
                let rest = self
                    .bytes
                    .get(start + cursor.offset..end)
                    .unwrap_or_default();
                if !rest.is_empty() {
                    let piece = rest[..rest.len().min(max)].to_vec();
                    cursor.offset += piece.len();
                    return Some(piece);
                }
                if k == self.splices.len() {
                    return None;
                }
            } else {
                let text = &self.splices[k].text;
                // Escaping at most doubles most texts; a control character takes six.
                let piece = text.piece(cursor.offset, (max / 2).max(1));
                if !piece.is_empty() {
                    cursor.offset += piece.len();
                    let mut out = Vec::with_capacity(piece.len() + piece.len() / 8);
                    escape_into(piece.as_bytes(), &mut out);
                    return Some(out);
                }
            }
            cursor.part += 1;
            cursor.offset = 0;
        }
    }

    /// The whole body in one buffer (tests).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        let mut cursor = Cursor::default();
        while let Some(piece) = self.next_piece(&mut cursor, 64 * 1024) {
            out.extend_from_slice(&piece);
        }
        out
    }
}

/// The body being encoded on this thread, if any: where spilled texts note themselves.
struct Encoding {
    out: Rc<RefCell<Vec<u8>>>,
    splices: Vec<Splice>,
}

thread_local! {
    static ENCODING: RefCell<Option<Encoding>> = const { RefCell::new(None) };
}

/// A writer into the shared buffer of an [`Encoding`].
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Called by a spilled [`Text`] about to serialize as `""`: when a body is being encoded
/// on this thread, notes that `text` goes between those quotes and returns true.
pub(crate) fn splice_here(text: &Text) -> bool {
    ENCODING.with_borrow_mut(|e| match e {
        Some(e) => {
            let at = e.out.borrow().len();
            e.splices.push(Splice {
                at,
                text: text.clone(),
            });
            true
        }
        None => false,
    })
}

/// `body` serialized, its spilled texts left to be spliced in as it is sent.
pub fn encode(value: &impl Serialize) -> Result<RequestBody, ProviderError> {
    let out = Rc::new(RefCell::new(Vec::new()));
    let previous = ENCODING.replace(Some(Encoding {
        out: Rc::clone(&out),
        splices: Vec::new(),
    }));
    let written = serde_json::to_writer(Shared(Rc::clone(&out)), value);
    let splices = ENCODING
        .replace(previous)
        .map(|e| e.splices)
        .unwrap_or_default();
    // Serializing into memory fails only for a map with non-string keys, which no body
    // has (a schema or kept block is a `Value`, whose keys are strings).
    written.map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))?;
    let bytes = std::mem::take(&mut *out.borrow_mut());
    let mut body = RequestBody {
        bytes,
        splices: Vec::with_capacity(splices.len()),
    };
    for s in splices {
        // Each noted text wrote `""` where it noted itself; anything else (a serializer
        // that wrote it elsewhere) would misplace it: encode such a body whole instead.
        if body.bytes.get(s.at..s.at + 2) != Some(b"\"\"") {
            let whole = serde_json::to_vec(value)
                .map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))?;
            return Ok(RequestBody {
                bytes: whole,
                splices: Vec::new(),
            });
        }
        body.splices.push(Splice {
            at: s.at + 1,
            text: s.text,
        });
    }
    Ok(body)
}

/// JSON's escaping of a string's bytes, as `serde_json` writes it: `"` and `\` and the
/// control characters escaped, everything else (UTF-8 included) as is. Byte by byte, so a
/// text may be escaped in pieces cut anywhere.
pub(crate) fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            out.extend_from_slice(&[
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The length of [`escape_into`]'s output for `bytes`.
pub(crate) fn escaped_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::SpillWriter;

    fn spilled(s: &str) -> Text {
        let mut w = SpillWriter::default();
        w.write(s).expect("spill");
        w.finish().expect("written")
    }

    #[test]
    fn escaping_matches_serde_json_for_every_ascii_byte_and_beyond() {
        let mut all: String = (0u8..128).map(char::from).collect();
        all.push_str("é€😀\u{2028}");
        let mut out = Vec::new();
        escape_into(all.as_bytes(), &mut out);
        let expected = serde_json::to_vec(&all).expect("json");
        assert_eq!(out, expected[1..expected.len() - 1]);
        assert_eq!(escaped_len(all.as_bytes()), out.len());
    }

    #[test]
    fn a_body_with_spilled_texts_is_sent_as_the_same_bytes_in_pieces() {
        let long_a = "line \"one\"\n\t\u{1}é€😀\\ ".repeat(5000);
        let long_b = "b".repeat(70_000);
        let texts = [spilled(&long_a), Text::from("held"), spilled(&long_b)];
        let encoded = encode(&texts).expect("encode");
        assert_eq!(encoded.splices.len(), 2, "the spilled texts are spliced");
        assert!(encoded.bytes.len() < 100, "their bytes are not in the body");
        let expected = serde_json::to_vec(&[&long_a, "held", &long_b]).expect("json");
        assert_eq!(
            encoded.len(),
            expected.len(),
            "the length is exact before sending"
        );
        for max in [1, 7, 4096, 64 * 1024] {
            let mut cursor = Cursor::default();
            let mut sent = Vec::new();
            while let Some(piece) = encoded.next_piece(&mut cursor, max) {
                assert!(!piece.is_empty());
                sent.extend_from_slice(&piece);
            }
            assert!(sent == expected, "pieces of {max} send the same bytes");
        }
    }

    #[test]
    fn outside_an_encoding_a_spilled_text_serializes_whole() {
        let long = "x".repeat(100);
        let json = serde_json::to_string(&spilled(&long)).expect("json");
        assert_eq!(json, format!("\"{long}\""));
    }
}
