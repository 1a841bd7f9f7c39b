//! The sandbox of `bash` and MCP servers (SPEC §21.2) through the real binary, checked by
//! what the kernel let the programs do: in `read_only` a command writes nowhere (not in the
//! workspace, `$HOME` or `/tmp`) but its private `TMPDIR` (removed after the turn) and
//! `/dev/null`; in `full` it writes in the session's cwd and `sandbox_writable` only, not
//! outside them, not through a symlink planted in the cwd, not from a grandchild;
//! `sandbox_network = false` stops a TCP connect to a loopback listener; an MCP server is
//! confined the same way; without Landlock (test hook) `read_only` refuses `bash` and
//! `session/status` says `unavailable`; `sandbox = "off"` runs unconfined; `config/set`
//! checks the settings.
//!
//! The confinement tests skip (with a note) where the kernel has no Landlock; with
//! `ZEROCLAW_REQUIRE_LANDLOCK` set (`.ci/run` sets it where the kernel has Landlock) a skip
//! fails instead.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code, session_config, update_types, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeToolCall, Scripted};

/// A daemon on `fake` whose agent `default` has `agent_keys` (TOML lines; an `autonomy`
/// replaces the kit's `supervised`) added and `extra` TOML appended; `env` for the test
/// hooks.
fn start(fake: &Fake, agent_keys: &str, extra: &str, env: &[(&str, &str)]) -> TestDaemon {
    let mut config = session_config(&fake.server.base_url(), extra);
    if agent_keys.contains("autonomy") {
        config = config.replace("autonomy = \"supervised\"\n", "");
    }
    let config = config.replace(
        "max_tool_iterations = 5\n",
        &format!("max_tool_iterations = 5\n{agent_keys}\n"),
    );
    TestDaemon::start_env(&[], env, move |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A session of `default` in `autonomy`: (id, its cwd).
fn session(c: &mut Conn, autonomy: &str) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "default"}));
    let sid = r["sessionId"].as_str().unwrap().to_string();
    c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": autonomy}),
    );
    (sid, PathBuf::from(r["workspaceDir"].as_str().unwrap()))
}

/// `session/status`'s `sandbox`.
fn sandbox_status(c: &mut Conn, sid: &str) -> String {
    c.result("session/status", json!({"sessionId": sid}))["sandbox"]
        .as_str()
        .unwrap_or("(none)")
        .to_string()
}

/// Whether this kernel confines (else the caller skips, saying so).
fn landlock_here(c: &mut Conn, sid: &str) -> bool {
    let s = sandbox_status(c, sid);
    if s.starts_with("landlock v") {
        return true;
    }
    // .ci/run sets this where the kernel has Landlock: a skip there would hide a daemon
    // that failed to find it.
    assert!(
        std::env::var_os("ZEROCLAW_REQUIRE_LANDLOCK").is_none(),
        "the kernel has Landlock but session/status says sandbox = {s}"
    );
    eprintln!("SKIPPED: no Landlock on this kernel (session/status sandbox = {s})");
    false
}

/// Runs `command` with `bash` in one turn (no approval expected) and returns its result.
fn run(fake: &Fake, c: &mut Conn, sid: &str, command: &str) -> String {
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": command}),
    ));
    fake.push(Scripted::text("done"));
    let (msgs, resp) = c.prompt(sid, "run it");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert!(
        !update_types(&msgs).contains(&"approval_request".to_string()),
        "no approval is asked"
    );
    tool_results(&msgs).remove(0)
}

fn tool_results(msgs: &[Value]) -> Vec<String> {
    updates(msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A name no other test (or run) uses.
fn unique(tag: &str) -> String {
    format!(
        "zc-sandbox-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

fn wait_gone(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn read_only_bash_writes_only_in_its_private_tmpdir() {
    let fake = Fake::start();
    let daemon = start(&fake, "", "", &[]);
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c, "read_only");
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()));
    let in_home = home.join(unique("home"));
    let in_tmp = std::env::temp_dir().join(unique("tmp"));
    let command = format!(
        "touch ws.txt; touch {home}; touch {tmp}; echo private > \"$TMPDIR/p\" && cat \"$TMPDIR/p\"; \
         echo quiet > /dev/null && echo devnull-ok; head -c 4 /dev/zero | wc -c; echo \"tmpdir=$TMPDIR\"",
        home = in_home.display(),
        tmp = in_tmp.display(),
    );
    let out = run(&fake, &mut c, &sid, &command);
    let leaked: Vec<PathBuf> = [cwd.join("ws.txt"), in_home, in_tmp]
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    for p in &leaked {
        let _ = std::fs::remove_file(p);
    }
    assert!(leaked.is_empty(), "read_only wrote {leaked:?}: {out}");
    assert_eq!(out.matches("Permission denied").count(), 3, "{out}");
    assert!(out.contains("private\n"), "{out}");
    assert!(out.contains("devnull-ok\n"), "{out}");
    assert!(out.contains("\n4\n"), "{out}");
    let tmpdir = out
        .lines()
        .find_map(|l| l.strip_prefix("tmpdir="))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no TMPDIR: {out}"));
    assert!(
        tmpdir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("zeroclaw-tmp-"),
        "{tmpdir:?}"
    );
    assert!(
        wait_gone(&tmpdir),
        "the private TMPDIR outlived its turn: {tmpdir:?}"
    );
}

#[test]
fn full_bash_writes_in_its_cwd_and_sandbox_writable_only() {
    let fake = Fake::start();
    let outside = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let keys = format!(
        "sandbox_writable = [{:?}, \"/nonexistent/zeroclaw-sandbox\"]",
        extra.path().display().to_string()
    );
    let daemon = start(&fake, &keys, "", &[]);
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c, "full");
    if !landlock_here(&mut c, &sid) {
        return;
    }
    std::os::unix::fs::symlink(outside.path(), cwd.join("link")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let o = outside.path().display();
    let command = format!(
        "echo a > inside.txt; mkdir -p sub && echo b > sub/deep.txt; echo c > {o}/direct.txt; \
         echo d > link/via-link.txt; sh -c 'sh -c \"echo e > {o}/grandchild.txt\"'; \
         sh -c 'sh -c \"echo f > grand-inside.txt\"'; echo g > {x}/extra.txt; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected",
        x = extra.path().display(),
    );
    let out = run(&fake, &mut c, &sid, &command);
    for name in ["direct.txt", "via-link.txt", "grandchild.txt"] {
        assert!(
            !outside.path().join(name).exists(),
            "{name} was written outside the cwd: {out}"
        );
    }
    assert_eq!(out.matches("Permission denied").count(), 3, "{out}");
    for p in ["inside.txt", "sub/deep.txt", "grand-inside.txt"] {
        assert!(cwd.join(p).exists(), "{p} missing: {out}");
    }
    assert!(extra.path().join("extra.txt").exists(), "{out}");
    // The network is open by default.
    assert!(out.contains("connected"), "{out}");
    assert!(listener.accept().is_ok());
}

#[test]
fn sandbox_network_false_stops_a_tcp_connect() {
    let fake = Fake::start();
    let daemon = start(&fake, "sandbox_network = false", "", &[]);
    let mut c = daemon.client();
    let (sid, _cwd) = session(&mut c, "full");
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = run(
        &fake,
        &mut c,
        &sid,
        &format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected || echo no-connect"),
    );
    assert!(out.contains("no-connect"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    assert!(
        listener.accept().is_err(),
        "the listener was reached: {out}"
    );
}

/// The Python MCP fixture of tests/mcp.rs as server `kv` of agent `default`.
fn kv_server() -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    format!(
        "[agents.default.mcp_servers.kv]\ncommand = \"python3\"\nargs = [{:?}]\n",
        fixture.display().to_string()
    )
}

/// Polls `session/status` until server `kv` is ready.
fn wait_ready(c: &mut Conn, sid: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let status = c.result("session/status", json!({"sessionId": sid}));
        if status["mcpServers"][0]["state"] == "ready" {
            return;
        }
        assert!(Instant::now() < deadline, "kv never ready: {status}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_mcp_server_is_confined_like_bash() {
    let fake = Fake::start();
    let outside = tempfile::tempdir().unwrap();
    let daemon = start(&fake, "autonomy = \"full\"", &kv_server(), &[]);
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "default"}));
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let cwd = PathBuf::from(r["workspaceDir"].as_str().unwrap());
    if !landlock_here(&mut c, &sid) {
        return;
    }
    wait_ready(&mut c, &sid);
    let inside = cwd.join("mcp-inside.txt");
    let denied = outside.path().join("mcp-outside.txt");
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new(
            "c1",
            "kv__write",
            json!({"path": inside.display().to_string()}),
        ),
        FakeToolCall::new(
            "c2",
            "kv__write",
            json!({"path": denied.display().to_string()}),
        ),
        FakeToolCall::new("c3", "kv__write", json!({"path": "$TMPDIR/scratch"})),
    ]));
    fake.push(Scripted::text("done"));
    let (msgs, resp) = c.prompt(&sid, "write");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let results = tool_results(&msgs);
    assert!(results[0].starts_with("wrote:"), "{results:?}");
    assert!(
        results[1].starts_with("denied:") && results[1].contains("Permission denied"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("wrote:") && results[2].contains("zeroclaw-tmp-"),
        "{results:?}"
    );
    assert!(inside.exists());
    assert!(!denied.exists(), "the MCP server wrote outside the cwd");
}

#[test]
fn without_landlock_read_only_refuses_bash_and_status_says_unavailable() {
    let fake = Fake::start();
    let daemon = start(&fake, "", "", &[("ZEROCLAW_TEST_NO_LANDLOCK", "1")]);
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c, "read_only");
    assert_eq!(sandbox_status(&mut c, &sid), "unavailable");
    let out = run(&fake, &mut c, &sid, "touch ran.txt");
    assert!(
        out.starts_with("Refused:") && out.contains("Landlock is unavailable"),
        "{out}"
    );
    assert!(!cwd.join("ran.txt").exists(), "the command ran");
    // The other autonomy levels run unconfined.
    let outside = tempfile::tempdir().unwrap();
    let (sid, _) = session(&mut c, "full");
    let target = outside.path().join("free.txt");
    let out = run(&fake, &mut c, &sid, &format!("touch {}", target.display()));
    assert!(target.exists(), "{out}");
}

#[test]
fn sandbox_off_runs_unconfined_and_read_only_refuses() {
    let fake = Fake::start();
    let daemon = start(&fake, "sandbox = \"off\"", "", &[]);
    let mut c = daemon.client();
    let (sid, _) = session(&mut c, "full");
    assert_eq!(sandbox_status(&mut c, &sid), "off");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("free.txt");
    let out = run(
        &fake,
        &mut c,
        &sid,
        &format!(
            "touch {}; echo \"tmpdir=${{TMPDIR:-unset}}\"",
            target.display()
        ),
    );
    assert!(target.exists(), "{out}");
    assert!(!out.contains("zeroclaw-tmp-"), "{out}");
    let (sid, cwd) = session(&mut c, "read_only");
    let out = run(&fake, &mut c, &sid, "touch ran.txt");
    assert!(
        out.starts_with("Refused:") && out.contains("sandbox is off"),
        "{out}"
    );
    assert!(!cwd.join("ran.txt").exists());
}

#[test]
fn config_set_checks_the_sandbox_settings() {
    let fake = Fake::start();
    let daemon = start(&fake, "", "", &[]);
    let mut c = daemon.client();
    for (prop, value) in [
        ("agents.default.sandbox", json!("sometimes")),
        ("agents.default.sandbox_writable", json!(["relative/dir"])),
        ("agents.default.sandbox_writable", json!("/not/a/list")),
        ("agents.default.sandbox_network", json!("maybe")),
    ] {
        let e = c.error("config/set", json!({"prop": prop, "value": value}));
        assert_eq!(code(&e), -32602, "{prop} = {value}: {e}");
    }
    for (prop, value) in [
        ("agents.default.sandbox", json!("off")),
        ("agents.default.sandbox", json!("auto")),
        ("agents.default.sandbox_writable", json!(["/var/cache/zc"])),
        ("agents.default.sandbox_network", json!(false)),
    ] {
        c.result("config/set", json!({"prop": prop, "value": value}));
    }
    let got = c.result("config/get", json!({"prop": "agents.default"}));
    let agent = got.get("value").unwrap_or(&got);
    assert_eq!(agent["sandbox"], "auto", "{got}");
    assert_eq!(agent["sandbox_writable"], json!(["/var/cache/zc"]), "{got}");
    assert_eq!(agent["sandbox_network"], false, "{got}");
}

/// One `bash` call (`true`) in its own turn: the time from its `tool_call` update to its
/// `tool_result`, as the client reads them.
fn timed_true(fake: &Fake, c: &mut Conn, sid: &str, i: usize) -> Duration {
    fake.push(Scripted::tool_call(
        &format!("c{i}"),
        "bash",
        json!({"command": "true"}),
    ));
    fake.push(Scripted::text("ok"));
    c.timed_tool_call(sid, "run")
}

/// The added cost of the sandbox per `bash` call: 50 calls of `true` (each its own turn,
/// so each confined one also makes and removes its private TMPDIR), sandbox `auto` and
/// `off` interleaved, `full` autonomy, as the client sees them.
#[test]
#[ignore = "benchmark, not a check: run with --ignored --nocapture (figures in docs/BENCHMARKS.md)"]
fn bench_sandbox_cost_per_bash_call() {
    const ROUNDS: usize = 50;
    let fake = Fake::start();
    let daemon = start(
        &fake,
        "autonomy = \"full\"",
        "[agents.open]\nprovider = \"fake\"\ntools = [\"bash\"]\nautonomy = \"full\"\nsandbox = \"off\"\n",
        &[],
    );
    let mut c = daemon.client();
    let mut sid_of = |agent: &str| {
        c.new_session(json!({"agentAlias": agent}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (boxed, open) = (sid_of("default"), sid_of("open"));
    assert!(
        landlock_here(&mut c, &boxed),
        "the benchmark needs Landlock"
    );
    assert_eq!(sandbox_status(&mut c, &open), "off");
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..=ROUNDS {
        let a = timed_true(&fake, &mut c, &boxed, 2 * i);
        let b = timed_true(&fake, &mut c, &open, 2 * i + 1);
        if i > 0 {
            with.push(a);
            without.push(b);
        }
    }
    with.sort();
    without.sort();
    let pct = |v: &[Duration], p: usize| v[(v.len() * p / 100).min(v.len() - 1)];
    eprintln!(
        "bash `true`, tool_call -> tool_result over {ROUNDS} calls: sandbox off p50 {:?} p95 {:?}; \
         sandbox auto (Landlock) p50 {:?} p95 {:?}",
        pct(&without, 50),
        pct(&without, 95),
        pct(&with, 50),
        pct(&with, 95)
    );
}
