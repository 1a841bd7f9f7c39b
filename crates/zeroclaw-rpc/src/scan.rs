//! Reading a frame without building a JSON tree (SPEC §17.1 "Parsing is not amplified").
//!
//! A generic JSON tree costs tens of bytes per element: an 8 MiB `[0,0,…]` becomes
//! hundreds of megabytes. The envelope rules only need the top-level members, so a frame
//! is checked whole by [`validate`] (the same grammar and the same errors as parsing a
//! tree, but nothing is kept) and its members are taken by [`members`] as raw text slices;
//! each method then decodes its params into its own types.

use std::collections::HashMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Checks that `frame` is one JSON value exactly as a tree parse would (numbers in range,
/// strings with valid escapes, the same depth limit, nothing after it), keeping nothing.
pub fn validate(frame: &[u8]) -> serde_json::Result<()> {
    serde_json::from_slice::<Checked>(frame).map(|_| ())
}

/// Like [`validate`], for a value that is part of a frame.
pub fn validate_str(text: &str) -> serde_json::Result<()> {
    serde_json::from_str::<Checked>(text).map(|_| ())
}

/// A JSON value that was read whole and thrown away.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Checked, D::Error> {
        Checked::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// The members of a JSON object as raw text, the last of a repeated key winning (as a
/// tree parse keeps it). `None` when `text` is not an object (or not JSON).
pub fn members(text: &[u8]) -> Option<Members<'_>> {
    serde_json::from_slice::<Members<'_>>(text).ok()
}

/// Like [`members`], for text already known to be UTF-8.
pub fn members_str(text: &str) -> Option<Members<'_>> {
    serde_json::from_str::<Members<'_>>(text).ok()
}

/// An object's members, keys unescaped, values as they were written.
pub struct Members<'a> {
    /// In order of first appearance, each with its last value.
    pub list: Vec<(String, &'a RawValue)>,
}

impl<'a> Members<'a> {
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.list.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members<'a>, D::Error> {
        struct MembersVisitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for MembersVisitor<'a> {
            type Value = Members<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'a>, A::Error> {
                let mut list: Vec<(String, &'a RawValue)> = Vec::new();
                let mut index: HashMap<String, usize> = HashMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'a RawValue = map.next_value()?;
                    match index.get(&key) {
                        Some(&at) => list[at].1 = value,
                        None => {
                            index.insert(key.clone(), list.len());
                            list.push((key, value));
                        }
                    }
                }
                Ok(Members { list })
            }
        }

        d.deserialize_map(MembersVisitor(std::marker::PhantomData))
    }
}

/// What kind of JSON value `raw` is, from its first character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

pub fn kind(raw: &RawValue) -> Kind {
    match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b't' | b'f') => Kind::Bool,
        Some(b'n') => Kind::Null,
        _ => Kind::Number,
    }
}

/// The string `raw` holds, when it is a JSON string.
pub fn string(raw: &RawValue) -> Option<String> {
    match kind(raw) {
        Kind::String => serde_json::from_str(raw.get()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_matches_a_tree_parse() {
        for text in [
            "{}",
            "[1,2,{\"a\":null}]",
            "1e400",
            "\"\\ud800\"",
            "{\"a\":1} x",
            "{\"a\":",
            "\"\\u0041\"",
            "-0",
        ] {
            let tree = serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string());
            let checked = validate(text.as_bytes()).map_err(|e| e.to_string());
            assert_eq!(tree.map(|_| ()), checked, "{text}");
        }
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert!(validate(deep.as_bytes()).is_err(), "the depth limit holds");
    }

    #[test]
    fn members_keep_the_last_of_a_repeated_key_in_first_place() {
        let m = members(br#"{"a":1,"b":[2],"a":3,"\u0063":"x"}"#).expect("object");
        let got: Vec<(&str, &str)> = m.list.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
        assert_eq!(got, vec![("a", "3"), ("b", "[2]"), ("c", "\"x\"")]);
        assert!(members(b"[1]").is_none());
        assert_eq!(string(m.get("c").expect("c")).as_deref(), Some("x"));
        assert_eq!(kind(m.get("b").expect("b")), Kind::Array);
    }
}
