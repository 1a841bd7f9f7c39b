//! `session/rewind` over the real binary (SPEC §18): turns taken back with their rows kept
//! and flagged, the next prompt sending the provider exactly the context before the
//! rewound turn, `session_rewound` to every subscriber, idempotence, refusals (a turn
//! running or waiting, an unknown turn, another session's turn, another owner), pipelined
//! rewinds, a kill -9 around a rewind, and file checkpoints of a session id used again
//! after a delete.

use crate::common;

use std::time::Duration;

use common::{Conn, Fake, TestDaemon, UidConn, code, is_root, roles, session_config, test_uid};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_env(&[], &[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// Sends `prompt` (the fake answers `answer`); returns the turn id.
fn turn(c: &mut Conn, fake: &Fake, sid: &str, prompt: &str, answer: &str) -> String {
    fake.push(Scripted::text(answer));
    let (_, resp) = c.prompt(sid, prompt);
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    resp["result"]["turnId"].as_str().unwrap().to_owned()
}

/// `(role, content)` of the messages of the provider request `i`.
fn sent(fake: &Fake, i: usize) -> Vec<(String, String)> {
    let body = fake.requests()[i].clone();
    body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_owned(), content.to_owned())
}

/// The conversation's rows: the transcript without the `rewind` rows each rewind leaves
/// (SPEC §22), which the model never gets.
fn talk(c: &mut Conn, sid: &str) -> Vec<Value> {
    c.messages(sid)
        .into_iter()
        .filter(|m| m["role"] != "rewind")
        .collect()
}

/// The roles of the visible rows.
fn role_list(c: &mut Conn, sid: &str) -> Vec<String> {
    c.messages(sid)
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn all_messages(c: &mut Conn, sid: &str) -> Vec<Value> {
    let r = c.result(
        "session/messages",
        json!({"sessionId": sid, "includeRewound": true}),
    );
    r["messages"].as_array().cloned().unwrap_or_default()
}

/// A session `s` with three turns `p1..p3` answered `a1..a3`; returns their turn ids.
fn three_turns(c: &mut Conn, fake: &Fake) -> Vec<String> {
    c.new_session(json!({"agentAlias": "default", "sessionId": "s"}));
    (1..=3)
        .map(|i| turn(c, fake, "s", &format!("p{i}"), &format!("a{i}")))
        .collect()
}

#[test]
fn rewind_takes_turns_back_and_the_next_prompt_sends_the_context_before_them() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);

    // A second client watches the session.
    let mut watcher = daemon.client();
    let sub = watcher.result("session/subscribe", json!({"sessionId": "s"}));
    assert!(sub.is_object(), "{sub}");

    let r = c.result(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[1]}),
    );
    assert_eq!(
        r,
        json!({
            "sessionId": "s",
            "rewoundTurns": [turns[1], turns[2]],
            "prompt": "p2",
            "restoredFiles": [],
            "unrestorable": [],
            "conflicts": []
        })
    );
    // The watcher is told, after the commit.
    let event = loop {
        let msg = watcher.recv();
        if msg["method"] == "session/update" && msg["params"]["type"] == "session_rewound" {
            break msg["params"].clone();
        }
    };
    assert_eq!(event["toTurnId"], json!(turns[1]));
    assert_eq!(event["rewoundTurns"], json!([turns[1], turns[2]]));
    assert_eq!(event["restoredFiles"], json!([]));
    assert_eq!(
        event["eventSeq"], 1,
        "the first event of the rewind's own turn"
    );
    assert_ne!(event["turnId"], json!(turns[1]));

    // Rewound rows are left out, unless asked for, and then flagged; none renumbered.
    assert_eq!(
        roles(&talk(&mut c, "s")),
        [pair("user", "p1"), pair("assistant", "a1")]
    );
    // And the rewind's own row (SPEC §22).
    assert_eq!(role_list(&mut c, "s"), ["user", "assistant", "rewind"]);
    let page = c.result("session/messages", json!({"sessionId": "s"}));
    assert_eq!(page["total"], 3);
    let all = all_messages(&mut c, "s");
    let flags: Vec<(i64, bool)> = all
        .iter()
        .map(|m| (m["seq"].as_i64().unwrap(), m["rewound"] == true))
        .collect();
    assert_eq!(
        flags,
        [
            (1, false),
            (2, false),
            (3, true),
            (4, true),
            (5, true),
            (6, true),
            (7, false)
        ]
    );
    let listed = c.result("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["messageCount"], 3);

    // Twice to the same turn: nothing more.
    let again = c.result(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[1]}),
    );
    assert_eq!(again["rewoundTurns"], json!([]));
    assert_eq!(again["prompt"], "p2");
    assert_eq!(all_messages(&mut c, "s"), all);

    // The provider gets exactly the context before p2, then the new prompt.
    let t4 = turn(&mut c, &fake, "s", "p4", "a4");
    // No event for the rewind that changed nothing. Control: the next turn's events do
    // reach the watcher, and nothing of a rewind came before them.
    loop {
        let msg = watcher.recv();
        if msg["method"] != "session/update" {
            continue;
        }
        assert_ne!(
            msg["params"]["type"], "session_rewound",
            "no event for a rewind that changed nothing: {msg}"
        );
        if msg["params"]["turnId"] == json!(t4) {
            break;
        }
    }
    assert_eq!(
        sent(&fake, 3),
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p4")
        ]
    );
    // Numbering goes on after the rewound rows.
    let rows = c.messages("s");
    assert_eq!(rows[2]["seq"], 7, "{rows:?}");
}

#[test]
fn a_rewind_survives_kill_9_and_recovery_never_sees_half_of_one() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "");
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);
    c.result(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[2]}),
    );
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    assert_eq!(talk(&mut c, "s").len(), 4, "the rewind is durable");
    assert_eq!(c.messages("s").len(), 5, "with its row");
    turn(&mut c, &fake, "s", "p4", "a4");
    assert_eq!(
        sent(&fake, 3),
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p2"),
            pair("assistant", "a2"),
            pair("user", "p4")
        ]
    );

    // Killed right after a rewind was sent: on restart either all of it or none of it,
    // and the context agrees with the visible transcript.
    let t4 = talk(&mut c, "s")[4]["turnId"].as_str().unwrap().to_owned();
    c.send_call(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[1]}),
    );
    std::thread::sleep(Duration::from_millis(5));
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let visible = roles(&talk(&mut c, "s"));
    turn(&mut c, &fake, "s", "p5", "a5");
    let mut want = visible.clone();
    want.push(pair("user", "p5"));
    assert_eq!(sent(&fake, 4), want, "context = visible transcript");
    let whole = [pair("user", "p1"), pair("assistant", "a1")];
    let none = [
        pair("user", "p1"),
        pair("assistant", "a1"),
        pair("user", "p2"),
        pair("assistant", "a2"),
        pair("user", "p4"),
        pair("assistant", "a4"),
    ];
    assert!(
        visible == whole || visible == none,
        "half a rewind after {t4}: {visible:?}"
    );
}

#[test]
fn rewind_is_refused_while_a_turn_runs_or_waits() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);
    let rewind = json!({"sessionId": "s", "turnId": turns[0]});

    // Running (the provider answers late), with a second prompt waiting behind it.
    fake.push(Scripted::slow(
        Duration::from_secs(2),
        Scripted::text("late"),
    ));
    fake.push(Scripted::text("queued"));
    let first = c.send_call(
        "session/prompt",
        json!({"sessionId": "s", "prompt": "slow"}),
    );
    assert!(fake.wait_requests(4, Duration::from_secs(10)));
    let mut other = daemon.client();
    let e = other.error("session/rewind", rewind.clone());
    assert_eq!(code(&e), -32002, "{e}");
    let second = c.send_call(
        "session/prompt",
        json!({"sessionId": "s", "prompt": "next"}),
    );
    let e = other.error("session/rewind", rewind.clone());
    assert_eq!(code(&e), -32002, "{e}");
    c.collect_until(&first);
    c.collect_until(&second);

    // Waiting for an approval.
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "true"}),
    ));
    fake.push(Scripted::text("done"));
    let asked = c.send_call(
        "session/prompt",
        json!({"sessionId": "s", "prompt": "tool"}),
    );
    let request_id = loop {
        let msg = c.recv();
        if msg["params"]["type"] == "approval_request" {
            break msg["params"]["requestId"].clone();
        }
    };
    let e = other.error("session/rewind", rewind.clone());
    assert_eq!(code(&e), -32002, "{e}");
    c.send_call(
        "session/approve",
        json!({"sessionId": "s", "requestId": request_id, "decision": "reject"}),
    );
    c.collect_until(&asked);
    assert_eq!(c.messages("s").len(), 6 + 2 + 2 + 4, "nothing was rewound");

    // Once settled it goes through.
    let r = other.result("session/rewind", rewind);
    assert_eq!(r["rewoundTurns"].as_array().unwrap().len(), 6);
    assert_eq!(role_list(&mut c, "s"), ["rewind"]);
}

#[test]
fn unknown_turns_and_other_sessions_turns_are_refused() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);
    c.new_session(json!({"agentAlias": "default", "sessionId": "other"}));
    let theirs = turn(&mut c, &fake, "other", "q", "r");
    let before = all_messages(&mut c, "s");

    let e = c.error(
        "session/rewind",
        json!({"sessionId": "s", "turnId": "turn_nope"}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("turn_nope"), "{e}");
    let e = c.error(
        "session/rewind",
        json!({"sessionId": "s", "turnId": theirs}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    let e = c.error(
        "session/rewind",
        json!({"sessionId": "missing", "turnId": turns[0]}),
    );
    assert_eq!(code(&e), -32000, "{e}");
    let e = c.error("session/rewind", json!({"sessionId": "s"}));
    assert_eq!(code(&e), -32602, "turnId is required: {e}");
    assert_eq!(all_messages(&mut c, "s"), before, "nothing changed");
    assert_eq!(c.messages("other").len(), 2);
}

/// The responses to `ids`, in the order of `ids` (they may arrive in any order).
fn answers<const N: usize>(c: &mut Conn, ids: [Value; N]) -> [Value; N] {
    let mut out: [Value; N] = std::array::from_fn(|_| Value::Null);
    while out.iter().any(Value::is_null) {
        let msg = c.recv();
        if msg.get("method").is_some() {
            continue;
        }
        if let Some(i) = ids.iter().position(|id| msg.get("id") == Some(id)) {
            out[i] = msg;
        }
    }
    out
}

#[test]
fn pipelined_rewinds_on_one_session_apply_once() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);
    let a = c.send_call(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[1]}),
    );
    let b = c.send_call(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[1]}),
    );
    let [ra, rb] = answers(&mut c, [a, b]);
    let ok: Vec<&Value> = [&ra, &rb]
        .into_iter()
        .filter(|r| r.get("result").is_some())
        .collect();
    assert!(!ok.is_empty(), "{ra} {rb}");
    for r in [&ra, &rb] {
        if let Some(e) = r.get("error") {
            assert_eq!(code(e), -32002, "{e}");
        }
    }
    let taken: usize = ok
        .iter()
        .map(|r| r["result"]["rewoundTurns"].as_array().unwrap().len())
        .sum();
    assert_eq!(taken, 2, "the turns were taken back once: {ra} {rb}");
    assert_eq!(role_list(&mut c, "s"), ["user", "assistant", "rewind"]);

    // From two connections at once as well.
    let mut d = daemon.client();
    let x = c.send_call(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[0]}),
    );
    let y = d.send_call(
        "session/rewind",
        json!({"sessionId": "s", "turnId": turns[0]}),
    );
    let (_, rx) = c.collect_until(&x);
    let (_, ry) = d.collect_until(&y);
    let taken: usize = [&rx, &ry]
        .into_iter()
        .filter_map(|r| r.get("result"))
        .map(|r| r["rewoundTurns"].as_array().unwrap().len())
        .sum();
    assert_eq!(taken, 1, "{rx} {ry}");
    // The first rewind's row went with the turns; the second's is all there is.
    assert_eq!(role_list(&mut c, "s"), ["rewind"]);
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn another_owner_may_not_rewind_fork_or_retitle() {
    assert!(is_root(), "needs root to connect as another uid");
    use std::os::unix::fs::PermissionsExt;
    let uid = test_uid();
    let fake = Fake::start();
    let extra = format!(
        "[permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"default\"]\n\
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
    let mut c = daemon.client();
    let turns = three_turns(&mut c, &fake);
    let before = all_messages(&mut c, "s");
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["admin"], false, "{init}");
    for (method, params) in [
        (
            "session/rewind",
            json!({"sessionId": "s", "turnId": turns[0]}),
        ),
        ("session/fork", json!({"sessionId": "s"})),
        (
            "session/set_title",
            json!({"sessionId": "s", "title": "mine"}),
        ),
    ] {
        let e = u.call(method, params);
        assert_eq!(code(&e["error"]), -32003, "{method}: {e}");
    }
    assert_eq!(all_messages(&mut c, "s"), before);
    let list = c.result("session/list", json!({}));
    assert_eq!(
        list["sessions"].as_array().unwrap().len(),
        1,
        "no fork made"
    );
    assert_eq!(list["sessions"][0]["title"], "p1");
}

/// An agent on the fake provider that runs its tools without asking.
const FILES_AGENT: &str = r#"[agents.files]
provider = "fake"
tools = ["bash", "write_file"]
autonomy = "full"
max_tool_iterations = 5
"#;

/// One turn in which the agent writes `content` to `path` with its write_file tool.
fn write_turn(c: &mut Conn, fake: &Fake, sid: &str, path: &str, content: &str) -> String {
    fake.push(Scripted::tool_call(
        "w1",
        "write_file",
        json!({"path": path, "content": content}),
    ));
    fake.push(Scripted::text("written"));
    let (_, resp) = c.prompt(sid, &format!("write {path}"));
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    resp["result"]["turnId"].as_str().unwrap().to_owned()
}

#[test]
fn a_rewind_puts_back_the_files_the_agents_tools_changed() {
    let fake = Fake::start();
    let daemon = start(&fake, FILES_AGENT);
    let mut c = daemon.client();
    let new = c.new_session(json!({"agentAlias": "files", "sessionId": "f"}));
    let ws = std::path::PathBuf::from(new["workspaceDir"].as_str().unwrap());
    std::fs::write(ws.join("keep.txt"), "v1").unwrap();

    let t1 = write_turn(&mut c, &fake, "f", "keep.txt", "v2");
    let t2 = write_turn(&mut c, &fake, "f", "made.txt", "new");
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "v2");
    assert!(ws.join("made.txt").exists());

    // restoreFiles: false takes the turn back and leaves the files alone.
    let r = c.result(
        "session/rewind",
        json!({"sessionId": "f", "turnId": t2, "restoreFiles": false}),
    );
    assert_eq!(r["restoredFiles"], json!([]));
    assert!(ws.join("made.txt").exists());

    let mut watcher = daemon.client();
    watcher.result("session/subscribe", json!({"sessionId": "f"}));
    let r = c.result("session/rewind", json!({"sessionId": "f", "turnId": t1}));
    assert_eq!(r["rewoundTurns"], json!([t1]));
    let mut restored: Vec<String> = r["restoredFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    restored.sort();
    assert_eq!(restored, ["keep.txt", "made.txt"], "{r}");
    assert_eq!(r["unrestorable"], json!([]));
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "v1");
    assert!(!ws.join("made.txt").exists(), "created since: removed");
    let event = loop {
        let msg = watcher.recv();
        if msg["params"]["type"] == "session_rewound" {
            break msg["params"].clone();
        }
    };
    assert_eq!(event["restoredFiles"], r["restoredFiles"]);
}

/// A client that deletes its session and starts one again under the same id (an editor
/// keeping one id per project does) gets file checkpoints for the new one at once, whether
/// the old session was live or only persisted when it was deleted.
#[test]
fn a_session_deleted_and_started_again_under_its_id_has_its_file_checkpoints() {
    let fake = Fake::start();
    let daemon = start(&fake, FILES_AGENT);
    let mut c = daemon.client();
    for closed_first in [false, true] {
        let new = c.new_session(json!({"agentAlias": "files", "sessionId": "again"}));
        let ws = std::path::PathBuf::from(new["workspaceDir"].as_str().unwrap());
        std::fs::write(ws.join("doc.txt"), "old session").unwrap();
        write_turn(&mut c, &fake, "again", "doc.txt", "old edit");
        if closed_first {
            c.result("session/close", json!({"sessionId": "again"}));
        }
        c.result("session/delete", json!({"sessionId": "again"}));

        let new = c.new_session(json!({"agentAlias": "files", "sessionId": "again"}));
        let ws = std::path::PathBuf::from(new["workspaceDir"].as_str().unwrap());
        std::fs::write(ws.join("doc.txt"), "v1").unwrap();
        let t1 = write_turn(&mut c, &fake, "again", "doc.txt", "v2");
        let r = c.result(
            "session/rewind",
            json!({"sessionId": "again", "turnId": t1}),
        );
        assert_eq!(
            r["unrestorable"],
            json!([]),
            "closed first: {closed_first}: {r}"
        );
        assert_eq!(r["restoredFiles"], json!(["doc.txt"]), "{r}");
        assert_eq!(std::fs::read_to_string(ws.join("doc.txt")).unwrap(), "v1");
        c.result("session/delete", json!({"sessionId": "again"}));
    }
}

/// How many of the `n` files `f{i}.txt` in `dir` hold `content`.
fn files_holding(dir: &std::path::Path, n: usize, content: &str) -> usize {
    (0..n)
        .filter(|i| {
            std::fs::read_to_string(dir.join(format!("f{i}.txt"))).is_ok_and(|s| s == content)
        })
        .count()
}

#[test]
fn a_kill_9_during_a_rewinds_file_restore_never_leaves_half_of_it() {
    const N: usize = 4000;
    let fake = Fake::start();
    let mut daemon = start(&fake, FILES_AGENT);
    let mut c = daemon.client();
    let new = c.new_session(json!({"agentAlias": "files", "sessionId": "k"}));
    let ws = std::path::PathBuf::from(new["workspaceDir"].as_str().unwrap());
    for i in 0..N {
        std::fs::write(ws.join(format!("f{i}.txt")), "v1").unwrap();
    }
    // The agent's bash rewrites every file; the turn start recorded them all as "v1".
    fake.push(Scripted::tool_call(
        "b1",
        "bash",
        json!({"command": format!("for i in $(seq 0 {}); do printf v2 > f$i.txt; done", N - 1)}),
    ));
    fake.push(Scripted::text("rewritten"));
    let (_, resp) = c.prompt("k", "rewrite them");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let t1 = resp["result"]["turnId"].as_str().unwrap().to_owned();
    assert_eq!(files_holding(&ws, N, "v2"), N);

    // Kill the daemon as soon as the restore has put some files back but not all.
    c.send_call("session/rewind", json!({"sessionId": "k", "turnId": t1}));
    let started = std::time::Instant::now();
    let mut seen_midway = None;
    while started.elapsed() < Duration::from_secs(30) {
        let back = files_holding(&ws, N, "v1");
        if back > 0 {
            if back < N {
                seen_midway = Some(back);
            }
            break;
        }
    }
    daemon.kill_hard();
    drop(c);
    let at_kill_v1 = files_holding(&ws, N, "v1");
    eprintln!("killed with {seen_midway:?} then {at_kill_v1} of {N} files put back");

    // Restart: an unfinished restore is completed before clients are served.
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let v1 = files_holding(&ws, N, "v1");
    let v2 = files_holding(&ws, N, "v2");
    assert!(
        (v1 == N && v2 == 0) || (v2 == N && v1 == 0),
        "half a restore after the restart: {v1} files put back, {v2} not"
    );
    if seen_midway.is_some() || at_kill_v1 > 0 {
        assert_eq!(v1, N, "a restore that had begun is completed");
        assert_eq!(
            c.messages("k").len(),
            0,
            "and the history side is rewound too"
        );
    }
}
