//! A session whose history is long (issue 27, item 3): each later turn sends the whole
//! history to the provider, and the daemon holds it once more while sending (the request's
//! bytes), not twice (a JSON tree of copied strings, then its bytes). Measured with the
//! kernel's peak (`VmHWM`, reset through `/proc/PID/clear_refs` before the turn).

mod common;

use std::time::Duration;

use common::{Fake, TestDaemon, session_config};
use serde_json::json;
use zeroclaw_testkit::Scripted;

/// `/proc/PID/status` field `field` in bytes.
fn proc_bytes(pid: u32, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
        * 1024
}

#[test]
fn a_later_turn_holds_a_long_history_once_more_while_sending_it() {
    const MIB: usize = 1024 * 1024;
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 128;
    let fake = Fake::start();
    let config = session_config(&fake.server.base_url(), "");
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).expect("config");
    });
    let pid = daemon.child.as_ref().expect("running").id();
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "long"}));

    // Turn 1: an 8 MiB answer, which the history keeps.
    let chunks: Vec<String> = (0..CHUNKS)
        .map(|i| format!("{i:04}{}", "y".repeat(CHUNK - 4)))
        .collect();
    let answer = chunks.concat();
    fake.push(Scripted::chunks(chunks, Duration::ZERO));
    let (_, first) = c.prompt("long", "write a lot");
    assert_eq!(first["result"]["outcome"], "completed", "{first}");

    // Turn 2 sends the whole history.
    fake.push(Scripted::chunks(["short"], Duration::ZERO));
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM");
    let before = proc_bytes(pid, "VmRSS:");
    let (_, second) = c.prompt("long", "and now briefly");
    let growth = proc_bytes(pid, "VmHWM:").saturating_sub(before);
    assert_eq!(second["result"]["outcome"], "completed", "{second}");
    let sent = fake.server.requests();
    let history = sent.last().expect("a second request")["messages"]
        .as_array()
        .expect("messages")
        .clone();
    let earlier = history
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the first answer in the history");
    assert_eq!(
        earlier["content"].as_str().map(str::len),
        Some(answer.len()),
        "the second request carries the first answer whole"
    );
    assert!(earlier["content"] == answer.as_str());
    println!(
        "second turn with an {} MiB history: peak growth {:.1} MiB",
        answer.len() / MIB,
        growth as f64 / MIB as f64
    );
    // The request's bytes (8 MiB) and a little; a tree of the history before its bytes
    // made it 16 MiB and more.
    assert!(
        growth < 12 * MIB,
        "a second turn grew {} MiB for an 8 MiB history",
        growth / MIB
    );
}
