//! SPEC §17 and §14 against the real daemon, transport side: a stalled WebSocket reader is
//! really disconnected and cannot hold up a stop; unauthenticated WebSocket floods never
//! starve the local operator; one connection's requests to one session take effect in
//! receive order; notifications are executed and never answered; ids echo exactly.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code, daemon_command, session_config, wait_for_socket};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use zeroclaw_testkit::Scripted;

const WSS: &str = "[wss]\nenabled = true\nbind = \"127.0.0.1\"\nport = 0\n";

/// The port the daemon logged for its WebSocket listener.
fn listening_port(daemon: &TestDaemon) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = daemon.log();
        if let Some(rest) = log.split("websocket listening on ").nth(1) {
            let addr = rest.split_whitespace().next().unwrap_or("");
            let port = addr.trim_end_matches('/').rsplit(':').next().unwrap_or("");
            if let Ok(port) = port.parse() {
                return port;
            }
        }
        assert!(Instant::now() < deadline, "no websocket listener:\n{log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A daemon with WebSocket enabled, started with the environment `env` (test hooks).
fn ws_daemon(env: &[(&str, &str)]) -> (TestDaemon, u16) {
    let daemon = TestDaemon::start_env(&[], env, |dir| {
        std::fs::write(dir.join("config.toml"), WSS).unwrap();
    });
    let port = listening_port(&daemon);
    (daemon, port)
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn ws_open(port: u16) -> Result<Ws, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    tokio_tungstenite::client_async(format!("ws://127.0.0.1:{port}/"), tcp)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// A WebSocket peer that sends invalid requests with 60 KiB ids (each answered with a 60 KiB
/// error; frames before `initialize` may not pass 64 KiB, SPEC §17.1) and never reads.
/// Returns how many it has sent so far.
async fn stalled_peer(port: u16) -> Arc<AtomicUsize> {
    let ws = ws_open(port).await.expect("upgrade");
    let (mut sink, stream) = ws.split();
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    tokio::spawn(async move {
        let _never_read = stream;
        let id = "x".repeat(60 << 10);
        let line = format!(r#"{{"jsonrpc":"1.0","method":"status","id":"{id}"}}"#);
        // 36 MiB of answers: more than the 16 MiB queue holds.
        for _ in 0..600 {
            if sink.send(Message::Text(line.clone().into())).await.is_err() {
                break;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
        // Keep the socket open (and unread) until the test ends.
        std::future::pending::<()>().await;
    });
    sent
}

fn connections(c: &mut Conn) -> u64 {
    c.result("status", json!({}))["connections"]
        .as_u64()
        .expect("connections")
}

fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_websocket_reader_is_gone_in_time_and_cannot_hold_up_sigterm() {
    // 1. With a short stall timeout: the stalled peer stops counting soon after the decision.
    let (daemon, port) = ws_daemon(&[("ZEROCLAW_TEST_STALL_TIMEOUT_MS", "500")]);
    let mut local = daemon.client();
    let flood = Instant::now();
    let sent = stalled_peer(port).await;
    tokio::task::block_in_place(|| {
        wait_until(Duration::from_secs(5), "peer counted", || {
            connections(&mut local) == 2
        });
        // The daemon logs its decision (500 ms after the queue filled); from then the
        // peer is closed and uncounted within 2 s.
        wait_until(Duration::from_secs(30), "stall decided", || {
            daemon.log().contains("disconnecting")
        });
        let decided = Instant::now();
        let gone = wait_until(Duration::from_secs(5), "stalled peer uncounted", || {
            connections(&mut local) == 1
        });
        eprintln!(
            "stalled peer: decided {:?} after the flood began ({} frames sent), uncounted {gone:?} after the decision",
            decided.duration_since(flood),
            sent.load(Ordering::SeqCst)
        );
        assert!(gone < Duration::from_millis(2500), "took {gone:?}");
    });
    drop(daemon);

    // 2. With the default 30 s stall timeout: SIGTERM while the peer stalls exits in time.
    let (mut daemon, port) = ws_daemon(&[]);
    let sent = stalled_peer(port).await;
    tokio::task::block_in_place(|| {
        // 200 frames sent: the daemon has read most of them and queued their answers,
        // which the peer will never take.
        wait_until(Duration::from_secs(10), "frames sent", || {
            sent.load(Ordering::SeqCst) >= 200
        });
        let term = Instant::now();
        daemon.signal(libc::SIGTERM);
        let status = daemon
            .wait_exit(Duration::from_secs(10))
            .expect("exit within 10 s of SIGTERM");
        eprintln!(
            "SIGTERM with a stalled peer: exited in {:?}",
            term.elapsed()
        );
        assert!(status.success(), "{status}");
        assert!(!daemon.socket.exists(), "socket unlinked");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "websocket listener closed"
        );
    });
    // The lock is released: a new daemon starts on the same directory.
    daemon.spawn(&[]);
}

/// Raises this process's open-files soft limit to its hard limit.
fn raise_own_nofile() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
}

/// (soft, hard) "Max open files" of a process.
fn nofile_of(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_string();
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_string(), fields[4].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_websocket_floods_never_starve_the_local_operator() {
    raise_own_nofile();
    // The daemon starts with a soft limit of 1024 open files (as under many service
    // managers); it must raise it to the hard limit itself.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), WSS).unwrap();
    let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
    let mut cmd = daemon_command(dir.path(), &[]);
    cmd.stderr(log);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut l = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
            l.rlim_cur = l.rlim_cur.min(1024);
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
            Ok(())
        });
    }
    let socket = dir.path().join("data").join("daemon.sock");
    let mut child = cmd.spawn().unwrap();
    wait_for_socket(&socket, Some(&mut child));
    let pid = child.id();
    let daemon = TestDaemon {
        stderr_path: dir.path().join("daemon.log"),
        socket,
        dir,
        child: Some(child),
    };
    let port = listening_port(&daemon);

    // A local connection that never initializes is closed, without a reply, in ~10 s.
    let mut silent = daemon.connect();
    let silent_since = Instant::now();

    // The operator keeps asking for status (and reconnecting) during the flood.
    let flooding = Arc::new(AtomicBool::new(true));
    let operator = {
        let socket = daemon.socket.clone();
        let flooding = Arc::clone(&flooding);
        std::thread::spawn(move || {
            let mut latencies = Vec::new();
            let mut c = Conn::open(&socket);
            c.result("initialize", json!({}));
            let mut round = 0;
            while flooding.load(Ordering::SeqCst) || latencies.len() < 50 {
                round += 1;
                if round % 10 == 0 {
                    // A fresh local connection is admitted and served too.
                    c = Conn::open(&socket);
                    let init = c.call("initialize", json!({}));
                    assert!(init.get("result").is_some(), "operator refused: {init}");
                }
                let t = Instant::now();
                let s = c.call("status", json!({}));
                latencies.push(t.elapsed());
                assert!(s.get("result").is_some(), "status failed: {s}");
                std::thread::sleep(Duration::from_millis(5));
            }
            latencies
        })
    };

    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..1100 {
        tasks.spawn(async move { ws_open(port).await.ok() });
    }
    let mut held = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Some(ws) = joined.unwrap() {
            held.push(ws);
        }
    }
    flooding.store(false, Ordering::SeqCst);
    let mut latencies = tokio::task::block_in_place(|| operator.join().unwrap());
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    let max = latencies[latencies.len() - 1];
    eprintln!(
        "flood of 1100 websocket connects: {} upgraded and held; local status p99 {p99:?}, max {max:?} over {} calls",
        held.len(),
        latencies.len()
    );
    assert!(
        held.len() <= 64,
        "at most unauthenticated_ws = 64 upgrades: {}",
        held.len()
    );
    assert!(!held.is_empty(), "some upgrades are served");
    assert!(p99 < Duration::from_secs(1), "status p99 {p99:?}");

    tokio::task::block_in_place(|| {
        let mut c = daemon.client();
        // The silent local connection and the held upgrades never initialized: closed
        // within 10 s of their accept (plus scheduling slack).
        assert!(
            silent.closed_within(Duration::from_secs(12)),
            "silent local kept"
        );
        let closed_after = silent_since.elapsed();
        assert!(
            closed_after >= Duration::from_secs(9),
            "closed too early: {closed_after:?}"
        );
        wait_until(
            Duration::from_secs(12),
            "unauthenticated peers closed",
            || connections(&mut c) == 1,
        );
    });
    let (soft, hard) = nofile_of(pid);
    assert_eq!(soft, hard, "open-files soft limit raised to the hard limit");
    for mut ws in held {
        // Closed by the daemon, with nothing sent but the close.
        let next = tokio::time::timeout(Duration::from_secs(5), ws.next()).await;
        match next {
            Ok(Some(Ok(Message::Close(_))) | Some(Err(_)) | None) => {}
            other => panic!("expected a close, got {other:?}"),
        }
    }
}

fn echo_daemon() -> TestDaemon {
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config("http://127.0.0.1:9", ""),
        )
        .unwrap();
    })
}

fn prompt_line(id: u64, sid: &str, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
           "params": {"sessionId": sid, "prompt": text}})
    .to_string()
        + "\n"
}

#[test]
fn pipelined_prompts_take_effect_in_sending_order() {
    let daemon = echo_daemon();
    let mut c = daemon.client();
    for round in 0..20 {
        let sid = c.new_session(json!({"agentAlias": "echo"}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        let base = 1000 * (round + 1);
        let burst: String = (0..50)
            .map(|i| prompt_line(base + i, &sid, &format!("p{i:02}")))
            .collect();
        c.stream.write_all(burst.as_bytes()).unwrap();
        // Prompts beyond the queue may be refused (-32002); the others run in sending order.
        let (mut answered, mut refused) = (Vec::new(), 0);
        while answered.len() + refused < 50 {
            let msg = c.recv();
            let Some(id) = msg["id"].as_u64().filter(|_| msg.get("method").is_none()) else {
                continue;
            };
            let i = id - base;
            match msg.get("result") {
                Some(r) => {
                    assert_eq!(r["content"], format!("p{i:02}"), "round {round}: {msg}");
                    answered.push(i);
                }
                None => {
                    assert_eq!(code(&msg["error"]), -32002, "round {round}: {msg}");
                    refused += 1;
                }
            }
        }
        // 32 wait behind the running turn; the first may still be waiting itself when the
        // burst's tail arrives (a loaded machine), so 32 is what is promised.
        assert!(answered.len() >= 32, "round {round}: {answered:?}");
        assert!(
            answered.windows(2).all(|w| w[0] < w[1]),
            "round {round}: answers out of order: {answered:?}"
        );
        let users: Vec<String> = c
            .messages(&sid)
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect();
        let sent: Vec<String> = answered.iter().map(|i| format!("p{i:02}")).collect();
        assert_eq!(users, sent, "round {round}: transcript out of order");
    }
}

#[test]
fn busy_refusals_hit_the_last_prompts_in_sending_order() {
    let fake = Fake::start();
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config(&fake.server.base_url(), ""),
        )
        .unwrap();
    });
    let mut c = daemon.client();
    for round in 0..3u64 {
        let chunks: Vec<String> = (0..200).map(|i| format!("c{i} ")).collect();
        fake.push(Scripted::chunks(chunks, Duration::from_millis(50)));
        let sid = c.new_session(json!({"agentAlias": "default"}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        let base = 1000 * (round + 1);
        c.stream
            .write_all(prompt_line(base, &sid, "slow").as_bytes())
            .unwrap();
        while c.recv()["params"]["type"] != "agent_message_chunk" {}
        // 39 more in one write: 32 may wait behind the running turn, the last 7 are busy.
        let burst: String = (1..40)
            .map(|i| prompt_line(base + i, &sid, &format!("q{i}")))
            .collect();
        c.stream.write_all(burst.as_bytes()).unwrap();
        let mut busy = Vec::new();
        while busy.len() < 7 {
            let msg = c.recv();
            if msg.get("method").is_some() {
                continue;
            }
            let i = msg["id"].as_u64().unwrap() - base;
            assert_eq!(
                code(&msg["error"]),
                -32002,
                "round {round}: prompt {i}: {msg}"
            );
            busy.push(i);
        }
        assert_eq!(busy, (33..40).collect::<Vec<u64>>(), "round {round}");
        // Close: the running turn is cancelled and the 32 waiting prompts are answered.
        let close = c.send_call("session/close", json!({"sessionId": sid}));
        let (mut answered, mut closed) = (0, false);
        while !(closed && answered == 33) {
            let msg = c.recv();
            if msg["id"] == close {
                closed = true;
            } else if msg.get("method").is_none() {
                answered += 1;
            }
        }
    }
}

#[test]
fn a_session_cancel_notification_cancels_and_nothing_answers_notifications() {
    let fake = Fake::start();
    let chunks: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    fake.push(Scripted::chunks(chunks, Duration::from_millis(50)));
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config(&fake.server.base_url(), ""),
        )
        .unwrap();
    });
    let mut c = daemon.client();
    let sid = c.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // Notifications that fail are not answered either.
    for note in [
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}}),
        json!({"jsonrpc": "2.0", "method": "no/such/method", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": 5}}),
    ] {
        c.send(&note.to_string());
    }
    let prompt = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "long"}),
    );
    while c.recv()["params"]["type"] != "agent_message_chunk" {}
    let sent_at = Instant::now();
    c.send(
        &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
            .to_string(),
    );
    let (seen, resp) = c.collect_until(&prompt);
    assert_eq!(resp["result"]["outcome"], "cancelled", "{resp}");
    assert!(sent_at.elapsed() < Duration::from_secs(5));
    let status = c.send_call("status", json!({}));
    let (more, _) = c.collect_until(&status);
    for msg in seen.iter().chain(&more) {
        assert!(
            msg.get("method").is_some(),
            "only notifications expected: {msg}"
        );
    }
}

#[test]
fn ids_echo_exactly_as_sent() {
    let daemon = TestDaemon::start();
    let stream = UnixStream::connect(&daemon.socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut exchange = |line: &str| -> String {
        writer.write_all(line.as_bytes()).unwrap();
        writer.write_all(b"\n").unwrap();
        let mut got = String::new();
        reader.read_line(&mut got).unwrap();
        got
    };
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"initialize","params":{}}"#,
    );
    assert!(
        init.starts_with(r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":"#),
        "{init}"
    );
    for id in [
        "1e2",
        "-0",
        "1.0",
        "1E+2",
        "0.10",
        "\"\\u0041\"",
        "123456789012345678901234567890",
    ] {
        let ok = exchange(&format!(
            r#"{{"id":{id},"jsonrpc":"2.0","method":"status"}}"#
        ));
        assert!(
            ok.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)),
            "{id}: {ok}"
        );
        // Invalid requests echo their id exactly too.
        let bad = exchange(&format!(
            r#"{{"id":{id},"jsonrpc":"1.0","method":"status"}}"#
        ));
        assert!(
            bad.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"#)),
            "{id}: {bad}"
        );
    }
    let v: Value =
        serde_json::from_str(&exchange(r#"{"id":7,"jsonrpc":"2.0","method":"status"}"#)).unwrap();
    assert_eq!(v["id"], 7);
}

#[test]
fn a_cancel_applies_to_the_prompt_before_it_never_to_an_earlier_turn() {
    let fake = Fake::start();
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            session_config(&fake.server.base_url(), ""),
        )
        .unwrap();
    });
    let mut c = daemon.client();
    let sid = c.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // An idle session: prompt and cancel in one write; the cancel finds that prompt even
    // though its turn has not started when the cancel is read.
    fake.push(Scripted::chunks(
        (0..100).map(|i| format!("a{i} ")),
        Duration::from_millis(50),
    ));
    let burst = prompt_line(1, &sid, "first")
        + &json!({"jsonrpc": "2.0", "id": 2, "method": "session/cancel",
                  "params": {"sessionId": sid}})
        .to_string()
        + "\n";
    c.stream.write_all(burst.as_bytes()).unwrap();
    let (seen, first) = c.collect_until(&json!(1));
    assert_eq!(first["result"]["outcome"], "cancelled", "{first}");
    let cancel = seen
        .iter()
        .find(|m| m["id"] == 2)
        .cloned()
        .unwrap_or_else(|| c.recv_response(&json!(2)));
    assert_eq!(cancel["result"]["cancelled"], true, "{cancel}");

    // A running turn, then a second prompt and a cancel: the cancel applies to the second
    // prompt (waiting), the running turn completes.
    fake.push(Scripted::chunks(
        (0..10).map(|i| format!("b{i} ")),
        Duration::from_millis(50),
    ));
    fake.push(Scripted::text("never streamed"));
    c.stream
        .write_all(prompt_line(3, &sid, "running").as_bytes())
        .unwrap();
    while c.recv()["params"]["type"] != "agent_message_chunk" {}
    let burst = prompt_line(4, &sid, "waiting")
        + &json!({"jsonrpc": "2.0", "method": "session/cancel",
                  "params": {"sessionId": sid}})
        .to_string()
        + "\n";
    c.stream.write_all(burst.as_bytes()).unwrap();
    let (_, running) = c.collect_until(&json!(3));
    assert_eq!(running["result"]["outcome"], "completed", "{running}");
    let (_, waiting) = c.collect_until(&json!(4));
    assert_eq!(waiting["result"]["outcome"], "cancelled", "{waiting}");
}
