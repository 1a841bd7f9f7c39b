//! Fuzzing the two parsers every peer reaches first: the capped frame decoder and the
//! envelope classifier. Random input must never panic them, and what they return keeps the
//! contract's invariants. `cargo test` runs the default number of cases; `.ci/run` runs
//! more (`PROPTEST_CASES`).

use proptest::prelude::*;
use serde_json::Value;
use zeroclaw_rpc::{Frame, FrameReader, Inbound, classify};

#[path = "support/chunked.rs"]
mod chunked;
use chunked::frames;

/// Random bytes with frequent `\n` and `\r` (about one byte in ten each).
fn with_line_breaks(mut data: Vec<u8>) -> Vec<u8> {
    for b in &mut data {
        match *b {
            0..=24 => *b = b'\n',
            25..=49 => *b = b'\r',
            _ => {}
        }
    }
    data
}

/// Bytes that look like JSON-RPC often enough to reach every branch of the classifier.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(&b"{"[..]),
        Just(&b"}"[..]),
        Just(&b"["[..]),
        Just(&b"]"[..]),
        Just(&b","[..]),
        Just(&b":"[..]),
        Just(&b"\"jsonrpc\""[..]),
        Just(&b"\"2.0\""[..]),
        Just(&b"\"method\""[..]),
        Just(&b"\"status\""[..]),
        Just(&b"\"id\""[..]),
        Just(&b"\"params\""[..]),
        Just(&b"\"result\""[..]),
        Just(&b"\"error\""[..]),
        Just(&b"\"code\""[..]),
        Just(&b"\"message\""[..]),
        Just(&b"null"[..]),
        Just(&b"true"[..]),
        Just(&b"1e2"[..]),
        Just(&b"-0"[..]),
        Just(&b"18446744073709551616"[..]),
        Just(&b"-32600"[..]),
        Just(&b"1.5"[..]),
        Just(&b"\"\\u0041\\n\""[..]),
        Just(&b"\"\xff\""[..]),
        Just(&b" "[..]),
    ];
    proptest::collection::vec(token, 0..24).prop_map(|parts| parts.concat())
}

/// A well-formed envelope with random members, so valid requests and responses occur.
fn envelope() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        Just(None),
        Just(Some("1")),
        Just(Some("1e2")),
        Just(Some("-0")),
        Just(Some("1.0")),
        Just(Some("18446744073709551616")),
        Just(Some("\"a\\u0041\"")),
        Just(Some("null")),
        Just(Some("{}")),
        Just(Some("[1]")),
    ];
    let member = |name: &'static str, values: &'static [&'static str]| {
        proptest::option::of(proptest::sample::select(values))
            .prop_map(move |v| v.map(|v| format!("\"{name}\":{v}")))
    };
    (
        id,
        member("jsonrpc", &["\"2.0\"", "\"1.0\"", "2"]),
        member("method", &["\"status\"", "5", "\"session/cancel\""]),
        member(
            "params",
            &["{}", "[]", "null", "7", "{\"sessionId\":\"s\"}"],
        ),
        member("result", &["null", "{}", "1"]),
        member(
            "error",
            &[
                "{\"code\":-1,\"message\":\"m\"}",
                "{\"code\":1.5,\"message\":\"m\"}",
                "\"x\"",
            ],
        ),
    )
        .prop_map(|(id, a, b, c, d, e)| {
            let mut members: Vec<String> = [a, b, c, d, e].into_iter().flatten().collect();
            if let Some(id) = id {
                members.push(format!("\"id\":{id}"));
            }
            format!("{{{}}}", members.join(",")).into_bytes()
        })
}

/// The classifier's invariants for one frame.
fn check_classified(frame: &[u8]) -> Result<(), TestCaseError> {
    let parsed: Option<Value> = serde_json::from_slice(frame).ok();
    match classify(frame) {
        Inbound::Reject { id, error } => {
            let id = serde_json::from_str::<Value>(id.as_json());
            prop_assert!(
                matches!(id, Ok(Value::Null | Value::String(_) | Value::Number(_))),
                "reject id {:?}",
                id
            );
            prop_assert!(error.code == -32700 || error.code == -32600);
            if parsed.is_none() {
                prop_assert_eq!(error.code, -32700);
            }
        }
        Inbound::Request(request) => {
            let Some(Value::Object(obj)) = parsed else {
                return Err(TestCaseError::fail("a request from a non-object"));
            };
            prop_assert_eq!(
                obj.get("method").and_then(Value::as_str),
                Some(&*request.method)
            );
            // Params stay as written: the same value as the frame's, an object or array.
            match (&request.params, obj.get("params")) {
                (None, None) => {}
                (Some(raw), Some(sent)) => {
                    let kept = serde_json::from_str::<Value>(raw.get()).ok();
                    prop_assert_eq!(kept.as_ref(), Some(sent));
                    prop_assert!(sent.is_object() || sent.is_array());
                }
                (kept, sent) => {
                    return Err(TestCaseError::fail(format!("params {kept:?} for {sent:?}")));
                }
            }
            match (&request.id, obj.get("id")) {
                (None, None) => {}
                (Some(id), Some(sent)) => {
                    let echoed = serde_json::from_str::<Value>(id.as_json()).ok();
                    prop_assert_eq!(echoed.as_ref(), Some(sent));
                }
                (id, sent) => {
                    return Err(TestCaseError::fail(format!("id {id:?} for {sent:?}")));
                }
            }
        }
        Inbound::Response(response) => {
            prop_assert!(parsed.is_some_and(|v| v.get("method").is_none()));
            prop_assert!(matches!(
                response.id,
                Value::Null | Value::String(_) | Value::Number(_)
            ));
        }
        Inbound::DropInvalidResponse(_) => {
            prop_assert!(parsed.is_some_and(|v| v.get("method").is_none()));
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn decoder_never_panics_and_never_yields_a_line_over_the_cap(
        data in proptest::collection::vec(any::<u8>(), 0..800).prop_map(with_line_breaks),
        sizes in proptest::collection::vec(1usize..300, 0..20),
        max in 1usize..200,
        buf_cap in 1usize..128,
    ) {
        let newlines = data.iter().filter(|b| **b == b'\n').count();
        let decoded = frames(&data, sizes, max, buf_cap);
        // At most one frame per line (plus an unterminated last one).
        prop_assert!(decoded.len() <= newlines + 1);
        for frame in decoded {
            if let Frame::Line(line) = frame {
                prop_assert!(line.len() < max, "line of {} with cap {}", line.len(), max);
                prop_assert!(!line.contains(&b'\n'));
                prop_assert!(!line.iter().all(u8::is_ascii_whitespace));
            }
        }
    }

    #[test]
    fn classify_never_panics_on_bytes(frame in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_classified(&frame)?;
    }

    #[test]
    fn classify_keeps_its_invariants_on_jsonish_input(frame in jsonish()) {
        check_classified(&frame)?;
    }

    #[test]
    fn classify_keeps_its_invariants_on_envelopes(frame in envelope()) {
        check_classified(&frame)?;
    }
}
