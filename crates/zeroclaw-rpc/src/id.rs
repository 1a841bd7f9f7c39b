//! Request ids kept as the exact JSON text the peer sent (SPEC §17 "Ids echo exactly"):
//! `18446744073709551616`, `1e2`, `-0` or `"\u0041"` come back byte for byte.
//!
//! The frame is parsed into a [`Value`] as usual; only when that value would not print back
//! as it was written (a non-integer or huge number, a string that may have used escapes)
//! is the id's raw text looked up, by a second scan of the frame that stops at the `id` key.

use std::fmt;

use serde::de::{self, Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON-RPC id (string, number or null) as written on the wire.
#[derive(Clone)]
pub struct Id(Box<RawValue>);

impl Id {
    /// The `null` id.
    pub fn null() -> Id {
        Id::from_value(&Value::Null)
    }

    /// The id `value` prints as.
    pub fn from_value(value: &Value) -> Id {
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => Id(raw),
            // Serializing a plain JSON value cannot fail; `null` is a safe stand-in.
            Err(_) => Id(RawValue::from_string("null".to_string())
                .unwrap_or_else(|_| unreachable!("null is valid JSON"))),
        }
    }

    /// The id whose JSON text is `raw` (already checked to be a valid id).
    pub(crate) fn from_raw(raw: &RawValue) -> Id {
        Id(raw.to_owned())
    }

    /// `value` as it was written in `frame` (the text it was parsed from, when known).
    pub(crate) fn exact(value: &Value, frame: Option<&[u8]>) -> Id {
        if let Some(frame) = frame.filter(|f| !prints_as_written(value, f))
            && let Some(raw) = raw_id(frame)
            // A duplicated `id` key: the scan found another one than the parser kept.
            && serde_json::from_str::<Value>(raw.get()).is_ok_and(|v| v == *value)
        {
            return Id(raw.to_owned());
        }
        Id::from_value(value)
    }

    /// The id as a JSON value (numbers beyond `f64` precision lose it).
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The id's JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.0.get() == other.0.get()
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Whether `value`, printed compactly, is certainly the text it was parsed from.
fn prints_as_written(value: &Value, frame: &[u8]) -> bool {
    match value {
        // Integers print as their digits; JSON allows no leading zeros or `+`. `-0` parses
        // as a float, so it is not here.
        Value::Number(n) => n.is_u64() || n.is_i64(),
        // Without a backslash anywhere in the frame, the string used no escapes, so it
        // holds no character the printer would escape.
        Value::String(_) => !frame.contains(&b'\\'),
        _ => true,
    }
}

/// The raw text of the first `id` member of the object in `frame`.
fn raw_id(frame: &[u8]) -> Option<&RawValue> {
    struct FindId<'a, 'de>(&'a mut Option<&'de RawValue>);

    impl<'de> Visitor<'de> for FindId<'_, 'de> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value()?);
                    // Found: stop scanning (the caller ignores the resulting error).
                    return Err(de::Error::custom("id found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(frame);
    let _ = de.deserialize_map(FindId(&mut found));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(frame: &str) -> String {
        let v: Value = serde_json::from_str(frame).expect("json");
        Id::exact(&v["id"], Some(frame.as_bytes()))
            .as_json()
            .to_string()
    }

    #[test]
    fn ids_keep_their_text() {
        for id in [
            "18446744073709551616",
            "1e2",
            "1E2",
            "-0",
            "1.0",
            "1.50",
            "-12",
            "7",
            "\"\\u0041\"",
            "\"a\\/b\"",
            "\"plain\"",
            "null",
        ] {
            let frame =
                format!(r#"{{"params":{{"x":"\\n"}},"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            assert_eq!(exact(&frame), id, "{frame}");
            let frame = format!(r#"{{"id":{id},"jsonrpc":"2.0","method":"m"}}"#);
            assert_eq!(exact(&frame), id, "{frame}");
        }
    }

    #[test]
    fn a_duplicated_id_echoes_the_one_the_parser_kept() {
        assert_eq!(exact(r#"{"id":1.0,"id":2.5,"method":"m"}"#), "2.5");
    }
}
