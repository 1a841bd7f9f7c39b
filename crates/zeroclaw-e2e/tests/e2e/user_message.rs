//! SPEC §18 "The prompt is an event": every turn starts with `user_message {text,
//! attachments, promptedBy}` (eventSeq 1), sent to every subscriber, replayed like any
//! event, labelled with the sender's principal, and cut like any long text.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use base64::Engine;
use common::{Conn, Fake, TestDaemon, UidConn, code, is_root, test_uid};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = common::session_config(&fake.server.base_url(), extra);
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn, agent: &str) -> String {
    c.new_session(json!({"agentAlias": agent}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Subscribes; returns the answer.
fn subscribe(c: &mut Conn, params: Value) -> Value {
    c.result("session/subscribe", params)
}

/// Updates until the next `turn_complete`, inclusive.
fn read_turn(c: &mut Conn) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let msg = c.recv();
        if msg["method"] != "session/update" {
            continue;
        }
        let done = msg["params"]["type"] == "turn_complete";
        out.push(msg["params"].clone());
        if done {
            return out;
        }
    }
}

#[test]
fn every_subscriber_gets_the_prompt_first_and_again_on_replay() {
    let fake = Fake::start();
    fake.push(Scripted::text("noted"));
    fake.push(Scripted::chunks(
        ["slow ", "answer ", "here"],
        Duration::from_millis(300),
    ));
    let daemon = start(&fake, "");
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut watcher = daemon.client();
    subscribe(&mut watcher, json!({"sessionId": sid}));

    // A prompt with a file: the text and the file are shown apart.
    let data = base64::engine::general_purpose::STANDARD.encode("the notes");
    let id = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "read the notes",
               "attachments": [{"dataB64": data, "filename": "notes.txt"}]}),
    );
    let (msgs, resp) = a.collect_until(&id);
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let mine = common::updates(&msgs);
    let turn = resp["result"]["turnId"].clone();
    let first = &mine[0];
    let marker = first["attachments"][0]["marker"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(marker.starts_with("[Document: notes.txt] "), "{first}");
    assert_eq!(
        *first,
        json!({"sessionId": sid, "type": "user_message", "turnId": turn, "eventSeq": 1,
               "text": "read the notes",
               "attachments": [{"filename": "notes.txt", "marker": marker}],
               "promptedBy": "operator"})
    );
    // The watcher sees the same stream, prompt first; the model got the marker.
    assert_eq!(read_turn(&mut watcher), mine);
    let sent = fake.requests()[0].to_string();
    assert!(
        sent.contains("read the notes\\n[Document: notes.txt]"),
        "{sent}"
    );
    let rows = a.messages(&sid);
    assert_eq!(rows[0]["content"], format!("read the notes\n{marker}"));

    // Replayed from the start of the buffered turn: the prompt again, marked.
    let mut late = daemon.client();
    subscribe(
        &mut late,
        json!({"sessionId": sid, "turnId": turn, "afterEventSeq": 0}),
    );
    let replayed = read_turn(&mut late);
    let mut expected = first.clone();
    expected["replay"] = json!(true);
    assert_eq!(replayed[0], expected);
    assert_eq!(replayed.len(), mine.len());

    // A subscriber arriving mid-turn gets the running turn from its prompt.
    let id = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "take your time"}),
    );
    loop {
        let msg = a.recv();
        if msg["params"]["type"] == "agent_message_chunk" {
            break;
        }
    }
    let mut mid = daemon.client();
    let sub = subscribe(&mut mid, json!({"sessionId": sid}));
    assert!(sub["activeTurnId"].is_string(), "{sub}");
    let running = read_turn(&mut mid);
    assert_eq!(running[0]["type"], "user_message");
    assert_eq!(running[0]["text"], "take your time");
    assert_eq!(running[0]["eventSeq"], 1);
    assert_eq!(running[0]["replay"], true);
    assert_eq!(running[0]["attachments"], json!([]));
    a.collect_until(&id);
}

#[test]
fn a_prompt_too_long_for_one_event_is_cut_there_and_the_model_gets_it_whole() {
    let fake = Fake::start();
    fake.push(Scripted::text("ok"));
    let daemon = start(&fake, "");
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    // 1.5 MiB of `"`: 9 MiB once escaped in JSON, more than a frame if it were sent whole.
    let long = "\"".repeat(1536 * 1024);
    let (msgs, resp) = a.prompt(&sid, &long);
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let first = &common::updates(&msgs)[0];
    assert_eq!(first["type"], "user_message");
    assert_eq!(first["truncated"], true);
    assert_eq!(first["text"].as_str().unwrap().len(), 1024 * 1024);
    // The model got the whole prompt.
    let sent = &fake.requests()[0]["messages"];
    let user = sent
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(user["content"].as_str().unwrap().len(), long.len());
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_prompt_from_another_user_carries_that_users_label() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let fake = Fake::start();
    let extra = format!(
        "[permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"echo\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"user\"]\n"
    );
    let daemon = start(&fake, &extra);
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut bob = UidConn::open(&daemon.socket, uid);
    let init = bob.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["id"], "user:tester", "{init}");
    let r = bob.call(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "bobs"}),
    );
    assert!(r.get("result").is_some(), "{r}");
    // The operator (an admin) watches the user's session.
    let mut op = daemon.client();
    subscribe(&mut op, json!({"sessionId": "bobs"}));
    let r = bob.call(
        "session/prompt",
        json!({"sessionId": "bobs", "prompt": "hello from bob"}),
    );
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    let turn = read_turn(&mut op);
    assert_eq!(turn[0]["type"], "user_message");
    assert_eq!(turn[0]["text"], "hello from bob");
    assert_eq!(turn[0]["promptedBy"], "user:tester");
    // The user cannot watch the operator's sessions (nothing leaks that way).
    let sid = new_session(&mut op, "echo");
    let e = bob.call("session/subscribe", json!({"sessionId": sid}));
    assert_eq!(code(&e["error"]), -32003, "{e}");
}
