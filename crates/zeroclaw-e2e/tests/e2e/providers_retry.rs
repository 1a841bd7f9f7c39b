//! The retry policy of every provider (SPEC §19) over the real binary, on the `openai`
//! kind against the fake OpenAI server: which failures are retried, `retry-after`,
//! `provider_retry` updates, cancel during a wait, nothing retried once streaming began,
//! and a redirect or a web page answered in place of a stream (every kind) failing at once.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, session_config, streamed_text, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn) -> String {
    let r = c.new_session(json!({"agentAlias": "default"}));
    r["sessionId"].as_str().unwrap().to_string()
}

/// The `provider_retry` updates among `msgs`.
fn retries(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["type"] == "provider_retry")
        .collect()
}

#[test]
fn a_429_then_a_529_then_success_is_retried_with_provider_retry_updates() {
    let fake = Fake::start();
    fake.push(Scripted::throttled(429, "rate limited, slow down", "0"));
    fake.push(Scripted::throttled(529, "Overloaded", "0.2"));
    fake.push(Scripted::text("finally here"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "finally here");
    assert_eq!(streamed_text(&msgs), "finally here");
    let r = retries(&msgs);
    assert_eq!(r.len(), 2, "{msgs:?}");
    assert_eq!(r[0]["attempt"], 1);
    assert_eq!(r[0]["delaySecs"], 0.0);
    assert!(
        r[0]["reason"]
            .as_str()
            .is_some_and(|s| s.contains("429") && s.contains("rate limited, slow down")),
        "{r:?}"
    );
    assert_eq!(r[1]["attempt"], 2);
    assert_eq!(r[1]["delaySecs"], 0.2);
    assert!(
        r[1]["reason"].as_str().is_some_and(|s| s.contains("529")),
        "{r:?}"
    );
    // Each try sent the same request.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0], reqs[2]);
}

#[test]
fn without_retry_after_the_first_retry_waits_about_a_second() {
    let fake = Fake::start();
    fake.push(Scripted::http_error(503, "try again"));
    fake.push(Scripted::text("ok"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let t = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hello");
    let elapsed = t.elapsed();
    assert_eq!(resp["result"]["content"], "ok", "{resp}");
    let r = retries(&msgs);
    assert_eq!(r.len(), 1, "{msgs:?}");
    let delay = r[0]["delaySecs"].as_f64().unwrap();
    assert!((0.8..=1.2).contains(&delay), "{delay}");
    assert!(
        elapsed >= Duration::from_secs_f64(delay),
        "{elapsed:?} < {delay}"
    );
}

#[test]
fn a_429_on_every_try_fails_after_three_retries_with_the_providers_message() {
    let fake = Fake::start();
    for _ in 0..4 {
        fake.push(Scripted::throttled(429, "You exceeded your quota", "0"));
    }
    fake.push(Scripted::text("never reached"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    let content = resp["result"]["content"].as_str().unwrap();
    assert!(
        content.contains("429") && content.contains("You exceeded your quota"),
        "{content}"
    );
    let attempts: Vec<Value> = retries(&msgs)
        .iter()
        .map(|u| u["attempt"].clone())
        .collect();
    assert_eq!(attempts, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(fake.server.pending(), 1, "a fifth try was made");
}

#[test]
fn a_retry_after_over_sixty_seconds_fails_the_turn_at_once() {
    let fake = Fake::start();
    fake.push(Scripted::throttled(429, "come back in two minutes", "120"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let t = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert!(
        resp["result"]["content"]
            .as_str()
            .is_some_and(|s| s.contains("come back in two minutes")),
        "{resp}"
    );
    assert!(retries(&msgs).is_empty(), "{msgs:?}");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn cancel_during_a_back_off_wait_ends_the_turn_at_once() {
    let fake = Fake::start();
    fake.push(Scripted::throttled(503, "busy", "30"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "hello"}),
    );
    let mut seen = Vec::new();
    while retries(&seen).is_empty() {
        let m = c.recv();
        assert_ne!(m.get("id"), Some(&id), "answered before a retry: {m}");
        seen.push(m);
    }
    assert_eq!(retries(&seen)[0]["delaySecs"], 30.0);
    let sent = Instant::now();
    c.send_call("session/cancel", json!({"sessionId": sid}));
    let (_, resp) = c.collect_until(&id);
    let elapsed = sent.elapsed();
    assert!(elapsed < Duration::from_secs(1), "cancel took {elapsed:?}");
    assert_eq!(resp["result"]["outcome"], "cancelled", "{resp}");
    assert_eq!(fake.requests().len(), 1, "retried after the cancel");
    // The session serves the next prompt.
    fake.push(Scripted::text("after"));
    let (_, resp) = c.prompt(&sid, "next");
    assert_eq!(resp["result"]["content"], "after");
}

#[test]
fn a_connection_closed_before_the_first_byte_is_retried() {
    let fake = Fake::start();
    fake.push(Scripted::Hangup);
    fake.push(Scripted::text("second try"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["content"], "second try", "{resp}");
    let r = retries(&msgs);
    assert_eq!(r.len(), 1, "{msgs:?}");
    assert!(
        r[0]["reason"]
            .as_str()
            .is_some_and(|s| s.starts_with("connection failed")),
        "{r:?}"
    );
}

#[test]
fn nothing_is_retried_after_the_first_streamed_byte() {
    let fake = Fake::start();
    fake.push(Scripted::broken(["half ", "an answer "]));
    fake.push(Scripted::text("must not be asked"));
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    assert_eq!(streamed_text(&msgs), "half an answer ");
    assert!(retries(&msgs).is_empty(), "{msgs:?}");
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.server.pending(), 1);
}

/// A server that answers every request with `head` (status line and headers, no length)
/// and `body`; the requests it received are counted.
fn answering(head: String, body: &'static str) -> (String, Arc<AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let served = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&served);
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let _ = socket.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = socket.read(&mut [0u8; 65536]);
            let _ = write!(
                socket,
                "{head}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, served)
}

/// A chat UI's page, as a web application answers at any path.
fn web_app() -> (String, Arc<AtomicUsize>) {
    answering(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html".into(),
        "<html><head><title>My Chat</title></head><body></body></html>",
    )
}

/// A daemon whose default agent uses a provider of `kind` at `url`, and a session of it.
fn start_kind(kind: &str, url: &str) -> (TestDaemon, Conn, String) {
    let config = format!(
        "[providers.p]\nkind = \"{kind}\"\nbase_url = \"{url}\"\napi_key = \"k\"\n\
         model = \"m\"\n\n[agents.default]\nprovider = \"p\"\ntools = []\n"
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    (daemon, c, sid)
}

/// `base_url` naming a web application instead of its API: every provider kind fails the
/// turn at once, not retried, saying what answered.
#[test]
fn a_web_page_in_place_of_a_stream_fails_the_turn_at_once_naming_it() {
    for kind in ["openai", "anthropic", "gemini", "ollama"] {
        let (url, served) = web_app();
        let (_daemon, mut c, sid) = start_kind(kind, &url);
        let (msgs, resp) = c.prompt(&sid, "hello");
        assert_eq!(resp["result"]["outcome"], "failed", "{kind}: {resp}");
        let content = resp["result"]["content"].as_str().unwrap_or_default();
        assert!(
            content.contains(&format!("{url} answered with a web page (\"My Chat\")"))
                && content.contains("is base_url the address of its API?"),
            "{kind}: {content}"
        );
        assert!(retries(&msgs).is_empty(), "{kind}: not retried: {msgs:?}");
        assert_eq!(served.load(Ordering::SeqCst), 1, "{kind}");
    }
}

/// A `base_url` that redirects (as a proxy sends `http://` on to `https://` with a 308):
/// every kind fails the turn at once naming where it points, and nothing (nor the key)
/// is sent there.
#[test]
fn a_redirect_is_not_followed_and_the_turn_says_where_it_points() {
    for kind in ["openai", "anthropic", "gemini", "ollama"] {
        let (there, reached) = web_app();
        let head = format!("HTTP/1.1 308 Permanent Redirect\r\nlocation: {there}/elsewhere");
        let (url, served) = answering(head, "");
        let (_daemon, mut c, sid) = start_kind(kind, &url);
        let (msgs, resp) = c.prompt(&sid, "hello");
        assert_eq!(resp["result"]["outcome"], "failed", "{kind}: {resp}");
        let content = resp["result"]["content"].as_str().unwrap_or_default();
        assert!(
            content.contains(&format!(
                "{url} answered with a redirect (308) to {there}/elsewhere: set base_url"
            )),
            "{kind}: {content}"
        );
        assert!(retries(&msgs).is_empty(), "{kind}: not retried: {msgs:?}");
        assert_eq!(served.load(Ordering::SeqCst), 1, "{kind}");
        assert_eq!(reached.load(Ordering::SeqCst), 0, "{kind}: nothing sent on");
    }
}

/// SPEC §17.1, secrets are masked wherever they are read: a provider's `user:password@`
/// and key never reach a session's watchers, neither in `provider_retry` reasons nor in
/// the failed turn (nor its transcript), when the server quotes the key in its error (an
/// HTTP error, or an error event in the stream) or does not answer at all.
#[test]
fn a_failing_provider_never_shows_its_credentials_or_key() {
    let key = "sk-TOPSECRET";
    let quoting = answering(
        "HTTP/1.1 503 Service Unavailable\r\nretry-after: 0\r\ncontent-type: application/json"
            .into(),
        r#"{"error":{"message":"overloaded; key sk-TOPSECRET is fine"}}"#,
    )
    .0;
    // Bound but never accepting: the request waits for an answer until the timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!("http://{}", silent.local_addr().expect("addr"));
    for (server, expected) in [
        (quoting, "overloaded; key *** is fine".to_string()),
        (
            silent_url.clone(),
            format!("no response from {silent_url} within 1 s"),
        ),
    ] {
        let with_credentials = server.replace("http://", "http://alice:s3cret@");
        let config = format!(
            "[providers.p]\nkind = \"openai\"\nbase_url = \"{with_credentials}\"\n\
             api_key = \"{key}\"\nmodel = \"m\"\ntimeout_secs = 1\n\n\
             [agents.default]\nprovider = \"p\"\ntools = []\n"
        );
        let daemon = TestDaemon::start_with(&[], |dir| {
            std::fs::write(dir.join("config.toml"), config).expect("config");
        });
        let mut c = daemon.client();
        let sid = new_session(&mut c);
        let (msgs, resp) = c.prompt(&sid, "hello");
        assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
        let content = resp["result"]["content"].as_str().unwrap_or_default();
        assert!(content.contains(&expected), "{content}");
        let seen = format!("{msgs:?} {resp} {:?}", c.messages(&sid));
        assert!(!seen.contains("s3cret"), "credentials shown: {seen}");
        assert!(!seen.contains(key), "key shown: {seen}");
    }
    drop(silent);

    // An error event inside the stream, quoting the key.
    let fake = Fake::start();
    fake.push(Scripted::raw([
        r#"{"error":{"message":"key sk-TOPSECRET was revoked"}}"#,
    ]));
    let config = session_config(&fake.server.base_url(), "").replace(
        "model = \"m\"",
        &format!("model = \"m\"\napi_key = \"{key}\""),
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c);
    let (msgs, resp) = c.prompt(&sid, "hello");
    assert_eq!(
        resp["result"]["content"],
        "provider error: key *** was revoked"
    );
    let seen = format!("{msgs:?} {resp} {:?}", c.messages(&sid));
    assert!(!seen.contains(key), "key shown: {seen}");
    let sent = fake.server.recorded();
    assert_eq!(
        sent.last().and_then(|r| r.header("authorization")),
        Some(format!("Bearer {key}").as_str()),
        "the key itself was sent"
    );
}

/// A gateway that answers a streamed request with a JSON error and status 200: every kind
/// fails the turn with the gateway's message (not "stream ended unexpectedly").
#[test]
fn a_json_error_answered_with_200_fails_the_turn_with_its_message() {
    for kind in ["openai", "anthropic", "gemini", "ollama"] {
        let (url, _) = answering(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json".into(),
            r#"{"error":{"message":"quota exceeded for this month","type":"quota"}}"#,
        );
        let (_daemon, mut c, sid) = start_kind(kind, &url);
        let (_, resp) = c.prompt(&sid, "hello");
        assert_eq!(resp["result"]["outcome"], "failed", "{kind}: {resp}");
        assert_eq!(
            resp["result"]["content"], "provider error: quota exceeded for this month",
            "{kind}"
        );
    }
}
