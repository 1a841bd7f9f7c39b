//! `zeroclaw chat --session ID` as a watcher (SPEC §14): it follows turns other clients
//! prompt, is replayed a running turn with its pending approval, and answers approvals
//! asked elsewhere; two windows on one session both see every turn.

mod common;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{BIN, Conn, Fake, TestDaemon};
use serde_json::json;
use zeroclaw_testkit::Scripted;

/// A `zeroclaw chat` whose output (stdout and stderr, where notes go) is collected as it
/// comes.
struct Window {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<String>>,
}

impl Window {
    fn attach(daemon: &TestDaemon, session: &str) -> Window {
        let mut child = Command::new(BIN)
            .args(["chat", "--config-dir"])
            .arg(daemon.config_dir())
            .args(["--session", session])
            .env_remove("ZEROCLAW_SOCKET")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chat");
        let stdin = child.stdin.take();
        let out = Arc::new(Mutex::new(String::new()));
        let stdout: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let stderr: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        for mut stream in [stdout, stderr] {
            let sink = Arc::clone(&out);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    sink.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push_str(&text);
                }
            });
        }
        Window { child, stdin, out }
    }

    /// Waits (up to 20 s) until the output contains `text`.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self
            .out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(text)
        {
            assert!(
                Instant::now() < deadline,
                "no {text:?} in\n{}",
                self.out.lock().unwrap_or_else(|p| p.into_inner())
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Ends input; the chat exits.
    fn close(mut self) -> String {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success());
        self.out.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn start(fake: &Fake) -> TestDaemon {
    let config = common::session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A client and the session it made on agent `default`.
fn prompter(daemon: &TestDaemon) -> (Conn, String) {
    let mut a = daemon.client();
    let sid = a.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    (a, sid)
}

/// Waits until the session has `n` subscribers.
fn wait_subscribers(c: &mut Conn, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = c.result("session/list", json!({}));
        if list["sessions"][0]["subscribers"] == n {
            return;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_windows_see_every_turn_and_one_answers_an_approval_asked_elsewhere() {
    let fake = Fake::start();
    fake.push(Scripted::text("hello from elsewhere"));
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo watched-run"}),
    ));
    fake.push(Scripted::text("all finished"));
    let daemon = start(&fake);
    let (mut a, sid) = prompter(&daemon);
    let mut one = Window::attach(&daemon, &sid);
    let two = Window::attach(&daemon, &sid);
    wait_subscribers(&mut a, 2);

    let (_, done) = a.prompt(&sid, "say hello");
    assert_eq!(done["result"]["outcome"], "completed");
    one.wait_for("hello from elsewhere");
    two.wait_for("hello from elsewhere");

    let prompt = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "run it"}),
    );
    one.wait_for("allow bash `echo watched-run`?");
    two.wait_for("allow bash `echo watched-run`?");
    one.type_line("y");
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    for w in [&one, &two] {
        w.wait_for("watched-run\n");
        w.wait_for("all finished");
    }
    // What was decided, by whom, from which face (SPEC §22 `decidedBy`).
    two.wait_for("[bash `echo watched-run`: allowed once by operator from a chat]");
    let (one, two) = (one.close(), two.close());
    assert!(!one.contains("allowed once by"), "{one}");
    assert!(two.contains("hello from elsewhere"), "{two}");
}

#[test]
fn attaching_to_a_running_turn_replays_its_pending_approval() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo late-approval"}),
    ));
    fake.push(Scripted::text("done at last"));
    let daemon = start(&fake);
    let (mut a, sid) = prompter(&daemon);
    let prompt = a.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    loop {
        let msg = a.recv();
        if msg["params"]["type"] == "approval_request" {
            break;
        }
    }
    let mut late = Window::attach(&daemon, &sid);
    late.wait_for("a turn is running");
    late.wait_for("allow bash `echo late-approval`?");
    late.type_line("y");
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    late.wait_for("done at last");
    let out = late.close();
    assert!(out.contains("late-approval\n"), "{out}");
}

#[test]
fn usage_after_each_turn_and_model_and_mode_commands() {
    let fake = Fake::start();
    fake.push(Scripted::text("counted"));
    fake.push(Scripted::text("again"));
    let daemon = start(&fake);
    let (_a, sid) = prompter(&daemon);
    let mut w = Window::attach(&daemon, &sid);
    w.type_line("count my tokens");
    w.wait_for("counted");
    // The fake provider reports 10 in, 5 out per call; the context window is the agent's.
    w.wait_for("[10 in · 5 out · context 15/32000]");
    w.type_line("/model other-model");
    w.wait_for("model other-model · autonomy supervised");
    w.type_line("/mode full");
    w.wait_for("model other-model · autonomy full");
    w.type_line("/mode sometimes");
    w.wait_for("error: ");
    w.type_line("next one");
    w.wait_for("again");
    let out = w.close();
    // (The daemon also asked the provider's model list to check the name.)
    let chats: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.get("messages").is_some())
        .collect();
    assert_eq!(
        chats.len(),
        2,
        "/model and /mode never reach the model: {out}"
    );
    assert_eq!(chats[1]["model"], "other-model");
}
