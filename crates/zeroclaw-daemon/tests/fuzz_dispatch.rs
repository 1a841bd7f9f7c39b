//! Fuzzing what a peer reaches after the frame decoder (SPEC §4, §13, §17.1), through the
//! real connection loop in process (tests/harness):
//!
//! - before `initialize`: any sequence of frames (garbage, any method with any params,
//!   frames over the pre-initialize cap) gets only handshake-phase answers, runs nothing,
//!   and leaves the connection able to initialize;
//! - after it: every params member of every method accepted under either spelling, the
//!   camelCase one winning when both are sent, so a call answers exactly as its camelCase
//!   twin does.
//!
//! `cargo test` runs the default number of cases; `.ci/run` runs more (`PROPTEST_CASES`).

mod harness;

use harness::{Bed, Client};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

/// Every client→daemon method name.
const METHODS: &[&str] = &[
    "initialize",
    "status",
    "config/get",
    "config/set",
    "config/set-many",
    "config/delete",
    "session/new",
    "session/prompt",
    "session/cancel",
    "session/approve",
    "session/close",
    "session/kill",
    "session/delete",
    "session/list",
    "session/messages",
    "session/subscribe",
    "session/unsubscribe",
    "session/status",
    "session/configure",
    "models/list",
    "file/attach",
    "file/upload/begin",
    "file/upload/chunk",
    "file/upload/commit",
    "daemon/shutdown",
];

/// Codes a connection that has not completed `initialize` may be answered with.
const HANDSHAKE_CODES: &[i64] = &[-32700, -32600, -32601, -32602, -32010, -32011];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn cases(default: u32) -> Config {
    let mut config = Config::with_cases(default);
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    {
        // The long run of `.ci/run` asks for thousands of frames; these cases are
        // whole exchanges, so a tenth of that is plenty.
        config.cases = (n / 10).max(default);
    }
    config.failure_persistence = None;
    config
}

/// Some JSON value of any kind, small.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z_/.]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-zA-Z_]{1,14}", inner), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// One frame a peer might send before `initialize`.
fn pre_initialize_frame() -> impl Strategy<Value = Vec<u8>> {
    let request = (
        proptest::sample::select(METHODS),
        any_value(),
        proptest::option::of(0u32..1000),
    )
        .prop_map(|(method, params, id)| {
            let mut frame = json!({"jsonrpc": "2.0", "method": method});
            // Initialize only ever with a version that cannot succeed: the case is the
            // handshake phase.
            let params = match method {
                "initialize" => json!({"protocolVersion": 99}),
                _ => params,
            };
            frame["params"] = params;
            if let Some(id) = id {
                frame["id"] = json!(id);
            }
            frame.to_string().into_bytes()
        });
    prop_oneof![
        6 => request,
        2 => proptest::collection::vec(any::<u8>(), 1..80)
            .prop_map(|b| b.into_iter().filter(|c| *c != b'\n').collect()),
        1 => (1usize..4).prop_map(|n| {
            // Over the pre-initialize cap of 64 KiB.
            let pad = "0,".repeat(n * 40 * 1024);
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"x":[{pad}0]}}}}"#)
                .into_bytes()
        }),
    ]
}

/// Sends `frames`, then an `initialize` that must succeed; returns everything answered
/// before it.
async fn exchange(client: &mut Client, frames: &[Vec<u8>]) -> Vec<Value> {
    use tokio::io::AsyncWriteExt;
    for frame in frames {
        let mut line = frame.clone();
        line.push(b'\n');
        client.writer.write_all(&line).await.expect("send");
    }
    let probe = json!("probe");
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": probe, "method": "initialize",
                       "params": {"protocolVersion": 1}}),
        )
        .await;
    let (before, answer) = client.collect_until(&probe).await;
    assert!(
        answer.get("result").is_some(),
        "initialize after the case: {answer}"
    );
    before
}

#[test]
fn before_initialize_only_the_handshake_answers() {
    let rt = runtime();
    let bed = rt.block_on(Bed::plain());
    let frames = proptest::collection::vec(pre_initialize_frame(), 1..12)
        // At most two oversize frames: the third closes the connection (§3.3).
        .prop_filter("at most two oversize frames", |frames| {
            frames.iter().filter(|f| f.len() > 64 * 1024).count() <= 2
        });
    let mut runner = TestRunner::new(cases(64));
    runner
        .run(&frames, |frames| {
            rt.block_on(async {
                let mut client = bed.connect();
                let answers = exchange(&mut client, &frames).await;
                for answer in &answers {
                    prop_assert!(
                        answer.get("method").is_none(),
                        "a request or update: {answer}"
                    );
                    prop_assert!(
                        answer.get("result").is_none(),
                        "ran before initialize: {answer}"
                    );
                    let code = answer["error"]["code"].as_i64().unwrap_or(0);
                    prop_assert!(HANDSHAKE_CODES.contains(&code), "code {code}: {answer}");
                }
                // Initialized now, and nothing was done before: no session exists.
                let list = client.result("session/list", json!({})).await;
                prop_assert_eq!(&list["sessions"], &json!([]));
                Ok::<(), TestCaseError>(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// How one params member is spelled in a case.
#[derive(Debug, Clone, Copy)]
enum Spelling {
    Camel,
    Snake,
    /// Both: the camelCase one carries the value, the snake_case one junk that must lose.
    Both,
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for ch in camel.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `params` with each member spelled as `spellings` says (cycled).
fn respell(params: &Value, spellings: &[Spelling]) -> Value {
    let mut out = Map::new();
    let Value::Object(members) = params else {
        return params.clone();
    };
    for (i, (key, value)) in members.iter().enumerate() {
        let spelling = spellings[i % spellings.len()];
        let snake_key = snake(key);
        match spelling {
            Spelling::Camel => {
                out.insert(key.clone(), value.clone());
            }
            Spelling::Snake => {
                out.insert(snake_key, value.clone());
            }
            Spelling::Both if snake_key == *key => {
                out.insert(key.clone(), value.clone());
            }
            Spelling::Both => {
                out.insert(snake_key, json!({"junk": [1, 2, 3]}));
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The answer with what differs from call to call (ids, times, counters) left out.
fn stable(answer: &Value) -> Value {
    match answer {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "id" | "turnId"
                            | "usage"
                            | "lastActivity"
                            | "updatedAt"
                            | "uptimeSecs"
                            | "createdAt"
                            | "messageCount"
                            | "resumed"
                            | "uploadId"
                            | "message"
                    )
                })
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_params_member_takes_either_spelling_and_camel_case_wins() {
    let rt = runtime();
    let bed = rt.block_on(Bed::plain());
    let mut client = rt.block_on(bed.client(false));
    // A session to address, and one prompt in its transcript.
    rt.block_on(async {
        client
            .result(
                "session/new",
                json!({"agentAlias": "default", "sessionId": "s1"}),
            )
            .await;
        client
            .result(
                "session/prompt",
                json!({"sessionId": "s1", "prompt": "hello"}),
            )
            .await;
    });
    // Calls whose answer depends only on the state, which they leave as they found it.
    let calls: Vec<(&str, Value)> = vec![
        ("config/get", json!({"prop": "agents.default.provider"})),
        (
            "session/new",
            json!({"agentAlias": "default", "sessionId": "s1", "mode": "acp"}),
        ),
        (
            "session/prompt",
            json!({"sessionId": "nope", "prompt": "x", "mode": "acp"}),
        ),
        ("session/cancel", json!({"sessionId": "s1", "mode": "acp"})),
        (
            "session/approve",
            json!({"sessionId": "s1", "requestId": "r", "decision": "allow_once"}),
        ),
        ("session/list", json!({"mode": "acp", "limit": 5})),
        (
            "session/messages",
            json!({"sessionId": "s1", "mode": "acp", "limit": 1, "beforeSeq": 2}),
        ),
        (
            "session/subscribe",
            json!({"sessionId": "s1", "mode": "acp", "turnId": "t", "afterEventSeq": 0}),
        ),
        (
            "session/unsubscribe",
            json!({"sessionId": "s1", "mode": "acp"}),
        ),
        ("session/status", json!({"sessionId": "s1", "mode": "acp"})),
        (
            "session/configure",
            json!({"sessionId": "s1", "mode": "acp", "autonomy": "supervised"}),
        ),
        ("session/kill", json!({"sessionId": "nope", "mode": "acp"})),
        ("models/list", json!({"agentAlias": "default"})),
        (
            "file/upload/chunk",
            json!({"uploadId": "u", "offset": 0, "dataB64": "aGk="}),
        ),
        ("file/upload/commit", json!({"uploadId": "u"})),
        (
            "file/upload/begin",
            json!({"sessionId": "nope", "filename": "a.txt", "sizeBytes": 2}),
        ),
        (
            "file/attach",
            json!({"sessionId": "nope", "files": [{"dataB64": "aGk=", "filename": "a"}]}),
        ),
    ];
    let spellings = proptest::collection::vec(
        prop_oneof![
            Just(Spelling::Camel),
            Just(Spelling::Snake),
            Just(Spelling::Both)
        ],
        1..6,
    );
    let case = (0..calls.len(), spellings);
    let client = std::cell::RefCell::new(client);
    let mut runner = TestRunner::new(cases(200));
    runner
        .run(&case, |(which, spellings)| {
            let (method, params) = &calls[which];
            let mut client = client.borrow_mut();
            rt.block_on(async {
                let canonical = client.call(method, params.clone()).await;
                let respelled = respell(params, &spellings);
                let answer = client.call(method, respelled.clone()).await;
                prop_assert_eq!(
                    stable(&answer),
                    stable(&canonical),
                    "{} {} answered unlike its camelCase twin",
                    method,
                    respelled
                );
                Ok::<(), TestCaseError>(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
