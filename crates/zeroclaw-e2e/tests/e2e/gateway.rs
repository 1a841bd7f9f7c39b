//! The gateway (SPEC §20) against the real binary, over raw HTTP on a TcpStream: the
//! dashboard's embedded files, `/healthz`, security headers on every response, `POST /rpc`
//! with a bearer, `gateway/start`, `dashboard/login` codes, failed logins rate-limited per
//! address, Origin checks on the upgrade, slow and busy clients, and `zeroclaw dashboard`.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::ws::{WSS_SECTION, listening_port, pair};
use common::{BIN, TestDaemon, code};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

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

const CSP: &str = "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// A daemon with the gateway started by `[wss]` on an OS-chosen port, and user alice.
fn gateway_daemon(extra: &str) -> (TestDaemon, u16) {
    let daemon = TestDaemon::start_with(&[], |dir| {
        let wss = WSS_SECTION.replace("[wss]\n", &format!("[wss]\n{extra}"));
        std::fs::write(dir.join("config.toml"), format!("{USERS}{wss}")).unwrap();
    });
    let port = listening_port(&daemon);
    (daemon, port)
}

/// A daemon whose gateway is off (`wss.port = port`), started with `env`.
fn quiet_daemon(port: u16, env: &[(&str, &str)]) -> TestDaemon {
    TestDaemon::start_env(&[], env, |dir| {
        let config = format!("{USERS}[wss]\nport = {port}\n");
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

// ---- raw HTTP ------------------------------------------------------------------------

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The three security headers, exactly.
    fn assert_secure(&self) {
        assert_eq!(
            self.header("content-security-policy"),
            Some(CSP),
            "{self:?}"
        );
        assert_eq!(self.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(self.header("referrer-policy"), Some("no-referrer"));
    }
}

fn tcp(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

/// Reads one response (head, then `Content-Length` bytes of body; none for a 101).
fn read_reply(s: &mut TcpStream) -> Reply {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).expect("a response");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let len = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; if status == 101 { 0 } else { len }];
    s.read_exact(&mut body).unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

/// One request on a fresh connection.
fn request(port: u16, raw: &str) -> Reply {
    let mut s = tcp(port);
    s.write_all(raw.as_bytes()).unwrap();
    read_reply(&mut s)
}

fn get(port: u16, path: &str) -> Reply {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    )
}

fn post_raw(port: u16, token: Option<&str>, body: &str) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn post(port: u16, token: Option<&str>, body: Value) -> Reply {
    request(port, &post_raw(port, token, &body.to_string()))
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn upgrade_raw(port: u16, path: &str, origin: Option<&str>) -> String {
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{origin}\r\n"
    )
}

/// The port of a URL `http://127.0.0.1:PORT/…`.
fn port_of(url: &str) -> u16 {
    let rest = url.strip_prefix("http://127.0.0.1:").expect(url);
    rest.split('/').next().unwrap().parse().expect(url)
}

// ---- WebSocket -----------------------------------------------------------------------

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn ws_open(port: u16, origin: Option<&str>) -> Result<Ws, String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut req = format!("ws://127.0.0.1:{port}/rpc")
        .into_client_request()
        .unwrap();
    if let Some(origin) = origin {
        req.headers_mut().insert("Origin", origin.parse().unwrap());
    }
    match tokio_tungstenite::client_async(req, tcp).await {
        Ok((ws, _)) => Ok(ws),
        Err(e) => Err(e.to_string()),
    }
}

async fn ws_call(ws: &mut Ws, id: u64, method: &str, params: Value) -> Value {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    ws.send(Message::Text(msg.to_string().into()))
        .await
        .unwrap();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("an answer in time");
        match next {
            Some(Ok(Message::Text(text))) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                if v["id"] == id {
                    return v;
                }
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

/// `initialize` over a fresh WebSocket on `port` with `params` (auth members).
async fn ws_initialize(port: u16, auth: Value) -> Value {
    let origin = format!("http://127.0.0.1:{port}");
    let mut ws = ws_open(port, Some(&origin)).await.unwrap();
    let mut params = json!({"protocolVersion": 1});
    if let (Some(p), Some(a)) = (params.as_object_mut(), auth.as_object()) {
        p.extend(a.clone());
    }
    ws_call(&mut ws, 1, "initialize", params).await
}

/// A file under the dashboard's `assets/` to compare against what is served.
fn some_asset() -> Option<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zeroclaw-daemon/dashboard");
    let mut stack = vec![root.join("assets")];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".css") || name.ends_with(".js") {
                let rel = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                return Some((format!("/{rel}"), path));
            }
        }
    }
    None
}

// ---- tests ---------------------------------------------------------------------------

#[test]
fn static_files_healthz_and_headers_on_every_response() {
    let (daemon, port) = gateway_daemon("");
    let r = get(port, "/healthz");
    assert_eq!((r.status, r.text().trim()), (200, "ok"));
    r.assert_secure();

    let r = get(port, "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let index = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../zeroclaw-daemon/dashboard/index.html"),
    )
    .unwrap();
    assert_eq!(r.body, index, "the embedded index.html");
    r.assert_secure();

    let (path, file) = some_asset().expect("a .css or .js file under dashboard/assets");
    let r = get(port, &path);
    assert_eq!(r.status, 200, "{path}");
    let wanted = match path.ends_with(".css") {
        true => "text/css; charset=utf-8",
        false => "text/javascript; charset=utf-8",
    };
    assert_eq!(r.header("content-type"), Some(wanted));
    assert_eq!(r.body, std::fs::read(file).unwrap());
    r.assert_secure();

    // Not found, and no way out of the table.
    for path in [
        "/nope",
        "/assets/nope.js",
        "/assets/../Cargo.toml",
        "/assets/%2e%2e/Cargo.toml",
        "/assets/..%2fCargo.toml",
        "/assets/%2E%2E%2F%2E%2E%2FCargo.toml",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/assets/..\\..\\Cargo.toml",
        "/assets//etc/passwd",
        "/../../../../etc/passwd",
        "/build.rs",
    ] {
        let r = get(port, path);
        assert_eq!(r.status, 404, "{path}");
        assert!(!r.text().contains("[package]"), "{path}");
        r.assert_secure();
    }

    let r = request(
        port,
        &format!("DELETE / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(r.status, 405);
    r.assert_secure();
    let r = get(port, "/rpc");
    assert_eq!(r.status, 405);
    r.assert_secure();
    let r = post(port, None, rpc("status", json!({})));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    r.assert_secure();
    let r = request(port, "NOT HTTP\r\n\r\n");
    assert_eq!(r.status, 400);
    r.assert_secure();

    // The upgrade's 101, and a refused upgrade.
    let mut s = tcp(port);
    s.write_all(upgrade_raw(port, "/rpc", Some(&format!("http://127.0.0.1:{port}"))).as_bytes())
        .unwrap();
    let r = read_reply(&mut s);
    assert_eq!(r.status, 101);
    assert_eq!(
        r.header("sec-websocket-accept"),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    );
    r.assert_secure();
    let r = request(port, &upgrade_raw(port, "/other", None));
    assert_eq!(r.status, 404);
    r.assert_secure();
    drop(daemon);
}

#[test]
fn post_rpc_needs_a_bearer_and_answers_json_rpc() {
    let (daemon, port) = gateway_daemon("");
    let token = pair(daemon.config_dir(), "alice");

    let r = post(port, None, rpc("status", json!({})));
    assert_eq!(r.status, 401);
    let r = post(port, Some("zct_wrong"), rpc("status", json!({})));
    assert_eq!(r.status, 401);
    assert!(
        r.text().contains("unknown or revoked token"),
        "{}",
        r.text()
    );

    let r = post(port, Some(&token), rpc("status", json!({})));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["id"], 1);
    assert!(v["result"]["serverVersion"].is_string(), "{v}");
    r.assert_secure();

    // JSON-RPC errors are HTTP 200 with the error as the body.
    let v = post(port, Some(&token), rpc("no/such", json!({}))).json();
    assert_eq!(code(&v["error"]), -32601, "{v}");
    let r = request(port, &post_raw(port, Some(&token), "{not json"));
    assert_eq!(r.status, 200);
    assert_eq!(code(&r.json()["error"]), -32700);
    let v = post(port, Some(&token), rpc("gateway/start", json!({}))).json();
    assert_eq!(code(&v["error"]), -32012, "local only: {v}");
    let v = post(port, Some(&token), rpc("config/get", json!({}))).json();
    assert_eq!(code(&v["error"]), -32012, "alice lacks config:read: {v}");
    let v = post(port, Some(&token), rpc("initialize", json!({}))).json();
    assert_eq!(code(&v["error"]), -32600, "{v}");
    // A notification is run and not answered.
    let r = request(
        port,
        &post_raw(port, Some(&token), r#"{"jsonrpc":"2.0","method":"status"}"#),
    );
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    r.assert_secure();
}

#[test]
fn session_prompt_over_post_answers_when_the_turn_ends() {
    let (daemon, port) = gateway_daemon("");
    let token = pair(daemon.config_dir(), "alice");
    let v = post(
        port,
        Some(&token),
        rpc("session/new", json!({"agentAlias": "default"})),
    )
    .json();
    let sid = v["result"]["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let started = Instant::now();
    let r = post(
        port,
        Some(&token),
        rpc(
            "session/prompt",
            json!({"sessionId": sid, "prompt": "hello over http"}),
        ),
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["result"]["content"], "hello over http", "{v}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // The turn is over: its messages are stored.
    let v = post(
        port,
        Some(&token),
        rpc("session/messages", json!({"sessionId": sid})),
    )
    .json();
    let rows = v["result"]["messages"]
        .as_array()
        .expect("messages")
        .clone();
    assert!(
        rows.iter()
            .any(|m| m["content"] == "hello over http" && m["role"] == "assistant"),
        "{v}"
    );
}

#[test]
fn gateway_start_twice_answers_one_url_and_status_shows_it() {
    let daemon = quiet_daemon(0, &[]);
    let mut c = daemon.client();
    assert_eq!(c.result("status", json!({}))["gateway"], Value::Null);
    let url = c.result("gateway/start", json!({}))["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
        "{url}"
    );
    let again = c.result("gateway/start", json!({}))["url"].clone();
    assert_eq!(again, url);
    assert_eq!(
        c.result("status", json!({}))["gateway"],
        json!({"url": url})
    );
    let port = port_of(&url);
    assert_eq!(get(port, "/healthz").status, 200);
    // Nothing was written to the config.
    let config = std::fs::read_to_string(daemon.config_dir().join("config.toml")).unwrap();
    assert!(!config.contains("enabled"), "{config}");
    // `zeroclaw status` says so too.
    let out = Command::new(BIN)
        .args([
            "--config-dir",
            daemon.config_dir().to_str().unwrap(),
            "status",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("gateway") && text.contains(&url), "{text}");
}

#[test]
fn gateway_start_takes_a_free_port_when_the_configured_one_is_taken() {
    let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let busy = taken.local_addr().unwrap().port();
    let daemon = quiet_daemon(busy, &[]);
    let mut c = daemon.client();
    let url = c.result("gateway/start", json!({}))["url"]
        .as_str()
        .unwrap()
        .to_string();
    let port = port_of(&url);
    assert_ne!(port, busy);
    assert_eq!(get(port, "/healthz").status, 200);
    // When the configured port is free, it is the one used.
    let free = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let wanted = free.local_addr().unwrap().port();
    drop(free);
    let other = quiet_daemon(wanted, &[]);
    let url = other.client().result("gateway/start", json!({}))["url"].clone();
    assert_eq!(url, format!("http://127.0.0.1:{wanted}/"));
    // `[wss] enabled` started it already: gateway/start answers that one.
    let (started, port) = gateway_daemon("");
    let url = started.client().result("gateway/start", json!({}))["url"].clone();
    assert_eq!(url, format!("http://127.0.0.1:{port}/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_code_works_once() {
    let daemon = quiet_daemon(0, &[]);
    let mut c = daemon.client();
    let login = c.result("dashboard/login", json!({}));
    let (url, code_) = (
        login["url"].as_str().unwrap(),
        login["code"].as_str().unwrap(),
    );
    assert!(code_.len() >= 32, "at least 128 bits: {code_}");
    let port = port_of(url);
    assert_eq!(url, format!("http://127.0.0.1:{port}/#code={code_}"));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let left = login["expiresAt"].as_i64().unwrap() - now_ms;
    assert!((50_000..=61_000).contains(&left), "{left}");
    // dashboard/login started the gateway.
    assert_eq!(
        c.result("status", json!({}))["gateway"]["url"],
        format!("http://127.0.0.1:{port}/")
    );

    let init = ws_initialize(port, json!({"authCode": code_})).await;
    let token = init["result"]["authToken"]
        .as_str()
        .expect("a session token")
        .to_string();
    assert_eq!(
        init["result"]["principal"],
        json!({"id": "operator", "admin": true})
    );
    assert!(
        !init["result"]["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("dashboard/login"))
    );

    let again = ws_initialize(port, json!({"authCode": code_})).await;
    assert_eq!(code(&again["error"]), -32010, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{again}"
    );
    let unknown = ws_initialize(port, json!({"authCode": "zcl_0000"})).await;
    assert_eq!(code(&unknown["error"]), -32010, "{unknown}");

    // The session token works as authToken and as a bearer.
    let init = ws_initialize(port, json!({"authToken": token})).await;
    assert_eq!(init["result"]["principal"]["id"], "operator", "{init}");
    assert!(init["result"].get("authToken").is_none());
    let v = post(port, Some(&token), rpc("status", json!({}))).json();
    assert!(v["result"]["uptimeSecs"].is_u64(), "{v}");
    // Over the local socket an authCode means nothing.
    let e = daemon
        .connect()
        .error("initialize", json!({"authCode": "zcl_x"}));
    assert_eq!(code(&e), -32602, "{e}");
}

/// Eight connections present one code at the same moment: exactly one gets a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_code_raced_by_eight_connections_logs_in_once() {
    let daemon = quiet_daemon(0, &[]);
    let login = daemon.client().result("dashboard/login", json!({}));
    let code_ = login["code"].as_str().unwrap().to_string();
    let port = port_of(login["url"].as_str().unwrap());
    let tries: Vec<_> = (0..8)
        .map(|_| {
            let code_ = code_.clone();
            tokio::spawn(async move { ws_initialize(port, json!({"authCode": code_})).await })
        })
        .collect();
    let mut won = 0;
    for t in tries {
        let answer = t.await.unwrap();
        if answer["result"]["authToken"].is_string() {
            won += 1;
        } else {
            assert_eq!(code(&answer["error"]), -32010, "{answer}");
        }
    }
    assert_eq!(won, 1, "one code, one login");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_login_code_fails() {
    let daemon = quiet_daemon(0, &[("ZEROCLAW_TEST_LOGIN_CODE_TTL_MS", "300")]);
    let login = daemon.client().result("dashboard/login", json!({}));
    let port = port_of(login["url"].as_str().unwrap());
    let left = login["expiresAt"].as_i64().unwrap()
        - std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
    assert!(left <= 300, "{left}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let e = ws_initialize(port, json!({"authCode": login["code"]})).await;
    assert_eq!(code(&e["error"]), -32010, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("expired"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
async fn a_login_code_stands_for_its_callers_principal() {
    assert!(common::is_root(), "needs root to connect as another uid");
    let uid = common::test_uid();
    let daemon = TestDaemon::start_with(&[], |dir| {
        let config = format!(
            "{USERS}[wss]\nport = 0\n[users.tester]\nuid = {uid}\npermission_profiles = [\"remote\"]\n"
        );
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    // Widen access for this test only: the other uid must reach and open the socket.
    use std::os::unix::fs::PermissionsExt;
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut u = common::UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["id"], "user:tester", "{init}");
    let login = u.call("dashboard/login", json!({}));
    let port = port_of(login["result"]["url"].as_str().expect("a url"));
    let init = ws_initialize(port, json!({"authCode": login["result"]["code"]})).await;
    assert_eq!(
        init["result"]["principal"],
        json!({"id": "user:tester", "admin": false}),
        "{init}"
    );
    let token = init["result"]["authToken"].as_str().unwrap();
    // The same principal over POST: no config:read for tester.
    let v = post(port, Some(token), rpc("config/get", json!({}))).json();
    assert_eq!(code(&v["error"]), -32012, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("user:tester"),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_are_limited_per_credential_prefix() {
    let (daemon, port) = gateway_daemon("");
    let token = pair(daemon.config_dir(), "alice");
    let login = daemon.client().result("dashboard/login", json!({}));
    // A keep-alive connection that logged in before the failures.
    let mut before = tcp(port);
    before
        .write_all(post_raw(port, Some(&token), &rpc("status", json!({})).to_string()).as_bytes())
        .unwrap();
    assert_eq!(read_reply(&mut before).status, 200);
    // Five bad initialize attempts on one WebSocket, five bad bearers: ten failures.
    let mut ws = ws_open(port, None).await.unwrap();
    for i in 0..5 {
        let e = ws_call(&mut ws, i, "initialize", json!({"authToken": "zct_bad"})).await;
        assert_eq!(code(&e["error"]), -32010, "{e}");
    }
    for _ in 0..5 {
        assert_eq!(
            post(port, Some("zct_bad"), rpc("status", json!({}))).status,
            401
        );
    }
    // The 11th with that credential is refused, over WebSocket and POST /rpc alike.
    let e = ws_initialize(port, json!({"authToken": "zct_bad"})).await;
    assert_eq!(code(&e["error"]), -32010, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many failed logins"),
        "{e}"
    );
    let r = post(port, Some("zct_bad"), rpc("status", json!({})));
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(
        r.header("retry-after")
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 0 && s <= 60))
    );
    r.assert_secure();
    // Good credentials are not refused for them (SPEC §17.2): a code, a token on the
    // WebSocket that failed five times, a bearer.
    let ok = ws_initialize(port, json!({"authCode": login["code"]})).await;
    assert!(ok["result"]["authToken"].is_string(), "{ok}");
    let ok = ws_call(&mut ws, 10, "initialize", json!({"authToken": token})).await;
    assert_eq!(ok["result"]["principal"]["id"], "user:alice", "{ok}");
    let r = post(port, Some(&token), rpc("status", json!({})));
    assert_eq!(r.status, 200, "{}", r.text());
    // The connection that logged in before goes on.
    before
        .write_all(post_raw(port, Some(&token), &rpc("status", json!({})).to_string()).as_bytes())
        .unwrap();
    assert_eq!(read_reply(&mut before).status, 200);
    // The local socket is not affected.
    assert!(daemon.client().result("status", json!({}))["uptimeSecs"].is_u64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_checks_origin() {
    let (_daemon, port) = gateway_daemon("allowed_origins = [\"https://ok.example\"]\n");
    assert!(
        ws_open(port, Some(&format!("http://127.0.0.1:{port}")))
            .await
            .is_ok()
    );
    assert!(ws_open(port, Some("https://ok.example")).await.is_ok());
    assert!(
        ws_open(port, None).await.is_ok(),
        "non-browser clients send no Origin"
    );
    let err = ws_open(port, Some("https://evil.example"))
        .await
        .unwrap_err();
    assert!(err.contains("403"), "{err}");
    let err = ws_open(port, Some(&format!("http://127.0.0.1:{}", port + 1)))
        .await
        .unwrap_err();
    assert!(err.contains("403"), "{err}");
    let r = request(
        port,
        &upgrade_raw(port, "/rpc", Some("http://evil.example")),
    );
    assert_eq!(r.status, 403);
    r.assert_secure();
}

#[test]
fn a_client_that_stalls_in_its_request_head_is_closed() {
    let (daemon, port) = gateway_daemon("");
    let mut s = tcp(port);
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    let waited = started.elapsed();
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        waited >= Duration::from_secs(8) && waited < Duration::from_secs(14),
        "{waited:?}"
    );
    // An idle connection after a served request is closed too.
    let mut s = tcp(port);
    s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes())
        .unwrap();
    assert_eq!(read_reply(&mut s).status, 200);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
    drop(daemon);
}

#[test]
fn pipelined_posts_and_parallel_connections_do_not_wedge_the_listener() {
    let (daemon, port) = gateway_daemon("");
    let token = pair(daemon.config_dir(), "alice");
    // 50 requests in one write on one connection: 50 answers, in order.
    let mut s = tcp(port);
    let mut all = String::new();
    for id in 0..50 {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "status"}).to_string();
        all.push_str(&post_raw(port, Some(&token), &body));
    }
    s.write_all(all.as_bytes()).unwrap();
    for id in 0..50 {
        let r = read_reply(&mut s);
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["id"], id);
    }
    drop(s);
    // 24 connections at once, each a POST (a token may hold 32 connections).
    let threads: Vec<_> = (0..24)
        .map(|_| {
            let token = token.clone();
            std::thread::spawn(move || post(port, Some(&token), rpc("status", json!({}))).status)
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 200);
    }
    assert_eq!(get(port, "/healthz").status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zeroclaw_dashboard_prints_a_url_that_logs_in() {
    let daemon = quiet_daemon(0, &[]);
    let out = Command::new(BIN)
        .args([
            "--config-dir",
            daemon.config_dir().to_str().unwrap(),
            "dashboard",
        ])
        .env("ZEROCLAW_NO_BROWSER", "1")
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let url = stdout.lines().last().unwrap().trim();
    let (_, code_) = url.split_once("/#code=").expect(url);
    let init = ws_initialize(port_of(url), json!({"authCode": code_})).await;
    assert_eq!(init["result"]["principal"]["id"], "operator", "{init}");
    assert!(init["result"]["authToken"].is_string());
}
