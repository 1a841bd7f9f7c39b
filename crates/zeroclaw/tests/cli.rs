//! The command-line client against the real daemon: human output and `--json` of each
//! command, its error lines and exit codes (1 refused, 2 usage, 3 daemon not running),
//! `stop`, `service install --print` and shell completions.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use common::{BIN, TestDaemon};

/// `zeroclaw --config-dir DIR ARGS…` with no endpoint variables from the environment.
fn zc_command(config_dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("--config-dir")
        .arg(config_dir)
        .args(args)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "warn");
    command
}

/// [`zc_command`], run to its end.
fn zc(config_dir: &Path, args: &[&str]) -> Output {
    zc_command(config_dir, args).output().expect("run zeroclaw")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Succeeded; its stdout.
fn ok(out: Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    stdout(&out)
}

fn json_of(out: Output) -> Value {
    let text = ok(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Failed with `code`, one `error:` line on stderr and nothing on stdout; that line.
fn failed(out: Output, code: i32) -> String {
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(&out));
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn status_in_both_forms() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    let text = ok(zc(dir, &["status"]));
    let pid = daemon.child.as_ref().unwrap().id();
    assert!(
        text.starts_with(&format!(
            "zeroclaw {} is running (pid {pid})\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("  endpoint       {}\n", daemon.socket.display())),
        "{text}"
    );
    assert!(text.contains("  live sessions  0\n"), "{text}");
    assert!(!text.contains('{'), "{text}");
    let v = json_of(zc(dir, &["status", "--json"]));
    assert_eq!(v["serverPid"], pid);
}

#[test]
fn config_get_set_and_set_many() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    assert_eq!(
        ok(zc(dir, &["config", "get", "agents.default.provider"])),
        "echo\n"
    );
    assert_eq!(
        json_of(zc(
            dir,
            &["config", "get", "agents.default.provider", "--json"]
        )),
        json!({"prop": "agents.default.provider", "value": "echo"})
    );
    // The whole configuration reads as TOML.
    let whole = ok(zc(dir, &["config", "get"]));
    assert!(whole.contains("[agents.default]\n"), "{whole}");
    assert!(whole.contains("provider = \"echo\"\n"), "{whole}");
    assert!(json_of(zc(dir, &["config", "get", "--json"]))["config"]["agents"].is_object());

    // A bare word is a string; JSON is JSON.
    assert_eq!(
        ok(zc(dir, &["config", "set", "agents.default.model", "tiny"])),
        "set agents.default.model\n"
    );
    assert_eq!(
        json_of(zc(
            dir,
            &[
                "config",
                "set",
                "agents.default.max_tool_iterations",
                "7",
                "--json"
            ]
        )),
        json!({"prop": "agents.default.max_tool_iterations", "set": true, "restartRequired": false})
    );
    assert_eq!(
        ok(zc(
            dir,
            &["config", "get", "agents.default.max_tool_iterations"]
        )),
        "7\n"
    );

    // Refused: exit 1 with the property.
    let err = failed(zc(dir, &["config", "set", "users.x.uid", "abc"]), 1);
    assert!(err.contains("users.x.uid"), "{err}");

    // Cert and key only together: alone refused, together accepted in one write.
    let err = failed(
        zc(dir, &["config", "set", "wss.cert_path", "/tmp/c.pem"]),
        1,
    );
    assert!(err.contains("cert_path"), "{err}");
    assert_eq!(
        ok(zc(
            dir,
            &[
                "config",
                "set-many",
                "wss.cert_path=/tmp/c.pem",
                "wss.key_path=/tmp/k.pem"
            ]
        )),
        "set wss.cert_path, wss.key_path\nrestart the daemon for this to take effect (zeroclaw stop, then zeroclaw daemon)\n"
    );
    assert_eq!(
        ok(zc(dir, &["config", "get", "wss.key_path"])),
        "/tmp/k.pem\n"
    );
    assert_eq!(
        json_of(zc(
            dir,
            &["config", "set-many", "agents.default.model=m2", "--json"]
        ))["props"],
        json!(["agents.default.model"])
    );
    // A bad entry names its index.
    let err = failed(
        zc(
            dir,
            &[
                "config",
                "set-many",
                "agents.default.model=x",
                "users.y.uid=abc",
            ],
        ),
        1,
    );
    assert!(err.contains('1') && err.contains("users.y.uid"), "{err}");
    // Not PROP=VALUE: refused before any call.
    failed(zc(dir, &["config", "set-many", "novalue"]), 1);
    assert_eq!(
        ok(zc(dir, &["config", "delete", "agents.default.model"])),
        "deleted agents.default.model\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["status", "--bogus"][..],
        &["no-such-command"],
        &["config", "set", "only-prop"],
        &["completions", "tcsh"],
    ] {
        let out = zc(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    }
}

/// `TOKIO_WORKER_THREADS` sets the async workers; a value that is no count of 1 or more is
/// refused in one line before anything starts (tokio itself would panic), and a good one
/// (the positive control) runs the command.
#[test]
fn a_bad_worker_count_is_refused_in_one_line() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    let with_workers = |value: &str, args: &[&str]| {
        zc_command(dir, args)
            .env("TOKIO_WORKER_THREADS", value)
            .output()
            .expect("run zeroclaw")
    };
    for value in ["", "0", "two", "-1", "1.5"] {
        for args in [&["status"][..], &["daemon"]] {
            let line = failed(with_workers(value, args), 1);
            assert!(
                line.contains("TOKIO_WORKER_THREADS"),
                "{value:?} {args:?}: {line}"
            );
        }
    }
    for value in ["1", " 3 "] {
        let text = ok(with_workers(value, &["status"]));
        assert!(text.starts_with("zeroclaw "), "{value:?}: {text}");
    }
}

#[test]
fn daemon_not_running_exits_3_with_the_start_command() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["config", "get"],
        &["sessions"],
        &["stop"],
        &["rpc", "status"],
    ] {
        let err = failed(zc(dir.path(), args), 3);
        assert!(err.contains("the daemon is not running"), "{err}");
        assert!(
            err.contains(&format!(
                "zeroclaw daemon --config-dir {}",
                dir.path().display()
            )),
            "{err}"
        );
    }
}

#[test]
fn sessions_list_and_show() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    assert_eq!(ok(zc(dir, &["sessions"])), "no sessions\n");
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "cli-s1"}));
    let (_, answer) = c.prompt("cli-s1", "hello there friend\nsecond line");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");

    let text = ok(zc(dir, &["sessions"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["ID", "AGENT", "ACTIVE", "MSGS", "LIVE", "TITLE"]);
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[..2], ["cli-s1", "default"]);
    assert!(row[2].ends_with('s') || row[2].ends_with('m'), "{text}");
    assert_eq!(row[4..], ["2", "yes", "hello", "there", "friend"], "{text}");

    let v = json_of(zc(dir, &["sessions", "--json"]));
    assert_eq!(v["sessions"][0]["sessionId"], "cli-s1");

    let text = ok(zc(dir, &["sessions", "show", "cli-s1"]));
    assert_eq!(
        text,
        "you:\n  hello there friend\n  second line\n\nagent:\n  hello there friend\n  second line\n\n"
    );
    let v = json_of(zc(
        dir,
        &["sessions", "show", "cli-s1", "--json", "--last", "1"],
    ));
    assert_eq!(v["messages"].as_array().unwrap().len(), 1);
    assert_eq!(v["messages"][0]["role"], "assistant");
    let err = failed(zc(dir, &["sessions", "show", "no-such"]), 1);
    assert!(err.contains("no-such"), "{err}");
}

#[test]
fn stop_waits_until_the_socket_is_gone() {
    let mut daemon = TestDaemon::start();
    assert_eq!(ok(zc(daemon.config_dir(), &["stop"])), "daemon stopped\n");
    assert!(!daemon.socket.exists());
    assert!(daemon.wait_exit(Duration::from_secs(10)).is_some());
    // Stopped: the next call says how to start it.
    failed(zc(daemon.config_dir(), &["stop"]), 3);

    let mut daemon = TestDaemon::start();
    assert_eq!(
        json_of(zc(daemon.config_dir(), &["stop", "--json"])),
        json!({"shuttingDown": true})
    );
    assert!(!daemon.socket.exists());
    assert!(daemon.wait_exit(Duration::from_secs(10)).is_some());
}

#[test]
fn pair_and_upload_for_people_and_scripts() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    let text = ok(zc(dir, &["pair", "--user", "alice"]));
    let token = text.lines().last().unwrap();
    assert!(text.starts_with("paired user alice"), "{text}");
    assert!(token.len() >= 32 && !token.contains(' '), "{text}");
    let v = json_of(zc(dir, &["pair", "--user", "bob", "--json"]));
    assert_eq!(v["user"], "bob");
    assert!(v["token"].as_str().unwrap().len() >= 32);

    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "up"}));
    let file = dir.join("notes.txt");
    std::fs::write(&file, "some notes\n").unwrap();
    let file = file.to_str().unwrap();
    let text = ok(zc(dir, &["upload", "--session", "up", file]));
    assert!(text.starts_with(&format!("{file}: 11 bytes → ")), "{text}");
    assert!(
        text.contains("\n  marker: [Document: notes.txt] "),
        "{text}"
    );
    let v = json_of(zc(dir, &["upload", "--session", "up", "--json", file]));
    assert_eq!(v["deduplicated"], true);
    let err = failed(zc(dir, &["upload", "--session", "nope", file]), 1);
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn service_install_print_and_files() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("zc config");
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("--config-dir")
            .arg(&config)
            .args(args)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            // No service manager on the PATH: install only writes the file.
            .env("PATH", home.path())
            .output()
            .unwrap()
    };
    let unit = ok(run(&["service", "install", "--print"]));
    assert!(
        unit.contains(&format!(
            "ExecStart={BIN} daemon --config-dir \"{}\"\n",
            config.display()
        )),
        "{unit}"
    );
    assert!(
        unit.contains("[Install]\nWantedBy=default.target\n"),
        "{unit}"
    );
    let plist = ok(run(&[
        "service",
        "install",
        "--print",
        "--manager",
        "launchd",
    ]));
    assert!(
        plist.contains(&format!("<string>{}</string>", config.display())),
        "{plist}"
    );

    let path = home.path().join(".config/systemd/user/zeroclaw.service");
    let text = ok(run(&["service", "install"]));
    assert!(
        text.contains(&format!("wrote {}", path.display())),
        "{text}"
    );
    assert!(
        text.contains("systemctl --user enable --now zeroclaw.service"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), unit);
    assert!(ok(run(&["service", "status"])).starts_with("installed: "));
    assert!(ok(run(&["service", "uninstall"])).contains("removed "));
    assert!(!path.exists());
    assert!(ok(run(&["service", "status"])).starts_with("not installed"));
}

#[test]
fn completions_for_three_shells() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "_zeroclaw()"),
        ("zsh", "#compdef zeroclaw"),
        ("fish", "complete -c zeroclaw"),
    ] {
        let script = ok(zc(dir.path(), &["completions", shell]));
        assert!(script.contains(marker), "{shell}: {script}");
        for word in ["sessions", "set-many", "completions", "json"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
}
