//! `zeroclaw chat` windows on pseudo-terminals, read the way a person reads them (what the
//! terminal shows, not the bytes): a prompt typed in one window appears whole in another
//! one on the same session, with its sender, and never twice in its own (SPEC §18
//! "Clients"); lines typed ahead are handled in order after the turn, as a shell does; the
//! session commands `/title`, `/fork`, `/compact`, `/rewind`.

mod common;

use std::time::{Duration, Instant};

use common::screen::Screen;
use common::{Conn, Fake, TestDaemon};
use serde_json::json;
use zeroclaw_testkit::Scripted;
use zeroclaw_testkit::chat_window::ChatWindow;

const ENTER: &str = "\r";

/// Lines of `screen` that are exactly `line`, or start with it and go on with a space.
fn count_lines(screen: &[String], line: &str) -> usize {
    screen
        .iter()
        .filter(|l| *l == line || l.strip_prefix(line).is_some_and(|r| r.starts_with(' ')))
        .count()
}

/// Waits until the session has `n` subscribers.
fn wait_subscribers(c: &mut Conn, session: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = c.result("session/list", json!({}));
        let entry = list["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["sessionId"] == session).cloned())
            .unwrap_or_default();
        if entry["subscribers"] == n {
            return;
        }
        assert!(Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(20));
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
fn the_screen_model_drops_what_the_terminal_drops() {
    let s = Screen::of("> hi\r\nalpha \r⠋ thinking…\r\x1b[Kbeta\r\n> \x1b[1mx\x1b[0m");
    assert_eq!(s.lines(), ["> hi", "beta", "> x"]);
    let s = Screen::of("abc\x1b[2Dz\r\ndef\x1b[A\rq");
    assert_eq!(s.lines(), ["qzc", "def"]);
}

#[test]
fn a_prompt_typed_in_one_window_appears_whole_in_the_other() {
    let daemon = TestDaemon::start();
    let dir = daemon.config_dir();
    let mut one = ChatWindow::open(dir, &["--session", "two-windows"]);
    one.prompt();
    let mut two = ChatWindow::open(dir, &["--session", "two-windows"]);
    two.prompt();
    let mut c = daemon.client();
    wait_subscribers(&mut c, "two-windows", 1);

    // The echo agent answers with the prompt's words, streamed one by one.
    one.send(&format!("alpha beta gamma delta{ENTER}"));
    one.turn_end();
    two.turn_end();
    let screen = two.screen();
    // The answer whole, its first word included.
    assert_eq!(
        count_lines(&screen, "alpha beta gamma delta"),
        1,
        "{screen:#?}"
    );
    // The prompt, with its sender.
    assert_eq!(
        count_lines(&screen, "> alpha beta gamma delta · operator"),
        1,
        "{screen:#?}"
    );
    // The window that sent it shows it once: as typed.
    let screen = one.screen();
    assert_eq!(
        count_lines(&screen, "> alpha beta gamma delta"),
        1,
        "{screen:#?}"
    );
    assert_eq!(
        count_lines(&screen, "> alpha beta gamma delta · operator"),
        0
    );

    // And the other way round: the first window is subscribed since its prompt.
    one.prompt();
    two.prompt();
    two.send(&format!("epsilon zeta eta{ENTER}"));
    two.turn_end();
    one.turn_end();
    let screen = one.screen();
    assert_eq!(count_lines(&screen, "epsilon zeta eta"), 1, "{screen:#?}");
    assert_eq!(
        count_lines(&screen, "> epsilon zeta eta · operator"),
        1,
        "{screen:#?}"
    );
    // The prompt is back once the watched turn is over, and works.
    one.prompt();
    one.send(&format!("theta{ENTER}"));
    one.turn_end();
    one.prompt();
    one.leave();
    two.prompt();
    two.leave();
    assert_eq!(
        prompts(&daemon, "two-windows"),
        ["alpha beta gamma delta", "epsilon zeta eta", "theta"]
    );
}

#[test]
fn lines_typed_ahead_run_in_order_then_quit() {
    let daemon = TestDaemon::start();
    let mut w = ChatWindow::open(daemon.config_dir(), &["--session", "ahead"]);
    w.prompt();
    // Typed fast: both lines arrive in one read of the terminal.
    w.send(&format!("zebra crossing{ENTER}/quit{ENTER}"));
    w.exits();
    assert_eq!(prompts(&daemon, "ahead"), ["zebra crossing"]);
}

#[test]
fn lines_typed_while_a_turn_streams_wait_for_it() {
    let fake = Fake::start();
    fake.push(Scripted::chunks(
        ["slow ", "first ", "answer"],
        Duration::from_millis(400),
    ));
    fake.push(Scripted::text("second answer"));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut w = ChatWindow::open(daemon.config_dir(), &["--session", "streaming"]);
    w.prompt();
    w.send(&format!("one{ENTER}"));
    w.expect("slow ");
    // Typed while the answer streams.
    w.send(&format!("two{ENTER}/quit{ENTER}"));
    w.expect("second answer");
    w.exits();
    assert_eq!(prompts(&daemon, "streaming"), ["one", "two"]);
}

#[test]
fn title_rewind_compact_and_fork_from_the_chat() {
    let daemon = TestDaemon::start();
    let mut w = ChatWindow::open(daemon.config_dir(), &["--session", "cmds"]);
    w.prompt();
    w.send(&format!("first prompt{ENTER}"));
    w.turn_end();
    w.prompt();
    w.send(&format!("second prompt{ENTER}"));
    w.turn_end();
    w.prompt();

    w.send(&format!("/title My work{ENTER}"));
    w.expect("[title: My work]");
    w.prompt();

    // The rewound prompt comes back in the line: Enter sends it again.
    w.send(&format!("/rewind{ENTER}"));
    // It lists what it takes back and asks first (SPEC §22).
    w.expect("> second prompt");
    w.expect("rewind? [y/N] ");
    w.send(&format!("y{ENTER}"));
    w.expect("[rewound 1 turn(s)]");
    w.expect("> second prompt");
    w.send(ENTER);
    w.turn_end();
    w.prompt();
    assert_eq!(prompts(&daemon, "cmds"), ["first prompt", "second prompt"]);
    let mut c = daemon.client();
    let all = c.result(
        "session/messages",
        json!({"sessionId": "cmds", "includeRewound": true}),
    );
    let rewound = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["rewound"] == true)
        .count();
    assert_eq!(rewound, 2, "the first second prompt and its answer: {all}");

    w.send(&format!("/rewind 5{ENTER}"));
    w.expect("[the session has only 2 turns to rewind]");
    w.prompt();
    w.send(&format!("/rewind two{ENTER}"));
    w.expect("/rewind takes a number of turns");
    w.prompt();

    // With three turns the oldest is summarized (the last two are kept whole).
    w.send(&format!("third prompt{ENTER}"));
    w.turn_end();
    w.prompt();
    w.send(&format!("/compact keep the prompts{ENTER}"));
    w.expect("[context compacted: ");
    w.prompt();

    w.send(&format!("/fork{ENTER}"));
    w.expect("[forked cmds into ");
    w.expect("this window goes on in ");
    w.prompt();
    w.send(&format!("in the fork{ENTER}"));
    w.turn_end();
    w.prompt();
    w.leave();

    let list = c.result("session/list", json!({}));
    let sessions = list["sessions"].as_array().unwrap();
    let original = sessions.iter().find(|s| s["sessionId"] == "cmds").unwrap();
    assert_eq!(original["title"], "My work", "{list}");
    let fork = sessions
        .iter()
        .find(|s| s["forkedFrom"]["sessionId"] == "cmds")
        .unwrap_or_else(|| panic!("no fork in {list}"));
    let fork_id = fork["sessionId"].as_str().unwrap();
    assert_eq!(
        prompts(&daemon, fork_id),
        [
            "first prompt",
            "second prompt",
            "third prompt",
            "in the fork"
        ]
    );
    // The original did not get the fork's prompt.
    assert_eq!(
        prompts(&daemon, "cmds"),
        ["first prompt", "second prompt", "third prompt"]
    );
}
