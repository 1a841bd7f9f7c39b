//! `zeroclaw chat` for a day's work (SPEC §22), through the real binary and daemon: it
//! works in the directory it is started in (`pwd` through `bash` answers the project
//! directory) or `--cwd DIR`; `-c` resumes the newest session of this directory, never
//! another directory's; `--resume` lists this directory's sessions to pick one; the banner
//! says agent, provider and model, cwd, autonomy and sandbox, and with `echo` that answers
//! are echoes; an approval asked by one window's turn is asked in another window idle at
//! its prompt, answered there, and the first says who decided; with piped input the exit
//! status says whether a turn failed, and `--approve` decides what cannot be asked.
//! Windows are pseudo-terminals read as a person reads them; scripts are pipes.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;
use zeroclaw_testkit::chat_window::ChatWindow;

const ENTER: &str = "\r";

fn with_fake(fake: &Fake) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A new directory `name` under `root`, resolved as the daemon records it.
fn project(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// `zeroclaw chat ARGS` run from `dir` with `input` piped in; waits (up to 30 s).
fn piped(daemon: &TestDaemon, dir: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(BIN)
        .arg("chat")
        .arg("--config-dir")
        .arg(daemon.config_dir())
        .args(args)
        .current_dir(dir)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chat");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chat did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `session/list {cwd}`: the entries.
fn sessions_in(c: &mut Conn, dir: &Path) -> Vec<Value> {
    let list = c.result("session/list", json!({"cwd": dir}));
    list["sessions"].as_array().cloned().unwrap_or_default()
}

/// The user prompts of a session's transcript.
fn prompts(c: &mut Conn, session: &str) -> Vec<String> {
    c.messages(session)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The id of the only session of `dir` whose title is `title`.
fn titled(c: &mut Conn, dir: &Path, title: &str) -> String {
    let all = sessions_in(c, dir);
    let hits: Vec<_> = all.iter().filter(|s| s["title"] == title).collect();
    assert_eq!(hits.len(), 1, "{title} in {all:?}");
    hits[0]["sessionId"].as_str().unwrap().to_string()
}

#[test]
fn a_chat_works_in_the_directory_it_is_started_in_and_says_so() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "pwd"}),
    ));
    fake.push(Scripted::text("that is where"));
    let daemon = with_fake(&fake);
    let root = tempfile::tempdir().unwrap();
    let proj = project(root.path(), "proj");

    let mut w = ChatWindow::open_in(daemon.config_dir(), Some(&proj), &[]);
    let banner = format!(
        "agent default · openai m · cwd {} · autonomy supervised · sandbox ",
        proj.display()
    );
    w.expect(&banner);
    w.prompt();
    w.send(&format!("where am I{ENTER}"));
    w.expect("allow bash `pwd`?");
    w.send(&format!("y{ENTER}"));
    w.turn_end();
    let screen = w.screen();
    assert!(
        screen
            .iter()
            .any(|l| l == &format!("  → {}", proj.display())),
        "bash ran in the project: {screen:#?}"
    );
    // With a real provider there is no echo warning.
    assert!(
        !screen.iter().any(|l| l.contains("echo provider")),
        "{screen:#?}"
    );
    w.prompt();
    w.leave();

    // The session is listed under the directory.
    let mut c = daemon.client();
    assert_eq!(sessions_in(&mut c, &proj).len(), 1);
}

#[test]
fn cwd_names_another_directory_and_a_missing_one_is_refused() {
    let daemon = TestDaemon::start();
    let root = tempfile::tempdir().unwrap();
    let elsewhere = project(root.path(), "elsewhere");
    let proj = project(root.path(), "proj");

    // `/new` starts the next session in the same directory.
    let out = piped(
        &daemon,
        &elsewhere,
        &["--cwd", "../proj"],
        "named dir\n/new\nnext one\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr
            .matches(&format!("· cwd {} ·", proj.display()))
            .count(),
        2,
        "{stderr}"
    );
    let mut c = daemon.client();
    assert_eq!(sessions_in(&mut c, &proj).len(), 2);
    assert_eq!(sessions_in(&mut c, &elsewhere).len(), 0);

    let out = piped(&daemon, &elsewhere, &["--cwd", "no-such-dir"], "x\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no-such-dir\" is not an existing directory (code -32602)"),
        "{stderr}"
    );
}

#[test]
fn continue_and_resume_stay_in_this_directory() {
    let daemon = TestDaemon::start();
    let root = tempfile::tempdir().unwrap();
    let a = project(root.path(), "a");
    let b = project(root.path(), "b");
    let empty = project(root.path(), "empty");
    for (dir, prompt) in [(&a, "first-a"), (&a, "second-a"), (&b, "b-one")] {
        let out = piped(&daemon, dir, &[], &format!("{prompt}\n"));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let mut c = daemon.client();
    let first = titled(&mut c, &a, "first-a");
    let second = titled(&mut c, &a, "second-a");
    let other = titled(&mut c, &b, "b-one");

    // -c: the newest of this directory, though another directory's is newer still.
    let out = piped(&daemon, &a, &["-c"], "continued\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("resumed (2 messages)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(prompts(&mut c, &second), ["second-a", "continued"]);
    assert_eq!(prompts(&mut c, &first), ["first-a"]);
    assert_eq!(prompts(&mut c, &other), ["b-one"]);
    // Nothing here yet: a new session in this directory.
    let out = piped(&daemon, &empty, &["--continue"], "fresh\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no default session in"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(sessions_in(&mut c, &empty).len(), 1);

    // --resume: a numbered list of this directory's sessions, newest first.
    let mut w = ChatWindow::open_in(daemon.config_dir(), Some(&a), &["--resume"]);
    w.expect(&format!("sessions of default in {}:", a.display()));
    w.expect("resume which? (number, Enter for a new session) ");
    let screen = w.screen();
    let listed: Vec<&String> = screen.iter().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(listed.len(), 2, "{screen:#?}");
    assert!(listed[0].starts_with("  1) second-a · "), "{screen:#?}");
    assert!(listed[0].contains(" · 4 messages · "), "{screen:#?}");
    assert!(listed[1].starts_with("  2) first-a · "), "{screen:#?}");
    assert!(listed[1].contains(" ago · 2 messages · "), "{screen:#?}");
    assert!(!screen.iter().any(|l| l.contains("b-one")), "{screen:#?}");
    w.send(&format!("7{ENTER}"));
    w.expect("[type a number from 1 to 2]");
    w.send(&format!("2{ENTER}"));
    w.expect("resumed (2 messages)");
    w.prompt();
    w.send(&format!("picked{ENTER}"));
    w.turn_end();
    w.prompt();
    w.leave();
    assert_eq!(prompts(&mut c, &first), ["first-a", "picked"]);
}

#[test]
fn the_banner_says_what_answers_with_the_echo_provider() {
    let daemon = TestDaemon::start();
    let root = tempfile::tempdir().unwrap();
    let proj = project(root.path(), "proj");
    let mut w = ChatWindow::open_in(daemon.config_dir(), Some(&proj), &[]);
    w.prompt();
    let screen = w.screen();
    let at = screen
        .iter()
        .position(|l| l.starts_with("agent default · "))
        .unwrap_or_else(|| panic!("no banner: {screen:#?}"));
    let line = &screen[at];
    let sandbox = line.rsplit(" · sandbox ").next().unwrap_or("");
    assert_eq!(
        line,
        &format!(
            "agent default · echo · cwd {} · autonomy supervised · sandbox {sandbox}",
            proj.display()
        )
    );
    assert!(!sandbox.is_empty(), "{line}");
    assert_eq!(
        screen[at + 1],
        "the echo provider answers with your own words; README \"Setting up a real model\" connects a real model"
    );
    w.leave();
    // The README has the section it names.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    assert!(readme.contains("\n### Setting up a real model\n"));
}

/// Waits until the session has `n` subscribers.
fn wait_subscribers(c: &mut Conn, session: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = c.result("session/status", json!({"sessionId": session}));
        if st["subscribers"] == n {
            return;
        }
        assert!(Instant::now() < deadline, "{st}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_idle_window_asks_the_approval_of_another_windows_turn() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo from-one"}),
    ));
    fake.push(Scripted::text("finished"));
    let daemon = with_fake(&fake);
    let dir = daemon.config_dir();
    let mut one = ChatWindow::open(dir, &["--session", "shared"]);
    one.prompt();
    let mut two = ChatWindow::open(dir, &["--session", "shared"]);
    two.prompt();
    let mut c = daemon.client();
    wait_subscribers(&mut c, "shared", 1);
    // A prompt being typed in the idle window when the question comes.
    two.send("half typed");
    two.expect("half typed");

    one.send(&format!("run it{ENTER}"));
    one.expect("allow bash `echo from-one`?");
    // The idle window asks too, and answers.
    two.expect("allow bash `echo from-one`?");
    two.send(&format!("y{ENTER}"));
    two.expect("finished");
    one.expect("[bash `echo from-one`: allowed once by operator from a chat]");
    one.expect("finished");
    one.turn_end();
    two.turn_end();
    let screen = one.screen();
    assert!(screen.iter().any(|l| l == "  → from-one"), "{screen:#?}");
    let screen = two.screen();
    assert!(screen.iter().any(|l| l == "  → from-one"), "{screen:#?}");
    assert!(
        !screen.iter().any(|l| l.contains("allowed once by")),
        "the window that answered is not told: {screen:#?}"
    );
    one.prompt();
    one.leave();
    // What was being typed is back in the prompt's line.
    two.prompt();
    two.expect("half typed");
    let screen = two.screen();
    assert_eq!(
        screen.last().map(String::as_str),
        Some("> half typed"),
        "{screen:#?}"
    );
    // Ctrl-U clears it; Ctrl-D leaves.
    two.send("\x15");
    two.leave();
    let mut c = daemon.client();
    assert_eq!(prompts(&mut c, "shared"), ["run it"]);
}

#[test]
fn piped_exit_status_says_whether_a_turn_failed() {
    let fake = Fake::start();
    fake.push(Scripted::text("fine"));
    fake.push(Scripted::http_error(400, "no such model here"));
    let daemon = with_fake(&fake);
    let root = tempfile::tempdir().unwrap();
    let proj = project(root.path(), "proj");
    let out = piped(&daemon, &proj, &[], "all good\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("fine"));
    let out = piped(&daemon, &proj, &[], "this fails\n");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("turn failed: "), "{stderr}");
    assert!(stderr.contains("no such model here"), "{stderr}");
}

#[test]
fn approvals_that_cannot_be_asked_are_rejected_or_decided_by_approve() {
    let fake = Fake::start();
    let daemon = with_fake(&fake);
    let root = tempfile::tempdir().unwrap();
    let proj = project(root.path(), "proj");
    let marker = proj.join("ran");
    let command = format!("touch {}", marker.display());

    for (args, ran) in [
        (&["--approve=none"][..], false),
        (&["--approve", "read_only"][..], false),
        (&[][..], false),
        (&["--approve=all"][..], true),
    ] {
        fake.push(Scripted::tool_call(
            "call_1",
            "bash",
            json!({"command": command}),
        ));
        fake.push(Scripted::text("over"));
        let out = piped(&daemon, &proj, args, "touch it\n");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        let line = match args {
            [] => format!(
                "zeroclaw: rejected bash `{command}`: no input left to ask; --approve=all|read_only|none decides approvals without asking"
            ),
            ["--approve=all"] => format!("zeroclaw: allowed bash `{command}` (--approve=all)"),
            ["--approve=none"] => format!("zeroclaw: rejected bash `{command}` (--approve=none)"),
            _ => format!("zeroclaw: rejected bash `{command}` (--approve=read_only)"),
        };
        assert!(stderr.lines().any(|l| l == line), "{args:?}: {stderr}");
        assert_eq!(marker.exists(), ran, "{args:?}: {stderr}");
        // Decided by --approve: nothing was asked.
        if !args.is_empty() {
            assert!(!text(&out.stdout).contains("[y]es/[n]o"), "{args:?}");
        }
    }
    let out = piped(&daemon, &proj, &["--approve=sometimes"], "x\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--approve"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn keys_typed_while_a_turn_streams_wait_unechoed_and_tables_are_aligned() {
    let fake = Fake::start();
    fake.push(Scripted::chunks(
        ["slow ", "first ", "answer"],
        Duration::from_millis(400),
    ));
    fake.push(Scripted::text(
        "Counts:\n| name | n |\n|---|--:|\n| alpha | 1 |\n| b | 1234 |\n",
    ));
    let daemon = with_fake(&fake);
    let mut w = ChatWindow::open_echoing(daemon.config_dir(), &["--session", "typed"]);
    w.prompt();
    w.send(&format!("one{ENTER}"));
    w.expect("slow ");
    // Typed while the answer streams, no Enter yet.
    w.send("typed-ahead");
    w.turn_end();
    // The next prompt has it in its line, to edit or send.
    w.expect("typed-ahead");
    let screen = w.screen();
    assert_eq!(
        screen.last().map(String::as_str),
        Some("> typed-ahead"),
        "{screen:#?}"
    );
    assert!(
        screen.iter().any(|l| l == "slow first answer"),
        "the streamed text is whole: {screen:#?}"
    );
    assert_eq!(
        screen.iter().filter(|l| l.contains("typed-ahead")).count(),
        1,
        "typed once, shown once, at the prompt: {screen:#?}"
    );
    w.send(ENTER);
    w.turn_end();
    let screen = w.screen();
    let at = screen
        .iter()
        .position(|l| l == "Counts:")
        .unwrap_or_else(|| panic!("{screen:#?}"));
    assert_eq!(
        screen[at + 1..at + 5],
        [
            "name  │    n",
            "──────┼─────",
            "alpha │    1",
            "b     │ 1234"
        ],
        "{screen:#?}"
    );
    w.prompt();
    w.leave();
    let mut c = daemon.client();
    assert_eq!(prompts(&mut c, "typed"), ["one", "typed-ahead"]);
}

#[test]
fn one_key_answers_an_approval_on_a_terminal() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo first-ran"}),
    ));
    fake.push(Scripted::tool_call(
        "call_2",
        "bash",
        json!({"command": "echo second-ran"}),
    ));
    fake.push(Scripted::text("both asked"));
    let daemon = with_fake(&fake);
    let mut w = ChatWindow::open(daemon.config_dir(), &["--session", "keys"]);
    w.prompt();
    w.send(&format!("run both{ENTER}"));
    w.expect("allow bash `echo first-ran`? [y]es/[n]o/[a]lways ");
    // No Enter: the key is the answer.
    w.send("y");
    w.expect("  → first-ran");
    w.expect("allow bash `echo second-ran`? [y]es/[n]o/[a]lways ");
    w.send("n");
    w.expect("both asked");
    w.turn_end();
    w.prompt();
    let screen = w.screen();
    assert!(
        screen
            .iter()
            .any(|l| l == "allow bash `echo first-ran`? [y]es/[n]o/[a]lways y"),
        "{screen:#?}"
    );
    assert!(
        screen
            .iter()
            .any(|l| l == "allow bash `echo second-ran`? [y]es/[n]o/[a]lways n"),
        "{screen:#?}"
    );
    assert!(
        !screen.iter().any(|l| l.contains("→ second-ran")),
        "{screen:#?}"
    );
    // The line editor works as before afterwards.
    w.send(&format!("/title keyed{ENTER}"));
    w.expect("[title: keyed]");
    w.prompt();
    w.leave();
}

/// A one-connection daemon played by the test: answers `initialize`, refuses the first
/// `session/new` (the chat's directory, outside a non-admin's workspace, SPEC §17.1) and
/// accepts the second; returns the two `session/new` params.
fn refusing_daemon(socket: &Path) -> std::thread::JoinHandle<Vec<Value>> {
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixListener;

    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut news = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return news;
            }
            let msg: Value = serde_json::from_str(&line).unwrap();
            let answer = match msg["method"].as_str() {
                Some("initialize") => json!({"result": {"protocolVersion": 1,
                    "principal": {"id": "user:bob", "admin": false}}}),
                Some("session/new") if news.is_empty() => {
                    news.push(msg["params"].clone());
                    json!({"error": {"code": -32012,
                        "message": "cwd is outside the agent's workspace"}})
                }
                Some("session/new") => {
                    news.push(msg["params"].clone());
                    json!({"result": {"sessionId": "s-1", "agentAlias": "default",
                        "mode": "acp", "messageCount": 0, "workspaceDir": "/w",
                        "resumed": false}})
                }
                Some("session/status") => json!({"result": {"sessionId": "s-1",
                    "mode": "acp", "agentAlias": "default", "autonomy": "supervised",
                    "model": "m", "activeTurnId": null, "queuedPrompts": 0,
                    "subscribers": 0, "usage": {"sessionTotalTokens": 0,
                    "contextTokens": 0, "contextWindow": 0}, "mcpServers": [],
                    "sandbox": "off", "cwd": "/w", "provider": "openai"}}),
                _ => continue,
            };
            let mut answer = answer;
            answer["jsonrpc"] = json!("2.0");
            answer["id"] = msg["id"].clone();
            let mut text = answer.to_string();
            text.push('\n');
            writer.write_all(text.as_bytes()).unwrap();
        }
    })
}

#[test]
fn a_directory_a_non_admin_may_not_use_falls_back_to_the_workspace_unless_named() {
    let root = tempfile::tempdir().unwrap();
    let proj = project(root.path(), "proj");
    let run = |args: &[&str]| {
        let socket = root.path().join("fake.sock");
        let _ = std::fs::remove_file(&socket);
        let daemon = refusing_daemon(&socket);
        let out = Command::new(BIN)
            .arg("chat")
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .current_dir(&proj)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out, daemon.join().unwrap())
    };
    // Not named: said, and the session starts in the agent's workspace.
    let (out, news) = run(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(news.len(), 2, "{news:?}");
    assert_eq!(news[0]["cwd"], proj.display().to_string());
    assert!(news[1].get("cwd").is_none(), "{news:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "[{} is outside what you may use (cwd is outside the agent's workspace); working in the agent's workspace]",
            proj.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("· cwd /w ·"), "{stderr}");
    // Named with --cwd: the refusal is the answer.
    let (out, news) = run(&["--cwd", "."]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(news.len(), 1, "{news:?}");
    assert!(
        text(&out.stderr).contains("cwd is outside the agent's workspace"),
        "{}",
        text(&out.stderr)
    );
}
