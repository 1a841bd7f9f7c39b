//! Background processes (SPEC §26) through the real binary, the fake model calling the
//! tools: `bash {background: true}` returns at once; `bash_output` read across turns gives
//! what arrived since the last read and nothing twice; the 64 KiB ring keeps the newest
//! bytes and says how many were dropped; the 9th running process is refused (and a start
//! passes again once one is killed); `session/status` lists them; the whole process group
//! is gone, by pid in /proc, after `session/close`, resting, `session/kill`,
//! `session/delete`, the daemon's SIGTERM and its SIGKILL (kill -9); a process ignoring
//! SIGTERM goes too; the sandbox confines a background process as it does `bash`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

/// How long anything the daemon does by itself may take here.
const WAIT: Duration = Duration::from_secs(20);

/// A daemon whose agent `default` runs `bash` without asking; `extra` TOML appended.
fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra)
        .replace("autonomy = \"supervised\"\n", "autonomy = \"full\"\n");
    TestDaemon::start_with(&[], move |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A session of `default`: (id, its cwd).
fn session(c: &mut Conn) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "default"}));
    (
        r["sessionId"].as_str().unwrap().to_string(),
        PathBuf::from(r["workspaceDir"].as_str().unwrap()),
    )
}

/// One turn in which the model calls `tool` with `args`; the tool's result as the model
/// got it (the `tool` message of the provider's next request).
fn call(fake: &Fake, c: &mut Conn, sid: &str, tool: &str, args: Value) -> String {
    fake.push(Scripted::tool_call("c1", tool, args));
    fake.push(Scripted::text("done"));
    let (_, resp) = c.prompt(sid, "go on");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let req = fake.requests().last().cloned().expect("a request");
    let msg = req["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .cloned()
        .unwrap_or_else(|| panic!("no tool message in {req}"));
    msg["content"].as_str().unwrap_or_default().to_owned()
}

/// Starts `command` in the background: (shellId, pid).
fn start_bg(fake: &Fake, c: &mut Conn, sid: &str, command: &str) -> (String, u32) {
    let out = call(
        fake,
        c,
        sid,
        "bash",
        json!({"command": command, "background": true}),
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"));
    let pid = v["pid"].as_u64().unwrap_or_else(|| panic!("{out}")) as u32;
    (v["shellId"].as_str().unwrap().to_owned(), pid)
}

/// `bash_output` as the model got it.
fn read(fake: &Fake, c: &mut Conn, sid: &str, shell: &str) -> Value {
    let out = call(fake, c, sid, "bash_output", json!({"shellId": shell}));
    serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

/// The live (not zombie) processes of process group `pgid`, from /proc.
fn group(pgid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse::<u32>().ok() == Some(pgid) {
            found.push(pid);
        }
    }
    found
}

/// Waits until `cond` holds; false after [`WAIT`].
fn within(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + WAIT;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn appears(path: &Path) -> bool {
    within(|| path.exists())
}

/// A command that starts a process group of several processes, all of them ignoring
/// SIGTERM (so only the SIGKILL after the grace ends them), and says so in `ready`.
fn stubborn(ready: &Path) -> String {
    format!(
        "trap '' TERM; sleep 1000 & sleep 1001 & touch {}; wait",
        ready.display()
    )
}

/// Starts [`stubborn`] in a session and returns its pid once its whole group runs (the
/// positive control of every "gone" below).
fn start_stubborn(fake: &Fake, c: &mut Conn, sid: &str, cwd: &Path) -> u32 {
    let ready = cwd.join("ready");
    let (_, pid) = start_bg(fake, c, sid, &stubborn(&ready));
    assert!(appears(&ready), "the command never started");
    // bash, its watcher, the two sleeps.
    assert!(
        within(|| group(pid).len() >= 4),
        "the group runs: {:?}",
        group(pid)
    );
    pid
}

fn gone(pid: u32) -> bool {
    within(|| group(pid).is_empty())
}

#[test]
fn output_is_read_in_pieces_across_turns() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let t = Instant::now();
    let (shell, pid) = start_bg(
        &fake,
        &mut c,
        &sid,
        "echo one; while [ ! -e go1 ]; do sleep 0.05; done; echo two >&2; \
         while [ ! -e go2 ]; do sleep 0.05; done; echo three; exit 3",
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(!group(pid).is_empty(), "it runs");
    let st = c.result("session/status", json!({"sessionId": sid}));
    let listed = &st["shells"][0];
    assert_eq!(listed["shellId"], shell.as_str(), "{st}");
    assert_eq!(listed["running"], true, "{st}");
    assert_eq!(listed["pid"], pid, "{st}");
    assert!(listed["command"].as_str().unwrap().starts_with("echo one"));
    assert!(listed["startedAt"].as_i64().unwrap() > 1_600_000_000_000);
    assert!(listed.get("exitCode").is_none(), "{st}");

    // Every read gives what came since the one before: together they are the output once.
    let mut pieces: Vec<String> = Vec::new();
    let mut read_until = |c: &mut Conn, want: &str| -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let r = read(&fake, c, &sid, &shell);
            let piece = r["output"].as_str().unwrap().to_owned();
            if !piece.is_empty() {
                pieces.push(piece);
            }
            if pieces.concat().ends_with(want) || Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let r = read_until(&mut c, "one\n");
    assert_eq!(r["running"], true, "{r}");
    // The dashboard reads too (everything kept so far) without taking from the agent.
    let seen = c.result(
        "session/shell_output",
        json!({"sessionId": sid, "shellId": shell}),
    );
    assert_eq!(seen["output"], "one\n", "{seen}");
    assert_eq!(seen["running"], true, "{seen}");
    std::fs::write(cwd.join("go1"), "").unwrap();
    let r = read_until(&mut c, "two\n");
    assert_eq!(r["running"], true, "{r}");
    std::fs::write(cwd.join("go2"), "").unwrap();
    let deadline = Instant::now() + WAIT;
    let last = loop {
        let r = read_until(&mut c, "three\n");
        if r["running"] == false || Instant::now() > deadline {
            break r;
        }
    };
    assert_eq!(pieces.concat(), "one\ntwo\nthree\n", "{pieces:?}");
    assert!(pieces.len() >= 3, "{pieces:?}");
    assert_eq!(last["running"], false, "{last}");
    assert_eq!(last["exitCode"], 3, "{last}");
    // Nothing new: an empty read.
    let r = read(&fake, &mut c, &sid, &shell);
    assert_eq!(r["output"], "", "{r}");
    let st = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(st["shells"][0]["running"], false, "{st}");
    assert_eq!(st["shells"][0]["exitCode"], 3, "{st}");
    assert!(gone(pid), "the group (its watcher) outlived the command");
    // A shell id that does not exist is a clear tool error.
    let out = call(
        &fake,
        &mut c,
        &sid,
        "bash_output",
        json!({"shellId": "nope"}),
    );
    assert!(
        out.starts_with("Error: no background process `nope`"),
        "{out}"
    );
}

#[test]
fn the_ring_keeps_the_newest_64_kib() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let (shell, _) = start_bg(
        &fake,
        &mut c,
        &sid,
        "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END",
    );
    assert!(within(|| {
        let st = c.result("session/status", json!({"sessionId": sid}));
        st["shells"][0]["running"] == false
    }));
    let r = read(&fake, &mut c, &sid, &shell);
    let out = r["output"].as_str().unwrap();
    assert_eq!(out.len(), 65_536, "{r}");
    assert!(out.starts_with('a') && out.ends_with("a\nEND\n"));
    assert_eq!(r["droppedBytes"], 100_005 - 65_536, "{r}");
    assert!(r["note"].as_str().unwrap().contains("dropped"), "{r}");
    // The dashboard's read: the whole ring, whatever the agent read before.
    let seen = c.result(
        "session/shell_output",
        json!({"sessionId": sid, "shellId": shell}),
    );
    assert_eq!(seen["output"].as_str().unwrap(), out, "{seen}");
    assert_eq!(seen["droppedBytes"], 100_005 - 65_536);
    assert_eq!(seen["shellId"], shell.as_str());
    assert_eq!(seen["running"], false);
    assert_eq!(seen["exitCode"], 0);
    let e = c.error(
        "session/shell_output",
        json!({"sessionId": sid, "shellId": "sh99"}),
    );
    assert_eq!(common::code(&e), -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("shellId"), "{e}");
}

#[test]
fn the_ninth_is_refused_until_one_is_killed() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let mut started = Vec::new();
    for _ in 0..8 {
        started.push(start_bg(&fake, &mut c, &sid, "exec sleep 1000"));
    }
    let out = call(
        &fake,
        &mut c,
        &sid,
        "bash",
        json!({"command": "sleep 1000", "background": true}),
    );
    assert!(
        out.starts_with("Error: 8 background processes already run in this session (at most 8)"),
        "{out}"
    );
    let st = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(st["shells"].as_array().unwrap().len(), 8, "{st}");
    // One killed: it goes (group and all), and a start passes again.
    let (first, first_pid) = started[0].clone();
    let out = call(&fake, &mut c, &sid, "bash_kill", json!({"shellId": first}));
    assert!(out.contains("\"killed\":true"), "{out}");
    assert!(gone(first_pid), "bash_kill left {:?}", group(first_pid));
    assert!(within(|| {
        let st = c.result("session/status", json!({"sessionId": sid}));
        st["shells"][0]["running"] == false
    }));
    let (_, ninth) = start_bg(&fake, &mut c, &sid, "exec sleep 1000");
    started.push((String::new(), ninth));
    c.result("session/close", json!({"sessionId": sid}));
    for (_, pid) in &started {
        assert!(gone(*pid), "{pid} outlived the session: {:?}", group(*pid));
    }
}

#[test]
fn close_kills_the_group() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let pid = start_stubborn(&fake, &mut c, &sid, &cwd);
    c.result("session/close", json!({"sessionId": sid}));
    assert!(gone(pid), "left after close: {:?}", group(pid));
}

#[test]
fn resting_kills_the_group() {
    let fake = Fake::start();
    let daemon = start(&fake, "[limits]\nsession_idle_secs = 1\n");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let pid = start_stubborn(&fake, &mut c, &sid, &cwd);
    // The prompting connection was subscribed: let go, the session is idle.
    c.result("session/unsubscribe", json!({"sessionId": sid}));
    let live = |c: &mut Conn| {
        c.result("status", json!({}))["sessionIds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == sid.as_str())
    };
    assert!(within(|| !live(&mut c)), "the session never rested");
    assert!(gone(pid), "left after the session rested: {:?}", group(pid));
}

#[test]
fn kill_and_delete_kill_the_group() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    for method in ["session/kill", "session/delete"] {
        let (sid, cwd) = session(&mut c);
        let pid = start_stubborn(&fake, &mut c, &sid, &cwd);
        c.result(method, json!({"sessionId": sid}));
        assert!(gone(pid), "left after {method}: {:?}", group(pid));
    }
}

#[test]
fn daemon_stop_kills_the_group() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let pid = start_stubborn(&fake, &mut c, &sid, &cwd);
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(WAIT).is_some(), "the daemon did not stop");
    assert!(gone(pid), "left after the daemon stopped: {:?}", group(pid));
}

#[test]
fn daemon_kill_9_kills_the_group() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let pid = start_stubborn(&fake, &mut c, &sid, &cwd);
    daemon.kill_hard();
    assert!(
        gone(pid),
        "left after kill -9 of the daemon: {:?}",
        group(pid)
    );
}

/// Whether this kernel confines `bash` (skipped otherwise, unless `.ci/run` says the
/// kernel has Landlock).
fn landlock_here(c: &mut Conn, sid: &str) -> bool {
    let s = c.result("session/status", json!({"sessionId": sid}))["sandbox"]
        .as_str()
        .unwrap_or("(none)")
        .to_string();
    if s.starts_with("landlock v") {
        return true;
    }
    assert!(
        std::env::var_os("ZEROCLAW_REQUIRE_LANDLOCK").is_none(),
        "the kernel has Landlock but session/status says sandbox = {s}"
    );
    eprintln!("SKIPPED: no Landlock on this kernel (session/status sandbox = {s})");
    false
}

#[test]
fn the_sandbox_confines_a_background_process() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let command = format!(
        "echo x > {o}/denied.txt; echo out=$?; echo y > inside.txt; echo in=$?; \
         echo z > \"$TMPDIR/t\"; echo tmp=$?",
        o = outside.path().display()
    );
    let (shell, _) = start_bg(&fake, &mut c, &sid, &command);
    let deadline = Instant::now() + WAIT;
    let mut text = String::new();
    loop {
        let r = read(&fake, &mut c, &sid, &shell);
        text.push_str(r["output"].as_str().unwrap());
        if r["running"] == false || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("out=1"), "{text}");
    assert!(!outside.path().join("denied.txt").exists(), "{text}");
    // Positive control: the cwd and its private TMPDIR are writable.
    assert!(text.contains("in=0") && text.contains("tmp=0"), "{text}");
    assert!(cwd.join("inside.txt").exists());
}

/// The dashboard (headless Chromium) lists a session's background processes and shows
/// the picked one's output as it grows; the agent's own read position is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs headless Chromium: scripts/browser-test.sh installs it and runs these with --ignored"]
async fn the_dashboard_shows_the_processes_and_their_output() {
    use crate::browser::{Browser, screenshot_dir};
    use crate::dashboard_daily::{Daily, WAIT as PAGE_WAIT, config, login, no_page_problems};
    use zeroclaw_testkit::FakeOpenAi;

    let fake = FakeOpenAi::start().await.expect("fake openai");
    let d = Daily::start(config(Some(&fake.base_url())));
    let mut c = d.admin();
    let r = c.new_session(json!({"agentAlias": "builder"}));
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    let cwd = PathBuf::from(r["workspaceDir"].as_str().unwrap());
    fake.push(Scripted::tool_call(
        "bg1",
        "bash",
        json!({"command": "echo serving on port 8123; while [ ! -e go ]; do sleep 0.05; done; echo GET /index.html 200", "background": true}),
    ));
    fake.push(Scripted::text("Started."));
    let (_, resp) = c.prompt(&sid, "start the server");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");

    let browser = Browser::launch().await;
    let page = browser.page(1440, 900).await;
    login(&page, &d.login_url()).await;
    page.eval(&format!(
        "location.hash = {}",
        json!(format!("#/session/{sid}"))
    ))
    .await;
    page.wait_for(
        "!!document.querySelector('details.shells:not([hidden]) button.shell')",
        PAGE_WAIT,
    )
    .await;
    let row = page.text("details.shells button.shell").await;
    assert!(
        row.contains("sh1") && row.contains("echo serving") && row.contains("running"),
        "{row}"
    );
    page.click("details.shells button.shell").await;
    page.wait_for(
        "document.querySelector('pre.shell-output')?.textContent.includes('serving on port 8123')",
        PAGE_WAIT,
    )
    .await;
    std::fs::write(cwd.join("go"), "").unwrap();
    page.wait_for(
        "document.querySelector('pre.shell-output')?.textContent.includes('GET /index.html 200') && document.querySelector('details.shells button.shell')?.textContent.includes('exit 0')",
        PAGE_WAIT,
    )
    .await;
    page.screenshot(&screenshot_dir().join("background-desktop.png"))
        .await;
    no_page_problems(&page).await;
    // The agent still gets everything on its first read.
    fake.push(Scripted::tool_call(
        "r1",
        "bash_output",
        json!({"shellId": "sh1"}),
    ));
    fake.push(Scripted::text("ok"));
    let (_, resp) = c.prompt(&sid, "what did it say?");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let reqs = fake.requests();
    let got = reqs
        .last()
        .and_then(|r| r["messages"].as_array().cloned())
        .and_then(|m| m.into_iter().rev().find(|m| m["role"] == "tool"))
        .expect("a tool message");
    let v: Value = serde_json::from_str(got["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        v["output"], "serving on port 8123\nGET /index.html 200\n",
        "{v}"
    );
}
