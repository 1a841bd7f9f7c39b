//! The wire protocol against the real daemon: every row of the envelope table (SPEC §3.1),
//! the handshake gate (§4), framing limits (§3.3, §13).

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::{TestDaemon, code};
use serde_json::{Value, json};

#[test]
fn envelope_rows() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();

    // not JSON → -32700, id null
    c.send("{oops");
    let r = c.recv();
    assert_eq!((r["id"].clone(), code(&r["error"])), (Value::Null, -32700));

    // invalid UTF-8 → -32700
    c.stream
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\",\"id\":1}\n")
        .unwrap();
    let r = c.recv();
    assert_eq!(code(&r["error"]), -32700);

    // invalid request-shaped with a valid id → -32600 echoing the id
    c.send(r#"{"jsonrpc":"1.0","method":"status","id":"abc"}"#);
    let r = c.recv();
    assert_eq!((r["id"].clone(), code(&r["error"])), (json!("abc"), -32600));
    c.send(r#"{"jsonrpc":"2.0","method":"status","params":null,"id":9}"#);
    let r = c.recv();
    assert_eq!((r["id"].clone(), code(&r["error"])), (json!(9), -32600));

    // invalid request-shaped with an invalid id → -32600, id null
    c.send(r#"{"jsonrpc":"2.0","method":"status","id":{"x":1}}"#);
    let r = c.recv();
    assert_eq!((r["id"].clone(), code(&r["error"])), (Value::Null, -32600));

    // invalid request without any id is still answered
    c.send(r#"{"jsonrpc":"2.0","method":"status","params":7}"#);
    let r = c.recv();
    assert_eq!((r["id"].clone(), code(&r["error"])), (Value::Null, -32600));

    // ambiguous frames → -32600, id null
    for frame in [
        "[]",
        r#"[{"jsonrpc":"2.0","method":"status","id":1}]"#,
        "17",
        r#"{"jsonrpc":"2.0","method":1,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"status","result":1,"id":1}"#,
        r#"{"jsonrpc":"2.0","id":5}"#,
    ] {
        c.send(frame);
        let r = c.recv();
        assert_eq!(
            (r["id"].clone(), code(&r["error"])),
            (Value::Null, -32600),
            "{frame}"
        );
    }

    // invalid responses, valid responses to unknown ids, and notifications: no reply.
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"id":1,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"bad","message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":"zc-out-0","result":null}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
        r#"{"jsonrpc":"2.0","method":"status"}"#,
        r#"{"jsonrpc":"2.0","method":"no/such/method","params":{}}"#,
    ] {
        c.send(frame);
    }
    // The next line the daemon writes is the answer to this request.
    c.send(r#"{"jsonrpc":"2.0","method":"status","id":"after"}"#);
    let r = c.recv();
    assert_eq!(r["id"], json!("after"), "unexpected reply {r}");
    assert!(r["result"]["serverPid"].is_number());

    // blank lines and \r\n are fine
    c.send("\n   \n\r\n");
    c.send("{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":null}\r");
    let r = c.recv();
    assert_eq!(r["id"], Value::Null);
    assert!(r.get("result").is_some(), "{r}");

    // unknown method after initialize
    assert_eq!(code(&c.error("no/such", json!({}))), -32601);
}

#[test]
fn handshake_gate() {
    let daemon = TestDaemon::start();
    let mut c = daemon.connect();
    let e = c.error("status", json!({}));
    assert_eq!(code(&e), -32010);
    assert_eq!(
        e["message"],
        "not initialized: first call must be initialize"
    );
    assert_eq!(code(&c.error("nope", json!({}))), -32601);
    c.send(r#"{"jsonrpc":"2.0","method":"status"}"#); // notification: dropped

    let e = c.error("initialize", json!({"protocolVersion": 2}));
    assert_eq!(code(&e), -32011);
    assert_eq!(
        e["message"],
        "protocol version mismatch: server supports 1, client requested 2"
    );
    assert_eq!(e["data"], json!({"supported": [1], "requested": 2}));
    // still uninitialized
    assert_eq!(code(&c.error("status", json!({}))), -32010);

    let init = c.result(
        "initialize",
        json!({"protocol_version": 1, "clientInfo": {"name": "t", "version": "0"}, "clientCapabilities": {"elicitation": {}}}),
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["protocol_version"], 1);
    assert_eq!(init["serverVersion"], version);
    assert_eq!(init["server_version"], version);
    assert_eq!(init["serverPid"], daemon.child.as_ref().unwrap().id());
    assert_eq!(init["principal"], json!({"id": "operator", "admin": true}));
    assert_eq!(
        init["limits"],
        json!({"maxFrameBytes": 8388608, "maxUploadBytes": 10485760, "uploadChunkBytes": 1048576})
    );
    let caps: Vec<&str> = init["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        caps.contains(&"initialize")
            && caps.contains(&"status")
            && caps.contains(&"daemon/shutdown"),
        "{caps:?}"
    );
    assert!(!caps.contains(&"session/update") && !caps.contains(&"elicitation/create"));

    let e = c.error("initialize", json!({}));
    assert_eq!(
        (code(&e), e["message"].as_str()),
        (-32600, Some("already initialized"))
    );

    // params omitted entirely is fine for initialize
    let mut c2 = daemon.connect();
    c2.send(r#"{"jsonrpc":"2.0","method":"initialize","id":1}"#);
    assert!(c2.recv().get("result").is_some());
}

#[test]
fn status_reports_the_daemon() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    // Uninitialized connections count too; one answered call proves it was admitted.
    let mut other = daemon.connect();
    assert_eq!(code(&other.error("status", json!({}))), -32010);
    // The start-up probe's connection may not have been noticed as gone yet: wait (with a
    // deadline) until only these two count.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let s = loop {
        let s = c.result("status", json!({}));
        if s["connections"] == 2 || std::time::Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(s["endpoint"], daemon.socket.display().to_string());
    assert_eq!(s["configDir"], daemon.config_dir().display().to_string());
    assert_eq!(
        s["dataDir"],
        daemon.config_dir().join("data").display().to_string()
    );
    assert_eq!(s["connections"], 2);
    assert_eq!(s["protocolVersion"], 1);
    assert!(s["uptimeSecs"].is_u64());
    assert_eq!(s["activeSessions"], 0);
    assert_eq!(s["sessionIds"], json!([]));
    assert_eq!(
        s["sessionCounts"],
        json!({"live": 0, "running": 0, "waiting": 0, "idle": 0})
    );
    assert_eq!(s["gateway"], Value::Null, "no gateway runs");
    // The members come in the order they always had (StatusResult's).
    let members: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        members,
        [
            "protocolVersion",
            "serverVersion",
            "serverPid",
            "uptimeSecs",
            "endpoint",
            "configDir",
            "dataDir",
            "connections",
            "activeSessions",
            "sessionIds",
            "sessionCounts",
            "gateway",
        ]
    );
    // audit line for each accepted connection
    let log = daemon.log();
    let uid = unsafe { libc::geteuid() };
    assert!(
        log.contains(&format!(",uid={uid}")) && log.contains("unix:pid="),
        "{log}"
    );
}

#[test]
fn oversize_frames_are_refused_and_the_connection_survives_until_the_third() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    // exactly 8 MiB including the newline is served
    let filler = 8 * 1024 * 1024
        - 1
        - r#"{"jsonrpc":"2.0","method":"status","id":1,"params":{"pad":""}}"#.len();
    let exact = format!(
        r#"{{"jsonrpc":"2.0","method":"status","id":1,"params":{{"pad":"{}"}}}}"#,
        "x".repeat(filler)
    );
    assert_eq!(exact.len() + 1, 8 * 1024 * 1024);
    c.send(&exact);
    let r = c.recv();
    assert_eq!(r["id"], 1, "{r}");
    assert!(r.get("result").is_some());

    let big = format!("{}x", exact);
    for n in 1..=3 {
        if n < 3 {
            c.send(&big);
        } else {
            // The third is refused by closing as soon as it is over the limit, which may
            // be before the client has written all of it: a failed write is that close
            // (checked below), and its error line may then be lost with the connection.
            let wrote = c
                .stream
                .write_all(big.as_bytes())
                .and_then(|()| c.stream.write_all(b"\n"));
            if wrote.is_err() {
                break;
            }
        }
        let r = c.recv();
        assert_eq!(r["id"], Value::Null);
        assert_eq!(code(&r["error"]), -32600);
        assert_eq!(r["error"]["message"], "frame exceeds 8388608 bytes");
        if n < 3 {
            // still usable
            assert!(c.call("status", json!({})).get("result").is_some());
        }
    }
    assert!(
        c.closed_within(Duration::from_secs(5)),
        "third oversize frame closes"
    );
}

#[test]
fn a_request_in_one_byte_writes() {
    let daemon = TestDaemon::start();
    let mut c = daemon.connect();
    for b in "{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"id\":1}\n{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":2}\n".bytes() {
        c.stream.write_all(&[b]).unwrap();
        c.stream.flush().unwrap();
    }
    assert!(c.recv().get("result").is_some());
    let r = c.recv();
    assert_eq!(r["id"], 2);
    assert!(r["result"]["serverPid"].is_number());
}

/// Answers leave before the daemon waits for input: a request followed in the same write
/// by the start of another is answered at once, not once the second frame is complete.
#[test]
fn an_answer_is_not_held_behind_the_start_of_the_next_frame() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    c.stream
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":2}\n{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":3",
        )
        .unwrap();
    // Within the client's read timeout, with the second frame still unfinished.
    assert_eq!(c.recv()["id"], 2);
    // The rest of the second frame: its answer follows.
    c.stream.write_all(b"}\n").unwrap();
    let r = c.recv();
    assert_eq!(r["id"], 3);
    assert!(r["result"]["serverPid"].is_number());
}

#[test]
fn pipelined_requests_are_all_answered() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let mut batch = String::new();
    for i in 0..500 {
        batch.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"id\":{i}}}\n"
        ));
    }
    c.stream.write_all(batch.as_bytes()).unwrap();
    let mut seen = vec![false; 500];
    for _ in 0..500 {
        let r = c.recv();
        seen[r["id"].as_u64().unwrap() as usize] = true;
    }
    assert!(seen.iter().all(|s| *s));
}
