//! Hooks (SPEC §21.1) through the real binary: `pre_tool_use` denies (the model sees the
//! reason, no approval is asked, the command never runs), allows (no approval asked) and
//! rewrites a call; exit status 2; a hook that hangs is killed at its timeout with its
//! children and the turn goes on; a hook that prints 10 MB; a `stop` hook that continues
//! the turn (and is stopped after 3); `user_prompt_submit`, `post_tool_use`, `pre_compact`;
//! a non-admin writing `hooks.*` gets -32012.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, session_config, update_types, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

/// A daemon on `fake` with `hooks` TOML appended; each `(name, body)` script is written to
/// the config dir (mode 0755) first, and named there as `$DIR/name`.
fn start(fake: &Fake, hooks: &str, scripts: &[(&str, &str)]) -> TestDaemon {
    let scripts: Vec<(String, String)> = scripts
        .iter()
        .map(|(n, b)| (n.to_string(), b.to_string()))
        .collect();
    let base = fake.server.base_url();
    let hooks = hooks.to_string();
    TestDaemon::start_env(&[], &[], move |dir| {
        use std::os::unix::fs::PermissionsExt;
        for (name, body) in &scripts {
            let p = dir.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let hooks = hooks.replace("$DIR", dir.to_str().unwrap());
        std::fs::write(dir.join("config.toml"), session_config(&base, &hooks)).unwrap();
    })
}

/// A session of agent `default` (supervised, on the fake): (id, its cwd).
fn session(c: &mut Conn) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "default"}));
    (
        r["sessionId"].as_str().unwrap().to_string(),
        PathBuf::from(r["workspaceDir"].as_str().unwrap()),
    )
}

fn hook_updates(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["type"] == "hook")
        .collect()
}

/// The tool result the fake provider was sent in request `i` (its last message).
fn tool_result_sent(fake: &Fake, i: usize) -> String {
    let req = &fake.requests()[i];
    let msgs = req["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    last["content"].as_str().unwrap().to_string()
}

const DENY_RM: &str = r#"input=$(cat)
case "$input" in
  *'rm -rf'*) echo '{"decision":"deny","reason":"rm -rf is not allowed here"}' ;;
esac
exit 0"#;

#[test]
fn pre_tool_use_denies_a_call_without_asking_and_the_model_sees_the_reason() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "touch ran.txt; rm -rf nothing"}),
    ));
    fake.push(Scripted::text("understood"));
    let daemon = start(
        &fake,
        "[[hooks.pre_tool_use]]\ncommand = \"$DIR/deny-rm\"\nmatcher = \"bash\"\n",
        &[("deny-rm", DENY_RM)],
    );
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "clean up");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let types = update_types(&msgs);
    assert!(
        !types.contains(&"approval_request".to_string()),
        "{types:?}"
    );
    assert!(!cwd.join("ran.txt").exists(), "the command never ran");
    let sent = tool_result_sent(&fake, 1);
    assert!(sent.contains("rm -rf is not allowed here"), "{sent}");
    let hooks = hook_updates(&msgs);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "pre_tool_use");
    assert_eq!(hooks[0]["outcome"], "deny");
    assert_eq!(hooks[0]["message"], "rm -rf is not allowed here");
    assert!(hooks[0]["command"].as_str().unwrap().ends_with("/deny-rm"));
    assert!(hooks[0]["durationMs"].is_u64());
    // The hook update comes between the call and its result.
    let call = types.iter().position(|t| t == "tool_call").unwrap();
    let hook = types.iter().position(|t| t == "hook").unwrap();
    let result = types.iter().position(|t| t == "tool_result").unwrap();
    assert!(call < hook && hook < result, "{types:?}");
}

#[test]
fn pre_tool_use_allows_a_call_without_asking_and_rewrites_another() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "touch allowed.txt"}),
    ));
    fake.push(Scripted::text("done"));
    fake.push(Scripted::tool_call(
        "c2",
        "bash",
        json!({"command": "touch original.txt"}),
    ));
    fake.push(Scripted::text("done again"));
    let script = r#"input=$(cat)
case "$input" in
  *original.txt*) echo '{"decision":"allow","updatedInput":{"command":"touch rewritten.txt"}}' ;;
  *) echo '{"decision":"allow"}' ;;
esac"#;
    let daemon = start(
        &fake,
        "[[hooks.pre_tool_use]]\ncommand = \"$DIR/allow\"\n",
        &[("allow", script)],
    );
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "make a file");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let types = update_types(&msgs);
    assert!(
        !types.contains(&"approval_request".to_string()),
        "{types:?}"
    );
    assert!(cwd.join("allowed.txt").exists());
    assert_eq!(hook_updates(&msgs)[0]["outcome"], "allow");

    let (msgs, resp) = c.prompt(&sid, "make another");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert!(!update_types(&msgs).contains(&"approval_request".to_string()));
    assert!(
        cwd.join("rewritten.txt").exists(),
        "the rewritten input ran"
    );
    assert!(
        !cwd.join("original.txt").exists(),
        "the original input did not"
    );
}

#[test]
fn exit_status_2_denies_with_stderr_as_the_reason() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "c1",
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    ));
    fake.push(Scripted::text("ok"));
    let daemon = start(
        &fake,
        "[[agents.default.hooks.pre_tool_use]]\ncommand = \"echo 'blocked by policy' >&2; exit 2\"\nmatcher = \"write_.*\"\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "write");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert!(!update_types(&msgs).contains(&"approval_request".to_string()));
    assert!(!cwd.join("x.txt").exists());
    assert!(tool_result_sent(&fake, 1).contains("blocked by policy"));
    assert_eq!(hook_updates(&msgs)[0]["outcome"], "deny");
}

#[test]
fn a_hook_that_hangs_is_killed_at_its_timeout_with_its_children_and_the_turn_goes_on() {
    let fake = Fake::start();
    fake.push(Scripted::text("answer"));
    let daemon = start(
        &fake,
        "[[hooks.user_prompt_submit]]\ncommand = \"(sleep 4; touch $DIR/grandchild) & sleep 60\"\ntimeout_secs = 1\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let t = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hello");
    let took = t.elapsed();
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    let hooks = hook_updates(&msgs);
    assert_eq!(hooks[0]["outcome"], "error");
    assert!(
        hooks[0]["message"].as_str().unwrap().contains("timed out"),
        "{hooks:?}"
    );
    std::thread::sleep(
        Duration::from_secs(5).saturating_sub(t.elapsed()) + Duration::from_millis(500),
    );
    assert!(
        !daemon.config_dir().join("grandchild").exists(),
        "the hook's background child was killed with it"
    );
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap()
}

#[test]
fn a_hook_that_prints_10_mb_does_not_hurt_the_daemon() {
    let fake = Fake::start();
    fake.push(Scripted::text("first"));
    fake.push(Scripted::text("second"));
    // Loud only for the second prompt (its input holds the prompt), so the first one warms the daemon up without it.
    let script = r#"case "$(cat)" in
  *loud*) head -c 10485760 /dev/zero | tr '\0' x; head -c 10485760 /dev/zero >&2 ;;
esac"#;
    let daemon = start(
        &fake,
        "[[hooks.user_prompt_submit]]\ncommand = \"$DIR/loud\"\n",
        &[("loud", script)],
    );
    let pid = daemon.child.as_ref().unwrap().id();
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let (_, resp) = c.prompt(&sid, "quiet");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let before = vm_hwm_kib(pid);
    let t = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "loud");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "second");
    let hooks = hook_updates(&msgs);
    assert_eq!(hooks[0]["outcome"], "ok", "{hooks:?}");
    let grew = vm_hwm_kib(pid).saturating_sub(before);
    eprintln!("daemon VmHWM grew by {grew} KiB over a hook printing 2 x 10 MiB");
    assert!(
        grew < 4 * 1024,
        "the daemon's peak memory grew by {grew} KiB"
    );
}

#[test]
fn a_stop_hook_continues_the_turn_at_most_three_times() {
    let fake = Fake::start();
    for i in 0..5 {
        fake.push(Scripted::text(&format!("answer {i}")));
    }
    let daemon = start(
        &fake,
        "[[hooks.stop]]\ncommand = \"echo '{\\\"decision\\\":\\\"continue\\\",\\\"reason\\\":\\\"the tests fail: fix them\\\"}'\"\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "fix the bug");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "answer 3");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "one call, then three continues");
    for r in &reqs[1..] {
        let last = r["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "user");
        assert_eq!(last["content"], "the tests fail: fix them");
    }
    let stops: Vec<_> = hook_updates(&msgs)
        .into_iter()
        .filter(|h| h["event"] == "stop")
        .collect();
    assert_eq!(stops.len(), 4, "{stops:?}");
    assert!(stops.iter().all(|h| h["outcome"] == "continue"));
}

#[test]
fn a_stop_hook_that_is_satisfied_lets_the_turn_end() {
    let fake = Fake::start();
    fake.push(Scripted::text("first try"));
    fake.push(Scripted::text("fixed"));
    // Continues once: the second time the marker exists.
    let script = r#"cat > /dev/null
if [ -e "$0.once" ]; then exit 0; fi
touch "$0.once"
echo '{"decision":"continue","reason":"1 test failed"}'"#;
    let daemon = start(
        &fake,
        "[[hooks.stop]]\ncommand = \"$DIR/tests\"\n",
        &[("tests", script)],
    );
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "fix");
    assert_eq!(resp["result"]["content"], "fixed", "{resp}");
    assert_eq!(fake.requests().len(), 2);
    let outcomes: Vec<_> = hook_updates(&msgs)
        .iter()
        .map(|h| h["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outcomes, ["continue", "ok"]);
}

#[test]
fn user_prompt_submit_and_post_tool_use_see_the_json_contract_and_add_context() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "c1",
        "read_file",
        json!({"path": "a.txt"}),
    ));
    fake.push(Scripted::text("read it"));
    let daemon = start(
        &fake,
        "[[hooks.user_prompt_submit]]\ncommand = \"cat > $DIR/prompt.json; echo '{\\\"additionalContext\\\":\\\"house rule: be brief\\\"}'\"\n\
         [[hooks.post_tool_use]]\ncommand = \"cat > $DIR/post.json; echo '{\\\"additionalContext\\\":\\\"formatted\\\"}'\"\nmatcher = \"read_file\"\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    std::fs::write(cwd.join("a.txt"), "alpha").unwrap();
    let (_, resp) = c.prompt(&sid, "read a.txt");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let dir = daemon.config_dir();
    let read = |n: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(n)).unwrap()).unwrap()
    };
    let p = read("prompt.json");
    assert_eq!(p["event"], "user_prompt_submit");
    assert_eq!(p["prompt"], "read a.txt");
    assert_eq!(p["sessionId"], sid.as_str());
    assert_eq!(p["agentAlias"], "default");
    assert!(p["turnId"].is_string(), "{p}");
    assert_eq!(Path::new(p["cwd"].as_str().unwrap()), cwd);
    let post = read("post.json");
    assert_eq!(post["toolName"], "read_file");
    assert_eq!(post["toolInput"], json!({"path": "a.txt"}));
    assert!(post["toolOutput"].as_str().unwrap().contains("alpha"));
    assert_eq!(post["isError"], false);
    let first = &fake.requests()[0]["messages"];
    let user = first.as_array().unwrap().last().unwrap();
    assert!(
        user["content"]
            .as_str()
            .unwrap()
            .contains("house rule: be brief"),
        "{user}"
    );
    assert!(tool_result_sent(&fake, 1).ends_with("formatted"));
}

#[test]
fn a_user_prompt_submit_deny_fails_the_turn_with_the_reason() {
    let fake = Fake::start();
    let daemon = start(
        &fake,
        "[[hooks.user_prompt_submit]]\ncommand = \"echo 'no secrets in prompts' >&2; exit 2\"\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, _) = session(&mut c);
    let (_, resp) = c.prompt(&sid, "my password is hunter2");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .unwrap()
            .contains("no secrets in prompts")
    );
    assert!(fake.requests().is_empty(), "the provider was never called");
}

/// Waits up to 10 s for `path` to hold a JSON document.
fn wait_json(path: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(bytes) = std::fs::read(path)
            && let Ok(v) = serde_json::from_slice::<Value>(&bytes)
        {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn session_start_runs_when_a_session_goes_live_and_pre_compact_before_a_compaction() {
    let fake = Fake::start();
    let daemon = start(
        &fake,
        "[[agents.echo.hooks.session_start]]\ncommand = \"cat > $DIR/start.json\"\n\
         [[agents.echo.hooks.pre_compact]]\ncommand = \"cat > $DIR/compact.json\"\n",
        &[],
    );
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "echo", "sessionId": "e1"}));
    assert_eq!(r["sessionId"], "e1");
    let dir = daemon.config_dir();
    let start = wait_json(&dir.join("start.json"));
    assert_eq!(start["event"], "session_start");
    assert_eq!(start["sessionId"], "e1");
    assert_eq!(start["agentAlias"], "echo");
    assert_eq!(start["turnId"], Value::Null);
    for p in ["one", "two", "three", "four"] {
        let (_, resp) = c.prompt("e1", p);
        assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    }
    assert!(!dir.join("compact.json").exists());
    let id = c.send_call("session/compact", json!({"sessionId": "e1"}));
    let (msgs, resp) = c.collect_until(&id);
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let compact = wait_json(&dir.join("compact.json"));
    assert_eq!(compact["event"], "pre_compact");
    assert_eq!(compact["trigger"], "manual");
    assert!(compact["turnId"].is_string(), "{compact}");
    let hooks = hook_updates(&msgs);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "pre_compact");
    assert_eq!(hooks[0]["outcome"], "ok");
    // Sessions of another agent run none of these. Control: a session of `echo` made
    // after it does run its hook, and the file it writes names that session, not the
    // `default` one made first.
    let _ = std::fs::remove_file(dir.join("start.json"));
    c.new_session(json!({"agentAlias": "default", "sessionId": "d1"}));
    c.new_session(json!({"agentAlias": "echo", "sessionId": "e2"}));
    let start = wait_json(&dir.join("start.json"));
    assert_eq!(start["sessionId"], "e2", "{start}");
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_non_admin_writing_hooks_gets_32012_and_an_admin_may() {
    assert!(common::is_root());
    let fake = Fake::start();
    let uid = common::test_uid();
    let users = format!(
        "[permission_profiles.editor]\ngrants = {{ config = [\"read\", \"update\", \"delete\"] }}\n\
         allowed_agents = [\"*\"]\nconfig_write_paths = [\"*\"]\n\n\
         [users.u]\nuid = {uid}\npermission_profiles = [\"editor\"]\n"
    );
    let daemon = start(&fake, &users, &[]);
    {
        use std::os::unix::fs::PermissionsExt;
        for (path, mode) in [
            (daemon.config_dir().to_path_buf(), 0o711),
            (daemon.config_dir().join("data"), 0o711),
            (daemon.socket.clone(), 0o666),
        ] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    let mut u = common::UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert!(init.get("result").is_some(), "{init}");
    let before = std::fs::read(daemon.config_dir().join("config.toml")).unwrap();
    for (prop, value) in [
        ("hooks.pre_tool_use", json!([{"command": "true"}])),
        ("hooks", json!({"stop": [{"command": "true"}]})),
        ("agents.default.hooks.stop", json!([{"command": "true"}])),
    ] {
        let e = u.call("config/set", json!({"prop": prop, "value": value}));
        assert_eq!(common::code(&e["error"]), -32012, "{prop}: {e}");
    }
    let e = u.call("config/delete", json!({"prop": "hooks"}));
    assert_eq!(common::code(&e["error"]), -32012, "{e}");
    assert_eq!(
        std::fs::read(daemon.config_dir().join("config.toml")).unwrap(),
        before
    );
    let mut admin = daemon.client();
    let r = admin.result(
        "config/set",
        json!({"prop": "hooks.pre_tool_use", "value": [{"command": "true", "matcher": "bash"}]}),
    );
    assert_eq!(r["set"], true, "{r}");
    let e = admin.error(
        "config/set",
        json!({"prop": "hooks.stop", "value": [{"command": "true", "matcher": "("}]}),
    );
    assert_eq!(common::code(&e), -32602, "{e}");
}

#[test]
fn a_cancel_kills_the_running_hook_with_its_children() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "touch ran.txt"}),
    ));
    let daemon = start(
        &fake,
        "[[hooks.pre_tool_use]]\ncommand = \"touch $DIR/started; (sleep 3; touch $DIR/after_cancel) & sleep 30\"\n",
        &[],
    );
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c);
    let id = c.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    let dir = daemon.config_dir().to_path_buf();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.join("started").exists() {
        assert!(Instant::now() < deadline, "the hook never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent_at = Instant::now();
    c.send_call("session/cancel", json!({"sessionId": sid}));
    let (_, resp) = c.collect_until(&id);
    assert!(
        sent_at.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent_at.elapsed()
    );
    assert_eq!(resp["result"]["outcome"], "cancelled", "{resp}");
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        !dir.join("after_cancel").exists(),
        "the hook's child was killed"
    );
    assert!(!cwd.join("ran.txt").exists(), "the tool never ran");
}

/// `cargo test -p zeroclaw-e2e --test e2e -- --ignored --nocapture hooks::bench_`: p50 and p95
/// of the time from a call's `tool_call` update to its `tool_result` (a `read_file`), without a
/// hook and with one no-op `pre_tool_use` hook (`true`), as the client sees it.
#[test]
#[ignore = "benchmark, not a check: run with --ignored --nocapture (figures in docs/BENCHMARKS.md)"]
fn bench_no_op_hook_per_tool_call() {
    const ROUNDS: usize = 40;
    let fake = Fake::start();
    let daemon = start(
        &fake,
        "[agents.hooked]\nprovider = \"fake\"\ntools = [\"read_file\"]\n\
         [[agents.hooked.hooks.pre_tool_use]]\ncommand = \"true\"\n",
        &[],
    );
    let mut c = daemon.client();
    let mut measure = |agent: &str| -> Vec<Duration> {
        let r = c.new_session(json!({"agentAlias": agent}));
        let sid = r["sessionId"].as_str().unwrap().to_string();
        let cwd = PathBuf::from(r["workspaceDir"].as_str().unwrap());
        std::fs::write(cwd.join("a.txt"), "alpha").unwrap();
        let mut out = Vec::new();
        for i in 0..=ROUNDS {
            fake.push(Scripted::tool_call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "a.txt"}),
            ));
            fake.push(Scripted::text("ok"));
            let took = c.timed_tool_call(&sid, "read");
            if i > 0 {
                out.push(took);
            }
        }
        out.sort();
        out
    };
    let plain = measure("default");
    let hooked = measure("hooked");
    let pct = |v: &[Duration], p: usize| v[(v.len() * p / 100).min(v.len() - 1)];
    eprintln!(
        "tool_call -> tool_result over {ROUNDS} calls: no hook p50 {:?} p95 {:?}; one no-op hook p50 {:?} p95 {:?}",
        pct(&plain, 50),
        pct(&plain, 95),
        pct(&hooked, 50),
        pct(&hooked, 95)
    );
}
