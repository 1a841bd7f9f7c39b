//! The JSON-RPC 2.0 message model and the envelope rules of SPEC §3.1.
//!
//! [`classify`] turns one frame (a line without its `\n`) into what the receiver must do
//! with it: dispatch a request, resolve a response, answer with an error, or drop it. It
//! classifies first (request-shaped / response-shaped / ambiguous) and validates second,
//! so an invalid request still gets its valid id echoed, exactly as it was written ([`Id`]).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ErrorObject;
pub use crate::id::Id;

/// A request or notification received from the peer.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no `id` key); the JSON `null` for `"id": null`.
    pub id: Option<Id>,
    pub method: String,
    /// `None` when absent; otherwise an object or an array.
    pub params: Option<Value>,
}

impl Request {
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }
}

/// A valid response received from the peer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Value,
    pub outcome: Result<Value, ErrorObject>,
}

/// What the receiver does with one frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Request(Request),
    Response(Response),
    /// The frame was invalid; answer with this error (the id to echo is `id`).
    Reject {
        id: Id,
        error: ErrorObject,
    },
    /// An invalid response-shaped frame: never answered; the reason is safe to log (it
    /// never contains the frame's content).
    DropInvalidResponse(&'static str),
}

/// Classifies and validates one frame.
pub fn classify(frame: &[u8]) -> Inbound {
    let value: Value = match serde_json::from_slice(frame) {
        Ok(v) => v,
        Err(e) => {
            let what = if std::str::from_utf8(frame).is_err() {
                "parse error: frame is not valid UTF-8".to_string()
            } else {
                format!("parse error: {e}")
            };
            return Inbound::Reject {
                id: Id::null(),
                error: ErrorObject::parse_error(what),
            };
        }
    };
    classify_parsed(value, Some(frame))
}

/// Classifies an already parsed JSON value (its ids are echoed as that value prints).
pub fn classify_value(value: Value) -> Inbound {
    classify_parsed(value, None)
}

/// `frame`, when known, is the text `value` was parsed from (for ids echoed exactly).
fn classify_parsed(value: Value, frame: Option<&[u8]>) -> Inbound {
    let Value::Object(obj) = value else {
        let what = if value.is_array() {
            "invalid request: batches are not supported"
        } else {
            "invalid request: a message must be a JSON object"
        };
        return ambiguous(what);
    };
    let has_result = obj.contains_key("result");
    let has_error = obj.contains_key("error");
    match obj.get("method") {
        Some(Value::String(_)) if !has_result && !has_error => validate_request(obj, frame),
        None if has_result || has_error => validate_response(obj),
        Some(Value::String(_)) => {
            ambiguous("invalid request: method together with result or error")
        }
        Some(_) => ambiguous("invalid request: method must be a string"),
        None => ambiguous("invalid request: neither a method nor a result or error"),
    }
}

fn ambiguous(message: &str) -> Inbound {
    Inbound::Reject {
        id: Id::null(),
        error: ErrorObject::invalid_request(message),
    }
}

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

fn version_ok(obj: &Map<String, Value>) -> bool {
    obj.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
}

fn validate_request(mut obj: Map<String, Value>, frame: Option<&[u8]>) -> Inbound {
    let id = obj.remove("id");
    let exact = match &id {
        Some(id) if valid_id(id) => Some(Id::exact(id, frame)),
        _ => None,
    };
    let echo = exact.clone().unwrap_or_else(Id::null);
    let reject = |message: &str| Inbound::Reject {
        id: echo.clone(),
        error: ErrorObject::invalid_request(message),
    };
    if !version_ok(&obj) {
        return reject("invalid request: jsonrpc must be \"2.0\"");
    }
    if id.as_ref().is_some_and(|id| !valid_id(id)) {
        return reject("invalid request: id must be a string, a number or null");
    }
    let params = obj.remove("params");
    if params
        .as_ref()
        .is_some_and(|p| !p.is_object() && !p.is_array())
    {
        return reject("invalid request: params must be an object or an array");
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return reject("invalid request: method must be a string");
    };
    Inbound::Request(Request {
        id: exact,
        method,
        params,
    })
}

fn validate_response(mut obj: Map<String, Value>) -> Inbound {
    if !version_ok(&obj) {
        return Inbound::DropInvalidResponse("response without jsonrpc \"2.0\"");
    }
    let id = match obj.remove("id") {
        Some(id) if valid_id(&id) => id,
        Some(_) => {
            return Inbound::DropInvalidResponse("response id is not a string, number or null");
        }
        None => return Inbound::DropInvalidResponse("response without an id"),
    };
    let outcome = match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => match parse_error_object(error) {
            Some(error) => Err(error),
            None => return Inbound::DropInvalidResponse("response error is not {code, message}"),
        },
        _ => return Inbound::DropInvalidResponse("response with both result and error"),
    };
    Inbound::Response(Response { id, outcome })
}

fn parse_error_object(error: Value) -> Option<ErrorObject> {
    let Value::Object(mut obj) = error else {
        return None;
    };
    let code = obj.get("code").and_then(Value::as_i64)?;
    // An integer code: 3.0 or 1e3 are numbers but not integers on the wire.
    if !obj.get("code").is_some_and(|c| c.is_i64() || c.is_u64()) {
        return None;
    }
    let Some(Value::String(message)) = obj.remove("message") else {
        return None;
    };
    Some(ErrorObject {
        code,
        message,
        data: obj.remove("data"),
    })
}

#[derive(Serialize)]
struct WireRequest<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct WireResult<'a, I: ?Sized> {
    jsonrpc: &'static str,
    id: &'a I,
    result: &'a Value,
}

#[derive(Serialize)]
struct WireError<'a, I: ?Sized> {
    jsonrpc: &'static str,
    id: &'a I,
    error: &'a ErrorObject,
}

fn to_line<T: Serialize>(msg: &T) -> Vec<u8> {
    // Serializing plain JSON values and strings cannot fail; an empty object is a safe
    // fallback that the peer will reject loudly rather than a panic here.
    let mut line = serde_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

/// One compact JSON line (with its `\n`) for a request; `id: None` makes a notification.
pub fn request_line(id: Option<&Value>, method: &str, params: Option<&Value>) -> Vec<u8> {
    to_line(&WireRequest {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// One compact JSON line for a success response (`id`: a [`Value`] or an [`Id`]).
pub fn result_line<I: Serialize + ?Sized>(id: &I, result: &Value) -> Vec<u8> {
    to_line(&WireResult {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// One compact JSON line for an error response.
pub fn error_line<I: Serialize + ?Sized>(id: &I, error: &ErrorObject) -> Vec<u8> {
    to_line(&WireError {
        jsonrpc: "2.0",
        id,
        error,
    })
}

/// A success or error response line, by outcome.
pub fn response_line<I: Serialize + ?Sized>(
    id: &I,
    outcome: &Result<Value, ErrorObject>,
) -> Vec<u8> {
    match outcome {
        Ok(result) => result_line(id, result),
        Err(error) => error_line(id, error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code;
    use serde_json::json;

    fn rejected(frame: &str) -> (Value, i64) {
        match classify(frame.as_bytes()) {
            Inbound::Reject { id, error } => (id.value(), error.code),
            other => panic!("expected a rejection for {frame}, got {other:?}"),
        }
    }

    #[test]
    fn valid_requests_and_notifications() {
        let req = classify(br#"{"jsonrpc":"2.0","method":"status","params":{},"id":2}"#);
        assert_eq!(
            req,
            Inbound::Request(Request {
                id: Some(Id::from_value(&json!(2))),
                method: "status".into(),
                params: Some(json!({}))
            })
        );
        let Inbound::Request(n) = classify(br#"{"jsonrpc":"2.0","method":"x"}"#) else {
            panic!("notification")
        };
        assert!(n.is_notification());
        let Inbound::Request(r) =
            classify(br#"{"jsonrpc":"2.0","method":"x","id":null,"params":[1]}"#)
        else {
            panic!("null id request")
        };
        assert_eq!(r.id, Some(Id::null()));
    }

    #[test]
    fn parse_errors() {
        assert_eq!(rejected("{not json"), (Value::Null, code::PARSE_ERROR));
        match classify(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}") {
            Inbound::Reject { id, error } => {
                assert_eq!((id, error.code), (Id::null(), code::PARSE_ERROR));
                assert!(error.message.contains("UTF-8"), "{}", error.message);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_request_shaped_echoes_a_valid_id() {
        assert_eq!(
            rejected(r#"{"jsonrpc":"1.0","method":"x","id":7}"#),
            (json!(7), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected(r#"{"method":"x","id":"a"}"#),
            (json!("a"), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","method":"x","params":null,"id":3}"#),
            (json!(3), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","method":"x","params":5,"id":3}"#),
            (json!(3), code::INVALID_REQUEST)
        );
        // The id itself is invalid: answered with id null.
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","method":"x","id":{"a":1}}"#),
            (Value::Null, code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","method":"x","id":[1]}"#),
            (Value::Null, code::INVALID_REQUEST)
        );
        // Invalid even without an id key: still answered.
        assert_eq!(
            rejected(r#"{"jsonrpc":"2.0","method":"x","params":"s"}"#),
            (Value::Null, code::INVALID_REQUEST)
        );
    }

    #[test]
    fn ambiguous_frames_get_null_id() {
        for frame in [
            "[]",
            r#"[{"jsonrpc":"2.0","method":"x","id":1}]"#,
            "42",
            "\"s\"",
            "null",
            r#"{"jsonrpc":"2.0","method":5,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"x","result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"x","error":{"code":1,"message":"m"},"id":1}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            "{}",
        ] {
            assert_eq!(
                rejected(frame),
                (Value::Null, code::INVALID_REQUEST),
                "{frame}"
            );
        }
    }

    #[test]
    fn responses_valid_and_invalid() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":"zc-out-0","result":null}"#),
            Inbound::Response(Response {
                id: json!("zc-out-0"),
                outcome: Ok(Value::Null)
            })
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no","data":[1]}}"#),
            Inbound::Response(Response {
                id: json!(1),
                outcome: Err(ErrorObject {
                    code: -1,
                    message: "no".into(),
                    data: Some(json!([1]))
                })
            })
        );
        for frame in [
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","result":1}"#,
            r#"{"jsonrpc":"2.0","id":{},"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
        ] {
            assert!(
                matches!(classify(frame.as_bytes()), Inbound::DropInvalidResponse(_)),
                "{frame}"
            );
        }
    }

    #[test]
    fn lines_are_compact_and_single_line() {
        let line = result_line(&json!(1), &json!({"text": "a\nb"}));
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"a\\nb\"}}\n".to_vec()
        );
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let note = request_line(None, "session/update", Some(&json!({})));
        assert_eq!(
            note,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n".to_vec()
        );
        let err = error_line(&Value::Null, &ErrorObject::invalid_request("x"));
        assert_eq!(
            err,
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"x\"}}\n"
                .to_vec()
        );
    }
}
