//! Configuration hardening, second pass (SPEC §17.1), against the real daemon with the
//! hostile side played by another local uid: no command run for a user who may only edit
//! agents, secrets masked in `config/get` and `models/list`, one `GET /models` for many
//! concurrent lists, identities not taken, and a batch blamed on the entry that escalates
//! (SPEC §4.1).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, Fake, TestDaemon, UidConn, code, is_root, session_config, test_uid};
use serde_json::{Value, json};

/// Connects as `uid` (through `zeroclaw connect`) and initializes as principal
/// `user:<name>`.
fn peer(daemon: &TestDaemon, uid: u32, name: &str) -> UidConn {
    let mut peer = UidConn::open(&daemon.socket, uid);
    let init = peer.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(
        init["result"]["principal"],
        json!({"id": format!("user:{name}"), "admin": false}),
        "{init}"
    );
    peer
}

/// `data` of a -32012 refusal.
trait Refused {
    fn refused(&mut self, method: &str, params: Value) -> Value;
}

impl Refused for UidConn {
    fn refused(&mut self, method: &str, params: Value) -> Value {
        let error = self.error(method, params.clone());
        assert_eq!(code(&error), -32012, "{method} {params}: {error}");
        error["data"].clone()
    }
}

/// A daemon on `config`, its socket reachable by other uids.
fn open_daemon(config: String) -> TestDaemon {
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    for (path, mode) in [
        (daemon.config_dir().to_path_buf(), 0o711),
        (daemon.config_dir().join("data"), 0o711),
        (daemon.socket.clone(), 0o666),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    daemon
}

fn config_bytes(daemon: &TestDaemon) -> Vec<u8> {
    std::fs::read(daemon.config_dir().join("config.toml")).unwrap()
}

/// Waits up to `limit` for `path` to exist.
fn appears(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists()
}

macro_rules! needs_root {
    () => {
        assert!(is_root(), "needs root to connect as another uid");
    };
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_who_may_edit_agents_cannot_make_the_daemon_run_a_command() {
    needs_root!();
    let uid = test_uid();
    let daemon = open_daemon(format!(
        "[providers.echo]\nkind = \"echo\"\n\
         [agents.default]\nprovider = \"echo\"\n\
         [agents.ops]\nprovider = \"echo\"\n\
         [permission_profiles.agents]\n\
         grants = {{ config = [\"read\", \"update\", \"delete\"], sessions = [\"create\", \"execute\", \"read\"] }}\n\
         allowed_agents = [\"*\"]\n\
         config_write_paths = [\"agents.*\"]\n\
         [permission_profiles.everything]\n\
         grants = {{ config = [\"read\", \"update\", \"delete\"] }}\n\
         config_write_paths = [\"*\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"agents\"]\n\
         [users.wide]\nuid = {}\npermission_profiles = [\"everything\"]\n",
        uid + 1
    ));
    // The markers' own directory: the config dir itself holds the daemon's files, which no
    // program it starts may write (SPEC §17.2), so a server cannot make files directly there.
    let dir = daemon.config_dir().join("markers");
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("pwned");
    let server = |file: &Path| json!({"command": "/bin/sh", "args": ["-c", format!("id > {}", file.display())]});
    let evil = server(&marker);
    let mut admin = daemon.client();
    // The markers lie outside the sessions' cwd: the sandbox (SPEC §21.2) must let a server
    // that runs write there, or a missing marker would prove nothing.
    for agent in ["default", "ops"] {
        admin.result(
            "config/set",
            json!({"prop": format!("agents.{agent}.sandbox_writable"),
                   "value": [dir.display().to_string()]}),
        );
    }

    // Control: a server the admin configures does run, for every session of its agent.
    let control = dir.join("control");
    admin.result(
        "config/set",
        json!({"prop": "agents.ops.mcp_servers.probe", "value": server(&control)}),
    );
    let before = config_bytes(&daemon);

    let mut u = peer(&daemon, uid, "tester");
    let server_prop = "agents.default.mcp_servers.evil";
    // by its own path, in each method
    assert_eq!(
        u.refused("config/set", json!({"prop": server_prop, "value": evil})),
        json!({"prop": server_prop})
    );
    assert_eq!(
        u.refused(
            "config/set-many",
            json!({"sets": [
                {"prop": "agents.default.model", "value": "m"},
                {"prop": server_prop, "value": evil},
            ]})
        ),
        json!({"index": 1, "prop": server_prop})
    );
    assert_eq!(
        u.refused(
            "config/delete",
            json!({"prop": "agents.ops.mcp_servers.probe"})
        ),
        json!({"prop": "agents.ops.mcp_servers.probe"})
    );
    // from a table above it: the agent replaced, a new agent, a new agent then its servers
    let agent = json!({"provider": "echo", "mcp_servers": {"evil": evil}});
    for prop in ["agents.default", "agents.fresh"] {
        assert_eq!(
            u.refused("config/set", json!({"prop": prop, "value": agent})),
            json!({"prop": prop})
        );
    }
    assert_eq!(
        u.refused(
            "config/set-many",
            json!({"sets": [
                {"prop": "agents.fresh", "value": {"provider": "echo"}},
                {"prop": "agents.fresh.mcp_servers", "value": {"evil": evil}},
            ]})
        ),
        json!({"index": 1, "prop": "agents.fresh.mcp_servers"})
    );
    // the admin's servers are not dropped with the agent either
    assert_eq!(
        u.refused(
            "config/set",
            json!({"prop": "agents.ops", "value": {"provider": "echo"}})
        ),
        json!({"prop": "agents.ops"})
    );
    assert_eq!(
        u.refused("config/delete", json!({"prop": "agents.ops"})),
        json!({"prop": "agents.ops"})
    );
    // hooks (SPEC §21.1) and the sandbox (§21.2): admin-only
    for (prop, value) in [
        (
            "agents.default.hooks.session_start",
            json!([{"command": format!("id > {}", marker.display())}]),
        ),
        ("agents.default.sandbox", json!("off")),
        ("agents.default.sandbox_writable", json!(["/"])),
        ("agents.default.sandbox_network", json!(true)),
    ] {
        assert_eq!(
            u.refused("config/set", json!({"prop": prop, "value": value})),
            json!({"prop": prop})
        );
    }
    // `agents` whole, by a user whose paths cover everything
    let mut wide = peer(&daemon, uid + 1, "wide");
    assert_eq!(
        wide.refused(
            "config/set",
            json!({"prop": "agents", "value": {"default": agent, "ops": {"provider": "echo"}}})
        ),
        json!({"prop": "agents"})
    );
    assert_eq!(
        wide.refused(
            "config/set",
            json!({"prop": "hooks", "value": {"stop": [{"command": "true"}]}})
        ),
        json!({"prop": "hooks"})
    );
    assert_eq!(
        config_bytes(&daemon),
        before,
        "every refusal left the file alone"
    );

    // What is the user's to change still changes.
    let r = u.result(
        "config/set",
        json!({"prop": "agents.default.system_prompt", "value": "be brief"}),
    );
    assert_eq!(r["set"], true);
    let r = u.result(
        "config/set",
        json!({"prop": "agents.fresh", "value": {"provider": "echo"}}),
    );
    assert_eq!(r["set"], true);

    // Sessions of the agent, the user's and the admin's, prompted: nothing runs.
    let mine = u.result("session/new", json!({"agentAlias": "default"}))["sessionId"].clone();
    let answer = u.result("session/prompt", json!({"sessionId": mine, "prompt": "hi"}));
    assert_eq!(answer["outcome"], "completed", "{answer}");
    let theirs = admin.new_session(json!({"agentAlias": "default"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, answer) = admin.prompt(&theirs, "hi");
    assert_eq!(answer["result"]["outcome"], "completed", "{answer}");
    let status = admin.result("session/status", json!({"sessionId": theirs}));
    assert_eq!(status["mcpServers"], json!([]), "{status}");
    // the admin's probe agent shows how soon a configured server would have run
    let probe = admin.new_session(json!({"agentAlias": "ops"}))["sessionId"].clone();
    assert!(probe.is_string());
    assert!(
        appears(&control, Duration::from_secs(10)),
        "the admin's own server never ran"
    );
    assert!(
        !appears(&marker, Duration::from_secs(1)),
        "a command written by a non-admin ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

#[test]
fn config_get_masks_mcp_env_values_and_url_credentials() {
    let fake = Fake::start();
    let base = fake
        .server
        .base_url()
        .replace("http://", "http://me:hunter2@");
    let config = session_config(
        &base,
        "[agents.default.mcp_servers.gh]\n\
         command = \"/bin/true\"\n\
         args = [\"--api\", \"https://bot:t0ken@git.example/api\"]\n\
         env = { GITHUB_TOKEN = \"ghp_secret\", EMPTY = \"\" }\n\
         [providers.keyed]\nkind = \"openai\"\napi_key = \"sk-secret\"\n",
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let leaks = |text: &str| {
        ["hunter2", "ghp_secret", "t0ken", "sk-secret", "me:", "bot:"]
            .into_iter()
            .filter(|s| text.contains(s))
            .collect::<Vec<_>>()
    };
    // the whole config, and each table or property on its own
    let whole = c.result("config/get", json!({}));
    assert!(leaks(&whole.to_string()).is_empty(), "{whole}");
    let server = &whole["config"]["agents"]["default"]["mcp_servers"]["gh"];
    assert_eq!(server["env"], json!({"GITHUB_TOKEN": "***", "EMPTY": ""}));
    assert_eq!(
        server["args"],
        json!(["--api", "https://***@git.example/api"])
    );
    let masked_base = format!("http://***@{}", fake.server.addr());
    assert_eq!(
        whole["config"]["providers"]["fake"]["base_url"],
        format!("{masked_base}/v1")
    );
    assert_eq!(whole["config"]["providers"]["keyed"]["api_key"], "***");
    for (prop, value) in [
        (
            "agents.default.mcp_servers.gh.env.GITHUB_TOKEN",
            json!("***"),
        ),
        (
            "agents.default.mcp_servers.gh.env",
            json!({"GITHUB_TOKEN": "***", "EMPTY": ""}),
        ),
        (
            "providers.fake.base_url",
            json!(format!("{masked_base}/v1")),
        ),
    ] {
        let r = c.result("config/get", json!({"prop": prop}));
        assert_eq!(r["value"], value, "{prop}");
    }
    for prop in ["agents", "agents.default", "providers", "providers.fake"] {
        let r = c.result("config/get", json!({"prop": prop}));
        assert!(leaks(&r.to_string()).is_empty(), "{prop}: {r}");
    }
    // the TOML the command line prints
    for args in [
        &["config", "get"][..],
        &["config", "get", "agents.default"][..],
    ] {
        let out = Command::new(BIN)
            .arg("--config-dir")
            .arg(daemon.config_dir())
            .args(args)
            .env_remove("ZEROCLAW_SOCKET")
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env_remove("ZEROCLAW_DATA_DIR")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        assert!(text.contains("GITHUB_TOKEN"), "{args:?}: {text}");
        assert!(leaks(&text).is_empty(), "{args:?}: {text}");
    }
}

#[test]
fn models_list_shows_no_credentials_in_errors() {
    let fake = Fake::start();
    fake.server.set_models(Err(500));
    // a port nothing listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let base = fake
        .server
        .base_url()
        .replace("http://", "http://me:hunter2@");
    let config = session_config(
        &base,
        &format!(
            "[providers.gone]\nkind = \"openai\"\nbase_url = \"http://me:hunter2@127.0.0.1:{closed}/v1\"\n\
             api_key = \"sk-secret\"\nmodel = \"g\"\n\
             [agents.gone]\nprovider = \"gone\"\n"
        ),
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    let mut c = daemon.client();
    let r = c.result("models/list", json!({}));
    let errors: Vec<&str> = r["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["error"].as_str())
        .collect();
    assert_eq!(errors.len(), 2, "{r}");
    for e in errors {
        assert!(
            !e.contains("hunter2") && !e.contains("me:") && !e.contains("sk-secret"),
            "{e}"
        );
        assert!(
            e.contains("http://127.0.0.1:"),
            "the endpoint is still named: {e}"
        );
    }
}

#[test]
fn concurrent_model_lists_share_one_fetch() {
    let fake = Fake::start();
    fake.server
        .set_models(Ok(vec!["m".to_string(), "other".to_string()]));
    // slow enough that every call arrives while the first fetch is under way
    fake.server.set_models_delay(Duration::from_millis(1500));
    let config = session_config(
        &fake.server.base_url(),
        "[limits]\nconnections_per_principal = 64\n",
    );
    let daemon = TestDaemon::start_with(&[], |dir| {
        std::fs::write(dir.join("config.toml"), config).unwrap();
    });
    const CALLS: usize = 50;
    let mut conns: Vec<_> = (0..CALLS).map(|_| daemon.client()).collect();
    let gate = std::sync::Barrier::new(CALLS);
    let started = Instant::now();
    let answers: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .iter_mut()
            .map(|c| {
                let gate = &gate;
                s.spawn(move || {
                    gate.wait();
                    c.result("models/list", json!({"agentAlias": "default"}))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = started.elapsed();
    for a in &answers {
        assert_eq!(
            a["models"],
            json!([
                {"provider": "fake", "model": "m", "current": true},
                {"provider": "fake", "model": "other", "current": false},
            ])
        );
    }
    let fetches = fake
        .server
        .recorded()
        .iter()
        .filter(|r| r.path.ends_with("/models"))
        .count();
    eprintln!("{CALLS} concurrent models/list: {fetches} GET /models in {elapsed:?}");
    assert_eq!(
        fetches, 1,
        "{CALLS} concurrent lists made {fetches} fetches"
    );
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn models_list_shows_only_the_providers_of_usable_agents() {
    needs_root!();
    let uid = test_uid();
    let fake = Fake::start();
    fake.server.set_models(Ok(vec!["m".to_string()]));
    let config = session_config(
        &fake.server.base_url(),
        &format!(
            "[providers.private]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"p\"\n\
             [agents.private]\nprovider = \"private\"\n\
             [permission_profiles.viewer]\n\
             grants = {{ system = [\"read\"] }}\n\
             allowed_agents = [\"echo\"]\n\
             [users.viewer]\nuid = {uid}\npermission_profiles = [\"viewer\"]\n"
        ),
    );
    let daemon = open_daemon(config);
    let mut u = peer(&daemon, uid, "viewer");
    let r = u.result("models/list", json!({}));
    assert_eq!(
        r["models"],
        json!([{"provider": "echo", "model": "echo", "current": true}])
    );
    let r = u.call("models/list", json!({"agentAlias": "private"}));
    assert_eq!(code(&r["error"]), -32012, "{r}");
    // nothing was asked of a provider the viewer may not use
    assert_eq!(fake.server.recorded().len(), 0);
    // the admin sees every provider
    let r = daemon.client().result("models/list", json!({}));
    let providers: Vec<&str> = r["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["provider"].as_str())
        .collect();
    assert_eq!(providers, ["echo", "fake", "private"], "{r}");
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_user_who_may_write_users_cannot_take_another_identity() {
    needs_root!();
    let uid = test_uid();
    let (a_uid, b_uid) = (uid, uid + 1);
    let daemon = open_daemon(format!(
        "[providers.echo]\nkind = \"echo\"\n\
         [agents.default]\nprovider = \"echo\"\n\
         [permission_profiles.member]\n\
         grants = {{ config = [\"read\", \"update\", \"delete\"], sessions = [\"create\", \"execute\", \"read\"] }}\n\
         allowed_agents = [\"default\"]\n\
         config_write_paths = [\"users.*\"]\n\
         [users.anna]\nuid = {a_uid}\npermission_profiles = [\"member\"]\n\
         [users.bert]\nuid = {b_uid}\npermission_profiles = [\"member\"]\n"
    ));
    // bert's private transcript
    let mut b = peer(&daemon, b_uid, "bert");
    let sid = b.result("session/new", json!({"agentAlias": "default"}))["sessionId"].clone();
    let answer = b.result(
        "session/prompt",
        json!({"sessionId": sid, "prompt": "db password hunter2"}),
    );
    assert_eq!(answer["outcome"], "completed", "{answer}");
    drop(b);
    let before = config_bytes(&daemon);

    // anna swaps their uids (equal rights: no escalation, but bert's identity taken)
    let mut a = peer(&daemon, a_uid, "anna");
    assert_eq!(
        a.refused(
            "config/set-many",
            json!({"sets": [
                {"prop": "users.anna.uid", "value": b_uid},
                {"prop": "users.bert.uid", "value": a_uid},
            ]})
        ),
        json!({"index": 1, "prop": "users.bert.uid"})
    );
    // or moves bert to another uid, or gives herself a new one
    for (prop, value) in [("users.bert.uid", b_uid + 7), ("users.anna.uid", a_uid + 7)] {
        assert_eq!(
            a.refused("config/set", json!({"prop": prop, "value": value})),
            json!({"prop": prop})
        );
    }
    assert_eq!(
        config_bytes(&daemon),
        before,
        "every refusal left the file alone"
    );

    // Neither reads the other's transcript; bert still reads his own.
    let r = a.call("session/messages", json!({"sessionId": sid}));
    assert!(r.get("error").is_some(), "{r}");
    assert!(!r.to_string().contains("hunter2"), "{r}");
    let mut b = peer(&daemon, b_uid, "bert");
    let r = b.result("session/messages", json!({"sessionId": sid}));
    assert!(r.to_string().contains("hunter2"), "{r}");
    drop(b);

    // Deleting bert is within anna's paths; creating a user under his name again is not:
    // it owns sessions. Nor is a name that holds a pairing token.
    a.result("config/delete", json!({"prop": "users.bert"}));
    assert_eq!(
        a.refused(
            "config/set",
            json!({"prop": "users.bert", "value": {"uid": a_uid + 9, "permission_profiles": []}})
        ),
        json!({"prop": "users.bert"})
    );
    let paired = Command::new(BIN)
        .arg("--config-dir")
        .arg(daemon.config_dir())
        .args(["pair", "--user", "ghost"])
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_DATA_DIR")
        .output()
        .unwrap();
    assert_eq!(paired.status.code(), Some(0), "{paired:?}");
    assert_eq!(
        a.refused(
            "config/set",
            json!({"prop": "users.ghost.permission_profiles", "value": []})
        ),
        json!({"prop": "users.ghost.permission_profiles"})
    );
    // a name nobody used is fine
    let r = a.result(
        "config/set",
        json!({"prop": "users.newcomer", "value": {"uid": a_uid + 9, "permission_profiles": []}}),
    );
    assert_eq!(r["set"], true);
    // the admin may do all of it
    let mut admin = daemon.client();
    admin.result(
        "config/set",
        json!({"prop": "users.bert", "value": {"uid": b_uid, "permission_profiles": ["member"]}}),
    );
    admin.result(
        "config/set",
        json!({"prop": "users.ghost", "value": {"permission_profiles": []}}),
    );
}

#[test]
#[ignore = "needs root (connects as another uid): .ci/run runs it as root with --ignored"]
fn a_batch_is_blamed_on_the_entry_that_escalates() {
    needs_root!();
    let uid = test_uid();
    let daemon = open_daemon(format!(
        "[providers.echo]\nkind = \"echo\"\n\
         [agents.default]\nprovider = \"echo\"\n\
         [permission_profiles.editor]\n\
         grants = {{ config = [\"read\", \"update\"], sessions = [\"read\"] }}\n\
         config_write_paths = [\"permission_profiles.*\"]\n\
         [users.tester]\nuid = {uid}\npermission_profiles = [\"editor\"]\n"
    ));
    let mut u = peer(&daemon, uid, "tester");
    let before = config_bytes(&daemon);
    // entry 0 alone gives the new profile what the writer holds; entry 1 makes it admin
    assert_eq!(
        u.refused(
            "config/set-many",
            json!({"sets": [
                {"prop": "permission_profiles.newq.grants", "value": {"sessions": ["read"]}},
                {"prop": "permission_profiles.newq.admin", "value": true},
            ]})
        ),
        json!({"index": 1, "prop": "permission_profiles.newq.admin"})
    );
    assert_eq!(config_bytes(&daemon), before);
    // entry 0 alone is accepted
    let r = u.result(
        "config/set",
        json!({"prop": "permission_profiles.newq.grants", "value": {"sessions": ["read"]}}),
    );
    assert_eq!(r["set"], true);
}
