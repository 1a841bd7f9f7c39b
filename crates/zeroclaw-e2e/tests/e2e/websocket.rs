//! The WebSocket transport (SPEC §10) against the real daemon: TLS with a certificate made
//! at test time, pairing tokens, local-only methods, framing rules, origin checks.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{BIN, TestDaemon, code, daemon_command};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

const USERS: &str = r#"
[providers.echo]
kind = "echo"
[agents.default]
provider = "echo"
[permission_profiles.remote]
grants = { sessions = ["create", "read", "update", "execute"], config = ["read"], files = ["create"] }
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["remote"]
"#;

/// A daemon with `[wss]` on an OS-chosen loopback port, TLS when `tls`.
fn wss_daemon(tls: bool) -> (TestDaemon, u16, Option<rcgen::CertifiedKey<rcgen::KeyPair>>) {
    let cert =
        tls.then(|| rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap());
    let cert_files = cert
        .as_ref()
        .map(|c| (c.cert.pem(), c.signing_key.serialize_pem()));
    let daemon = TestDaemon::start_with(&[], |dir| {
        let mut wss = String::from(
            "[wss]\nenabled = true\nbind = \"127.0.0.1\"\nport = 0\nallowed_origins = [\"https://ok.example\"]\n",
        );
        if let Some((cert_pem, key_pem)) = &cert_files {
            std::fs::write(dir.join("cert.pem"), cert_pem).unwrap();
            std::fs::write(dir.join("key.pem"), key_pem).unwrap();
            wss.push_str(&format!(
                "cert_path = \"{}\"\nkey_path = \"{}\"\n",
                dir.join("cert.pem").display(),
                dir.join("key.pem").display()
            ));
        }
        std::fs::write(dir.join("config.toml"), format!("{USERS}{wss}")).unwrap();
    });
    let port = listening_port(&daemon);
    (daemon, port, cert)
}

/// The port the daemon logged for its WebSocket listener.
fn listening_port(daemon: &TestDaemon) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = daemon.log();
        if let Some(rest) = log.split("websocket listening on ").nth(1) {
            let addr = rest.split_whitespace().next().unwrap_or("");
            let port = addr.trim_end_matches('/').rsplit(':').next().unwrap_or("");
            if let Ok(port) = port.parse() {
                return port;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no websocket listener in the log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pair(config_dir: &Path, user: &str) -> String {
    let out = Command::new(BIN)
        .args([
            "--config-dir",
            config_dir.to_str().unwrap(),
            "pair",
            "--user",
            user,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_string()
}

trait Duplex: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Duplex for T {}
type Ws = tokio_tungstenite::WebSocketStream<Box<dyn Duplex>>;

async fn open(
    port: u16,
    cert: Option<&rcgen::CertifiedKey<rcgen::KeyPair>>,
    origin: Option<&str>,
) -> Result<Ws, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let scheme = if cert.is_some() { "wss" } else { "ws" };
    let stream: Box<dyn Duplex> = match cert {
        Some(cert) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(cert.cert.der().clone()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            Box::new(connector.connect(name, tcp).await.unwrap())
        }
        None => Box::new(tcp),
    };
    let mut request = format!("{scheme}://localhost:{port}/")
        .into_client_request()
        .unwrap();
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert("Origin", origin.parse().unwrap());
    }
    match tokio_tungstenite::client_async(request, stream).await {
        Ok((ws, _)) => Ok(ws),
        Err(e) => Err(e.to_string()),
    }
}

async fn send(ws: &mut Ws, value: Value) {
    ws.send(Message::Text(value.to_string().into()))
        .await
        .unwrap();
}

async fn recv(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a message in time");
        match msg {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

async fn call(ws: &mut Ws, id: u64, method: &str, params: Value) -> Value {
    send(
        ws,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await;
    loop {
        let msg = recv(ws).await;
        if msg["id"] == id {
            return msg;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_handshake_needs_a_paired_token() {
    let (daemon, port, cert) = wss_daemon(true);
    let cert = cert.as_ref();

    let mut ws = open(port, cert, None).await.unwrap();
    let r = call(&mut ws, 1, "initialize", json!({"protocolVersion": 1})).await;
    assert_eq!(code(&r["error"]), -32010, "{r}");
    let r = call(
        &mut ws,
        2,
        "initialize",
        json!({"protocolVersion": 1, "authToken": "zct_unknown"}),
    )
    .await;
    assert_eq!(code(&r["error"]), -32010);

    let token = pair(daemon.config_dir(), "alice");
    let stored = std::fs::read_to_string(daemon.config_dir().join("data/tokens.json")).unwrap();
    assert!(!stored.contains(&token), "only the hash is stored");
    let r = call(
        &mut ws,
        3,
        "initialize",
        json!({"protocolVersion": 1, "auth_token": token}),
    )
    .await;
    let init = &r["result"];
    assert_eq!(
        init["principal"],
        json!({"id": "user:alice", "admin": false}),
        "{r}"
    );
    let caps: Vec<&str> = init["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        caps.contains(&"file/attach") && !caps.iter().any(|c| c.starts_with("file/upload/")),
        "{caps:?}"
    );

    // same dispatcher: a grant-checked call works, a missing grant is refused
    let r = call(&mut ws, 4, "config/get", json!({"prop": "wss.port"})).await;
    assert_eq!(r["result"]["value"], 0);
    assert_eq!(
        code(&call(&mut ws, 5, "status", json!({})).await["error"]),
        -32012
    );
    // local-only methods are refused over WebSocket
    let r = call(
        &mut ws,
        6,
        "file/upload/begin",
        json!({"session_id": "s", "size_bytes": 1}),
    )
    .await;
    assert_eq!(code(&r["error"]), -32012);

    // audit label
    assert!(daemon.log().contains("ws:127.0.0.1:"), "{}", daemon.log());

    // revocation takes effect on the next call, without reconnecting
    let out = Command::new(BIN)
        .args([
            "--config-dir",
            daemon.config_dir().to_str().unwrap(),
            "unpair",
            "--user",
            "alice",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r = call(&mut ws, 7, "config/get", json!({})).await;
    assert_eq!(code(&r["error"]), -32010, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_oversize_messages() {
    let (daemon, port, _) = wss_daemon(false);
    let token = pair(daemon.config_dir(), "alice");
    let mut ws = open(port, None, None).await.unwrap();
    let r = call(&mut ws, 1, "initialize", json!({"authToken": token})).await;
    assert!(r.get("result").is_some(), "{r}");

    // ping → pong with the same payload
    ws.send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    let pong = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Pong(payload))) => return payload.to_vec(),
                Some(Ok(_)) => continue,
                other => panic!("no pong: {other:?}"),
            }
        }
    })
    .await
    .expect("pong in time");
    assert_eq!(pong, b"are you there");

    ws.send(Message::Binary(b"{}".to_vec().into()))
        .await
        .unwrap();
    let r = recv(&mut ws).await;
    assert_eq!((r["id"].clone(), code(&r["error"])), (Value::Null, -32600));
    // still open
    assert!(
        call(&mut ws, 2, "config/get", json!({"prop": "wss.enabled"}))
            .await
            .get("result")
            .is_some()
    );
    // not JSON → -32700
    ws.send(Message::Text("{nope".into())).await.unwrap();
    assert_eq!(code(&recv(&mut ws).await["error"]), -32700);

    // over 8 MiB: closed with 1009
    let big = "x".repeat(8 * 1024 * 1024 + 1);
    let _ = ws.send(Message::Text(big.into())).await;
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("closed in time");
    assert_eq!(closed, Some(CloseCode::Size));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_origins_are_refused_unless_allowed() {
    let (_daemon, port, _) = wss_daemon(false);
    let err = open(port, None, Some("https://evil.example"))
        .await
        .err()
        .expect("refused");
    assert!(err.contains("403"), "{err}");
    assert!(open(port, None, Some("https://ok.example")).await.is_ok());
    assert!(
        open(port, None, None).await.is_ok(),
        "non-browser clients send no Origin"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_token_connection_limit() {
    let (daemon, port, _) = wss_daemon(false);
    let mut c = daemon.client();
    c.result(
        "config/set",
        json!({"prop": "limits.connections_per_principal", "value": 2}),
    );
    let token = pair(daemon.config_dir(), "alice");
    let mut held = Vec::new();
    for i in 0..2 {
        let mut ws = open(port, None, None).await.unwrap();
        let r = call(&mut ws, 1, "initialize", json!({"authToken": token})).await;
        assert!(r.get("result").is_some(), "connection {i}: {r}");
        held.push(ws);
    }
    let mut third = open(port, None, None).await.unwrap();
    let r = call(&mut third, 1, "initialize", json!({"authToken": token})).await;
    assert_eq!(code(&r["error"]), -32013, "{r}");
}

#[test]
fn a_non_loopback_listener_without_tls_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[wss]\nenabled = true\nbind = \"0.0.0.0\"\nport = 0\n",
    )
    .unwrap();
    let out = daemon_command(dir.path(), &[])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TLS") || err.contains("tls"), "{err}");
}

/// A daemon whose `default` agent talks to `fake`, with `[wss]` on and user alice paired.
fn wss_turn_daemon(base_url: &str, extra_args: &[&str]) -> (TestDaemon, u16, String) {
    let config = format!(
        r#"[providers.fake]
kind = "openai"
base_url = "{base_url}"
model = "m"
[agents.default]
provider = "fake"
tools = ["bash", "read_file", "write_file", "ask_user"]
autonomy = "supervised"
[permission_profiles.remote]
grants = {{ sessions = ["create", "read", "update", "execute"], files = ["create"] }}
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["remote"]
[wss]
enabled = true
port = 0
"#
    );
    let daemon = TestDaemon::start_with(extra_args, |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap()
    });
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    (daemon, port, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_turn_with_approval_and_ask_user_over_websocket() {
    use zeroclaw_testkit::{FakeOpenAi, Scripted};
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(Scripted::tool_call(
        "tc_1",
        "write_file",
        json!({"path": "a.txt", "content": "hi"}),
    ));
    fake.push(Scripted::tool_call(
        "tc_2",
        "ask_user",
        json!({"question": "favourite colour?"}),
    ));
    fake.push(Scripted::chunks(["all ", "done"], Duration::from_millis(5)));
    let (daemon, port, token) = wss_turn_daemon(&fake.base_url(), &[]);

    let mut ws = open(port, None, None).await.unwrap();
    let r = call(
        &mut ws,
        1,
        "initialize",
        json!({"authToken": token, "clientCapabilities": {"elicitation": {}}}),
    )
    .await;
    assert!(r.get("result").is_some(), "{r}");
    let s = call(&mut ws, 2, "session/new", json!({"agentAlias": "default"})).await;
    let sid = s["result"]["sessionId"].as_str().unwrap().to_string();
    let workspace = std::path::PathBuf::from(s["result"]["workspaceDir"].as_str().unwrap());

    // path-mode attachments are refused over WebSocket
    let e = call(
        &mut ws,
        3,
        "file/attach",
        json!({"sessionId": sid, "files": [{"path": "/etc/hostname"}]}),
    )
    .await;
    assert_eq!(code(&e["error"]), -32602, "{e}");

    send(&mut ws, json!({"jsonrpc": "2.0", "id": 10, "method": "session/prompt", "params": {"sessionId": sid, "prompt": "go"}})).await;
    let mut kinds = Vec::new();
    let mut text = String::new();
    let result = loop {
        let msg = recv(&mut ws).await;
        if msg["id"] == 10 {
            break msg;
        }
        match msg["method"].as_str() {
            Some("session/update") => {
                let p = &msg["params"];
                let kind = p["type"].as_str().unwrap().to_string();
                if kind == "approval_request" {
                    let a = call(&mut ws, 11, "session/approve", json!({"sessionId": sid, "requestId": p["requestId"], "decision": "allow_once"})).await;
                    assert_eq!(a["result"]["acknowledged"], true, "{a}");
                }
                if kind == "agent_message_chunk" {
                    text.push_str(p["text"].as_str().unwrap());
                }
                kinds.push(kind);
            }
            Some("elicitation/create") => {
                assert_eq!(msg["params"]["message"], "favourite colour?");
                assert_eq!(msg["params"]["sessionId"], json!(sid));
                send(&mut ws, json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"action": "accept", "content": {"answer": "teal"}}})).await;
                kinds.push("elicitation".into());
            }
            other => panic!("unexpected {other:?}: {msg}"),
        }
    };
    assert_eq!(result["result"]["outcome"], "completed", "{result}");
    assert_eq!(text, "all done");
    assert_eq!(
        kinds,
        [
            "user_message",
            "usage",
            "tool_call",
            "approval_request",
            "approval_resolved",
            "tool_result",
            "usage",
            "tool_call",
            "elicitation",
            // The question settled (SPEC §22: every face learns it).
            "ask_user_resolved",
            "tool_result",
            "agent_message_chunk",
            "agent_message_chunk",
            "usage",
            "turn_complete"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
        "hi"
    );
    let last = fake.requests().last().cloned().unwrap();
    assert!(
        last.to_string().contains("teal"),
        "the answer reached the model: {last}"
    );
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_mode_counts_websocket_clients() {
    let mut daemon = TestDaemon::start_unprobed_with(&["--ephemeral"], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            "[wss]\nenabled = true\nport = 0\n[users.alice]\n",
        )
        .unwrap();
    });
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    let mut ws = open(port, None, None).await.unwrap();
    assert!(
        call(&mut ws, 1, "initialize", json!({"authToken": token}))
            .await
            .get("result")
            .is_some()
    );
    assert!(daemon.is_running(), "a WebSocket client is connected");
    ws.close(None).await.unwrap();
    drop(ws);
    // Ephemeral mode never stops before a first client: exiting at all shows the WebSocket
    // client counted; the grace itself is timed in zeroclaw-daemon/tests/timing.rs.
    let left = Instant::now();
    let status = daemon
        .wait_exit(Duration::from_secs(10))
        .expect("exits after the last client");
    assert!(status.success());
    assert!(
        left.elapsed() >= Duration::from_millis(800),
        "exited within the grace"
    );
}
