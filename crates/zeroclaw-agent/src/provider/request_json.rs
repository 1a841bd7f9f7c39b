//! A request body as a JSON tree whose strings borrow from the [`ProviderRequest`]
//! ([`Json`]), for the providers whose bodies are built by hand (`anthropic`, `gemini`,
//! `ollama`). Serialized straight into the bytes sent, a long conversation is held once
//! more while it is sent (the bytes), not twice (a `serde_json::Value` holds a copy of
//! every text, then its bytes another).
//!
//! Small owned parts (a tool call's parsed arguments, settings) stay [`Value`]s; parts
//! owned elsewhere (a tool's schema, kept thinking blocks) are borrowed whole.
//!
//! [`ProviderRequest`]: super::ProviderRequest

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::ToolSchema;
use crate::text::Text;

pub use super::request_body::encode;

/// One JSON value of a request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// A string borrowed from the request (a message's text).
    Str(&'a str),
    /// An answer borrowed from the request, which may be spilled to a file.
    Text(&'a Text),
    /// A small value the body owns.
    Owned(Value),
    /// A value owned elsewhere.
    Borrowed(&'a Value),
    /// Members in order; a key is written once (see [`Json::set`]).
    Object(Vec<(&'static str, Json<'a>)>),
    Array(Vec<Json<'a>>),
}

impl<'a> Json<'a> {
    /// An object of `members`, in order.
    pub fn object<const N: usize>(members: [(&'static str, Json<'a>); N]) -> Self {
        Json::Object(members.into())
    }

    /// Sets `key` of an object (replacing it, or appended); nothing on another kind.
    pub fn set(&mut self, key: &'static str, value: Json<'a>) {
        if let Json::Object(members) = self {
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some((_, old)) => *old = value,
                None => members.push((key, value)),
            }
        }
    }

    /// The string at `key` of an object (built here or a [`Value`]), if it is one.
    pub fn str_at(&self, key: &str) -> Option<&str> {
        match self {
            Json::Object(members) => match members.iter().find(|(k, _)| *k == key)? {
                (_, Json::Str(s)) => Some(s),
                (_, Json::Owned(v)) => v.as_str(),
                (_, Json::Borrowed(v)) => v.as_str(),
                _ => None,
            },
            Json::Owned(v) => v.get(key)?.as_str(),
            Json::Borrowed(v) => v.get(key)?.as_str(),
            _ => None,
        }
    }
}

/// A tool's declaration as the hand-built bodies send it: `{name, description,
/// <schema_key>: schema}`, its schema borrowed (`input_schema` for `anthropic`,
/// `parameters` for `gemini` and `ollama`).
pub fn tool<'a>(t: &'a ToolSchema, schema_key: &'static str) -> Json<'a> {
    Json::object([
        ("name", t.name.as_str().into()),
        ("description", t.description.as_str().into()),
        (schema_key, (&t.parameters).into()),
    ])
}

impl<'a> From<&'a str> for Json<'a> {
    fn from(s: &'a str) -> Self {
        Json::Str(s)
    }
}

impl<'a> From<&'a Text> for Json<'a> {
    fn from(t: &'a Text) -> Self {
        Json::Text(t)
    }
}

impl From<Value> for Json<'_> {
    fn from(v: Value) -> Self {
        Json::Owned(v)
    }
}

impl<'a> From<&'a Value> for Json<'a> {
    fn from(v: &'a Value) -> Self {
        Json::Borrowed(v)
    }
}

impl<'a> From<Vec<Json<'a>>> for Json<'a> {
    fn from(items: Vec<Json<'a>>) -> Self {
        Json::Array(items)
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Str(s) => serializer.serialize_str(s),
            Json::Text(t) => t.serialize(serializer),
            Json::Owned(v) => v.serialize(serializer),
            Json::Borrowed(v) => v.serialize(serializer),
            Json::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tree_of_borrowed_owned_and_shared_parts_writes_the_json_it_stands_for() {
        let text = "a \"quoted\" line\nand é 🦀".repeat(1000);
        let schema = json!({"type": "object", "properties": {"x": {"type": "number"}}});
        let mut body = Json::object([
            ("model", "m".into()),
            (
                "messages",
                vec![Json::object([
                    ("role", "user".into()),
                    ("content", text.as_str().into()),
                ])]
                .into(),
            ),
            ("schema", (&schema).into()),
            ("n", json!(3).into()),
        ]);
        body.set("n", json!(4).into());
        body.set("stream", json!(true).into());
        assert_eq!(body.str_at("model"), Some("m"));
        assert_eq!(body.str_at("n"), None);
        let kept = json!({"type": "thinking"});
        assert_eq!(Json::from(&kept).str_at("type"), Some("thinking"));
        let bytes = serde_json::to_vec(&body).expect("encodes");
        let back: Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(
            back,
            json!({"model": "m", "messages": [{"role": "user", "content": text}],
                   "schema": schema, "n": 4, "stream": true})
        );
    }
}
