//! The agent knows its project (SPEC §26), instructions files, through the real binary and
//! the fake OpenAI server: the system prompt the provider received holds the user's
//! `AGENTS.md`, then the repository root's down to the cwd (else `CLAUDE.md`), each under
//! its heading; the 64 KiB cut and its note; a file changed between turns is read again;
//! `instructions_files = false` turns it off; a FIFO or `/dev/zero` named `AGENTS.md` does
//! not hang the turn; `session/status` lists the files.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

const BASE: &str = "You are the project-knowledge test agent.";

/// A daemon on `fake` whose config dir holds `user` as its `AGENTS.md` (when given).
fn start(fake: &Fake, user: Option<&str>) -> TestDaemon {
    let extra = format!(
        "[agents.know]\nprovider = \"fake\"\nsystem_prompt = \"{BASE}\"\ntools = [\"read_file\"]\n\n\
         [agents.plain]\nprovider = \"fake\"\nsystem_prompt = \"{BASE}\"\ntools = [\"read_file\"]\n\
         instructions_files = false\n"
    );
    let config = session_config(&fake.server.base_url(), &extra);
    let user = user.map(str::to_owned);
    TestDaemon::start_env(&[], &[], move |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
        if let Some(u) = user {
            std::fs::write(dir.join("AGENTS.md"), u).expect("user AGENTS.md");
        }
    })
}

/// `outer/repo/.git`, `outer/repo/sub/deeper`; returns (outer, repo, deeper).
fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let outer = tempfile::tempdir().expect("tempdir");
    let repo = outer.path().join("repo");
    let deeper = repo.join("sub/deeper");
    std::fs::create_dir_all(repo.join(".git")).expect("git");
    std::fs::create_dir_all(&deeper).expect("deeper");
    (outer, repo, deeper)
}

fn new_session(c: &mut Conn, agent: &str, cwd: &Path) -> String {
    let r = c.new_session(json!({"agentAlias": agent, "cwd": cwd}));
    r["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Runs one turn (the fake answers "ok") and returns the system prompt the provider got.
fn turn_system_prompt(fake: &Fake, c: &mut Conn, sid: &str) -> String {
    let before = fake.requests().len();
    fake.push(Scripted::text("ok"));
    let (_, resp) = c.prompt(sid, "hello");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), before + 1, "one provider call");
    system_of(&reqs[before])
}

fn system_of(req: &Value) -> String {
    let first = &req["messages"][0];
    assert_eq!(first["role"], "system", "{req}");
    first["content"]
        .as_str()
        .expect("system content")
        .to_owned()
}

fn status_instructions(c: &mut Conn, sid: &str) -> Vec<(String, u64)> {
    let st = c.result("session/status", json!({"sessionId": sid}));
    st["instructions"]
        .as_array()
        .unwrap_or_else(|| panic!("no instructions in {st}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().expect("path").to_owned(),
                f["bytes"].as_u64().expect("bytes"),
            )
        })
        .collect()
}

fn heading(path: &Path) -> String {
    format!("# Instructions from {}", path.display())
}

fn pos(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing from the system prompt:\n{hay}"))
}

#[test]
fn the_user_file_then_the_repository_root_down_to_the_cwd_each_under_a_heading() {
    let fake = Fake::start();
    let daemon = start(&fake, Some("USER-RULE: be brief\n"));
    let (outer, repo, deeper) = tree();
    std::fs::write(outer.path().join("AGENTS.md"), "OUTSIDE-THE-REPO").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "ROOT-RULE: cargo fmt\n").unwrap();
    std::fs::write(repo.join("sub/AGENTS.md"), "SUB-RULE: no unwrap\n").unwrap();
    std::fs::write(repo.join("sub/CLAUDE.md"), "SUB-CLAUDE: AGENTS.md wins").unwrap();
    std::fs::write(deeper.join("AGENTS.md"), "DEEPER-RULE: tests first\n").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let system = turn_system_prompt(&fake, &mut c, &sid);

    let user_file = daemon.config_dir().join("AGENTS.md");
    let order = [
        pos(&system, BASE),
        pos(&system, &heading(&user_file)),
        pos(&system, "USER-RULE: be brief"),
        pos(&system, &heading(&repo.join("CLAUDE.md"))),
        pos(&system, "ROOT-RULE: cargo fmt"),
        pos(&system, &heading(&repo.join("sub/AGENTS.md"))),
        pos(&system, "SUB-RULE: no unwrap"),
        pos(&system, &heading(&deeper.join("AGENTS.md"))),
        pos(&system, "DEEPER-RULE: tests first"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{system}");
    assert!(!system.contains("OUTSIDE-THE-REPO"), "{system}");
    assert!(!system.contains("SUB-CLAUDE"), "{system}");
    assert!(!system.contains("instructions cut"), "{system}");

    let listed = status_instructions(&mut c, &sid);
    let expected: Vec<(String, u64)> = [
        (user_file, 20),
        (repo.join("CLAUDE.md"), 21),
        (repo.join("sub/AGENTS.md"), 20),
        (deeper.join("AGENTS.md"), 25),
    ]
    .into_iter()
    .map(|(p, b)| (p.display().to_string(), b))
    .collect();
    assert_eq!(listed, expected);
}

#[test]
fn without_a_repository_only_the_cwd_counts() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let outer = tempfile::tempdir().unwrap();
    let cwd = outer.path().join("plain");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(outer.path().join("AGENTS.md"), "PARENT-RULE").unwrap();
    std::fs::write(cwd.join("AGENTS.md"), "CWD-RULE").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &cwd);
    let system = turn_system_prompt(&fake, &mut c, &sid);
    pos(&system, "CWD-RULE");
    assert!(!system.contains("PARENT-RULE"), "{system}");
}

#[test]
fn sixty_four_kib_in_all_and_the_rest_cut_with_a_note() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    let big = format!("BIG-START{}BIG-END", "x".repeat(70_000));
    std::fs::write(repo.join("AGENTS.md"), &big).unwrap();
    std::fs::write(deeper.join("AGENTS.md"), "AFTER-THE-CUT").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let system = turn_system_prompt(&fake, &mut c, &sid);
    pos(&system, "BIG-START");
    assert!(!system.contains("BIG-END"), "the file is cut");
    assert!(
        !system.contains("AFTER-THE-CUT"),
        "nothing after the budget"
    );
    let note = pos(&system, "[instructions cut: 64 KiB in all");
    assert!(system[note..].contains(&deeper.join("AGENTS.md").display().to_string()));
    let xs = system.matches('x').count();
    assert!(
        (65_500..=65_600).contains(&xs),
        "{xs} bytes of the big file"
    );
    let listed = status_instructions(&mut c, &sid);
    assert_eq!(
        listed,
        [(repo.join("AGENTS.md").display().to_string(), 65_536)]
    );
}

#[test]
fn a_file_changed_between_turns_is_read_again() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    std::fs::write(repo.join("AGENTS.md"), "RULE-VERSION-ONE").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let first = turn_system_prompt(&fake, &mut c, &sid);
    pos(&first, "RULE-VERSION-ONE");
    // Unchanged: the same prompt again.
    let second = turn_system_prompt(&fake, &mut c, &sid);
    assert_eq!(second, first);
    // Changed, and a new file below it.
    std::fs::write(repo.join("AGENTS.md"), "RULE-VERSION-TWO, longer").unwrap();
    std::fs::write(deeper.join("CLAUDE.md"), "NEW-DEEPER-RULE").unwrap();
    let third = turn_system_prompt(&fake, &mut c, &sid);
    pos(&third, "RULE-VERSION-TWO, longer");
    pos(&third, "NEW-DEEPER-RULE");
    assert!(!third.contains("RULE-VERSION-ONE"), "{third}");
    assert_eq!(status_instructions(&mut c, &sid).len(), 2);
    // Gone: out of the prompt and the status.
    std::fs::remove_file(deeper.join("CLAUDE.md")).unwrap();
    let fourth = turn_system_prompt(&fake, &mut c, &sid);
    assert!(!fourth.contains("NEW-DEEPER-RULE"), "{fourth}");
    assert_eq!(status_instructions(&mut c, &sid).len(), 1);
}

#[test]
fn instructions_files_false_turns_it_off() {
    let fake = Fake::start();
    let daemon = start(&fake, Some("USER-RULE-OFF-TEST"));
    let (_outer, repo, deeper) = tree();
    std::fs::write(repo.join("AGENTS.md"), "REPO-RULE-OFF-TEST").unwrap();
    let mut c = daemon.client();
    // Positive control: the same tree with the setting on.
    let on = new_session(&mut c, "know", &deeper);
    let system_on = turn_system_prompt(&fake, &mut c, &on);
    pos(&system_on, "REPO-RULE-OFF-TEST");
    pos(&system_on, "USER-RULE-OFF-TEST");

    let off = new_session(&mut c, "plain", &deeper);
    let system_off = turn_system_prompt(&fake, &mut c, &off);
    assert_eq!(system_off, BASE);
    assert!(status_instructions(&mut c, &off).is_empty());
}

#[test]
fn a_fifo_named_agents_md_does_not_hang_the_turn() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    std::fs::write(repo.join("AGENTS.md"), "ROOT-AGENTS-READ").unwrap();
    // The cwd's AGENTS.md is a FIFO nobody writes to; its CLAUDE.md is read instead.
    let made = std::process::Command::new("mkfifo")
        .arg(deeper.join("AGENTS.md"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::fs::write(deeper.join("CLAUDE.md"), "DEEPER-CLAUDE-READ").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let started = Instant::now();
    let system = turn_system_prompt(&fake, &mut c, &sid);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(pos(&system, "ROOT-AGENTS-READ") < pos(&system, "DEEPER-CLAUDE-READ"));
    let listed = status_instructions(&mut c, &sid);
    assert_eq!(
        listed,
        [
            (repo.join("AGENTS.md").display().to_string(), 16),
            (deeper.join("CLAUDE.md").display().to_string(), 18),
        ]
    );
}

#[test]
fn dev_zero_named_agents_md_is_not_read() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    // The root's AGENTS.md is /dev/zero; its CLAUDE.md is read instead.
    std::os::unix::fs::symlink("/dev/zero", repo.join("AGENTS.md")).unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "ROOT-CLAUDE-READ").unwrap();
    std::fs::write(deeper.join("AGENTS.md"), "DEEPER-AGENTS-READ").unwrap();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let system = turn_system_prompt(&fake, &mut c, &sid);
    assert!(!system.contains('\0'), "no bytes of /dev/zero");
    assert!(pos(&system, "ROOT-CLAUDE-READ") < pos(&system, "DEEPER-AGENTS-READ"));
    let listed = status_instructions(&mut c, &sid);
    assert_eq!(
        listed,
        [
            (repo.join("CLAUDE.md").display().to_string(), 16),
            (deeper.join("AGENTS.md").display().to_string(), 18),
        ]
    );
}
