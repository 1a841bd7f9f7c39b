//! Session streams over the real binary (SPEC §14): numbered updates, subscribers, reattach
//! with replay after a disconnect, approvals answered by whoever watches, limits and
//! ownership.

use crate::common;

use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code, session_config};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake, extra: &[&str]) -> TestDaemon {
    let config = session_config(&fake.server.base_url(), "");
    TestDaemon::start_with(extra, |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    })
}

fn new_session(c: &mut Conn, agent: &str) -> String {
    let r = c.new_session(json!({"agentAlias": agent}));
    r["sessionId"].as_str().unwrap().to_string()
}

/// Subscribes and returns the subscribe answer's result (updates that raced ahead of the
/// answer are impossible: replay follows the answer).
fn subscribe(c: &mut Conn, params: Value) -> Value {
    let id = c.send_call("session/subscribe", params);
    let resp = c.recv();
    assert_eq!(resp["id"], id, "the subscribe answer comes first: {resp}");
    resp["result"].clone()
}

/// Reads `session/update` params until (and including) the turn's `turn_complete`.
fn read_turn(c: &mut Conn) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let msg = c.recv();
        if msg["method"] != "session/update" {
            continue;
        }
        let done = msg["params"]["type"] == "turn_complete";
        out.push(msg["params"].clone());
        if done {
            return out;
        }
    }
}

/// An update as first sent (without the replay mark).
fn unmarked(mut update: Value) -> Value {
    if let Some(map) = update.as_object_mut() {
        map.remove("replay");
    }
    update
}

fn echo_prompt(words: usize) -> String {
    (0..words)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tiny deterministic generator for the cut points.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn every_update_is_numbered_per_turn_and_two_subscribers_see_the_same_stream() {
    let daemon = TestDaemon::start();
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut watcher = daemon.client();
    let sub = subscribe(&mut watcher, json!({"sessionId": sid}));
    assert_eq!(
        sub,
        json!({"sessionId": sid, "subscribed": true, "activeTurnId": null,
               "lastTranscriptSeq": 0, "pendingApprovals": []})
    );
    for round in 0..2 {
        let (msgs, resp) = a.prompt(&sid, &echo_prompt(40));
        let mine = common::updates(&msgs);
        let theirs = read_turn(&mut watcher);
        assert_eq!(mine, theirs, "round {round}");
        let turn = resp["result"]["turnId"].clone();
        for (i, u) in mine.iter().enumerate() {
            assert_eq!(u["turnId"], turn);
            assert_eq!(u["eventSeq"], json!(i + 1));
        }
        assert_eq!(mine.last().unwrap()["type"], "turn_complete");
    }
}

#[test]
fn a_client_cut_off_mid_turn_resumes_from_its_cursor_without_gap_or_duplicate() {
    let daemon = TestDaemon::start();
    let mut setup = daemon.client();
    let sid = new_session(&mut setup, "default");
    let mut reference = daemon.client();
    subscribe(&mut reference, json!({"sessionId": sid}));
    let prompt = echo_prompt(300);
    // One uninterrupted turn first, to learn how many updates such a turn has.
    let (msgs, _) = setup.prompt(&sid, &prompt);
    let total = common::updates(&msgs).len() as u64;
    assert_eq!(read_turn(&mut reference).len() as u64, total);
    assert!(total > 10, "a streaming turn: {total} updates");

    let mut rng = Lcg(0x5eed);
    for round in 0..50 {
        let cut = 1 + rng.below(total - 1);
        let mut first = daemon.client();
        first.send_call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": prompt}),
        );
        let mut seen = Vec::new();
        while (seen.len() as u64) < cut {
            let msg = first.recv();
            if msg["method"] == "session/update" {
                seen.push(msg["params"].clone());
            }
        }
        drop(first);
        let last = seen.last().unwrap().clone();
        let mut second = daemon.client();
        let sub = subscribe(
            &mut second,
            json!({"sessionId": sid, "turnId": last["turnId"], "afterEventSeq": last["eventSeq"]}),
        );
        assert_eq!(sub["subscribed"], true);
        let rest = read_turn(&mut second);
        assert!(
            rest.iter().all(|u| u["type"] != "replay_gap"),
            "round {round}"
        );
        seen.extend(rest.into_iter().map(unmarked));
        let whole = read_turn(&mut reference);
        assert_eq!(seen, whole, "round {round}: cut after {cut} of {total}");
    }
}

/// A daemon whose `default` agent asks approval for one bash call, then answers.
fn approval_daemon(fake: &Fake) -> TestDaemon {
    fake.push(Scripted::tool_call(
        "tc_1",
        "bash",
        json!({"command": "echo approved-run"}),
    ));
    fake.push(Scripted::text("finished"));
    start(fake, &[])
}

#[test]
fn an_approval_asked_while_nobody_watches_is_answered_after_subscribing() {
    let fake = Fake::start();
    let daemon = approval_daemon(&fake);
    let mut gone = daemon.client();
    let sid = new_session(&mut gone, "default");
    gone.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    drop(gone);

    // Poll (with a deadline) until the approval is pending, from a probe connection.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut probe = daemon.client();
    let pending = loop {
        let sub = subscribe(&mut probe, json!({"sessionId": sid}));
        probe.result("session/unsubscribe", json!({"sessionId": sid}));
        if let Some(id) = sub["pendingApprovals"][0].as_str() {
            assert!(sub["activeTurnId"].is_string(), "{sub}");
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "no approval was asked");
        std::thread::sleep(Duration::from_millis(20));
    };

    let mut back = daemon.client();
    let sub = subscribe(&mut back, json!({"sessionId": sid}));
    assert_eq!(sub["pendingApprovals"], json!([pending]));
    let mut replayed = Vec::new();
    loop {
        let msg = back.recv();
        let u = &msg["params"];
        replayed.push(u.clone());
        if u["type"] == "approval_request" {
            assert_eq!(u["requestId"], json!(pending));
            assert_eq!(u["replay"], true);
            break;
        }
    }
    assert!(replayed.iter().all(|u| u["replay"] == true));
    let ack = back.result(
        "session/approve",
        json!({"sessionId": sid, "requestId": pending, "decision": "allow_once"}),
    );
    assert_eq!(ack["acknowledged"], true);
    let rest = read_turn(&mut back);
    let resolved = rest
        .iter()
        .find(|u| u["type"] == "approval_resolved")
        .expect("approval_resolved");
    assert_eq!(
        (resolved["decision"].clone(), resolved["reason"].clone()),
        (json!("allow_once"), json!("answered"))
    );
    let result = rest.iter().find(|u| u["type"] == "tool_result").unwrap();
    assert!(
        result["rawOutput"]
            .as_str()
            .unwrap()
            .contains("approved-run")
    );
    assert_eq!(rest.last().unwrap()["outcome"], "completed");
}

#[test]
fn two_answers_race_one_wins_and_every_subscriber_hears_the_resolution() {
    let fake = Fake::start();
    let daemon = approval_daemon(&fake);
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut b = daemon.client();
    subscribe(&mut b, json!({"sessionId": sid}));
    let prompt_id = a.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    let rid = approval_id(&mut a);
    assert_eq!(approval_id(&mut b), rid);
    let params = json!({"sessionId": sid, "requestId": rid, "decision": "reject"});
    let id_a = a.send_call("session/approve", params.clone());
    let id_b = b.send_call(
        "session/approve",
        json!({"sessionId": sid, "requestId": rid, "decision": "allow_once"}),
    );
    let (seen_a, answer_a) = a.collect_until(&id_a);
    let (seen_b, answer_b) = b.collect_until(&id_b);
    let wins = [&answer_a, &answer_b]
        .iter()
        .filter(|r| r.get("result").is_some())
        .count();
    assert_eq!(wins, 1, "{answer_a} {answer_b}");
    let loser = if answer_a.get("error").is_some() {
        &answer_a
    } else {
        &answer_b
    };
    assert_eq!(code(&loser["error"]), -32602, "{loser}");
    let (rest_a, done) = a.collect_until(&prompt_id);
    assert_eq!(done["result"]["outcome"], "completed");
    let mut all_a = common::updates(&seen_a);
    all_a.extend(common::updates(&rest_a));
    let mut all_b = common::updates(&seen_b);
    all_b.extend(read_turn(&mut b));
    for updates in [&all_a, &all_b] {
        let resolved: Vec<&Value> = updates
            .iter()
            .filter(|u| u["type"] == "approval_resolved")
            .collect();
        assert_eq!(resolved.len(), 1, "{updates:?}");
        assert_eq!(resolved[0]["reason"], "answered");
    }
}

#[test]
fn a_stalled_subscriber_is_disconnected_and_slows_nobody() {
    let daemon = TestDaemon::start_env(&[], &[("ZEROCLAW_TEST_STALL_TIMEOUT_MS", "3000")], |_| {});
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    // Three turns of about 7.7 MB of updates each: more than a stalled peer's queue holds.
    let word = "x".repeat(1000);
    let prompt = vec![word.as_str(); 7000].join(" ");
    let three_turns = |a: &mut Conn| {
        let started = Instant::now();
        let mut all = Vec::new();
        for _ in 0..3 {
            let (msgs, resp) = a.prompt(&sid, &prompt);
            assert_eq!(resp["result"]["outcome"], "completed");
            all.extend(common::updates(&msgs));
        }
        (started.elapsed(), all)
    };
    let (alone, _) = three_turns(&mut a);

    let mut stalled = daemon.client();
    subscribe(&mut stalled, json!({"sessionId": sid}));
    let mut other = daemon.client();
    subscribe(&mut other, json!({"sessionId": sid}));
    let other = std::thread::spawn(move || {
        let turns: Vec<Value> = (0..3).flat_map(|_| read_turn(&mut other)).collect();
        (other, turns)
    });
    let (with_stalled, mine) = three_turns(&mut a);
    let (_other, theirs) = other.join().unwrap();
    assert_eq!(theirs, mine, "the other subscriber got every update");
    eprintln!("three turns alone {alone:?}, with a stalled subscriber {with_stalled:?}");
    assert!(
        with_stalled < alone * 3 + Duration::from_secs(2),
        "alone {alone:?}, with a stalled subscriber {with_stalled:?}"
    );
    // The daemon lets go of the stalled peer on its own (watched without reading from it,
    // which would un-stall it): its connection stops counting.
    // Open now: `a` and the other subscriber.
    let connections = |a: &mut Conn| a.result("status", json!({}))["connections"].as_u64();
    let deadline = Instant::now() + Duration::from_secs(15);
    while connections(&mut a) != Some(2) {
        assert!(
            Instant::now() < deadline,
            "the stalled subscriber was not disconnected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stalled.closed_within(Duration::from_secs(5)));
    let list = a.result("session/list", json!({}));
    assert_eq!(list["sessions"][0]["subscribers"], 2, "{list}");
}

#[test]
fn the_replay_buffer_keeps_its_cap_and_an_evicted_cursor_starts_with_a_gap() {
    const CAP: u64 = 8 * 1024 * 1024;
    let daemon = TestDaemon::start();
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    // Two turns of about 6.5 MB of updates each (4.5 MB of chunks, the prompt's
    // `user_message` and the `turn_complete`, 1 MiB each): together they do not fit the
    // buffer.
    let word = "x".repeat(1000);
    let prompt = vec![word.as_str(); 4000].join(" ");
    let (first, r1) = a.prompt(&sid, &prompt);
    let first = common::updates(&first);
    let held_one = a.result("session/status", json!({"sessionId": sid}))["replayBytes"]
        .as_u64()
        .unwrap();
    assert!(
        held_one > CAP / 2 && held_one <= CAP,
        "one turn: {held_one}"
    );
    let (second, _) = a.prompt(&sid, &prompt);
    let second = common::updates(&second);
    let held = a.result("session/status", json!({"sessionId": sid}))["replayBytes"]
        .as_u64()
        .unwrap();
    assert!(held > CAP - CAP / 8 && held <= CAP, "two turns: {held}");

    // A client that saw only the first update of the first turn comes back.
    let mut back = daemon.client();
    let turn = r1["result"]["turnId"].clone();
    subscribe(
        &mut back,
        json!({"sessionId": sid, "turnId": turn, "afterEventSeq": 1}),
    );
    let replayed = read_turn(&mut back);
    let gap = &replayed[0];
    assert_eq!(gap["type"], "replay_gap", "{gap}");
    assert_eq!(gap["replay"], true);
    assert_eq!(gap["turnId"], turn);
    let from = gap["firstEventSeq"].as_u64().unwrap();
    assert!(from > 2, "events after the cursor were evicted: {gap}");
    // What is left of the first turn follows the gap, exactly as first sent.
    let rest: Vec<Value> = replayed[1..].iter().cloned().map(unmarked).collect();
    assert_eq!(rest, first[from as usize - 1..].to_vec());
    // The second turn is whole.
    let again: Vec<Value> = read_turn(&mut back).into_iter().map(unmarked).collect();
    assert_eq!(again, second);
}

/// The operator is an admin: 16 non-admin subscribers at most, and 20 in all (SPEC §17.1;
/// tests/hardening_streams.rs has the non-admin side).
#[test]
fn the_twenty_first_subscriber_is_refused_and_a_prompt_from_it_still_runs() {
    let daemon = TestDaemon::start();
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut subscribers: Vec<Conn> = (0..20)
        .map(|_| {
            let mut c = daemon.client();
            subscribe(&mut c, json!({"sessionId": sid}));
            c
        })
        .collect();
    let e = a.error("session/subscribe", json!({"sessionId": sid}));
    assert_eq!(code(&e), -32013, "{e}");
    assert_eq!(e["data"], json!({"limit": 20, "value": 21}));
    let (msgs, resp) = a.prompt(&sid, "still runs");
    assert_eq!(resp["result"]["outcome"], "completed");
    assert!(
        common::updates(&msgs).is_empty(),
        "not subscribed: {msgs:?}"
    );
    let list = a.result("session/list", json!({}));
    assert_eq!(list["sessions"][0]["subscribers"], 20);
    assert_eq!(list["sessions"][0]["activeTurnId"], Value::Null);
    // Leaving frees a place.
    subscribers[0].result("session/unsubscribe", json!({"sessionId": sid}));
    let sub = subscribe(&mut a, json!({"sessionId": sid}));
    assert_eq!(sub["subscribed"], true);
    let turn = read_turn(&mut subscribers[1]);
    assert_eq!(turn.last().unwrap()["outcome"], "completed");
}

#[test]
fn a_persisted_session_comes_back_on_subscribe() {
    let daemon = TestDaemon::start();
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    a.prompt(&sid, "hello there");
    a.result("session/close", json!({"sessionId": sid}));
    let sub = subscribe(&mut a, json!({"sessionId": sid}));
    assert_eq!(sub["lastTranscriptSeq"], 2, "{sub}");
    let list = a.result("session/list", json!({}));
    assert_eq!(list["sessions"][0]["live"], true);
    let e = a.error("session/subscribe", json!({"sessionId": "nope"}));
    assert_eq!(code(&e), -32000);
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_stranger_cannot_subscribe_to_a_session() {
    assert!(common::is_root(), "needs root to connect as another uid");
    let daemon = TestDaemon::start();
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    a.prompt(&sid, "hello there");
    use std::os::unix::fs::PermissionsExt;
    let uid = common::test_uid();
    let e = a.result(
        "config/set-many",
        json!({"sets": [
            {"prop": "permission_profiles.watcher", "value": {"grants": {"sessions": ["read", "create"]}, "allowed_agents": ["default"]}},
            {"prop": "users.tester", "value": {"uid": uid, "permission_profiles": ["watcher"]}},
        ]}),
    );
    assert_eq!(e["set"], true, "{e}");
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut u = common::UidConn::open(&daemon.socket, uid);
    assert!(u.call("initialize", json!({})).get("result").is_some());
    let e = u.call("session/subscribe", json!({"sessionId": sid}));
    assert_eq!(code(&e["error"]), -32003, "{e}");
}

/// Reads until an `approval_request` arrives; returns its request id.
fn approval_id(c: &mut Conn) -> Value {
    loop {
        let msg = c.recv();
        if msg["params"]["type"] == "approval_request" {
            return msg["params"]["requestId"].clone();
        }
    }
}

/// Reads until a request `elicitation/create` arrives; returns it.
fn wait_elicitation(c: &mut Conn) -> Value {
    loop {
        let msg = c.recv();
        if msg["method"] == "elicitation/create" {
            return msg;
        }
    }
}

fn answer_elicitation(c: &mut Conn, request: &Value, answer: &str) {
    let reply = json!({"jsonrpc": "2.0", "id": request["id"],
                       "result": {"action": "accept", "content": {"answer": answer}}});
    c.send(&reply.to_string());
}

/// Whether the provider was sent `text` in a tool result of request `i`.
fn tool_result_sent(fake: &Fake, i: usize, text: &str) -> bool {
    fake.requests()[i]["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.contains(text)))
    })
}

#[test]
fn ask_user_goes_to_whoever_can_answer_and_moves_on_when_that_one_leaves() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "tc_1",
        "ask_user",
        json!({"question": "colour?"}),
    ));
    fake.push(Scripted::text("noted"));
    let daemon = start(&fake, &[]);
    // The prompting connection cannot answer elicitation; two of the owner's can.
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut older = daemon.eliciting_client();
    subscribe(&mut older, json!({"sessionId": sid}));
    let mut newer = daemon.eliciting_client();
    subscribe(&mut newer, json!({"sessionId": sid}));
    let prompt = a.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "ask me"}),
    );
    let asked = wait_elicitation(&mut newer);
    assert_eq!(asked["params"]["message"], "colour?");
    drop(newer);
    let again = wait_elicitation(&mut older);
    assert_eq!(again["params"]["message"], "colour?");
    answer_elicitation(&mut older, &again, "teal");
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    assert!(
        tool_result_sent(&fake, 1, "teal"),
        "{:?}",
        fake.requests()[1]
    );
}

#[test]
fn ask_user_waits_for_an_eligible_connection_to_subscribe() {
    let fake = Fake::start();
    fake.push(Scripted::tool_call(
        "tc_1",
        "bash",
        json!({"command": "true"}),
    ));
    fake.push(Scripted::tool_call(
        "tc_2",
        "ask_user",
        json!({"question": "size?"}),
    ));
    fake.push(Scripted::text("thanks"));
    let daemon = start(&fake, &[]);
    let mut a = daemon.client();
    let sid = new_session(&mut a, "default");
    let mut first = daemon.eliciting_client();
    subscribe(&mut first, json!({"sessionId": sid}));
    let prompt = a.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
    let rid = approval_id(&mut a);
    // The only connection that could answer leaves before the question is asked.
    drop(first);
    a.result(
        "session/approve",
        json!({"sessionId": sid, "requestId": rid, "decision": "allow_once"}),
    );
    assert!(fake.wait_requests(2, Duration::from_secs(10)));
    let mut later = daemon.eliciting_client();
    subscribe(&mut later, json!({"sessionId": sid}));
    let asked = wait_elicitation(&mut later);
    assert_eq!(asked["params"]["message"], "size?");
    answer_elicitation(&mut later, &asked, "large");
    let (_, done) = a.collect_until(&prompt);
    assert_eq!(done["result"]["outcome"], "completed", "{done}");
    assert!(tool_result_sent(&fake, 2, "large"));
}

#[test]
fn cancel_and_close_resolve_a_pending_approval_for_every_subscriber() {
    for how in ["session/cancel", "session/close"] {
        let fake = Fake::start();
        let daemon = approval_daemon(&fake);
        let mut a = daemon.client();
        let sid = new_session(&mut a, "default");
        let mut b = daemon.client();
        subscribe(&mut b, json!({"sessionId": sid}));
        let prompt = a.send_call("session/prompt", json!({"sessionId": sid, "prompt": "go"}));
        let rid = approval_id(&mut b);
        let stop = a.send_call(how, json!({"sessionId": sid}));
        // Both answers, in whichever order they come.
        let mut seen = Vec::new();
        let mut answered = 0;
        while answered < 2 {
            let msg = a.recv();
            if msg.get("method").is_none() && (msg["id"] == prompt || msg["id"] == stop) {
                answered += 1;
            } else {
                seen.push(msg);
            }
        }
        let watched = read_turn(&mut b);
        for updates in [common::updates(&seen), watched] {
            let resolved = updates
                .iter()
                .find(|u| u["type"] == "approval_resolved")
                .unwrap_or_else(|| panic!("{how}: no approval_resolved in {updates:?}"));
            assert_eq!(
                resolved.clone(),
                json!({"sessionId": sid, "type": "approval_resolved", "turnId": resolved["turnId"],
                       "eventSeq": resolved["eventSeq"], "requestId": rid, "decision": "reject",
                       "reason": "cancelled"}),
                "{how}"
            );
            assert_eq!(updates.last().unwrap()["outcome"], "cancelled", "{how}");
        }
    }
}
