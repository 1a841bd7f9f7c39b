//! Configuration hardening against the real daemon (SPEC §4.1 "No escalation", §5 status,
//! §17 secrets, value limits and leftovers; `restartRequired`): a second local uid — as
//! root — trying to become an admin, oversized values, and temp files left by a crash.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::{BIN, TestDaemon, UidConn, code, is_root, test_uid};
use serde_json::json;

fn config_bytes(daemon: &TestDaemon) -> Vec<u8> {
    std::fs::read(daemon.config_dir().join("config.toml")).unwrap()
}

/// A daemon where `uid` is `user:tester`, allowed to write users and profiles (and, by
/// path, providers) but holding no admin, and `user:boss` (uid+1) is an admin.
fn escalation_daemon(uid: u32) -> TestDaemon {
    let boss = uid + 1;
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[providers.echo]\nkind = \"echo\"\n\
                 [providers.remote]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-secret\"\n\
                 [agents.default]\nprovider = \"echo\"\n\
                 [permission_profiles.editor]\n\
                 grants = {{ config = [\"read\", \"update\", \"delete\"], system = [\"read\"] }}\n\
                 allowed_agents = [\"default\"]\n\
                 config_write_paths = [\"users.*\", \"permission_profiles.*\", \"providers.*\"]\n\
                 [permission_profiles.boss]\nadmin = true\n\
                 [permission_profiles.reader]\ngrants = {{ config = [\"read\"] }}\n\
                 [users.tester]\nuid = {uid}\npermission_profiles = [\"editor\"]\n\
                 [users.boss]\nuid = {boss}\npermission_profiles = [\"boss\"]\n"
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

fn tester(daemon: &TestDaemon, uid: u32) -> UidConn {
    let mut u = UidConn::open(&daemon.socket, uid);
    let init = u.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(
        init["result"]["principal"],
        json!({"id": "user:tester", "admin": false}),
        "{init}"
    );
    u
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_who_may_write_users_cannot_make_itself_admin() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let daemon = escalation_daemon(uid);
    let mut u = tester(&daemon, uid);
    let before = config_bytes(&daemon);
    let refused = |u: &mut UidConn, method: &str, params: serde_json::Value| {
        let r = u.call(method, params.clone());
        assert_eq!(code(&r["error"]), -32012, "{method} {params}: {r}");
        r["error"]["data"].clone()
    };

    // its own permission_profiles → the admin profile
    let data = refused(
        &mut u,
        "config/set",
        json!({"prop": "users.tester.permission_profiles", "value": ["boss"]}),
    );
    assert_eq!(data, json!({"prop": "users.tester.permission_profiles"}));
    // swapping its uid with the admin's (one batch: each alone is a duplicate uid)
    let data = refused(
        &mut u,
        "config/set-many",
        json!({"sets": [
            {"prop": "users.tester.uid", "value": uid + 1},
            {"prop": "users.boss.uid", "value": uid},
        ]}),
    );
    assert_eq!(data, json!({"index": 1, "prop": "users.boss.uid"}));
    // a new admin profile, then assigning it
    let data = refused(
        &mut u,
        "config/set-many",
        json!({"sets": [
            {"prop": "permission_profiles.mine", "value": {"admin": true}},
            {"prop": "users.tester.permission_profiles", "value": ["editor", "mine"]},
        ]}),
    );
    assert_eq!(
        data,
        json!({"index": 0, "prop": "permission_profiles.mine"})
    );
    // a grant added to its own profile
    let data = refused(
        &mut u,
        "config/set",
        json!({"prop": "permission_profiles.editor.grants.sessions", "value": ["read", "delete"]}),
    );
    assert_eq!(
        data,
        json!({"prop": "permission_profiles.editor.grants.sessions"})
    );
    // the stored key's endpoint and the key variable, whatever config_write_paths says
    for (prop, value) in [
        (
            "providers.remote.base_url",
            json!("http://127.0.0.1:1/steal"),
        ),
        (
            "providers.remote.api_key_env",
            json!("DAEMON_PRIVATE_TOKEN"),
        ),
        ("providers.remote", json!({"kind": "openai"})),
    ] {
        refused(&mut u, "config/set", json!({"prop": prop, "value": value}));
    }
    refused(
        &mut u,
        "config/delete",
        json!({"prop": "providers.remote.base_url"}),
    );
    assert_eq!(
        config_bytes(&daemon),
        before,
        "every refusal left the file alone"
    );

    // one uid on two users is invalid, whoever asks
    let e = u.call(
        "config/set",
        json!({"prop": "users.tester.uid", "value": uid + 1}),
    );
    assert_eq!(code(&e["error"]), -32602, "{e}");
    let e = daemon.client().error(
        "config/set",
        json!({"prop": "users.boss.uid", "value": uid}),
    );
    assert_eq!(code(&e), -32602, "{e}");
    assert_eq!(config_bytes(&daemon), before);

    // legitimate: another uid gets a subset of the writer's rights
    let r = u.call(
        "config/set-many",
        json!({"sets": [
            {"prop": "users.helper.uid", "value": uid + 2},
            {"prop": "users.helper.permission_profiles", "value": ["reader"]},
        ]}),
    );
    assert_eq!(r["result"]["set"], true, "{r}");
    let r = u.call(
        "config/set",
        json!({"prop": "providers.remote.model", "value": "m2"}),
    );
    assert_eq!(r["result"]["set"], true, "{r}");
    // and still no admin
    let init = UidConn::open(&daemon.socket, uid).call("initialize", json!({}));
    assert_eq!(init["result"]["principal"]["admin"], false);
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn status_hides_the_host_from_non_admins() {
    assert!(is_root(), "needs root to connect as another uid");
    let uid = test_uid();
    let daemon = escalation_daemon(uid);
    let mut u = tester(&daemon, uid);
    let s = u.call("status", json!({}))["result"].clone();
    let fields = s.as_object().expect("status object");
    for hidden in ["configDir", "dataDir", "serverPid", "endpoint"] {
        assert!(!fields.contains_key(hidden), "{hidden} shown: {s}");
    }
    for shown in [
        "protocolVersion",
        "serverVersion",
        "uptimeSecs",
        "connections",
        "activeSessions",
        "sessionIds",
    ] {
        assert!(fields.contains_key(shown), "{shown} missing: {s}");
    }
    // the admin still sees everything
    let s = daemon.client().result("status", json!({}));
    for field in ["configDir", "dataDir", "serverPid", "endpoint"] {
        assert!(s.get(field).is_some(), "{field} missing for the admin: {s}");
    }
}

#[test]
fn oversized_values_are_refused_and_get_fits_a_frame() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let before = config_bytes(&daemon);
    let big = "x".repeat(5 * 1024 * 1024);
    for prop in ["agents.default.system_prompt", "agents.default.model"] {
        let e = c.error("config/set", json!({"prop": prop, "value": big}));
        assert_eq!(code(&e), -32602, "{prop}");
        assert_eq!(e["data"]["prop"], prop);
    }
    assert_eq!(config_bytes(&daemon), before);
    // values under 64 KiB each that would make the file over 1 MiB
    let value = "y".repeat(60 * 1024);
    let sets: Vec<_> = (0..20)
        .map(|i| json!({"prop": format!("agents.a{i}.system_prompt"), "value": value}))
        .collect();
    let e = c.error("config/set-many", json!({"sets": sets}));
    assert_eq!(code(&e), -32602);
    assert!(e["message"].as_str().unwrap().contains("1048576"), "{e}");
    assert_eq!(config_bytes(&daemon), before);
    let whole = c.call("config/get", json!({}));
    assert!(whole.to_string().len() < 1024 * 1024, "config/get is small");
}

#[test]
fn restart_required_is_answered_for_wss_and_limits() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let r = c.result("config/set", json!({"prop": "wss.port", "value": 9999}));
    assert_eq!(
        r,
        json!({"prop": "wss.port", "set": true, "restartRequired": true})
    );
    let r = c.result(
        "config/set",
        json!({"prop": "agents.default.model", "value": "m"}),
    );
    assert_eq!(r["restartRequired"], false);
    let r = c.result(
        "config/set-many",
        json!({"sets": [
            {"prop": "agents.default.model", "value": "n"},
            {"prop": "limits.connections_total", "value": 100},
        ]}),
    );
    assert_eq!(r["restartRequired"], true);
    let r = c.result(
        "config/set-many",
        json!({"sets": [{"prop": "users.x.uid", "value": 4242}]}),
    );
    assert_eq!(r["restartRequired"], false);
    let r = c.result("config/delete", json!({"prop": "wss.port"}));
    assert_eq!(
        r,
        json!({"prop": "wss.port", "deleted": true, "restartRequired": true})
    );
    let r = c.result("config/delete", json!({"prop": "users.x"}));
    assert_eq!(r["restartRequired"], false);
}

#[test]
fn a_lone_cert_path_names_each_property_once() {
    let daemon = TestDaemon::start();
    let mut c = daemon.client();
    let e = c.error(
        "config/set",
        json!({"prop": "wss.cert_path", "value": "/tmp/cert.pem"}),
    );
    assert_eq!(code(&e), -32602);
    assert_eq!(
        e["message"],
        "wss.cert_path: wss.key_path must be set too: the certificate and the key go together"
    );
    // the CLI shows the same message
    let out = Command::new(BIN)
        .arg("--config-dir")
        .arg(daemon.config_dir())
        .args(["config", "set", "wss.cert_path", "/tmp/cert.pem"])
        .env_remove("ZEROCLAW_SOCKET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("wss.cert_path: wss.key_path must be set too")
            && !stderr.contains("wss.cert_path: wss.key_path:"),
        "{stderr}"
    );
    // both together are accepted
    let r = c.result(
        "config/set-many",
        json!({"sets": [
            {"prop": "wss.cert_path", "value": "/tmp/cert.pem"},
            {"prop": "wss.key_path", "value": "/tmp/key.pem"},
        ]}),
    );
    assert_eq!(r["restartRequired"], true);
}

#[test]
fn config_temp_files_left_by_a_crash_are_swept_at_start() {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join(".config.toml.abc123"), "half a write").unwrap();
        std::fs::write(dir.join(".config.toml.Zz9Yy8"), "another").unwrap();
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        std::fs::write(dir.join(".config.toml.bak~"), "mine too").unwrap();
    });
    let dir = daemon.config_dir();
    // The socket is bound before the sweep (the sweep waits until this daemon holds the
    // endpoint), but nothing is served before it: one answered call orders the two.
    let mut c = daemon.client();
    c.result("status", json!({}));
    assert!(!dir.join(".config.toml.abc123").exists());
    assert!(!dir.join(".config.toml.Zz9Yy8").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(dir.join(".config.toml.bak~").exists());
    assert!(dir.join("config.toml").exists());
    // the writer's own temp files follow the swept pattern: none is left after a write
    c.result("config/set", json!({"prop": "users.x.uid", "value": 4242}));
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".config.toml.") && n != ".config.toml.bak~")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
