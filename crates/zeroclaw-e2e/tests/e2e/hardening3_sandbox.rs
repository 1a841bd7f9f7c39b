//! The sandbox of the agent's programs, third pass (SPEC §17.2 "Read only means read only"
//! and the reads of "No way back in"), through the real binary, each proven from the file
//! system and /proc rather than from the tool's exit codes alone:
//!
//! - a `read_only` bash holds no capability (CapEff, CapPrm, CapBnd of its own
//!   /proc/self/status), cannot change the mode, owner or extended attributes of a root
//!   0600 file outside every writable root (stat from the test; another uid still cannot
//!   write it), cannot kill another uid's process (alive in /proc), and cannot signal the
//!   daemon (a SIGTERM it sends leaves the daemon serving);
//! - it cannot read `/etc/shadow`, the daemon's `config.toml` (holding an `api_key`), its
//!   data dir, a `sandbox_deny_read` path or `~/.ssh` of the daemon's `HOME`, also not
//!   through `/proc/1/root/…`, `/proc/<daemon>/root/…` or `/proc/self/root/…`, while an
//!   allowed file reads through each of these and the workspace under the config dir stays
//!   readable;
//! - a `full` bash whose cwd is the config dir writes beneath it (the agents' workspaces)
//!   but not `config.toml`;
//! - the environment of bash, confined or not, holds no provider key, token or
//!   `ZEROCLAW_*` variable, only the short list and the agent's `env` allowlist.
//!
//! The tests that act as another uid or read root files carry the `needs root` marker
//! (`.ci/run` runs them as root with `--ignored`). Where the kernel has no Landlock they
//! skip, unless `ZEROCLAW_REQUIRE_LANDLOCK` is set (then a skip fails). Linux only (Landlock,
//! /proc, abstract sockets).
#![cfg(target_os = "linux")]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{
    Conn, Fake, TestDaemon, UidConn, code, is_root, session_config, test_uid, update_types, updates,
};
use serde_json::json;
use zeroclaw_testkit::Scripted;

/// The provider key written in `config.toml`: no tool may read it.
const API_KEY: &str = "sk-h3-sandbox-config-secret";

/// A daemon on `fake` whose agent `default` has `agent_keys` added (an `autonomy` replaces
/// the kit's `supervised`), a provider `api_key` in its config, and `env` in its
/// environment.
fn start(fake: &Fake, agent_keys: &str, env: &[(&str, &str)]) -> TestDaemon {
    let mut config = session_config(&fake.server.base_url(), "");
    if agent_keys.contains("autonomy") {
        config = config.replace("autonomy = \"supervised\"\n", "");
    }
    let config = config
        .replace(
            "max_tool_iterations = 5\n",
            &format!("max_tool_iterations = 5\n{agent_keys}\n"),
        )
        .replace(
            "model = \"m\"\n",
            &format!("model = \"m\"\napi_key = \"{API_KEY}\"\n"),
        );
    TestDaemon::start_env(&[], env, move |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A new session of `default` (in `cwd` when given): (id, its cwd).
fn session(c: &mut Conn, cwd: Option<&Path>) -> (String, PathBuf) {
    let mut params = json!({"agentAlias": "default"});
    if let Some(cwd) = cwd {
        params["cwd"] = json!(cwd);
    }
    let r = c.new_session(params);
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let cwd = match cwd {
        Some(cwd) => cwd.to_path_buf(),
        None => PathBuf::from(r["workspaceDir"].as_str().unwrap()),
    };
    (sid, cwd)
}

/// Whether this kernel confines (else the caller skips, saying so).
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
    updates(&msgs)
        .iter()
        .find(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// The value printed as `key=VALUE` on a line of `out`.
fn field<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::trim)
}

/// The hex value of `Name:` in a /proc status text.
fn cap(out: &str, name: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Starts `sleep 300` as `uid`.
fn sleeper(uid: u32) -> Child {
    Command::new("sleep")
        .arg("300")
        .uid(uid)
        .gid(uid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Whether `uid` can append to `path` (through a shell running as that uid).
fn writable_by(uid: u32, path: &Path) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg("echo appended >> \"$1\"")
        .arg("sh")
        .arg(path)
        .uid(uid)
        .gid(uid)
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The names of `path`'s extended attributes (through the system call).
#[allow(unsafe_code)]
fn xattr_names(path: &Path) -> Vec<u8> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: a valid C string and a buffer of the length given.
    let n = unsafe { libc::listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(usize::try_from(n).unwrap_or(0));
    buf
}

/// Sets `user.zc` on `path` from the test; false where the file system has no user
/// attributes.
#[allow(unsafe_code)]
fn set_xattr(path: &Path) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C strings and a value of the length given.
    unsafe { libc::setxattr(c.as_ptr(), c"user.zc".as_ptr(), b"1".as_ptr().cast(), 1, 0) == 0 }
}

fn daemon_pid(daemon: &TestDaemon) -> u32 {
    daemon.child.as_ref().map(Child::id).unwrap()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn read_only_bash_holds_no_capability_changes_no_metadata_and_signals_nobody_outside() {
    assert!(is_root(), "needs root to act as another uid");
    let fake = Fake::start();
    let daemon = start(&fake, "autonomy = \"read_only\"", &[]);
    let mut c = daemon.client();
    let (sid, _cwd) = session(&mut c, None);
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let uid = test_uid();
    let place = tempfile::tempdir().unwrap();
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let victim = place.path().join("victim");
    std::fs::write(&victim, "root's\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Positive controls: the other uid writes a 0666 file here, and this file system keeps
    // user attributes (else that part is not checked, and said so).
    let control = place.path().join("control");
    std::fs::write(&control, "").unwrap();
    std::fs::set_permissions(&control, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(
        writable_by(uid, &control),
        "the other uid writes a 0666 file"
    );
    assert!(!writable_by(uid, &victim), "the victim starts unwritable");
    let xattrs = set_xattr(&control);
    if !xattrs {
        eprintln!("NOTE: no user extended attributes on this file system: not checked");
    }
    let sleeper = Killed(sleeper(uid));
    let sleeper_pid = sleeper.0.id();
    assert!(alive(sleeper_pid));
    let daemon_pid = daemon_pid(&daemon);

    // An abstract socket of the test's own (outside the sandbox): the test connects to it
    // (control); the tool must not.
    let abstract_name = format!("zc-h3-{}", std::process::id());
    let listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    listener.set_nonblocking(true).unwrap();
    {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        let _control = std::os::unix::net::UnixStream::connect_addr(&addr).unwrap();
        assert!(listener.accept().is_ok(), "the control connection arrives");
    }

    let v = victim.display();
    let command = format!(
        "grep -E '^(Cap(Eff|Prm|Bnd|Inh|Amb)|NoNewPrivs|Seccomp):' /proc/self/status; \
         sleep 100 & own=$!; kill $own; wait $own; echo own_kill=$?; \
         chmod 666 {v}; echo chmod=$?; chown {uid}:{uid} {v}; echo chown=$?; \
         /usr/bin/python3 -c 'print(\"py_runs=1\")'; \
         /usr/bin/python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.zc\", b\"1\")' {v} \
           2>&1 | tail -1; echo xattr=${{PIPESTATUS[0]}}; \
         /usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); \
           s.connect(\"\\0\"+sys.argv[1])' {abstract_name} 2>&1 | tail -1; \
           echo abstract=${{PIPESTATUS[0]}}; \
         kill -KILL {sleeper_pid}; echo kill_other=$?; \
         kill -TERM {daemon_pid}; echo kill_daemon=$?"
    );
    let out = run(&fake, &mut c, &sid, &command);
    eprintln!("TOOL OUTPUT:\n{out}");
    // The tool's own view: no capability at all, and its own children are its to kill.
    assert_eq!(cap(&out, "CapEff"), Some(0), "{out}");
    assert_eq!(cap(&out, "CapPrm"), Some(0), "{out}");
    assert_eq!(cap(&out, "CapBnd"), Some(0), "{out}");
    assert_eq!(cap(&out, "CapAmb"), Some(0), "{out}");
    assert_eq!(cap(&out, "NoNewPrivs"), Some(1), "{out}");
    assert_eq!(cap(&out, "Seccomp"), Some(2), "filter mode: {out}");
    assert_eq!(field(&out, "own_kill"), Some("143"), "{out}");
    assert_eq!(field(&out, "py_runs"), Some("1"), "{out}");
    assert_ne!(field(&out, "xattr"), Some("0"), "{out}");
    assert_ne!(field(&out, "abstract"), Some("0"), "{out}");
    assert!(
        listener.accept().is_err(),
        "the tool reached an abstract socket outside: {out}"
    );

    // The file system's view: mode, owner, attributes unchanged; the other uid still
    // cannot write it.
    let meta = std::fs::metadata(&victim).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600, "mode changed: {out}");
    assert_eq!((meta.uid(), meta.gid()), (0, 0), "owner changed: {out}");
    if xattrs {
        assert!(xattr_names(&victim).is_empty(), "attribute set: {out}");
    }
    assert!(!writable_by(uid, &victim), "another uid writes it: {out}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's\n");

    // No signal left the sandbox: kill(2) itself refused both (a non-zero status, where
    // the tool's kill of its own child, `own_kill`, is the control that kill works), so
    // nothing is in flight to wait for. /proc's view agrees: the other uid's process
    // lives; the daemon still serves.
    assert_ne!(field(&out, "kill_other"), Some("0"), "{out}");
    assert_ne!(field(&out, "kill_daemon"), Some("0"), "{out}");
    assert!(
        alive(sleeper_pid),
        "the other uid's process was killed: {out}"
    );
    assert!(alive(daemon_pid), "the daemon was killed: {out}");
    let status = c.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["sessionId"], json!(sid), "{status}");
}

/// The reads of a read_only bash: (label, path) pairs read with `cat`, each result printed
/// as `label=STATUS`.
fn read_probe(paths: &[(&str, PathBuf)]) -> String {
    paths
        .iter()
        .map(|(label, p)| format!("cat '{}' >/dev/null 2>&1; echo {label}=$?; ", p.display()))
        .collect()
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn read_only_bash_reads_no_secret_and_nothing_of_the_daemon() {
    assert!(is_root(), "needs root to read root's files");
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "ssh-secret\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("denied")).unwrap();
    std::fs::write(outside.path().join("denied/file"), "deny-read-secret\n").unwrap();
    std::fs::write(outside.path().join("allowed"), "allowed-text\n").unwrap();
    let fake = Fake::start();
    let home_s = home.path().to_str().unwrap().to_owned();
    let keys = format!(
        "autonomy = \"read_only\"\nsandbox_deny_read = [\"~/.ssh\", \"/etc/shadow\", \"{}\"]",
        outside.path().join("denied").display()
    );
    let daemon = start(&fake, &keys, &[("HOME", &home_s)]);
    let mut c = daemon.client();
    let (sid, cwd) = session(&mut c, None);
    if !landlock_here(&mut c, &sid) {
        return;
    }
    let dp = daemon_pid(&daemon);
    let config = daemon.config_dir().join("config.toml");
    let data = daemon.config_dir().join("data");
    let db = data.join("zeroclaw.db");
    let allowed = outside.path().join("allowed");
    // Positive controls, from the test: each secret is there and root reads it.
    for p in [&config, &db, &PathBuf::from("/etc/shadow")] {
        assert!(std::fs::read(p).is_ok(), "{}", p.display());
    }
    assert!(std::fs::read_to_string(&config).unwrap().contains(API_KEY));
    std::fs::write(cwd.join("mine.txt"), "workspace-text\n").unwrap();

    let via = |root: &str, p: &Path| PathBuf::from(format!("{root}{}", p.display()));
    let secrets: Vec<(&str, PathBuf)> = vec![
        ("shadow", "/etc/shadow".into()),
        ("config", config.clone()),
        ("db", db.clone()),
        ("ssh", home.path().join(".ssh/id_ed25519")),
        ("deny", outside.path().join("denied/file")),
        ("p1_config", via("/proc/1/root", &config)),
        ("pd_config", via(&format!("/proc/{dp}/root"), &config)),
        ("pd_environ", PathBuf::from(format!("/proc/{dp}/environ"))),
        ("ps_config", via("/proc/self/root", &config)),
        (
            "ps_shadow",
            via("/proc/self/root", Path::new("/etc/shadow")),
        ),
        (
            "ps_deny",
            via("/proc/self/root", &outside.path().join("denied/file")),
        ),
    ];
    let controls: Vec<(&str, PathBuf)> = vec![
        ("ok_allowed", allowed.clone()),
        ("ok_ps_allowed", via("/proc/self/root", &allowed)),
        ("ok_passwd", "/etc/passwd".into()),
        ("ok_workspace", cwd.join("mine.txt")),
    ];
    let command = format!(
        "{}{} ls '{}' >/dev/null 2>&1; echo ls_data=$?; \
         cat '{}' '{}' '{}' 2>&1 | head -c 2000; env",
        read_probe(&secrets),
        read_probe(&controls),
        data.display(),
        config.display(),
        home.path().join(".ssh/id_ed25519").display(),
        outside.path().join("denied/file").display(),
    );
    let out = run(&fake, &mut c, &sid, &command);
    eprintln!("TOOL OUTPUT:\n{out}");
    for (label, _) in &controls {
        assert_eq!(field(&out, label), Some("0"), "{label}: {out}");
    }
    for (label, _) in &secrets {
        assert_ne!(field(&out, label), Some("0"), "{label} was read: {out}");
        assert!(field(&out, label).is_some(), "{label}: {out}");
    }
    assert_ne!(field(&out, "ls_data"), Some("0"), "{out}");
    for secret in [API_KEY, "ssh-secret", "deny-read-secret"] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
}

#[test]
fn a_writable_cwd_over_the_config_dir_leaves_the_config_unwritable() {
    let fake = Fake::start();
    let daemon = start(&fake, "autonomy = \"full\"", &[]);
    let mut c = daemon.client();
    let dir = daemon.config_dir().to_path_buf();
    let (sid, _) = session(&mut c, Some(&dir));
    if !landlock_here(&mut c, &sid) {
        return;
    }
    std::fs::create_dir_all(dir.join("agents/default/workspace")).unwrap();
    let before = std::fs::read(dir.join("config.toml")).unwrap();
    let out = run(
        &fake,
        &mut c,
        &sid,
        "echo written > agents/default/workspace/w.txt; echo ws=$?; \
         echo 'api_key = \"x\"' >> config.toml; echo config=$?; \
         touch data/planted; echo data=$?; cat config.toml >/dev/null 2>&1; echo read=$?",
    );
    // Positive control: the write beneath the cwd, in the agents' workspaces, lands.
    assert_eq!(
        std::fs::read_to_string(dir.join("agents/default/workspace/w.txt")).ok(),
        Some("written\n".to_owned()),
        "{out}"
    );
    assert_eq!(field(&out, "ws"), Some("0"), "{out}");
    assert_eq!(
        std::fs::read(dir.join("config.toml")).unwrap(),
        before,
        "{out}"
    );
    assert!(!dir.join("data/planted").exists(), "{out}");
    assert_ne!(field(&out, "read"), Some("0"), "{out}");
}

/// `env` lines of `out` as (name, value).
fn env_names(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
        .collect()
}

#[test]
fn bash_gets_only_the_short_list_and_the_allowlist_of_the_environment() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-env-secret-1"),
        ("GITHUB_TOKEN", "ghp-env-secret-2"),
        ("ZEROCLAW_H3_PROBE", "zc-env-secret-3"),
        ("ZC_ALLOWED", "allowed-value"),
        ("LC_H3", "lc-value"),
    ];
    for sandbox in ["auto", "off"] {
        let fake = Fake::start();
        let keys = format!(
            "autonomy = \"full\"\nsandbox = \"{sandbox}\"\nenv = [\"ZC_ALLOWED\", \"ZEROCLAW_H3_PROBE\"]"
        );
        let daemon = start(&fake, &keys, &secrets);
        let mut c = daemon.client();
        let (sid, _) = session(&mut c, None);
        let out = run(&fake, &mut c, &sid, "env; echo end=1");
        assert_eq!(field(&out, "end"), Some("1"), "{sandbox}: {out}");
        for (_, value) in &secrets[..3] {
            assert!(!out.contains(value), "{sandbox}: {value} leaked: {out}");
        }
        assert_eq!(field(&out, "ZC_ALLOWED"), Some("allowed-value"), "{out}");
        assert_eq!(field(&out, "LC_H3"), Some("lc-value"), "{out}");
        assert!(field(&out, "PATH").is_some(), "{out}");
        for name in env_names(&out) {
            let fine = [
                "PATH",
                "HOME",
                "USER",
                "LANG",
                "TERM",
                "SHELL",
                "TMPDIR",
                "ZC_ALLOWED",
                "end",
                // set by bash itself
                "PWD",
                "SHLVL",
                "_",
                "OLDPWD",
            ]
            .contains(&name.as_str())
                || name.starts_with("LC_");
            assert!(fine, "{sandbox}: {name} is in the environment: {out}");
        }
    }
}

/// The variables in `/proc/PID/environ`, as `NAME=VALUE` strings.
fn environ(pid: u64) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn an_mcp_server_starts_without_capabilities_or_the_daemons_secrets() {
    assert!(is_root(), "needs root to read the server's /proc files");
    let fake = Fake::start();
    let keys = "autonomy = \"read_only\"\nenv = [\"ZC_ALLOWED\"]\n\
                [agents.default.mcp_servers.idle]\ncommand = \"/bin/sleep\"\nargs = [\"300\"]\n\
                env = { OWN_VAR = \"own-value\" }";
    let daemon = start(
        &fake,
        keys,
        &[
            ("OPENAI_API_KEY", "sk-env-secret-1"),
            ("GITHUB_TOKEN", "ghp-env-secret-2"),
            ("ZC_ALLOWED", "allowed-value"),
        ],
    );
    let mut c = daemon.client();
    let (sid, _) = session(&mut c, None);
    if !landlock_here(&mut c, &sid) {
        return;
    }
    // The server never answers: it stays `starting`, with its pid, until the session ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let status = c.result("session/status", json!({"sessionId": sid}));
        if let Some(pid) = status["mcpServers"][0]["pid"].as_u64() {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no server pid: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its environment as the kernel holds it (read once exec has happened).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let env = loop {
        let env = environ(pid);
        if env.iter().any(|v| v == "OWN_VAR=own-value") {
            break env;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never exec'd: {env:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert_eq!(cap(&status, "CapEff"), Some(0), "{status}");
    assert_eq!(cap(&status, "CapPrm"), Some(0), "{status}");
    assert_eq!(cap(&status, "CapBnd"), Some(0), "{status}");
    assert_eq!(cap(&status, "NoNewPrivs"), Some(1), "{status}");
    assert_eq!(cap(&status, "Seccomp"), Some(2), "{status}");
    assert!(
        env.contains(&"ZC_ALLOWED=allowed-value".to_owned()),
        "{env:?}"
    );
    for v in &env {
        assert!(
            !v.contains("secret") && !v.starts_with("ZEROCLAW_"),
            "{v} reached the server: {env:?}"
        );
    }
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn only_an_admin_sets_what_a_program_may_read_or_inherit() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[providers.echo]\nkind = \"echo\"\n\
                 [agents.default]\nprovider = \"echo\"\n\
                 [permission_profiles.everything]\n\
                 grants = {{ config = [\"read\", \"update\", \"delete\"] }}\n\
                 config_write_paths = [\"*\"]\n\
                 [users.wide]\nuid = {uid}\npermission_profiles = [\"everything\"]\n"
            ),
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
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["admin"], json!(false), "{init}");
    let before = std::fs::read(daemon.config_dir().join("config.toml")).unwrap();
    // Control: a key this user may write.
    u.result(
        "config/set",
        json!({"prop": "agents.default.system_prompt", "value": "hello"}),
    );
    let after_control = std::fs::read(daemon.config_dir().join("config.toml")).unwrap();
    assert_ne!(before, after_control, "the control write landed");
    for (prop, value) in [
        ("agents.default.env", json!(["OPENAI_API_KEY"])),
        ("agents.default.sandbox_deny_read", json!([])),
    ] {
        let e = u.error("config/set", json!({"prop": prop, "value": value}));
        assert_eq!(code(&e), -32012, "{prop}: {e}");
        let e = u.error("config/delete", json!({"prop": prop}));
        assert_eq!(code(&e), -32012, "{prop}: {e}");
    }
    assert_eq!(
        std::fs::read(daemon.config_dir().join("config.toml")).unwrap(),
        after_control
    );
    let mut admin = daemon.client();
    admin.result(
        "config/set",
        json!({"prop": "agents.default.env", "value": ["ZC_ALLOWED"]}),
    );
    let e = admin.error(
        "config/set",
        json!({"prop": "agents.default.sandbox_deny_read", "value": ["relative/path"]}),
    );
    assert_eq!(code(&e), -32602, "{e}");
}
