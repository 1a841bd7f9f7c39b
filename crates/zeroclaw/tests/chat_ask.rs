//! An ask-user question in every `zeroclaw chat` window (SPEC §22 "Approvals reach every
//! face"): the question a turn asks is shown in the window that prompted and in another
//! window idle at its prompt; the idle one answers, the turn goes on with that answer, and
//! the prompting window and a third one (where a prompt was being typed) drop their copy
//! with a line saying who answered; the typed line is still being edited afterwards. Windows are pseudo-terminals read as a person reads them.

mod common;

use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, session_config};
use serde_json::json;
use zeroclaw_testkit::Scripted;
use zeroclaw_testkit::chat_window::ChatWindow;

const ENTER: &str = "\r";

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
fn the_idle_window_answers_a_question_and_the_other_drops_it() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "call_1",
        "ask_user",
        json!({"question": "which colour?"}),
    ));
    fake.push(Scripted::text("finished"));
    fake.push(Scripted::text("second answer"));
    let config = session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let dir = daemon.config_dir();
    let mut one = ChatWindow::open(dir, &["--session", "asked"]);
    one.prompt();
    let mut two = ChatWindow::open(dir, &["--session", "asked"]);
    two.prompt();
    let mut three = ChatWindow::open(dir, &["--session", "asked"]);
    three.prompt();
    let mut c = daemon.client();
    wait_subscribers(&mut c, "asked", 2);
    // A prompt being typed in the third window when the question comes.
    three.send("half typed");
    three.expect("half typed");

    one.send(&format!("ask me{ENTER}"));
    one.expect("? which colour?");
    // The idle window is asked too, and answers.
    two.expect("? which colour?");
    two.send(&format!("teal{ENTER}"));
    two.expect("finished");
    // The prompting window drops its copy, says who answered, and the turn goes on.
    one.expect("[question `which colour?`: answered by operator from a chat]");
    one.expect("finished");
    // The third window too, and what was being typed there stays.
    three.expect("? which colour?");
    three.expect("[question `which colour?`: answered by operator from a chat]");
    three.expect("finished");
    one.turn_end();
    two.turn_end();
    three.turn_end();
    let screen = two.screen();
    assert!(
        !screen.iter().any(|l| l.contains("answered by")),
        "the window that answered is not told: {screen:#?}"
    );
    // The model got the idle window's answer.
    let sent = fake.requests();
    assert!(
        sent[1]["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"
                && m["content"].as_str().is_some_and(|c| c.contains("teal")))),
        "{:?}",
        sent[1]
    );
    // Both windows take prompts again.
    one.prompt();
    one.send(&format!("/quit{ENTER}"));
    one.exits();
    two.prompt();
    two.leave();
    // The line being typed when the question came is still the line being edited:
    // Enter sends it as the next prompt.
    three.prompt();
    three.send(ENTER);
    three.expect("second answer");
    three.turn_end();
    three.prompt();
    three.leave();
    let prompts: Vec<String> = c
        .messages("asked")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(prompts, ["ask me", "half typed"]);
}
