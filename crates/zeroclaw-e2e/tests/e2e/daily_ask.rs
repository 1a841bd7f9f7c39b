//! Ask-user reaches every face (SPEC §22 "Approvals reach every face", §14 "Ask-user"):
//! the agent's `ask_user` question goes to every subscribed connection of the owner that
//! can answer, the first answer wins, the others learn it is settled from
//! `ask_user_resolved`, a late answer is ignored, and another principal's connection is
//! never asked.

use crate::common;

use common::{Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn subscribe(c: &mut Conn, sid: &str) {
    let id = c.send_call("session/subscribe", json!({"sessionId": sid}));
    let resp = c.recv_response(&id);
    assert!(resp.get("result").is_some(), "{resp}");
}

/// Reads until an `elicitation/create` request arrives; returns it and what came before.
fn wait_question(c: &mut Conn) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let msg = c.recv();
        if msg["method"] == "elicitation/create" {
            return (msg, before);
        }
        before.push(msg);
    }
}

/// Reads until `ask_user_resolved`; returns its params.
fn wait_resolved(c: &mut Conn) -> Value {
    loop {
        let msg = c.recv();
        assert_ne!(msg["method"], "elicitation/create", "asked twice: {msg}");
        if msg["params"]["type"] == "ask_user_resolved" {
            return msg["params"].clone();
        }
    }
}

fn answer(request: &Value, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": request["id"],
           "result": {"action": "accept", "content": {"answer": text}}})
    .to_string()
}

/// Whether the provider's request `i` carried `text` in a tool result.
fn tool_result_sent(fake: &Fake, i: usize, text: &str) -> bool {
    fake.requests()[i]["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.contains(text)))
    })
}

fn ask_script(fake: &Fake) {
    fake.push(Scripted::tool_call(
        "tc_1",
        "ask_user",
        json!({"question": "colour?"}),
    ));
    fake.push(Scripted::text("noted"));
}

#[test]
fn every_subscribed_face_of_the_owner_is_asked_and_the_first_answer_wins() {
    let fake = Fake::start();
    ask_script(&fake);
    let daemon = start(&fake);
    // The prompter cannot answer; two subscribed connections of the owner can.
    let mut a = daemon.client();
    let sid = a.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut one = daemon.eliciting_client();
    subscribe(&mut one, &sid);
    let mut two = daemon.eliciting_client();
    subscribe(&mut two, &sid);
    let prompt = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "ask me"}),
    );

    let (q1, _) = wait_question(&mut one);
    let (q2, _) = wait_question(&mut two);
    for q in [&q1, &q2] {
        assert_eq!(q["params"]["message"], "colour?", "{q}");
        assert_eq!(q["params"]["sessionId"], sid.as_str(), "{q}");
    }
    let request_id = q1["params"]["requestId"].clone();
    assert!(request_id.is_string(), "{q1}");
    assert_eq!(
        q2["params"]["requestId"], request_id,
        "one question, one id"
    );

    // The second answers; the first learns it is settled, and by whom.
    two.send(&answer(&q2, "teal"));
    let settled = wait_resolved(&mut one);
    assert_eq!(settled["requestId"], request_id, "{settled}");
    assert_eq!(settled["reason"], "answered", "{settled}");
    assert_eq!(settled["decidedBy"]["principal"], "operator", "{settled}");
    assert_eq!(settled["decidedBy"]["client"], "rpc", "{settled}");
    // The answerer gets the same update.
    assert_eq!(wait_resolved(&mut two)["requestId"], request_id);

    // A late answer from the first is ignored: no error comes back for it, the connection
    // stays usable (its next call is the next answer it gets), and the turn used "teal".
    one.send(&answer(&q1, "crimson"));
    let status = one.send_call("session/status", json!({"sessionId": sid}));
    loop {
        let msg = one.recv();
        if msg.get("method").is_some() {
            continue;
        }
        assert_eq!(
            msg["id"], status,
            "only the status answer comes back: {msg}"
        );
        assert!(msg.get("result").is_some(), "{msg}");
        break;
    }
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    assert!(
        tool_result_sent(&fake, 1, "teal"),
        "{:?}",
        fake.requests()[1]
    );
    assert!(!tool_result_sent(&fake, 1, "crimson"));

    // Replayed like every update: a later subscriber sees the question settled.
    let mut late = daemon.client();
    let id = late.send_call(
        "session/subscribe",
        json!({"sessionId": sid, "turnId": settled["turnId"]}),
    );
    assert!(late.recv_response(&id).get("result").is_some());
    let replayed = wait_resolved(&mut late);
    assert_eq!(replayed["requestId"], request_id);
    assert_eq!(replayed["replay"], true, "{replayed}");
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_connection_of_another_principal_is_never_asked() {
    assert!(common::is_root(), "needs root to connect as another uid");
    let fake = Fake::start();
    ask_script(&fake);
    let daemon = start(&fake);
    let mut a = daemon.client();
    let sid = a.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another principal, an admin, so it may watch the operator's session.
    let uid = common::test_uid();
    let set = a.result(
        "config/set-many",
        json!({"sets": [
            {"prop": "permission_profiles.watcher", "value": {"admin": true}},
            {"prop": "users.tester", "value": {"uid": uid, "permission_profiles": ["watcher"]}},
        ]}),
    );
    assert_eq!(set["set"], true, "{set}");
    use std::os::unix::fs::PermissionsExt;
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut other = common::UidConn::open(&daemon.socket, uid);
    let init = other.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let sub = other.call("session/subscribe", json!({"sessionId": sid}));
    assert!(sub.get("result").is_some(), "{sub}");
    let mut mine = daemon.eliciting_client();
    subscribe(&mut mine, &sid);

    let prompt = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "ask me"}),
    );
    let (q, _) = wait_question(&mut mine);
    mine.send(&answer(&q, "teal"));
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    // The other principal watched the whole turn (positive control: it got the settled
    // question and the turn's end) and was never asked.
    let mut seen_settled = false;
    loop {
        let msg = other.recv();
        assert_ne!(
            msg["method"], "elicitation/create",
            "another principal was asked: {msg}"
        );
        if msg["params"]["type"] == "ask_user_resolved" {
            assert_eq!(msg["params"]["requestId"], q["params"]["requestId"]);
            seen_settled = true;
        }
        if msg["params"]["type"] == "turn_complete" {
            break;
        }
    }
    assert!(seen_settled);
}

/// `zeroclaw acp` on pipes, read by a thread: frames as they come, each wait bounded.
struct AcpEditor {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    frames: std::sync::mpsc::Receiver<Value>,
    next_id: u64,
}

impl AcpEditor {
    fn start(config_dir: &std::path::Path) -> AcpEditor {
        use std::io::BufRead;
        let mut child = std::process::Command::new(common::BIN)
            .args(["acp", "--config-dir", config_dir.to_str().unwrap()])
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("zeroclaw acp");
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, frames) = std::sync::mpsc::sync_channel(256);
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Ok(frame) = serde_json::from_str::<Value>(&line) else {
                    break;
                };
                if tx.send(frame).is_err() {
                    break;
                }
            }
        });
        AcpEditor {
            child,
            stdin,
            frames,
            next_id: 1,
        }
    }

    fn send(&mut self, frame: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn start_call(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The first frame `pred` accepts; the frames before it are returned too.
    fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let frame = self
                .frames
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("no {what} ({e}); before it: {before:?}"));
            if pred(&frame) {
                return (frame, before);
            }
            before.push(frame);
        }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_call(method, params);
        let (answer, _) = self.wait_for(method, |f| f["id"] == id && f.get("method").is_none());
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method}: {answer}"))
    }
}

impl Drop for AcpEditor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_editors_question_is_withdrawn_when_the_owner_answers_elsewhere() {
    let fake = Fake::start();
    ask_script(&fake);
    let daemon = start(&fake);
    let workdir = daemon.config_dir().join("agents/default/workspace/asked");
    std::fs::create_dir_all(&workdir).unwrap();
    let mut editor = AcpEditor::start(daemon.config_dir());
    let init = editor.result(
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"elicitation": {"form": {}}}}),
    );
    assert_eq!(init["protocolVersion"], 1, "{init}");
    let session = editor.result("session/new", json!({"cwd": workdir, "mcpServers": []}));
    let sid = session["sessionId"].as_str().unwrap().to_owned();
    // Another connection of the same principal (the operator), subscribed.
    let mut owner = daemon.eliciting_client();
    subscribe(&mut owner, &sid);

    let prompt = editor.start_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "ask me"}]}),
    );
    let (asked, _) = editor.wait_for("the editor's question", |f| {
        f["method"] == "elicitation/create" && f.get("id").is_some()
    });
    let editor_request = asked["id"].clone();
    // The owner answers its copy; the editor's is withdrawn.
    let (q, _) = wait_question(&mut owner);
    owner.send(&answer(&q, "teal"));
    let (withdrawn, _) = editor.wait_for("$/cancel_request", |f| f["method"] == "$/cancel_request");
    assert_eq!(
        withdrawn["params"]["requestId"], editor_request,
        "{withdrawn}"
    );
    // The editor's dialog answers late: ignored, and the turn used the owner's answer.
    editor.send(&json!({"jsonrpc": "2.0", "id": editor_request,
        "result": {"action": "accept", "content": {"answer": "crimson"}}}));
    let (done, _) = editor.wait_for("the prompt's answer", |f| {
        f["id"] == prompt && f.get("method").is_none()
    });
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    // (The bridge may call the provider for other things too: any call counts.)
    let calls = fake.requests().len();
    assert!(
        (0..calls).any(|i| tool_result_sent(&fake, i, "teal")),
        "{:?}",
        fake.requests()
    );
    assert!(!(0..calls).any(|i| tool_result_sent(&fake, i, "crimson")));
    // Still serving after the late reply.
    editor.result("session/list", json!({}));
}

/// Waits until the session has `n` subscribers.
fn wait_subscribers(c: &mut Conn, sid: &str, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let st = c.result("session/status", json!({"sessionId": sid}));
        if st["subscribers"] == n {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{st}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_dashboards_form_goes_when_the_question_is_answered_elsewhere() {
    use crate::browser::Browser;
    const WAIT: std::time::Duration = std::time::Duration::from_secs(20);
    let fake = Fake::start();
    ask_script(&fake);
    let config = session_config(&fake.server.base_url(), common::ws::WSS_SECTION);
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    common::ws::listening_port(&daemon);
    let mut a = daemon.client();
    let sid = a.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut socket = daemon.eliciting_client();
    subscribe(&mut socket, &sid);

    let browser = Browser::launch().await;
    let page = browser.page(1280, 800).await;
    let login = a.result("dashboard/login", json!({}));
    let url = login["url"].as_str().expect("login url");
    page.goto(url).await;
    page.wait_for("document.querySelector('ul.sessions li')", WAIT)
        .await;
    page.eval(&format!(
        "location.hash = {}",
        json!(format!("#/session/{sid}"))
    ))
    .await;
    wait_subscribers(&mut a, &sid, 2);

    let prompt = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "ask me"}),
    );
    // Both faces are asked: the page shows the form.
    let (q, _) = wait_question(&mut socket);
    page.wait_for(
        "document.querySelector('form.ask')?.textContent.includes('colour?')",
        WAIT,
    )
    .await;
    // Answered on the socket: the page's form goes, and the turn ends with that answer.
    socket.send(&answer(&q, "teal"));
    page.wait_for(
        "!document.querySelector('form.ask') && [...document.querySelectorAll('.block.assistant:not(.streaming)')].some(e => e.textContent.includes('noted'))",
        WAIT,
    )
    .await;
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    let calls = fake.requests().len();
    assert!((0..calls).any(|i| tool_result_sent(&fake, i, "teal")));
}
