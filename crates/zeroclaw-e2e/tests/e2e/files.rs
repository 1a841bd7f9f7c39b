//! Files (SPEC §8) against the real daemon: `file/attach`, chunked uploads with every
//! error row, the commit step's session and policy checks, tamper write-back.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Conn, TestDaemon, code};
use proptest::prelude::*;
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn new_session(c: &mut Conn, id: &str) -> Value {
    c.result(
        "session/new",
        json!({"agentAlias": "default", "sessionId": id}),
    )
}

/// Uploads `bytes` in chunks of the given sizes; returns the commit result.
fn upload(c: &mut Conn, session: &str, bytes: &[u8], sizes: &[usize], filename: &str) -> Value {
    let begin = c.result(
        "file/upload/begin",
        json!({"session_id": session, "size_bytes": bytes.len(), "filename": filename, "sha256": sha(bytes)}),
    );
    assert_eq!(
        (begin["chunk_bytes"].clone(), begin["max_bytes"].clone()),
        (json!(1048576), json!(10485760))
    );
    let id = begin["upload_id"].as_str().unwrap().to_string();
    let mut offset = 0;
    let mut i = 0;
    while offset < bytes.len() {
        let n = sizes[i % sizes.len()]
            .clamp(1, 1024 * 1024)
            .min(bytes.len() - offset);
        let r = c.result(
            "file/upload/chunk",
            json!({"upload_id": id, "offset": offset, "data_b64": b64(&bytes[offset..offset + n])}),
        );
        offset += n;
        assert_eq!(r, json!({"upload_id": id, "received_bytes": offset}));
        i += 1;
    }
    c.result("file/upload/commit", json!({"upload_id": id}))
}

#[test]
fn attach_stores_by_content_and_dedupes_per_session() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let s = new_session(&mut c, "files-1");
    let workspace = PathBuf::from(s["workspaceDir"].as_str().unwrap());
    let r = c.result(
        "file/attach",
        json!({"sessionId": "files-1", "files": [
            {"dataB64": b64(b"hello"), "filename": "notes.txt"},
            {"data_b64": b64(b"\x89PNG..."), "filename": "pic.png", "mime_type": "image/png"},
        ]}),
    );
    let files = r["files"].as_array().unwrap();
    let path = workspace
        .join("uploads")
        .join(format!("{}.txt", sha(b"hello")));
    assert_eq!(
        files[0],
        json!({
            "ref_id": format!("sha256:{}", sha(b"hello")),
            "marker": format!("[Document: notes.txt] {}", path.display()),
            "workspace_path": path.display().to_string(),
            "size_bytes": 5,
            "deduplicated": false,
        })
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"hello");
    assert!(files[1]["marker"].as_str().unwrap().starts_with("[IMAGE:/"));
    let again = c.result(
        "file/attach",
        json!({"sessionId": "files-1", "files": [{"dataB64": b64(b"hello")}]}),
    );
    assert_eq!(again["files"][0]["deduplicated"], true);
    assert_eq!(
        again["files"][0]["workspace_path"],
        files[0]["workspace_path"]
    );

    // errors
    assert_eq!(
        code(&c.error(
            "file/attach",
            json!({"sessionId": "nope", "files": [{"dataB64": "aA=="}]})
        )),
        -32000
    );
    assert_eq!(
        code(&c.error(
            "file/attach",
            json!({"sessionId": "files-1", "files": [{"dataB64": "!!"}]})
        )),
        -32602
    );
    assert_eq!(
        code(&c.error(
            "file/attach",
            json!({"sessionId": "files-1", "files": [{}]})
        )),
        -32602
    );
    let name = "n".repeat(256);
    assert_eq!(
        code(&c.error(
            "file/attach",
            json!({"sessionId": "files-1", "files": [{"dataB64": "aA==", "filename": name}]})
        )),
        -32602
    );
    // Over one frame, base64 cannot carry 10 MiB; the size limits are met in path mode.
    let big = daemon.config_dir().join("big.bin");
    std::fs::write(&big, vec![7u8; 10 * 1024 * 1024 + 1]).unwrap();
    assert_eq!(
        code(&c.error(
            "file/attach",
            json!({"sessionId": "files-1", "files": [{"path": big}]})
        )),
        -32602
    );
    let eight = daemon.config_dir().join("eight.bin");
    std::fs::write(&eight, vec![8u8; 8 * 1024 * 1024]).unwrap();
    let e = c.error("file/attach", json!({"sessionId": "files-1", "files": [{"path": eight}, {"path": eight}, {"path": eight}]}));
    assert_eq!(code(&e), -32602, "over 20 MiB per request: {e}");

    // path mode (local, operator)
    let local = daemon.config_dir().join("local.md");
    std::fs::write(&local, b"# local").unwrap();
    let r = c.result(
        "file/attach",
        json!({"sessionId": "files-1", "files": [{"path": local}]}),
    );
    assert!(
        r["files"][0]["marker"]
            .as_str()
            .unwrap()
            .starts_with("[Document: local.md] "),
        "{r}"
    );
}

#[test]
fn tampered_uploads_are_written_back_and_symlinked_uploads_refused() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let s = new_session(&mut c, "tamper");
    let first = c.result("file/attach", json!({"sessionId": "tamper", "files": [{"dataB64": b64(b"keep me"), "filename": "k.txt"}]}));
    let path = PathBuf::from(first["files"][0]["workspace_path"].as_str().unwrap());
    std::fs::write(&path, b"edited").unwrap();
    let r = upload(&mut c, "tamper", b"keep me", &[3], "k.txt");
    assert_eq!(r["deduplicated"], true);
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
    std::fs::remove_file(&path).unwrap();
    let outside = daemon.config_dir().join("outside.txt");
    std::fs::write(&outside, b"not yours").unwrap();
    std::os::unix::fs::symlink(&outside, &path).unwrap();
    c.result(
        "file/attach",
        json!({"sessionId": "tamper", "files": [{"dataB64": b64(b"keep me")}]}),
    );
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_file()
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");

    // a workspace whose uploads/ is a symlink is never written through
    let workspace = PathBuf::from(s["workspaceDir"].as_str().unwrap());
    let uploads = workspace.join("uploads");
    std::fs::rename(&uploads, workspace.join("old-uploads")).unwrap();
    let elsewhere = daemon.config_dir().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &uploads).unwrap();
    let e = c.error(
        "file/attach",
        json!({"sessionId": "tamper", "files": [{"dataB64": b64(b"new content")}]}),
    );
    assert_eq!(code(&e), -32603);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn chunked_upload_error_rows() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "up");
    let begin = |c: &mut Conn, size: usize| -> String {
        c.result(
            "file/upload/begin",
            json!({"session_id": "up", "size_bytes": size}),
        )["upload_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let id = begin(&mut c, 6);
    let chunk = |c: &mut Conn, id: &str, offset: usize, data: &[u8]| {
        c.call(
            "file/upload/chunk",
            json!({"upload_id": id, "offset": offset, "data_b64": b64(data)}),
        )
    };
    assert_eq!(chunk(&mut c, &id, 0, b"abc")["result"]["received_bytes"], 3);
    assert_eq!(
        chunk(&mut c, &id, 0, b"abc")["result"]["received_bytes"],
        3,
        "identical retry"
    );
    assert_eq!(
        code(&chunk(&mut c, &id, 0, b"abd")["error"]),
        -32602,
        "conflict"
    );
    assert_eq!(code(&chunk(&mut c, &id, 4, b"e")["error"]), -32602, "gap");
    assert_eq!(
        code(&chunk(&mut c, &id, 3, b"defg")["error"]),
        -32602,
        "past size"
    );
    assert_eq!(
        code(&c.error("file/upload/commit", json!({"upload_id": id}))),
        -32602,
        "incomplete"
    );
    // another connection cannot name it
    let mut other = daemon.client();
    let e = other.error(
        "file/upload/chunk",
        json!({"upload_id": id, "offset": 3, "data_b64": b64(b"def")}),
    );
    assert_eq!(
        (code(&e), e["message"].as_str().unwrap()),
        (-32602, format!("unknown upload {id}").as_str())
    );
    assert_eq!(
        code(&other.error("file/upload/commit", json!({"upload_id": id}))),
        -32602
    );
    assert_eq!(chunk(&mut c, &id, 3, b"def")["result"]["received_bytes"], 6);
    assert_eq!(
        c.result("file/upload/commit", json!({"upload_id": id}))["size_bytes"],
        6
    );
    assert_eq!(
        code(&c.error("file/upload/commit", json!({"upload_id": id}))),
        -32602,
        "unknown after commit"
    );

    // declared hash mismatch: nothing written
    let r = c.result(
        "file/upload/begin",
        json!({"session_id": "up", "size_bytes": 2, "sha256": sha(b"no")}),
    );
    let id = r["upload_id"].as_str().unwrap();
    chunk(&mut c, id, 0, b"ok");
    let e = c.error("file/upload/commit", json!({"upload_id": id}));
    assert_eq!(code(&e), -32602);
    let ws = daemon.config_dir().join("agents/default/workspace/uploads");
    assert!(!ws.join(sha(b"ok")).exists());

    // limits: chunk > 1 MiB, file > 10 MiB, filename > 255 bytes, unknown session, 5th staged
    let id = begin(&mut c, 2 * 1024 * 1024);
    assert_eq!(
        code(&chunk(&mut c, &id, 0, &vec![0u8; 1024 * 1024 + 1])["error"]),
        -32602
    );
    assert_eq!(
        code(&c.error(
            "file/upload/begin",
            json!({"session_id": "up", "size_bytes": 10 * 1024 * 1024 + 1})
        )),
        -32602
    );
    assert_eq!(
        code(&c.error(
            "file/upload/begin",
            json!({"session_id": "up", "size_bytes": 1, "filename": "x".repeat(256)})
        )),
        -32602
    );
    assert_eq!(
        code(&c.error(
            "file/upload/begin",
            json!({"session_id": "nope", "size_bytes": 1})
        )),
        -32000
    );
    assert_eq!(
        code(&c.error(
            "file/upload/chunk",
            json!({"upload_id": "up-0-999", "offset": 0, "data_b64": ""})
        )),
        -32602
    );
    for _ in 0..3 {
        begin(&mut c, 0);
    }
    let e = c.error(
        "file/upload/begin",
        json!({"session_id": "up", "size_bytes": 0}),
    );
    assert_eq!(
        (code(&e), e["data"].clone()),
        (-32013, json!({"limit": 4, "value": 5}))
    );
}

#[test]
fn uploads_of_a_closed_connection_release_the_budget() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "budget");
    // 6 uploads of 10 MiB over 2 connections reserve most of the principal's share of the
    // budget (a quarter of 256 MiB, SPEC §17.2).
    let mut holders: Vec<Conn> = (0..2).map(|_| daemon.client()).collect();
    for i in 0..6 {
        holders[i / 4].result(
            "file/upload/begin",
            json!({"session_id": "budget", "size_bytes": 10 * 1024 * 1024}),
        );
    }
    let e = c.error(
        "file/upload/begin",
        json!({"session_id": "budget", "size_bytes": 10 * 1024 * 1024}),
    );
    assert_eq!(code(&e), -32013);
    assert_eq!(e["data"]["limit"], 64 * 1024 * 1024);
    holders.clear();
    // Closing is asynchronous; the budget comes back within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = c.call(
            "file/upload/begin",
            json!({"session_id": "budget", "size_bytes": 10 * 1024 * 1024}),
        );
        if r.get("result").is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "budget not released: {r}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_session_recreated_during_an_upload_fails_the_commit() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "gen");
    let r = c.result(
        "file/upload/begin",
        json!({"session_id": "gen", "size_bytes": 4}),
    );
    let id = r["upload_id"].as_str().unwrap().to_string();
    c.result(
        "file/upload/chunk",
        json!({"upload_id": id, "offset": 0, "data_b64": b64(b"gone")}),
    );
    c.result("session/close", json!({"sessionId": "gen"}));
    new_session(&mut c, "gen");
    let e = c.error("file/upload/commit", json!({"upload_id": id}));
    assert_eq!(code(&e), -32000, "{e}");
    assert!(
        !daemon
            .config_dir()
            .join("agents/default/workspace/uploads")
            .join(sha(b"gone"))
            .exists()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    #[test]
    fn random_files_in_random_chunks_arrive_intact(
        len in 0usize..3_000_000,
        seed in any::<u64>(),
        sizes in proptest::collection::vec(1usize..1_200_000, 1..6),
    ) {
        let daemon = TestDaemon::start();
        let mut c = daemon.client();
        new_session(&mut c, "prop");
        let mut x = seed | 1;
        let bytes: Vec<u8> = (0..len).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
        let r = upload(&mut c, "prop", &bytes, &sizes, "blob.bin");
        let path = PathBuf::from(r["workspace_path"].as_str().unwrap());
        prop_assert_eq!(r["ref_id"].as_str().unwrap(), format!("sha256:{}", sha(&bytes)));
        prop_assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn upload_command_stores_files_and_prints_their_entries() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "cli");
    let file = daemon.config_dir().join("report.pdf");
    let bytes: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let out = std::process::Command::new(common::BIN)
        .args([
            "--config-dir",
            daemon.config_dir().to_str().unwrap(),
            "upload",
            "--json",
            "--session",
            "cli",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entry: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entry["ref_id"], format!("sha256:{}", sha(&bytes)));
    assert!(
        entry["marker"]
            .as_str()
            .unwrap()
            .starts_with("[Document: report.pdf] "),
        "{entry}"
    );
    assert_eq!(
        std::fs::read(entry["workspace_path"].as_str().unwrap()).unwrap(),
        bytes
    );
}

#[test]
fn prompt_attachments_append_their_markers() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "att");
    let r = c.result(
        "session/prompt",
        json!({"sessionId": "att", "prompt": "summarize", "attachments": [{"dataB64": b64(b"data"), "filename": "d.csv"}]}),
    );
    let path = daemon
        .config_dir()
        .join("agents/default/workspace/uploads")
        .join(format!("{}.csv", sha(b"data")));
    // The echo agent repeats the prompt it was given: the text, then the marker line.
    assert_eq!(
        r["content"],
        format!("summarize\n[Document: d.csv] {}", path.display()),
        "{r}"
    );
    assert!(path.exists());
}

#[test]
fn attachments_to_a_closed_session_rehydrate_it_first() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    new_session(&mut c, "later");
    c.result(
        "session/prompt",
        json!({"sessionId": "later", "prompt": "first"}),
    );
    c.result("session/close", json!({"sessionId": "later"}));
    let r = c.result(
        "session/prompt",
        json!({"sessionId": "later", "prompt": "again", "attachments": [{"dataB64": b64(b"x"), "filename": "x.txt"}]}),
    );
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .starts_with("again\n[Document: x.txt] "),
        "{r}"
    );
    let messages = c.result("session/messages", json!({"sessionId": "later"}));
    assert_eq!(messages["total"], 4, "{messages}");
}

/// A daemon where local uid `uid` is user `tester` (profile `uploader`), reachable by it.
fn uploader_daemon(uid: u32) -> TestDaemon {
    use std::os::unix::fs::PermissionsExt;
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\n[agents.other]\nprovider = \"echo\"\n\
                 [permission_profiles.uploader]\ngrants = {{ sessions = [\"create\", \"read\", \"update\", \"execute\"], files = [\"create\"] }}\n\
                 allowed_agents = [\"default\"]\n[users.tester]\nuid = {uid}\npermission_profiles = [\"uploader\"]\n"
            ),
        )
        .unwrap();
    });
    // Widen access for this test only: the other uid must reach and open the socket.
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
fn commit_rechecks_grants_ownership_and_agent_against_the_policy_in_force() {
    assert!(common::is_root(), "needs root to connect as another uid");
    let uid = common::test_uid();
    let daemon = uploader_daemon(uid);
    let mut op = daemon.client();
    let mut u = common::UidConn::open(&daemon.socket, uid);
    assert!(u.call("initialize", json!({})).get("result").is_some());
    assert!(
        u.call(
            "session/new",
            json!({"agentAlias": "default", "sessionId": "mine"})
        )
        .get("result")
        .is_some()
    );
    op.result(
        "session/new",
        json!({"agentAlias": "other", "sessionId": "ops"}),
    );

    // at begin: someone else's session, an agent not allowed
    let e = u.call(
        "file/upload/begin",
        json!({"session_id": "ops", "size_bytes": 1}),
    );
    assert_eq!(code(&e["error"]), -32003, "{e}");
    let e = u.call("session/new", json!({"agentAlias": "other"}));
    assert_eq!(code(&e["error"]), -32012, "{e}");
    let e = u.call(
        "file/attach",
        json!({"sessionId": "mine", "files": [{"path": "/etc/hostname"}]}),
    );
    assert_eq!(
        code(&e["error"]),
        -32012,
        "no path mode for non-admin principals: {e}"
    );

    let uploads = daemon.config_dir().join("agents/default/workspace/uploads");
    let begin_and_send = |u: &mut common::UidConn, bytes: &[u8]| -> String {
        let r = u.call(
            "file/upload/begin",
            json!({"session_id": "mine", "size_bytes": bytes.len()}),
        );
        let id = r["result"]["upload_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string();
        let r = u.call(
            "file/upload/chunk",
            json!({"upload_id": id, "offset": 0, "data_b64": b64(bytes)}),
        );
        assert_eq!(r["result"]["received_bytes"], bytes.len(), "{r}");
        id
    };

    // files:create revoked between begin and commit
    let id = begin_and_send(&mut u, b"first");
    op.result(
        "config/set",
        json!({"prop": "permission_profiles.uploader.grants", "value": {"sessions": ["create", "read", "update", "execute"]}}),
    );
    let e = u.call("file/upload/commit", json!({"upload_id": id}));
    assert_eq!(code(&e["error"]), -32012, "{e}");
    assert!(!uploads.join(sha(b"first")).exists(), "nothing written");

    // the agent no longer allowed between begin and commit
    op.result(
        "config/set",
        json!({"prop": "permission_profiles.uploader.grants", "value": {"sessions": ["create", "read", "update", "execute"], "files": ["create"]}}),
    );
    let id = begin_and_send(&mut u, b"second");
    op.result(
        "config/set",
        json!({"prop": "permission_profiles.uploader.allowed_agents", "value": []}),
    );
    let e = u.call("file/upload/commit", json!({"upload_id": id}));
    assert_eq!(code(&e["error"]), -32012, "{e}");
    assert!(!uploads.join(sha(b"second")).exists(), "nothing written");

    // with the policy restored, the same kind of upload goes through
    op.result(
        "config/set",
        json!({"prop": "permission_profiles.uploader.allowed_agents", "value": ["default"]}),
    );
    let id = begin_and_send(&mut u, b"third");
    let r = u.call("file/upload/commit", json!({"upload_id": id}));
    assert_eq!(
        r["result"]["ref_id"],
        format!("sha256:{}", sha(b"third")),
        "{r}"
    );
}
