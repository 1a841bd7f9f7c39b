//! ConfigStore against hostile writers (SPEC §4.1 "No escalation", §17): a non-admin writer
//! who may edit users and profiles, provider secrets, value and file size limits, and the
//! wording of validation errors. Every refusal leaves the file byte-for-byte unchanged.

mod common;
use common::{Kind, Seen};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zeroclaw_config::{Config, ConfigStore, Credential, Principal, Writer, resolve};

const CONFIG: &str = r#"# hand-written
[providers.echo]
kind = "echo"

[providers.remote]
kind = "openai"
base_url = "https://api.example.com/v1"
api_key = "sk-secret"

[agents.default]
provider = "echo"

[permission_profiles.editor]
grants = { config = ["read", "update", "delete"], sessions = ["read"] }
allowed_agents = ["default"]
config_write_paths = ["users.*", "permission_profiles.*", "providers.*", "agents.*"]

[permission_profiles.boss]
admin = true

[permission_profiles.reader]
grants = { sessions = ["read"] }

[users.alice]
uid = 2001
permission_profiles = ["editor"]

[users.root2]
uid = 2002
permission_profiles = ["boss"]
"#;

fn open() -> (tempfile::TempDir, PathBuf, ConfigStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, CONFIG).unwrap();
    let store = ConfigStore::open(&path).unwrap();
    (dir, path, store)
}

/// The principal of uid 2001 (`alice`), resolved under the lock like the daemon does.
fn alice(c: &Config) -> Result<Principal, Seen> {
    let p = resolve(c, &Credential::LocalUid(2001), 0)?;
    p.require("config", "update", "config/set")?;
    Ok(p)
}

fn operator(_: &Config) -> Result<Principal, Seen> {
    Ok(Principal::operator())
}

fn sets(items: &[(&str, Value)]) -> Vec<(String, Value)> {
    items
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect()
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[tokio::test]
async fn escalation_paths_are_refused_and_change_nothing() {
    let (_d, path, store) = open();
    let before = bytes(&path);

    // 1. its own profiles → an admin profile
    let e = store
        .set("users.alice.permission_profiles", json!(["boss"]), alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(
        e.data,
        Some(json!({"prop": "users.alice.permission_profiles"}))
    );
    assert!(
        e.message.contains("user alice would hold admin"),
        "{}",
        e.message
    );

    // 2. swapping uids with an admin user: blamed on the entry that maps 2001 to root2
    let e = store
        .set_many(
            sets(&[
                ("users.alice.uid", json!(2002)),
                ("users.root2.uid", json!(2001)),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(e.data, Some(json!({"index": 1, "prop": "users.root2.uid"})));
    assert!(
        e.message
            .contains("uid 2001 would map to user root2 holding admin"),
        "{}",
        e.message
    );

    // 3. a new admin profile, then assigning it: refused at the entry creating it
    let e = store
        .set_many(
            sets(&[
                ("users.alice.uid", json!(2001)),
                ("permission_profiles.mine", json!({"admin": true})),
                ("users.alice.permission_profiles", json!(["editor", "mine"])),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "permission_profiles.mine"}))
    );
    // …and created in one call, by its fields
    let e = store
        .set("permission_profiles.mine.admin", json!(true), alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);

    // 4. a grant, an agent or a write path added to its own profile
    for (prop, value, what) in [
        (
            "permission_profiles.editor.grants.sessions",
            json!(["read", "delete"]),
            "sessions:delete",
        ),
        (
            "permission_profiles.editor.grants.system",
            json!(["read"]),
            "system:read",
        ),
        (
            "permission_profiles.editor.allowed_agents",
            json!(["*"]),
            "agent \"*\"",
        ),
        (
            "permission_profiles.editor.config_write_paths",
            json!(["*"]),
            "write path \"*\"",
        ),
    ] {
        let e = store.set(prop, value, alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
        assert_eq!(e.data, Some(json!({"prop": prop})));
        assert!(e.message.contains(what), "{prop}: {}", e.message);
    }
    // 5. a new user on a new uid with the admin profile: blamed on the entry giving it the
    //    profile (SPEC §4.1: the first entry whose cumulative application escalates; the
    //    new user alone holds nothing)
    let e = store
        .set_many(
            sets(&[
                ("users.mallory.uid", json!(2005)),
                ("users.mallory.permission_profiles", json!(["boss"])),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "users.mallory.permission_profiles"}))
    );
    assert_eq!(bytes(&path), before, "refusals write nothing");

    // 6. deleting a user takes rights away: allowed; taking over its admin profile is not
    store.delete("users.root2", alice).await.unwrap();
    assert_eq!(store.current().users.len(), 1);
    let after_delete = bytes(&path);
    assert_ne!(after_delete, before);
    let e = store
        .set("users.alice.permission_profiles", json!(["boss"]), alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden);
    assert_eq!(bytes(&path), after_delete, "refusals write nothing");
}

#[tokio::test]
async fn legitimate_writes_by_a_limited_writer_go_through() {
    let (_d, path, store) = open();
    // a new user on a new uid with a subset of alice's rights
    store
        .set_many(
            sets(&[
                ("users.bob.uid", json!(2003)),
                ("users.bob.permission_profiles", json!(["reader"])),
            ]),
            alice,
        )
        .await
        .unwrap();
    // a new narrower profile, and alice's own profile narrowed
    store
        .set(
            "permission_profiles.narrow",
            json!({"grants": {"config": ["read"]}, "allowed_agents": ["default"], "config_write_paths": ["users.bob.*"]}),
            alice,
        )
        .await
        .unwrap();
    store
        .set("permission_profiles.boss.admin", json!(false), alice)
        .await
        .unwrap();
    store
        .set("users.bob.permission_profiles", json!(["narrow"]), alice)
        .await
        .unwrap();
    // changing bob's uid, even to a free one, is not (SPEC §17.1: whoever has the uid takes
    // bob's sessions)
    let e = store
        .set("users.bob.uid", json!(2004), alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(e.data, Some(json!({"prop": "users.bob.uid"})));
    assert_eq!(store.current().users["bob"].uid, Some(2003));
    // the admin is not limited
    store
        .set("users.alice.permission_profiles", json!(["boss"]), operator)
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# hand-written"), "{text}");
}

#[tokio::test]
async fn two_users_with_one_uid_are_invalid_for_everyone() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    for who in [alice as fn(&Config) -> Result<Principal, Seen>, operator] {
        let e = store
            .set("users.alice.uid", json!(2002), who)
            .await
            .unwrap_err();
        assert_eq!(e.kind, Kind::Invalid, "{}", e.message);
        assert!(
            e.message.contains("uid 2002 is mapped to several users"),
            "{}",
            e.message
        );
    }
    assert_eq!(bytes(&path), before);
}

#[tokio::test]
async fn provider_endpoint_and_key_are_admin_only() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    // alice's write paths cover `providers.*`: still refused
    for (prop, value) in [
        (
            "providers.remote.base_url",
            json!("http://127.0.0.1:1/steal"),
        ),
        (
            "providers.remote.api_key_env",
            json!("DAEMON_PRIVATE_TOKEN"),
        ),
        ("providers.remote.api_key", json!("x")),
        ("providers.remote.kind", json!("echo")),
        (
            "providers.remote",
            json!({"kind": "openai", "base_url": "http://evil/v1"}),
        ),
        ("providers.mine", json!({"kind": "openai"})),
        ("providers", json!({})),
    ] {
        let e = store.set(prop, value, alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
        assert_eq!(e.data, Some(json!({"prop": prop})));
        assert!(e.message.contains("admin-only"), "{}", e.message);
    }
    for prop in [
        "providers.remote.base_url",
        "providers.remote.api_key",
        "providers.remote",
    ] {
        let e = store.delete(prop, alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
    }
    // in a batch, the entry is named
    let e = store
        .set_many(
            sets(&[
                ("providers.remote.model", json!("m")),
                ("providers.remote.base_url", json!("http://evil/v1")),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "providers.remote.base_url"}))
    );
    assert_eq!(bytes(&path), before);
    // other provider keys stay writable by path; the admin may write everything
    store
        .set("providers.remote.model", json!("m2"), alice)
        .await
        .unwrap();
    store
        .set(
            "providers.remote.base_url",
            json!("http://127.0.0.1:9/v1"),
            operator,
        )
        .await
        .unwrap();
    assert_eq!(
        store.current().providers["remote"].base_url,
        "http://127.0.0.1:9/v1"
    );
}

#[tokio::test]
async fn values_and_the_file_are_bounded() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    let big = "x".repeat(5 * 1024 * 1024);
    for prop in ["agents.default.system_prompt", "agents.default.model"] {
        let e = store.set(prop, json!(big), operator).await.unwrap_err();
        assert_eq!(e.kind, Kind::Invalid, "{prop}");
        assert!(
            e.message.contains("over the limit of 65536 bytes") && e.message.len() < 300,
            "{}",
            &e.message[..e.message.len().min(300)]
        );
    }
    // in a list, and as a map key
    let e = store
        .set("wss.allowed_origins", json!(["a", big]), operator)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    let mut grants = serde_json::Map::new();
    grants.insert(big.clone(), json!(["read"]));
    let e = store
        .set("permission_profiles.p", json!({"grants": grants}), operator)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert!(e.message.len() < 300, "{}", &e.message[..300]);
    // a huge enum value is not echoed
    let e = store
        .set("agents.default.autonomy", json!(big), operator)
        .await
        .unwrap_err();
    assert!(e.message.len() < 300, "{}", &e.message[..300]);
    // a huge property path is not echoed either
    let e = store.set(&big, json!(1), operator).await.unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert!(
        e.message.len() < 300 && e.data.is_none(),
        "{}",
        &e.message[..300]
    );
    assert!(store.get(Some(&big)).unwrap_err().to_string().len() < 300);

    // 64 KiB exactly is fine; many values under the limit but over 1 MiB together are not
    let max = "y".repeat(64 * 1024);
    store
        .set("agents.default.system_prompt", json!(max), operator)
        .await
        .unwrap();
    let at_max = bytes(&path);
    let many: Vec<(String, Value)> = (0..17)
        .map(|i| (format!("agents.a{i}.system_prompt"), json!(max)))
        .chain([("agents.a0.provider".to_string(), json!("echo"))])
        .collect();
    let e = store.set_many(many, operator).await.unwrap_err();
    assert_eq!(e.kind, Kind::Invalid, "{}", e.message);
    assert!(
        e.message.contains("over the limit of 1048576 bytes"),
        "{}",
        e.message
    );
    assert_eq!(bytes(&path), at_max);
    assert_ne!(at_max, before);
    // a whole config always fits a frame
    let whole = serde_json::to_string(&store.get(None).unwrap()).unwrap();
    assert!(whole.len() < 8 * 1024 * 1024);
}

#[test]
fn an_oversized_file_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let mut text = String::from("[providers.echo]\nkind = \"echo\"\n");
    for i in 0..20 {
        text.push_str(&format!(
            "[agents.a{i}]\nprovider = \"echo\"\nsystem_prompt = \"{}\"\n",
            "z".repeat(60 * 1024)
        ));
    }
    std::fs::write(&path, &text).unwrap();
    let e = match ConfigStore::open(&path) {
        Ok(_) => panic!("an oversized file was accepted"),
        Err(e) => e,
    };
    assert!(e.message.contains("over the limit of 1048576 bytes"), "{e}");
}

#[tokio::test]
async fn validation_messages_name_each_property_once() {
    let (_d, _path, store) = open();
    let e = store
        .set("wss.cert_path", json!("/tmp/cert.pem"), operator)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert_eq!(
        e.message,
        "wss.cert_path: wss.key_path must be set too: the certificate and the key go together"
    );
    assert_eq!(e.data, Some(json!({"prop": "wss.cert_path"})));
    // setting both together works; deleting one alone names each once
    store
        .set_many(
            sets(&[
                ("wss.cert_path", json!("/tmp/cert.pem")),
                ("wss.key_path", json!("/tmp/key.pem")),
            ]),
            operator,
        )
        .await
        .unwrap();
    let e = store.delete("wss.key_path", operator).await.unwrap_err();
    assert_eq!(
        e.message,
        "wss.cert_path: wss.key_path must be set too: the certificate and the key go together"
    );
    assert_eq!(e.data, Some(json!({"prop": "wss.key_path"})));
    // elsewhere a violation away from the written property still names both
    let e = store.delete("providers.echo", operator).await.unwrap_err();
    assert_eq!(
        e.message,
        "providers.echo: agents.default.provider: unknown provider \"echo\""
    );
}

#[tokio::test]
async fn a_batch_blames_the_first_entry_whose_application_escalates() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    // entry 0 alone gives the new profile only what alice holds; entry 1 makes it admin
    let e = store
        .set_many(
            sets(&[
                (
                    "permission_profiles.newq.grants",
                    json!({"sessions": ["read"]}),
                ),
                ("permission_profiles.newq.admin", json!(true)),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "permission_profiles.newq.admin"}))
    );
    assert!(e.message.contains("would hold admin"), "{}", e.message);
    // the other order blames entry 0, which escalates alone
    let e = store
        .set_many(
            sets(&[
                ("permission_profiles.newq.admin", json!(true)),
                (
                    "permission_profiles.newq.grants",
                    json!({"sessions": ["read"]}),
                ),
            ]),
            alice,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.data,
        Some(json!({"index": 0, "prop": "permission_profiles.newq.admin"}))
    );
    assert_eq!(bytes(&path), before, "refusals write nothing");
}

#[tokio::test]
async fn programs_an_agent_runs_are_admin_only_even_from_above() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    let server = json!({"command": "sh", "args": ["-c", "id > /tmp/pwned"]});
    // by its own path (config/set, set-many, delete), and the §21 settings not built yet
    for (i, prop) in [
        "agents.default.mcp_servers.evil",
        "agents.default.mcp_servers",
        "agents.default.hooks.pre_tool_use",
        "agents.default.sandbox",
        "hooks.stop",
    ]
    .into_iter()
    .enumerate()
    {
        let e = store.set(prop, server.clone(), alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
        assert_eq!(e.data, Some(json!({"prop": prop})), "{prop}");
        assert!(e.message.contains("admin-only"), "{}", e.message);
        let e = store
            .set_many(
                sets(&[("agents.default.model", json!("m")), (prop, server.clone())]),
                alice,
            )
            .await
            .unwrap_err();
        assert_eq!(e.data, Some(json!({"index": 1, "prop": prop})), "{i}");
    }
    // a whole agent, new or replaced, carrying servers
    for prop in ["agents.default", "agents.other"] {
        let value = json!({"provider": "echo", "mcp_servers": {"evil": server}});
        let e = store.set(prop, value, alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
        assert_eq!(e.data, Some(json!({"prop": prop})));
        assert!(
            e.message.contains("mcp_servers would change"),
            "{}",
            e.message
        );
    }
    assert_eq!(bytes(&path), before, "refusals write nothing");
    // an agent without servers is the writer's business
    store
        .set("agents.plain", json!({"provider": "echo"}), alice)
        .await
        .unwrap();

    // servers the admin configured can be neither removed nor replaced from above
    store
        .set(
            "agents.default.mcp_servers.ok",
            json!({"command": "true"}),
            operator,
        )
        .await
        .unwrap();
    let e = store
        .delete("agents.default.mcp_servers.ok", alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    let e = store
        .set("agents.default", json!({"provider": "echo"}), alice)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    let e = store.delete("agents.default", alice).await.unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(e.data, Some(json!({"prop": "agents.default"})));
    // while the agent's other settings stay writable
    store
        .set("agents.default.model", json!("m2"), alice)
        .await
        .unwrap();
    assert_eq!(store.current().agents["default"].mcp_servers.len(), 1);
}

#[tokio::test]
async fn a_name_that_owns_sessions_is_not_created_by_a_non_admin() {
    let (_d, path, store) = open();
    let before = bytes(&path);
    // what the daemon knows: `ghost` owns sessions or tokens
    let alice_here =
        |c: &Config| -> Result<Writer, Seen> { Ok(Writer::new(alice(c)?, |name| name == "ghost")) };
    let e = store
        .set(
            "users.ghost",
            json!({"permission_profiles": []}),
            alice_here,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden, "{}", e.message);
    assert_eq!(e.data, Some(json!({"prop": "users.ghost"})));
    assert!(
        e.message.contains("owns sessions or pairing tokens"),
        "{}",
        e.message
    );
    let e = store
        .set_many(
            sets(&[
                ("users.fresh.uid", json!(3001)),
                ("users.ghost.uid", json!(3002)),
            ]),
            alice_here,
        )
        .await
        .unwrap_err();
    assert_eq!(e.data, Some(json!({"index": 1, "prop": "users.ghost.uid"})));
    assert_eq!(bytes(&path), before, "refusals write nothing");
    // another name is fine; the admin may create any
    store
        .set("users.fresh", json!({"uid": 3001}), alice_here)
        .await
        .unwrap();
    let operator_here =
        |_: &Config| -> Result<Writer, Seen> { Ok(Writer::new(Principal::operator(), |_| true)) };
    store
        .set("users.ghost", json!({"uid": 3002}), operator_here)
        .await
        .unwrap();
}
