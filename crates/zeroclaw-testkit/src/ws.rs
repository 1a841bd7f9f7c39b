//! A WebSocket peer for tests that need a second principal without a second uid: a daemon
//! with `[wss]` on a loopback port, a pairing token, and a plain `ws://` client.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use crate::daemon::{BIN, TestDaemon};

/// The `[wss]` section of a plain loopback listener on an OS-chosen port.
pub const WSS_SECTION: &str = "[wss]\nenabled = true\nbind = \"127.0.0.1\"\nport = 0\n";

/// The port the daemon logged for its WebSocket listener.
pub fn listening_port(daemon: &TestDaemon) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = daemon.log();
        if let Some(port) = log
            .split("websocket listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|addr| addr.trim_end_matches('/').rsplit(':').next())
            .and_then(|p| p.parse().ok())
        {
            return port;
        }
        assert!(Instant::now() < deadline, "no websocket listener:\n{log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A new pairing token for `user` (the last line `zeroclaw pair` prints).
pub fn pair(config_dir: &Path, user: &str) -> String {
    let out = Command::new(BIN)
        .args(["--config-dir", config_dir.to_str().expect("utf-8 path")])
        .args(["pair", "--user", user])
        .output()
        .expect("zeroclaw pair");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// An upgraded `ws://127.0.0.1:PORT/` connection.
pub async fn connect(port: u16) -> WebSocketStream<TcpStream> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let (ws, _) = tokio_tungstenite::client_async(format!("ws://127.0.0.1:{port}/"), tcp)
        .await
        .expect("upgrade");
    ws
}

/// A WebSocket JSON-RPC client that has completed `initialize` with `token`.
pub struct WsClient {
    ws: WebSocketStream<TcpStream>,
    next_id: u64,
}

impl WsClient {
    pub async fn open(port: u16, token: &str) -> WsClient {
        let mut client = WsClient {
            ws: connect(port).await,
            next_id: 1,
        };
        let init = client
            .call(
                "initialize",
                json!({"protocolVersion": 1, "authToken": token}),
            )
            .await;
        assert!(init.get("result").is_some(), "initialize: {init}");
        client
    }

    /// Sends a request and returns its whole response, skipping notifications.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.ws
            .send(Message::Text(line.to_string().into()))
            .await
            .expect("send");
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .expect("an answer in time");
            let Some(Ok(Message::Text(text))) = msg else {
                match msg {
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    other => panic!("expected a text message, got {other:?}"),
                }
            };
            let value: Value = serde_json::from_str(&text).expect("json");
            if value["id"] == id && value.get("method").is_none() {
                return value;
            }
        }
    }
}
