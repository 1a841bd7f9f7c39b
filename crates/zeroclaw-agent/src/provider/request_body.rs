//! A request body as it is sent: its JSON bytes, with each spilled answer
//! ([`Text`](crate::text::Text)) spliced in from its file while the connection reads it,
//! never held whole (issue 27, item 3). A conversation whose answers are long is then held
//! in memory as its short parts only, and sent a piece at a time.
//!
//! [`encode`] serializes a body with each spilled text left out and noted where it goes
//! ([`json::encode_deferred`]); its escaped length is known from when it was spilled, so
//! the body's length is exact before a byte is sent.

use std::io;
use std::sync::Arc;

use serde::Serialize;

use super::ProviderError;
use crate::text::escape::escape_into;
use crate::text::json;
use crate::text::spill::Spilled;

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
    text: Arc<Spilled>,
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
    /// A spliced text whose file can no longer be read is an error: the body would be
    /// shorter than its announced length.
    pub fn next_piece(&self, cursor: &mut Cursor, max: usize) -> Option<io::Result<Vec<u8>>> {
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
                    return Some(Ok(piece));
                }
                if k == self.splices.len() {
                    return None;
                }
            } else {
                let text = &self.splices[k].text;
                // Escaping at most doubles most texts; a control character takes six.
                let piece = text.read_piece(cursor.offset, (max / 2).max(1));
                if !piece.is_empty() {
                    cursor.offset += piece.len();
                    let mut out = Vec::with_capacity(piece.len() + piece.len() / 8);
                    escape_into(piece.as_bytes(), &mut out);
                    return Some(Ok(out));
                }
                if cursor.offset < text.len() {
                    return Some(Err(io::Error::other("a spilled answer could not be read")));
                }
            }
            cursor.part += 1;
            cursor.offset = 0;
        }
    }
}

/// `value` serialized, its spilled texts left to be spliced in as it is sent.
pub fn encode(value: &impl Serialize) -> Result<RequestBody, ProviderError> {
    // Serializing into memory fails only for a map with non-string keys, which no body
    // has (a schema or kept block is a `Value`, whose keys are strings).
    let (bytes, splices) = json::encode_deferred(value)
        .map_err(|e| ProviderError::Config(format!("cannot encode the request: {e}")))?;
    let splices = splices
        .into_iter()
        .map(|(at, text)| Splice { at, text })
        .collect();
    Ok(RequestBody { bytes, splices })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Text;
    use crate::text::spilled_for_tests as spilled;

    #[test]
    fn a_spilled_text_whose_file_is_gone_fails_the_body_rather_than_shortening_it() {
        let text = spilled(&"a".repeat(1000));
        let encoded = encode(&[&text]).expect("encode");
        let Text::Spilled(file) = &text else {
            panic!("held")
        };
        std::fs::remove_file(file.path()).expect("remove");
        let mut cursor = Cursor::default();
        let first = encoded.next_piece(&mut cursor, 64).expect("a piece");
        assert_eq!(first.expect("the bytes before it"), b"[\"");
        let gone = encoded.next_piece(&mut cursor, 64).expect("not the end");
        assert!(gone.is_err(), "the body fails where the text should be");
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
                let piece = piece.expect("readable");
                assert!(!piece.is_empty());
                sent.extend_from_slice(&piece);
            }
            assert!(sent == expected, "pieces of {max} send the same bytes");
        }
    }
}
