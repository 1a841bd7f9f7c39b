//! Schedules (SPEC §24.1) through the real binary: an `at` schedule a few seconds ahead
//! fires within 1 s of its time as an ordinary turn of its creator (`promptedBy:
//! "schedule:NAME"`, the fake model gets the prompt, a new session is titled "NAME ·
//! date"); runs missed while the daemon was stopped are recorded `missed` (`catchUp:
//! "skip"`) or run once at start (`"once"`); a run still going records the next as
//! `skipped_overlap`; the `schedules` grant and ownership are enforced; at most
//! `limits.schedules_per_principal` schedules; bad `cron`, `tz`, `every`, `at` and
//! `catchUp` are -32602 naming the field. One measurement (ignored by default) gives the
//! lateness figure of docs/BENCHMARKS.md.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, UidConn, code, is_root, test_uid};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

/// How long a wait for the daemon to do something by itself may take.
const WAIT: Duration = Duration::from_secs(20);

fn start(fake: &Fake, extra: &str) -> TestDaemon {
    let config = common::session_config(&fake.server.base_url(), extra);
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// An RFC 3339 time `ms` milliseconds from now.
pub(crate) fn in_ms(ms: i64) -> String {
    let t = jiff::Timestamp::now().as_millisecond() + ms;
    jiff::Timestamp::from_millisecond(t).unwrap().to_string()
}

fn ms_of(rfc3339: &Value) -> i64 {
    rfc3339
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {rfc3339}"))
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond()
}

fn create(c: &mut Conn, params: Value) -> String {
    c.result("schedule/create", params)["scheduleId"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn runs(c: &mut Conn, id: &str) -> Vec<Value> {
    c.result("schedule/runs", json!({"scheduleId": id}))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

/// Polls `schedule/runs` until the newest run's outcome is not `running` and there are
/// at least `n` runs; the runs, newest first.
fn wait_runs(c: &mut Conn, id: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = runs(c, id);
        if r.len() >= n && r.iter().all(|run| run["outcome"] != "running") {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "runs of {id} after {WAIT:?}: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Updates until the next `turn_complete`, inclusive.
fn read_turn(c: &mut Conn) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let msg = c.recv();
        if msg["method"] != "session/update" {
            continue;
        }
        let done = msg["params"]["type"] == "turn_complete";
        out.push(msg["params"].clone());
        if done {
            return out;
        }
    }
}

#[test]
fn an_at_schedule_fires_on_time_as_a_turn_of_its_creator() {
    let fake = Fake::start();
    fake.push(Scripted::text("morning report done"));
    fake.push(Scripted::text("fresh session done"));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    // A fixed session a watcher is subscribed to: the run's turn streams there.
    c.new_session(json!({"agentAlias": "default", "sessionId": "reports"}));
    let mut watcher = daemon.client();
    watcher.result("session/subscribe", json!({"sessionId": "reports"}));
    let at = in_ms(2_000);
    let created = c.result(
        "schedule/create",
        json!({"name": "morning", "agentAlias": "default", "prompt": "write the morning report",
               "at": at, "tz": "Europe/Berlin", "session": "reports"}),
    );
    let id = created["scheduleId"].as_str().unwrap().to_owned();
    assert_eq!(ms_of(&created["nextRunAt"]), ms_of(&json!(at)), "{created}");

    let turn = read_turn(&mut watcher);
    assert_eq!(turn[0]["type"], "user_message", "{turn:?}");
    assert_eq!(turn[0]["text"], "write the morning report");
    assert_eq!(turn[0]["promptedBy"], "schedule:morning");
    let sent = fake.requests()[0].to_string();
    assert!(sent.contains("write the morning report"), "{sent}");

    let done = wait_runs(&mut c, &id, 1);
    let run = &done[0];
    assert_eq!(run["outcome"], "completed", "{run}");
    assert_eq!(run["sessionId"], "reports");
    assert!(run["turnId"].is_string(), "{run}");
    let late = ms_of(&run["startedAt"]) - ms_of(&run["scheduledFor"]);
    assert!(
        (0..1000).contains(&late),
        "started {late} ms after its time: {run}"
    );
    // An `at` runs once: nothing next.
    let listed = c.result("schedule/list", json!({}));
    let me = &listed["schedules"][0];
    assert_eq!(me["nextRunAt"], Value::Null, "{listed}");
    assert_eq!(me["lastRun"]["outcome"], "completed", "{listed}");
    assert_eq!(me["owner"], "operator");

    // `session: "new"` (the default), run now: a new session titled "NAME · date".
    let id = create(
        &mut c,
        json!({"name": "digest", "agentAlias": "default", "prompt": "make the digest",
               "cron": "0 6 * * MON-FRI", "tz": "America/New_York"}),
    );
    let started = c.result("schedule/run", json!({"scheduleId": id}));
    assert_eq!(started["outcome"], "running", "{started}");
    let done = wait_runs(&mut c, &id, 1);
    assert_eq!(done[0]["outcome"], "completed", "{done:?}");
    assert_eq!(done[0]["runId"], started["runId"]);
    let sid = done[0]["sessionId"].as_str().unwrap().to_owned();
    let list = c.result("session/list", json!({}));
    let session = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == sid)
        .unwrap_or_else(|| panic!("{sid} not listed: {list}"))
        .clone();
    let title = session["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("digest · 20"), "{session}");
    let rows = c.messages(&sid);
    assert_eq!(rows[0]["content"], "make the digest", "{rows:?}");
}

#[test]
fn runs_missed_while_the_daemon_was_down_are_recorded_or_run_once() {
    let fake = Fake::start();
    fake.push(Scripted::text("caught up"));
    let mut daemon = start(&fake, "");
    let mut c = daemon.client();
    let at = in_ms(1_500);
    let skip = create(
        &mut c,
        json!({"name": "skipper", "agentAlias": "default", "prompt": "skipped prompt",
               "at": at, "tz": "UTC"}),
    );
    let once = create(
        &mut c,
        json!({"name": "catcher", "agentAlias": "default", "prompt": "caught-up prompt",
               "at": at, "tz": "UTC", "catchUp": "once"}),
    );
    // Stopped before their time, started again after it.
    c.result("daemon/shutdown", json!({}));
    assert!(daemon.wait_exit(WAIT).is_some(), "the daemon did not stop");
    let due = ms_of(&json!(at));
    while jiff::Timestamp::now().as_millisecond() < due + 500 {
        std::thread::sleep(Duration::from_millis(100));
    }
    daemon.spawn(&[]);
    let mut c = daemon.client();
    let caught = wait_runs(&mut c, &once, 1);
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert_eq!(caught[0]["outcome"], "completed", "{caught:?}");
    assert_eq!(ms_of(&caught[0]["scheduledFor"]), due);
    assert!(fake.wait_requests(1, WAIT));
    let sent = fake.requests()[0].to_string();
    assert!(sent.contains("caught-up prompt"), "{sent}");
    let missed = runs(&mut c, &skip);
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert_eq!(missed[0]["outcome"], "missed", "{missed:?}");
    assert_eq!(ms_of(&missed[0]["scheduledFor"]), due);
    assert!(missed[0].get("sessionId").is_none(), "{missed:?}");
    // The skipped prompt never reached the model: the only request is the caught-up one.
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn a_run_still_going_records_the_next_as_skipped_overlap() {
    let fake = Fake::start();
    fake.push(Scripted::slow(
        Duration::from_secs(3),
        Scripted::text("slow"),
    ));
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let id = create(
        &mut c,
        json!({"name": "long", "agentAlias": "default", "prompt": "take your time",
               "every": "1h"}),
    );
    let first = c.result("schedule/run", json!({"scheduleId": id}));
    assert_eq!(first["outcome"], "running", "{first}");
    assert!(
        fake.wait_requests(1, WAIT),
        "the first run never reached the model"
    );
    let second = c.result("schedule/run", json!({"scheduleId": id}));
    assert_eq!(second["outcome"], "skipped_overlap", "{second}");
    let all = wait_runs(&mut c, &id, 2);
    assert_eq!(all[0]["runId"], second["runId"]);
    assert_eq!(all[0]["outcome"], "skipped_overlap");
    assert_eq!(all[1]["runId"], first["runId"]);
    assert_eq!(all[1]["outcome"], "completed", "{all:?}");
    // Once the run ended, the next one goes again.
    fake.push(Scripted::text("again"));
    let third = c.result("schedule/run", json!({"scheduleId": id}));
    assert_eq!(third["outcome"], "running", "{third}");
    let all = wait_runs(&mut c, &id, 3);
    assert_eq!(all[0]["outcome"], "completed", "{all:?}");
}

#[test]
fn bad_timings_are_invalid_params_naming_the_field() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let base = json!({"name": "n", "agentAlias": "default", "prompt": "p"});
    let cases = [
        (json!({"cron": "61 * * * *"}), "cron"),
        (json!({"cron": "* * * *"}), "cron"),
        (json!({"cron": "@often"}), "cron"),
        (json!({"every": "30s"}), "every"),
        (json!({"every": "soon"}), "every"),
        (json!({"at": "tomorrow"}), "at"),
        (json!({"at": "2001-01-01T00:00:00Z"}), "at"),
        (json!({"cron": "@daily", "tz": "Mars/Olympus"}), "tz"),
        (json!({"cron": "@daily", "catchUp": "always"}), "catchUp"),
        (json!({}), "cron"),
        (json!({"cron": "@daily", "every": "1h"}), "cron"),
    ];
    for (timing, field) in cases {
        let mut params = base.clone();
        params
            .as_object_mut()
            .unwrap()
            .extend(timing.as_object().unwrap().clone());
        let e = c.error("schedule/create", params.clone());
        assert_eq!(code(&e), -32602, "{params}: {e}");
        assert_eq!(e["data"]["field"], field, "{params}: {e}");
        assert!(e["message"].as_str().unwrap().starts_with(field), "{e}");
    }
    let e = c.error(
        "schedule/create",
        json!({"agentAlias": "default", "prompt": "p", "every": "1h"}),
    );
    assert_eq!(
        (code(&e), e["data"]["field"].clone()),
        (-32602, json!("name")),
        "{e}"
    );
    // A valid one is accepted, and an update with a bad field changes nothing.
    let id = create(
        &mut c,
        json!({"name": "n", "agentAlias": "default", "prompt": "p", "every": "15m"}),
    );
    let e = c.error(
        "schedule/update",
        json!({"scheduleId": id, "every": "1m30"}),
    );
    assert_eq!(
        (code(&e), e["data"]["field"].clone()),
        (-32602, json!("every")),
        "{e}"
    );
    let listed = c.result("schedule/list", json!({}));
    assert_eq!(listed["schedules"][0]["every"], "15m", "{listed}");
    let e = c.error("schedule/runs", json!({"scheduleId": "nope"}));
    assert_eq!(
        (code(&e), e["data"]["field"].clone()),
        (-32602, json!("scheduleId")),
        "{e}"
    );
}

#[test]
fn a_principal_keeps_at_most_the_limit() {
    let fake = Fake::start();
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    for i in 0..100 {
        create(
            &mut c,
            json!({"name": format!("s{i}"), "agentAlias": "default", "prompt": "p", "cron": "@daily"}),
        );
    }
    let e = c.error(
        "schedule/create",
        json!({"name": "one too many", "agentAlias": "default", "prompt": "p", "cron": "@daily"}),
    );
    assert_eq!(code(&e), -32013, "{e}");
    assert!(e["message"].as_str().unwrap().contains("100"), "{e}");
    // Deleting one makes room.
    let first = c.result("schedule/list", json!({}))["schedules"][0]["scheduleId"].clone();
    assert_eq!(
        c.result("schedule/delete", json!({"scheduleId": first}))["deleted"],
        true
    );
    create(
        &mut c,
        json!({"name": "room", "agentAlias": "default", "prompt": "p", "cron": "@daily"}),
    );
}

/// The daemon's files open to `uid` (another local user connects to the socket).
fn open_to_others(daemon: &TestDaemon) {
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn the_schedules_grant_and_ownership_hold() {
    assert!(is_root(), "needs root to connect as another uid");
    let fake = Fake::start();
    fake.push(Scripted::text("user run done"));
    let uid = test_uid();
    let extra = format!(
        r#"[permission_profiles.planner]
grants = {{ sessions = ["create", "read", "update", "execute"], schedules = ["create", "read", "update", "delete"] }}
allowed_agents = ["default"]

[permission_profiles.reader]
grants = {{ sessions = ["read"] }}

[users.tester]
uid = {uid}
permission_profiles = ["planner"]

[users.stranger]
uid = {other}
permission_profiles = ["reader"]
"#,
        other = uid + 1
    );
    let daemon = start(&fake, &extra);
    open_to_others(&daemon);
    let mut op = daemon.client();
    let ops = create(
        &mut op,
        json!({"name": "ops", "agentAlias": "default", "prompt": "p", "cron": "@daily"}),
    );
    // Without the grant: refused.
    let mut stranger = UidConn::open(&daemon.socket, uid + 1);
    stranger.result("initialize", json!({"protocolVersion": 1}));
    let e = stranger.error("schedule/list", json!({}));
    assert_eq!(code(&e), -32012, "{e}");
    // With it: only their own, and the operator's are out of reach.
    let mut user = UidConn::open(&daemon.socket, uid);
    user.result("initialize", json!({"protocolVersion": 1}));
    let mine = user.result(
        "schedule/create",
        json!({"name": "mine", "agentAlias": "default", "prompt": "user's scheduled prompt",
               "cron": "@daily"}),
    )["scheduleId"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = user.result("schedule/list", json!({}));
    let ids: Vec<&Value> = listed["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["scheduleId"])
        .collect();
    assert_eq!(ids, [&json!(mine)], "{listed}");
    for method in ["schedule/run", "schedule/delete", "schedule/runs"] {
        let e = user.error(method, json!({"scheduleId": ops}));
        assert_eq!(code(&e), -32602, "{method}: {e}");
    }
    let e = user.error(
        "schedule/update",
        json!({"scheduleId": ops, "prompt": "mine now"}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    let e = user.error(
        "schedule/create",
        json!({"name": "x", "agentAlias": "echo", "prompt": "p", "cron": "@daily"}),
    );
    assert_eq!(code(&e), -32012, "{e}");
    // The admin sees both.
    assert_eq!(
        op.result("schedule/list", json!({}))["schedules"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The user's run is a turn of the user's: its session is the user's.
    user.result("schedule/run", json!({"scheduleId": mine}));
    let done = wait_runs(&mut op, &mine, 1);
    assert_eq!(done[0]["outcome"], "completed", "{done:?}");
    let sid = done[0]["sessionId"].as_str().unwrap();
    let theirs = user.result("session/list", json!({}));
    assert!(
        theirs["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == sid),
        "{theirs}"
    );
    // Once the user loses the session grants, the next run fails as the user would.
    op.result(
        "config/set",
        json!({"prop": "permission_profiles.planner.grants.sessions", "value": ["read"]}),
    );
    user.result("schedule/run", json!({"scheduleId": mine}));
    let done = wait_runs(&mut op, &mine, 2);
    assert_eq!(done[0]["outcome"], "failed", "{done:?}");
    assert!(
        done[0]["error"].as_str().unwrap().contains("session/new"),
        "{done:?}"
    );
}

/// The figure of docs/BENCHMARKS.md: how late 50 `at` runs start after their time
/// (`startedAt - scheduledFor`, as the daemon records them), p50 and p99.
#[test]
#[ignore = "a measurement: cargo test -p zeroclaw-e2e --test e2e -- schedules::lateness --ignored --nocapture"]
fn lateness_of_50_at_runs() {
    let fake = Fake::start();
    for _ in 0..50 {
        fake.push(Scripted::text("ok"));
    }
    let daemon = start(&fake, "");
    let mut c = daemon.client();
    let mut ids = Vec::new();
    for i in 0..50 {
        // Spread over 10 s, 200 ms apart, so runs do not pile up on one instant.
        ids.push(create(
            &mut c,
            json!({"name": format!("at{i}"), "agentAlias": "echo", "prompt": "p",
                   "at": in_ms(2_000 + 200 * i)}),
        ));
    }
    let mut late = Vec::new();
    for id in &ids {
        let r = wait_runs(&mut c, id, 1);
        assert_eq!(r[0]["outcome"], "completed", "{r:?}");
        late.push(ms_of(&r[0]["startedAt"]) - ms_of(&r[0]["scheduledFor"]));
    }
    late.sort_unstable();
    let p = |q: f64| late[((late.len() as f64 * q).ceil() as usize).saturating_sub(1)];
    println!(
        "lateness of 50 at runs: min {} ms, p50 {} ms, p99 {} ms, max {} ms",
        late[0],
        p(0.5),
        p(0.99),
        late[late.len() - 1]
    );
    assert!(p(0.99) < 1000, "{late:?}");
}

fn zc(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::BIN)
        .arg("--config-dir")
        .arg(dir)
        .args(args)
        .env_remove("ZEROCLAW_SOCKET")
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run zeroclaw")
}

fn stdout_of(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_cli_adds_lists_runs_and_removes_schedules() {
    let fake = Fake::start();
    fake.push(Scripted::text("nightly done"));
    let daemon = start(&fake, "");
    let dir = daemon.config_dir();
    let added = stdout_of(&zc(
        dir,
        &[
            "schedule",
            "add",
            "nightly",
            "--prompt",
            "tidy the notes",
            "--cron",
            "0 3 * * *",
            "--tz",
            "Europe/Berlin",
            "--json",
        ],
    ));
    let added: Value = serde_json::from_str(&added).unwrap();
    let id = added["scheduleId"].as_str().unwrap().to_owned();
    let list = stdout_of(&zc(dir, &["schedule", "list"]));
    assert!(list.contains(&id) && list.contains("nightly"), "{list}");
    assert!(list.contains("cron 0 3 * * * (Europe/Berlin)"), "{list}");
    let ran = stdout_of(&zc(dir, &["schedule", "run", &id]));
    assert!(
        ran.starts_with("run ") && ran.trim_end().ends_with(": running"),
        "{ran}"
    );
    let mut c = daemon.client();
    let done = wait_runs(&mut c, &id, 1);
    assert_eq!(done[0]["outcome"], "completed", "{done:?}");
    let runs = stdout_of(&zc(dir, &["schedule", "runs", &id]));
    assert!(
        runs.contains("completed") && runs.contains(done[0]["sessionId"].as_str().unwrap()),
        "{runs}"
    );
    let bad = zc(
        dir,
        &[
            "schedule",
            "add",
            "x",
            "--prompt",
            "p",
            "--cron",
            "99 * * * *",
        ],
    );
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("cron"), "{err}");
    let rm = stdout_of(&zc(dir, &["schedule", "rm", &id]));
    assert_eq!(rm, "schedule deleted\n");
    let list = stdout_of(&zc(dir, &["schedule", "list"]));
    assert_eq!(list, "no schedules\n");
}
