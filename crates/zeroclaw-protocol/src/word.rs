//! How a word of a closed vocabulary ([`crate::types`]) is read: as serde's derive reads a
//! unit-only enum (a string, or the one-member `{"word": null}` form), with the same
//! errors, except that a vocabulary may state its own sentence for an unknown word
//! ([`Word::unknown`], through [`crate::refusal`]).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, EnumAccess, Unexpected, VariantAccess, Visitor};

/// A closed vocabulary of wire words.
pub(crate) trait Word: Sized + 'static {
    /// The type's name, as serde's derive passes it.
    const NAME: &'static str;
    /// Every spelling, in declaration order.
    const WORDS: &'static [&'static str];

    /// The value spelled `s`.
    fn parse(s: &str) -> Option<Self>;

    /// The error for an unknown word: serde's own unless the vocabulary words its own.
    fn unknown<E: de::Error>(word: &str) -> E {
        E::unknown_variant(word, Self::WORDS)
    }
}

/// Reads a `W`.
pub(crate) fn deserialize<'de, W: Word, D: Deserializer<'de>>(d: D) -> Result<W, D::Error> {
    d.deserialize_enum(W::NAME, W::WORDS, Whole::<W>(PhantomData))
}

/// The enum as a whole: its variant, which carries nothing.
struct Whole<W>(PhantomData<W>);

impl<'de, W: Word> Visitor<'de> for Whole<W> {
    type Value = W;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "enum {}", W::NAME)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<W, A::Error> {
        let (word, variant) = data.variant_seed(Spelling::<W>(PhantomData))?;
        variant.unit_variant()?;
        Ok(word)
    }
}

/// The variant's identifier: the word itself.
struct Spelling<W>(PhantomData<W>);

impl<'de, W: Word> DeserializeSeed<'de> for Spelling<W> {
    type Value = W;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<W, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de, W: Word> Visitor<'de> for Spelling<W> {
    type Value = W;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<W, E> {
        usize::try_from(index)
            .ok()
            .and_then(|i| W::WORDS.get(i))
            .and_then(|s| W::parse(s))
            .ok_or_else(|| {
                let expected = format!("variant index 0 <= i < {}", W::WORDS.len());
                E::invalid_value(Unexpected::Unsigned(index), &expected.as_str())
            })
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<W, E> {
        W::parse(s).ok_or_else(|| W::unknown(s))
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<W, E> {
        match std::str::from_utf8(bytes) {
            Ok(s) => self.visit_str(s),
            Err(_) => Err(W::unknown(&String::from_utf8_lossy(bytes))),
        }
    }
}
