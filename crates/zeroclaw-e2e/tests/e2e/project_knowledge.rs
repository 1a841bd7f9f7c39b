//! The agent knows its project (SPEC §26), instructions files, through the real binary and
//! the fake OpenAI server: the system prompt the provider received holds the user's
//! `AGENTS.md`, then the repository root's down to the cwd (else `CLAUDE.md`), each under
//! its heading; the 64 KiB cut and its note; a file changed between turns is read again;
//! `instructions_files = false` turns it off; a FIFO or `/dev/zero` named `AGENTS.md` does
//! not hang the turn; `session/status` lists the files. Skills: those of the user's and
//! the repository's three skill directories are listed (name and description) in the
//! system prompt, and read (body and other files) with the `skill` tool, unasked.

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
    // Read at session start: listed before any turn.
    let at_start = status_instructions(&mut c, &sid);
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
    assert_eq!(at_start, expected);
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

/// Writes `dir/name/SKILL.md` with front matter and `body`, plus `extra` files.
fn skill(dir: &Path, name: &str, description: &str, body: &str, extra: &[&str]) {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: \"{description}\"\n---\n{body}\n"),
    )
    .unwrap();
    for f in extra {
        let p = d.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn skills_of_the_four_directories_are_listed_and_read_with_the_skill_tool() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    let user_skills = daemon.config_dir().join("skills");
    skill(
        &user_skills,
        "deploy",
        "Ship a release",
        "DEPLOY-BODY: tag first",
        &["scripts/ship.sh"],
    );
    skill(
        &repo.join(".zeroclaw/skills"),
        "pdf",
        "Fill PDF forms",
        "PDF-BODY",
        &[],
    );
    skill(
        &repo.join(".claude/skills"),
        "review",
        "Review a diff",
        "REVIEW-BODY",
        &["checklist.md"],
    );
    skill(
        &repo.join(".agents/skills"),
        "lint",
        "Lint the code",
        "LINT-BODY",
        &[],
    );
    // The same name again in a later directory: the first one wins.
    skill(
        &repo.join(".agents/skills"),
        "deploy",
        "Another deploy",
        "SHADOWED-BODY",
        &[],
    );
    // A directory without SKILL.md is no skill.
    std::fs::create_dir_all(repo.join(".claude/skills/empty")).unwrap();

    fake.push(Scripted::tool_call(
        "s1",
        "skill",
        json!({"name": "deploy"}),
    ));
    fake.push(Scripted::tool_call(
        "s2",
        "skill",
        json!({"name": "review"}),
    ));
    fake.push(Scripted::tool_call("s3", "skill", json!({"name": "nope"})));
    fake.push(Scripted::text("done"));
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let (msgs, resp) = c.prompt(&sid, "use a skill");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let types = common::update_types(&msgs);
    assert!(!types.iter().any(|t| t == "approval_request"), "{types:?}");

    let reqs = fake.requests();
    let system = system_of(&reqs[0]);
    let listed = [
        pos(&system, "# Skills"),
        pos(&system, "- deploy: Ship a release"),
        pos(&system, "- pdf: Fill PDF forms"),
        pos(&system, "- review: Review a diff"),
        pos(&system, "- lint: Lint the code"),
    ];
    assert!(listed.windows(2).all(|w| w[0] < w[1]), "{system}");
    for hidden in [
        "DEPLOY-BODY",
        "PDF-BODY",
        "REVIEW-BODY",
        "Another deploy",
        "empty",
    ] {
        assert!(
            !system.contains(hidden),
            "{hidden} in the prompt:\n{system}"
        );
    }
    assert!(
        tool_names(&reqs[0]).contains(&"skill".to_string()),
        "{}",
        reqs[0]
    );

    let result = |i: usize| -> String {
        let m = reqs[i]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(m["role"], "tool", "{m}");
        m["content"].as_str().unwrap().to_owned()
    };
    let deploy = result(1);
    assert!(deploy.contains("DEPLOY-BODY: tag first"), "{deploy}");
    assert!(deploy.contains("scripts/ship.sh"), "{deploy}");
    assert!(
        !deploy.contains("SHADOWED-BODY") && !deploy.contains("name: deploy"),
        "{deploy}"
    );
    assert!(
        deploy.contains(&user_skills.join("deploy").display().to_string()),
        "{deploy}"
    );
    let review = result(2);
    assert!(
        review.contains("REVIEW-BODY") && review.contains("checklist.md"),
        "{review}"
    );
    let nope = result(3);
    assert!(nope.starts_with("Error: no skill `nope`"), "{nope}");
}

/// A user's skill lives outside the session's directory, where `read_file` does not reach:
/// the skill tool reads its other files itself, and nothing outside the skill.
#[test]
fn the_skill_tool_reads_a_skills_other_files_and_nothing_outside_it() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, _repo, deeper) = tree();
    let user_skills = daemon.config_dir().join("skills");
    skill(
        &user_skills,
        "deploy",
        "Ship a release",
        "Run scripts/ship.sh",
        &["scripts/ship.sh"],
    );
    for (id, file) in [
        ("f1", "scripts/ship.sh"),
        ("f2", "../../config.toml"),
        ("f3", "/etc/passwd"),
    ] {
        fake.push(Scripted::tool_call(
            id,
            "skill",
            json!({"name": "deploy", "file": file}),
        ));
    }
    fake.push(Scripted::text("done"));
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let (_, resp) = c.prompt(&sid, "ship it");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let reqs = fake.requests();
    let result = |i: usize| -> String {
        let m = reqs[i]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(m["role"], "tool", "{m}");
        m["content"].as_str().unwrap().to_owned()
    };
    let ship = result(1);
    assert!(
        ship.starts_with("# scripts/ship.sh (skill deploy)") && ship.ends_with('x'),
        "{ship}"
    );
    for i in [2, 3] {
        let out = result(i);
        assert!(
            out.starts_with("Error: `file` must be a path inside the skill"),
            "{out}"
        );
    }
}

#[test]
fn without_skills_there_is_no_skill_tool_and_no_list() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, _repo, deeper) = tree();
    let mut c = daemon.client();
    let sid = new_session(&mut c, "know", &deeper);
    let system = turn_system_prompt(&fake, &mut c, &sid);
    assert_eq!(system, BASE);
    let req = fake.requests().remove(0);
    let tools = tool_names(&req);
    assert!(tools.contains(&"read_file".to_string()), "{req}");
    assert!(!tools.contains(&"skill".to_string()), "{req}");
}

#[test]
fn skills_list_names_each_skill_with_its_source() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let (_outer, repo, deeper) = tree();
    let user_skills = daemon.config_dir().join("skills");
    skill(&user_skills, "deploy", "Ship a release", "B", &[]);
    skill(
        &repo.join(".zeroclaw/skills"),
        "pdf",
        "Fill PDF forms",
        "B",
        &[],
    );
    skill(
        &repo.join(".claude/skills"),
        "review",
        "Review a diff",
        "B",
        &[],
    );
    skill(
        &repo.join(".agents/skills"),
        "lint",
        "Lint the code",
        "B",
        &[],
    );
    let mut c = daemon.client();
    let r = c.result("skills/list", json!({"cwd": deeper}));
    let got: Vec<(String, String, String, String)> = r["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|s| {
            let f = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            (f("name"), f("description"), f("path"), f("source"))
        })
        .collect();
    let want = |n: &str, d: &str, dir: PathBuf, src: &str| {
        (
            n.to_owned(),
            d.to_owned(),
            dir.join(n).display().to_string(),
            src.to_owned(),
        )
    };
    assert_eq!(
        got,
        [
            want("deploy", "Ship a release", user_skills.clone(), "user"),
            want(
                "pdf",
                "Fill PDF forms",
                repo.join(".zeroclaw/skills"),
                ".zeroclaw"
            ),
            want(
                "review",
                "Review a diff",
                repo.join(".claude/skills"),
                ".claude"
            ),
            want(
                "lint",
                "Lint the code",
                repo.join(".agents/skills"),
                ".agents"
            ),
        ]
    );
    // Without a cwd: the user's only.
    let r = c.result("skills/list", json!({}));
    let names: Vec<&str> = r["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["deploy"]);
    // A cwd that is not an absolute directory.
    for bad in [
        json!({"cwd": "relative/dir"}),
        json!({"cwd": "/no/such/dir/here"}),
    ] {
        let e = c.error("skills/list", bad.clone());
        assert_eq!(common::code(&e), -32602, "{bad} → {e}");
        assert!(
            e["message"].as_str().unwrap_or_default().contains("cwd"),
            "{e}"
        );
    }
    let e = c.error("skills/list", json!({"cwd": 7}));
    assert_eq!(common::code(&e), -32602, "{e}");
}

#[test]
fn instructions_files_must_be_a_boolean() {
    let fake = Fake::start();
    let daemon = start(&fake, None);
    let mut c = daemon.client();
    let e = c.error(
        "config/set",
        json!({"prop": "agents.know.instructions_files", "value": "yes"}),
    );
    assert_eq!(common::code(&e), -32602, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("instructions_files"),
        "{e}"
    );
    // Positive control: a boolean is accepted, and the prompt then has no instructions.
    c.result(
        "config/set",
        json!({"prop": "agents.know.instructions_files", "value": false}),
    );
    let (_outer, repo, deeper) = tree();
    std::fs::write(repo.join("AGENTS.md"), "SET-OFF-RULE").unwrap();
    let sid = new_session(&mut c, "know", &deeper);
    assert_eq!(turn_system_prompt(&fake, &mut c, &sid), BASE);
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn skills_list_of_a_cwd_is_for_admins() {
    use std::os::unix::fs::PermissionsExt;
    assert!(common::is_root(), "needs root to connect as another uid");
    let uid = common::test_uid();
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\n\
                 [permission_profiles.reader]\ngrants = {{ sessions = [\"read\"] }}\n\
                 [users.tester]\nuid = {uid}\npermission_profiles = [\"reader\"]\n"
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
    let (_outer, repo, deeper) = tree();
    skill(
        &repo.join(".claude/skills"),
        "review",
        "Review a diff",
        "B",
        &[],
    );
    let mut u = common::UidConn::open(&daemon.socket, uid);
    assert!(u.call("initialize", json!({})).get("result").is_some());
    let e = u.error("skills/list", json!({"cwd": deeper}));
    assert_eq!(common::code(&e), -32012, "{e}");
    // Positive controls: the same user without a cwd, and an admin with it.
    let r = u.result("skills/list", json!({}));
    assert_eq!(r["skills"], json!([]), "{r}");
    let r = daemon
        .client()
        .result("skills/list", json!({"cwd": deeper}));
    assert_eq!(r["skills"][0]["name"], "review", "{r}");
}

/// The config dir's `AGENTS.md` and skills are the operator's own: a session of another
/// principal does not get them (its model could repeat them), nor does its `skills/list`.
/// The same uid is made a non-admin `user:me` by not trusting the daemon's uid.
#[test]
fn the_operators_own_instructions_and_skills_stay_out_of_other_principals_sessions() {
    let fake = Fake::start();
    let config = |as_user: bool| {
        let mut extra = format!("[agents.know]\nprovider = \"fake\"\nsystem_prompt = \"{BASE}\"\n");
        if as_user {
            // SAFETY: getuid has no preconditions.
            #[allow(unsafe_code)]
            let uid = unsafe { libc::getuid() };
            extra.push_str(&format!(
                "[security]\ntrust_daemon_uid = false\n\
                 [permission_profiles.dev]\nallowed_agents = [\"*\"]\n\
                 grants = {{ sessions = [\"create\", \"execute\", \"read\", \"update\"] }}\n\
                 [users.me]\nuid = {uid}\npermission_profiles = [\"dev\"]\n"
            ));
        }
        session_config(&fake.server.base_url(), &extra)
    };
    let first = config(false);
    let mut daemon = TestDaemon::start_with(&[], move |dir| {
        std::fs::write(dir.join("config.toml"), first).expect("config");
        std::fs::write(dir.join("AGENTS.md"), "OPERATOR-PRIVATE-NOTES").expect("AGENTS.md");
    });
    skill(
        &daemon.config_dir().join("skills"),
        "deploy",
        "OPERATOR-SKILL",
        "B",
        &[],
    );
    // Positive control: the operator's session has both.
    let mut op = daemon.client();
    let sid = op.new_session(json!({"agentAlias": "know"}))["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let system = turn_system_prompt(&fake, &mut op, &sid);
    assert!(system.contains("OPERATOR-PRIVATE-NOTES"), "{system}");
    assert!(system.contains("OPERATOR-SKILL"), "{system}");
    drop(op);

    daemon.kill_hard();
    std::fs::write(daemon.config_dir().join("config.toml"), config(true)).expect("config");
    daemon.spawn(&[]);
    let mut me = daemon.client();
    let sid = me.new_session(json!({"agentAlias": "know"}))["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let system = turn_system_prompt(&fake, &mut me, &sid);
    assert!(system.starts_with(BASE), "{system}");
    assert!(!system.contains("OPERATOR-PRIVATE-NOTES"), "{system}");
    assert!(!system.contains("OPERATOR-SKILL"), "{system}");
    let status = me.result("session/status", json!({"sessionId": sid}));
    assert_eq!(status["instructions"], json!([]), "{status}");
    let listed = me.result("skills/list", json!({}));
    assert_eq!(listed["skills"], json!([]), "{listed}");
}
