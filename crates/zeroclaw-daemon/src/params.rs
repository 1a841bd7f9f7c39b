//! Typed method parameters in, typed results out: the one place a handler's params are
//! decoded and its result encoded. Parameters are accepted with both spellings (SPEC: every
//! input field accepts its camelCase and its snake_case spelling; when both are present,
//! camelCase wins).
//!
//! Params arrive as the raw text the peer wrote and are decoded straight into the method's
//! type (SPEC §17.1 "Parsing is not amplified"): the top-level keys are renamed on the
//! text, never through a generic JSON tree. Fields that are free-form JSON by nature (a
//! config value, a tool's replacement input) still become trees, so params whose text
//! holds many more JSON values than a sane call has for its size are refused first.
//!
//! Only the keys of the object being decoded are normalized, never the JSON values inside
//! it: a config value such as `{config_write_paths: […]}` keeps its own names.

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_rpc::scan::{self, Kind};

// The renaming rule is the vocabulary's, so daemon and schema agree on it.
use zeroclaw_protocol::camel_case;

/// A request's params as received: `None` when absent, else an object or an array.
pub type Params = Option<Box<RawValue>>;

/// Params up to this size are never refused for their density.
const DENSITY_FREE_BYTES: usize = 64 * 1024;
/// Beyond [`DENSITY_FREE_BYTES`], at most one JSON value (or member) per this many bytes:
/// a tree of them then costs a few times the text, not tens of times.
const BYTES_PER_VALUE: usize = 16;

/// Decodes `params` (absent = `{}`) into `T`, whose fields are spelled in camelCase.
pub fn decode<T: DeserializeOwned>(params: Params) -> Result<T, ErrorObject> {
    match params {
        Some(raw) => decode_raw(&raw),
        None => from_text("{}"),
    }
}

/// Decodes one object as written on the wire (normalizing its keys) into `T`.
pub fn decode_raw<T: DeserializeOwned>(raw: &RawValue) -> Result<T, ErrorObject> {
    let text = raw.get();
    match scan::kind(raw) {
        Kind::Array => Err(ErrorObject::invalid_params(
            "invalid params: expected an object",
        )),
        Kind::Object => {
            if too_dense(text) {
                return Err(ErrorObject::invalid_params(format!(
                    "invalid params: too many JSON values for {} bytes",
                    text.len()
                )));
            }
            from_text(&normalized(text)?)
        }
        _ => from_text(text),
    }
}

/// The session a request's params name, under either spelling (camelCase wins): the key a
/// request is ordered and cancelled by (SPEC §17.1 "Order uses the same key").
pub fn session_id(params: Option<&RawValue>) -> Option<String> {
    let members = scan::members_str(params?.get())?;
    let raw = members
        .get("sessionId")
        .or_else(|| members.get("session_id"))?;
    scan::string(raw)
}

/// Decodes `text` as it is; a failure is -32602 with the vocabulary's text for it (a word's
/// own refusal such as an unknown `autonomy`, else `invalid params: ` and serde's message).
fn from_text<T: DeserializeOwned>(text: &str) -> Result<T, ErrorObject> {
    zeroclaw_protocol::decode_text(text).map_err(|e| ErrorObject::invalid_params(e.0))
}

/// The object `text` with its snake_case keys renamed to camelCase (a snake key whose
/// camel twin is present is dropped; of a repeated key the last wins, as in a tree).
fn normalized(text: &str) -> Result<Cow<'_, str>, ErrorObject> {
    let members = scan::members_str(text)
        .ok_or_else(|| ErrorObject::invalid_params("invalid params: expected an object"))?;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('{');
    let mut first = true;
    let mut push = |out: &mut String, key: &str, value: &RawValue| {
        if !first {
            out.push(',');
        }
        first = false;
        // A key is a string: serializing it cannot fail.
        out.push_str(&serde_json::to_string(key).unwrap_or_else(|_| "\"\"".into()));
        out.push(':');
        out.push_str(value.get());
    };
    for (key, value) in members.list.iter().filter(|(k, _)| !k.contains('_')) {
        push(&mut out, key, value);
    }
    for (key, value) in members.list.iter().filter(|(k, _)| k.contains('_')) {
        let camel = camel_case(key);
        if camel == *key || members.get(&camel).is_none() {
            push(&mut out, &camel, value);
        }
    }
    out.push('}');
    Ok(Cow::Owned(out))
}

/// Whether `text` (valid JSON) holds more values than [`BYTES_PER_VALUE`] allows.
fn too_dense(text: &str) -> bool {
    if text.len() <= DENSITY_FREE_BYTES {
        return false;
    }
    let (mut values, mut in_string, mut escaped) = (0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' | b':' => values += 1,
            _ => {}
        }
    }
    values.saturating_mul(BYTES_PER_VALUE) > text.len()
}

/// Encodes a typed result (one of the vocabulary's) as the JSON the answer carries.
pub fn encode<T: Serialize>(result: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(result)
        .map_err(|e| ErrorObject::internal(format!("cannot encode the result: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct P {
        session_id: String,
        #[serde(default)]
        data_b64: Option<String>,
    }

    fn raw(v: Value) -> Params {
        Some(serde_json::value::to_raw_value(&v).expect("json"))
    }

    #[test]
    fn both_spellings_and_camel_wins() {
        let a: P = decode(raw(json!({"session_id": "s", "data_b64": "x"}))).expect("snake");
        let b: P = decode(raw(json!({"sessionId": "s", "dataB64": "x"}))).expect("camel");
        assert_eq!(a, b);
        let c: P = decode(raw(json!({"sessionId": "camel", "session_id": "snake"}))).expect("both");
        assert_eq!(c.session_id, "camel");
        let d: P = decode(raw(json!({"session_id": "snake", "sessionId": "camel"}))).expect("both");
        assert_eq!(d.session_id, "camel");
        let text = r#"{"sessionId":"a","sessionId":"b"}"#;
        let e: P = decode(Some(RawValue::from_string(text.into()).expect("json"))).expect("dup");
        assert_eq!(
            e.session_id, "b",
            "the last of a repeated key, as a tree keeps it"
        );
        assert_eq!(camel_case("protocol_version"), "protocolVersion");
    }

    #[test]
    fn errors_are_invalid_params() {
        let e = decode::<P>(raw(json!({"sessionId": 5}))).expect_err("wrong type");
        assert_eq!(e.code, zeroclaw_rpc::code::INVALID_PARAMS);
        assert!(decode::<P>(raw(json!([1]))).is_err());
        assert!(decode::<P>(None).is_err(), "missing field");
    }

    #[test]
    fn the_session_key_takes_either_spelling() {
        let of = |v: Value| session_id(raw(v).as_deref());
        assert_eq!(of(json!({"sessionId": "a"})).as_deref(), Some("a"));
        assert_eq!(of(json!({"session_id": "b"})).as_deref(), Some("b"));
        assert_eq!(
            of(json!({"session_id": "b", "sessionId": "a"})).as_deref(),
            Some("a")
        );
        assert_eq!(of(json!({"sessionId": 5})), None);
        assert_eq!(of(json!([1])), None);
    }

    #[test]
    fn dense_params_are_refused_before_any_tree_is_built() {
        let zeros = vec![0u8; 1 << 20];
        let text = format!(
            r#"{{"sessionId":"s","x":{}}}"#,
            serde_json::to_string(&zeros).expect("json")
        );
        let e =
            decode::<Value>(Some(RawValue::from_string(text).expect("json"))).expect_err("dense");
        assert!(e.message.contains("too many JSON values"), "{}", e.message);
        // A long string is one value, however big.
        let long = json!({"sessionId": "s", "x": "y".repeat(1 << 20)});
        assert!(decode::<Value>(raw(long)).is_ok());
    }
}
