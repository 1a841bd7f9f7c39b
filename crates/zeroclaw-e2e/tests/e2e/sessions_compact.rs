//! Compaction over the real binary (SPEC §18): `session/compact` on the echo provider and
//! on a fake OpenAI server, `context_compacted` for every subscriber, the queue order with
//! prompts, a failed snapshot write, kill -9 during the summary call, auto-compaction, and
//! ownership.

use crate::checkpointed;
use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use checkpointed::wait_checkpointed;
use common::{Conn, Fake, TestDaemon, UidConn, code, is_root, session_config, test_uid, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

const HOOKS: &[(&str, &str)] = &[("ZEROCLAW_TEST_HOOKS", "1")];

/// Prefix of the user message that carries a summary in the compacted context.
const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation]\n";

/// Agents: `default` on the fake server keeping 1 turn, `echo` (defaults: keep 2 turns),
/// `auto` on echo with a small window for auto-compaction.
const AGENTS: &str = r#"
[agents.fake1]
provider = "fake"
keep_recent_turns = 1

[agents.autofake]
provider = "fake"
max_context_tokens = 100
compact_threshold = 0.5
keep_recent_turns = 1

[agents.toolfake]
provider = "fake"
tools = ["bash"]
autonomy = "full"
max_context_tokens = 150
compact_threshold = 0.5
keep_recent_turns = 1

[agents.auto]
provider = "echo"
max_context_tokens = 400
compact_threshold = 0.5
keep_recent_turns = 1
"#;

fn start(fake: &Fake, env: &[(&str, &str)]) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), AGENTS);
    TestDaemon::start_env(&[], env, |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// A prompt of about `len` characters starting with `tag`.
fn long(tag: &str, len: usize) -> String {
    let mut s = format!("{tag} ");
    while s.len() < len {
        s.push_str("lorem ipsum ");
    }
    s.truncate(len);
    s
}

/// What the echo provider's summary says of one message.
fn echo_line(role: &str, text: &str) -> String {
    let first: String = text.chars().take(80).collect();
    format!("{role}: {}", first.replace('\n', " "))
}

/// `session/compact` and everything streamed before its answer.
fn compact(c: &mut Conn, sid: &str, extra: Value) -> (Vec<Value>, Value) {
    let mut params = json!({"sessionId": sid});
    if let (Some(p), Value::Object(e)) = (params.as_object_mut(), extra) {
        p.extend(e);
    }
    let id = c.send_call("session/compact", params);
    c.collect_until(&id)
}

fn compacted(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["type"] == "context_compacted")
        .collect()
}

/// The non-system messages of provider request `i` as (role, content).
fn sent(fake: &Fake, i: usize) -> Vec<(String, String)> {
    let body = &fake.requests()[i];
    body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_owned(), content.to_owned())
}

fn rows(c: &mut Conn, sid: &str) -> Vec<(String, String)> {
    c.messages(sid)
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn db(daemon: &TestDaemon) -> rusqlite::Connection {
    rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap()
}

fn set_trigger(trigger: &std::path::Path, on: bool) {
    if on {
        std::fs::write(trigger, "").unwrap();
    } else {
        std::fs::remove_file(trigger).unwrap();
    }
    let ack = trigger.with_extension("active");
    let deadline = Instant::now() + Duration::from_secs(5);
    while ack.exists() != on {
        assert!(
            Instant::now() < deadline,
            "the daemon did not switch {trigger:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn compact_on_echo_summarizes_all_but_the_last_two_turns() {
    let fake = Fake::start();
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "e"}));
    let prompts: Vec<String> = (1..=3).map(|i| long(&format!("p{i}"), 300)).collect();
    for p in &prompts {
        c.prompt("e", p);
    }
    let before = rows(&mut c, "e");
    assert_eq!(before.len(), 6);

    let (msgs, resp) = compact(&mut c, "e", json!({}));
    let r = &resp["result"];
    assert_eq!(r["outcome"], "completed", "{resp}");
    assert_eq!(r["sessionId"], "e");
    assert_eq!(r["summarizedMessages"], 2);
    let (tb, ta) = (
        r["tokensBefore"].as_u64().unwrap(),
        r["tokensAfter"].as_u64().unwrap(),
    );
    assert!(tb > ta && ta > 0, "{r}");
    let summary = format!(
        "{}\n{}",
        echo_line("user", &prompts[0]),
        echo_line("assistant", &prompts[0])
    );
    let events = compacted(&msgs);
    assert_eq!(events.len(), 1, "{msgs:?}");
    let e = &events[0];
    assert_eq!(e["summary"], summary.as_str());
    assert_eq!(e["turnId"], r["turnId"]);
    assert_eq!(e["eventSeq"], 1, "the compaction's first event");
    assert_eq!(
        (
            &e["tokensBefore"],
            &e["tokensAfter"],
            &e["summarizedMessages"]
        ),
        (
            &r["tokensBefore"],
            &r["tokensAfter"],
            &r["summarizedMessages"]
        )
    );

    // The transcript keeps every row and gets one compaction row.
    let after = rows(&mut c, "e");
    assert_eq!(after[..6], before[..]);
    assert_eq!(after[6..], [pair("compaction", &summary)]);
    let turn_of_row = c.messages("e")[6]["turnId"].clone();
    assert_eq!(turn_of_row, r["turnId"]);

    // The snapshot in force: the summary, then the last two turns whole.
    let snap: String = db(&daemon)
        .query_row(
            "SELECT messages FROM snapshots ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let snap: Vec<Value> = serde_json::from_str(&snap).unwrap();
    let mut want = vec![json!({"role": "user", "content": format!("{SUMMARY_PREFIX}{summary}")})];
    for p in &prompts[1..] {
        want.push(json!({"role": "user", "content": p}));
        want.push(json!({"role": "assistant", "content": p}));
    }
    assert_eq!(snap, want);

    // Nothing older than the kept turns: nothing changes, no event.
    let (msgs, resp) = compact(&mut c, "e", json!({}));
    assert_eq!(resp["result"]["summarizedMessages"], 0, "{resp}");
    assert_eq!(resp["result"]["outcome"], "completed");
    assert!(compacted(&msgs).is_empty());
    assert_eq!(rows(&mut c, "e").len(), 7);
}

#[test]
fn the_next_prompt_is_sent_the_summary_and_the_kept_turns() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::text("THE SUMMARY"));
    fake.push(Scripted::text("a3"));
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "f"}));
    c.prompt("f", "p1");
    c.prompt("f", "p2");
    let (msgs, resp) = compact(&mut c, "f", json!({"instructions": "keep the numbers"}));
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["summarizedMessages"], 2);
    assert_eq!(compacted(&msgs)[0]["summary"], "THE SUMMARY");

    // The summary call: same model, no tools, the summarized turns then the request.
    let body = &fake.requests()[2];
    assert_eq!(body["model"], "m");
    assert!(body.get("tools").is_none(), "{body}");
    let asked = sent(&fake, 2);
    assert_eq!(asked[..2], [pair("user", "p1"), pair("assistant", "a1")]);
    assert_eq!(asked.len(), 3);
    assert_eq!(asked[2].0, "user");
    assert!(
        asked[2]
            .1
            .ends_with("Additional instructions: keep the numbers")
    );

    c.prompt("f", "p3");
    assert_eq!(
        sent(&fake, 3),
        [
            pair("user", &format!("{SUMMARY_PREFIX}THE SUMMARY")),
            pair("user", "p2"),
            pair("assistant", "a2"),
            pair("user", "p3"),
        ]
    );
    // The compaction row is never sent to the provider, even after a restart.
    let roles: Vec<String> = rows(&mut c, "f").into_iter().map(|r| r.0).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "compaction",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn a_second_subscriber_sees_context_compacted() {
    let fake = Fake::start();
    let daemon = start(&fake, &[]);
    let mut a = daemon.client();
    a.new_session(json!({"agentAlias": "echo", "sessionId": "w"}));
    for i in 1..=3 {
        a.prompt("w", &long(&format!("q{i}"), 200));
    }
    let mut b = daemon.client();
    let sub = b.result("session/subscribe", json!({"sessionId": "w"}));
    assert!(sub.is_object(), "{sub}");
    // Drain what the subscription replays.
    while !b.silent_for(Duration::from_millis(300)) {}
    let (_, resp) = compact(&mut a, "w", json!({}));
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let event = loop {
        assert!(
            Instant::now() < deadline,
            "no context_compacted for the watcher"
        );
        let m = b.recv();
        if m["params"]["type"] == "context_compacted" {
            break m["params"].clone();
        }
    };
    assert_eq!(event["turnId"], resp["result"]["turnId"]);
    assert_eq!(event["summarizedMessages"], 2);
    assert!(
        event["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("user: q1 ")),
        "{event}"
    );
}

#[test]
fn compaction_keeps_its_place_in_the_queue_between_prompts() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::slow(
        Duration::from_millis(500),
        Scripted::text("a3"),
    ));
    fake.push(Scripted::text("S"));
    fake.push(Scripted::text("a4"));
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "q"}));
    c.prompt("q", "p1");
    c.prompt("q", "p2");
    // Pipelined: a slow prompt, the compaction, another prompt, without waiting.
    let id3 = c.send_call("session/prompt", json!({"sessionId": "q", "prompt": "p3"}));
    let idc = c.send_call("session/compact", json!({"sessionId": "q"}));
    let id4 = c.send_call("session/prompt", json!({"sessionId": "q", "prompt": "p4"}));
    let mut answered = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while answered.len() < 3 {
        assert!(Instant::now() < deadline, "answers missing: {answered:?}");
        let m = c.recv();
        if m.get("method").is_none() {
            assert!(m.get("result").is_some(), "{m}");
            answered.push(m["id"].clone());
        }
    }
    assert_eq!(answered, [id3, idc, id4]);
    // The summary covered p1..a2 (p3's turn is the one kept), and p4 was sent the result.
    assert_eq!(
        sent(&fake, 3)[..4],
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p2"),
            pair("assistant", "a2")
        ]
    );
    assert_eq!(
        sent(&fake, 4),
        [
            pair("user", &format!("{SUMMARY_PREFIX}S")),
            pair("user", "p3"),
            pair("assistant", "a3"),
            pair("user", "p4"),
        ]
    );
}

#[test]
fn a_failed_snapshot_write_sends_nothing_and_keeps_the_old_context() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::text("S"));
    fake.push(Scripted::text("a3"));
    let daemon = start(&fake, HOOKS);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "x"}));
    c.prompt("x", "p1");
    c.prompt("x", "p2");
    let trigger = daemon.data_dir().join("test-fail-snapshots");
    set_trigger(&trigger, true);
    let (msgs, resp) = compact(&mut c, "x", json!({}));
    assert_eq!(code(&resp["error"]), -32603, "{resp}");
    assert!(compacted(&msgs).is_empty(), "{msgs:?}");
    set_trigger(&trigger, false);
    let roles: Vec<String> = rows(&mut c, "x").into_iter().map(|r| r.0).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let snapshots: i64 = db(&daemon)
        .query_row("SELECT COUNT(*) FROM snapshots", [], |r| r.get(0))
        .unwrap();
    assert_eq!(snapshots, 0);
    c.prompt("x", "p3");
    assert_eq!(
        sent(&fake, 3),
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p2"),
            pair("assistant", "a2"),
            pair("user", "p3"),
        ]
    );
}

#[test]
fn a_failed_summary_call_changes_nothing() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::http_error(500, "no summary today"));
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "h"}));
    c.prompt("h", "p1");
    c.prompt("h", "p2");
    let (msgs, resp) = compact(&mut c, "h", json!({}));
    let r = &resp["result"];
    assert_eq!(r["outcome"], "failed", "{resp}");
    assert_eq!(r["summarizedMessages"], 0);
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("no summary today")),
        "{r}"
    );
    assert!(compacted(&msgs).is_empty());
    assert_eq!(rows(&mut c, "h").len(), 4);
}

#[test]
fn kill_9_during_the_summary_call_leaves_the_previous_snapshot() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::slow(
        Duration::from_secs(30),
        Scripted::text("never"),
    ));
    let mut daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "k"}));
    c.prompt("k", "p1");
    c.prompt("k", "p2");
    let before: Vec<String> = {
        let conn = db(&daemon);
        let mut stmt = conn
            .prepare("SELECT id || ':' || covers_seq || ':' || messages FROM snapshots ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    c.send_call("session/compact", json!({"sessionId": "k"}));
    assert!(
        fake.wait_requests(3, Duration::from_secs(10)),
        "no summary call"
    );
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);

    let after: Vec<String> = {
        let conn = db(&daemon);
        let mut stmt = conn
            .prepare("SELECT id || ':' || covers_seq || ':' || messages FROM snapshots ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(after, before);
    let mut c = daemon.client();
    let roles: Vec<String> = rows(&mut c, "k").into_iter().map(|r| r.0).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    fake.push(Scripted::text("a3"));
    c.prompt("k", "p3");
    assert_eq!(
        sent(&fake, 3),
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p2"),
            pair("assistant", "a2"),
            pair("user", "p3"),
        ]
    );
}

#[test]
fn a_turn_over_the_threshold_compacts_first() {
    let fake = Fake::start();
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "auto", "sessionId": "a"}));
    let prompts: Vec<String> = (1..=3).map(|i| long(&format!("t{i}"), 300)).collect();
    // Two turns stay under 0.5 × 400 tokens with the prompt, or have nothing to summarize.
    for p in &prompts[..2] {
        let (msgs, resp) = c.prompt("a", p);
        assert_eq!(resp["result"]["outcome"], "completed");
        assert!(compacted(&msgs).is_empty(), "{msgs:?}");
    }
    let (msgs, resp) = c.prompt("a", &prompts[2]);
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let events = compacted(&msgs);
    assert_eq!(events.len(), 1, "{msgs:?}");
    let e = &events[0];
    assert_eq!(
        e["turnId"], resp["result"]["turnId"],
        "the running turn's event"
    );
    let summary = format!(
        "{}\n{}",
        echo_line("user", &prompts[0]),
        echo_line("assistant", &prompts[0])
    );
    assert_eq!(e["summary"], summary.as_str());
    assert_eq!(e["summarizedMessages"], 2);
    // Before the provider's answer.
    let types: Vec<Value> = updates(&msgs).iter().map(|u| u["type"].clone()).collect();
    let at = types.iter().position(|t| t == "context_compacted").unwrap();
    let first_chunk = types
        .iter()
        .position(|t| t == "agent_message_chunk")
        .unwrap();
    assert!(at < first_chunk, "{types:?}");
    assert!(!types.iter().any(|t| t == "history_trimmed"), "{types:?}");

    // The transcript: the turn's prompt, its compaction row, its answer.
    let all = rows(&mut c, "a");
    assert_eq!(all.len(), 7);
    assert_eq!(all[4], pair("user", &prompts[2]));
    assert_eq!(all[5], pair("compaction", &summary));
    assert_eq!(all[6], pair("assistant", &prompts[2]));
    // The snapshot ends just before the turn's prompt row (seq 5): recovery replays the
    // turn after it.
    let (covers, snap): (i64, String) = db(&daemon)
        .query_row(
            "SELECT covers_seq, messages FROM snapshots ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(covers, 4);
    let snap: Vec<Value> = serde_json::from_str(&snap).unwrap();
    assert_eq!(
        snap,
        [
            json!({"role": "user", "content": format!("{SUMMARY_PREFIX}{summary}")}),
            json!({"role": "user", "content": prompts[1]}),
            json!({"role": "assistant", "content": prompts[1]}),
        ]
    );
}

#[test]
fn a_tool_round_over_the_threshold_compacts_before_the_next_call() {
    let fake = Fake::start();
    let text = |tag: &str| format!("{tag}-{}", "x".repeat(19 - tag.len()));
    fake.push(Scripted::text(&text("a1")));
    fake.push(Scripted::text(&text("a2")));
    fake.push(Scripted::tool_call(
        "c1",
        "bash",
        json!({"command": "head -c 200 /dev/zero | tr '\\0' y"}),
    ));
    fake.push(Scripted::text("S"));
    fake.push(Scripted::text("a3"));
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "toolfake", "sessionId": "m"}));
    c.prompt("m", &text("p1"));
    c.prompt("m", &text("p2"));
    // The turn starts under 0.5 × 150 tokens; its tool result takes it over.
    let (msgs, resp) = c.prompt("m", "p3");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(resp["result"]["content"], "a3");
    let ups = updates(&msgs);
    let types: Vec<&str> = ups.iter().filter_map(|u| u["type"].as_str()).collect();
    let at = types.iter().position(|t| *t == "context_compacted");
    let result_at = types.iter().position(|t| *t == "tool_result");
    assert!(at.is_some() && result_at < at, "{types:?}");
    let e = &ups[at.unwrap_or(0)];
    assert_eq!(e["turnId"], resp["result"]["turnId"]);
    assert_eq!(e["summary"], "S");
    assert_eq!(e["summarizedMessages"], 2);
    // The summary call saw turn 1 only; the next call the summary, turn 2 and this turn.
    let summarized = sent(&fake, 3);
    assert_eq!(
        summarized[..2],
        [pair("user", &text("p1")), pair("assistant", &text("a1"))]
    );
    assert_eq!(summarized.len(), 3);
    let asked = sent(&fake, 4);
    let roles: Vec<&str> = asked.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "user", "assistant", "user", "assistant", "tool"],
        "{asked:?}"
    );
    assert_eq!(asked[0], pair("user", &format!("{SUMMARY_PREFIX}S")));
    assert_eq!(asked[1], pair("user", &text("p2")));
    assert_eq!(asked[3], pair("user", "p3"));
    assert_eq!(asked[5].1, "y".repeat(200));
    let covers: i64 = db(&daemon)
        .query_row(
            "SELECT covers_seq FROM snapshots ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(covers, 4, "just before the turn's prompt row");
}

#[test]
fn a_turn_killed_after_its_auto_compaction_recovers_on_the_compacted_context() {
    let fake = Fake::start();
    let text = |tag: &str| format!("{tag}-{}", "x".repeat(59 - tag.len()));
    fake.push(Scripted::text(&text("a1")));
    fake.push(Scripted::text(&text("a2")));
    fake.push(Scripted::text("S"));
    let slow: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    fake.push(Scripted::chunks(slow, Duration::from_millis(100)));
    let mut daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "autofake", "sessionId": "r"}));
    c.prompt("r", &text("p1"));
    c.prompt("r", &text("p2"));
    // p3 goes over 0.5 × 100 tokens: turn 1 is summarized first, then p3 streams.
    c.send_call(
        "session/prompt",
        json!({"sessionId": "r", "prompt": text("p3")}),
    );
    let mut seen = Vec::new();
    while !updates(&seen)
        .iter()
        .any(|u| u["type"] == "agent_message_chunk")
    {
        seen.push(c.recv());
    }
    assert_eq!(compacted(&seen).len(), 1, "{seen:?}");
    wait_checkpointed(&daemon, "r", "w2 ");
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);

    let mut c = daemon.client();
    // The recovered context is [S, p2, a2, p3, partial a3]: over the threshold again, so
    // p4's turn first summarizes S and turn 2, keeping turn 3 with its recovered text.
    fake.push(Scripted::text("S2"));
    fake.push(Scripted::text("a4"));
    let (msgs, resp) = c.prompt("r", "p4");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    assert_eq!(compacted(&msgs).len(), 1, "{msgs:?}");
    let summarized = sent(&fake, 4);
    assert_eq!(
        summarized[..3],
        [
            pair("user", &format!("{SUMMARY_PREFIX}S")),
            pair("user", &text("p2")),
            pair("assistant", &text("a2")),
        ],
        "{summarized:?}"
    );
    assert_eq!(summarized.len(), 4, "{summarized:?}");
    let asked = sent(&fake, 5);
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert_eq!(asked[0], pair("user", &format!("{SUMMARY_PREFIX}S2")));
    assert_eq!(asked[1], pair("user", &text("p3")));
    assert_eq!(asked[2].0, "assistant");
    assert!(asked[2].1.starts_with("w0 w1 w2 "), "{asked:?}");
    assert_eq!(asked[3], pair("user", "p4"));
    let roles: Vec<String> = rows(&mut c, "r").into_iter().map(|r| r.0).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "compaction",
            "assistant",
            "interruption",
            "user",
            "compaction",
            "assistant"
        ]
    );
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn only_the_owner_or_an_admin_may_compact() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let fake = Fake::start();
    let extra = format!(
        "{AGENTS}\n[permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"echo\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"user\"]\n"
    );
    let config = session_config(&fake.server.base_url(), &extra);
    let daemon = TestDaemon::start_env(&[], &[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut op = daemon.client();
    op.new_session(json!({"agentAlias": "echo", "sessionId": "mine"}));
    op.prompt("mine", "hello");
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert!(init.get("result").is_some(), "{init}");
    let e = u.call("session/compact", json!({"sessionId": "mine"}));
    assert_eq!(code(&e["error"]), -32003, "{e}");
    // The user's own session: compacting is allowed (nothing to summarize yet).
    let r = u.call(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "theirs"}),
    );
    assert!(r.get("result").is_some(), "{r}");
    let r = u.call("session/compact", json!({"sessionId": "theirs"}));
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    // An admin may compact anyone's session.
    let (_, r) = compact(&mut op, "theirs", json!({}));
    assert_eq!(r["result"]["outcome"], "completed", "{r}");
    assert_eq!(rows(&mut op, "mine").len(), 2);
}

/// The figure of docs/BENCHMARKS.md: `session/compact` of a 100-turn echo session, round
/// trip as a client sees it (the summary of 198 messages, the one-transaction commit, the
/// event), three sessions. Run with `-- --nocapture compaction_of_a_100_turn` to see it.
#[test]
fn compaction_of_a_100_turn_echo_session_is_quick() {
    let fake = Fake::start();
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    let mut figures = Vec::new();
    for s in 0..3 {
        let sid = format!("b{s}");
        c.new_session(json!({"agentAlias": "echo", "sessionId": sid}));
        for i in 0..100 {
            c.prompt(&sid, &long(&format!("turn{i}"), 200));
        }
        let t = Instant::now();
        let (msgs, resp) = compact(&mut c, &sid, json!({}));
        let took = t.elapsed();
        assert_eq!(resp["result"]["summarizedMessages"], 196, "{resp}");
        assert_eq!(compacted(&msgs).len(), 1);
        // The next turn is not slowed by it.
        let t = Instant::now();
        c.prompt(&sid, "after");
        figures.push((took, t.elapsed()));
    }
    println!("compaction of a 100-turn echo session (compact, next prompt): {figures:?}");
    assert!(
        figures
            .iter()
            .all(|(took, _)| *took < Duration::from_secs(2)),
        "{figures:?}"
    );
}

#[test]
fn a_slow_summary_blocks_no_other_session() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::slow(Duration::from_secs(3), Scripted::text("S")));
    let daemon = start(&fake, &[]);
    let mut a = daemon.client();
    a.new_session(json!({"agentAlias": "fake1", "sessionId": "slow"}));
    a.prompt("slow", "p1");
    a.prompt("slow", "p2");
    let id = a.send_call("session/compact", json!({"sessionId": "slow"}));
    assert!(
        fake.wait_requests(3, Duration::from_secs(10)),
        "no summary call"
    );
    let mut b = daemon.client();
    b.new_session(json!({"agentAlias": "echo", "sessionId": "other"}));
    let t = Instant::now();
    let (_, resp) = b.prompt("other", "still here");
    let took = t.elapsed();
    assert_eq!(resp["result"]["content"], "still here");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let (_, done) = a.collect_until(&id);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    println!("another session's echo turn during a 3 s summary call: {took:?}");
}

#[test]
fn a_cancelled_compaction_changes_nothing_and_chat_sessions_are_refused() {
    let fake = Fake::start();
    fake.push(Scripted::text("a1"));
    fake.push(Scripted::text("a2"));
    fake.push(Scripted::slow(Duration::from_secs(30), Scripted::text("S")));
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "cx"}));
    c.prompt("cx", "p1");
    c.prompt("cx", "p2");
    let id = c.send_call("session/compact", json!({"sessionId": "cx"}));
    assert!(
        fake.wait_requests(3, Duration::from_secs(10)),
        "no summary call"
    );
    let cancel = c.send_call("session/cancel", json!({"sessionId": "cx"}));
    let (mut seen, first) = c.collect_until(&cancel);
    assert_eq!(first["result"]["cancelled"], true, "{first}");
    let (more, done) = c.collect_until(&id);
    seen.extend(more);
    assert_eq!(done["result"]["outcome"], "cancelled", "{done}");
    assert_eq!(done["result"]["summarizedMessages"], 0);
    assert!(compacted(&seen).is_empty());
    assert_eq!(rows(&mut c, "cx").len(), 4);

    c.new_session(json!({"agentAlias": "echo", "sessionId": "ch", "mode": "chat"}));
    let e = c.error(
        "session/compact",
        json!({"sessionId": "ch", "mode": "chat"}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    let e = c.error(
        "session/compact",
        json!({"sessionId": "cx", "instructions": "x".repeat(20_000)}),
    );
    assert_eq!(code(&e), -32602, "{e}");
}

#[test]
fn a_rewind_goes_back_across_a_compaction() {
    let fake = Fake::start();
    for r in ["a1", "a2", "S", "a3", "a3b", "a2b"] {
        fake.push(Scripted::text(r));
    }
    let daemon = start(&fake, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "fake1", "sessionId": "rw"}));
    c.prompt("rw", "p1");
    let (_, t2) = c.prompt("rw", "p2");
    let (_, done) = compact(&mut c, "rw", json!({}));
    assert_eq!(done["result"]["summarizedMessages"], 2, "{done}");
    let (_, t3) = c.prompt("rw", "p3");
    let summary = pair("user", &format!("{SUMMARY_PREFIX}S"));
    let after_compaction = [summary, pair("user", "p2"), pair("assistant", "a2")];
    assert_eq!(sent(&fake, 3)[..3], after_compaction);

    // Back to just before p3: the compacted context.
    let r = c.result(
        "session/rewind",
        json!({"sessionId": "rw", "turnId": t3["result"]["turnId"], "restoreFiles": false}),
    );
    assert_eq!(r["prompt"], "p3", "{r}");
    c.prompt("rw", "p3b");
    assert_eq!(sent(&fake, 4)[..3], after_compaction);
    assert_eq!(sent(&fake, 4).len(), 4);

    // Back to just before p2: before the compaction, whose row is rewound with the rest.
    c.result(
        "session/rewind",
        json!({"sessionId": "rw", "turnId": t2["result"]["turnId"], "restoreFiles": false}),
    );
    c.prompt("rw", "p2b");
    assert_eq!(
        sent(&fake, 5),
        [
            pair("user", "p1"),
            pair("assistant", "a1"),
            pair("user", "p2b")
        ]
    );
    let roles: Vec<String> = rows(&mut c, "rw").into_iter().map(|r| r.0).collect();
    assert_eq!(roles, ["user", "assistant", "rewind", "user", "assistant"]);
}
