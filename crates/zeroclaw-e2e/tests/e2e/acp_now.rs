//! ACP as it stands now (SPEC §25, with the withdrawal of permission requests), driven
//! with raw ACP frames over both ways in: `zeroclaw acp` on stdin/stdout, and the
//! gateway's `/acp` WebSocket (one text message per frame) with a pairing token. Every
//! flow runs over both: capabilities, config options (model and autonomy), message ids,
//! titles (`/title` and `session/set_title` from another client), a permission request
//! withdrawn with `$/cancel_request` when the owner answers elsewhere (the late reply
//! ignored), `session/close` and `session/resume`, and `/acp` refusing an editor without
//! a valid token.

use crate::common;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::ws::{WSS_SECTION, WsClient, listening_port, pair};
use common::{BIN, Conn, TestDaemon};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use zeroclaw_testkit::{Fake, Scripted};

/// How long any one frame may take to come.
const WAIT: Duration = Duration::from_secs(20);

/// The user `/acp` editors connect as, with what an editor needs.
const ALICE: &str = r#"
[permission_profiles.editor]
grants = { sessions = ["create", "read", "update", "execute"], system = ["read"] }
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["editor"]
"#;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Way {
    /// `zeroclaw acp` as a subprocess.
    Stdio,
    /// The gateway's `/acp`, with alice's pairing token as the bearer.
    Gateway,
}

pub(crate) const WAYS: [Way; 2] = [Way::Stdio, Way::Gateway];

/// A daemon on the fake provider with the gateway on, and alice's token.
pub(crate) struct Setup {
    pub(crate) daemon: TestDaemon,
    pub(crate) fake: Fake,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Setup {
    pub(crate) fn start(replies: Vec<Scripted>) -> Setup {
        let fake = Fake::start();
        for reply in replies {
            fake.push(reply);
        }
        let config =
            common::session_config(&fake.server.base_url(), &format!("{ALICE}{WSS_SECTION}"));
        let daemon = TestDaemon::start_with(&[], |dir| {
            std::fs::write(dir.join("config.toml"), config).unwrap();
        });
        let port = listening_port(&daemon);
        let token = pair(daemon.config_dir(), "alice");
        Setup {
            daemon,
            fake,
            port,
            token,
        }
    }

    /// A working directory for a session (inside the agent's workspace).
    pub(crate) fn workdir(&self, name: &str) -> PathBuf {
        let dir = self
            .daemon
            .config_dir()
            .join("agents/default/workspace")
            .join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// An editor connected the given way, initialized.
    pub(crate) async fn editor(&self, way: Way) -> Editor {
        let mut editor = match way {
            Way::Stdio => Editor::stdio(self.daemon.config_dir()),
            Way::Gateway => Editor::gateway(self.port, Some(&self.token)).await,
        };
        let init = editor
            .result(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        assert_eq!(init["protocolVersion"], 1, "{init}");
        editor
    }

    /// Another connection of the principal the editor acts as (the operator over the
    /// local socket for `zeroclaw acp`, alice over the gateway's `/rpc` for `/acp`).
    pub(crate) async fn owner(&self, way: Way) -> Owner {
        match way {
            Way::Stdio => Owner::Local(self.daemon.client()),
            Way::Gateway => Owner::Ws(Box::new(WsClient::open(self.port, &self.token).await)),
        }
    }
}

pub(crate) enum Owner {
    Local(Conn),
    Ws(Box<WsClient>),
}

impl Owner {
    pub(crate) async fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = match self {
            Owner::Local(conn) => conn.call(method, params),
            Owner::Ws(ws) => ws.call(method, params).await,
        };
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method}: {answer}"))
    }
}

enum Wire {
    Stdio {
        child: tokio::process::Child,
        stdin: tokio::process::ChildStdin,
        lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    },
    Ws(WebSocketStream<TcpStream>),
}

/// A raw ACP client: frames out, frames in; what is not the awaited answer is kept.
pub(crate) struct Editor {
    wire: Wire,
    next_id: u64,
    /// Frames received but not yet taken (notifications, requests of the agent).
    pub(crate) backlog: VecDeque<Value>,
}

impl Editor {
    fn stdio(config_dir: &Path) -> Editor {
        let mut child = tokio::process::Command::new(BIN)
            .args(["acp", "--config-dir", config_dir.to_str().unwrap()])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("zeroclaw acp");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Editor {
            wire: Wire::Stdio {
                child,
                stdin,
                lines,
            },
            next_id: 1,
            backlog: VecDeque::new(),
        }
    }

    async fn gateway(port: u16, token: Option<&str>) -> Editor {
        let ws = upgrade(port, token).await.expect("the /acp upgrade");
        Editor {
            wire: Wire::Ws(ws),
            next_id: 1,
            backlog: VecDeque::new(),
        }
    }

    pub(crate) async fn send(&mut self, frame: Value) {
        match &mut self.wire {
            Wire::Stdio { stdin, .. } => {
                let mut line = frame.to_string();
                line.push('\n');
                stdin.write_all(line.as_bytes()).await.expect("write");
                stdin.flush().await.expect("flush");
            }
            Wire::Ws(ws) => ws
                .send(Message::Text(frame.to_string().into()))
                .await
                .expect("send"),
        }
    }

    /// The next frame off the wire; `None` once it closed.
    pub(crate) async fn read(&mut self) -> Option<Value> {
        let text = match &mut self.wire {
            Wire::Stdio { lines, .. } => tokio::time::timeout(WAIT, lines.next_line())
                .await
                .expect("a frame in time")
                .expect("read")?,
            Wire::Ws(ws) => loop {
                match tokio::time::timeout(WAIT, ws.next())
                    .await
                    .expect("a frame in time")
                {
                    Some(Ok(Message::Text(t))) => break t.to_string(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    _ => return None,
                }
            },
        };
        Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
    }

    /// Sends a request; its id.
    pub(crate) async fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The answer to request `id`; other frames are kept in the backlog.
    pub(crate) async fn answer(&mut self, id: u64) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|f| f["id"] == id && f.get("method").is_none())
        {
            return self.backlog.remove(i).unwrap();
        }
        loop {
            let frame = self.read().await.expect("the agent closed");
            if frame["id"] == id && frame.get("method").is_none() {
                return frame;
            }
            self.backlog.push_back(frame);
        }
    }

    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.answer(id).await
    }

    pub(crate) async fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params).await;
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method}: {answer}"))
    }

    /// The first frame (kept or new) that `pred` accepts, taken out.
    pub(crate) async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i).unwrap();
        }
        loop {
            let Some(frame) = self.read().await else {
                panic!("closed while waiting for {what}; kept: {:?}", self.backlog)
            };
            if pred(&frame) {
                return frame;
            }
            self.backlog.push_back(frame);
        }
    }

    /// The `session/update`s kept so far of `kind`.
    pub(crate) fn updates(&self, kind: &str) -> Vec<Value> {
        self.backlog
            .iter()
            .filter(|f| {
                f["method"] == "session/update" && f["params"]["update"]["sessionUpdate"] == kind
            })
            .map(|f| f["params"]["update"].clone())
            .collect()
    }

    pub(crate) async fn new_session(&mut self, cwd: &Path) -> (String, Value) {
        let r = self
            .result("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        (r["sessionId"].as_str().unwrap().to_string(), r)
    }

    pub(crate) async fn prompt(&mut self, session_id: &str, text: &str) -> Value {
        self.result(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    pub(crate) async fn close(mut self) {
        if let Wire::Stdio {
            mut child, stdin, ..
        } = self.wire
        {
            drop(stdin);
            let _ = tokio::time::timeout(WAIT, child.wait()).await;
        } else if let Wire::Ws(ws) = &mut self.wire {
            let _ = ws.close(None).await;
        }
    }
}

/// Upgrades `ws://127.0.0.1:PORT/acp`, with `Authorization: Bearer TOKEN` when given.
async fn upgrade(
    port: u16,
    token: Option<&str>,
) -> Result<WebSocketStream<TcpStream>, tokio_tungstenite::tungstenite::Error> {
    let mut request = format!("ws://127.0.0.1:{port}/acp")
        .into_client_request()
        .unwrap();
    if let Some(token) = token {
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
    }
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    tokio_tungstenite::client_async(request, tcp)
        .await
        .map(|(ws, _)| ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_say_what_the_bridge_does() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        let mut editor = match way {
            Way::Stdio => Editor::stdio(setup.daemon.config_dir()),
            Way::Gateway => Editor::gateway(setup.port, Some(&setup.token)).await,
        };
        let init = editor
            .result(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        let caps = &init["agentCapabilities"];
        assert_eq!(caps["loadSession"], true, "{way:?}: {init}");
        let sessions = &caps["sessionCapabilities"];
        for cap in ["list", "resume", "close"] {
            assert!(sessions[cap].is_object(), "{way:?}: {cap} in {init}");
        }
        assert_eq!(
            caps["promptCapabilities"]["embeddedContext"], true,
            "{way:?}"
        );
        assert_ne!(caps["promptCapabilities"]["image"], true, "{way:?}");
        // Only `/acp` has something to authenticate.
        let methods = init["authMethods"].as_array().cloned().unwrap_or_default();
        assert_eq!(methods.is_empty(), way == Way::Stdio, "{way:?}: {init}");
        editor.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_and_autonomy_are_config_options_that_configure_the_session() {
    let setup = Setup::start(vec![]);
    setup
        .fake
        .server
        .set_models(Ok(vec!["m".into(), "m2".into()]));
    for way in WAYS {
        let mut editor = setup.editor(way).await;
        let (sid, created) = editor.new_session(&setup.workdir("options")).await;
        let options = created["configOptions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ids: Vec<&str> = options.iter().filter_map(|o| o["id"].as_str()).collect();
        assert_eq!(ids, ["mode", "model"], "{way:?}: {created}");
        assert_eq!(options[0]["currentValue"], "supervised", "{way:?}");
        assert_eq!(options[1]["currentValue"], "m", "{way:?}");
        let models: Vec<&str> = options[1]["options"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["value"].as_str())
            .collect();
        assert_eq!(models, ["m", "m2"], "{way:?}");

        let set = editor
            .result(
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "mode", "value": "read_only"}),
            )
            .await;
        assert_eq!(
            set["configOptions"][0]["currentValue"], "read_only",
            "{way:?}: {set}"
        );
        editor
            .result(
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "model", "value": "m2"}),
            )
            .await;
        // The daemon's own view of the session changed.
        let mut owner = setup.owner(way).await;
        let status = owner
            .result("session/status", json!({"sessionId": sid}))
            .await;
        assert_eq!(status["autonomy"], "read_only", "{way:?}: {status}");
        assert_eq!(status["model"], "m2", "{way:?}: {status}");

        let bad = editor
            .call(
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "colour", "value": "red"}),
            )
            .await;
        assert_eq!(bad["error"]["code"], -32602, "{way:?}: {bad}");
        assert!(
            bad["error"]["message"]
                .as_str()
                .unwrap()
                .contains("configId"),
            "{bad}"
        );
        editor.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_carry_message_ids_and_titles_follow_the_daemon() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        setup.fake.push(Scripted::text("one two three"));
        setup.fake.push(Scripted::text("again"));
        let mut editor = setup.editor(way).await;
        let (sid, _) = editor.new_session(&setup.workdir("titles")).await;

        let done = editor.prompt(&sid, "first prompt").await;
        assert_eq!(done["stopReason"], "end_turn", "{way:?}");
        let chunks = editor.updates("agent_message_chunk");
        assert!(!chunks.is_empty(), "{way:?}");
        let first_id = chunks[0]["messageId"].clone();
        assert!(first_id.is_string(), "{way:?}: {chunks:?}");
        assert!(
            chunks.iter().all(|c| c["messageId"] == first_id),
            "{way:?}: {chunks:?}"
        );
        // The first prompt titles the session.
        let info = editor
            .wait_for("the first title", |f| {
                f["params"]["update"]["sessionUpdate"] == "session_info_update"
            })
            .await;
        assert_eq!(
            info["params"]["update"]["title"], "first prompt",
            "{way:?}: {info}"
        );
        assert!(info["params"]["update"]["updatedAt"].is_string(), "{info}");
        editor.backlog.clear();

        // `/title` from the editor: set, told, answered without a turn.
        let done = editor.prompt(&sid, "/title Named here").await;
        assert_eq!(done["stopReason"], "end_turn", "{way:?}");
        let info = editor
            .wait_for("the /title update", |f| {
                f["params"]["update"]["sessionUpdate"] == "session_info_update"
            })
            .await;
        assert_eq!(info["params"]["update"]["title"], "Named here", "{way:?}");

        // A title set by another client reaches the editor (at once: acp_live shows it
        // needs no turn); the next turn brings a new message id.
        let mut owner = setup.owner(way).await;
        owner
            .result(
                "session/set_title",
                json!({"sessionId": sid, "title": "Named elsewhere"}),
            )
            .await;
        editor.prompt(&sid, "second").await;
        let info = editor
            .wait_for("the title set elsewhere", |f| {
                f["params"]["update"]["sessionUpdate"] == "session_info_update"
            })
            .await;
        assert_eq!(
            info["params"]["update"]["title"], "Named elsewhere",
            "{way:?}"
        );
        let second: Vec<Value> = editor.updates("agent_message_chunk");
        assert!(!second.is_empty());
        assert_ne!(
            second[0]["messageId"], first_id,
            "{way:?}: a new turn, a new message"
        );
        editor.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_answered_elsewhere_is_withdrawn_and_a_late_reply_ignored() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        let marker = format!("acp-elsewhere-{way:?}");
        setup.fake.push(Scripted::tool_call(
            "call_w",
            "bash",
            json!({"command": format!("echo {marker}")}),
        ));
        setup.fake.push(Scripted::text("ran it"));
        let mut editor = setup.editor(way).await;
        let (sid, _) = editor.new_session(&setup.workdir("withdraw")).await;
        let mut owner = setup.owner(way).await;
        owner
            .result("session/subscribe", json!({"sessionId": sid}))
            .await;
        let prompt = editor
            .start(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "run it"}]}),
            )
            .await;
        let asked = editor
            .wait_for("the permission request", |f| {
                f["method"] == "session/request_permission"
            })
            .await;
        let editor_request = asked["id"].clone();
        // The owner answers from another connection; the request id comes from the
        // daemon's approval_request, which the owner sees as a subscriber.
        let request_id = loop {
            let pending = match &mut owner {
                Owner::Local(conn) => conn.recv(),
                Owner::Ws(_) => break None,
            };
            if pending["params"]["type"] == "approval_request" {
                break pending["params"]["requestId"].as_str().map(str::to_string);
            }
        };
        let request_id = match request_id {
            Some(id) => id,
            None => approval_id_over_ws(&setup, &sid).await,
        };
        owner
            .result(
                "session/approve",
                json!({"sessionId": sid, "requestId": request_id, "decision": "allow_once"}),
            )
            .await;
        let withdrawn = editor
            .wait_for("$/cancel_request", |f| f["method"] == "$/cancel_request")
            .await;
        assert_eq!(
            withdrawn["params"]["requestId"], editor_request,
            "{way:?}: {withdrawn}"
        );
        // The editor's dialog answers late: ignored (the tool ran once, allowed).
        editor
            .send(json!({"jsonrpc": "2.0", "id": editor_request,
                "result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}}))
            .await;
        let done = editor.answer(prompt).await;
        assert_eq!(done["result"]["stopReason"], "end_turn", "{way:?}: {done}");
        let results = editor.updates("tool_call_update");
        let completed = results
            .iter()
            .find(|u| u["status"] == "completed")
            .unwrap_or_else(|| panic!("{way:?}: {results:?}"));
        assert!(
            completed["rawOutput"].to_string().contains(&marker),
            "{completed}"
        );
        // Still serving after the late reply.
        editor.result("session/list", json!({})).await;
        editor.close().await;
    }
}

/// The `requestId` of the approval pending in `sid`, read by alice over a second
/// WebSocket that subscribes (the daemon replays the running turn to a new subscriber).
async fn approval_id_over_ws(setup: &Setup, sid: &str) -> String {
    let mut ws = common::ws::connect(setup.port).await;
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "authToken": setup.token}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/subscribe",
            "params": {"sessionId": sid}}),
    ];
    for frame in frames {
        ws.send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
    }
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("in time");
        let Some(Ok(Message::Text(text))) = msg else {
            continue;
        };
        let v: Value = serde_json::from_str(&text).unwrap();
        if v["params"]["type"] == "approval_request" {
            return v["params"]["requestId"].as_str().unwrap().to_string();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_then_resume() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        setup.fake.push(Scripted::text("before"));
        setup.fake.push(Scripted::text("after resume"));
        let mut editor = setup.editor(way).await;
        let cwd = setup.workdir("resume");
        let (sid, _) = editor.new_session(&cwd).await;
        editor.prompt(&sid, "hello").await;
        editor
            .result("session/close", json!({"sessionId": sid}))
            .await;
        let refused = editor
            .call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32002, "{way:?}: {refused}");
        editor.backlog.clear();
        let resumed = editor
            .result(
                "session/resume",
                json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
            )
            .await;
        assert!(resumed["configOptions"].is_array(), "{way:?}: {resumed}");
        // Nothing replayed: resume is not load.
        assert!(editor.updates("user_message_chunk").is_empty(), "{way:?}");
        assert!(editor.updates("agent_message_chunk").is_empty(), "{way:?}");
        let done = editor.prompt(&sid, "still here?").await;
        assert_eq!(done["stopReason"], "end_turn", "{way:?}");
        let text: String = editor
            .updates("agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect();
        assert_eq!(text, "after resume", "{way:?}");
        let unknown = editor
            .call("session/close", json!({"sessionId": "no-such-session"}))
            .await;
        assert_eq!(unknown["error"]["code"], -32002, "{way:?}");
        editor.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_on_the_gateway_needs_a_token() {
    let setup = Setup::start(vec![Scripted::text("authenticated")]);
    // A bearer the daemon refuses: 401 before any upgrade.
    let refused = upgrade(setup.port, Some("not-a-token")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 401)
        }
        other => panic!("expected 401, got {other:?}"),
    }
    // No bearer: the editor may initialize, but nothing else until it authenticates.
    let mut editor = Editor::gateway(setup.port, None).await;
    let init = editor
        .result(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["authMethods"][0]["id"], "zeroclaw-token", "{init}");
    let cwd = setup.workdir("auth");
    let denied = editor
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    assert_eq!(denied["error"]["code"], -32000, "{denied}");
    let wrong = editor
        .call(
            "authenticate",
            json!({"methodId": "zeroclaw-token", "_meta": {"token": "wrong"}}),
        )
        .await;
    assert_eq!(wrong["error"]["code"], -32000, "{wrong}");
    let missing = editor
        .call("authenticate", json!({"methodId": "zeroclaw-token"}))
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("_meta.token")
    );
    // The right token, then the session is alice's, like any of her clients'.
    editor
        .result(
            "authenticate",
            json!({"methodId": "zeroclaw-token", "_meta": {"token": setup.token}}),
        )
        .await;
    let (sid, _) = editor.new_session(&cwd).await;
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
    let mut alice = WsClient::open(setup.port, &setup.token).await;
    let listed = alice.call("session/list", json!({"mode": "acp"})).await;
    assert!(listed.to_string().contains(&sid), "{listed}");
    // Alice's rules, not the operator's: she may not raise the agent's autonomy.
    let raised = editor
        .call(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "mode", "value": "full"}),
        )
        .await;
    assert_eq!(raised["error"]["code"], -32602, "{raised}");
    assert!(
        raised["error"]["message"]
            .to_string()
            .contains("user:alice"),
        "{raised}"
    );
    editor.close().await;
}

/// A session opened in one directory is listed with that directory by an editor that
/// did not open it, whatever the bridge's own directory (the daemon's `cwd` of each
/// `session/list` entry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_listed_session_has_its_own_cwd() {
    let setup = Setup::start(vec![]);
    for way in WAYS {
        let cwd = setup.workdir(&format!("own-cwd-{way:?}"));
        let mut opener = setup.editor(way).await;
        let (sid, _) = opener.new_session(&cwd).await;
        opener.close().await;
        let mut other = setup.editor(way).await;
        let list = other.result("session/list", json!({})).await;
        let entry = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == sid.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{way:?}: {list}"));
        assert_eq!(entry["cwd"], cwd.to_str().unwrap(), "{way:?}: {entry}");
        other.close().await;
    }
}

/// An `/acp` editor that never authenticates is closed 10 s after its TCP accept, like
/// any WebSocket peer that does not `initialize`; one that came with a bearer at the same
/// time is still served (the positive control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_never_authenticates_is_closed_after_10_s() {
    let setup = Setup::start(vec![]);
    let started = std::time::Instant::now();
    let mut silent = Editor::gateway(setup.port, None).await;
    let mut served = setup.editor(Way::Gateway).await;
    silent
        .result(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    if let Some(frame) = silent.read().await {
        panic!("unexpected {frame}");
    }
    let closed = started.elapsed();
    assert!(
        closed >= Duration::from_secs(9) && closed < Duration::from_secs(15),
        "closed after {closed:?}"
    );
    served.result("session/list", json!({})).await;
    served.close().await;
}
