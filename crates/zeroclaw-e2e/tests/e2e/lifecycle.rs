//! The daemon's life: binding the endpoint (SPEC §2), connection limits (§3.3), ephemeral
//! mode and clean shutdown (§9), and the command-line client (§12).

use crate::common;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Conn, TestDaemon, code, daemon_command, wait_for_socket};
use serde_json::{Value, json};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn socket_and_directories_are_private_and_config_is_written() {
    let daemon = TestDaemon::start();
    assert_eq!(mode(&daemon.socket), 0o600);
    assert_eq!(mode(&daemon.config_dir().join("data")), 0o700);
    let config = daemon.config_dir().join("config.toml");
    assert_eq!(mode(&config), 0o600);
    let text = std::fs::read_to_string(config).unwrap();
    assert!(
        text.contains("[agents.default]") && text.contains("echo"),
        "{text}"
    );
}

#[test]
fn second_daemon_on_the_same_dir_exits_and_the_first_keeps_serving() {
    let daemon = TestDaemon::start();
    let out = daemon_command(daemon.config_dir(), &[])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another daemon owns"), "{err}");
    let mut c = daemon.client();
    assert!(c.result("status", json!({}))["serverPid"].is_number());
    assert!(daemon.socket.exists());
}

#[test]
fn stale_socket_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = data.join("daemon.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap()); // leaves a dead socket file
    assert!(std::fs::metadata(&socket).unwrap().file_type().is_socket());
    let mut child = daemon_command(dir.path(), &[])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_socket(&socket, Some(&mut child));
    let mut c = Conn::open(&socket);
    assert!(c.call("initialize", json!({})).get("result").is_some());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_regular_file_at_the_socket_path_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let socket = data.join("daemon.sock");
    std::fs::write(&socket, b"precious").unwrap();
    let out = daemon_command(dir.path(), &[])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    assert_eq!(std::fs::read(&socket).unwrap(), b"precious");
}

#[test]
fn zeroclaw_socket_overrides_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("custom.sock");
    let mut child = daemon_command(dir.path(), &[])
        .env("ZEROCLAW_SOCKET", format!("  {}  ", socket.display()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_socket(&socket, Some(&mut child));
    assert!(!dir.path().join("data/daemon.sock").exists());
    let mut c = Conn::open(&socket);
    c.result("initialize", json!({}));
    assert_eq!(
        c.result("status", json!({}))["endpoint"],
        socket.display().to_string()
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn too_long_socket_path_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("x".repeat(120)).join("d.sock");
    let out = daemon_command(dir.path(), &[])
        .env("ZEROCLAW_SOCKET", &long)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("108") && err.contains(&*long.display().to_string()),
        "{err}"
    );
}

#[test]
fn sigterm_and_shutdown_stop_cleanly_and_unlink_the_socket() {
    let mut daemon = TestDaemon::start();
    daemon.signal(libc::SIGTERM);
    let status = daemon.wait_exit(Duration::from_secs(10)).expect("exits");
    assert!(status.success(), "{status}");
    assert!(!daemon.socket.exists());

    daemon.spawn(&[]);
    let mut c = daemon.client();
    assert_eq!(
        c.result("daemon/shutdown", json!({})),
        json!({"shuttingDown": true})
    );
    let status = daemon.wait_exit(Duration::from_secs(10)).expect("exits");
    assert!(status.success());
    assert!(!daemon.socket.exists());
}

#[test]
fn per_principal_limit_refuses_the_33rd_connection() {
    let daemon = TestDaemon::start();
    let mut held: Vec<Conn> = (0..32).map(|_| daemon.client()).collect();
    let mut extra = daemon.connect();
    let r = extra.recv();
    assert_eq!(r["id"], Value::Null);
    assert_eq!(code(&r["error"]), -32013);
    assert_eq!(r["error"]["data"]["limit"], 32);
    assert!(extra.closed_within(Duration::from_secs(5)));
    // the 32 are still served
    for c in held.iter_mut() {
        assert!(c.call("status", json!({})).get("result").is_some());
    }
    // a slot frees up when one leaves (closing is asynchronous: wait until it counts)
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    while held[0].result("status", json!({}))["connections"] != 31 {
        assert!(Instant::now() < deadline, "the connection was not released");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut again = daemon.client();
    assert!(again.call("status", json!({})).get("result").is_some());
}

#[test]
fn limits_come_from_the_config() {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            "[limits]\nconnections_per_principal = 2\nconnections_total = 10\n",
        )
        .unwrap();
    });
    let mut a = daemon.client();
    // The start-up probe's connection may still count for a moment: wait until it is gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.result("status", json!({}))["connections"] != 1 {
        assert!(
            Instant::now() < deadline,
            "the probe connection was not released"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _b = daemon.client();
    let mut c = daemon.connect();
    let r = c.recv();
    assert_eq!(r["error"]["data"], json!({"limit": 2, "value": 3}));
}

#[test]
fn two_hundred_short_lived_connections() {
    let daemon = TestDaemon::start();
    for i in 0..200 {
        let mut c = daemon.client();
        assert!(
            c.call("status", json!({})).get("result").is_some(),
            "connection {i}"
        );
    }
    // Every one of them was released (closing is asynchronous: allow it a moment).
    let mut c = daemon.client();
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.result("status", json!({}))["connections"] != 1 {
        assert!(Instant::now() < deadline, "connections were not released");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// The stalled-reader timeout and the ephemeral grace are timed in process, in
// milliseconds: crates/zeroclaw-daemon/tests/timing.rs. Here the real binary exits.
#[test]
fn ephemeral_exits_after_the_last_client() {
    let mut daemon = TestDaemon::start_unprobed(&["--ephemeral"]);
    let mut c = daemon.client();
    assert!(c.call("status", json!({})).get("result").is_some());
    drop(c);
    let left = Instant::now();
    let status = daemon
        .wait_exit(Duration::from_secs(10))
        .expect("exits after the last client");
    assert!(status.success());
    let waited = left.elapsed();
    assert!(
        waited >= Duration::from_millis(800),
        "exited too early: {waited:?}"
    );
    assert!(!daemon.socket.exists());
}

#[test]
fn rpc_and_status_commands() {
    let daemon = TestDaemon::start();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(["--config-dir", daemon.config_dir().to_str().unwrap()])
            .args(args)
            .env_remove("ZEROCLAW_SOCKET")
            .output()
            .unwrap()
    };
    let out = run(&["rpc", "status", "{}"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["serverPid"], daemon.child.as_ref().unwrap().id());

    let out = run(&["status", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["endpoint"], daemon.socket.display().to_string());

    let out = run(&["rpc", "no/such/method"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-32601"));

    let out = Command::new(BIN)
        .args(["rpc", "status", "--socket", "/nonexistent/zc.sock"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn socat_style_session_from_the_readme() {
    // What README's quick test types, line by line, on one connection.
    let daemon = TestDaemon::start();
    let mut s = UnixStream::connect(&daemon.socket).unwrap();
    s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1},\"id\":1}\n{\"jsonrpc\":\"2.0\",\"method\":\"status\",\"params\":{},\"id\":2}\n").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut s, &mut text).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[1]["id"], 2);
    assert!(lines[1]["result"]["uptimeSecs"].is_u64());
}
