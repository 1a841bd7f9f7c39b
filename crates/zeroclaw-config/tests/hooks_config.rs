//! The hooks of the configuration (SPEC §21.1) through the store, as `config/set` writes
//! them: a list of `{command, matcher?, timeout_secs?}` per event, global and per agent,
//! checked (types, range, command, matcher) before anything is written, and admin-only.

mod common;
use common::{Kind, Seen};

use std::path::PathBuf;

use serde_json::json;
use zeroclaw_config::{Config, ConfigStore, Credential, Principal, resolve};

const CONFIG: &str = r#"[providers.echo]
kind = "echo"

[agents.default]
provider = "echo"

[permission_profiles.editor]
grants = { config = ["read", "update", "delete"] }
allowed_agents = ["*"]
config_write_paths = ["*"]

[users.alice]
uid = 2001
permission_profiles = ["editor"]
"#;

fn open(text: &str) -> (tempfile::TempDir, PathBuf, ConfigStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let store = ConfigStore::open(&path).unwrap();
    (dir, path, store)
}

fn operator(_: &Config) -> Result<Principal, Seen> {
    Ok(Principal::operator())
}

fn alice(c: &Config) -> Result<Principal, Seen> {
    Ok(resolve(c, &Credential::LocalUid(2001), 0)?)
}

#[tokio::test]
async fn hooks_are_written_and_read_back_in_order() {
    let (_d, path, store) = open(CONFIG);
    store
        .set(
            "hooks.pre_tool_use",
            json!([{"command": "first", "matcher": "bash"}, {"command": "second", "timeout_secs": 5}]),
            operator,
        )
        .await
        .unwrap();
    store
        .set(
            "agents.default.hooks.stop",
            json!([{"command": "cargo test"}]),
            operator,
        )
        .await
        .unwrap();
    let c = store.current();
    assert_eq!(c.hooks.pre_tool_use.len(), 2);
    assert_eq!(c.hooks.pre_tool_use[0].command, "first");
    assert_eq!(c.hooks.pre_tool_use[0].matcher.as_deref(), Some("bash"));
    assert_eq!(c.hooks.pre_tool_use[0].timeout_secs, 60, "default timeout");
    assert_eq!(c.hooks.pre_tool_use[1].timeout_secs, 5);
    assert_eq!(c.agents["default"].hooks.stop[0].command, "cargo test");
    // The file parses again with the same hooks (a restart sees them).
    let again = ConfigStore::open(&path).unwrap();
    assert_eq!(again.current().hooks, c.hooks);
    assert_eq!(
        again.current().agents["default"].hooks,
        c.agents["default"].hooks
    );
}

#[tokio::test]
async fn a_hand_written_array_of_tables_is_read() {
    let text = format!(
        "{CONFIG}\n[[hooks.stop]]\ncommand = \"a\"\n\n[[agents.default.hooks.pre_tool_use]]\ncommand = \"b\"\nmatcher = \"write_.*\"\ntimeout_secs = 3\n"
    );
    let (_d, _p, store) = open(&text);
    let c = store.current();
    assert_eq!(c.hooks.stop[0].command, "a");
    let h = &c.agents["default"].hooks.pre_tool_use[0];
    assert_eq!((h.command.as_str(), h.timeout_secs), ("b", 3));
}

#[tokio::test]
async fn bad_hooks_are_refused_naming_the_property() {
    let (_d, path, store) = open(CONFIG);
    let before = std::fs::read(&path).unwrap();
    for (prop, value, says) in [
        (
            "hooks.pre_tool_use",
            json!([{"command": "x", "matcher": "("}]),
            "matcher",
        ),
        (
            "hooks.stop",
            json!([{"command": ""}]),
            "command is required",
        ),
        (
            "hooks.stop",
            json!([{"command": "x", "timeout_secs": 0}]),
            "out of range",
        ),
        (
            "hooks.stop",
            json!([{"command": "x", "shell": "zsh"}]),
            "unknown key",
        ),
        ("hooks.stop", json!({"command": "x"}), "array of tables"),
        (
            "hooks.on_boot",
            json!([{"command": "x"}]),
            "unknown property",
        ),
    ] {
        let e = store.set(prop, value, operator).await.unwrap_err();
        assert_eq!(e.kind, Kind::Invalid, "{prop}: {}", e.message);
        assert!(e.message.contains(says), "{prop}: {}", e.message);
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[tokio::test]
async fn a_non_admin_may_not_write_any_hooks_key() {
    let (_d, path, store) = open(CONFIG);
    let before = std::fs::read(&path).unwrap();
    for (prop, value) in [
        ("hooks.stop", json!([{"command": "touch /tmp/x"}])),
        (
            "agents.default.hooks.pre_tool_use",
            json!([{"command": "x"}]),
        ),
        (
            "agents.default",
            json!({"provider": "echo", "hooks": {"stop": [{"command": "x"}]}}),
        ),
    ] {
        let e = store.set(prop, value, alice).await.unwrap_err();
        assert_eq!(e.kind, Kind::Forbidden, "{prop}: {}", e.message);
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
