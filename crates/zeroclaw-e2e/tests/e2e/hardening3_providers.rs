//! Third hardening pass, providers and turn order (SPEC §17.2), over the real binary:
//! one bound on what a provider response holds (a 300 MiB Anthropic stream of thinking
//! and signatures, a 300 MiB OpenAI stream of reasoning and tool-call arguments: the turn
//! fails at 32 MiB and the daemon's memory barely grows), `retry-after` as an HTTP date
//! (waited for like seconds; more than 60 s ahead fails the turn at once), and a prompt's
//! answer written between its `turn_complete` and the next queued turn's `user_message`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Conn, Fake, TestDaemon, session_config, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

const MIB: u64 = 1024 * 1024;
/// The bound of SPEC §17.2, as the error names it.
const BOUND: &str = "holds more than 33554432 bytes";

// ----- a server that streams what a test makes ----------------------------------------

/// The events of one response, made as they are written (300 MiB are never in memory).
type Events = Box<dyn Iterator<Item = String> + Send>;

/// A one-connection-at-a-time HTTP server on loopback answering every request `200`
/// `text/event-stream` with the events `make` yields, until they end or the client goes
/// away. It counts requests and the body bytes it managed to write.
struct Streamer {
    addr: std::net::SocketAddr,
    requests: Arc<AtomicUsize>,
    written: Arc<AtomicU64>,
}

impl Streamer {
    fn start(make: impl Fn() -> Events + Send + 'static) -> Streamer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(AtomicUsize::new(0));
        let written = Arc::new(AtomicU64::new(0));
        let (r, w) = (Arc::clone(&requests), Arc::clone(&written));
        // Ends with the test process; each test has its own.
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let _ = conn.set_write_timeout(Some(Duration::from_secs(30)));
                if read_request(&conn).is_none() {
                    continue;
                }
                r.fetch_add(1, Ordering::SeqCst);
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            cache-control: no-cache\r\nconnection: close\r\n\r\n";
                if conn.write_all(head.as_bytes()).is_err() {
                    continue;
                }
                for event in make() {
                    if conn.write_all(event.as_bytes()).is_err() {
                        break;
                    }
                    w.fetch_add(event.len() as u64, Ordering::SeqCst);
                }
                let _ = conn.shutdown(std::net::Shutdown::Both);
            }
        });
        Streamer {
            addr,
            requests,
            written,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Reads one request's head and body (by `content-length`); `None` if the peer went away.
fn read_request(conn: &std::net::TcpStream) -> Option<()> {
    let mut reader = BufReader::new(conn);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(())
}

fn sse(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// An Anthropic message of `total` bytes: thinking blocks, each a 64 KiB thinking delta and
/// four 256 KiB signature deltas, then the message's end.
fn anthropic_thinking(total: u64) -> Events {
    let thinking = "t".repeat(64 * 1024);
    let signature = "s".repeat(256 * 1024);
    let mut sent = 0u64;
    let mut block = 0u64;
    let mut done = false;
    let start = std::iter::once(sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 5}}}),
    ));
    let blocks = std::iter::from_fn(move || {
        if done {
            return None;
        }
        if sent >= total {
            done = true;
            return Some(
                sse(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 1}}),
                ) + &sse("message_stop", json!({"type": "message_stop"})),
            );
        }
        let mut s = sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": block,
                   "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        );
        s += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": block,
                   "delta": {"type": "thinking_delta", "thinking": thinking}}),
        );
        for _ in 0..4 {
            s += &sse(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": block,
                       "delta": {"type": "signature_delta", "signature": signature}}),
            );
        }
        s += &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        );
        block += 1;
        sent += s.len() as u64;
        Some(s)
    });
    Box::new(start.chain(blocks))
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

/// An OpenAI chat completion of `total` bytes: 16 MiB of reasoning, then one tool call
/// whose arguments come in 256 KiB deltas, then its end.
fn openai_arguments(total: u64) -> Events {
    let piece = "a".repeat(256 * 1024);
    let mut sent = 0u64;
    let mut step = 0u64;
    let mut done = false;
    Box::new(std::iter::from_fn(move || {
        if done {
            return None;
        }
        let chunk = |delta: Value| data(json!({"choices": [{"index": 0, "delta": delta}]}));
        let s = if sent >= total {
            done = true;
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
                + "data: [DONE]\n\n"
        } else if step < 64 {
            chunk(json!({"reasoning_content": piece}))
        } else if step == 64 {
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": ""}}]}),
            )
        } else {
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        };
        step += 1;
        sent += s.len() as u64;
        Some(s)
    }))
}

// ----- the daemon's memory --------------------------------------------------------------

/// A `/proc/PID/status` field (`VmRSS:`, `VmHWM:`) in bytes.
fn status_bytes(daemon: &TestDaemon, field: &str) -> u64 {
    let pid = daemon.child.as_ref().expect("running").id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .expect("a field in KiB")
        * 1024
}

/// Runs `prompt` and returns the answer, printing and returning the daemon's peak RSS
/// growth over its RSS before the prompt, in bytes.
fn prompt_measured(daemon: &TestDaemon, c: &mut Conn, sid: &str, what: &str) -> (Value, u64) {
    let rss = status_bytes(daemon, "VmRSS:");
    let (_, resp) = c.prompt(sid, "think hard");
    let peak = status_bytes(daemon, "VmHWM:");
    let after = status_bytes(daemon, "VmRSS:");
    let growth = peak.saturating_sub(rss);
    eprintln!(
        "{what}: VmRSS {} MiB before, VmHWM {} MiB after, VmRSS {} MiB after: peak growth {} MiB",
        rss / MIB,
        peak / MIB,
        after / MIB,
        growth / MIB
    );
    (resp, growth)
}

fn new_session(c: &mut Conn, agent: &str) -> String {
    let r = c.new_session(json!({"agentAlias": agent}));
    r["sessionId"].as_str().expect("sessionId").to_string()
}

// ----- one bound on what a response holds -----------------------------------------------

#[test]
fn a_300_mib_anthropic_stream_of_thinking_and_signatures_fails_at_the_bound() {
    let streamer = Streamer::start(|| anthropic_thinking(300 * MIB));
    let config = format!(
        r#"[providers.claude]
kind = "anthropic"
base_url = "{}"
api_key = "sk-ant-test-key"
model = "claude-fake-1"
timeout_secs = 30

[agents.default]
provider = "claude"
tools = []
thinking_budget = 2048
"#,
        streamer.url()
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (resp, growth) = prompt_measured(&daemon, &mut c, &sid, "anthropic, 300 MiB");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    let content = resp["result"]["content"].as_str().unwrap_or_default();
    assert!(content.contains(BOUND), "{content}");
    let written = streamer.written.load(Ordering::SeqCst);
    eprintln!("the server wrote {} MiB", written / MIB);
    assert!(written < 100 * MIB, "the daemon read {written} bytes");
    assert_eq!(streamer.requests.load(Ordering::SeqCst), 1);
    assert!(growth < 64 * MIB, "peak growth {} MiB", growth / MIB);
    // The daemon goes on: the session answers the next prompt's call.
    let status = c.result("session/status", json!({"sessionId": sid}));
    assert!(status.get("sessionId").is_some(), "{status}");
}

#[test]
fn a_300_mib_openai_stream_of_reasoning_and_tool_call_arguments_fails_at_the_bound() {
    let streamer = Streamer::start(|| openai_arguments(300 * MIB));
    let config = session_config(&streamer.url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let (resp, growth) = prompt_measured(&daemon, &mut c, &sid, "openai, 300 MiB");
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    let content = resp["result"]["content"].as_str().unwrap_or_default();
    // 16 MiB of reasoning and 16 MiB of arguments reach the one bound (the arguments
    // alone would not).
    assert!(content.contains(BOUND), "{content}");
    let written = streamer.written.load(Ordering::SeqCst);
    eprintln!("the server wrote {} MiB", written / MIB);
    assert!(written < 100 * MIB, "the daemon read {written} bytes");
    assert!(growth < 64 * MIB, "peak growth {} MiB", growth / MIB);
}

// ----- retry-after as an HTTP date ------------------------------------------------------

/// `t` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil from days (proleptic Gregorian), as in Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// A whole second `ahead` seconds or a little more from now: the date a server would send.
fn date_ahead(ahead: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    // Rounded up to the next second, so the wait is at least `ahead` from now.
    http_date(UNIX_EPOCH + Duration::from_secs(now.as_secs() + 1 + ahead))
}

fn retries(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["type"] == "provider_retry")
        .collect()
}

#[test]
fn the_date_formatter_of_these_tests_is_right() {
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(951_868_800)),
        "Wed, 01 Mar 2000 00:00:00 GMT"
    );
}

#[test]
fn a_retry_after_date_two_seconds_ahead_is_waited_for_then_retried() {
    let fake = Fake::start();
    let date = date_ahead(2);
    fake.push(Scripted::throttled(429, "slow down", &date));
    fake.push(Scripted::text("after the date"));
    let daemon = TestDaemon::start_with(&[], |dir| {
        let config = session_config(&fake.server.base_url(), "");
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let started = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hello");
    let elapsed = started.elapsed();
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "after the date");
    assert_eq!(fake.requests().len(), 2, "one retry");
    let r = retries(&msgs);
    assert_eq!(r.len(), 1, "{r:?}");
    let delay = r[0]["delaySecs"].as_f64().expect("delaySecs");
    eprintln!("retry-after: {date}: waited {delay} s (prompt took {elapsed:?})");
    // The date is 2 to 3 s ahead when the daemon reads it; its own back-off would have been
    // 0.8 to 1.2 s.
    assert!((1.8..=3.1).contains(&delay), "{delay}");
    assert!(elapsed >= Duration::from_secs_f64(1.8), "{elapsed:?}");
}

#[test]
fn a_retry_after_date_120_seconds_ahead_fails_the_turn_at_once() {
    let fake = Fake::start();
    fake.push(Scripted::throttled(
        503,
        "come back later",
        &date_ahead(120),
    ));
    fake.push(Scripted::text("never asked for"));
    let daemon = TestDaemon::start_with(&[], |dir| {
        let config = session_config(&fake.server.base_url(), "");
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c, "default");
    let started = Instant::now();
    let (msgs, resp) = c.prompt(&sid, "hello");
    let elapsed = started.elapsed();
    assert_eq!(resp["result"]["outcome"], "failed", "{resp}");
    let content = resp["result"]["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("503") && content.contains("come back later"),
        "{content}"
    );
    assert!(retries(&msgs).is_empty(), "{msgs:?}");
    assert_eq!(fake.requests().len(), 1, "not retried");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

// ----- the answer before the next turn --------------------------------------------------

#[test]
fn pipelined_prompts_get_each_answer_between_turn_complete_and_the_next_user_message() {
    const PROMPTS: usize = 12;
    let daemon = TestDaemon::start_with(&[], |dir| {
        let config = session_config("http://127.0.0.1:9", "");
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let sid = new_session(&mut c, "echo");
    // All sent at once on one connection: each turn is queued behind the previous one.
    let ids: Vec<Value> = (0..PROMPTS)
        .map(|k| {
            c.send_call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": format!("prompt {k}")}),
            )
        })
        .collect();
    let mut frames = Vec::new();
    let mut answered = 0;
    while answered < PROMPTS {
        let m = c.recv();
        if m.get("method").is_none() && ids.contains(&m["id"]) {
            answered += 1;
        }
        frames.push(m);
    }
    // Where each prompt's frames are: its `user_message`, its `turn_complete`, its answer.
    let position = |pred: &dyn Fn(&Value) -> bool| frames.iter().position(pred);
    let mut order = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        let text = format!("prompt {k}");
        let asked = position(&|m: &Value| {
            m["params"]["type"] == "user_message" && m["params"]["text"] == text.as_str()
        })
        .unwrap_or_else(|| panic!("no user_message for {text}"));
        let turn = frames[asked]["params"]["turnId"].clone();
        let complete = position(&|m: &Value| {
            m["params"]["type"] == "turn_complete" && m["params"]["turnId"] == turn
        })
        .unwrap_or_else(|| panic!("no turn_complete for {text}"));
        let answer =
            position(&|m: &Value| m.get("method").is_none() && &m["id"] == id).expect("answer");
        assert_eq!(
            frames[answer]["result"]["outcome"], "completed",
            "{}",
            frames[answer]
        );
        order.push((asked, complete, answer));
    }
    for k in 0..PROMPTS {
        let (asked, complete, answer) = order[k];
        assert!(
            asked < complete && complete < answer,
            "prompt {k}: {order:?}"
        );
        if let Some(&(next, _, _)) = order.get(k + 1) {
            assert!(
                answer < next,
                "prompt {k}'s answer (frame {answer}) came after prompt {}'s user_message \
                 (frame {next}): {order:?}",
                k + 1
            );
        }
    }
}
