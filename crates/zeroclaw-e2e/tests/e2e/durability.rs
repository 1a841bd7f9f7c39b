//! Durable history over the real binary (SPEC §7.1 persistence rules, §7.3; DURABILITY.md):
//! crash recovery, trim, storage failures, kill/delete/close/resume, rehydration, and rows
//! of other interaction surfaces.

use crate::checkpointed;
use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use checkpointed::wait_checkpointed;
use common::{Conn, Fake, TestDaemon, code, roles, session_config, streamed_text, updates};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

const HOOKS: &[(&str, &str)] = &[("ZEROCLAW_TEST_HOOKS", "1")];

fn start(fake: &Fake, extra: &str, env: &[(&str, &str)]) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), extra);
    TestDaemon::start_env(&[], env, |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

/// `n` words `<prefix><i> ` streamed `delay` apart, and their concatenation.
fn slow_words(prefix: &str, n: usize, delay: Duration) -> (Scripted, String) {
    let chunks: Vec<String> = (0..n).map(|i| format!("{prefix}{i} ")).collect();
    let full = chunks.concat();
    (Scripted::chunks(chunks, delay), full)
}

/// Sends a prompt and reads until `words` words have streamed; returns the text seen.
fn prompt_until_words(c: &mut Conn, sid: &str, prompt: &str, words: usize) -> String {
    c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": prompt}),
    );
    let mut seen = Vec::new();
    while streamed_text(&seen).split_whitespace().count() < words {
        seen.push(c.recv());
    }
    streamed_text(&seen)
}

/// The `messages` of the provider request `i`, and the whole body as text.
fn request(fake: &Fake, i: usize) -> (Vec<Value>, String) {
    let body = fake.requests()[i].clone();
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    (msgs, body.to_string())
}

fn role_content(msgs: &[Value]) -> Vec<(String, String)> {
    msgs.iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("?").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_string(), content.to_string())
}

fn db(daemon: &TestDaemon) -> rusqlite::Connection {
    rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap()
}

/// Every column of every row belonging to session `id` (all modes), as text.
fn dump(conn: &rusqlite::Connection, id: &str) -> Vec<String> {
    let mut out = Vec::new();
    let pk_of = "(SELECT pk FROM sessions WHERE session_id = ?1)";
    for sql in [
        "SELECT * FROM sessions WHERE session_id = ?1".to_string(),
        format!("SELECT * FROM transcript WHERE session IN {pk_of} ORDER BY seq"),
        format!("SELECT * FROM checkpoints WHERE session IN {pk_of} ORDER BY turn_id"),
        format!("SELECT * FROM checkpoint_events WHERE session IN {pk_of} ORDER BY turn_id, n"),
        format!("SELECT * FROM snapshots WHERE session IN {pk_of} ORDER BY id"),
    ] {
        let mut stmt = conn.prepare(&sql).unwrap();
        let cols = stmt.column_count();
        let mut rows = stmt.query([id]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let vals: Vec<String> = (0..cols)
                .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                .collect();
            out.push(format!("{sql}: {}", vals.join("|")));
        }
    }
    out
}

/// Creates (`on`) or removes a failure trigger file of the test hooks and waits until the
/// daemon has switched the injection (it acknowledges with `<trigger>.active`).
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
fn sigkill_mid_stream_twice_recovers_partial_text_once_with_one_marker() {
    let fake = Fake::start();
    let (first, full1) = slow_words("a", 60, Duration::from_millis(100));
    fake.push(first);
    let mut daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "crash"}));

    let received = prompt_until_words(&mut c, "crash", "first", 4);
    wait_checkpointed(&daemon, "crash", &received);
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let rows = roles(&c.messages("crash"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0], pair("user", "first"));
    assert_eq!(rows[1].0, "assistant");
    let partial1 = rows[1].1.clone();
    assert!(
        partial1.starts_with(&received),
        "{partial1:?} vs {received:?}"
    );
    assert!(full1.starts_with(&partial1) && partial1.len() < full1.len());
    assert_eq!(rows[2], pair("interruption", "[interrupted]"));

    // Second crash, during the turn of a session rehydrated by the prompt itself.
    let (second, full2) = slow_words("b", 60, Duration::from_millis(100));
    fake.push(second);
    let before = fake.requests().len();
    let received = prompt_until_words(&mut c, "crash", "second", 4);
    let (sent, body) = request(&fake, before);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", "first"),
            pair("assistant", &partial1),
            pair("user", "second")
        ]
    );
    assert!(!body.contains("[interrupted]"), "{body}");
    wait_checkpointed(&daemon, "crash", &received);
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let rows = roles(&c.messages("crash"));
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert_eq!(
        rows[..3],
        [
            pair("user", "first"),
            pair("assistant", &partial1),
            pair("interruption", "[interrupted]")
        ]
    );
    assert_eq!(rows[3], pair("user", "second"));
    let partial2 = rows[4].1.clone();
    assert!(
        partial2.starts_with(&received) && full2.starts_with(&partial2),
        "{partial2:?}"
    );
    assert_eq!(rows[5], pair("interruption", "[interrupted]"));

    // Recovering again (another start) adds nothing.
    daemon.signal(libc::SIGTERM);
    assert!(
        daemon
            .wait_exit(Duration::from_secs(10))
            .is_some_and(|s| s.success())
    );
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    assert_eq!(roles(&c.messages("crash")).len(), 6);

    // The next turn: the provider gets both partial answers, never a marker.
    fake.push(Scripted::text("done"));
    let before = fake.requests().len();
    let (_, resp) = c.prompt("crash", "third");
    assert_eq!(resp["result"]["outcome"], "completed");
    let (sent, body) = request(&fake, before);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", "first"),
            pair("assistant", &partial1),
            pair("user", "second"),
            pair("assistant", &partial2),
            pair("user", "third"),
        ]
    );
    assert!(!body.contains("[interrupted]"));
    let all = c.messages("crash");
    let seqs: Vec<i64> = all.iter().map(|m| m["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<i64>>());
}

/// A SIGKILL while a long answer's end is handed to the store piece by piece (each piece
/// its own transaction, 256 KiB at most): the answer streams in 64 KiB deltas with no
/// delay, faster than the checkpoint's 200 ms flushes, so most of it is written after the
/// step ends, and the kill comes as soon as the client has read the last delta. Whatever
/// point of the hand-over the kill lands on, the recovered answer is a prefix of the
/// answer with no gap and nothing doubled, followed by the interruption marker; or the
/// turn is whole, if it committed first. Three rounds kill after 1, 3 and 5 committed
/// pieces (seen through the file); measured: 256 KiB to 3 MiB kept of 4 MiB.
#[test]
fn sigkill_while_a_long_answer_is_handed_over_in_pieces_keeps_a_prefix() {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: usize = 64;
    let fake = Fake::start();
    let chunks: Vec<String> = (0..CHUNKS)
        .map(|i| {
            let mut chunk = format!("<{i:03}>");
            chunk.push_str(&"abcdefgh".repeat(CHUNK / 8)[chunk.len()..]);
            chunk
        })
        .collect();
    let full = chunks.concat();
    let mut daemon = start(&fake, "", &[]);
    let mut outcomes = Vec::new();
    for round in 0..3 {
        let sid = format!("handover{round}");
        fake.push(Scripted::chunks(chunks.clone(), Duration::ZERO));
        let mut c = daemon.client();
        c.new_session(json!({"agentAlias": "default", "sessionId": sid}));
        c.send_call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": "long"}),
        );
        let mut streamed = 0;
        while streamed < full.len() {
            let update = c.recv();
            if update["params"]["type"] == "agent_message_chunk" {
                streamed += update["params"]["text"].as_str().unwrap_or("").len();
            }
        }
        // Kill once the hand-over has committed its first 1, 3 or 5 pieces, or once the
        // turn has committed whole, if that was quicker than the polling.
        let pieces = 1 + 2 * round;
        let file = db(&daemon);
        let count = |sql: &str| -> usize {
            file.query_row(
                &format!("{sql} AND session = (SELECT pk FROM sessions WHERE session_id = ?1)"),
                [&sid],
                |r| r.get(0),
            )
            .unwrap()
        };
        let waited = Instant::now();
        let seen = loop {
            if count("SELECT count(*) FROM checkpoint_events WHERE kind = 'text'") >= pieces {
                break true;
            }
            if count("SELECT count(*) FROM transcript WHERE role = 'assistant'") > 0 {
                break false;
            }
            assert!(
                waited.elapsed() < Duration::from_secs(20),
                "round {round}: stuck"
            );
            std::thread::sleep(Duration::from_micros(200));
        };
        daemon.kill_hard();
        drop(file);
        drop(c);
        daemon.spawn_env(&[], &[]);
        let mut c = daemon.client();
        let rows = roles(&c.messages(&sid));
        assert_eq!(rows[0], pair("user", "long"), "{rows:?}");
        // The whole texts, from the file (the wire cuts rows at 1 MiB).
        let texts: Vec<(String, Vec<u8>)> = db(&daemon)
            .prepare(
                "SELECT role, CAST(content AS BLOB) FROM transcript WHERE session = \
                 (SELECT pk FROM sessions WHERE session_id = ?1) ORDER BY seq",
            )
            .unwrap()
            .query_map([&sid], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let roles_only: Vec<&str> = texts.iter().map(|(role, _)| role.as_str()).collect();
        let answer = texts
            .iter()
            .find(|(role, _)| role == "assistant")
            .map(|(_, text)| text.as_slice())
            .unwrap_or_default();
        assert!(
            full.as_bytes().starts_with(answer),
            "round {round}: the recovered answer ({} bytes) is not a prefix of the answer",
            answer.len()
        );
        match roles_only.as_slice() {
            ["user", "assistant"] => assert_eq!(answer.len(), full.len(), "round {round}"),
            ["user", "assistant", "interruption"] | ["user", "interruption"] => {
                assert!(answer.len() < full.len(), "round {round}")
            }
            other => panic!("round {round}: rows {other:?}"),
        }
        // What was seen committed was kept.
        assert!(
            !seen || !answer.is_empty(),
            "round {round}: nothing kept after {pieces} pieces were seen committed"
        );
        outcomes.push(answer.len());
        // The session goes on from what was kept.
        fake.push(Scripted::text("next"));
        let (_, resp) = c.prompt(&sid, "after");
        assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    }
    eprintln!(
        "recovered answer lengths after the kill: {outcomes:?} of {}",
        full.len()
    );
}

const TINY: &str = r#"[agents.tiny]
provider = "fake"
max_context_tokens = 30
"#;

/// 40 characters: two of these turns overflow a 30-token budget, one does not.
fn words(tag: &str) -> String {
    format!("{tag}-{}", "x".repeat(40 - tag.len() - 1))
}

#[test]
fn trim_sends_history_trimmed_after_the_snapshot_commits_and_keeps_the_transcript() {
    let fake = Fake::start();
    for i in 1..=4 {
        fake.push(Scripted::text(&words(&format!("a{i}"))));
    }
    let mut daemon = start(&fake, TINY, &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "tiny", "sessionId": "t"}));
    let (msgs, _) = c.prompt("t", &words("p1"));
    assert!(
        !updates(&msgs)
            .iter()
            .any(|u| u["type"] == "history_trimmed")
    );

    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": "t", "prompt": words("p2")}),
    );
    let mut kinds = Vec::new();
    loop {
        let msg = c.recv();
        if msg["id"] == id {
            break;
        }
        let u = &msg["params"];
        kinds.push(u["type"].as_str().unwrap_or("?").to_string());
        if u["type"] == "history_trimmed" {
            assert_eq!(u["droppedMessages"], 2);
            assert_eq!(u["keptMessages"], 2);
            assert_eq!(u["checkpointSeq"], 4);
            assert_eq!(u["reason"], "max_context_tokens");
            // Sent only after the snapshot is on disk.
            let covers: i64 = db(&daemon)
                .query_row("SELECT covers_seq FROM snapshots", [], |r| r.get(0))
                .unwrap();
            assert_eq!(covers, 4);
        }
    }
    let n = kinds.len();
    assert_eq!(kinds[n - 2..], ["history_trimmed", "turn_complete"]);

    c.prompt("t", &words("p3"));
    let (sent, _) = request(&fake, 2);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", &words("p2")),
            pair("assistant", &words("a2")),
            pair("user", &words("p3"))
        ]
    );
    // The raw transcript is untouched by trimming.
    let page = c.result("session/messages", json!({"sessionId": "t"}));
    assert_eq!(page["total"], 6);
    assert_eq!(page["messages"][0]["content"], words("p1"));

    // After a restart the context comes from the latest snapshot (turn 3 trimmed turn 2).
    daemon.kill_hard();
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    c.prompt("t", &words("p4"));
    let (sent, _) = request(&fake, 3);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", &words("p3")),
            pair("assistant", &words("a3")),
            pair("user", &words("p4"))
        ]
    );
}

#[test]
fn a_failed_snapshot_write_sends_no_history_trimmed() {
    let fake = Fake::start();
    for i in 1..=3 {
        fake.push(Scripted::text(&words(&format!("a{i}"))));
    }
    let daemon = start(&fake, TINY, HOOKS);
    let trigger = daemon.data_dir().join("test-fail-snapshots");
    set_trigger(&trigger, true);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "tiny", "sessionId": "f"}));
    c.prompt("f", &words("p1"));
    let (msgs, resp) = c.prompt("f", &words("p2"));
    assert_eq!(resp["result"]["outcome"], "completed");
    assert!(
        !updates(&msgs)
            .iter()
            .any(|u| u["type"] == "history_trimmed"),
        "{msgs:?}"
    );
    let snapshots: i64 = db(&daemon)
        .query_row("SELECT COUNT(*) FROM snapshots", [], |r| r.get(0))
        .unwrap();
    assert_eq!(snapshots, 0);

    set_trigger(&trigger, false);
    let (msgs, _) = c.prompt("f", &words("p3"));
    let trimmed: Vec<Value> = updates(&msgs)
        .into_iter()
        .filter(|u| u["type"] == "history_trimmed")
        .collect();
    assert_eq!(trimmed.len(), 1);
    assert_eq!(
        trimmed[0]["droppedMessages"], 4,
        "the untrimmed context was kept"
    );
    assert_eq!(trimmed[0]["checkpointSeq"], 6);
    assert_eq!(c.messages("f").len(), 6);
}

#[test]
fn kill_and_delete_on_failing_storage_answer_internal_error_and_keep_the_session() {
    let fake = Fake::start();
    let daemon = start(&fake, "", HOOKS);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "k"}));
    c.prompt("k", "keep me");
    let trigger = daemon.data_dir().join("test-fail-writes");
    set_trigger(&trigger, true);
    assert_eq!(
        code(&c.error("session/kill", json!({"sessionId": "k"}))),
        -32603
    );
    assert_eq!(
        code(&c.error("session/delete", json!({"sessionId": "k"}))),
        -32603
    );
    let status = c.result("status", json!({}));
    assert_eq!(
        status["sessionIds"],
        json!(["k"]),
        "the live session survives"
    );
    assert_eq!(c.messages("k").len(), 2, "reads still work");

    set_trigger(&trigger, false);
    let (_, resp) = c.prompt("k", "still alive");
    assert_eq!(resp["result"]["outcome"], "completed");
    assert_eq!(
        c.result("session/kill", json!({"sessionId": "k"}))["killed"],
        true
    );
    assert_eq!(c.result("status", json!({}))["sessionIds"], json!([]));
    // Tombstoned: readable, never resumed or rehydrated, not listed.
    assert_eq!(c.messages("k").len(), 4);
    let e = c.error(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "k"}),
    );
    assert_eq!(code(&e), -32000);
    let e = c.error("session/prompt", json!({"sessionId": "k", "prompt": "x"}));
    assert_eq!(code(&e), -32000);
    let list = c.result("session/list", json!({}));
    assert_eq!(list["sessions"], json!([]));
    // Delete removes the tombstoned row too.
    assert_eq!(
        c.result("session/delete", json!({"sessionId": "k"}))["deleted"],
        true
    );
    assert_eq!(
        code(&c.error("session/messages", json!({"sessionId": "k"}))),
        -32000
    );
}

#[test]
fn kill_of_a_running_turn_cancels_it_and_keeps_what_it_said() {
    let fake = Fake::start();
    let (slow, _) = slow_words("k", 60, Duration::from_millis(100));
    fake.push(slow);
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "run"}));
    let seen = prompt_until_words(&mut c, "run", "go", 3);
    let mut other = daemon.client();
    let started = Instant::now();
    assert_eq!(
        other.result("session/kill", json!({"sessionId": "run"}))["killed"],
        true
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let rows = roles(&other.messages("run"));
    assert_eq!(rows[0], pair("user", "go"));
    assert_eq!(rows[1].0, "assistant");
    assert!(rows[1].1.starts_with(&seen));
    assert!(!rows.iter().any(|r| r.0 == "interruption"));
}

#[test]
fn delete_leaves_the_same_id_chat_session_alone_and_chat_is_not_rehydrated() {
    let fake = Fake::start();
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "dup"}));
    c.new_session(json!({"agentAlias": "echo", "sessionId": "dup", "mode": "chat"}));
    c.prompt("dup", "to acp");
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": "dup", "mode": "chat", "prompt": "to chat"}),
    );
    let (_, resp) = c.collect_until(&id);
    assert_eq!(resp["result"]["content"], "to chat");
    let status = c.result("status", json!({}));
    assert_eq!(
        (
            status["activeSessions"].clone(),
            status["sessionIds"].clone()
        ),
        (json!(2), json!(["dup"]))
    );

    assert_eq!(
        c.result("session/delete", json!({"sessionId": "dup"}))["deleted"],
        true
    );
    assert_eq!(c.result("status", json!({}))["activeSessions"], 1);
    let e = c.error(
        "session/messages",
        json!({"sessionId": "dup", "mode": "acp"}),
    );
    assert_eq!(code(&e), -32000);
    // Without a mode the ACP session is meant (SPEC §17.1), never the chat one of the same
    // id: it is deleted, so there is nothing there.
    assert_eq!(
        code(&c.error("session/messages", json!({"sessionId": "dup"}))),
        -32000
    );
    assert_eq!(
        roles(&c.messages_in("dup", "chat")),
        [pair("user", "to chat"), pair("assistant", "to chat")]
    );

    c.result("session/close", json!({"sessionId": "dup", "mode": "chat"}));
    let e = c.error(
        "session/prompt",
        json!({"sessionId": "dup", "mode": "chat", "prompt": "x"}),
    );
    assert_eq!(
        code(&e),
        -32000,
        "chat sessions are not rehydrated by a prompt"
    );
    let r = c.new_session(json!({"agentAlias": "echo", "sessionId": "dup", "mode": "chat"}));
    assert_eq!(
        (r["resumed"].clone(), r["messageCount"].clone()),
        (json!(true), json!(2))
    );
}

#[test]
fn close_keeps_history_and_prompt_or_new_bring_the_session_back() {
    let fake = Fake::start();
    fake.push(Scripted::text("uno"));
    fake.push(Scripted::text("dos"));
    let daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "c"}));
    c.prompt("c", "one");
    assert_eq!(
        c.result("session/close", json!({"sessionId": "c"}))["closed"],
        true
    );
    assert_eq!(c.result("status", json!({}))["sessionIds"], json!([]));
    assert_eq!(
        code(&c.error("session/close", json!({"sessionId": "c"}))),
        -32000
    );
    // A prompt rehydrates it with its history.
    let (_, resp) = c.prompt("c", "two");
    assert_eq!(resp["result"]["content"], "dos");
    let (sent, _) = request(&fake, 1);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", "one"),
            pair("assistant", "uno"),
            pair("user", "two")
        ]
    );
    assert_eq!(c.result("status", json!({}))["sessionIds"], json!(["c"]));
    c.result("session/close", json!({"sessionId": "c"}));
    let r = c.new_session(json!({"agentAlias": "default", "sessionId": "c"}));
    assert_eq!(
        (r["resumed"].clone(), r["messageCount"].clone()),
        (json!(true), json!(4))
    );
    let e = c.error(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "c2x", "cwd": "no/such/dir"}),
    );
    assert_eq!(code(&e), -32602);
}

#[test]
fn shutdown_mid_turn_persists_the_cancelled_turn() {
    let fake = Fake::start();
    let (slow, _) = slow_words("s", 60, Duration::from_millis(100));
    fake.push(slow);
    let mut daemon = start(&fake, "", &[]);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "sd"}));
    let seen = prompt_until_words(&mut c, "sd", "go", 3);
    daemon.client().result("daemon/shutdown", json!({}));
    let status = daemon.wait_exit(Duration::from_secs(10)).expect("exited");
    assert!(status.success());
    drop(c);
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let rows = roles(&c.messages("sd"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows[1].1.starts_with(&seen));
}

fn insert_foreign(db_path: &Path, id: &str, surface: &str) {
    let conn = rusqlite::Connection::open(db_path).unwrap();
    conn.execute(
        "INSERT INTO sessions (mode, session_id, agent_alias, owner, cwd, interaction_surface, \
         created_at, last_activity) VALUES ('acp', ?1, 'default', 'operator', NULL, ?2, 1, 1)",
        rusqlite::params![id, surface],
    )
    .unwrap();
    let pk: i64 = conn
        .query_row("SELECT pk FROM sessions WHERE session_id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    conn.execute(
        "INSERT INTO transcript (session, seq, turn_id, role, content, created_at) \
         VALUES (?1, 1, 't1', 'user', 'hello', 1)",
        [pk],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO checkpoints (session, turn_id, status, started_seq, created_at, updated_at) \
         VALUES (?1, 't1', 'open', 1, 1, 1)",
        [pk],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO checkpoint_events (session, turn_id, n, event_key, kind, payload, updated_at) \
         VALUES (?1, 't1', 0, 'text:0', 'text', '{\"kind\":\"text\",\"segment\":0,\"text\":\"half\"}', 1)",
        [pk],
    )
    .unwrap();
}

#[test]
fn rows_of_another_interaction_surface_are_left_untouched() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "", &[]);
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(Duration::from_secs(10)).is_some());
    let path = daemon.data_dir().join("zeroclaw.db");
    insert_foreign(&path, "tg", "telegram");
    insert_foreign(&path, "rp", "rpc");
    let before = dump(&db(&daemon), "tg");
    assert_eq!(before.len(), 4);

    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    // The rpc row was recovered at startup; the telegram one was not touched.
    assert_eq!(
        roles(&c.messages("rp")),
        [
            pair("user", "hello"),
            pair("assistant", "half"),
            pair("interruption", "[interrupted]")
        ]
    );
    let e = c.error("session/prompt", json!({"sessionId": "tg", "prompt": "x"}));
    assert_eq!(code(&e), -32000);
    let e = c.error(
        "session/new",
        json!({"agentAlias": "default", "sessionId": "tg"}),
    );
    assert_eq!(code(&e), -32000);
    assert_eq!(roles(&c.messages("tg")), [pair("user", "hello")]);
    let list = c.result("session/list", json!({}));
    let tg = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "tg")
        .cloned()
        .unwrap();
    assert_eq!(tg["interactionSurface"], "telegram");
    assert_eq!(dump(&db(&daemon), "tg"), before);
}

#[test]
fn a_prompt_that_cannot_be_stored_is_refused_and_leaves_no_trace() {
    let fake = Fake::start();
    fake.push(Scripted::text("one"));
    let daemon = start(&fake, "", HOOKS);
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "default", "sessionId": "w"}));
    c.prompt("w", "first");
    let trigger = daemon.data_dir().join("test-fail-writes");
    set_trigger(&trigger, true);
    let (_, resp) = c.prompt("w", "lost");
    assert_eq!(code(&resp["error"]), -32603, "{resp}");
    set_trigger(&trigger, false);
    assert_eq!(c.messages("w").len(), 2);
    fake.push(Scripted::text("two"));
    let before = fake.requests().len();
    let (_, resp) = c.prompt("w", "second");
    assert_eq!(resp["result"]["content"], "two");
    let (sent, _) = request(&fake, before);
    assert_eq!(
        role_content(&sent),
        [
            pair("user", "first"),
            pair("assistant", "one"),
            pair("user", "second")
        ]
    );
    assert_eq!(c.messages("w").len(), 4);
}

/// Client A has a slow turn running and five more prompts queued on one session when
/// client B deletes it, starts a session under the same id and prompts it. Nothing of the
/// old life may reach the new one: not the turn that was running (its end is written after
/// the delete), not a queued prompt (it must not run on the new session), in either mode,
/// nor after a kill -9 and a restart. Every pipelined prompt is answered.
#[test]
fn a_session_deleted_while_another_client_has_prompts_queued_starts_its_new_life_empty() {
    let fake = Fake::start();
    let mut daemon = start(&fake, "", &[]);
    for mode in ["acp", "chat"] {
        let sid = format!("twice-{mode}");
        let (slow, _) = slow_words("old", 200, Duration::from_millis(20));
        fake.push(slow);
        let mut a = daemon.client();
        let mut b = daemon.client();
        a.new_session(json!({"agentAlias": "default", "sessionId": sid, "mode": mode}));
        let queued: Vec<Value> = (0..6)
            .map(|k| {
                a.send_call(
                    "session/prompt",
                    json!({"sessionId": sid, "mode": mode, "prompt": format!("old prompt {k}")}),
                )
            })
            .collect();
        // The first prompt's answer is streaming: the turn runs, the rest are queued.
        let mut seen = Vec::new();
        while streamed_text(&seen).split_whitespace().count() < 3 {
            seen.push(a.recv());
        }

        let deleted = b.result("session/delete", json!({"sessionId": sid, "mode": mode}));
        assert_eq!(deleted["deleted"], true);
        let fresh = b.new_session(json!({"agentAlias": "echo", "sessionId": sid, "mode": mode}));
        assert_eq!(
            (fresh["resumed"].clone(), fresh["messageCount"].clone()),
            (json!(false), json!(0)),
            "{mode}: {fresh}"
        );
        let id = b.send_call(
            "session/prompt",
            json!({"sessionId": sid, "mode": mode, "prompt": "new life"}),
        );
        let (_, answer) = b.collect_until(&id);
        assert_eq!(answer["result"]["content"], "new life", "{mode}: {answer}");

        // Answers may come in any order (JSON-RPC): read until each prompt has its own.
        let mut answered = Vec::new();
        while answered.len() < queued.len() {
            let msg = a.recv();
            if msg.get("method").is_none() && queued.contains(&msg["id"]) {
                answered.push(msg);
            }
        }
        for resp in &answered {
            let outcome = resp["result"]["outcome"].as_str();
            assert!(
                resp.get("error").is_some() || outcome == Some("cancelled"),
                "{mode}: an old prompt ran after the delete: {resp}"
            );
        }
        let expected = [pair("user", "new life"), pair("assistant", "new life")];
        assert_eq!(roles(&b.messages_in(&sid, mode)), expected, "{mode}");
    }

    daemon.kill_hard();
    daemon.spawn_env(&[], &[]);
    let mut c = daemon.client();
    let expected = [pair("user", "new life"), pair("assistant", "new life")];
    assert_eq!(roles(&c.messages_in("twice-acp", "acp")), expected);
    let r = c.new_session(json!({"agentAlias": "echo", "sessionId": "twice-chat", "mode": "chat"}));
    assert_eq!(r["messageCount"], 2, "{r}");
    assert_eq!(roles(&c.messages_in("twice-chat", "chat")), expected);
}
