//! Request ids kept as the exact JSON text the peer sent (SPEC §17 "Ids echo exactly"):
//! `18446744073709551616`, `1e2`, `-0` or `"\u0041"` come back byte for byte.
//!
//! The classifier keeps each id as the raw text of its member, so nothing is reprinted.

use std::fmt;

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

#[cfg(test)]
mod tests {
    use crate::message::{Inbound, classify};

    /// The id a request frame is answered with.
    fn echoed(frame: &str) -> String {
        match classify(frame.as_bytes()) {
            Inbound::Request(r) => r.id.expect("an id").as_json().to_string(),
            Inbound::Reject { id, .. } => id.as_json().to_string(),
            other => panic!("{other:?}"),
        }
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
            assert_eq!(echoed(&frame), id, "{frame}");
            let frame = format!(r#"{{"id":{id},"jsonrpc":"2.0","method":"m"}}"#);
            assert_eq!(echoed(&frame), id, "{frame}");
            let frame = format!(r#"{{"id":{id},"jsonrpc":"1.0","method":"m"}}"#);
            assert_eq!(echoed(&frame), id, "rejected, still exact: {frame}");
        }
    }

    #[test]
    fn a_duplicated_id_echoes_the_one_the_parser_kept() {
        assert_eq!(
            echoed(r#"{"id":1.0,"id":2.5,"jsonrpc":"2.0","method":"m"}"#),
            "2.5"
        );
    }
}
