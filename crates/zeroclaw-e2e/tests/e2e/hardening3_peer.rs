//! Third hardening pass (SPEC §17.2) through the real binary: no way back in through the
//! socket, hooks die whole, fences are admin-only.
//!
//! - A `read_only` session's `bash` that calls the daemon (`zeroclaw rpc config/set
//!   hooks.…`, or a raw connect from python) is refused (-32010): config.toml keeps its
//!   bytes and no hook runs, while the same call from the test process succeeds and its
//!   hook does run. The same from a `setsid nohup` orphan that tries after `bash` has
//!   exited (the daemon, a child subreaper, adopted it), from a hook and from an MCP
//!   server. No zombie is left behind (/proc).
//! - A hook that starts `setsid … sleep 1000 &` and exits: the sleep, seen running while
//!   the hook ran, is gone soon after (/proc); the same when the daemon is killed while the
//!   hook runs.
//! - Fences: a non-admin whose `config_write_paths` is `["*"]` cannot set or delete an
//!   agent's workspace, autonomy, tools or sandbox settings, nor anything of `wss` or
//!   `security`, by path, in a batch or from a table above (-32012, the file unchanged);
//!   nor raise a session's autonomy above its agent's with `session/configure`.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{BIN, Conn, Fake, TestDaemon, UidConn, code, is_root, session_config, test_uid};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

/// A daemon on `fake`: agent `default` with `agent_keys` (TOML lines; an `autonomy`
/// replaces the kit's `supervised`), `extra` TOML appended.
fn start(fake: &Fake, agent_keys: &str, extra: &str) -> TestDaemon {
    let mut config = session_config(&fake.server.base_url(), extra);
    if agent_keys.contains("autonomy") {
        config = config.replace("autonomy = \"supervised\"\n", "");
    }
    let config = config.replace(
        "max_tool_iterations = 5\n",
        &format!("max_tool_iterations = 5\n{agent_keys}\n"),
    );
    TestDaemon::start_with(&[], move |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn daemon_pid(daemon: &TestDaemon) -> u32 {
    daemon.child.as_ref().expect("running").id()
}

fn config_bytes(daemon: &TestDaemon) -> Vec<u8> {
    std::fs::read(daemon.config_dir().join("config.toml")).unwrap()
}

/// A session of `default`: (id, its cwd).
fn session(c: &mut Conn) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "default"}));
    (
        r["sessionId"].as_str().unwrap().to_string(),
        PathBuf::from(r["workspaceDir"].as_str().unwrap()),
    )
}

/// Whether this kernel confines `bash` (the `read_only` tests need it; skipped otherwise,
/// unless `.ci/run` says the kernel has Landlock).
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

/// Runs `command` with `bash` in one turn and returns its result text.
fn run_bash(fake: &Fake, c: &mut Conn, sid: &str, command: &str) -> String {
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": command}),
    ));
    fake.push(Scripted::text("done"));
    let (msgs, resp) = c.prompt(sid, "run it");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let results: Vec<String> = common::updates(&msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), 1, "{msgs:?}");
    results[0].clone()
}

/// A plain prompt (no tool) that completes.
fn plain_prompt(fake: &Fake, c: &mut Conn, sid: &str) {
    fake.push(Scripted::text("ok"));
    let (_, resp) = c.prompt(sid, "hello");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
}

/// The shell words of `zeroclaw rpc --socket SOCKET config/set PARAMS`.
fn rpc_config_set(socket: &Path, prop: &str, value: &Value) -> String {
    let params = json!({"prop": prop, "value": value}).to_string();
    format!(
        "{} rpc --socket {} config/set '{}'",
        BIN,
        socket.display(),
        params
    )
}

/// A python one-liner that connects to `socket`, sends `initialize` then `config/set`, and
/// prints every line it gets back (until the daemon stops answering for a second).
fn raw_connect(socket: &Path, prop: &str, value: &Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    let set = json!({"jsonrpc": "2.0", "id": 2, "method": "config/set", "params": {"prop": prop, "value": value}});
    let script = format!(
        "import socket\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.connect({socket:?})\n\
         s.sendall(b'{init}\\n{set}\\n')\n\
         s.settimeout(1)\n\
         out = b''\n\
         try:\n    \
             while out.count(b'\\n') < 2:\n        \
                 d = s.recv(65536)\n        \
                 if not d: break\n        \
                 out += d\n\
         except Exception: pass\n\
         print('RAW:' + out.decode())\n",
        socket = socket.display().to_string(),
    );
    format!("python3 -c \"{}\"", script.replace('"', "\\\""))
}

/// Waits up to `limit` for `path` to exist.
fn appears(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists()
}

/// `(state, ppid)` of `pid` from /proc, `None` once it is gone.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` runs (exists and is no zombie).
fn running(pid: u32) -> bool {
    matches!(proc_state(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

/// Waits up to `limit` for `pid` to stop running.
fn ends_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !running(pid)
}

/// The zombie children of `parent` now.
fn zombies_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(('Z', ppid)) = proc_state(pid)
            && ppid == parent
        {
            out.push(pid);
        }
    }
    out
}

/// Waits up to `limit` for `parent` to have no zombie child.
fn no_zombies_within(parent: u32, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let z = zombies_of(parent);
        if z.is_empty() || Instant::now() > deadline {
            return z;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The refusal every call from a program the daemon started gets.
const REFUSED: &str = "a program the daemon started";

#[test]
fn a_read_only_tool_cannot_call_the_daemon() {
    let fake = Fake::start();
    let daemon = start(&fake, "autonomy = \"read_only\"", "");
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let dir = daemon.config_dir().to_path_buf();
    let marker = dir.join("pwned");
    let hook = json!([{"command": format!("id > {}", marker.display())}]);
    let before = config_bytes(&daemon);

    let out = run_bash(
        &fake,
        &mut c,
        &sid,
        &format!(
            "{} ; echo rc=$? ; {}",
            rpc_config_set(&daemon.socket, "hooks.user_prompt_submit", &hook),
            raw_connect(&daemon.socket, "hooks.user_prompt_submit", &hook)
        ),
    );
    // Both ways were tried and both were answered with a refusal.
    assert!(out.contains(REFUSED), "{out}");
    assert!(out.contains("rc=") && !out.contains("rc=0"), "{out}");
    let raw = out.split("RAW:").nth(1).unwrap_or_default();
    let lines: Vec<Value> = raw
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(lines.len(), 2, "both calls answered: {out}");
    for line in &lines {
        assert_eq!(line["error"]["code"], -32010, "{line}");
    }
    assert_eq!(config_bytes(&daemon), before, "config.toml unchanged");
    assert!(
        daemon.log().contains("every call is refused"),
        "the refusal is logged"
    );

    // Her next plain prompt runs no hook.
    plain_prompt(&fake, &mut c, &sid);
    assert!(!marker.exists(), "a hook set by a tool ran");

    // Control: the same call from the test process (the operator) succeeds, and its hook
    // runs on the next prompt.
    let control = dir.join("control");
    let r = c.result(
        "config/set",
        json!({"prop": "hooks.user_prompt_submit",
               "value": [{"command": format!("id > {}", control.display())}]}),
    );
    assert_eq!(r["set"], true);
    assert_ne!(config_bytes(&daemon), before);
    plain_prompt(&fake, &mut c, &sid);
    assert!(
        appears(&control, Duration::from_secs(5)),
        "the operator's hook ran"
    );
    assert!(!marker.exists());
}

#[test]
fn an_orphan_of_a_tool_cannot_call_the_daemon_after_the_tool_exited() {
    let fake = Fake::start();
    let daemon = start(&fake, "autonomy = \"full\"", "");
    let pid = daemon_pid(&daemon);
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let hook = json!([{"command": "true"}]);
    let before = config_bytes(&daemon);
    // The orphan waits until the tool has exited, then says who its parent is now and
    // tries the daemon; it writes in the session's cwd, where `full` may write.
    let script = format!(
        "sleep 1; echo $$ > orphan.pid; \
         awk '{{print $4}}' /proc/$$/stat > orphan.ppid; \
         {} > orphan.out 2>&1; echo rc=$? >> orphan.out; touch orphan.done",
        rpc_config_set(&daemon.socket, "hooks.stop", &hook)
    );
    let out = run_bash(
        &fake,
        &mut c,
        &sid,
        &format!(
            "setsid nohup sh -c '{}' >/dev/null 2>&1 & echo started",
            script.replace('\'', "'\\''")
        ),
    );
    assert!(out.contains("started"), "{out}");
    assert!(
        appears(&cwd.join("orphan.done"), Duration::from_secs(15)),
        "the orphan never finished"
    );
    let orphan: u32 = std::fs::read_to_string(cwd.join("orphan.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let ppid: u32 = std::fs::read_to_string(cwd.join("orphan.ppid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(ppid, pid, "the orphan was adopted by the daemon");
    let answer = std::fs::read_to_string(cwd.join("orphan.out")).unwrap();
    assert!(answer.contains(REFUSED), "{answer}");
    assert!(!answer.contains("rc=0"), "{answer}");
    assert_eq!(config_bytes(&daemon), before, "config.toml unchanged");
    // Control: the operator's call goes through.
    assert_eq!(
        c.result("config/set", json!({"prop": "hooks.stop", "value": hook}))["set"],
        true
    );
    // The orphan (and its `zeroclaw rpc`) left no zombie.
    assert!(ends_within(orphan, Duration::from_secs(5)));
    assert_eq!(
        no_zombies_within(pid, Duration::from_secs(6)),
        Vec::<u32>::new(),
        "zombie children of the daemon"
    );
}

#[test]
fn a_hook_cannot_call_the_daemon() {
    let fake = Fake::start();
    let daemon = start(&fake, "", "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let out = cwd.join("hook.out");
    let evil = json!([{"command": "true"}]);
    let command = format!(
        "{} > {} 2>&1; echo rc=$? >> {}",
        rpc_config_set(&daemon.socket, "hooks.stop", &evil),
        out.display(),
        out.display()
    );
    c.result(
        "config/set",
        json!({"prop": "hooks.user_prompt_submit", "value": [{"command": command}]}),
    );
    let before = config_bytes(&daemon);
    plain_prompt(&fake, &mut c, &sid);
    let answer = std::fs::read_to_string(&out).expect("the hook ran");
    assert!(answer.contains(REFUSED), "{answer}");
    assert!(!answer.contains("rc=0"), "{answer}");
    assert_eq!(config_bytes(&daemon), before, "config.toml unchanged");
}

#[test]
fn an_mcp_server_cannot_call_the_daemon() {
    let fake = Fake::start();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("mcp.out");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    // The server first tries the daemon, then becomes the test fixture; it writes where
    // its sandbox lets it (`sandbox_writable`).
    let mut daemon = TestDaemon::start_with(&[], |_| {});
    let socket = daemon.socket.clone();
    daemon.kill_hard();
    let hook = json!([{"command": "true"}]);
    let script = format!(
        "{} > {out} 2>&1; echo rc=$? >> {out}; exec python3 {fixture}",
        rpc_config_set(&socket, "hooks.stop", &hook),
        out = out.display(),
        fixture = fixture.display()
    );
    let server = format!(
        "[agents.default.mcp_servers.back]\ncommand = \"/bin/sh\"\nargs = [\"-c\", {script:?}]\n"
    );
    let config = session_config(&fake.server.base_url(), &server).replace(
        "max_tool_iterations = 5\n",
        &format!(
            "max_tool_iterations = 5\nsandbox_writable = [{:?}]\n",
            out_dir.path().display().to_string()
        ),
    );
    std::fs::write(daemon.config_dir().join("config.toml"), config).unwrap();
    daemon.spawn(&[]);
    let before = config_bytes(&daemon);
    let mut c = daemon.client();
    session(&mut c);
    let deadline = Instant::now() + Duration::from_secs(15);
    let answer = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.contains("rc=") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(answer.contains(REFUSED), "{answer}");
    assert!(!answer.contains("rc=0"), "{answer}");
    assert_eq!(config_bytes(&daemon), before, "config.toml unchanged");
}

/// A hook script that starts `setsid … sleep 1000` in the background, writes its pid to
/// `pidfile`, and then waits (at most 20 s) for `go` to exist before it exits.
fn hook_leaving_a_sleeper(pidfile: &Path, go: &Path) -> String {
    format!(
        "setsid sh -c 'echo $$ > {pid}.tmp && mv {pid}.tmp {pid} && exec sleep 1000' \
         </dev/null >/dev/null 2>&1 & \
         i=0; while [ ! -e {go} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 0",
        pid = pidfile.display(),
        go = go.display()
    )
}

fn read_pid(path: &Path) -> u32 {
    assert!(
        appears(path, Duration::from_secs(10)),
        "no {}",
        path.display()
    );
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_hooks_setsid_child_ends_with_the_hook() {
    let fake = Fake::start();
    let daemon = start(&fake, "", "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let (pidfile, go) = (cwd.join("sleeper.pid"), cwd.join("go"));
    c.result(
        "config/set",
        json!({"prop": "hooks.user_prompt_submit",
               "value": [{"command": hook_leaving_a_sleeper(&pidfile, &go)}]}),
    );
    std::thread::scope(|s| {
        let prompt = s.spawn(|| plain_prompt(&fake, &mut c, &sid));
        let sleeper = read_pid(&pidfile);
        // Control: while the hook runs, its setsid child runs, in a session of its own.
        assert!(running(sleeper), "the sleeper runs while the hook does");
        // (its pid is written just before it execs `sleep`: give it a moment to)
        let is_sleep = || {
            std::fs::read(format!("/proc/{sleeper}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with("sleep\u{0}1000"))
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_sleep() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let became_sleep = is_sleep();
        // Let the hook end whatever was seen, so that a failure does not wait for it.
        std::fs::write(&go, b"").unwrap();
        assert!(became_sleep, "the sleeper execs sleep 1000");
        prompt.join().unwrap();
        assert!(
            ends_within(sleeper, Duration::from_secs(2)),
            "the hook's setsid child outlived it: {:?}",
            proc_state(sleeper)
        );
    });
}

#[test]
fn a_hooks_setsid_child_ends_when_the_daemon_is_killed() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "", "");
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let (pidfile, go) = (cwd.join("sleeper.pid"), cwd.join("never"));
    c.result(
        "config/set",
        json!({"prop": "hooks.user_prompt_submit",
               "value": [{"command": hook_leaving_a_sleeper(&pidfile, &go)}]}),
    );
    fake.push(Scripted::text("ok"));
    c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "hello"}),
    );
    let sleeper = read_pid(&pidfile);
    assert!(running(sleeper), "the sleeper runs while the hook does");
    daemon.kill_hard();
    assert!(
        ends_within(sleeper, Duration::from_secs(3)),
        "the hook's setsid child outlived the daemon: {:?}",
        proc_state(sleeper)
    );
}

// ----- fences (SPEC §17.2 "Whatever moves a fence is admin-only") ----------------------

/// A daemon whose socket other uids may reach, with user `wide` (uid `uid`) who may write
/// every path and use every agent.
fn open_daemon(fake: &Fake, uid: u32) -> TestDaemon {
    let extra = format!(
        "[agents.ops]\nprovider = \"echo\"\nautonomy = \"read_only\"\n\
         [permission_profiles.everything]\n\
         grants = {{ config = [\"read\", \"update\", \"delete\"], sessions = [\"create\", \"execute\", \"read\", \"update\"] }}\n\
         allowed_agents = [\"*\"]\n\
         config_write_paths = [\"*\"]\n\
         [users.wide]\nuid = {uid}\npermission_profiles = [\"everything\"]\n"
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config(&fake.server.base_url(), &extra),
        )
        .unwrap();
    });
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    daemon
}

fn refused(u: &mut UidConn, method: &str, params: Value) -> Value {
    let error = u.error(method, params.clone());
    assert_eq!(code(&error), -32012, "{method} {params}: {error}");
    error["data"].clone()
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn fences_are_admin_only_whatever_the_write_paths_say() {
    assert!(is_root(), "needs root to connect as another uid");
    let fake = Fake::start();
    let uid = test_uid();
    let daemon = open_daemon(&fake, uid);
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(
        init["result"]["principal"],
        json!({"id": "user:wide", "admin": false}),
        "{init}"
    );
    let before = config_bytes(&daemon);
    // by its own path
    for (prop, value) in [
        ("agents.default.workspace", json!("/")),
        ("agents.default.autonomy", json!("full")),
        ("agents.ops.autonomy", json!("full")),
        ("agents.ops.tools", json!(["bash", "write_file"])),
        ("agents.default.sandbox", json!("off")),
        ("agents.default.sandbox_writable", json!(["/"])),
        ("wss.bind", json!("0.0.0.0")),
        ("wss.enabled", json!(true)),
        ("wss.allowed_origins", json!(["http://evil.example"])),
        ("wss", json!({"enabled": true, "bind": "0.0.0.0"})),
        ("security.trust_daemon_uid", json!(false)),
        ("security", json!({"trust_daemon_uid": false})),
    ] {
        assert_eq!(
            refused(&mut u, "config/set", json!({"prop": prop, "value": value})),
            json!({"prop": prop}),
            "{prop}"
        );
    }
    // deletes
    for prop in [
        "agents.ops.autonomy",
        "agents.default.tools",
        "wss.bind",
        "security.trust_daemon_uid",
        "agents.ops",
    ] {
        assert_eq!(
            refused(&mut u, "config/delete", json!({"prop": prop})),
            json!({"prop": prop}),
            "{prop}"
        );
    }
    // a batch whose second entry moves a fence
    assert_eq!(
        refused(
            &mut u,
            "config/set-many",
            json!({"sets": [
                {"prop": "agents.default.system_prompt", "value": "hi"},
                {"prop": "agents.default.workspace", "value": "/"},
            ]})
        ),
        json!({"index": 1, "prop": "agents.default.workspace"})
    );
    // tables above: the agent replaced, a new agent, the whole `agents`
    for (prop, value) in [
        (
            "agents.default",
            json!({"provider": "fake", "workspace": "/", "tools": ["bash"]}),
        ),
        (
            "agents.fresh",
            json!({"provider": "echo", "workspace": "/"}),
        ),
        (
            "agents.fresh",
            json!({"provider": "echo", "autonomy": "full"}),
        ),
        (
            "agents",
            json!({"default": {"provider": "fake", "autonomy": "full"}, "ops": {"provider": "echo"}}),
        ),
    ] {
        assert_eq!(
            refused(&mut u, "config/set", json!({"prop": prop, "value": value})),
            json!({"prop": prop}),
            "{prop}"
        );
    }
    assert_eq!(
        config_bytes(&daemon),
        before,
        "every refusal left the file alone"
    );

    // Sessions: she may lower her session's autonomy, never raise it above the agent's.
    let sid = u.result("session/new", json!({"agentAlias": "ops"}))["sessionId"].clone();
    let data = refused(
        &mut u,
        "session/configure",
        json!({"sessionId": sid, "autonomy": "full"}),
    );
    assert_eq!(data, json!({"prop": "autonomy"}));
    let sid2 = u.result("session/new", json!({"agentAlias": "default"}))["sessionId"].clone();
    refused(
        &mut u,
        "session/configure",
        json!({"sessionId": sid2, "autonomy": "full"}),
    );
    let r = u.result(
        "session/configure",
        json!({"sessionId": sid2, "autonomy": "read_only"}),
    );
    assert_eq!(r["autonomy"], "read_only", "{r}");
    let r = u.result(
        "session/configure",
        json!({"sessionId": sid2, "autonomy": "supervised"}),
    );
    assert_eq!(r["autonomy"], "supervised", "back up to the agent's own");

    // Control: what is hers to change still changes; the operator moves the fences.
    assert_eq!(
        u.result(
            "config/set",
            json!({"prop": "agents.default.system_prompt", "value": "be brief"})
        )["set"],
        true
    );
    let mut admin = daemon.client();
    for (prop, value) in [
        ("agents.default.workspace", json!("/tmp")),
        ("wss.bind", json!("127.0.0.2")),
        ("security.trust_daemon_uid", json!(true)),
    ] {
        assert_eq!(
            admin.result("config/set", json!({"prop": prop, "value": value}))["set"],
            true,
            "{prop}"
        );
    }
    let sid3 = admin.new_session(json!({"agentAlias": "ops"}))["sessionId"].clone();
    let r = admin.result(
        "session/configure",
        json!({"sessionId": sid3, "autonomy": "full"}),
    );
    assert_eq!(r["autonomy"], "full");
}
