//! Webhooks (SPEC §23.1) against the real binary, over raw HTTP on a TcpStream to the
//! gateway: GitHub's documented signature example and the Standard Webhooks reference
//! vector checked byte for byte; every refusal (bad or absent signature, stale timestamp,
//! oversize body, rate, unknown name, event not allowed) starts nothing, against a
//! positive control that starts exactly one turn; the same delivery twice, across a
//! daemon restart, runs once; `per_key` reuses its session; the fake model receives the
//! rendered prompt; the turn says `promptedBy: "webhook:NAME"`.
//!
//! Signatures here are computed with RustCrypto's `hmac` directly, not with the daemon's
//! own code.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::ws::{WSS_SECTION, listening_port};
use common::{Conn, Fake, TestDaemon, session_config};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use zeroclaw_testkit::Scripted;

/// GitHub's documented example (docs.github.com, "Validating webhook deliveries").
const GH_SECRET: &str = "It's a Secret to Everybody";
const GH_BODY: &str = "Hello, World!";
const GH_SIGNATURE: &str =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

/// The Standard Webhooks reference vector (github.com/standard-webhooks/standard-webhooks,
/// libraries/javascript/src/webhook.test.ts, "sign function works").
const STD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STD_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const STD_TIMESTAMP: i64 = 1614265330;
const STD_BODY: &str = r#"{"test": 2432232314}"#;
const STD_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

const WEBHOOKS: &str = r#"
[webhooks.gh]
agent = "default"
secret_env = "GH_SECRET"
events = ["push"]
prompt = "Push to {{json /repository/full_name}} ({{event}}, {{delivery}}): {{json /head_commit/message}}"

[webhooks.std]
agent = "default"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
session = "per_key"
key = "/pr"
prompt = "Pull request {{json /pr}}: {{json /title}}"

[webhooks.slow]
agent = "default"
secret = "slow-secret"
rate_per_minute = 1
"#;

fn start(fake: &Fake) -> (TestDaemon, u16) {
    let config = format!(
        "{}{WSS_SECTION}{WEBHOOKS}",
        session_config(&fake.server.base_url(), "")
    );
    let daemon = TestDaemon::start_env(&[], &[("GH_SECRET", GH_SECRET)], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let port = listening_port(&daemon);
    (daemon, port)
}

// ---- signing, independently of the daemon ----------------------------------------------

fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

fn github_signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac(secret.as_bytes(), &[body])))
}

fn standard_signature(secret: &str, id: &str, ts: i64, body: &[u8]) -> String {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").expect("whsec_ secret"))
        .expect("base64 secret");
    let sig = hmac(&key, &[format!("{id}.{ts}.").as_bytes(), body]);
    format!("v1,{}", STANDARD.encode(sig))
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

// ---- raw HTTP ----------------------------------------------------------------------------

#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn read_reply(s: &mut TcpStream) -> Reply {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).expect("a response");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("utf-8 head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let len = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.trim().parse().expect("length"));
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("body");
    Reply { status, body }
}

/// Posts `body` to `path` with `headers`, on a fresh connection.
pub(crate) fn deliver(port: u16, path: &str, headers: &[(&str, String)], body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    let mut bytes = raw.into_bytes();
    bytes.extend_from_slice(body);
    s.write_all(&bytes).expect("write");
    read_reply(&mut s)
}

/// A GitHub-style delivery of `event` to `name`, signed with `secret`.
fn github(port: u16, name: &str, secret: &str, event: &str, id: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let headers = [
        ("Content-Type", "application/json".to_owned()),
        ("X-GitHub-Event", event.to_owned()),
        ("X-GitHub-Delivery", id.to_owned()),
        (
            "X-Hub-Signature-256",
            github_signature(secret, body.as_bytes()),
        ),
    ];
    deliver(
        port,
        &format!("/webhooks/{name}"),
        &headers,
        body.as_bytes(),
    )
}

/// A Standard Webhooks delivery to `std`, signed now.
fn standard(port: u16, id: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let ts = now();
    let headers = [
        ("Content-Type", "application/json".to_owned()),
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", ts.to_string()),
        (
            "webhook-signature",
            standard_signature(STD_SECRET, id, ts, body.as_bytes()),
        ),
    ];
    deliver(port, "/webhooks/std", &headers, body.as_bytes())
}

/// The gateway's port after a restart: the second listener the log names.
fn second_listening_port(daemon: &TestDaemon) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = daemon.log();
        let port = log
            .split("websocket listening on ")
            .nth(2)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|addr| addr.trim_end_matches('/').rsplit(':').next())
            .and_then(|p| p.parse().ok());
        if let Some(port) = port {
            return port;
        }
        assert!(Instant::now() < deadline, "no second listener:\n{log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- the daemon's side ----------------------------------------------------------------------

/// Waits until delivery `id` of webhook `name` has ended; returns its record.
fn ended(c: &mut Conn, name: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.result("webhook/deliveries", json!({"name": name}));
        let found = r["deliveries"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["id"] == id).cloned());
        if let Some(d) = found.filter(|d| d["status"] != "accepted") {
            return d;
        }
        assert!(Instant::now() < deadline, "delivery {id} did not end: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn session_count(c: &mut Conn) -> usize {
    let r = c.result("session/list", json!({}));
    r["sessions"].as_array().map_or(0, Vec::len)
}

/// The text of the last user message the fake model received in request `i`.
fn prompt_seen(fake: &Fake, i: usize) -> String {
    let requests = fake.requests();
    let messages = requests[i]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn signatures_hold_byte_for_byte_and_every_refusal_starts_nothing() {
    let fake = Fake::start();
    let (daemon, port) = start(&fake);
    let mut c = daemon.client();

    // GitHub's example: the signature holds (the event, not the signature, is refused:
    // 422 comes only after the signature check).
    let ping = [
        ("X-GitHub-Event", "ping".to_owned()),
        ("X-Hub-Signature-256", GH_SIGNATURE.to_owned()),
    ];
    let r = deliver(port, "/webhooks/gh", &ping, GH_BODY.as_bytes());
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("\"ping\""), "{}", r.text());
    assert_eq!(
        github_signature(GH_SECRET, GH_BODY.as_bytes()),
        GH_SIGNATURE
    );

    // A bad signature, an absent one, and an unknown name: 401, alike.
    let mut bad = ping.clone();
    bad[1].1 = GH_SIGNATURE.replace("757", "758");
    let r_bad = deliver(port, "/webhooks/gh", &bad, GH_BODY.as_bytes());
    let r_unknown = deliver(port, "/webhooks/nope", &ping, GH_BODY.as_bytes());
    assert_eq!((r_bad.status, r_unknown.status), (401, 401));
    assert_eq!(r_bad.text(), r_unknown.text());
    let r = deliver(port, "/webhooks/gh", &ping[..1], GH_BODY.as_bytes());
    assert_eq!(r.status, 401, "{}", r.text());

    // The Standard Webhooks vector: its signature holds, and its 2021 timestamp is stale.
    let vector = [
        ("webhook-id", STD_ID.to_owned()),
        ("webhook-timestamp", STD_TIMESTAMP.to_string()),
        ("webhook-signature", STD_SIGNATURE.to_owned()),
    ];
    let r = deliver(port, "/webhooks/std", &vector, STD_BODY.as_bytes());
    assert_eq!(r.status, 401);
    assert!(r.text().contains("5 minutes"), "{}", r.text());
    assert_eq!(
        standard_signature(STD_SECRET, STD_ID, STD_TIMESTAMP, STD_BODY.as_bytes()),
        STD_SIGNATURE
    );
    let mut tampered = vector.clone();
    tampered[2].1 = STD_SIGNATURE.replace("g0h", "g1h");
    let r = deliver(port, "/webhooks/std", &tampered, STD_BODY.as_bytes());
    assert!(
        r.status == 401 && r.text().contains("does not match"),
        "{}",
        r.text()
    );

    // Oversize: refused from its declared length, the body never sent.
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let head = format!(
        "POST /webhooks/gh HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n\r\n",
        1024 * 1024 + 1
    );
    s.write_all(head.as_bytes()).expect("write");
    assert_eq!(read_reply(&mut s).status, 413);

    // Rate: `slow` takes one delivery a minute; the second is 429.
    fake.push(Scripted::text("slow done"));
    let r = github(
        port,
        "slow",
        "slow-secret",
        "push",
        "slow-1",
        &json!({"n": 1}),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    ended(&mut c, "slow", "slow-1");
    let r = github(
        port,
        "slow",
        "slow-secret",
        "push",
        "slow-2",
        &json!({"n": 2}),
    );
    assert_eq!(r.status, 429, "{}", r.text());

    // The positive control: one good delivery starts exactly one turn, whose prompt the
    // model receives rendered, and which says it came from the webhook.
    fake.push(Scripted::text("looked at it"));
    let payload = json!({
        "repository": {"full_name": "acme/rocket"},
        "head_commit": {"message": "Fix the fins"}
    });
    let r = github(port, "gh", GH_SECRET, "push", "gh-1", &payload);
    assert_eq!(r.status, 202, "{}", r.text());
    let accepted = r.json();
    let record = ended(&mut c, "gh", "gh-1");
    assert_eq!(record["status"], "completed", "{record}");
    assert_eq!(record["sessionId"], accepted["sessionId"]);
    assert_eq!(record["turnId"], accepted["turnId"]);
    // slow-1 and gh-1: nothing else reached the model, and no other session exists.
    assert_eq!(fake.requests().len(), 2, "{:?}", fake.requests());
    assert_eq!(session_count(&mut c), 2);
    let seen = prompt_seen(&fake, 1);
    assert!(
        seen.contains("webhook gh delivery gh-1")
            && seen.contains("Push to acme/rocket (push, gh-1): Fix the fins"),
        "{seen}"
    );
    let session = accepted["sessionId"].as_str().expect("sessionId");
    let rows = c.messages_in(session, "chat");
    let assistant = rows
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("an answer");
    assert_eq!(assistant["turnId"], accepted["turnId"]);
    assert!(
        assistant["content"]
            .as_str()
            .unwrap_or("")
            .contains("looked at it")
    );
}

#[test]
fn a_delivery_runs_once_across_a_restart_and_per_key_reuses_its_session() {
    let fake = Fake::start();
    let (mut daemon, port) = start(&fake);
    let mut c = daemon.client();

    fake.push(Scripted::text("first"));
    let r = standard(port, "msg_1", &json!({"pr": 7, "title": "Add fins"}));
    assert_eq!(r.status, 202, "{}", r.text());
    let first = r.json();
    ended(&mut c, "std", "msg_1");

    // Again, at once: 200 with the first delivery's ids.
    let r = standard(port, "msg_1", &json!({"pr": 7, "title": "Add fins"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), first);

    // And after a restart.
    drop(c);
    daemon.signal(libc::SIGTERM);
    assert!(
        daemon.wait_exit(Duration::from_secs(10)).is_some(),
        "stopped"
    );
    daemon.spawn_env(&[], &[("GH_SECRET", GH_SECRET)]);
    let port = second_listening_port(&daemon);
    let mut c = daemon.client();
    let r = standard(port, "msg_1", &json!({"pr": 7, "title": "Add fins"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), first);

    // The controls: a new delivery for the same key goes to the same session, another
    // key to another one; each runs once.
    fake.push(Scripted::text("second"));
    let r = standard(port, "msg_2", &json!({"pr": 7, "title": "Add fins"}));
    assert_eq!(r.status, 202, "{}", r.text());
    let second = r.json();
    assert_eq!(second["sessionId"], first["sessionId"]);
    assert_ne!(second["turnId"], first["turnId"]);
    fake.push(Scripted::text("third"));
    let r = standard(port, "msg_3", &json!({"pr": 8, "title": "Other"}));
    assert_eq!(r.status, 202, "{}", r.text());
    let third = r.json();
    assert_ne!(third["sessionId"], first["sessionId"]);
    for id in ["msg_2", "msg_3"] {
        assert_eq!(ended(&mut c, "std", id)["status"], "completed");
    }
    assert_eq!(fake.requests().len(), 3, "{:?}", fake.requests());
    let session = first["sessionId"].as_str().expect("sessionId");
    let rows = c.messages_in(session, "chat");
    let answers: Vec<_> = rows.iter().filter(|m| m["role"] == "assistant").collect();
    assert_eq!(answers.len(), 2, "{rows:?}");
    // msg_2 and msg_3 ran at once, in two sessions: their requests in either order.
    let prompts: Vec<String> = (0..3).map(|i| prompt_seen(&fake, i)).collect();
    let count = |needle: &str| prompts.iter().filter(|p| p.contains(needle)).count();
    assert_eq!(count("Pull request 7: Add fins"), 2, "{prompts:?}");
    assert_eq!(count("Pull request 8: Other"), 1, "{prompts:?}");
}

#[test]
fn the_turn_is_prompted_by_the_webhook() {
    let fake = Fake::start();
    let (daemon, port) = start(&fake);
    let mut c = daemon.client();
    fake.push(Scripted::text("ok"));
    let r = standard(port, "msg_p", &json!({"pr": 9, "title": "Watch"}));
    assert_eq!(r.status, 202, "{}", r.text());
    let accepted = r.json();
    ended(&mut c, "std", "msg_p");
    // The session's replay shows the turn's user_message and who sent it.
    let session = accepted["sessionId"].as_str().expect("sessionId");
    let sub = c.call(
        "session/subscribe",
        json!({"sessionId": session, "mode": "chat", "turnId": accepted["turnId"], "afterEventSeq": 0}),
    );
    assert!(sub.get("result").is_some(), "{sub}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = c.recv();
        let update = &m["params"];
        if update["type"] == "user_message" {
            assert_eq!(update["promptedBy"], "webhook:std", "{m}");
            break;
        }
        assert!(Instant::now() < deadline, "no user_message replayed");
    }
}

/// Accept latency (docs/BENCHMARKS.md): `POST /webhooks/NAME` round trips on a fresh
/// connection each — signature, rate, idempotency insert (one SQLite transaction), 202 —
/// then the same deliveries again (signature and idempotency lookup, 200). The turns run
/// on the offline `echo` agent meanwhile. Run with `--ignored --nocapture`.
#[test]
#[ignore = "a measurement for docs/BENCHMARKS.md: cargo test -p zeroclaw-e2e --test e2e -- webhooks::accept_latency --ignored --nocapture"]
fn accept_latency() {
    let fake = Fake::start();
    let config = format!(
        "{}{WSS_SECTION}[webhooks.bench]\nagent = \"echo\"\nsecret = \"bench\"\nrate_per_minute = 60000\n",
        session_config(&fake.server.base_url(), "")
    );
    let daemon = TestDaemon::start_env(&[], &[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let port = listening_port(&daemon);
    let n = 300;
    let round = |expect: u16| {
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let t = Instant::now();
            let r = github(
                port,
                "bench",
                "bench",
                "push",
                &format!("b-{i}"),
                &json!({"i": i}),
            );
            times.push(t.elapsed());
            assert_eq!(r.status, expect, "{}", r.text());
        }
        times.sort();
        let p50 = times[n / 2];
        let p99 = times[n * 99 / 100];
        (p50, p99)
    };
    let (a50, a99) = round(202);
    let (d50, d99) = round(200);
    println!(
        "webhook accept ({n} deliveries): p50 {:.2} ms, p99 {:.2} ms; repeated delivery: p50 {:.2} ms, p99 {:.2} ms",
        a50.as_secs_f64() * 1e3,
        a99.as_secs_f64() * 1e3,
        d50.as_secs_f64() * 1e3,
        d99.as_secs_f64() * 1e3
    );
}

/// Runs `zeroclaw --config-dir DIR ARGS…` with `GH_SECRET` set: (exit code, stdout, stderr).
fn cli(daemon: &TestDaemon, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = daemon.config_dir().to_string_lossy().into_owned();
    let out = std::process::Command::new(common::BIN)
        .args(["--config-dir", &dir])
        .args(args)
        .env("GH_SECRET", GH_SECRET)
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_adds_lists_tests_and_removes_a_webhook() {
    let fake = Fake::start();
    let config = format!(
        "{}{WSS_SECTION}",
        session_config(&fake.server.base_url(), "")
    );
    let daemon = TestDaemon::start_env(&[], &[("GH_SECRET", GH_SECRET)], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let mut c = daemon.client();

    // Without a secret, the daemon refuses the write and names the property.
    let refused = c.error(
        "config/set-many",
        json!({"sets": [{"prop": "webhooks.nosecret.agent", "value": "default"}]}),
    );
    assert_eq!(common::code(&refused), -32602, "{refused}");
    assert!(
        refused.to_string().contains("webhooks.nosecret.secret_env"),
        "{refused}"
    );

    let (code, out, err) = cli(
        &daemon,
        &[
            "webhook",
            "add",
            "gh",
            "--agent",
            "default",
            "--secret-env",
            "GH_SECRET",
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = cli(&daemon, &["webhook", "list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("gh\t/webhooks/gh") && out.contains("secret set"),
        "{out}"
    );

    fake.push(Scripted::text("tested"));
    let payload = daemon.config_dir().join("payload.json");
    std::fs::write(&payload, r#"{"hello": "world"}"#).expect("payload");
    let path = payload.to_string_lossy().into_owned();
    let (code, out, err) = cli(&daemon, &["webhook", "test", "gh", "--payload", &path]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("202 "), "{out}");
    let accepted: Value = serde_json::from_str(out.trim_start_matches("202 ")).expect("ids");
    let (code, out, _) = cli(&daemon, &["webhook", "deliveries", "gh", "--json"]);
    assert_eq!(code, Some(0));
    let listed: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        listed["deliveries"][0]["turnId"], accepted["turnId"],
        "{listed}"
    );
    let record = ended(
        &mut c,
        "gh",
        listed["deliveries"][0]["id"].as_str().expect("id"),
    );
    assert_eq!(record["status"], "completed", "{record}");
    assert!(prompt_seen(&fake, 0).contains("\"hello\": \"world\""));

    let (code, _, err) = cli(&daemon, &["webhook", "rm", "gh"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = cli(&daemon, &["webhook", "list"]);
    assert!(!out.contains("gh\t"), "{out}");
}

#[test]
fn the_turn_runs_as_run_as_with_that_users_grants() {
    let fake = Fake::start();
    let users = r#"
[permission_profiles.runner]
grants = { sessions = ["create", "read", "update", "execute"] }
allowed_agents = ["default"]
[permission_profiles.reader]
grants = { sessions = ["create", "read"] }
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["runner"]
[users.bob]
permission_profiles = ["reader"]
[webhooks.alice]
agent = "default"
secret = "a-secret"
run_as = "alice"
[webhooks.bob]
agent = "default"
secret = "b-secret"
run_as = "bob"
[webhooks.owner]
agent = "default"
secret = "o-secret"
"#;
    let config = format!(
        "{}{WSS_SECTION}{users}",
        session_config(&fake.server.base_url(), "")
    );
    let daemon = TestDaemon::start_env(&[], &[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let port = listening_port(&daemon);
    let mut c = daemon.client();

    fake.push(Scripted::text("as alice"));
    let r = github(port, "alice", "a-secret", "push", "a-1", &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    let alices = r.json();
    assert_eq!(ended(&mut c, "alice", "a-1")["status"], "completed");
    fake.push(Scripted::text("as the owner"));
    let r = github(port, "owner", "o-secret", "push", "o-1", &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    let owners = r.json();
    assert_eq!(ended(&mut c, "owner", "o-1")["status"], "completed");
    // Bob may create sessions but not prompt them: his grants stop the turn.
    let r = github(port, "bob", "b-secret", "push", "b-1", &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    let record = ended(&mut c, "bob", "b-1");
    assert_eq!(record["status"], "failed", "{record}");
    assert!(
        record["error"]
            .as_str()
            .unwrap_or("")
            .contains("session/prompt"),
        "{record}"
    );
    assert_eq!(fake.requests().len(), 2, "{:?}", fake.requests());

    // Alice's own list has her webhook's session, not the owner's.
    let token = common::ws::pair(daemon.config_dir(), "alice");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let listed = rt.block_on(async {
        let mut alice = common::ws::WsClient::open(port, &token).await;
        alice.call("session/list", json!({})).await
    });
    let ids: Vec<&str> = listed["result"]["sessions"]
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["sessionId"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        ids.contains(&alices["sessionId"].as_str().expect("id")),
        "{listed}"
    );
    assert!(
        !ids.contains(&owners["sessionId"].as_str().expect("id")),
        "{listed}"
    );
}
