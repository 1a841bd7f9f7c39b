//! Notifications (SPEC §24.3) through the real binary: a fake Web Push service holding the
//! browser's keys decrypts what the daemon sent and verifies its VAPID JWT; an approval
//! waiting sends one push; nothing for a session the owner is watching (then one once the
//! face has left: the positive control); one push per session per window, the later one
//! held back and sent, not lost; a 410 drops the subscription; webhook and ntfy channels
//! get their requests with the right headers and signature; bad `push/subscribe` input is
//! refused naming the field.
//!
//! The prompts here come from a connection that leaves once its turn has started: the
//! prompter is subscribed to its session and active, so while it stays it is watching.

use std::time::Duration;

use crate::common;

use common::{Conn, Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zeroclaw_testkit::{FakePush, PushRequest, Scripted, Served};

const WAIT: Duration = Duration::from_secs(20);

fn start(fake: &Fake, extra: &str, env: &[(&str, &str)]) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_env(&[], env, |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    })
}

/// A bash call the supervised agent must ask about, after a pause long enough for the
/// prompter to have left.
fn asks(fake: &Fake, id: &str) {
    fake.push(Scripted::slow(
        Duration::from_millis(800),
        Scripted::tool_call(id, "bash", json!({"command": format!("echo {id}")})),
    ));
}

fn new_session(c: &mut Conn) -> String {
    let r = c.new_session(json!({"agentAlias": "default"}));
    r["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Prompts `sid` from a fresh connection that leaves as soon as its turn has started.
fn prompt_and_leave(daemon: &TestDaemon, sid: &str) {
    let mut c = daemon.client();
    c.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    until_update(&mut c, "user_message");
}

fn until_update(c: &mut Conn, kind: &str) -> Value {
    loop {
        let m = c.recv();
        if m["method"] == "session/update" && m["params"]["type"] == kind {
            return m["params"].clone();
        }
    }
}

fn approve(c: &mut Conn, sid: &str, request: &str, decision: &str) {
    let r = c.result(
        "session/approve",
        json!({"sessionId": sid, "requestId": request, "decision": decision}),
    );
    assert_eq!(r["acknowledged"], true, "{r}");
}

/// The decrypted JSON of a push, after checking its headers and VAPID JWT.
fn opened(push: &Served<FakePush>, req: &PushRequest, public_key: &str) -> Value {
    assert_eq!(req.header("content-encoding"), Some("aes128gcm"));
    assert!(
        req.header("ttl")
            .and_then(|t| t.parse::<u64>().ok())
            .is_some_and(|t| t > 0),
        "{:?}",
        req.headers
    );
    let auth = req.header("authorization").expect("Authorization");
    let (claims, k) = push
        .server
        .verify_vapid(auth)
        .unwrap_or_else(|e| panic!("VAPID: {e}: {auth}"));
    assert_eq!(k, public_key, "signed with the key push/key gives");
    assert!(claims["sub"].as_str().is_some_and(|s| !s.is_empty()));
    let plain = push
        .server
        .decrypt(&req.body)
        .unwrap_or_else(|e| panic!("decrypt: {e}"));
    assert!(plain.len() <= 3 * 1024, "{}", plain.len());
    serde_json::from_slice(&plain).expect("the payload is JSON")
}

#[test]
fn an_approval_waiting_sends_one_push_that_the_push_service_decrypts() {
    let fake = Fake::start();
    let push = Served::<FakePush>::start();
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    let key = c.result("push/key", json!({}))["publicKey"]
        .as_str()
        .expect("publicKey")
        .to_owned();
    assert_eq!(c.result("push/key", json!({}))["publicKey"], key, "one key");
    let kept = std::fs::metadata(daemon.data_dir().join("vapid_key")).expect("key file");
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(kept.permissions().mode() & 0o777, 0o600);
    }
    let r = c.result("push/subscribe", push.server.subscription("/push/a"));
    assert_eq!(r["subscribed"], true, "{r}");

    asks(&fake, "c1");
    fake.push(Scripted::text("done"));
    let sid = new_session(&mut c);
    prompt_and_leave(&daemon, &sid);
    let got = push.server.wait_requests("/push/a", 1, WAIT);
    assert_eq!(got.len(), 1, "one push for the waiting approval");
    assert_eq!(got[0].header("urgency"), Some("high"));
    let body = opened(&push, &got[0], &key);
    assert_eq!(body["event"], "approval_request", "{body}");
    assert_eq!(body["sessionId"], sid.as_str(), "{body}");
    assert_eq!(body["title"], "Approval needed", "{body}");
    assert!(
        body["text"].as_str().is_some_and(|t| t.contains("bash")),
        "{body}"
    );
    let request = body["requestId"].as_str().expect("requestId").to_owned();
    assert_eq!(
        body["url"],
        format!("/#/session/{sid}?request={request}"),
        "{body}"
    );
    // Answered from the phone: the push's request id is the waiting one.
    approve(&mut c, &sid, &request, "reject");

    // Positive control for "one": another session's approval makes the second push.
    asks(&fake, "c2");
    fake.push(Scripted::text("done"));
    let other = new_session(&mut c);
    prompt_and_leave(&daemon, &other);
    let got = push.server.wait_requests("/push/a", 2, WAIT);
    assert_eq!(
        got.len(),
        2,
        "{:?}",
        got.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert_eq!(opened(&push, &got[1], &key)["sessionId"], other.as_str());
}

#[test]
fn nothing_is_pushed_while_the_owner_watches_the_session() {
    let fake = Fake::start();
    let push = Served::<FakePush>::start();
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    let key = c.result("push/key", json!({}))["publicKey"]
        .as_str()
        .expect("publicKey")
        .to_owned();
    c.result("push/subscribe", push.server.subscription("/push/w"));
    let sid = new_session(&mut c);

    // A face of the owner subscribed and active: it sees the request, nobody is pushed.
    let mut watcher = daemon.client();
    watcher.result("session/subscribe", json!({"sessionId": sid}));
    asks(&fake, "w1");
    fake.push(Scripted::text("done"));
    prompt_and_leave(&daemon, &sid);
    let asked = until_update(&mut watcher, "approval_request");
    let first = asked["requestId"].as_str().expect("requestId").to_owned();
    approve(&mut watcher, &sid, &first, "reject");
    until_update(&mut watcher, "turn_complete");
    drop(watcher);

    // The face left: the next request is pushed, and it is the only push there was.
    asks(&fake, "w2");
    fake.push(Scripted::text("done"));
    prompt_and_leave(&daemon, &sid);
    let got = push.server.wait_requests("/push/w", 1, WAIT);
    assert_eq!(got.len(), 1);
    let body = opened(&push, &got[0], &key);
    assert_ne!(
        body["requestId"],
        first.as_str(),
        "the watched request was not pushed"
    );
    assert_eq!(body["event"], "approval_request");
}

#[test]
fn one_push_per_session_per_window_the_later_one_held_then_sent() {
    let fake = Fake::start();
    let push = Served::<FakePush>::start();
    let window = Duration::from_millis(2500);
    let daemon = start(&fake, "", &[("ZEROCLAW_TEST_NOTIFY_COALESCE_MS", "2500")]);
    let mut c = daemon.client();
    let key = c.result("push/key", json!({}))["publicKey"]
        .as_str()
        .expect("publicKey")
        .to_owned();
    c.result("push/subscribe", push.server.subscription("/push/c"));
    let sid = new_session(&mut c);
    // Two calls in one turn: the second asks right after the first is answered.
    asks(&fake, "k1");
    fake.push(Scripted::tool_call(
        "k2",
        "bash",
        json!({"command": "echo k2"}),
    ));
    fake.push(Scripted::text("done"));
    prompt_and_leave(&daemon, &sid);
    let got = push.server.wait_requests("/push/c", 1, WAIT);
    let first = opened(&push, &got[0], &key);
    let request = first["requestId"].as_str().expect("requestId").to_owned();
    approve(&mut c, &sid, &request, "reject");
    let got = push.server.wait_requests("/push/c", 2, WAIT);
    assert_eq!(got.len(), 2, "the held notice is sent when the window ends");
    let second = opened(&push, &got[1], &key);
    assert_eq!(second["event"], "approval_request");
    assert_ne!(second["requestId"], first["requestId"]);
    let gap = got[1].at.duration_since(got[0].at);
    assert!(
        gap >= window - Duration::from_millis(100),
        "two pushes for one session {gap:?} apart"
    );
    let request = second["requestId"].as_str().expect("requestId").to_owned();
    approve(&mut c, &sid, &request, "reject");
}

#[test]
fn a_410_drops_the_subscription() {
    let fake = Fake::start();
    let push = Served::<FakePush>::start();
    push.server.set_status("/push/gone", 410);
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.result("push/subscribe", push.server.subscription("/push/gone"));
    c.result("push/subscribe", push.server.subscription("/push/ok"));
    for n in 1..=2 {
        asks(&fake, &format!("g{n}"));
        fake.push(Scripted::text("done"));
        let sid = new_session(&mut c);
        prompt_and_leave(&daemon, &sid);
        // The kept subscription is the positive control: it got this round's push.
        let got = push.server.wait_requests("/push/ok", n, WAIT);
        assert_eq!(got.len(), n, "{}", daemon.log());
        let body = push.server.decrypt(&got[n - 1].body).expect("decrypts");
        let body: Value = serde_json::from_slice(&body).expect("json");
        let request = body["requestId"].as_str().expect("requestId").to_owned();
        approve(&mut c, &sid, &request, "reject");
    }
    // Both were pushed in round 1 (in subscription order); only the kept one in round 2.
    assert_eq!(push.server.requests("/push/gone").len(), 1);
    // And it is gone from the store: unsubscribing finds nothing.
    let r = c.result(
        "push/unsubscribe",
        json!({"endpoint": push.server.url("/push/gone")}),
    );
    assert_eq!(r["unsubscribed"], false, "{r}");
    let r = c.result(
        "push/unsubscribe",
        json!({"endpoint": push.server.url("/push/ok")}),
    );
    assert_eq!(r["unsubscribed"], true, "{r}");
}

pub(crate) fn hmac_sha256(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    hex::encode(outer)
}

#[test]
fn webhook_and_ntfy_channels_get_their_requests() {
    let fake = Fake::start();
    let hooks = Served::<FakePush>::start();
    let extra = format!(
        "[notify.hook]\nkind = \"webhook\"\nurl = \"{}\"\nsecret = \"s3cret\"\n\n\
         [notify.phone]\nkind = \"ntfy\"\nurl = \"{}\"\npriority = 5\nevents = [\"approval_request\"]\n\n\
         [notify.failures]\nkind = \"webhook\"\nurl = \"{}\"\nevents = [\"turn_failed\"]\n",
        hooks.server.url("/hook"),
        hooks.server.url("/ntfy/zeroclaw"),
        hooks.server.url("/failures"),
    );
    let daemon = start(&fake, &extra, &[]);
    let mut c = daemon.client();
    // The secret reads back masked.
    let got = c.result("config/get", json!({"prop": "notify.hook.secret"}));
    assert_eq!(got["value"], "***", "{got}");
    asks(&fake, "h1");
    fake.push(Scripted::text("done"));
    let sid = new_session(&mut c);
    prompt_and_leave(&daemon, &sid);

    let got = hooks.server.wait_requests("/hook", 1, WAIT);
    assert_eq!(got.len(), 1);
    let hook = &got[0];
    assert_eq!(hook.header("content-type"), Some("application/json"));
    let want = format!("sha256={}", hmac_sha256(b"s3cret", &hook.body));
    assert_eq!(hook.header("x-zeroclaw-signature"), Some(want.as_str()));
    let body: Value = serde_json::from_slice(&hook.body).expect("json");
    assert_eq!(body["event"], "approval_request", "{body}");
    assert_eq!(body["sessionId"], sid.as_str(), "{body}");
    assert_eq!(body["title"], "Approval needed", "{body}");
    assert!(
        body["url"].as_str().is_some_and(|u| u.contains(&sid)),
        "{body}"
    );
    assert!(
        body["text"].as_str().is_some_and(|t| t.contains("bash")),
        "{body}"
    );

    let got = hooks.server.wait_requests("/ntfy/zeroclaw", 1, WAIT);
    assert_eq!(got.len(), 1);
    let ntfy = &got[0];
    assert_eq!(ntfy.header("title"), Some("Approval needed"));
    assert_eq!(ntfy.header("priority"), Some("5"));
    assert!(String::from_utf8_lossy(&ntfy.body).contains("bash"));
    let request = body["requestId"].as_str().expect("requestId").to_owned();
    approve(&mut c, &sid, &request, "reject");

    // The events filter: a failed turn reaches `failures` (the positive control), and
    // `failures` had nothing of the approval before it.
    fake.push(Scripted::http_error(400, "bad request"));
    let other = new_session(&mut c);
    prompt_and_leave(&daemon, &other);
    let got = hooks.server.wait_requests("/failures", 1, WAIT);
    assert_eq!(got.len(), 1);
    let failed: Value = serde_json::from_slice(&got[0].body).expect("json");
    assert_eq!(failed["event"], "turn_failed", "{failed}");
    assert_eq!(failed["sessionId"], other.as_str(), "{failed}");
    assert!(
        got[0].header("x-zeroclaw-signature").is_none(),
        "no secret, no signature"
    );
    assert_eq!(
        hooks.server.requests("/ntfy/zeroclaw").len(),
        1,
        "ntfy wants approvals only"
    );
}

#[test]
fn push_subscribe_refuses_bad_input_naming_the_field() {
    let push = Served::<FakePush>::start();
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let good = push.server.subscription("/p");
    let cases = [
        (
            json!({"endpoint": "http://example.com/p", "keys": good["keys"]}),
            "endpoint",
        ),
        (
            json!({"endpoint": "ftp://127.0.0.1/p", "keys": good["keys"]}),
            "endpoint",
        ),
        // Not a door to a private network or the cloud's metadata address (even in a
        // test build, which admits only this machine besides public hosts).
        (
            json!({"endpoint": "https://10.0.0.1/p", "keys": good["keys"]}),
            "endpoint",
        ),
        (
            json!({"endpoint": "https://169.254.169.254/latest", "keys": good["keys"]}),
            "endpoint",
        ),
        (
            json!({"endpoint": good["endpoint"], "keys": {"p256dh": "AAAA", "auth": good["keys"]["auth"]}}),
            "keys.p256dh",
        ),
        (
            json!({"endpoint": good["endpoint"], "keys": {"p256dh": good["keys"]["p256dh"], "auth": "AAAA"}}),
            "keys.auth",
        ),
        (
            json!({"endpoint": good["endpoint"], "keys": {"p256dh": "*", "auth": good["keys"]["auth"]}}),
            "keys.p256dh",
        ),
    ];
    for (params, field) in cases {
        let e = c.error("push/subscribe", params.clone());
        assert_eq!(common::code(&e), -32602, "{params} → {e}");
        assert!(
            e["message"].as_str().is_some_and(|m| m.contains(field)),
            "{params} → {e}"
        );
    }
    let e = c.error("push/subscribe", json!({"endpoint": good["endpoint"]}));
    assert_eq!(common::code(&e), -32602, "{e}");
    assert_eq!(c.result("push/subscribe", good.clone())["subscribed"], true);
    let r = c.result("push/unsubscribe", json!({"endpoint": good["endpoint"]}));
    assert_eq!(r["unsubscribed"], true);
    let r = c.result("push/unsubscribe", json!({"endpoint": good["endpoint"]}));
    assert_eq!(r["unsubscribed"], false);
}

#[test]
fn an_ask_user_question_to_an_idle_face_is_pushed_and_answered_there() {
    let fake = Fake::start();
    let push = Served::<FakePush>::start();
    // A face counts as watching for 300 ms after its last request here (2 min in use).
    let daemon = start(&fake, "", &[("ZEROCLAW_TEST_NOTIFY_ACTIVE_MS", "300")]);
    let mut c = daemon.client();
    let key = c.result("push/key", json!({}))["publicKey"]
        .as_str()
        .expect("publicKey")
        .to_owned();
    c.result("push/subscribe", push.server.subscription("/push/q"));
    fake.push(Scripted::slow(
        Duration::from_millis(800),
        Scripted::tool_call("q1", "ask_user", json!({"question": "colour?"})),
    ));
    fake.push(Scripted::text("noted"));
    let sid = new_session(&mut c);
    // `ask_user` is offered only while a face can answer: one is subscribed, and has gone
    // quiet by the time the question comes.
    let mut face = daemon.eliciting_client();
    face.result("session/subscribe", json!({"sessionId": sid}));
    prompt_and_leave(&daemon, &sid);
    let got = push.server.wait_requests("/push/q", 1, WAIT);
    assert_eq!(got.len(), 1, "{}", daemon.log());
    let body = opened(&push, &got[0], &key);
    assert_eq!(body["event"], "ask_user", "{body}");
    assert_eq!(body["text"], "colour?", "{body}");
    assert_eq!(body["sessionId"], sid.as_str(), "{body}");

    // The owner picks up that face: it was asked the same question.
    let question = loop {
        let m = face.recv();
        if m["method"] == "elicitation/create" {
            break m;
        }
    };
    assert_eq!(
        question["params"]["requestId"], body["requestId"],
        "{question}"
    );
    face.send(
        &json!({"jsonrpc": "2.0", "id": question["id"],
                "result": {"action": "accept", "content": {"answer": "teal"}}})
        .to_string(),
    );
    let resolved = until_update(&mut face, "ask_user_resolved");
    assert_eq!(resolved["reason"], "answered", "{resolved}");
}
