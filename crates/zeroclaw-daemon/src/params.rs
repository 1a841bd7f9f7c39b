//! Typed method parameters in, typed results out: the one place a handler's params are
//! decoded and its result encoded. Parameters are accepted with both spellings (SPEC: every input field accepts
//! its camelCase and its snake_case spelling; when both are present, camelCase wins).
//!
//! Only the keys of the object being decoded are normalized, never the JSON values inside
//! it: a config value such as `{config_write_paths: […]}` keeps its own names.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use zeroclaw_rpc::ErrorObject;

// The renaming rule is the vocabulary's, so daemon and schema agree on it.
use zeroclaw_protocol::normalize_keys;

/// Decodes `params` (absent = `{}`) into `T`, whose fields are spelled in camelCase.
pub fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    decode_value(params.unwrap_or_else(|| Value::Object(Map::new())))
}

/// Decodes one object (normalizing its keys) into `T`.
pub fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, ErrorObject> {
    let value = match value {
        Value::Object(obj) => Value::Object(normalize_keys(obj)),
        Value::Array(_) => {
            return Err(ErrorObject::invalid_params(
                "invalid params: expected an object",
            ));
        }
        other => other,
    };
    serde_json::from_value(value)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
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
    use zeroclaw_protocol::camel_case;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct P {
        session_id: String,
        #[serde(default)]
        data_b64: Option<String>,
    }

    #[test]
    fn both_spellings_and_camel_wins() {
        let a: P = decode(Some(json!({"session_id": "s", "data_b64": "x"}))).expect("snake");
        let b: P = decode(Some(json!({"sessionId": "s", "dataB64": "x"}))).expect("camel");
        assert_eq!(a, b);
        let c: P =
            decode(Some(json!({"sessionId": "camel", "session_id": "snake"}))).expect("both");
        assert_eq!(c.session_id, "camel");
        assert_eq!(camel_case("protocol_version"), "protocolVersion");
    }

    #[test]
    fn errors_are_invalid_params() {
        let e = decode::<P>(Some(json!({"sessionId": 5}))).expect_err("wrong type");
        assert_eq!(e.code, zeroclaw_rpc::code::INVALID_PARAMS);
        assert!(decode::<P>(Some(json!([1]))).is_err());
        assert!(decode::<P>(None).is_err(), "missing field");
    }
}
