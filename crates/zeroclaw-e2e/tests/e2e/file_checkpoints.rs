//! File checkpoints through the real binary (SPEC §18 "File checkpoints"): every ACP turn
//! start records the session's working directory under `<data dir>/checkpoints/`, a tree
//! over the limits leaves the turn unrestorable but running, and `session/delete` removes
//! the session's checkpoints. The restore itself is driven here through the checkpoint
//! crate on the stopped daemon's data dir (`session/rewind` drives it in the daemon).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Conn, Fake, TestDaemon};
use serde_json::json;
use zeroclaw_checkpoint::Checkpoints;
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake) -> TestDaemon {
    common::tool_agent::start(fake, "files")
}

fn new_session(c: &mut Conn, cwd: &Path) -> String {
    common::tool_agent::new_session(c, "files", cwd)
}

/// Runs one turn in which the agent runs `command` with its bash tool; returns the turn id.
fn bash_turn(fake: &Fake, c: &mut Conn, sid: &str, command: &str) -> String {
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({ "command": command }),
    ));
    fake.push(Scripted::text("done"));
    let (_, resp) = c.prompt(sid, "change some files");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    resp["result"]["turnId"]
        .as_str()
        .expect("turnId")
        .to_owned()
}

fn stop(daemon: &mut TestDaemon) {
    daemon.signal(libc::SIGTERM);
    assert!(
        daemon.wait_exit(Duration::from_secs(15)).is_some(),
        "the daemon stops"
    );
}

#[test]
fn a_turn_start_records_the_cwd_and_its_restore_undoes_the_agents_bash() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("notes.txt"), "before the turn").expect("write");
    std::fs::write(work.path().join(".gitignore"), "build/\n").expect("write");
    std::fs::create_dir(work.path().join("build")).expect("mkdir");
    let mut daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());

    let first = bash_turn(
        &fake,
        &mut c,
        &sid,
        "echo made > created.txt && echo edited > notes.txt && echo out > build/artifact",
    );
    // The tool really ran in the session's cwd.
    assert_eq!(
        std::fs::read_to_string(work.path().join("created.txt")).expect("created"),
        "made\n"
    );
    let second = bash_turn(&fake, &mut c, &sid, "rm notes.txt");
    drop(c);
    stop(&mut daemon);

    let store = Checkpoints::open(&daemon.data_dir().join("checkpoints")).expect("open");
    let turns = store.turns(&sid).expect("turns");
    let ids: Vec<&str> = turns.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(
        ids,
        vec![first.as_str(), second.as_str()],
        "one per turn start"
    );
    assert!(turns.iter().all(|t| t.unrestorable.is_none()), "{turns:?}");

    let back = store.restore(&sid, &first, work.path()).expect("restore");
    assert_eq!(back.restored, vec!["created.txt", "notes.txt"], "{back:?}");
    assert!(back.unrestorable.is_empty(), "{back:?}");
    assert!(!work.path().join("created.txt").exists());
    assert_eq!(
        std::fs::read_to_string(work.path().join("notes.txt")).expect("notes"),
        "before the turn"
    );
    // Ignored by .gitignore: neither recorded nor touched.
    assert_eq!(
        std::fs::read_to_string(work.path().join("build/artifact")).expect("artifact"),
        "out\n"
    );
}

#[test]
fn a_tree_over_the_limits_is_recorded_unrestorable_and_the_turn_still_runs() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    for d in 0..21 {
        let dir = work.path().join(format!("d{d}"));
        std::fs::create_dir(&dir).expect("mkdir");
        for f in 0..1_000 {
            std::fs::write(dir.join(format!("f{f}")), "").expect("write");
        }
    }
    let mut daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());
    let turn = bash_turn(&fake, &mut c, &sid, "echo ran > proof.txt");
    assert!(work.path().join("proof.txt").exists(), "the turn ran");
    drop(c);
    stop(&mut daemon);

    let store = Checkpoints::open(&daemon.data_dir().join("checkpoints")).expect("open");
    let turns = store.turns(&sid).expect("turns");
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].turn_id, turn);
    let why = turns[0].unrestorable.as_deref().expect("unrestorable");
    assert!(why.contains("over 20000 files"), "{why}");
}

#[test]
fn deleting_a_session_deletes_its_checkpoints() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("a.txt"), "a").expect("write");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());
    let keep = new_session(&mut c, work.path());
    bash_turn(&fake, &mut c, &sid, "echo one > b.txt");
    bash_turn(&fake, &mut c, &keep, "echo two > c.txt");
    let checkpoints = daemon.data_dir().join("checkpoints");
    let dir = checkpoints.join(zeroclaw_checkpoint::session::dir_name(&sid));
    let other = checkpoints.join(zeroclaw_checkpoint::session::dir_name(&keep));
    assert!(dir.join("turns").is_dir(), "recorded at the turn start");
    let r = c.result("session/delete", json!({"sessionId": sid}));
    assert_eq!(r["deleted"], true);
    assert!(!dir.exists(), "the session's checkpoints went with it");
    assert!(other.join("turns").is_dir(), "another session's stay");
}
