//! SPEC §17 for sessions over the real binary: memory bounded by the prompt (peak RSS of
//! the daemon read from `/proc/PID/status`), long text cut to fit a frame, paged
//! `session/list`, the per-principal live-session quota and `cwd` checks.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{Conn, TestDaemon, UidConn, code, is_root, session_config, test_uid};
use serde_json::{Value, json};

const MIB: usize = 1024 * 1024;
const FRAME: usize = 8 * MIB;

fn start(extra: &str) -> TestDaemon {
    let config = session_config("http://127.0.0.1:9", extra);
    TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A `/proc/PID/status` field in bytes (`VmHWM`, `VmRSS`).
fn proc_kib(daemon: &TestDaemon, field: &str) -> usize {
    let pid = daemon.child.as_ref().expect("running").id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in status"));
    let kib: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib * 1024
}

/// A prompt of `len` bytes made of short words (the worst case for per-word events).
fn word_prompt(len: usize) -> String {
    let mut p = "word ".repeat(len / 5);
    while p.len() < len {
        p.push('x');
    }
    p
}

/// Sends one prompt on a raw connection and reads everything up to its answer without
/// keeping the stream: (streamed text bytes, longest line, the answer).
fn prompt_raw(stream: UnixStream, sid: &str, prompt: &str) -> (usize, usize, Value) {
    let mut writer = stream.try_clone().unwrap();
    let line = json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": prompt}});
    writer.write_all(format!("{line}\n").as_bytes()).unwrap();
    drop(line);
    let mut reader = BufReader::with_capacity(MIB, stream);
    let (mut text, mut longest) = (0, 0);
    let mut buf = String::new();
    loop {
        buf.clear();
        let n = reader.read_line(&mut buf).unwrap();
        assert!(n > 0, "connection closed before the answer");
        longest = longest.max(n);
        let msg: Value = serde_json::from_str(&buf).unwrap();
        if msg["id"] == "p" {
            return (text, longest, msg);
        }
        if msg["params"]["type"] == "agent_message_chunk" {
            text += msg["params"]["text"].as_str().unwrap().len();
        }
    }
}

/// A raw initialized connection with a new echo session: (stream, session id).
fn echo_session(daemon: &TestDaemon, sid: &str) -> UnixStream {
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": sid}));
    c.stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    c.stream
}

/// Peak RSS growth of the daemon while it answers `n` concurrent prompts of `len` bytes.
fn peak_growth(n: usize, len: usize) -> (usize, usize) {
    let daemon = start("");
    let streams: Vec<UnixStream> = (0..n)
        .map(|i| echo_session(&daemon, &format!("big{i}")))
        .collect();
    // Warm up every session with a small turn so the baseline includes the machinery.
    for (i, s) in streams.iter().enumerate() {
        let (_, _, r) = prompt_raw(s.try_clone().unwrap(), &format!("big{i}"), "warm up");
        assert_eq!(r["result"]["outcome"], "completed");
    }
    let base = proc_kib(&daemon, "VmHWM:");
    let prompt = word_prompt(len);
    std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let s = s.try_clone().unwrap();
                let prompt = &prompt;
                scope.spawn(move || prompt_raw(s, &format!("big{i}"), prompt))
            })
            .collect();
        for h in handles {
            let (text, longest, r) = h.join().unwrap();
            assert_eq!(r["result"]["outcome"], "completed", "{}", r["error"]);
            assert_eq!(text, len, "the whole prompt was streamed back");
            assert!(longest <= FRAME, "a line of {longest} bytes");
        }
    });
    let peak = proc_kib(&daemon, "VmHWM:");
    (base, peak.saturating_sub(base))
}

#[test]
fn one_big_echo_prompt_is_not_amplified() {
    let len = FRAME - 4096;
    let (base, growth) = peak_growth(1, len);
    eprintln!(
        "one {len}-byte prompt: baseline VmHWM {} MiB, peak growth {} MiB",
        base / MIB,
        growth / MIB
    );
    assert!(
        growth < 8 * len,
        "peak RSS grew by {growth} bytes for a {len}-byte prompt"
    );
}

#[test]
fn four_big_echo_prompts_at_once_are_not_amplified() {
    let len = FRAME - 4096;
    let (base, growth) = peak_growth(4, len);
    eprintln!(
        "four {len}-byte prompts: baseline VmHWM {} MiB, peak growth {} MiB",
        base / MIB,
        growth / MIB
    );
    assert!(
        growth < 4 * 8 * len,
        "peak RSS grew by {growth} bytes for four {len}-byte prompts"
    );
}
