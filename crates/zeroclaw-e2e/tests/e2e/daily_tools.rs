//! SPEC §22 "Live tool output" and "What a turn changed" through the real binary.
//!
//! - `bash` streams `tool_output_chunk`s while it runs: a command printing a line every
//!   0.3 s gives its first chunk well before the call's `tool_result` (read times on the
//!   client), stderr comes tagged `stderr`, `tool_call` carries `startedAt`; a command
//!   printing 1 MB gives chunks of at most 4 KiB adding up to the 64 KiB output limit, the
//!   result counting the rest; a client subscribing afterwards gets the chunks replayed; a
//!   subscriber that never reads does not slow the turn.
//! - `session/diff` lists what a turn (or the whole session) added, modified and deleted,
//!   with line counts and unified patches, a binary file without a patch; an unknown
//!   session is -32000 and an unknown turn -32602 naming `turnId`.
//! - A rewind leaves a `rewind` row in the transcript (conversation-only says so and leaves
//!   the files), the next provider request never carries it, and a later rewind to an
//!   earlier turn flags it rewound.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Conn, Fake, TestDaemon, code};
use serde_json::{Value, json};
use zeroclaw_testkit::Scripted;

fn start(fake: &Fake) -> TestDaemon {
    common::tool_agent::start(fake, "tools")
}

fn new_session(c: &mut Conn, cwd: &Path) -> String {
    common::tool_agent::new_session(c, "tools", cwd)
}

/// One turn in which the agent runs `command`; every message read before the answer with
/// the time it was read, and the answer.
fn bash_turn_timed(
    fake: &Fake,
    c: &mut Conn,
    sid: &str,
    command: &str,
) -> (Vec<(Instant, Value)>, Value) {
    fake.push(Scripted::tool_call(
        "call_1",
        "bash",
        json!({ "command": command }),
    ));
    fake.push(Scripted::text("done"));
    let id = c.send_call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "run it"}),
    );
    let mut seen = Vec::new();
    loop {
        let msg = c.recv();
        if msg.get("id") == Some(&id) && msg.get("method").is_none() {
            assert_eq!(msg["result"]["outcome"], "completed", "{msg}");
            return (seen, msg);
        }
        seen.push((Instant::now(), msg));
    }
}

/// The `session/update` params of `kind` among `seen`, with their read times.
fn of_type<'a>(seen: &'a [(Instant, Value)], kind: &str) -> Vec<(Instant, &'a Value)> {
    seen.iter()
        .filter(|(_, m)| m["method"] == "session/update" && m["params"]["type"] == kind)
        .map(|(t, m)| (*t, &m["params"]))
        .collect()
}

/// The text of the chunks of `stream`, joined.
fn joined(chunks: &[(Instant, &Value)], stream: &str) -> String {
    chunks
        .iter()
        .filter(|(_, c)| c["stream"] == stream)
        .map(|(_, c)| c["text"].as_str().expect("text"))
        .collect()
}

fn turn_id(answer: &Value) -> String {
    answer["result"]["turnId"]
        .as_str()
        .expect("turnId")
        .to_owned()
}

#[test]
fn bash_output_arrives_while_it_runs_tagged_by_stream_and_is_replayed() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());

    let before_ms = now_ms();
    let (seen, answer) = bash_turn_timed(
        &fake,
        &mut c,
        &sid,
        "for i in 1 2 3; do echo $i; sleep 0.3; done; echo oops 1>&2",
    );
    let calls = of_type(&seen, "tool_call");
    let chunks = of_type(&seen, "tool_output_chunk");
    let results = of_type(&seen, "tool_result");
    assert_eq!((calls.len(), results.len()), (1, 1), "{seen:?}");
    let started = calls[0].1["startedAt"].as_i64().expect("startedAt");
    assert!(
        started >= before_ms - 1_000 && started <= now_ms(),
        "startedAt {started} is when the call was made"
    );
    assert!(chunks.iter().all(|(_, c)| c["toolCallId"] == "call_1"));
    assert_eq!(joined(&chunks, "stdout"), "1\n2\n3\n", "{chunks:?}");
    assert_eq!(joined(&chunks, "stderr"), "oops\n", "{chunks:?}");
    // Several pieces, the first read long before the call ended: streamed, not sent at
    // the end (three lines 0.3 s apart).
    assert!(chunks.len() >= 3, "{chunks:?}");
    let (first_at, result_at) = (chunks[0].0, results[0].0);
    assert!(
        result_at.duration_since(first_at) >= Duration::from_millis(450),
        "first chunk only {:?} before the result",
        result_at.duration_since(first_at)
    );
    // In the stream, every chunk lies between the call and its result.
    let seqs = |kind: &str| -> Vec<u64> {
        of_type(&seen, kind)
            .iter()
            .map(|(_, u)| u["eventSeq"].as_u64().expect("eventSeq"))
            .collect()
    };
    let (call_seq, result_seq) = (seqs("tool_call")[0], seqs("tool_result")[0]);
    assert!(
        seqs("tool_output_chunk")
            .iter()
            .all(|s| *s > call_seq && *s < result_seq)
    );

    // A client that comes back later gets the turn again, its chunks included.
    let tid = turn_id(&answer);
    let mut back = daemon.client();
    let sub_id = back.send_call(
        "session/subscribe",
        json!({"sessionId": sid, "turnId": tid, "afterEventSeq": 0}),
    );
    let sub = back.recv();
    assert_eq!(sub["id"], sub_id, "{sub}");
    let mut replayed = Vec::new();
    loop {
        let msg = back.recv();
        let done = msg["params"]["type"] == "turn_complete";
        replayed.push((Instant::now(), msg));
        if done {
            break;
        }
    }
    let again = of_type(&replayed, "tool_output_chunk");
    assert_eq!(again.len(), chunks.len());
    assert!(again.iter().all(|(_, u)| u["replay"] == true));
    assert_eq!(joined(&again, "stdout"), "1\n2\n3\n");
    assert_eq!(joined(&again, "stderr"), "oops\n");
}

#[test]
fn a_megabyte_of_output_gives_at_most_the_output_limit_in_4_kib_chunks() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());

    let (seen, _) = bash_turn_timed(
        &fake,
        &mut c,
        &sid,
        "head -c 1000000 /dev/zero | tr '\\0' a",
    );
    let chunks = of_type(&seen, "tool_output_chunk");
    let took = of_type(&seen, "tool_result")[0]
        .0
        .duration_since(of_type(&seen, "tool_call")[0].0);
    eprintln!(
        "1 MB of bash output: {} chunks, tool_call to tool_result {took:?}",
        chunks.len()
    );
    let sizes: Vec<usize> = chunks
        .iter()
        .map(|(_, c)| c["text"].as_str().expect("text").len())
        .collect();
    let sent: usize = sizes.iter().sum();
    assert_eq!(sent, 64 * 1024, "the output limit, no more: {sizes:?}");
    assert!(sizes.iter().all(|n| *n <= 4096), "{sizes:?}");
    let result = of_type(&seen, "tool_result")[0].1["rawOutput"]
        .as_str()
        .expect("rawOutput")
        .to_owned();
    assert!(
        result.contains(&format!(
            "[output truncated: {} more bytes not shown",
            1_000_000 - 64 * 1024
        )),
        "the rest is counted: {}",
        &result[result.len().saturating_sub(200)..]
    );
}

/// A subscriber that never reads does not hold the tool back: the prompting client's turn,
/// a command printing for a while, ends as soon with it watching as without (the control).
#[test]
fn a_subscriber_that_never_reads_does_not_stall_the_tool() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());
    let command =
        "for i in $(seq 1 20); do head -c 3000 /dev/zero | tr '\\0' x; echo; sleep 0.02; done";

    let t = Instant::now();
    bash_turn_timed(&fake, &mut c, &sid, command);
    let alone = t.elapsed();

    let mut stalled = daemon.client();
    let id = stalled.send_call("session/subscribe", json!({"sessionId": sid}));
    assert_eq!(stalled.recv()["id"], id);
    // From here on `stalled` reads nothing.
    let t = Instant::now();
    let (seen, _) = bash_turn_timed(&fake, &mut c, &sid, command);
    let watched = t.elapsed();
    assert!(of_type(&seen, "tool_output_chunk").len() >= 2);
    assert!(
        watched < alone * 3 + Duration::from_secs(1),
        "alone {alone:?}, with a subscriber that never reads {watched:?}"
    );
    eprintln!("a 20-line bash turn: alone {alone:?}, watched by a stalled subscriber {watched:?}");
}

#[test]
fn session_diff_lists_added_modified_and_deleted_files_with_patches() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(work.path().join("keep.txt"), &lines).expect("write");
    std::fs::write(work.path().join("gone.txt"), "a\nb\nc\n").expect("write");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());

    let (_, first) = bash_turn_timed(
        &fake,
        &mut c,
        &sid,
        "sed -i 's/^line 5$/line five/' keep.txt && rm gone.txt && printf 'x\\ny\\n' > new.txt \
         && printf '\\000\\001\\002' > blob.bin",
    );
    let first = turn_id(&first);
    let (_, second) = bash_turn_timed(&fake, &mut c, &sid, "echo z >> new.txt");
    let second = turn_id(&second);

    let d = c.result("session/diff", json!({"sessionId": sid, "turnId": first}));
    let files = d["files"].as_array().expect("files");
    let paths: Vec<&str> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        paths,
        ["blob.bin", "gone.txt", "keep.txt", "new.txt"],
        "{d}"
    );
    assert_eq!(
        files[0],
        json!({"path": "blob.bin", "status": "added", "additions": 0, "deletions": 0}),
        "a binary file has no patch"
    );
    assert_eq!(
        files[1],
        json!({"path": "gone.txt", "status": "deleted", "additions": 0, "deletions": 3,
               "patch": "--- a/gone.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"})
    );
    assert_eq!(
        files[2],
        json!({"path": "keep.txt", "status": "modified", "additions": 1, "deletions": 1,
               "patch": "--- a/keep.txt\n+++ b/keep.txt\n@@ -2,7 +2,7 @@\n line 2\n line 3\n \
                         line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"})
    );
    assert_eq!(
        files[3],
        json!({"path": "new.txt", "status": "added", "additions": 2, "deletions": 0,
               "patch": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n"})
    );
    assert!(d.get("unavailable").is_none(), "{d}");

    // The second turn alone, then the whole session.
    let d = c.result("session/diff", json!({"sessionId": sid, "turnId": second}));
    assert_eq!(
        d["files"],
        json!([{"path": "new.txt", "status": "modified", "additions": 1, "deletions": 0,
                "patch": "--- a/new.txt\n+++ b/new.txt\n@@ -1,2 +1,3 @@\n x\n y\n+z\n"}])
    );
    let d = c.result("session/diff", json!({"sessionId": sid}));
    let whole: Vec<(&str, &str, u64)> = d["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or(""),
                f["status"].as_str().unwrap_or(""),
                f["additions"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    assert_eq!(
        whole,
        [
            ("blob.bin", "added", 0),
            ("gone.txt", "deleted", 0),
            ("keep.txt", "modified", 1),
            ("new.txt", "added", 3)
        ]
    );

    // Errors: an unknown session, an unknown turn.
    let e = c.error("session/diff", json!({"sessionId": "no-such-session"}));
    assert_eq!(code(&e), -32000, "{e}");
    let e = c.error(
        "session/diff",
        json!({"sessionId": sid, "turnId": "t-nope"}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    assert!(
        e["message"].as_str().unwrap_or("").contains("turnId"),
        "{e}"
    );
}

#[test]
fn a_rewind_leaves_a_visible_row_the_model_never_gets() {
    let fake = Fake::start();
    let work = tempfile::tempdir().expect("tempdir");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, work.path());
    let (_, first) = bash_turn_timed(&fake, &mut c, &sid, "echo a > a.txt");
    let first = turn_id(&first);
    let (_, second) = bash_turn_timed(&fake, &mut c, &sid, "echo b > b.txt");
    let second = turn_id(&second);

    // Conversation only: the files stay, the row says so.
    let r = c.result(
        "session/rewind",
        json!({"sessionId": sid, "turnId": second, "restoreFiles": false}),
    );
    assert_eq!(r["rewoundTurns"], json!([second]), "{r}");
    assert!(work.path().join("b.txt").exists());
    let rows = c.messages(&sid);
    let last = rows.last().expect("rows");
    assert_eq!(last["role"], "rewind", "{rows:?}");
    let note: Value = serde_json::from_str(last["content"].as_str().expect("content"))
        .expect("the row's content is JSON");
    assert_eq!(
        note,
        json!({"toTurnId": second, "rewoundTurns": [second], "restoredFiles": [],
               "restoreFiles": false})
    );

    // The next turn's request holds the first turn and the prompt, not the note.
    fake.push(Scripted::text("ok"));
    let (_, resp) = c.prompt(&sid, "and now?");
    assert_eq!(resp["result"]["outcome"], "completed", "{resp}");
    let requests = fake.requests();
    let sent = requests.last().expect("a request").to_string();
    assert!(
        sent.contains("and now?") && sent.contains("echo a > a.txt"),
        "{sent}"
    );
    assert!(
        !sent.contains("toTurnId") && !sent.contains("rewind"),
        "{sent}"
    );

    // Back to the start with the files: both come back, and the first note is taken back.
    let r = c.result("session/rewind", json!({"sessionId": sid, "turnId": first}));
    assert_eq!(r["restoredFiles"], json!(["a.txt", "b.txt"]), "{r}");
    assert!(!work.path().join("a.txt").exists() && !work.path().join("b.txt").exists());
    let all = c.result(
        "session/messages",
        json!({"sessionId": sid, "includeRewound": true}),
    );
    let notes: Vec<&Value> = all["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "rewind")
        .collect();
    assert_eq!(notes.len(), 2, "{all}");
    assert_eq!(notes[0]["rewound"], true, "{all}");
    assert_ne!(notes[1]["rewound"], true, "{all}");
    let note: Value =
        serde_json::from_str(notes[1]["content"].as_str().expect("content")).expect("JSON");
    assert_eq!(note["restoredFiles"], json!(["a.txt", "b.txt"]));
    assert_eq!(note["restoreFiles"], true);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The file tools work in the session's directory, as `bash` does: a `write_file` with a
/// relative path in a session started in a project lands in the project (not the agent's
/// workspace), and `session/diff` lists it.
#[test]
fn write_file_writes_in_the_sessions_directory_and_the_diff_lists_it() {
    let fake = Fake::start();
    let project = tempfile::tempdir().expect("tempdir");
    let daemon = start(&fake);
    let mut c = daemon.client();
    let sid = new_session(&mut c, project.path());

    fake.push(Scripted::tool_call(
        "call_1",
        "write_file",
        json!({"path": "notes.txt", "content": "one\ntwo\n"}),
    ));
    fake.push(Scripted::text("written"));
    let answer = c.result(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "write it"}),
    );
    assert_eq!(answer["outcome"], "completed", "{answer}");
    let turn = answer["turnId"].as_str().expect("turnId").to_owned();

    let written = std::fs::read_to_string(project.path().join("notes.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("one\ntwo\n"),
        "in the project"
    );
    let workspace = daemon.config_dir().join("agents/tools/workspace/notes.txt");
    assert!(!workspace.exists(), "not in the agent's workspace");

    let d = c.result("session/diff", json!({"sessionId": sid, "turnId": turn}));
    assert_eq!(
        d["files"],
        json!([{"path": "notes.txt", "status": "added", "additions": 2, "deletions": 0,
                "patch": "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"}]),
        "{d}"
    );
}
