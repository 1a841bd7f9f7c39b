//! SPEC §17 for sessions over the real binary: memory bounded by the prompt (peak RSS of
//! the daemon read from `/proc/PID/status`), long text cut to fit a frame, paged
//! `session/list`, the per-principal live-session quota and `cwd` checks.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::{
    Conn, TestDaemon, UidConn, code, is_root, session_config, streamed_text, test_uid, updates,
};
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
    c.stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
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
    // Before the echo provider streamed lazily this was about 34 x the prompt (every word
    // a String and an event; debug build); then about 17 x (138 MiB); since the trim
    // snapshot, the provider request and the checkpoint writes stopped copying the text
    // 100-116 MiB (12-14.5 x, RSS moving by about 15 MiB run to run, glibc keeping freed
    // large blocks in its arenas); since the answer is accumulated once, lent to the
    // store, and glibc's mmap threshold is fixed (large blocks unmapped when freed) about
    // 60 MiB (7.5 x, steady): the prompt and the answer in the context, the provider's
    // copy of the prompt, the replay buffer, SQLite's bound copy and record of the largest
    // write (the trim's snapshot). Since large texts go into SQLite through blob I/O, the
    // checkpoint is written in 256 KiB pieces, the answer and the context are lent rather
    // than copied (to the persister, the turn's result, the provider): 30 MiB (3.7 x):
    // the prompt and the answer once each, the replay buffer (at most 8 MiB, SPEC §14)
    // and SQLite's page cache. Breakdown in docs/BENCHMARKS.md (item 4).
    assert!(
        growth < 5 * len,
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
        // Before: over 880 MiB (still growing when stopped); then about 346 MiB; then
        // 247-285 MiB (debug build, three runs); since the mmap threshold is fixed and the
        // answers are accumulated once, 158 MiB (one run); since nothing copies a large
        // text on its way to SQLite, 109 MiB (one run, four replay buffers included).
        growth < 4 * 6 * len,
        "peak RSS grew by {growth} bytes for four {len}-byte prompts"
    );
}

/// Two clients send a frame-sized prompt to the same session at once: one runs, the other
/// waits in the session's queue holding its text. Both are answered in full, the durable
/// transcript holds both turns whole and in order (no interleaving), and the daemon's
/// peak stays bounded (one more prompt held than a single big turn, and a second stream).
#[test]
fn two_clients_send_big_prompts_to_one_session_at_once() {
    let len = FRAME - 4096;
    let daemon = start("");
    let first = echo_session(&daemon, "shared");
    let (_, _, warm) = prompt_raw(first.try_clone().unwrap(), "shared", "warm up");
    assert_eq!(warm["result"]["outcome"], "completed");
    let second = {
        let c = daemon.client();
        c.stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        c.stream
    };
    let base = proc_kib(&daemon, "VmHWM:");
    let prompts = [word_prompt(len), word_prompt(len).replace("word", "bird")];
    let answers: Vec<(usize, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = [first, second]
            .into_iter()
            .zip(&prompts)
            .map(|(stream, prompt)| {
                scope.spawn(move || {
                    let (text, longest, answer) = prompt_raw(stream, "shared", prompt);
                    assert!(longest <= FRAME, "a line of {longest} bytes");
                    (text, answer)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let growth = proc_kib(&daemon, "VmHWM:").saturating_sub(base);
    eprintln!(
        "two {len}-byte prompts on one session: peak growth {} MiB",
        growth / MIB
    );
    for (text, answer) in &answers {
        assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
        // Each prompting connection is subscribed: it sees its own turn whole, and the
        // other's from wherever it joined.
        assert!(*text >= len, "{text} bytes of chunks streamed");
    }
    // The transcript: the warm-up turn, then the two turns whole, one after the other.
    let db = rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap();
    let rows: Vec<(String, i64, String)> = db
        .prepare(
            "SELECT role, length(CAST(content AS BLOB)), substr(CAST(content AS TEXT), 1, 4) \
             FROM transcript ORDER BY seq",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let roles: Vec<&str> = rows.iter().map(|(role, _, _)| role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant"].repeat(3));
    let big = &rows[2..];
    assert!(
        big.iter().all(|(_, n, _)| *n == len as i64),
        "every big row whole: {big:?}"
    );
    // Each answer follows its own prompt (echo), whichever ran first.
    assert_eq!(big[0].2, big[1].2);
    assert_eq!(big[2].2, big[3].2);
    assert_ne!(big[0].2, big[2].2);
    // One big echo turn grows about 3.7x its prompt (see above); the waiting prompt and
    // the second connection's stream add about one more prompt and a replay's worth.
    // Measured 44-47 MiB (5.3-5.9x; debug build, three runs).
    assert!(
        growth < 7 * len,
        "peak RSS grew by {growth} bytes for two {len}-byte prompts on one session"
    );
}

// ---- long text cut to fit a frame ------------------------------------------------------

#[test]
fn a_long_answer_is_cut_to_one_mib_but_kept_whole() {
    let daemon = start("");
    let mut c = daemon.client();
    c.new_session(json!({"agentAlias": "echo", "sessionId": "long"}));
    let prompt = word_prompt(2 * MIB);
    let (msgs, resp) = c.prompt("long", &prompt);
    assert_eq!(
        streamed_text(&msgs).len(),
        prompt.len(),
        "chunks carry everything"
    );
    let result = &resp["result"];
    assert_eq!(result["outcome"], "completed");
    assert_eq!(result["content"].as_str().unwrap(), &prompt[..MIB]);
    assert_eq!(result["truncated"], true);
    let done = updates(&msgs).pop().unwrap();
    assert_eq!(done["type"], "turn_complete");
    assert_eq!(done["content"].as_str().unwrap().len(), MIB);
    assert_eq!(done["truncated"], true);

    let page = c.result("session/messages", json!({"sessionId": "long"}));
    let rows = page["messages"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(
            row["content"].as_str().unwrap(),
            &prompt[..MIB],
            "{}",
            row["role"]
        );
        assert_eq!(row["truncated"], true);
    }
    // The durable transcript keeps the whole text.
    let db = rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap();
    let lengths: Vec<i64> = db
        .prepare("SELECT length(CAST(content AS BLOB)) FROM transcript ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(lengths, vec![prompt.len() as i64; 2]);

    // A short answer is not marked.
    let (_, resp) = c.prompt("long", "short");
    assert_eq!(resp["result"]["content"], "short");
    assert!(resp["result"].get("truncated").is_none(), "{resp}");
}

// ---- paged session/list ------------------------------------------------------------------

#[test]
fn twenty_thousand_sessions_are_listed_in_pages_that_fit_a_frame() {
    let mut daemon = start("");
    let owner = {
        let mut c = daemon.client();
        c.new_session(json!({"agentAlias": "echo", "sessionId": "first"}));
        c.result("session/close", json!({"sessionId": "first"}));
        let db = rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap();
        db.query_row("SELECT owner FROM sessions", [], |r| r.get::<_, String>(0))
            .unwrap()
    };
    daemon.kill_hard();
    let total = 20_000;
    {
        let mut db = rusqlite::Connection::open(daemon.data_dir().join("zeroclaw.db")).unwrap();
        let tx = db.transaction().unwrap();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO sessions (mode, session_id, agent_alias, owner, cwd, \
                     interaction_surface, created_at, last_activity) \
                     VALUES ('acp', ?1, 'echo', ?2, NULL, 'rpc', ?3, ?3)",
                )
                .unwrap();
            // Long ids make the whole list far larger than a frame.
            for i in 1..total {
                let id = format!("{i:06}-{}", "x".repeat(240));
                insert
                    .execute(rusqlite::params![id, owner, i % 977])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    daemon.spawn(&[]);
    let mut c = daemon.client();
    let mut seen = std::collections::HashSet::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    let mut last_activity = i64::MAX;
    loop {
        let mut params = json!({});
        if !cursor.is_null() {
            params["cursor"] = cursor.clone();
        }
        let line = json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": params});
        c.send(&line.to_string());
        let (len, resp) = read_line_len(&mut c);
        assert!(len < FRAME, "a session/list line of {len} bytes");
        let result = &resp["result"];
        let sessions = result["sessions"].as_array().unwrap();
        assert!(sessions.len() <= 500);
        for s in sessions {
            let activity = s["lastActivity"].as_i64().unwrap();
            assert!(activity <= last_activity, "newest activity first");
            last_activity = activity;
            assert!(
                seen.insert(s["sessionId"].as_str().unwrap().to_string()),
                "{} listed twice",
                s["sessionId"]
            );
        }
        pages += 1;
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
        assert!(cursor.is_string(), "{cursor}");
    }
    assert_eq!(seen.len(), total, "every session once");
    assert_eq!(pages, total / 500);

    // `limit` pages smaller; a bad cursor or a zero limit is -32602.
    let small = c.result("session/list", json!({"limit": 7}));
    assert_eq!(small["sessions"].as_array().unwrap().len(), 7);
    let next = small["nextCursor"].clone();
    let more = c.result("session/list", json!({"limit": 7, "cursor": next}));
    assert_ne!(more["sessions"][0], small["sessions"][0]);
    assert_eq!(
        code(&c.error("session/list", json!({"cursor": "nope"}))),
        -32602
    );
    assert_eq!(code(&c.error("session/list", json!({"limit": 0}))), -32602);
}

/// Reads the next message answering a request (skipping notifications): (line length,
/// message).
fn read_line_len(c: &mut Conn) -> (usize, Value) {
    let mut reader = BufReader::new(c.stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "closed");
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg.get("method").is_none() {
            return (n, msg);
        }
    }
}

// ---- per-principal quota and cwd (a second local uid) -----------------------------------

/// A daemon with user `tester` (uid `uid`, not admin, may use agent `echo`) and a quota
/// of `quota` live sessions per principal, reachable by that uid.
fn two_user_daemon(uid: u32, quota: u32) -> TestDaemon {
    let extra = format!(
        "[limits]\nlive_sessions_per_principal = {quota}\n\
         [permission_profiles.user]\n\
         grants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\", \"delete\"] }}\n\
         allowed_agents = [\"echo\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"user\"]\n"
    );
    let daemon = start(&extra);
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    daemon
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_holds_at_most_its_quota_of_live_sessions() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let daemon = two_user_daemon(uid, 3);
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["principal"]["admin"], false, "{init}");
    for i in 0..3 {
        let r = u.call(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": format!("u{i}")}),
        );
        assert!(r.get("result").is_some(), "{r}");
    }
    let e = u.call(
        "session/new",
        json!({"agentAlias": "echo", "sessionId": "u3"}),
    );
    assert_eq!(code(&e["error"]), -32001, "{e}");
    assert_eq!(e["error"]["data"], json!({"limit": 3}));
    // The operator (admin) is bound only by the daemon-wide 64.
    let mut op = daemon.client();
    for i in 0..5 {
        op.new_session(json!({"agentAlias": "echo", "sessionId": format!("op{i}")}));
    }
    // Closing one frees a place; a closed session rehydrated by a prompt counts again.
    assert!(
        u.call("session/close", json!({"sessionId": "u0"}))
            .get("result")
            .is_some()
    );
    assert!(
        u.call(
            "session/new",
            json!({"agentAlias": "echo", "sessionId": "u3"})
        )
        .get("result")
        .is_some()
    );
    let e = u.call(
        "session/prompt",
        json!({"sessionId": "u0", "prompt": "back?"}),
    );
    assert_eq!(code(&e["error"]), -32001, "{e}");
}

#[test]
fn cwd_must_be_an_existing_directory() {
    let daemon = start("");
    let mut c = daemon.client();
    let r = c.new_session(json!({"agentAlias": "echo", "sessionId": "w"}));
    let ws = std::path::PathBuf::from(r["workspaceDir"].as_str().unwrap());
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("file"), "x").unwrap();
    for bad in ["missing", "file", "/nonexistent/dir"] {
        let e = c.error("session/new", json!({"agentAlias": "echo", "cwd": bad}));
        assert_eq!(code(&e), -32602, "{bad}: {e}");
    }
    c.new_session(json!({"agentAlias": "echo", "cwd": "sub"}));
    // The operator (admin) may work anywhere.
    c.new_session(json!({"agentAlias": "echo", "cwd": "/tmp"}));
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_cwd_stays_inside_the_workspace() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let daemon = two_user_daemon(uid, 16);
    let mut op = daemon.client();
    let ws = op.new_session(json!({"agentAlias": "echo", "sessionId": "probe"}))["workspaceDir"]
        .as_str()
        .unwrap()
        .to_string();
    let ws = std::path::PathBuf::from(ws);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink("/tmp", ws.join("out")).unwrap();
    let mut u = UidConn::open(&daemon.socket, uid);
    u.call("initialize", json!({"protocolVersion": 1}));
    for bad in ["/tmp", "..", "sub/../..", "out"] {
        let e = u.call("session/new", json!({"agentAlias": "echo", "cwd": bad}));
        assert_eq!(code(&e["error"]), -32012, "{bad}: {e}");
    }
    let e = u.call(
        "session/new",
        json!({"agentAlias": "echo", "cwd": "missing"}),
    );
    assert_eq!(code(&e["error"]), -32602, "{e}");
    let ok = u.call("session/new", json!({"agentAlias": "echo", "cwd": "sub"}));
    assert!(ok.get("result").is_some(), "{ok}");
}
