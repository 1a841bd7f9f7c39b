//! The one request path (issue 45): a request takes the same way through the daemon
//! whichever front it came through — the local socket, the WebSocket and `POST /rpc` —
//! so one call gets the same answer on all three: the method lookup (-32601), the params
//! decoding (-32602), the panic guard (-32603, and the connection goes on), and the
//! after-answer step (a subscription's replay follows its answer on the wire).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::ws::{WSS_SECTION, WsClient, listening_port, pair};
use common::{TestDaemon, code};
use serde_json::{Value, json};

const USERS: &str = r#"
[providers.echo]
kind = "echo"
[agents.default]
provider = "echo"
[permission_profiles.remote]
grants = { sessions = ["create", "read", "update", "execute"], system = ["read"] }
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["remote"]
"#;

/// One `POST /rpc` on a fresh connection: the HTTP status and the body as JSON (`Null`
/// for an empty body).
fn post(port: u16, token: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write");
    s.write_all(body.as_bytes()).expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let json = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    };
    (status, json)
}

/// The calls compared across fronts, by the error each must get.
fn calls() -> Vec<(&'static str, Value, i64)> {
    vec![
        ("no/such", json!({}), -32601),
        (
            "session/prompt",
            json!({"prompt": "no session named"}),
            -32602,
        ),
        // The handler of this one panics (ZEROCLAW_TEST_PANIC_METHOD).
        ("session/list", json!({}), -32603),
    ]
}

#[test]
fn one_call_gets_the_same_answer_on_the_socket_the_websocket_and_post() {
    let daemon = TestDaemon::start_env(
        &[],
        &[("ZEROCLAW_TEST_PANIC_METHOD", "session/list")],
        |dir| {
            std::fs::write(dir.join("config.toml"), format!("{USERS}{WSS_SECTION}")).unwrap();
        },
    );
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    let mut local = daemon.client();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut ws = rt.block_on(WsClient::open(port, &token));

    for (method, params, expected) in calls() {
        let over_socket = local.call(method, params.clone());
        let over_ws = rt.block_on(ws.call(method, params.clone()));
        let (status, over_post) = post(
            port,
            &token,
            &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        );
        assert_eq!(status, 200, "{method}: {over_post}");
        let error = &over_socket["error"];
        assert_eq!(code(error), expected, "{method}: {over_socket}");
        assert_eq!(&over_ws["error"], error, "{method} over the WebSocket");
        assert_eq!(&over_post["error"], error, "{method} over POST /rpc");
    }
    assert!(
        daemon.log().contains("handler panicked"),
        "{}",
        daemon.log()
    );
    // After the panics, every front still answers (the positive control for "goes on").
    assert!(local.call("status", json!({})).get("result").is_some());
    assert!(
        rt.block_on(ws.call("status", json!({})))
            .get("result")
            .is_some()
    );
    let (_, v) = post(
        port,
        &token,
        &json!({"jsonrpc": "2.0", "id": 8, "method": "status"}),
    );
    assert!(v.get("result").is_some(), "{v}");
}

#[test]
fn a_replay_follows_the_subscribe_answer_over_the_websocket() {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), format!("{USERS}{WSS_SECTION}")).unwrap();
    });
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut first = WsClient::open(port, &token).await;
        let new = first
            .call("session/new", json!({"agentAlias": "default"}))
            .await;
        let sid = new["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{new}"))
            .to_string();
        let turn = first
            .call("session/prompt", json!({"sessionId": sid, "prompt": "hi"}))
            .await;
        let turn_id = turn["result"]["turnId"].clone();
        assert!(turn_id.is_string(), "{turn}");
        // A second connection subscribes from the start: the answer, then the replay.
        let mut ws = common::ws::connect(port).await;
        let frames = raw_calls(
            &mut ws,
            &[
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": 1, "authToken": token}}),
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/subscribe",
                       "params": {"sessionId": sid, "turnId": turn_id, "afterEventSeq": 0}}),
            ],
            |v| v["method"] == "session/update" && v["params"]["type"] == "turn_complete",
        )
        .await;
        let answer = frames
            .iter()
            .position(|v| v["id"] == 2)
            .unwrap_or_else(|| panic!("no subscribe answer: {frames:?}"));
        let first_update = frames
            .iter()
            .position(|v| v["method"] == "session/update")
            .unwrap_or_else(|| panic!("no replay: {frames:?}"));
        assert!(
            answer < first_update,
            "the replay came before the subscribe answer: {frames:?}"
        );
    });
}

/// Sends `lines` and collects every text frame until one satisfies `last`.
async fn raw_calls(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    lines: &[Value],
    last: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    for line in lines {
        ws.send(Message::Text(line.to_string().into()))
            .await
            .expect("send");
    }
    let mut frames = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .unwrap_or_else(|_| panic!("no end in time: {frames:?}"));
        match msg {
            Some(Ok(Message::Text(text))) => {
                let v: Value = serde_json::from_str(&text).expect("json");
                let done = last(&v);
                frames.push(v);
                if done {
                    return frames;
                }
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text message, got {other:?} after {frames:?}"),
        }
    }
}
