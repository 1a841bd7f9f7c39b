//! MCP tool servers over the real binary (SPEC §16), with a small Python MCP server
//! (tests/fixtures/mcp_server.py, run with `python3`): tools offered as SERVER__TOOL,
//! approval only for tools not annotated read-only, results reaching the model, a crashed
//! server reported and its tools withdrawn while the turn goes on, no server process left
//! after close or daemon stop, and `session/new` not waiting for a slow server.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code, session_config, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeToolCall, Scripted};

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server.py")
        .display()
        .to_string()
}

/// The Python interpreter itself (not a version-manager shim, whose own start-up would
/// load the machine while `session/new` is measured).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `[agents.default.mcp_servers.kv]` running the fixture, writing its pids to `pidfile`.
/// With a delay the server is a shell that sleeps first, then becomes the fixture: it takes
/// that long to start without using the CPU meanwhile.
fn kv_server(pidfile: &Path, delay_secs: f64) -> String {
    let (command, args) = if delay_secs > 0.0 {
        (
            "/bin/sh".to_string(),
            format!(
                r#""-c", "sleep {delay_secs}; exec '{}' '{}'""#,
                python(),
                fixture()
            ),
        )
    } else {
        (python(), format!("{:?}", fixture()))
    };
    format!(
        r#"[agents.default.mcp_servers.kv]
command = "{command}"
args = [{args}]
env = {{ MCP_PIDFILE = "{}", MCP_HELPER = "1" }}
"#,
        pidfile.display()
    )
}

/// A daemon whose agent `default` has the `kv` server; returns it with the pid file path.
pub(crate) fn start(fake: &Fake, delay_secs: f64) -> (TestDaemon, PathBuf) {
    let pids = tempfile::tempdir().unwrap().keep();
    let pidfile = pids.join("kv.pid");
    // The server writes its pid file outside the session's cwd: the sandbox (SPEC §21.2)
    // must let it.
    let config = session_config(&fake.server.base_url(), &kv_server(&pidfile, delay_secs)).replace(
        "max_tool_iterations = 5\n",
        &format!(
            "max_tool_iterations = 5\nsandbox_writable = [{:?}]\n",
            pids.display().to_string()
        ),
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    (daemon, pidfile)
}

pub(crate) fn new_session(c: &mut Conn) -> String {
    let r = c.new_session(json!({"agentAlias": "default"}));
    r["sessionId"].as_str().unwrap().to_string()
}

/// Polls `session/status` until the named server is in `state`, for as long as the daemon
/// gives a server to be ready (30 s): on a loaded machine twenty servers starting at once
/// took longer than 10 s once (`.ci/run`, stop 40), still "starting", not failed.
pub(crate) fn wait_server(c: &mut Conn, sid: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = c.result("session/status", json!({"sessionId": sid}));
        let server = status["mcpServers"][0].clone();
        if server["state"] == state {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "server never became {state}: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's and its helper's pids, once the pid file is written.
fn read_pids(pidfile: &Path) -> (i32, i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(pidfile) {
            let mut it = text.split_whitespace().filter_map(|p| p.parse().ok());
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                return (a, b);
            }
        }
        assert!(
            Instant::now() < deadline,
            "no pid file {}",
            pidfile.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Running: /proc has the pid in a state other than zombie / dead.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

fn wait_dead(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "MCP processes still running: {:?}",
            pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Prompts, answering approval requests with `allow_once`; returns (updates, answer,
/// tools named in approval requests).
fn prompt_approving(c: &mut Conn, sid: &str, prompt: &str) -> (Vec<Value>, Value, Vec<String>) {
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": prompt}),
    );
    let mut seen = Vec::new();
    let mut asked = Vec::new();
    loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            return (seen, msg, asked);
        }
        if msg["params"]["type"] == "approval_request" {
            asked.push(
                msg["params"]["toolName"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
            );
            let rid = msg["params"]["requestId"].clone();
            c.send_call(
                "session/approve",
                json!({"sessionId": sid, "requestId": rid, "decision": "allow_once"}),
            );
        }
        seen.push(msg);
    }
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn mcp_tools_run_with_approval_only_when_not_read_only_and_stop_with_the_session() {
    let fake = Fake::start();
    let (daemon, pidfile) = start(&fake, 0.0);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let server = wait_server(&mut c, &sid, "ready");
    assert_eq!(
        server["tools"],
        json!(["kv__lookup", "kv__store", "kv__write", "kv__crash"])
    );
    let (server_pid, helper_pid) = read_pids(&pidfile);
    assert_eq!(server["pid"], server_pid);
    assert!(alive(server_pid) && alive(helper_pid));

    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c1", "kv__lookup", json!({"key": "alpha"})),
        FakeToolCall::new("c2", "kv__store", json!({"value": "beta"})),
    ]));
    fake.push(Scripted::text("all done"));
    let (msgs, answer, asked) = prompt_approving(&mut c, &sid, "use the tools");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert_eq!(
        asked,
        vec!["kv__store".to_string()],
        "approval only for store"
    );
    let results: Vec<(String, String)> = updates(&msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| {
            (
                u["name"].as_str().unwrap().to_string(),
                u["rawOutput"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("kv__lookup".to_string(), "found:alpha".to_string()),
            ("kv__store".to_string(), "stored:beta".to_string()),
        ]
    );
    // The model was offered the tools and got the results.
    let reqs = fake.requests();
    let offered = tool_names(&reqs[0]);
    assert!(
        offered.contains(&"kv__lookup".to_string()) && offered.contains(&"kv__store".to_string()),
        "{offered:?}"
    );
    let tool_msgs: Vec<(String, String)> = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        tool_msgs,
        vec![
            ("c1".to_string(), "found:alpha".to_string()),
            ("c2".to_string(), "stored:beta".to_string()),
        ]
    );

    // read_only autonomy: the read-only tool runs, the other is refused without asking.
    c.result(
        "session/configure",
        json!({"sessionId": sid, "autonomy": "read_only"}),
    );
    fake.push(Scripted::tool_calls(vec![
        FakeToolCall::new("c3", "kv__lookup", json!({"key": "gamma"})),
        FakeToolCall::new("c4", "kv__store", json!({"value": "delta"})),
    ]));
    fake.push(Scripted::text("ok"));
    let (msgs, answer, asked) = prompt_approving(&mut c, &sid, "again");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert!(asked.is_empty(), "{asked:?}");
    let outputs: Vec<String> = updates(&msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outputs[0], "found:gamma");
    assert!(outputs[1].starts_with("Refused"), "{outputs:?}");

    // Closing the session stops the whole process group (the helper too).
    c.result("session/close", json!({"sessionId": sid}));
    wait_dead(&[server_pid, helper_pid]);
}

#[test]
fn a_crashed_server_is_reported_its_tools_withdrawn_and_the_turn_goes_on() {
    let fake = Fake::start();
    let (daemon, pidfile) = start(&fake, 0.0);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    wait_server(&mut c, &sid, "ready");
    let (server_pid, helper_pid) = read_pids(&pidfile);

    // The server dies in the middle of a call; a later call of one of its tools gets an
    // error result; the turn completes.
    fake.push(Scripted::tool_call("c1", "kv__crash", json!({})));
    fake.push(Scripted::tool_call("c2", "kv__lookup", json!({"key": "k"})));
    fake.push(Scripted::text("carried on"));
    let (msgs, answer, asked) = prompt_approving(&mut c, &sid, "crash it");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    assert_eq!(answer["result"]["content"], "carried on");
    assert_eq!(asked, vec!["kv__crash".to_string()]);
    let outputs: Vec<String> = updates(&msgs)
        .iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outputs.len(), 2, "{msgs:?}");
    assert!(
        outputs.iter().all(|o| o.starts_with("Error")),
        "{outputs:?}"
    );
    assert!(outputs[1].contains("not running"), "{outputs:?}");

    let server = wait_server(&mut c, &sid, "failed");
    assert!(
        server["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{server}"
    );
    assert_eq!(server["tools"], json!([]));
    // Its tools are no longer offered.
    let reqs = fake.requests();
    assert!(tool_names(&reqs[0]).contains(&"kv__crash".to_string()));
    let last = tool_names(reqs.last().unwrap());
    assert!(!last.iter().any(|t| t.starts_with("kv__")), "{last:?}");
    assert!(last.contains(&"bash".to_string()));
    // What the crash left behind in the group is gone too.
    wait_dead(&[server_pid, helper_pid]);
}

#[test]
fn daemon_stop_leaves_no_server_process() {
    let fake = Fake::start();
    let (mut daemon, pidfile) = start(&fake, 0.0);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    wait_server(&mut c, &sid, "ready");
    let (server_pid, helper_pid) = read_pids(&pidfile);
    drop(c);
    daemon.signal(libc::SIGTERM);
    let status = daemon.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(status.success(), "{status:?}");
    wait_dead(&[server_pid, helper_pid]);
}

#[test]
fn session_servers_are_for_admins_and_a_slow_server_never_delays_session_new() {
    let fake = Fake::start();
    // The agent's server takes 2 s to start.
    let (daemon, pidfile) = start(&fake, 2.0);
    let mut c = daemon.client();

    let measure = |c: &mut Conn, agent: &str| {
        let mut times = Vec::new();
        let mut sids = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            let r = c.new_session(json!({"agentAlias": agent}));
            times.push(t.elapsed());
            sids.push(r["sessionId"].as_str().unwrap().to_string());
            std::thread::sleep(Duration::from_millis(20));
        }
        times.sort();
        (times, sids)
    };
    let (base, base_sids) = measure(&mut c, "echo");
    for sid in &base_sids {
        c.result("session/close", json!({"sessionId": sid}));
    }
    let (times, sids) = measure(&mut c, "default");
    let p50 = times[times.len() / 2];
    let max = times[times.len() - 1];
    eprintln!(
        "session/new p50: {:?} without MCP, {p50:?} with a 2 s MCP server (max {max:?}; 20 each)",
        base[base.len() / 2]
    );
    assert!(
        max < Duration::from_millis(1000),
        "session/new waited for the server: {times:?}"
    );
    // The newest session's server is still in its 2 s start.
    let newest = sids.last().unwrap();
    let status = c.result("session/status", json!({"sessionId": newest}));
    assert_eq!(status["mcpServers"][0]["state"], "starting", "{status}");
    // ... and is ready once it has started.
    wait_server(&mut c, newest, "ready");
    for sid in &sids {
        c.result("session/close", json!({"sessionId": sid}));
    }

    // mcpServers in session/new (ACP shape): admins may.
    let sid = c.new_session(json!({
        "agentAlias": "echo",
        "mcpServers": [{"name": "extra", "command": "python3", "args": [fixture()],
                        "env": [{"name": "MCP_START_DELAY", "value": "0"}]}],
    }))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let server = wait_server(&mut c, &sid, "ready");
    assert_eq!(server["name"], "extra");
    assert_eq!(
        server["tools"],
        json!([
            "extra__lookup",
            "extra__store",
            "extra__write",
            "extra__crash"
        ])
    );
    let e = c.error(
        "session/new",
        json!({"agentAlias": "echo", "mcpServers": [{"name": "a__b", "command": "x"}]}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    c.result("session/close", json!({"sessionId": sid}));

    // Non-admin principals may not (this uid becomes a plain user from here on); nor may
    // they read or configure the operator's session.
    c.new_session(json!({"agentAlias": "echo", "sessionId": "ops"}));
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    c.result(
        "config/set-many",
        json!({"sets": [
            {"prop": "permission_profiles.user.grants",
             "value": {"sessions": ["create", "read", "update", "execute"]}},
            {"prop": "permission_profiles.user.allowed_agents", "value": ["echo"]},
            {"prop": "users.me.uid", "value": uid},
            {"prop": "users.me.permission_profiles", "value": ["user"]},
        ]}),
    );
    c.result(
        "config/set",
        json!({"prop": "security.trust_daemon_uid", "value": false}),
    );
    let e = c.error(
        "session/new",
        json!({"agentAlias": "echo",
               "mcpServers": [{"name": "x", "command": "python3", "args": [fixture()]}]}),
    );
    assert_eq!(code(&e), -32012, "{e}");
    let e = c.error(
        "session/configure",
        json!({"sessionId": "ops", "autonomy": "full"}),
    );
    assert_eq!(code(&e), -32003, "{e}");
    let e = c.error("session/status", json!({"sessionId": "ops"}));
    assert_eq!(code(&e), -32003, "{e}");
    drop(pidfile);
}

/// SPEC §17.1, secrets are masked wherever they are read: a server that fails saying its
/// token (on stderr) fails in `session/status` with the token masked, and with what it
/// said (read before the error is made, though the process was quicker).
#[test]
fn a_failed_servers_error_never_shows_its_env_values() {
    let fake = Fake::start();
    let server = r#"[agents.default.mcp_servers.gh]
command = "/bin/sh"
args = ["-c", "echo \"token $GH_TOKEN refused (GH_TOKEN=$GH_TOKEN)\" >&2; exit 3"]
env = { GH_TOKEN = "ghp_TOPSECRET", DEBUG = "1" }
"#;
    let config = session_config(&fake.server.base_url(), server);
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let failed = wait_server(&mut c, &sid, "failed");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(!error.contains("ghp_TOPSECRET"), "{error}");
    assert!(
        error.contains("token *** refused (GH_TOKEN=***)"),
        "{error}"
    );
}
