//! Daily use at the daemon's edge (SPEC §22): the project directory in `session/list`
//! (`cwd` filter, `cwd` on every entry) and `session/status` (`cwd`, the provider's kind
//! for the chat's banner); `approval_resolved.decidedBy` naming the principal and the face
//! that answered (the name a client gave in `initialize`, `rpc` without one), whichever
//! subscribed connection answered. The chat itself is tested on a pseudo-terminal in
//! `crates/zeroclaw/tests/daily_chat.rs`.

use crate::common;

use common::{Conn, Fake, TestDaemon, code, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn sid(c: &mut Conn, params: Value) -> String {
    c.new_session(params)["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string()
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap_or("?").to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn session_list_filters_on_the_directory_and_status_says_where() {
    let daemon = TestDaemon::start();
    let projects = tempfile::tempdir().unwrap();
    let a = projects.path().join("a");
    let b = projects.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let link = projects.path().join("link-to-a");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let a_real = a.canonicalize().unwrap().display().to_string();

    let mut c = daemon.client();
    let a1 = sid(&mut c, json!({"agentAlias": "default", "cwd": a}));
    let a2 = sid(&mut c, json!({"agentAlias": "default", "cwd": link}));
    let b1 = sid(&mut c, json!({"agentAlias": "default", "cwd": b}));
    let w1 = sid(&mut c, json!({"agentAlias": "default"}));

    let list = c.result("session/list", json!({"cwd": a}));
    let mut want = vec![a1.clone(), a2.clone()];
    want.sort();
    assert_eq!(ids(&list), want, "{list}");
    for s in list["sessions"].as_array().unwrap() {
        assert_eq!(s["cwd"], a_real.as_str(), "{list}");
    }
    // Named through a link: the same directory.
    let via_link = c.result("session/list", json!({"cwd": link}));
    assert_eq!(ids(&via_link), want, "{via_link}");
    let list = c.result("session/list", json!({"cwd": b}));
    assert_eq!(ids(&list), std::slice::from_ref(&b1), "{list}");
    // Unfiltered: all four, each saying where it works (the workspace when none was
    // given).
    let all = c.result("session/list", json!({}));
    assert_eq!(ids(&all).len(), 4, "{all}");
    for s in all["sessions"].as_array().unwrap() {
        assert!(
            s["cwd"].as_str().is_some_and(|d| d.starts_with('/')),
            "{all}"
        );
    }
    let none = c.result(
        "session/list",
        json!({"cwd": projects.path().join("empty")}),
    );
    assert_eq!(ids(&none), Vec::<String>::new(), "{none}");

    let status = c.result("session/status", json!({"sessionId": a2}));
    assert_eq!(status["cwd"], a_real.as_str(), "{status}");
    assert_eq!(status["provider"], "echo", "{status}");
    let status = c.result("session/status", json!({"sessionId": w1}));
    let workspace = status["cwd"].as_str().unwrap_or("");
    assert!(workspace.ends_with("/workspace"), "{status}");

    // Resumed naming another directory: listed under that one from then on.
    c.result("session/close", json!({"sessionId": b1}));
    c.new_session(json!({"agentAlias": "default", "sessionId": b1, "cwd": a}));
    let list = c.result("session/list", json!({"cwd": a}));
    assert!(ids(&list).contains(&b1), "{list}");
    let list = c.result("session/list", json!({"cwd": b}));
    assert_eq!(ids(&list), Vec::<String>::new(), "{list}");

    // A relative directory is refused, naming the field.
    let e = c.error("session/list", json!({"cwd": "a"}));
    assert_eq!(code(&e), -32602, "{e}");
    assert!(
        e["message"].as_str().unwrap_or("").starts_with("cwd:"),
        "{e}"
    );
}

/// Initializes `c` as a client named `name` (none: no `clientInfo`).
fn initialize(c: &mut Conn, name: Option<&str>) {
    let mut params = json!({"protocolVersion": 1});
    if let Some(name) = name {
        params["clientInfo"] = json!({"name": name, "version": "1"});
    }
    let init = c.call("initialize", params);
    assert!(init.get("result").is_some(), "{init}");
}

/// Reads `c` until an update of `kind`; returns its params.
fn until_update(c: &mut Conn, kind: &str) -> Value {
    loop {
        let m = c.recv();
        if m["method"] == "session/update" && m["params"]["type"] == kind {
            return m["params"].clone();
        }
    }
}

#[test]
fn approval_resolved_says_who_decided_from_which_face() {
    let fake = Fake::start();
    for n in 1..=2 {
        fake.push(Scripted::tool_call(
            &format!("call_{n}"),
            "bash",
            json!({"command": format!("echo run-{n}")}),
        ));
        fake.push(Scripted::text("done"));
    }
    let config = session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    // The prompter calls itself `my-editor`; the watcher gives no name.
    let mut editor = daemon.connect();
    initialize(&mut editor, Some("my-editor"));
    let mut watcher = daemon.connect();
    initialize(&mut watcher, None);
    let s = sid(&mut editor, json!({"agentAlias": "default"}));
    let sub = watcher.result("session/subscribe", json!({"sessionId": s}));
    assert!(sub.get("activeTurnId").is_some(), "{sub}");

    // The watcher, not the prompter, gets the request as it happens and answers it.
    let prompt = editor.send_call("session/prompt", json!({"sessionId": s, "prompt": "go"}));
    let asked = until_update(&mut watcher, "approval_request");
    let request = asked["requestId"].as_str().unwrap().to_string();
    let ok = watcher.result(
        "session/approve",
        json!({"sessionId": s, "requestId": request, "decision": "allow_once"}),
    );
    assert_eq!(ok["acknowledged"], true, "{ok}");
    let (seen, done) = editor.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    let resolved = seen
        .iter()
        .find(|m| m["params"]["type"] == "approval_resolved")
        .map(|m| m["params"].clone())
        .unwrap_or_else(|| panic!("no approval_resolved in {seen:?}"));
    assert_eq!(resolved["decision"], "allow_once", "{resolved}");
    assert_eq!(
        resolved["decidedBy"],
        json!({"principal": "operator", "client": "rpc"}),
        "{resolved}"
    );
    let watched = until_update(&mut watcher, "approval_resolved");
    assert_eq!(watched["decidedBy"], resolved["decidedBy"], "{watched}");

    // The prompter answers the next one itself: its own name.
    let prompt = editor.send_call("session/prompt", json!({"sessionId": s, "prompt": "again"}));
    let asked = until_update(&mut editor, "approval_request");
    let request = asked["requestId"].as_str().unwrap().to_string();
    let approve = editor.send_call(
        "session/approve",
        json!({"sessionId": s, "requestId": request, "decision": "reject"}),
    );
    let (seen, _) = editor.collect_until(&approve);
    let (rest, done) = editor.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    let resolved = seen
        .iter()
        .chain(rest.iter())
        .find(|m| m["params"]["type"] == "approval_resolved")
        .map(|m| m["params"].clone())
        .unwrap_or_else(|| panic!("no approval_resolved in {seen:?} {rest:?}"));
    assert_eq!(
        resolved["decidedBy"],
        json!({"principal": "operator", "client": "my-editor"}),
        "{resolved}"
    );
    assert_eq!(resolved["decision"], "reject", "{resolved}");
}
