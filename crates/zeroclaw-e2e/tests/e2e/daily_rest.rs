//! Sessions rest and failures stay in history (SPEC §22), over the real binary: idle live
//! sessions are unloaded after `limits.session_idle_secs` while busy ones (a subscriber, a
//! pending approval, a running turn, an upload open) stay; the 65th session unloads the longest-idle one,
//! and -32001 comes only when all 64 are busy; an ACP session comes back on its next
//! prompt or subscribe with its history; `status` counts; a kill -9 while a session rests
//! loses nothing; a failed turn keeps an `error` row that the model never sees again, and
//! a resumed chat shows it. One measurement (ignored by default) gives the rehydration
//! figure of docs/BENCHMARKS.md.

use crate::common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;
use zeroclaw_testkit::chat_window::ChatWindow;

/// How long a wait for the daemon to do something by itself may take.
const WAIT: Duration = Duration::from_secs(20);

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A daemon whose sessions rest after one idle second.
fn resting(fake: &Fake) -> TestDaemon {
    start(fake, "[limits]\nsession_idle_secs = 1\n")
}

/// The ids of the live sessions `status` shows.
fn live_ids(c: &mut Conn) -> Vec<String> {
    c.result("status", json!({}))["sessionIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn is_live(c: &mut Conn, id: &str) -> bool {
    live_ids(c).iter().any(|s| s == id)
}

/// Polls `status` until `id` is no longer live; panics after [`WAIT`].
fn wait_unloaded(c: &mut Conn, id: &str) {
    let deadline = Instant::now() + WAIT;
    while is_live(c, id) {
        assert!(
            Instant::now() < deadline,
            "session {id} still live after {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads `c` until a `session/update` of `kind` arrives; its params.
fn wait_update(c: &mut Conn, kind: &str) -> Value {
    loop {
        let m = c.recv();
        if m["method"] == "session/update" && m["params"]["type"] == kind {
            return m["params"].clone();
        }
    }
}

fn zc(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(common::BIN)
        .arg("--config-dir")
        .arg(dir)
        .args(args)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run zeroclaw")
}

#[test]
fn idle_sessions_rest_and_busy_ones_stay() {
    let fake = Fake::start();
    let daemon = resting(&fake);
    let mut c = daemon.client();
    for id in ["watched", "asking", "running", "uploading"] {
        c.new_session(json!({"agentAlias": "default", "sessionId": id}));
    }
    // Held by an upload begun on it (and not committed).
    let mut uploader = daemon.client();
    uploader.result(
        "file/upload/begin",
        json!({"sessionId": "uploading", "sizeBytes": 10, "filename": "a.txt"}),
    );
    // Held by a subscriber.
    let mut watcher = daemon.client();
    watcher.result("session/subscribe", json!({"sessionId": "watched"}));
    // Held by an approval nobody answered: the prompting connection unsubscribes, so only
    // the approval holds it.
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "echo hi"}),
    ));
    let mut asker = daemon.client();
    let asked = asker.send_call(
        "session/prompt",
        json!({"sessionId": "asking", "prompt": "run it"}),
    );
    wait_update(&mut asker, "approval_request");
    asker.result("session/unsubscribe", json!({"sessionId": "asking"}));
    // Held by a running turn (the provider answers after a minute).
    fake.push(Scripted::slow(
        Duration::from_secs(60),
        Scripted::text("late"),
    ));
    let mut runner = daemon.client();
    let ran = runner.send_call(
        "session/prompt",
        json!({"sessionId": "running", "prompt": "take your time"}),
    );
    assert!(fake.wait_requests(2, WAIT), "the slow turn never called");
    runner.result("session/unsubscribe", json!({"sessionId": "running"}));
    // Positive control: a sibling made after all three were set up rests in the same run.
    c.new_session(json!({"agentAlias": "default", "sessionId": "idle"}));
    wait_unloaded(&mut c, "idle");
    let live = live_ids(&mut c);
    for id in ["watched", "asking", "running", "uploading"] {
        assert!(live.iter().any(|s| s == id), "{id} rested: {live:?}");
    }
    let counts = c.result("status", json!({}))["sessionCounts"].clone();
    assert_eq!(
        counts,
        json!({"live": 4, "running": 1, "waiting": 1, "idle": 2}),
        "{counts}"
    );
    // Once let go, each rests too (a closed connection drops its uploads).
    watcher.result("session/unsubscribe", json!({"sessionId": "watched"}));
    wait_unloaded(&mut c, "watched");
    drop(uploader);
    wait_unloaded(&mut c, "uploading");
    c.result("session/cancel", json!({"sessionId": "asking"}));
    let r = asker.recv_response(&asked);
    assert_eq!(r["result"]["outcome"], "cancelled", "{r}");
    asker.result("session/unsubscribe", json!({"sessionId": "asking"}));
    wait_unloaded(&mut c, "asking");
    c.result("session/cancel", json!({"sessionId": "running"}));
    let r = runner.recv_response(&ran);
    assert_eq!(r["result"]["outcome"], "cancelled", "{r}");
    runner.result("session/unsubscribe", json!({"sessionId": "running"}));
    wait_unloaded(&mut c, "running");
    // Rested like a close: the history is there, and the row is not killed.
    let list = c.result("session/list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 5, "{list}");
}

#[test]
fn an_acp_session_comes_back_on_prompt_and_subscribe_with_its_history() {
    let fake = Fake::start();
    let daemon = resting(&fake);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "back"}));
    fake.push(Scripted::text("first answer"));
    let (_, r) = c.prompt("back", "remember the word pelican");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    c.result("session/unsubscribe", json!({"sessionId": "back"}));
    wait_unloaded(&mut c, "back");
    fake.push(Scripted::text("second answer"));
    let (_, r) = c.prompt("back", "which word?");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    assert_eq!(r["result"]["content"], "second answer");
    // The provider got the earlier turn back from the store.
    let reqs = fake.requests();
    let last = reqs.last().unwrap().to_string();
    assert!(last.contains("remember the word pelican"), "{last}");
    assert!(last.contains("first answer"), "{last}");
    let rows = c.messages("back");
    let roles: Vec<&str> = rows.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "{rows:?}"
    );
    // A subscribe brings it back too.
    c.result("session/unsubscribe", json!({"sessionId": "back"}));
    wait_unloaded(&mut c, "back");
    let s = c.result("session/subscribe", json!({"sessionId": "back"}));
    assert_eq!(s["subscribed"], true, "{s}");
    assert!(is_live(&mut c, "back"));
}

#[test]
fn a_chat_session_that_rested_ends() {
    let fake = Fake::start();
    let daemon = resting(&fake);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "talk", "mode": "chat"}));
    wait_unloaded(&mut c, "talk");
    let e = c.error(
        "session/prompt",
        json!({"sessionId": "talk", "mode": "chat", "prompt": "hello?"}),
    );
    assert_eq!(code(&e), -32000, "{e}");
}

#[test]
fn the_65th_session_unloads_the_longest_idle_and_all_busy_is_32001() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    for i in 0..64 {
        c.new_session(json!({"agentAlias": "echo", "sessionId": format!("s{i}")}));
    }
    // s0 is the longest idle: it makes room.
    c.new_session(json!({"agentAlias": "echo", "sessionId": "s64"}));
    let live = live_ids(&mut c);
    assert_eq!(live.len(), 64, "{live:?}");
    assert!(!live.iter().any(|s| s == "s0"), "{live:?}");
    // A prompt brings s0 back, unloading s1 (the longest idle now).
    let (_, r) = c.prompt("s0", "back");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    let live = live_ids(&mut c);
    assert!(live.iter().any(|s| s == "s0"), "{live:?}");
    assert!(!live.iter().any(|s| s == "s1"), "{live:?}");
    // Every live session held by a subscriber: nothing may be unloaded.
    let mut holder = daemon.client();
    for id in &live {
        holder.result("session/subscribe", json!({"sessionId": id}));
    }
    let e = c.error(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "s65"}),
    );
    assert_eq!(code(&e), -32001, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("all 64 live sessions are busy")
            && message.contains("zeroclaw sessions close"),
        "{message}"
    );
    assert_eq!(e["data"]["limit"], 64, "{e}");
    // The way out the message names works.
    let out = zc(daemon.config_dir(), &["sessions", "close", "s2"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.new_session(json!({"agentAlias": "echo", "sessionId": "s65"}));
}

#[test]
fn status_counts_for_people_and_ids_in_json() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    for id in ["a", "b", "c"] {
        c.new_session(json!({"agentAlias": "default", "sessionId": id}));
    }
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "echo hi"}),
    ));
    let mut asker = daemon.client();
    let asked = asker.send_call("session/prompt", json!({"sessionId": "a", "prompt": "go"}));
    wait_update(&mut asker, "approval_request");
    fake.push(Scripted::slow(
        Duration::from_secs(60),
        Scripted::text("late"),
    ));
    let mut runner = daemon.client();
    let ran = runner.send_call("session/prompt", json!({"sessionId": "b", "prompt": "go"}));
    assert!(fake.wait_requests(2, WAIT), "the slow turn never called");
    let out = zc(daemon.config_dir(), &["status"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("  live sessions  3 (1 running, 1 waiting for a person, 1 idle)\n"),
        "{text}"
    );
    assert!(!text.contains("a, b"), "ids are for --json: {text}");
    let out = zc(daemon.config_dir(), &["status", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessionIds"], json!(["a", "b", "c"]), "{v}");
    assert_eq!(
        v["sessionCounts"],
        json!({"live": 3, "running": 1, "waiting": 1, "idle": 1})
    );
    c.result("session/cancel", json!({"sessionId": "a"}));
    c.result("session/cancel", json!({"sessionId": "b"}));
    asker.recv_response(&asked);
    runner.recv_response(&ran);
}

#[test]
fn a_kill_9_while_a_session_rests_loses_nothing() {
    let fake = Fake::start();
    let mut daemon = resting(&fake);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "kept"}));
    fake.push(Scripted::text("noted"));
    let (_, r) = c.prompt("kept", "the code is 4711");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    c.result("session/unsubscribe", json!({"sessionId": "kept"}));
    wait_unloaded(&mut c, "kept");
    drop(c);
    daemon.kill_hard();
    daemon.spawn(&[]);
    let mut c = daemon.client();
    let rows = c.messages("kept");
    let contents: Vec<&str> = rows
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["the code is 4711", "noted"], "{rows:?}");
    fake.push(Scripted::text("4711"));
    let (_, r) = c.prompt("kept", "what was the code?");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    let last = fake.requests().last().unwrap().to_string();
    assert!(last.contains("the code is 4711"), "{last}");
}

/// The `error` rows of a transcript, parsed.
fn error_rows(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["role"] == "error")
        .map(|r| serde_json::from_str(r["content"].as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn a_failed_turn_keeps_an_error_row_the_model_never_sees() {
    let fake = Fake::start();
    let daemon = resting(&fake);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "oops"}));
    fake.push(Scripted::throttled(429, "slow down", "0"));
    fake.push(Scripted::http_error(400, "the model exploded"));
    let (_, r) = c.prompt("oops", "try this");
    assert_eq!(r["result"]["outcome"], "failed", "{r}");
    let rows = c.messages("oops");
    let errors = error_rows(&rows);
    assert_eq!(errors.len(), 1, "{rows:?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("the model exploded"),
        "{errors:?}"
    );
    assert_eq!(errors[0]["retries"], 1, "{errors:?}");
    let error_row = rows.iter().find(|r| r["role"] == "error").unwrap();
    assert_eq!(error_row["turnId"], rows[0]["turnId"], "{rows:?}");
    // The next turn, first from memory, then from the store after the session rested:
    // the prompt is sent again, never the error.
    fake.push(Scripted::text("fine"));
    let (_, r) = c.prompt("oops", "again");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    c.result("session/unsubscribe", json!({"sessionId": "oops"}));
    wait_unloaded(&mut c, "oops");
    fake.push(Scripted::text("still fine"));
    let (_, r) = c.prompt("oops", "once more");
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    let reqs = fake.requests();
    for req in &reqs[reqs.len() - 2..] {
        let body = req.to_string();
        assert!(body.contains("try this"), "{body}");
        assert!(!body.contains("the model exploded"), "{body}");
        assert!(!body.contains("\\\"retries\\\""), "{body}");
    }
    // Still in history after all that.
    assert_eq!(error_rows(&c.messages("oops")).len(), 1);
}

#[test]
fn a_resumed_chat_shows_the_error_row() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    // `zeroclaw chat --session ID` resumes the ACP session of that id.
    c.new_session(json!({"agentAlias": "default", "sessionId": "broken"}));
    fake.push(Scripted::throttled(503, "busy", "0"));
    fake.push(Scripted::http_error(401, "invalid api key"));
    let (_, r) = c.prompt("broken", "hello");
    assert_eq!(r["result"]["outcome"], "failed", "{r}");
    c.result("session/close", json!({"sessionId": "broken"}));
    drop(c);
    let mut chat = ChatWindow::open(daemon.config_dir(), &["--session", "broken"]);
    chat.expect("[error] ");
    chat.expect("(after 1 retry)");
    chat.prompt();
    let screen = chat.screen().join("\n");
    let line = screen
        .lines()
        .find(|l| l.contains("[error]"))
        .unwrap_or_default()
        .to_owned();
    assert!(line.contains("invalid api key"), "{screen}");
    assert!(!line.contains('{'), "no raw JSON: {screen}");
    chat.leave();
}

/// docs/BENCHMARKS.md "Sessions rest": what bringing back a 1,000-message ACP session
/// that rested adds to its next prompt (SPEC §22: under 50 ms). Run with
/// `cargo test -p zeroclaw-e2e --test e2e -- --ignored --nocapture daily_rest::rehydration`.
#[test]
#[ignore = "a measurement for docs/BENCHMARKS.md"]
fn rehydration_of_a_1000_message_session() {
    let fake = Fake::start();
    // Sessions rest after one idle second: the measured path is the idle unload.
    let config = session_config(&fake.server.base_url(), "[limits]\nsession_idle_secs = 1\n");
    // The file checkpoints' own timings too (debug lines of their module).
    let log = "info,zeroclaw_sessions::session::file_checkpoints=debug";
    let daemon = TestDaemon::start_env(&[], &[("RUST_LOG", log)], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "long"}));
    for i in 0..500 {
        let (_, r) = c.prompt("long", &format!("message {i} {}", "x".repeat(200)));
        assert_eq!(r["result"]["outcome"], "completed", "{r}");
    }
    let total = c.result("session/messages", json!({"sessionId": "long", "limit": 1}))["total"]
        .as_u64()
        .unwrap();
    assert!(total >= 1000, "{total}");
    let timed = |c: &mut Conn| {
        let t = Instant::now();
        let (_, r) = c.prompt("long", "hi");
        assert_eq!(r["result"]["outcome"], "completed", "{r}");
        t.elapsed()
    };
    let (mut live, mut back) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        live.push(timed(&mut c));
        c.result("session/unsubscribe", json!({"sessionId": "long"}));
        wait_unloaded(&mut c, "long");
        back.push(timed(&mut c));
    }
    live.sort();
    back.sort();
    let (l, b) = (live[live.len() / 2], back[back.len() / 2]);
    // The daemon's own account of each rehydration (its log line).
    let mut inside: Vec<u64> = daemon
        .log()
        .lines()
        .filter(|line| line.contains("session rehydrated"))
        .filter_map(|line| {
            let at = line.find("total_us=")? + "total_us=".len();
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    inside.sort();
    assert_eq!(inside.len(), 9, "one log line per rehydration");
    // The turn-start checkpoint of each timed prompt, live and back in turn: the first
    // one after a reload reads the session's checkpoint index from disk again.
    let starts: Vec<u64> = daemon
        .log()
        .lines()
        .filter(|line| line.contains("file checkpoint recorded") && line.contains("end=false"))
        .filter_map(|line| {
            let at = line.find("elapsed_ms=")? + "elapsed_ms=".len();
            line[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let timed_starts = &starts[starts.len().saturating_sub(18)..];
    let mut live_starts: Vec<u64> = timed_starts.iter().step_by(2).copied().collect();
    let mut back_starts: Vec<u64> = timed_starts.iter().skip(1).step_by(2).copied().collect();
    live_starts.sort();
    back_starts.sort();
    println!(
        "turn-start file checkpoint: live {} ms, first after a reload {} ms (medians)",
        live_starts.get(live_starts.len() / 2).copied().unwrap_or(0),
        back_starts.get(back_starts.len() / 2).copied().unwrap_or(0),
    );
    let median_inside = Duration::from_micros(inside[inside.len() / 2]);
    println!(
        "rehydration: {total} messages; prompt to a live session {l:?}, to an unloaded one \
         {b:?} (median of 9): {:?} added; inside the daemon {median_inside:?} (median; \
         {:?} to {:?})",
        b.saturating_sub(l),
        Duration::from_micros(inside[0]),
        Duration::from_micros(inside[inside.len() - 1]),
    );
    assert!(
        b.saturating_sub(l) < Duration::from_millis(50),
        "{b:?} vs {l:?}"
    );
}

#[test]
fn the_idle_setting_is_checked_and_applies_at_once() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    for bad in [json!(0), json!(-5), json!("soon"), json!(604_801)] {
        let e = c.error(
            "config/set",
            json!({"prop": "limits.session_idle_secs", "value": bad}),
        );
        assert_eq!(code(&e), -32602, "{bad}: {e}");
        assert_eq!(e["data"]["prop"], "limits.session_idle_secs", "{e}");
    }
    // The default keeps an unused session live; a smaller setting rests it without a
    // restart (positive control: the same session, the same daemon).
    c.new_session(json!({"agentAlias": "default", "sessionId": "waiting"}));
    assert_eq!(
        c.result("config/get", json!({"prop": "limits.session_idle_secs"}))["value"],
        900
    );
    assert!(is_live(&mut c, "waiting"));
    let set = Instant::now();
    c.result(
        "config/set",
        json!({"prop": "limits.session_idle_secs", "value": 1}),
    );
    wait_unloaded(&mut c, "waiting");
    // Not a 15 s tick of the old setting later.
    assert!(
        set.elapsed() < Duration::from_secs(10),
        "{:?}",
        set.elapsed()
    );
}
