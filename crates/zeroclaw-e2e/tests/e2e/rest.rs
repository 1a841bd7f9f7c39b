//! The REST API (SPEC §23.2) against the real binary over TCP: every route's real
//! responses checked against the OpenAPI document the daemon serves, the HTTP statuses of
//! the error codes, a local-only method refused, and the event stream as Server-Sent
//! Events — resumed with `Last-Event-ID` after cuts at random points of a turn without a
//! gap or a duplicate, read by `curl -N`, its subscription gone with its client, a
//! keepalive comment on a quiet stream, and a reader that stops reading cut off without
//! the daemon holding what it streamed. `gateway.cors_origins` allows only what it lists.
//! One measurement (ignored by default) gives the SSE figure of docs/BENCHMARKS.md.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::ws::{WSS_SECTION, listening_port, pair};
use common::{Fake, TestDaemon, session_config};
use serde_json::{Value, json};
use zeroclaw_protocol::validate::validate;
use zeroclaw_testkit::Scripted;

const USERS: &str = r#"
[permission_profiles.remote]
grants = { sessions = ["create", "read", "update", "execute"], system = ["read"] }
allowed_agents = ["default"]
[users.alice]
permission_profiles = ["remote"]
"#;

/// A daemon on `fake` with the gateway on, and a pairing token of user alice.
fn start(fake: &Fake) -> (TestDaemon, u16, String) {
    start_with(fake, "")
}

/// [`start`] with `extra` configuration after the rest.
fn start_with(fake: &Fake, extra: &str) -> (TestDaemon, u16, String) {
    let config = format!(
        "{}{USERS}{WSS_SECTION}{extra}",
        session_config(&fake.server.base_url(), "")
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let port = listening_port(&daemon);
    let token = pair(daemon.config_dir(), "alice");
    (daemon, port, token)
}

// ---- raw HTTP ------------------------------------------------------------------------

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

fn read_head(r: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut status_line = String::new();
    r.read_line(&mut status_line).expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("a header");
        let line = line.trim_end();
        if line.is_empty() {
            return (status, headers);
        }
        let (n, v) = line.split_once(':').expect("name: value");
        headers.push((n.trim().to_owned(), v.trim().to_owned()));
    }
}

fn request(port: u16, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Reply {
    request_headers(port, method, path, token, body, "")
}

/// [`request`] with `extra` header lines (each ending in CRLF).
fn request_headers(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
    extra: &str,
) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let body = body.unwrap_or("");
    let length = match method {
        "POST" => format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ),
        _ => String::new(),
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}{length}{extra}Connection: close\r\n\r\n{body}"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let (status, headers) = read_head(&mut r);
    let len = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

fn get(port: u16, path: &str, token: &str) -> Reply {
    request(port, "GET", path, Some(token), None)
}

fn post(port: u16, path: &str, token: &str, body: Value) -> Reply {
    request(port, "POST", path, Some(token), Some(&body.to_string()))
}

/// Checks a reply against the document: the status must be listed for the route, and a
/// JSON body must match its schema.
fn check(doc: &Value, http: &str, route: &str, r: &Reply) -> Value {
    let status = r.status.to_string();
    let op = &doc["paths"][route][http.to_ascii_lowercase()];
    assert!(op.is_object(), "{http} {route} is not in the document");
    let response = &op["responses"][&status];
    assert!(
        response.is_object(),
        "{http} {route}: status {status} is not documented: {}",
        String::from_utf8_lossy(&r.body)
    );
    let schema = &response["content"]["application/json"]["schema"];
    let body = r.json();
    validate(doc, schema, &body).unwrap_or_else(|e| panic!("{http} {route} {status}: {e}\n{body}"));
    body
}

fn error_code(body: &Value) -> i64 {
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code: {body}"))
}

// ---- the event stream ------------------------------------------------------------------

/// One event of the stream (comments are counted apart).
#[derive(Debug, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: Value,
}

struct Events {
    reader: BufReader<TcpStream>,
    comments: usize,
}

impl Events {
    /// Opens the stream of `sid`, resuming after `last` when given; `Err` is the refusal.
    fn open(port: u16, token: &str, sid: &str, last: Option<&str>) -> Result<Events, Reply> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let resume = last.map_or(String::new(), |l| format!("Last-Event-ID: {l}\r\n"));
        write!(
            s,
            "GET /api/v1/sessions/{sid}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n{resume}\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(s);
        let (status, headers) = read_head(&mut reader);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        if status != 200 {
            let len = header("content-length").map_or(0, |v| v.parse().unwrap());
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            return Err(Reply {
                status,
                headers,
                body,
            });
        }
        assert_eq!(header("content-type").as_deref(), Some("text/event-stream"));
        Ok(Events {
            reader,
            comments: 0,
        })
    }

    /// The next event (`None` when the stream ended).
    fn next(&mut self) -> Option<Event> {
        let (mut id, mut event, mut data) = (None, None, None);
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if let Some(data) = data.take() {
                    return Some(Event { id, event, data });
                }
                continue;
            }
            if line.starts_with(':') {
                self.comments += 1;
            } else if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str(v).expect("data is JSON"));
            }
        }
    }

    /// Events until (and including) the next one of `kind`.
    fn until(&mut self, kind: &str) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next() {
            let done = e.event.as_deref() == Some(kind);
            out.push(e);
            if done {
                return out;
            }
        }
        panic!("the stream ended before {kind}: {out:?}");
    }
}

fn new_session(port: u16, token: &str) -> String {
    let r = post(
        port,
        "/api/v1/sessions",
        token,
        json!({"agentAlias": "default"}),
    );
    assert_eq!(r.status, 200, "{:?}", r.json());
    r.json()["sessionId"]
        .as_str()
        .expect("a session")
        .to_owned()
}

fn subscribers(port: u16, token: &str, sid: &str) -> u64 {
    let list = get(port, "/api/v1/sessions", token).json();
    list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["sessionId"] == sid)
        .and_then(|s| s["subscribers"].as_u64())
        .unwrap_or(0)
}

fn slow_text(chunks: usize, each: Duration) -> Scripted {
    Scripted::Text {
        chunks: (0..chunks).map(|i| format!("c{i} ")).collect(),
        delay: each,
    }
}

// ---- tests --------------------------------------------------------------------------------

#[test]
fn every_route_answers_as_the_served_document_says() {
    let fake = Fake::start();
    let (daemon, port, token) = start(&fake);
    let doc = request(port, "GET", "/api/v1/openapi.json", None, None).json();
    assert_eq!(doc["openapi"], "3.1.0");
    // Generated from the method table: every method that is not local-only, and no other.
    assert!(doc["paths"]["/api/v1/session/list"]["post"].is_object());
    assert!(doc["paths"]["/api/v1/gateway/start"].is_null());
    assert!(doc["paths"]["/api/v1/file/upload/begin"].is_null());

    let r = post(
        port,
        "/api/v1/sessions",
        &token,
        json!({"agentAlias": "default"}),
    );
    let sid = check(&doc, "POST", "/api/v1/sessions", &r)["sessionId"]
        .as_str()
        .expect("a session")
        .to_owned();

    fake.push(Scripted::text("first answer"));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt"),
        &token,
        json!({"prompt": "one"}),
    );
    let first = check(&doc, "POST", "/api/v1/sessions/{id}/prompt", &r);
    assert_eq!(first["content"], "first answer", "{first}");

    let r = get(port, "/api/v1/sessions", &token);
    let list = check(&doc, "GET", "/api/v1/sessions", &r);
    assert!(
        list["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .any(|s| s["sessionId"] == sid)
    );
    // Query parameters are the params.
    let r = get(
        port,
        "/api/v1/sessions?limit=1&search=nothing%20like%20this",
        &token,
    );
    let none = check(&doc, "GET", "/api/v1/sessions", &r);
    assert_eq!(none["sessions"], json!([]), "{none}");

    for route in ["", "/messages", "/diff"] {
        let r = get(port, &format!("/api/v1/sessions/{sid}{route}"), &token);
        assert_eq!(r.status, 200, "{route}: {:?}", r.json());
        check(&doc, "GET", &format!("/api/v1/sessions/{{id}}{route}"), &r);
    }
    let r = get(port, &format!("/api/v1/sessions/{sid}/messages"), &token);
    assert!(
        r.json()["messages"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|m| m["content"] == "first answer")
    );

    // Any method that is not local-only, by its name; an absent body is `{}`.
    let r = request(port, "POST", "/api/v1/status", Some(&token), None);
    let status = check(&doc, "POST", "/api/v1/status", &r);
    assert!(status["serverVersion"].is_string(), "{status}");
    let r = post(port, "/api/v1/session/list", &token, json!({"limit": 5}));
    check(&doc, "POST", "/api/v1/session/list", &r);

    // ?wait=false: 202 with the turn at once; the turn runs on and is stored.
    fake.push(slow_text(20, Duration::from_millis(25)));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt?wait=false"),
        &token,
        json!({"prompt": "two"}),
    );
    let started = check(&doc, "POST", "/api/v1/sessions/{id}/prompt", &r);
    assert_eq!(r.status, 202);
    let turn = started["turnId"].as_str().expect("a turn").to_owned();
    assert_ne!(turn, first["turnId"].as_str().unwrap_or_default());
    let mut stream = Events::open(port, &token, &sid, None).expect("a stream");
    let events = stream.until("turn_complete");
    assert!(
        events.iter().all(|e| e.data["turnId"] == turn),
        "{events:?}"
    );
    drop(stream);

    // Cancel, and an approval answered through its route.
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "echo hi"}),
    ));
    fake.push(Scripted::text("done"));
    let mut stream = Events::open(port, &token, &sid, None).expect("a stream");
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt?wait=false"),
        &token,
        json!({"prompt": "run it"}),
    );
    assert_eq!(r.status, 202, "{:?}", r.json());
    let asked = stream.until("approval_request");
    let request_id = asked.last().expect("asked").data["requestId"]
        .as_str()
        .expect("an id")
        .to_owned();
    let route = format!("/api/v1/sessions/{sid}/approvals/{request_id}");
    let r = post(port, &route, &token, json!({"decision": "allow_once"}));
    check(
        &doc,
        "POST",
        "/api/v1/sessions/{id}/approvals/{requestId}",
        &r,
    );
    stream.until("turn_complete");
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/cancel"),
        &token,
        json!({}),
    );
    check(&doc, "POST", "/api/v1/sessions/{id}/cancel", &r);

    // The stream's events are session/update params as the document describes them.
    let update = doc["paths"]["/api/v1/sessions/{id}/events"]["get"]["responses"]["200"]["content"]
        ["text/event-stream"]["x-event-data"]
        .clone();
    for e in &events {
        validate(&doc, &update, &e.data).unwrap_or_else(|err| panic!("{err}: {:?}", e.data));
    }
    drop(daemon);
}

#[test]
fn error_codes_become_http_statuses() {
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let doc = request(port, "GET", "/api/v1/openapi.json", None, None).json();
    let sid = new_session(port, &token);

    // 401: no bearer, a bad one.
    let r = request(port, "GET", "/api/v1/sessions", None, None);
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let r = request(port, "GET", "/api/v1/sessions", Some("zct_wrong"), None);
    assert_eq!(r.status, 401);

    // 400: params the method refuses (-32602, naming the field), a body that is not an
    // object, a body that is not JSON.
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt"),
        &token,
        json!({}),
    );
    let body = check(&doc, "POST", "/api/v1/sessions/{id}/prompt", &r);
    assert_eq!((r.status, error_code(&body)), (400, -32602), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("prompt"),
        "{body}"
    );
    let r = post(port, "/api/v1/status", &token, json!([1]));
    assert_eq!(
        (
            r.status,
            error_code(&check(&doc, "POST", "/api/v1/status", &r))
        ),
        (400, -32602)
    );
    let r = request(
        port,
        "POST",
        "/api/v1/status",
        Some(&token),
        Some("{not json"),
    );
    assert_eq!(
        (
            r.status,
            error_code(&check(&doc, "POST", "/api/v1/status", &r))
        ),
        (400, -32700)
    );

    // 403: a grant alice lacks, and a local-only method (never over HTTP).
    let r = post(port, "/api/v1/config/get", &token, json!({}));
    assert_eq!(
        (
            r.status,
            error_code(&check(&doc, "POST", "/api/v1/config/get", &r))
        ),
        (403, -32012)
    );
    let r = post(port, "/api/v1/gateway/start", &token, json!({}));
    assert_eq!(
        (r.status, error_code(&r.json())),
        (403, -32012),
        "{:?}",
        r.json()
    );

    // 404: no such session; no such route.
    let r = get(port, "/api/v1/sessions/nope", &token);
    assert_eq!(
        (
            r.status,
            error_code(&check(&doc, "GET", "/api/v1/sessions/{id}", &r))
        ),
        (404, -32000)
    );
    let r = post(port, "/api/v1/no/such", &token, json!({}));
    assert_eq!(r.status, 404);

    // 409: a rewind while a turn runs (-32002).
    fake.push(Scripted::text("one"));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt"),
        &token,
        json!({"prompt": "a"}),
    );
    let turn = r.json()["turnId"].as_str().expect("a turn").to_owned();
    fake.push(slow_text(40, Duration::from_millis(50)));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt?wait=false"),
        &token,
        json!({"prompt": "b"}),
    );
    assert_eq!(r.status, 202);
    let r = post(
        port,
        "/api/v1/session/rewind",
        &token,
        json!({"sessionId": sid, "turnId": turn}),
    );
    assert_eq!(
        (
            r.status,
            error_code(&check(&doc, "POST", "/api/v1/session/rewind", &r))
        ),
        (409, -32002)
    );

    // 429: the 17th subscriber of a session (-32013); the first 16 hold their streams.
    let streams: Vec<Events> = (0..16)
        .map(|i| {
            Events::open(port, &token, &sid, None)
                .unwrap_or_else(|r| panic!("stream {i}: {:?}", r.json()))
        })
        .collect();
    let refused = Events::open(port, &token, &sid, None)
        .err()
        .expect("refused");
    assert_eq!(refused.status, 429);
    let body = check(&doc, "GET", "/api/v1/sessions/{id}/events", &refused);
    assert_eq!(error_code(&body), -32013, "{body}");
    drop(streams);
}

/// Reads the turn through the event stream, cutting the connection after a random number
/// of events each time and resuming from the last `id:` seen.
#[test]
fn the_stream_resumes_after_cuts_without_gap_or_duplicate() {
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let sid = new_session(port, &token);
    let chunks = 120;
    fake.push(slow_text(chunks, Duration::from_millis(15)));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt?wait=false"),
        &token,
        json!({"prompt": "go"}),
    );
    assert_eq!(r.status, 202, "{:?}", r.json());
    let turn = r.json()["turnId"].as_str().expect("a turn").to_owned();

    // A seed from the clock, printed so a failure can be replayed.
    let mut seed = (Instant::now().elapsed().as_nanos() as u64) ^ u64::from(std::process::id());
    eprintln!("cut seed {seed}");
    let mut next_cut = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        1 + (seed % 25) as usize
    };
    let mut seen: Vec<(String, u64)> = Vec::new();
    let mut last: Option<String> = None;
    let mut cuts = 0;
    let mut replayed = 0;
    'outer: loop {
        let mut stream = Events::open(port, &token, &sid, last.as_deref()).expect("a stream");
        let cut_after = next_cut();
        for _ in 0..cut_after {
            let Some(e) = stream.next() else {
                panic!("the stream ended")
            };
            if e.data["replay"] == true {
                replayed += 1;
            }
            let id = e.id.clone().expect("every event of a turn has an id");
            let (t, s) = id.rsplit_once(':').expect("TURN:SEQ");
            assert_eq!(e.data["turnId"], t);
            assert_eq!(e.data["eventSeq"].as_u64(), s.parse().ok());
            seen.push((t.to_owned(), s.parse().expect("a number")));
            last = Some(id);
            if e.event.as_deref() == Some("turn_complete") {
                break 'outer;
            }
        }
        // Cut: the connection is dropped mid-stream.
        drop(stream);
        cuts += 1;
    }
    assert!(
        cuts >= 3,
        "only {cuts} cuts: the turn was too short for the test"
    );
    assert!(replayed > 0, "no resume replayed anything");
    let seqs: Vec<u64> = seen.iter().map(|(_, s)| *s).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "a gap or a duplicate after {cuts} cuts");
    assert!(seen.iter().all(|(t, _)| *t == turn));
    assert!(seqs.len() > chunks, "every chunk and the turn's own events");

    // A cursor that is not one is refused, naming the header.
    let bad = Events::open(port, &token, &sid, Some("nonsense"))
        .err()
        .expect("refused");
    assert_eq!(bad.status, 400);
    assert!(String::from_utf8_lossy(&bad.body).contains("Last-Event-ID"));
}

#[test]
fn curl_reads_the_stream_and_the_subscription_goes_with_its_client() {
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let sid = new_session(port, &token);
    let url = format!("http://127.0.0.1:{port}/api/v1/sessions/{sid}/events");
    let mut curl = std::process::Command::new("curl")
        .args(["-sS", "-N", "--max-time", "60", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("curl");
    // curl is subscribed once the session counts it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while subscribers(port, &token, &sid) != 1 {
        assert!(Instant::now() < deadline, "curl never subscribed");
        std::thread::sleep(Duration::from_millis(20));
    }
    fake.push(Scripted::text("over curl"));
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt"),
        &token,
        json!({"prompt": "hi"}),
    );
    assert_eq!(r.status, 200);
    let mut out = BufReader::new(curl.stdout.take().expect("stdout"));
    let mut text = String::new();
    while !text.contains("event: turn_complete") {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).expect("curl output") > 0,
            "curl stopped: {text}"
        );
        text.push_str(&line);
    }
    assert!(text.contains("event: user_message\n"), "{text}");
    assert!(text.contains("event: agent_message_chunk\n"), "{text}");
    assert!(text.contains("\"text\":\"curl\""), "{text}");

    // The client goes: its subscription goes with it (curl was the only subscriber; the
    // prompt's own came from a connection that closed).
    curl.kill().expect("kill curl");
    let _ = curl.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while subscribers(port, &token, &sid) != 0 {
        assert!(
            Instant::now() < deadline,
            "the subscription outlived its client"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cross_origin_access_only_for_a_listed_origin() {
    let fake = Fake::start();
    let extra = "[gateway]\ncors_origins = [\"https://app.example\"]\n";
    let (_daemon, port, token) = start_with(&fake, extra);
    let listed = "Origin: https://app.example\r\n";
    let other = "Origin: https://evil.example\r\n";
    let r = request_headers(port, "GET", "/api/v1/sessions", Some(&token), None, listed);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let r = request_headers(port, "GET", "/api/v1/sessions", Some(&token), None, other);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("access-control-allow-origin"),
        None,
        "{:?}",
        r.headers
    );
    // The preflight carries no bearer: answered before authentication.
    let ask = format!("{listed}Access-Control-Request-Method: POST\r\n");
    let r = request_headers(port, "OPTIONS", "/api/v1/session/list", None, None, &ask);
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert!(
        r.header("access-control-allow-headers")
            .unwrap_or_default()
            .contains("Authorization")
    );
    let r = request_headers(port, "OPTIONS", "/api/v1/session/list", None, None, other);
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("access-control-allow-methods"), None);

    // Without the setting, no origin is allowed.
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let r = request_headers(port, "GET", "/api/v1/sessions", Some(&token), None, listed);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

/// A stream with nothing to say still hears from the daemon every 15 s.
#[test]
fn a_quiet_stream_gets_a_keepalive_comment() {
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let sid = new_session(port, &token);
    let mut stream = Events::open(port, &token, &sid, None).expect("a stream");
    let started = Instant::now();
    let mut line = String::new();
    stream
        .reader
        .read_line(&mut line)
        .expect("a line within the read timeout");
    assert_eq!(line, ": keepalive\n");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(14) && waited < Duration::from_secs(20),
        "{waited:?}"
    );
}

/// Events of one turn, first to last, seen by a WebSocket subscriber: (events, seconds).
async fn ws_turn(
    port: u16,
    token: &str,
    sid: &str,
    ready: std::sync::mpsc::Sender<()>,
) -> (usize, f64) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let mut ws = common::ws::connect(port).await;
    for (id, method, params) in [
        (
            1,
            "initialize",
            json!({"protocolVersion": 1, "authToken": token}),
        ),
        (2, "session/subscribe", json!({"sessionId": sid})),
    ] {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        ws.send(Message::Text(line.to_string().into()))
            .await
            .expect("send");
        loop {
            let Some(Ok(Message::Text(text))) = ws.next().await else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).expect("json");
            if v["id"] == id {
                assert!(v.get("result").is_some(), "{v}");
                break;
            }
        }
    }
    ready.send(()).expect("ready");
    let (mut n, mut first) = (0, None);
    loop {
        let Some(Ok(Message::Text(text))) = ws.next().await else {
            continue;
        };
        let v: Value = serde_json::from_str(&text).expect("json");
        if v["method"] != "session/update" {
            continue;
        }
        n += 1;
        let first = *first.get_or_insert_with(Instant::now);
        if v["params"]["type"] == "turn_complete" {
            return (n, first.elapsed().as_secs_f64());
        }
    }
}

/// The SSE delivery rate against a WebSocket subscriber on the same turn, for
/// docs/BENCHMARKS.md: `cargo test -p zeroclaw-e2e --test e2e -- rest::sse_delivery_rate
/// --ignored --nocapture` (the build profile of the binary is what is measured).
#[test]
#[ignore = "a measurement for docs/BENCHMARKS.md"]
fn sse_delivery_rate_against_a_websocket_subscriber() {
    let fake = Fake::start();
    let (_daemon, port, token) = start(&fake);
    let chunks = 20_000;
    let mut ratios = Vec::new();
    for round in 0..5 {
        let sid = new_session(port, &token);
        let (ready, wait) = std::sync::mpsc::channel();
        let ws = {
            let (token, sid) = (token.clone(), sid.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("rt");
                rt.block_on(ws_turn(port, &token, &sid, ready))
            })
        };
        wait.recv_timeout(Duration::from_secs(10))
            .expect("the WebSocket subscribed");
        let mut stream = Events::open(port, &token, &sid, None).expect("a stream");
        fake.push(Scripted::Text {
            chunks: (0..chunks).map(|i| format!("w{i} ")).collect(),
            delay: Duration::ZERO,
        });
        let r = post(
            port,
            &format!("/api/v1/sessions/{sid}/prompt?wait=false"),
            &token,
            json!({"prompt": "go"}),
        );
        assert_eq!(r.status, 202);
        let (mut n, mut first) = (0, None);
        let sse = loop {
            let e = stream.next().expect("an event");
            n += 1;
            let first = *first.get_or_insert_with(Instant::now);
            if e.event.as_deref() == Some("turn_complete") {
                break (n, first.elapsed().as_secs_f64());
            }
        };
        let ws = ws.join().expect("the WebSocket reader");
        assert_eq!(sse.0, ws.0, "both saw every event");
        let (sse_rate, ws_rate) = (sse.0 as f64 / sse.1, ws.0 as f64 / ws.1);
        let ratio = sse_rate / ws_rate;
        println!(
            "round {round}: {} events; SSE {sse_rate:.0}/s over {:.3} s, WebSocket {ws_rate:.0}/s over {:.3} s, ratio {ratio:.3}",
            sse.0, sse.1, ws.1
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio {:.3} (min {:.3}, max {:.3})",
        ratios[2], ratios[0], ratios[4]
    );
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

/// A stream reader that stops reading neither slows the turn nor makes the daemon hold
/// what it does not read: its connection is closed by the outbound queue's slow-peer rule
/// (the one a WebSocket subscriber is under) and the daemon's memory stays far below what
/// the turn streamed.
#[test]
fn a_reader_that_stops_reading_is_cut_off_and_pins_little() {
    let fake = Fake::start();
    let (daemon, port, token) = start(&fake);
    let sid = new_session(port, &token);
    let mut stalled = Events::open(port, &token, &sid, None).expect("a stream");
    assert_eq!(subscribers(port, &token, &sid), 1);
    let (_, before) = rss_kib(&daemon);
    let chunk = "x".repeat(8 * 1024);
    let chunks = 16_000; // 128 MiB of text, each chunk one event
    fake.push(Scripted::Text {
        chunks: vec![chunk; chunks],
        delay: Duration::ZERO,
    });
    let started = Instant::now();
    let r = post(
        port,
        &format!("/api/v1/sessions/{sid}/prompt"),
        &token,
        json!({"prompt": "flood"}),
    );
    assert_eq!(r.status, 200, "the turn ends while the reader stalls");
    let turn_took = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(90);
    while subscribers(port, &token, &sid) != 0 {
        assert!(
            Instant::now() < deadline,
            "the stalled reader was never cut off"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (peak, _) = rss_kib(&daemon);
    let grew_mib = peak.saturating_sub(before) / 1024;
    println!("turn {turn_took:?}; daemon peak RSS grew {grew_mib} MiB while 128 MiB streamed");
    assert!(
        grew_mib < 96,
        "the daemon held {grew_mib} MiB for a reader that did not read"
    );
    // The stream ends: what was in flight (its last event cut short) is read, then
    // end-of-file.
    let end = Instant::now() + Duration::from_secs(30);
    let mut scratch = vec![0u8; 64 * 1024];
    while stalled.reader.read(&mut scratch).expect("read") > 0 {
        assert!(Instant::now() < end, "the stream did not end");
    }
}
