//! The -32602 answers for a word outside a closed vocabulary in params: an unknown
//! `autonomy` (`session/configure`) or `decision` (`session/approve`) is refused in the
//! daemon's own sentence, exactly as before params were typed (issue 26), while every
//! other decoding error keeps serde's text behind `invalid params: `.

use crate::common;

use common::{TestDaemon, session_config};
use serde_json::{Value, json};

fn echo_daemon() -> TestDaemon {
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config("http://127.0.0.1:9", ""),
        )
        .unwrap();
    })
}

/// The error object, whole: code, message and no `data`.
fn refused(message: &str) -> Value {
    json!({"code": -32602, "message": message})
}

#[test]
fn an_unknown_autonomy_is_refused_in_the_daemons_words() {
    let daemon = echo_daemon();
    let mut c = daemon.client();
    let sid = c.result("session/new", json!({"agentAlias": "echo"}))["sessionId"].clone();
    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "wild"}),
    );
    assert_eq!(
        e,
        refused(r#"unknown autonomy "wild": expected supervised, full, read_only or plan"#)
    );
    // Either spelling of the session key, a session that does not exist, a word that needs
    // escaping: the autonomy is judged first, and quoted as Rust's `{:?}` quotes it.
    let e = c.error(
        "session/configure",
        json!({"session_id": "nobody", "autonomy": "Wi\"ld\n"}),
    );
    assert_eq!(
        e,
        refused(r#"unknown autonomy "Wi\"ld\n": expected supervised, full, read_only or plan"#)
    );
    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "autonomy": ""}),
    );
    assert_eq!(
        e,
        refused(r#"unknown autonomy "": expected supervised, full, read_only or plan"#)
    );
    // A known one still works.
    let ok = c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "read_only"}),
    );
    assert_eq!(ok["autonomy"], "read_only", "{ok}");
}

#[test]
fn an_unknown_decision_is_refused_in_the_daemons_words() {
    let daemon = echo_daemon();
    let mut c = daemon.client();
    let sid = c.result("session/new", json!({"agentAlias": "echo"}))["sessionId"].clone();
    let e = c.error(
        "session/approve",
        json!({"sessionId": sid, "requestId": "x", "decision": "maybe"}),
    );
    assert_eq!(
        e,
        refused(
            r#"decision "maybe": expected allow_once, allow_always, reject, reject_with_edit, raise or stop"#
        )
    );
    let e = c.error(
        "session/approve",
        json!({"session_id": sid, "request_id": "x", "decision": "ALLOW_ONCE",
               "replacement": {"a": 1}}),
    );
    assert_eq!(
        e,
        refused(
            r#"decision "ALLOW_ONCE": expected allow_once, allow_always, reject, reject_with_edit, raise or stop"#
        )
    );
}

#[test]
fn other_decoding_errors_keep_serdes_text() {
    let daemon = echo_daemon();
    let mut c = daemon.client();
    let sid = c.result("session/new", json!({"agentAlias": "echo"}))["sessionId"].clone();
    let message = |e: &Value| e["message"].as_str().unwrap_or_default().to_string();
    // Another closed vocabulary in the same params: serde's words, prefixed and placed.
    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "mode": "nope"}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        message(&e).starts_with(
            "invalid params: unknown variant `nope`, expected `acp` or `chat` at line 1 column "
        ),
        "{e}"
    );
    // The right word of the wrong type is not the daemon's sentence either.
    let e = c.error(
        "session/configure",
        json!({"sessionId": sid, "autonomy": 5}),
    );
    assert!(message(&e).starts_with("invalid params: "), "{e}");
    assert!(!message(&e).contains("expected supervised"), "{e}");
    let e = c.error(
        "session/approve",
        json!({"sessionId": sid, "requestId": "x", "decision": ["reject"]}),
    );
    assert!(message(&e).starts_with("invalid params: "), "{e}");
    let e = c.error(
        "session/approve",
        json!({"sessionId": sid, "decision": "reject"}),
    );
    assert!(
        message(&e).starts_with("invalid params: missing field `requestId`"),
        "{e}"
    );
}
