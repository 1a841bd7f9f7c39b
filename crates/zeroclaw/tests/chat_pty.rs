//! `zeroclaw chat` on a pseudo-terminal, as a person uses it: the line editor (cursor
//! keys, history recalled with Up and kept in the data dir across runs), slash commands
//! that never reach the model, markdown rendered as the reply streams, and a resumed
//! session showing its earlier messages before the prompt. Against the real daemon.

mod common;

use std::path::Path;
use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

use common::{BIN, Fake, TestDaemon};

const LEFT: &str = "\x1b[D";
const UP: &str = "\x1b[A";
const ENTER: &str = "\r";

/// `zeroclaw chat` on a pty, without colours (`NO_COLOR`), waiting up to 20 s per expect.
fn chat(config_dir: &Path, args: &[&str]) -> PtySession {
    chat_env(config_dir, args, &[("NO_COLOR", "1")])
}

fn chat_env(config_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut cmd = Command::new(BIN);
    cmd.arg("chat")
        .arg("--config-dir")
        .arg(config_dir)
        .args(args)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .env("TERM", "xterm")
        .env("RUST_LOG", "warn");
    spawn_command(cmd, Some(20_000)).expect("spawn chat on a pty")
}

/// What rexpect matches against: it reads the terminal byte by byte, one `char` each.
fn raw(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// Terminal text as rexpect returned it, back to UTF-8.
fn text(got: &str) -> String {
    String::from_utf8_lossy(&got.chars().map(|c| c as u8).collect::<Vec<u8>>()).into_owned()
}

/// Expects `needle` (UTF-8); returns the text before it.
fn expect(p: &mut PtySession, needle: &str) -> String {
    match p.exp_string(&raw(needle)) {
        Ok(before) => text(&before),
        Err(e) => panic!("expected {needle:?}: {}", text(&format!("{e:?}"))),
    }
}

/// Waits for the start of a reply: the spinner is cleared (`ESC[K`) right before the
/// reply's first text, which tells the reply from the line editor showing the prompt.
fn reply(p: &mut PtySession, start: &str) {
    expect(p, &format!("\x1b[K{start}"));
}

fn send(p: &mut PtySession, keys: &str) {
    p.send(keys).expect("send keys");
    p.flush().expect("flush keys");
}

/// Waits for the prompt of the line editor.
fn prompt(p: &mut PtySession) {
    expect(p, "> ");
}

/// Ctrl-D at the prompt: the chat ends with status 0.
fn leave(mut p: PtySession) {
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("chat exits");
    match p.process_mut().wait().expect("wait") {
        WaitStatus::Exited(_, 0) => {}
        other => panic!("chat ended with {other:?}"),
    }
}

/// The user prompts recorded in the session's transcript.
fn prompts(daemon: &TestDaemon, session: &str) -> Vec<String> {
    let mut c = daemon.client();
    c.messages(session)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn line_editing_history_slash_commands_and_resume() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    let mut p = chat(dir, &["--session", "pty-1"]);
    prompt(&mut p);

    // Slash commands are the chat's own.
    send(&mut p, &format!("/help{ENTER}"));
    expect(&mut p, "commands (not sent to the model)");
    expect(
        &mut p,
        "Ctrl-C cancels a running turn (at the prompt it exits)",
    );
    prompt(&mut p);
    send(&mut p, &format!("/nope{ENTER}"));
    expect(&mut p, "unknown command /nope; /help lists the commands");
    prompt(&mut p);

    // Type, move left over three characters, insert: the edited line is sent.
    send(&mut p, &format!("wrld{LEFT}{LEFT}{LEFT}o{ENTER}"));
    reply(&mut p, "world");
    prompt(&mut p);
    // Up recalls it.
    send(&mut p, &format!("{UP}{ENTER}"));
    reply(&mut p, "world");
    prompt(&mut p);
    leave(p);
    assert_eq!(prompts(&daemon, "pty-1"), ["world", "world"]);
    let history = std::fs::read_to_string(daemon.data_dir().join("chat_history")).unwrap();
    assert!(history.contains("world"), "{history}");

    // A new run resumes the session: earlier messages first, and the history is back.
    let mut p = chat(dir, &["--session", "pty-1"]);
    expect(&mut p, "── 4 earlier messages ──");
    let earlier = expect(&mut p, "\n──\r\n");
    assert_eq!(earlier.matches("> world").count(), 2, "{earlier:?}");
    prompt(&mut p);
    send(&mut p, &format!("{UP}{ENTER}"));
    reply(&mut p, "world");
    prompt(&mut p);
    send(&mut p, &format!("/quit{ENTER}"));
    p.exp_eof().unwrap();
    assert_eq!(prompts(&daemon, "pty-1"), ["world", "world", "world"]);
}

#[test]
fn markdown_renders_as_the_reply_streams() {
    let fake = Fake::start();
    for _ in 0..2 {
        fake.push(zeroclaw_testkit::Scripted::chunks(
            [
                "# Plan\n\nHere is **the code**:\n``",
                "`rust\nlet x = 1;\n```\n- first item\n",
                "- second `item`\n",
            ],
            std::time::Duration::from_millis(20),
        ));
    }
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut p = chat(daemon.config_dir(), &[]);
    prompt(&mut p);
    send(&mut p, &format!("show me{ENTER}"));
    let before = expect(&mut p, "  ╭─ rust\r\n");
    assert!(
        before.contains("Plan\r\n\r\nHere is the code:\r\n"),
        "{before:?}"
    );
    assert!(
        !before.contains("# Plan") && !before.contains("**"),
        "{before:?}"
    );
    expect(
        &mut p,
        "  │ let x = 1;\r\n  ╰─\r\n• first item\r\n• second `item`\r\n",
    );
    prompt(&mut p);
    leave(p);
    assert!(fake.requests()[0].to_string().contains("show me"));
}

#[test]
fn approvals_in_the_line_editor_and_ctrl_c_cancels_a_turn() {
    use zeroclaw_testkit::Scripted;

    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        serde_json::json!({"command": "echo approved-output"}),
    ));
    fake.push(Scripted::text("all done"));
    // The second turn streams slowly: Ctrl-C cancels it.
    fake.push(Scripted::chunks(
        ["working ", "on ", "it ", "still ", "more"],
        std::time::Duration::from_secs(2),
    ));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut p = chat(daemon.config_dir(), &[]);
    prompt(&mut p);
    send(&mut p, &format!("run it{ENTER}"));
    // The question is the line editor's prompt.
    expect(
        &mut p,
        "allow bash `echo approved-output`? [y]es/[n]o/[a]lways ",
    );
    send(&mut p, &format!("y{ENTER}"));
    expect(&mut p, "  → approved-output\r\n");
    expect(&mut p, "all done\r\n");
    prompt(&mut p);

    send(&mut p, &format!("second{ENTER}"));
    reply(&mut p, "working ");
    p.send_control('c').unwrap();
    expect(&mut p, "[cancelling the turn (Ctrl-C again to exit)]");
    expect(&mut p, "[turn cancelled]");
    prompt(&mut p);
    leave(p);
}
