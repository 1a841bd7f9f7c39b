//! A message text that may live on disk rather than in memory (issue 27, item 3).
//!
//! A provider may stream up to 32 MiB of text in one turn (SPEC §17), and the session's
//! next call sends it again, so an answer held in memory made a turn's growth as large as
//! its answer. [`Text`] is either a short text held as a `String` or a long one written to
//! a spill file ([`spill`]) and read back a piece at a time: by its writer in the store,
//! by a request body or a snapshot as they are written ([`json`]), for the head a result
//! shows. Reading it whole ([`Text::load`], or serializing it outside those encodings)
//! is left to the rare caller that needs all of it at once (a rewind's or a fork's
//! context, converted through a `serde_json::Value`).

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod escape;
pub mod json;
pub mod spill;

use escape::escaped_len;
use json::splice_here;
pub use spill::{SpillWriter, Spilled, set_spill_dir, set_spill_dir_for_tests};

/// The text of a message: held, or spilled to a file.
#[derive(Clone)]
pub enum Text {
    Held(String),
    Spilled(Arc<Spilled>),
}

impl Default for Text {
    fn default() -> Self {
        Text::Held(String::new())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::Held(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::Held(s.to_owned())
    }
}

impl Text {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Text::Held(s) => s.len(),
            Text::Spilled(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its length in characters (counted as it was spilled, not read again).
    pub fn char_count(&self) -> usize {
        match self {
            Text::Held(s) => s.chars().count(),
            Text::Spilled(f) => f.chars(),
        }
    }

    /// Its length as the contents of a JSON string (escaped).
    pub fn json_len(&self) -> usize {
        match self {
            Text::Held(s) => escaped_len(s.as_bytes()),
            Text::Spilled(f) => f.json_len(),
        }
    }

    /// The text when it is held in memory.
    pub fn as_held(&self) -> Option<&str> {
        match self {
            Text::Held(s) => Some(s),
            Text::Spilled(_) => None,
        }
    }

    /// The whole text: borrowed when held, read from its file when spilled. A spill file
    /// that cannot be read gives what could be read, the failure logged.
    pub fn load(&self) -> Cow<'_, str> {
        match self {
            Text::Held(s) => Cow::Borrowed(s),
            Text::Spilled(f) => Cow::Owned(f.read_piece(0, f.len())),
        }
    }

    /// The text from byte `from` (a character boundary), at most `max` bytes of it cut
    /// back to a character boundary, but at least one character; empty only at the end.
    pub fn piece(&self, from: usize, max: usize) -> Cow<'_, str> {
        match self {
            Text::Held(s) => {
                let rest = s.get(from..).unwrap_or_default();
                let mut end = rest.floor_char_boundary(max.min(rest.len()));
                if end == 0 && !rest.is_empty() {
                    end = rest.ceil_char_boundary(1);
                }
                Cow::Borrowed(&rest[..end])
            }
            Text::Spilled(f) => Cow::Owned(f.read_piece(from, max)),
        }
    }

    /// Whether byte `at` starts a character (or is the end).
    pub fn is_char_boundary(&self, at: usize) -> bool {
        match self {
            Text::Held(s) => s.is_char_boundary(at),
            Text::Spilled(f) => f.is_char_boundary(at),
        }
    }

    /// At most its first `max` bytes, cut back to a character boundary, and whether that
    /// is less than the whole text.
    pub fn head(&self, max: usize) -> (Cow<'_, str>, bool) {
        if self.len() <= max {
            return (self.load(), false);
        }
        let head = match self {
            Text::Held(s) => Cow::Borrowed(&s[..s.floor_char_boundary(max)]),
            Text::Spilled(f) => Cow::Owned(f.read_piece(0, max)),
        };
        (head, true)
    }

    /// A text of `s`, spilled to a file when it is at least [`SPILL_AT`] long and a file
    /// could be written (else held).
    pub fn spilled_if_long(s: String) -> Text {
        if s.len() < SPILL_AT {
            return Text::Held(s);
        }
        let mut w = SpillWriter::default();
        match w.write(&s) {
            Ok(()) => w.finish().map_or(Text::Held(s), Text::Spilled),
            Err(_) => Text::Held(s),
        }
    }

    /// Whether both are the same spilled text, not merely equal ones.
    fn same_file(&self, other: &Text) -> bool {
        matches!((self, other), (Text::Spilled(a), Text::Spilled(b)) if Arc::ptr_eq(a, b))
    }
}

/// Texts this long or longer are spilled when a turn's step ends (shorter ones stay in
/// memory: a message of a few pages costs less held than written).
pub const SPILL_AT: usize = 64 * 1024;

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Text::Held(s) => s.fmt(f),
            Text::Spilled(s) => write!(f, "Text::{s:?}"),
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.same_file(other) || (self.len() == other.len() && self.load() == other.load())
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.len() == other.len() && self.load() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// Serialized as the string it is. A spilled one is read whole for it, unless it goes
/// into a request body, which splices it in from its file as it is sent.
impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Text::Held(s) => serializer.serialize_str(s),
            Text::Spilled(f) if splice_here(f) => serializer.serialize_str(""),
            Text::Spilled(_) => serializer.serialize_str(&self.load()),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Text::Held)
    }
}

/// `s` written to a spill file, in the tests' spill directory.
#[cfg(test)]
pub(crate) fn spilled_for_tests(s: &str) -> Text {
    set_spill_dir_for_tests();
    let mut w = SpillWriter::default();
    w.write(s).expect("spill");
    Text::Spilled(w.finish().expect("written"))
}

#[cfg(test)]
mod tests {
    use super::spilled_for_tests as spilled;
    use super::*;

    #[test]
    fn a_spilled_text_reads_back_as_written_in_whole_characters() {
        let s = "aé€😀".repeat(1000);
        let t = spilled(&s);
        assert!(t.as_held().is_none());
        assert_eq!(t.len(), s.len());
        assert_eq!(t.char_count(), s.chars().count());
        assert!(t.load() == s, "whole read");
        let Text::Spilled(file) = &t else {
            panic!("held")
        };
        for max in [1, 2, 3, 5, 7, 64, 1000] {
            let mut back = String::new();
            file.for_each_piece(max, |p| {
                assert!(!p.is_empty() && (p.len() <= max || p.chars().count() == 1));
                back.push_str(p);
                Ok::<(), ()>(())
            })
            .expect("pieces");
            assert!(back == s, "pieces of {max} rebuild the text");
            let held = Text::from(s.clone());
            assert_eq!(t.head(max).0, held.head(max).0, "head of {max}");
            assert!(t.head(max).1);
        }
        assert!(!t.head(s.len()).1);
    }

    #[test]
    fn only_long_texts_are_spilled_and_they_serialize_as_strings() {
        set_spill_dir_for_tests();
        assert!(Text::spilled_if_long("short".into()).as_held().is_some());
        let long = "x".repeat(SPILL_AT);
        let t = Text::spilled_if_long(long.clone());
        assert!(t.as_held().is_none());
        let json = serde_json::to_string(&t).expect("json");
        let back: Text = serde_json::from_str(&json).expect("back");
        assert!(back == t && back.as_held() == Some(long.as_str()));
    }
}
