//! Third hardening pass, the daemon's own file writes (SPEC §17.2, issue 44 findings 3, 4,
//! 7 and part of 11) against the real binary: `write_file` racing a program that flips a
//! name between absent and a symlink leading out of the workspace; ignore files too big to
//! parse, in the cwd and in a parent; a tree wholly ignored by a parent's rules; and a
//! non-admin `cwd` that is a link to a missing path outside the workspace.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Conn, Fake, TestDaemon, UidConn, code, is_root, session_config, test_uid};
use serde_json::{Value, json};
use zeroclaw_testkit::{FakeToolCall, Scripted};

/// An agent on the fake provider that runs its tools without asking.
fn agent(max_tool_iterations: u32) -> String {
    format!(
        "[agents.files]\nprovider = \"fake\"\ntools = [\"bash\", \"write_file\"]\n\
         autonomy = \"full\"\nmax_tool_iterations = {max_tool_iterations}\n"
    )
}

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_env(&[], &[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    })
}

/// A session whose cwd is the agent's workspace (where `write_file` writes): its id and
/// the workspace.
fn workspace_session(c: &mut Conn) -> (String, PathBuf) {
    let r = c.new_session(json!({"agentAlias": "files"}));
    let ws = r["workspaceDir"]
        .as_str()
        .map(PathBuf::from)
        .expect("workspaceDir");
    (r["sessionId"].as_str().expect("sessionId").to_owned(), ws)
}

fn new_session(c: &mut Conn, cwd: &Path) -> String {
    let r = c.new_session(json!({"agentAlias": "files", "cwd": cwd}));
    r["sessionId"].as_str().expect("sessionId").to_owned()
}

/// One turn in which the agent runs `command` with bash; returns the turn id.
fn bash_turn(fake: &Fake, c: &mut Conn, sid: &str, command: &str) -> String {
    fake.push(Scripted::tool_call(
        "c1",
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

/// The daemon's (peak, current) resident memory in KiB (`VmHWM`, `VmRSS`).
fn rss_kib(daemon: &TestDaemon) -> (u64, u64) {
    let pid = daemon.child.as_ref().expect("running").id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect(name)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// The tool results the fake provider was sent in its last request.
fn tool_results(fake: &Fake) -> Vec<String> {
    let requests = fake.requests();
    let last = requests.last().expect("a request");
    last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// ---- finding 3: write_file and a racing symlink ----------------------------------------

#[test]
fn write_file_never_writes_through_a_racing_symlink() {
    const ROUNDS: usize = 20;
    const PER_ROUND: usize = 500;
    let fake = Fake::start();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    let daemon = start(&fake, &agent(ROUNDS as u32 + 2));
    let mut c = daemon.client();
    let (sid, work) = workspace_session(&mut c);

    // The racer flips `flip` between absent and a symlink to the outside directory (and
    // takes away a real directory the writer may have made in a gap).
    let stop = Arc::new(AtomicBool::new(false));
    let links = Arc::new(AtomicU64::new(0));
    let racer = {
        let (stop, links) = (Arc::clone(&stop), Arc::clone(&links));
        let (flip, target) = (work.join("flip"), outside.path().to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if std::os::unix::fs::symlink(&target, &flip).is_ok() {
                    links.fetch_add(1, Ordering::Relaxed);
                }
                match std::fs::symlink_metadata(&flip) {
                    Ok(m) if m.is_dir() => {
                        let _ = std::fs::remove_dir_all(&flip);
                    }
                    _ => {
                        let _ = std::fs::remove_file(&flip);
                    }
                }
            }
        })
    };
    for round in 0..ROUNDS {
        let calls = (0..PER_ROUND)
            .map(|i| {
                FakeToolCall::new(
                    format!("w{round}_{i}"),
                    "write_file",
                    json!({"path": format!("flip/planted-{round}-{i}"), "content": "pwned"}),
                )
            })
            .collect();
        fake.push(Scripted::tool_calls(calls));
    }
    fake.push(Scripted::text("done"));
    let (_, resp) = c.prompt(&sid, "write");
    stop.store(true, Ordering::SeqCst);
    racer.join().expect("racer");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");

    let results = tool_results(&fake);
    let wrote = results.iter().filter(|r| r.starts_with("Wrote")).count();
    let refused = results
        .iter()
        .filter(|r| r.starts_with("Refused") && r.contains("symlink"))
        .count();
    let planted: Vec<PathBuf> = std::fs::read_dir(outside.path())
        .expect("outside")
        .map(|e| e.expect("entry").path())
        .collect();
    println!(
        "{} write_file calls: {wrote} wrote inside, {refused} refused a symlink, {} symlinks made \
         by the racer, {} files outside",
        results.len(),
        links.load(Ordering::Relaxed),
        planted.len()
    );
    // Positive control: every call ran, the racer really put the link in place, and the
    // writer met it.
    assert_eq!(results.len(), ROUNDS * PER_ROUND);
    assert!(links.load(Ordering::Relaxed) > 100, "the racer made links");
    assert!(
        refused > 0,
        "no write met the symlink: the race was not played"
    );
    assert!(
        planted.is_empty(),
        "{} written outside, among them {:?}",
        planted.len(),
        &planted[..planted.len().min(3)]
    );
}

/// Uploads' commit (SPEC §8.1) writes through the same no-follow writer: `uploads/`
/// flipped between a directory and a symlink out of the workspace while files are
/// attached gets refusals, never a file (or a partial `.upload-*`) outside.
#[test]
fn an_upload_never_lands_through_a_racing_symlinked_uploads_dir() {
    const TRIES: usize = 2000;
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "echo"}));
    let (sid, ws) = (
        r["sessionId"].as_str().expect("sessionId").to_owned(),
        r["workspaceDir"]
            .as_str()
            .map(PathBuf::from)
            .expect("workspaceDir"),
    );
    let outside = tempfile::tempdir().expect("tempdir");
    let stop = Arc::new(AtomicBool::new(false));
    let links = Arc::new(AtomicU64::new(0));
    // The racer puts a real directory and a symlink at `uploads` in turn, so the daemon's
    // check can see a directory and its write meet the link (whatever the daemon made is
    // moved aside, inside the workspace).
    let racer = {
        let (stop, links) = (Arc::clone(&stop), Arc::clone(&links));
        let (uploads, target, ws) = (ws.join("uploads"), outside.path().to_path_buf(), ws.clone());
        std::thread::spawn(move || {
            let real = ws.join("uploads.real");
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let _ = std::fs::create_dir(&real);
                let _ = std::fs::rename(&real, &uploads);
                std::thread::yield_now();
                n += 1;
                let _ = std::fs::rename(&uploads, ws.join(format!("aside-{n}")));
                if std::os::unix::fs::symlink(&target, &uploads).is_ok() {
                    links.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::yield_now();
                if std::fs::symlink_metadata(&uploads).is_ok_and(|m| m.file_type().is_symlink()) {
                    let _ = std::fs::remove_file(&uploads);
                }
            }
        })
    };
    let (mut stored, mut refused) = (0, 0);
    for i in 0..TRIES {
        let data = format!("upload {i}");
        let r = c.call(
            "file/attach",
            json!({"sessionId": sid, "files": [{"dataB64": b64(data.as_bytes()), "filename": "a.txt"}]}),
        );
        if r.get("result").is_some() {
            stored += 1;
        } else {
            refused += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    racer.join().expect("racer");
    let planted: Vec<PathBuf> = std::fs::read_dir(outside.path())
        .expect("outside")
        .map(|e| e.expect("entry").path())
        .collect();
    println!(
        "{TRIES} attaches: {stored} stored, {refused} refused, {} symlinks made by the racer, \
         {} files outside",
        links.load(Ordering::Relaxed),
        planted.len()
    );
    // Positive control: the racer put the link in place and the writer met it.
    assert!(links.load(Ordering::Relaxed) > 100, "the racer made links");
    assert!(
        refused > 0,
        "no attach met the symlink: the race was not played"
    );
    assert!(
        planted.is_empty(),
        "{} written outside, among them {:?}",
        planted.len(),
        &planted[..planted.len().min(3)]
    );
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---- finding 4: ignore files ------------------------------------------------------------

/// Writes an ignore file of about `bytes` bytes of distinct patterns.
fn huge_ignore(path: &Path, bytes: usize) {
    let mut text = String::with_capacity(bytes + 64);
    let mut i = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("dir{i}/**/cache-{i}-*.tmp\n"));
        i += 1;
    }
    std::fs::write(path, text).expect("ignore file");
}

/// The `unrestorable` reasons a rewind to `turn` reports.
fn unrestorable(c: &mut Conn, sid: &str, turn: &str) -> Vec<String> {
    let r = c.result(
        "session/rewind",
        json!({"sessionId": sid, "turnId": turn, "restoreFiles": true}),
    );
    r["unrestorable"]
        .as_array()
        .expect("unrestorable")
        .iter()
        .map(|u| u["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Runs a turn in `cwd` and checks the daemon's memory grew by less than 64 MiB; returns
/// the reasons a rewind of the turn reports.
fn turn_within_memory(fake: &Fake, daemon: &TestDaemon, c: &mut Conn, cwd: &Path) -> Vec<String> {
    turn_within(fake, daemon, c, cwd, 64)
}

/// As [`turn_within_memory`], with a bound of `mib` MiB.
fn turn_within(
    fake: &Fake,
    daemon: &TestDaemon,
    c: &mut Conn,
    cwd: &Path,
    mib: u64,
) -> Vec<String> {
    let sid = new_session(c, cwd);
    let (peak_before, _) = rss_kib(daemon);
    let turn = bash_turn(fake, c, &sid, "echo ran > proof.txt");
    assert!(cwd.join("proof.txt").exists(), "the turn ran");
    let (peak_after, now) = rss_kib(daemon);
    println!(
        "{}: peak RSS {} MiB before the turn, {} MiB after (now {} MiB)",
        cwd.display(),
        peak_before / 1024,
        peak_after / 1024,
        now / 1024
    );
    assert!(
        peak_after.saturating_sub(peak_before) < mib * 1024,
        "the daemon grew by {} MiB",
        (peak_after - peak_before) / 1024
    );
    unrestorable(c, &sid, &turn)
}

#[test]
fn an_ignore_file_of_20_mb_in_the_cwd_is_never_parsed() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("notes.txt"), "x").expect("write");
    huge_ignore(&work.path().join(".gitignore"), 20 * 1024 * 1024);
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();
    let why = turn_within_memory(&fake, &daemon, &mut c, work.path());
    assert!(
        why.iter()
            .any(|w| w.contains(".gitignore") && w.contains("over 1 MiB")),
        "{why:?}"
    );
}

#[test]
fn an_ignore_file_of_4_mib_in_a_parent_is_never_parsed() {
    let fake = Fake::start();
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();

    // A parent that is no repository's: its rules are not read at all.
    let top = tempfile::tempdir().expect("tempdir");
    huge_ignore(&top.path().join(".gitignore"), 4 * 1024 * 1024);
    let work = top.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    std::fs::write(work.join("notes.txt"), "x").expect("write");
    let why = turn_within_memory(&fake, &daemon, &mut c, &work);
    assert!(why.is_empty(), "restorable: {why:?}");

    // The repository's root: read, within its bound, so the turn is unrestorable.
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect("mkdir");
    huge_ignore(&repo.path().join(".gitignore"), 4 * 1024 * 1024);
    let work = repo.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    std::fs::write(work.join("notes.txt"), "x").expect("write");
    let why = turn_within_memory(&fake, &daemon, &mut c, &work);
    assert!(
        why.iter()
            .any(|w| w.contains(".gitignore") && w.contains("over 1 MiB")),
        "{why:?}"
    );
}

#[test]
fn a_tree_wholly_ignored_by_a_parent_is_reported() {
    let fake = Fake::start();
    let repo = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(repo.path().join(".git")).expect("mkdir");
    std::fs::write(repo.path().join(".gitignore"), "*\n").expect("write");
    let work = repo.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    std::fs::write(work.join("notes.txt"), "before").expect("write");
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();
    let sid = new_session(&mut c, &work);
    let turn = bash_turn(&fake, &mut c, &sid, "echo after > notes.txt");
    let why = unrestorable(&mut c, &sid, &turn);
    assert!(
        why.iter().any(|w| w.contains("whole tree is ignored")),
        "{why:?}"
    );
}

// ---- finding 11 (part): a cwd linked to a missing path outside -------------------------

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_cwd_linked_to_a_missing_path_outside_is_refused_as_outside() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let extra = format!(
        "[permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"echo\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"user\"]\n"
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config("http://127.0.0.1:9", &extra),
        )
        .expect("config");
    });
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let mut op = daemon.client();
    let ws = op.new_session(json!({"agentAlias": "echo"}))["workspaceDir"]
        .as_str()
        .map(PathBuf::from)
        .expect("workspaceDir");
    let gone = tempfile::tempdir().expect("tempdir");
    let existing = gone.path().join("there");
    std::fs::create_dir(&existing).expect("mkdir");
    std::os::unix::fs::symlink(&existing, ws.join("to-existing")).expect("symlink");
    std::os::unix::fs::symlink(gone.path().join("missing"), ws.join("to-missing"))
        .expect("symlink");
    std::fs::create_dir(ws.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink("../../../../../../../../nowhere", ws.join("sub/up"))
        .expect("symlink");
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["admin"], false, "{init}");
    // Positive control: a link to an existing directory outside is -32012 already.
    for cwd in ["to-existing", "to-missing", "to-missing/deeper", "sub/up"] {
        let e: Value = u.call("session/new", json!({"agentAlias": "echo", "cwd": cwd}));
        assert_eq!(code(&e["error"]), -32012, "{cwd}: {e}");
    }
    // A missing path inside is still -32602.
    let e = u.call(
        "session/new",
        json!({"agentAlias": "echo", "cwd": "missing"}),
    );
    assert_eq!(code(&e["error"]), -32602, "{e}");
}

// ---- finding 7: a rewind undoes only its own session -----------------------------------

/// One turn in which the agent writes `content` to `path` with write_file; the turn id.
fn write_turn(fake: &Fake, c: &mut Conn, sid: &str, path: &str, content: &str) -> String {
    fake.push(Scripted::tool_call(
        "w1",
        "write_file",
        json!({"path": path, "content": content}),
    ));
    fake.push(Scripted::text("written"));
    let (_, resp) = c.prompt(sid, &format!("write {path}"));
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    resp["result"]["turnId"]
        .as_str()
        .expect("turnId")
        .to_owned()
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|p| p.as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn a_rewind_leaves_the_operators_work_and_force_takes_it_back() {
    let fake = Fake::start();
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();
    let (sid, ws) = workspace_session(&mut c);
    let ws = ws.as_path();
    std::fs::write(ws.join("hers.txt"), "v1").expect("write");
    std::fs::write(ws.join("his.txt"), "v1").expect("write");

    // Her session's turn edits hers.txt; then the operator edits his.txt and adds a file,
    // in the same workspace, outside any turn of hers.
    let t1 = write_turn(&fake, &mut c, &sid, "hers.txt", "agent");
    std::fs::write(ws.join("his.txt"), "operator's edit").expect("write");
    std::fs::write(ws.join("his-new.txt"), "operator's new file").expect("write");

    let r = c.result("session/rewind", json!({"sessionId": sid, "turnId": t1}));
    println!("rewind: {r}");
    // Positive control: her own change went back.
    assert_eq!(strings(&r["restoredFiles"]), ["hers.txt"], "{r}");
    assert_eq!(read(ws, "hers.txt").as_deref(), Some("v1"));
    // His work survives, and is listed.
    assert_eq!(read(ws, "his.txt").as_deref(), Some("operator's edit"));
    assert_eq!(
        read(ws, "his-new.txt").as_deref(),
        Some("operator's new file")
    );
    let conflicts: Vec<String> = r["conflicts"]
        .as_array()
        .expect("conflicts")
        .iter()
        .map(|c| c["path"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(conflicts, ["his-new.txt", "his.txt"], "{r}");
    assert!(
        r["conflicts"]
            .as_array()
            .expect("conflicts")
            .iter()
            .all(|c| c["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("someone else")),
        "{r}"
    );

    // The owner (admin) forces: those paths go back too.
    let r = c.result(
        "session/rewind",
        json!({"sessionId": sid, "turnId": t1, "force": true}),
    );
    println!("forced: {r}");
    assert_eq!(
        strings(&r["restoredFiles"]),
        ["his-new.txt", "his.txt"],
        "{r}"
    );
    assert_eq!(r["conflicts"], json!([]), "{r}");
    assert_eq!(read(ws, "his.txt").as_deref(), Some("v1"));
    assert_eq!(read(ws, "his-new.txt"), None);
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn only_an_admin_may_force_a_rewind() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let fake = Fake::start();
    let extra = format!(
        "{}\n[permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"files\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"user\"]\n",
        agent(5)
    );
    let daemon = start(&fake, &extra);
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["admin"], false, "{init}");
    let sid = u.result("session/new", json!({"agentAlias": "files"}))["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    fake.push(Scripted::text("hello"));
    let turn = u.result("session/prompt", json!({"sessionId": sid, "prompt": "hi"}));
    let t1 = turn["turnId"].as_str().expect("turnId").to_owned();
    let e = u.call(
        "session/rewind",
        json!({"sessionId": sid, "turnId": t1, "force": true}),
    );
    assert_eq!(code(&e["error"]), -32012, "{e}");
    // Positive control: the same rewind without force is hers to make.
    let r = u.result("session/rewind", json!({"sessionId": sid, "turnId": t1}));
    assert_eq!(r["rewoundTurns"], json!([t1]), "{r}");
}

/// An ignore file at its bounds (10,000 `**` patterns in 1,000,000 bytes) is parsed, at a
/// cost measured here (about 120 MiB of peak RSS: the compiled patterns, not the text); a
/// second one in the tree takes the walk over its total (the files of one walk together
/// may hold no more than one), so five cost no more than one. A measurement of a known
/// gap (docs/security-figures.md), slow in a debug build (each turn compiles the patterns
/// at its start and its end): run it with `--ignored`.
#[test]
#[ignore = "measurement (slow in a debug build): cargo test -p zeroclaw-e2e --test e2e -- --ignored --nocapture hardening3_files::ignore_files_at_their_bounds"]
fn ignore_files_at_their_bounds_cost_bounded_memory() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let at_bounds = |dir: &Path, tag: usize| {
        std::fs::create_dir_all(dir).expect("mkdir");
        let text: String = (0..10_000)
            .map(|i| format!("{:<99}\n", format!("d{tag}-{i}/**/long-name-{i}-*.tmp")))
            .collect();
        assert!(text.len() as u64 <= 1024 * 1024);
        std::fs::write(dir.join(".gitignore"), text).expect("write");
    };
    at_bounds(work.path(), 0);
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();
    let why = turn_within(&fake, &daemon, &mut c, work.path(), 192);
    assert!(why.is_empty(), "restorable: {why:?}");

    let five = tempfile::tempdir().expect("tempdir");
    at_bounds(five.path(), 0);
    for d in 1..5 {
        at_bounds(&five.path().join(format!("sub{d}")), d);
    }
    let daemon = start(&fake, &agent(5));
    let mut c = daemon.client();
    let why = turn_within(&fake, &daemon, &mut c, five.path(), 192);
    assert!(why.iter().any(|w| w.contains("over 1 MiB")), "{why:?}");
}
