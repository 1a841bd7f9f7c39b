//! The JSON-RPC 2.0 message model and the envelope rules of SPEC §3.1.
//!
//! [`classify`] turns one frame (a line without its `\n`) into what the receiver must do
//! with it: dispatch a request, resolve a response, answer with an error, or drop it. It
//! classifies first (request-shaped / response-shaped / ambiguous) and validates second,
//! so an invalid request still gets its valid id echoed, exactly as it was written ([`Id`]).
//!
//! No frame is turned into a generic JSON tree here (SPEC §17.1): the frame is checked
//! whole, its members are kept as raw text, a request's `params` stay raw until its method
//! decodes them into its own types, and a response's result is parsed only once it is
//! known to answer one of our requests.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ErrorObject;
pub use crate::id::Id;
use crate::scan::{self, Kind, Members};

/// A request or notification received from the peer.
#[derive(Debug, Clone)]
pub struct Request {
    /// `None` for a notification (no `id` key); the JSON `null` for `"id": null`.
    pub id: Option<Id>,
    pub method: String,
    /// `None` when absent; otherwise an object or an array, as the peer wrote it.
    pub params: Option<Box<RawValue>>,
}

impl Request {
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The params as a JSON value (for peers whose frames are trusted to be small, such as
    /// a client reading its daemon). `None` when absent.
    pub fn params_value(&self) -> Option<Value> {
        self.params
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Request) -> bool {
        self.id == other.id
            && self.method == other.method
            && self.params.as_ref().map(|p| p.get()) == other.params.as_ref().map(|p| p.get())
    }
}

/// A valid response received from the peer. Its result (or error data) is kept as text
/// until [`Response::into_outcome`].
#[derive(Debug, Clone)]
pub struct Response {
    pub id: Value,
    outcome: RawOutcome,
}

#[derive(Debug, Clone)]
enum RawOutcome {
    Result(Box<RawValue>),
    Error {
        code: i64,
        message: String,
        data: Option<Box<RawValue>>,
    },
}

impl Response {
    /// A response with an already known outcome.
    pub fn new(id: Value, outcome: Result<Value, ErrorObject>) -> Response {
        let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap_or_else(|_| null_raw());
        let outcome = match outcome {
            Ok(result) => RawOutcome::Result(raw(&result)),
            Err(e) => RawOutcome::Error {
                code: e.code,
                message: e.message,
                data: e.data.as_ref().map(raw),
            },
        };
        Response { id, outcome }
    }

    /// The result, or the peer's error, parsed.
    pub fn into_outcome(self) -> Result<Value, ErrorObject> {
        let parse = |raw: Box<RawValue>| serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        match self.outcome {
            RawOutcome::Result(raw) => Ok(parse(raw)),
            RawOutcome::Error {
                code,
                message,
                data,
            } => Err(ErrorObject {
                code,
                message,
                data: data.map(parse),
            }),
        }
    }
}

impl PartialEq for Response {
    fn eq(&self, other: &Response) -> bool {
        self.id == other.id && self.clone().into_outcome() == other.clone().into_outcome()
    }
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| unreachable!("null is JSON"))
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
    match plain_request(frame) {
        Some(request) => Inbound::Request(request),
        None => classify_general(frame),
    }
}

/// Every frame the fast path leaves: checked whole, then judged by its members.
fn classify_general(frame: &[u8]) -> Inbound {
    if let Err(e) = scan::validate(frame) {
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
    let Some(members) = scan::members(frame) else {
        let batch = frame.trim_ascii_start().starts_with(b"[");
        let what = if batch {
            "invalid request: batches are not supported"
        } else {
            "invalid request: a message must be a JSON object"
        };
        return ambiguous(what);
    };
    classify_members(&members)
}

/// Classifies an already parsed JSON value.
pub fn classify_value(value: Value) -> Inbound {
    match serde_json::to_vec(&value) {
        Ok(frame) => classify(&frame),
        Err(e) => Inbound::Reject {
            id: Id::null(),
            error: ErrorObject::parse_error(format!("parse error: {e}")),
        },
    }
}

/// The envelope rules on a valid JSON object's members.
fn classify_members(obj: &Members<'_>) -> Inbound {
    let has_result = obj.contains("result");
    let has_error = obj.contains("error");
    match obj.get("method").map(scan::kind) {
        Some(Kind::String) if !has_result && !has_error => validate_request(obj),
        None if has_result || has_error => validate_response(obj),
        Some(Kind::String) => ambiguous("invalid request: method together with result or error"),
        Some(_) => ambiguous("invalid request: method must be a string"),
        None => ambiguous("invalid request: neither a method nor a result or error"),
    }
}

/// Frames up to this size may take the fast path of [`classify`].
const PLAIN_REQUEST_BYTES: usize = 16 * 1024;

/// The members of a request, borrowed from its frame. Unknown or repeated members fail
/// the decoding, which sends the frame down the general path.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainRequest<'a> {
    #[serde(borrow)]
    jsonrpc: &'a RawValue,
    method: String,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// A member that is there, `null` included (`Option`'s own decoding reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The fast path for what nearly every frame is: a valid request with members `jsonrpc`
/// (exactly `"2.0"`), `method`, and optionally `id` and `params`, each once. It decodes
/// the envelope and echoes the id from its own text. Anything else, and anything this path
/// cannot judge exactly as the general path would (an id with escapes or a number that is
/// not a short integer, params that fail to validate or nest deep), gets `None`, and the
/// general path decides: the outcome is the same either way.
fn plain_request(frame: &[u8]) -> Option<Request> {
    // A big frame's cost is its content, not its envelope.
    if frame.len() > PLAIN_REQUEST_BYTES {
        return None;
    }
    let text = std::str::from_utf8(frame).ok()?;
    // A struct also decodes from a JSON array; only an object is a request.
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let plain: PlainRequest<'_> = serde_json::from_str(text).ok()?;
    if plain.jsonrpc.get() != "\"2.0\"" {
        return None;
    }
    let id = match plain.id {
        Some(raw) if plain_id(raw.get()) => Some(Id::from_raw(raw)),
        Some(_) => return None,
        None => None,
    };
    let params = match plain.params {
        // Checked alone, params nest one level less deep than inside the frame; leave
        // anything that could come near the parser's depth limit to the general path.
        Some(raw)
            if matches!(scan::kind(raw), Kind::Object | Kind::Array)
                && !may_nest_deep(raw.get()) =>
        {
            scan::validate_str(raw.get()).ok()?;
            Some(raw.to_owned())
        }
        Some(_) => return None,
        None => None,
    };
    Some(Request {
        id,
        method: plain.method,
        params,
    })
}

/// Whether `text` has so many brackets that it might nest near the parser's depth limit.
fn may_nest_deep(text: &str) -> bool {
    text.bytes().filter(|b| matches!(b, b'{' | b'[')).count() >= 100
}

/// Ids whose text is certainly what the general path would echo: `null`, a string without
/// escapes, or an integer of at most 18 digits.
fn plain_id(text: &str) -> bool {
    if text == "null" {
        return true;
    }
    if let Some(inner) = text.strip_prefix('"') {
        return !inner.contains('\\');
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        // `-0` parses as a float; leading zeros are not JSON (the parser refused them).
        && text != "-0"
}

fn ambiguous(message: &str) -> Inbound {
    Inbound::Reject {
        id: Id::null(),
        error: ErrorObject::invalid_request(message),
    }
}

/// A string, a number or null.
fn valid_id(id: &RawValue) -> bool {
    matches!(scan::kind(id), Kind::String | Kind::Number | Kind::Null)
}

fn version_ok(obj: &Members<'_>) -> bool {
    obj.get("jsonrpc")
        .and_then(scan::string)
        .is_some_and(|v| v == "2.0")
}

fn validate_request(obj: &Members<'_>) -> Inbound {
    let id = obj.get("id");
    let exact = id.filter(|id| valid_id(id)).map(Id::from_raw);
    let echo = exact.clone().unwrap_or_else(Id::null);
    let reject = |message: &str| Inbound::Reject {
        id: echo.clone(),
        error: ErrorObject::invalid_request(message),
    };
    if !version_ok(obj) {
        return reject("invalid request: jsonrpc must be \"2.0\"");
    }
    if id.is_some_and(|id| !valid_id(id)) {
        return reject("invalid request: id must be a string, a number or null");
    }
    let params = obj.get("params");
    if params.is_some_and(|p| !matches!(scan::kind(p), Kind::Object | Kind::Array)) {
        return reject("invalid request: params must be an object or an array");
    }
    let Some(method) = obj.get("method").and_then(scan::string) else {
        return reject("invalid request: method must be a string");
    };
    Inbound::Request(Request {
        id: exact,
        method,
        params: params.map(RawValue::to_owned),
    })
}

fn validate_response(obj: &Members<'_>) -> Inbound {
    if !version_ok(obj) {
        return Inbound::DropInvalidResponse("response without jsonrpc \"2.0\"");
    }
    let id = match obj.get("id") {
        Some(id) if valid_id(id) => serde_json::from_str(id.get()).unwrap_or(Value::Null),
        Some(_) => {
            return Inbound::DropInvalidResponse("response id is not a string, number or null");
        }
        None => return Inbound::DropInvalidResponse("response without an id"),
    };
    let outcome = match (obj.get("result"), obj.get("error")) {
        (Some(result), None) => RawOutcome::Result(result.to_owned()),
        (None, Some(error)) => match raw_error(error) {
            Some(error) => error,
            None => return Inbound::DropInvalidResponse("response error is not {code, message}"),
        },
        _ => return Inbound::DropInvalidResponse("response with both result and error"),
    };
    Inbound::Response(Response { id, outcome })
}

/// `{code: integer, message: string, data?}`, its data kept as text.
fn raw_error(error: &RawValue) -> Option<RawOutcome> {
    let obj = scan::members_str(error.get())?;
    let code = obj.get("code")?;
    // An integer code: 3.0 or 1e3 are numbers but not integers on the wire.
    let code = match serde_json::from_str::<Value>(code.get()).ok()? {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64()?,
        _ => return None,
    };
    let message = scan::string(obj.get("message")?)?;
    Some(RawOutcome::Error {
        code,
        message,
        data: obj.get("data").map(RawValue::to_owned),
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

/// Appends a success line for `id` whose result `write_result` appends as JSON: the same
/// text as [`result_line`] of that value, without building it. On error, `buf` is left
/// as it was and the error is returned.
pub fn push_result_line_with<I: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &I,
    write_result: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    let start = buf.len();
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let written = serde_json::to_writer(&mut *buf, id).and_then(|()| {
        buf.extend_from_slice(br#","result":"#);
        write_result(buf)
    });
    if written.is_err() {
        buf.truncate(start);
        return written;
    }
    buf.extend_from_slice(b"}\n");
    Ok(())
}

/// Appends the line [`response_line`] makes to `buf` (no buffer of its own).
pub fn push_response_line<I: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    id: &I,
    outcome: &Result<Value, ErrorObject>,
) {
    let start = buf.len();
    let written = match outcome {
        Ok(result) => serde_json::to_writer(
            &mut *buf,
            &WireResult {
                jsonrpc: "2.0",
                id,
                result,
            },
        ),
        Err(error) => serde_json::to_writer(
            &mut *buf,
            &WireError {
                jsonrpc: "2.0",
                id,
                error,
            },
        ),
    };
    if written.is_err() {
        // As in `to_line`: cannot happen for plain values; never a half-written line.
        buf.truncate(start);
        buf.extend_from_slice(b"{}");
    }
    buf.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code;
    use serde_json::json;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("json")
    }

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
                params: Some(raw("{}"))
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
            Inbound::Response(Response::new(json!("zc-out-0"), Ok(Value::Null)))
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no","data":[1]}}"#),
            Inbound::Response(Response::new(
                json!(1),
                Err(ErrorObject {
                    code: -1,
                    message: "no".into(),
                    data: Some(json!([1]))
                })
            ))
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

    /// The general path alone, for comparing the fast one with it.
    fn general(frame: &[u8]) -> Inbound {
        classify_general(frame)
    }

    #[test]
    fn the_fast_path_decides_as_the_general_one() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"m","id":1,"params":{}1{}}}"#,
            "[".repeat(127),
            "]".repeat(127)
        );
        let frames = [
            r#"{"jsonrpc":"2.0","method":"status","params":{},"id":2}"#,
            r#" {"id":"a","method":"status","jsonrpc":"2.0"} "#,
            r#"{"jsonrpc":"2.0","method":"x","id":null,"params":[1]}"#,
            r#"{"jsonrpc":"2.0","method":"x"}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":null,"id":3}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":5,"id":3}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":true}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1e2}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":-0}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":18446744073709551616}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":"\u0041"}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1,"id":2}"#,
            r#"{"jsonrpc":"2.0","method":"x","method":"y","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1,"extra":1e400}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1,"params":{"n":1e400}}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1,"params":{"s":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":"\ud800"}"#,
            r#"{"jsonrpc":"2.0","meth\u006fd":"x","id":7}"#,
            r#"{"jsonrpc":"2\u002e0","method":"x","id":7}"#,
            r#"{"jsonrpc":"1.0","method":"x","id":7}"#,
            r#"{"jsonrpc":"2.0","method":"x","result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","method":5,"id":1}"#,
            r#"["2.0","status",null,1]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","method":"x","id":1} x"#,
            &deep,
        ];
        for frame in frames {
            assert_eq!(
                classify(frame.as_bytes()),
                general(frame.as_bytes()),
                "{frame}"
            );
        }
        assert!(
            plain_request(frames[0].as_bytes()).is_some(),
            "the fast path is taken"
        );
        assert!(
            plain_request(frames[1].as_bytes())
                .is_some_and(|r| r.id.is_some_and(|id| id.as_json() == "\"a\"")),
            "surrounding whitespace is not part of the id"
        );
    }

    const MEMBERS: &[&str] = &[
        r#""jsonrpc":"2.0""#,
        r#""jsonrpc":"1.0""#,
        r#""jsonrpc":2"#,
        r#""method":"status""#,
        r#""method":5"#,
        r#""method":"a\"b""#,
        r#""id":1"#,
        r#""id":-12"#,
        r#""id":"x""#,
        r#""id":null"#,
        r#""id":1.5"#,
        r#""id":"\n""#,
        r#""id":[]"#,
        r#""params":{}"#,
        r#""params":[1,{"a":null}]"#,
        r#""params":null"#,
        r#""params":"s""#,
        r#""result":1"#,
        r#""error":{}"#,
        r#""other":true"#,
    ];

    proptest::proptest! {
        #[test]
        fn fast_and_general_paths_agree_on_envelopes(
            members in proptest::collection::vec(proptest::sample::select(MEMBERS), 0..6),
            spaces in proptest::bool::ANY,
        ) {
            let sep = if spaces { " , " } else { "," };
            let frame = format!("{{{}}}", members.join(sep));
            proptest::prop_assert_eq!(classify(frame.as_bytes()), general(frame.as_bytes()), "{}", frame);
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
        let mut buf = b"before\n".to_vec();
        push_response_line(&mut buf, &json!(1), &Ok(json!({"text": "a\nb"})));
        push_response_line(&mut buf, &json!(2), &Err(ErrorObject::invalid_request("x")));
        let mut expected = b"before\n".to_vec();
        expected.extend(line.clone());
        expected.extend(error_line(&json!(2), &ErrorObject::invalid_request("x")));
        assert_eq!(buf, expected);
        let mut direct = Vec::new();
        push_result_line_with(&mut direct, &json!(1), |buf| {
            serde_json::to_writer(buf, &json!({"text": "a\nb"}))
        })
        .expect("written");
        assert_eq!(direct, line);
        let failed = push_result_line_with(&mut direct, &json!(2), |buf| {
            buf.extend_from_slice(b"{half");
            Err(serde::ser::Error::custom("no"))
        });
        assert!(failed.is_err());
        assert_eq!(direct, line, "nothing of a failed line is left");
        let err = error_line(&Value::Null, &ErrorObject::invalid_request("x"));
        assert_eq!(
            err,
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"x\"}}\n"
                .to_vec()
        );
    }
}
