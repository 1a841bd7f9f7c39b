//! Decoding params with both spellings (SPEC: every input field accepts its camelCase and
//! its snake_case spelling; when both are present the camelCase one wins, §13).
//!
//! Only the keys of the object being decoded are renamed, never keys inside its values: a
//! config value such as `{config_write_paths: […]}` keeps its own names. Params types are
//! spelled in camelCase (with snake_case aliases, so plain serde accepts either spelling
//! alone); [`decode`] additionally settles objects that carry both.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::refusal::decoding;

/// `session_id` → `sessionId`, `data_b64` → `dataB64`; names without `_` are unchanged.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for ch in name.chars() {
        if ch == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// Renames snake_case keys to camelCase, dropping a snake key whose camel twin is present.
pub fn normalize_keys(obj: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::with_capacity(obj.len());
    let mut snake = Vec::new();
    for (key, value) in obj {
        if key.contains('_') {
            snake.push((key, value));
        } else {
            out.insert(key, value);
        }
    }
    for (key, value) in snake {
        let camel = camel_case(&key);
        if !out.contains_key(&camel) {
            out.insert(camel, value);
        }
    }
    out
}

/// Why params could not be decoded; the text is what a -32602 error carries: a refusal in
/// the vocabulary's words as it is ([`crate::refusal`]), else `invalid params: ` and
/// serde's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamsError(pub String);

impl std::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamsError {}

/// Decodes `params` (absent = `{}`) into `T`.
pub fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ParamsError> {
    decode_value(params.unwrap_or_else(|| Value::Object(Map::new())))
}

/// Decodes one object, normalizing its keys first. Arrays are refused (no method takes
/// positional params).
pub fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, ParamsError> {
    let value = match value {
        Value::Object(obj) => Value::Object(normalize_keys(obj)),
        Value::Array(_) => {
            return Err(ParamsError("invalid params: expected an object".into()));
        }
        other => other,
    };
    decoding(|| serde_json::from_value(value)).map_err(ParamsError)
}

/// Decodes params written as JSON text, as they are (no key is renamed): the daemon's
/// decoder, which renames keys on the text itself, ends here.
pub fn decode_text<T: DeserializeOwned>(text: &str) -> Result<T, ParamsError> {
    decoding(|| serde_json::from_str(text)).map_err(ParamsError)
}
