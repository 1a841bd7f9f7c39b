//! `zeroclaw chat` on a pseudo-terminal around tools (SPEC §22 "Live tool output", "What
//! a turn changed"), read the way a person reads it (what the terminal shows):
//!
//! - the approval of a command longer than the daemon's old 500-character cut shows it
//!   whole, wrapped, its last word included and no "…";
//! - while `bash` runs, its last lines and a running clock are shown under the tool's line,
//!   which names the command (not JSON); once it ends the block is gone from the screen;
//! - `/diff` lists the files the session changed with counts and the patch;
//! - `/rewind --keep-files` asks, then takes the turn back and leaves the files; `/rewind`
//!   lists the turn and the files it will restore (those of the turn rewound earlier
//!   without its files too), asks, and says which files came back; a chat resuming the
//!   session shows the rewind's transcript row as a sentence.

mod common;

use common::{Fake, TestDaemon};
use serde_json::json;
use zeroclaw_testkit::Scripted;
use zeroclaw_testkit::chat_window::ChatWindow;

const ENTER: &str = "\r";
/// Ctrl-U: the line editor empties the line (a rewound prompt is put back in it).
const KILL_LINE: &str = "\x15";

#[test]
fn live_output_whole_approvals_diff_and_rewind_in_the_chat() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    // Over 500 characters, ending in a word that must be seen.
    let command = format!(
        "for i in 1 2 3; do echo line-$i; sleep 0.5; done; echo created > made.txt # {} END-OF-COMMAND",
        "pad ".repeat(130)
    );
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({ "command": command }),
    ));
    fake.push(Scripted::text("first done"));
    fake.push(Scripted::tool_call(
        "c2",
        "bash",
        json!({ "command": "echo more > more.txt" }),
    ));
    fake.push(Scripted::text("second done"));
    let config = common::session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    // The session works in `work` (made here; the chat resumes it).
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "tools", "cwd": work.path()}));

    let mut w = ChatWindow::open(daemon.config_dir(), &["--session", "tools"]);
    w.prompt();
    w.send(&format!("run it{ENTER}"));
    // The tool's line names the command; the approval shows it whole.
    w.expect("⚙ bash: for i in 1 2 3; do echo line-$i;");
    w.expect("allow bash?");
    w.expect("END-OF-COMMAND");
    w.expect("[y]es/[n]o/[a]lways ");
    // The question's lines (the tool's line above them is a one-line summary).
    let screen = w.screen();
    let asked: Vec<&String> = screen
        .iter()
        .skip_while(|l| !l.starts_with("allow bash?"))
        .collect();
    let words: usize = asked.iter().map(|l| l.matches("pad").count()).sum();
    assert_eq!(words, 130, "every word of the command: {asked:#?}");
    assert!(
        asked.iter().all(|l| !l.contains('…')),
        "cut with an ellipsis: {asked:#?}"
    );
    w.send(&format!("y{ENTER}"));

    // While it runs: its last lines and the clock, in place.
    w.expect("│ line-1");
    w.expect("⏱ running ");
    w.expect("│ line-2");
    // The rest of that drawing: the clock under the lines.
    w.expect("⏱ running ");
    w.expect(" s");
    let running = w.screen();
    assert!(
        running.iter().any(|l| l.starts_with("  ⏱ running ")),
        "{running:?}"
    );
    assert_eq!(
        running.iter().filter(|l| l.contains("⏱ running")).count(),
        1,
        "redrawn in place, not repeated: {running:?}"
    );
    w.turn_end();
    w.prompt();
    let after = w.screen();
    assert!(
        !after.iter().any(|l| l.contains("⏱ running")),
        "the block goes when the result comes: {after:?}"
    );
    assert!(after.iter().any(|l| l.contains("first done")), "{after:?}");
    assert!(
        !after.iter().any(|l| l.contains("{\"command\"")),
        "no raw JSON: {after:?}"
    );

    // What the session changed.
    w.send(&format!("/diff{ENTER}"));
    w.expect("1 file changed");
    w.expect("A made.txt +1 -0");
    w.expect("+created");
    w.prompt();

    // A second turn, taken back without its files.
    w.send(&format!("again{ENTER}"));
    w.expect("allow bash `echo more > more.txt`?");
    w.send(&format!("y{ENTER}"));
    w.turn_end();
    w.prompt();
    w.send(&format!("/rewind --keep-files{ENTER}"));
    w.expect("/rewind takes back 1 turn(s):");
    w.expect("> again");
    w.expect("files stay as they are (--keep-files)");
    w.expect("rewind? [y/N] ");
    w.send(&format!("y{ENTER}"));
    w.expect("[rewound 1 turn(s); files kept as they are]");
    assert!(work.path().join("more.txt").exists());

    // The first turn, with the files made since (the kept one too): listed, asked, said.
    w.send(&format!("{KILL_LINE}/rewind{ENTER}"));
    w.expect("> run it");
    w.expect("files it will restore (2):");
    w.expect("A made.txt (removed again)");
    w.expect("A more.txt (removed again)");
    w.expect("rewind? [y/N] ");
    w.send(&format!("y{ENTER}"));
    w.expect("[rewound 1 turn(s); files restored: made.txt, more.txt]");
    assert!(!work.path().join("made.txt").exists());
    assert!(!work.path().join("more.txt").exists());
    w.send(KILL_LINE);
    w.leave();

    // A chat that resumes the session shows the rewind's row as a sentence, not JSON.
    let mut again = ChatWindow::open(daemon.config_dir(), &["--session", "tools"]);
    again.expect("[rewound 1 turn(s); files restored: made.txt, more.txt]");
    again.prompt();
    assert!(
        !again.screen().iter().any(|l| l.contains("toTurnId")),
        "{:?}",
        again.screen()
    );
    again.leave();
}
