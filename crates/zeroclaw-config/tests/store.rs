//! ConfigStore end to end: files on disk in a temp dir, the write protocol of SPEC §6.

mod common;
use common::{Kind, Seen};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use zeroclaw_config::{ConfigStore, Credential, Principal, resolve};

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cfg").join("config.toml");
    (dir, path)
}

fn operator(_: &zeroclaw_config::Config) -> Result<Principal, Seen> {
    Ok(Principal::operator())
}

fn sets(items: &[(&str, Value)]) -> Vec<(String, Value)> {
    items
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const WITH_OPERATOR_PROFILE: &str = r#"# hand-written config
[providers.echo]
kind = "echo"

[agents.default]
provider = "echo"   # the offline one

[permission_profiles.operator]
admin = false
grants = { config = ["read", "update"] }
config_write_paths = ["users.*"]

[users.limited]
uid = 2000
permission_profiles = ["operator"]
"#;

#[tokio::test]
async fn set_many_example_and_duplicates() {
    let (_d, path) = tmp();
    write_file(&path, WITH_OPERATOR_PROFILE);
    let store = ConfigStore::open(&path).unwrap();
    let props = store
        .set_many(
            sets(&[
                ("users.example.uid", json!(1001)),
                ("users.example.permission_profiles", json!(["operator"])),
            ]),
            operator,
        )
        .await
        .unwrap();
    assert_eq!(
        props,
        ["users.example.uid", "users.example.permission_profiles"]
    );
    let c = store.current();
    assert_eq!(c.users["example"].uid, Some(1001));
    let p = resolve(&c, &Credential::LocalUid(1001), 0).unwrap();
    assert_eq!(p.id, "user:example");

    // Later entries for the same prop win; the prop is listed once.
    let props = store
        .set_many(
            sets(&[
                ("users.example.uid", json!(1)),
                ("wss.port", json!(1)),
                ("users.\"example\".uid", json!("1002")),
            ]),
            operator,
        )
        .await
        .unwrap();
    assert_eq!(props, ["users.example.uid", "wss.port"]);
    assert_eq!(store.get(Some("users.example.uid")).unwrap(), json!(1002));

    // Reopen reads back what was written.
    let again = ConfigStore::open(&path).unwrap();
    assert_eq!(*again.current(), *store.current());
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
}

#[tokio::test]
async fn invalid_entry_changes_nothing() {
    let (_d, path) = tmp();
    write_file(&path, WITH_OPERATOR_PROFILE);
    let store = ConfigStore::open(&path).unwrap();
    let before_bytes = std::fs::read(&path).unwrap();
    let before = store.get(None).unwrap();

    let e = store
        .set_many(
            sets(&[
                ("users.x.uid", json!(5)),
                ("users.x.uid", json!("abc")),
                ("wss.port", json!(1)),
            ]),
            operator,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert_eq!(e.data, Some(json!({"index": 1, "prop": "users.x.uid"})));
    assert_eq!(
        e.message,
        "config entry 1 (users.x.uid): expected integer, found string \"abc\""
    );

    // A dangling reference is found when the whole candidate is validated.
    let e = store
        .set_many(
            sets(&[
                ("wss.port", json!(1)),
                ("users.x.permission_profiles", json!(["nope"])),
            ]),
            operator,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "users.x.permission_profiles"}))
    );
    assert!(
        e.message.contains("unknown permission profile \"nope\""),
        "{}",
        e.message
    );

    // An agent created without a provider: blamed on the entry that created it.
    let e = store
        .set_many(
            sets(&[("wss.port", json!(2)), ("agents.new.model", json!("m"))]),
            operator,
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.data,
        Some(json!({"index": 1, "prop": "agents.new.model"}))
    );
    assert!(
        e.message
            .contains("agents.new.provider: provider is required"),
        "{}",
        e.message
    );

    for (bad, at) in [
        (sets(&[("security.nope", json!(true))]), "security.nope"),
        (sets(&[("wss.enabled", json!("yes"))]), "wss.enabled"),
        (
            sets(&[("agents.default.autonomy", json!("yolo"))]),
            "agents.default.autonomy",
        ),
        (
            sets(&[("agents.default.tools", json!(["rm"]))]),
            "agents.default.tools",
        ),
        (sets(&[("users..x", json!(1))]), "users..x"),
    ] {
        let e = store.set_many(bad, operator).await.unwrap_err();
        assert_eq!(e.kind, Kind::Invalid);
        assert_eq!(
            e.data,
            Some(json!({"index": 0, "prop": at})),
            "{}",
            e.message
        );
    }
    assert_eq!(
        store.set_many(vec![], operator).await.unwrap_err().kind,
        Kind::Invalid
    );
    let too_many = (0..257)
        .map(|i| ("wss.port".to_string(), json!(i)))
        .collect();
    assert_eq!(
        store.set_many(too_many, operator).await.unwrap_err().kind,
        Kind::Invalid
    );

    assert_eq!(std::fs::read(&path).unwrap(), before_bytes);
    assert_eq!(store.get(None).unwrap(), before);
}

#[tokio::test]
async fn forbidden_path_rejects_whole_batch() {
    let (_d, path) = tmp();
    write_file(&path, WITH_OPERATOR_PROFILE);
    let store = ConfigStore::open(&path).unwrap();
    let before_bytes = std::fs::read(&path).unwrap();
    let limited = |c: &zeroclaw_config::Config| {
        let p = resolve(c, &Credential::LocalUid(2000), 0)?;
        p.require("config", "update", "config/set-many")?;
        Ok::<_, Seen>(p)
    };
    let e = store
        .set_many(
            sets(&[
                ("users.a.uid", json!(3000)),
                ("users.b.uid", json!(3001)),
                ("security.trust_daemon_uid", json!(false)),
            ]),
            limited,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden);
    assert_eq!(
        e.data,
        Some(json!({"index": 2, "prop": "security.trust_daemon_uid"}))
    );
    assert!(e.message.contains("config entry 2"), "{}", e.message);
    assert_eq!(std::fs::read(&path).unwrap(), before_bytes);
    assert!(!store.current().users.contains_key("a"));

    // Allowed paths go through for the same principal.
    store
        .set_many(sets(&[("users.a.uid", json!(3000))]), limited)
        .await
        .unwrap();
    assert_eq!(store.current().users["a"].uid, Some(3000));

    // Permissions are resolved against the config current under the lock: once the
    // operator revokes the grant, the same closure is refused.
    store
        .set("permission_profiles.operator.grants", json!({}), operator)
        .await
        .unwrap();
    let e = store
        .set_many(sets(&[("users.c.uid", json!(1))]), limited)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Forbidden);
    assert_eq!(
        e.data,
        Some(json!({"resource": "config", "verb": "update"}))
    );
}

#[tokio::test]
async fn comments_survive_writes() {
    let (_d, path) = tmp();
    write_file(&path, WITH_OPERATOR_PROFILE);
    let store = ConfigStore::open(&path).unwrap();
    store
        .set("agents.default.provider", json!("echo"), operator)
        .await
        .unwrap();
    store
        .set("agents.default.model", json!("m1"), operator)
        .await
        .unwrap();
    store
        .set(
            "permission_profiles.operator.grants.files",
            json!(["create"]),
            operator,
        )
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# hand-written config\n"), "{text}");
    assert!(
        text.contains("provider = \"echo\"   # the offline one"),
        "{text}"
    );
    assert!(text.contains("files = [\"create\"]"), "{text}");
    assert_eq!(store.current().agents["default"].model, "m1");
}

#[tokio::test]
async fn whole_table_value_and_delete() {
    let (_d, path) = tmp();
    let store = ConfigStore::open(&path).unwrap();
    let prop = store
        .set(
            "permission_profiles.operator",
            json!({"admin": false, "grants": {"sessions": ["read"], "files": ["create"]}}),
            operator,
        )
        .await
        .unwrap();
    assert_eq!(prop, "permission_profiles.operator");
    assert_eq!(
        store.current().permission_profiles["operator"].grants.len(),
        2
    );

    store
        .set(
            "users.example.permission_profiles",
            json!(["operator"]),
            operator,
        )
        .await
        .unwrap();
    // Deleting a profile still referenced is refused; nothing changes.
    let e = store
        .delete("permission_profiles.operator", operator)
        .await
        .unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert!(
        e.message.contains("users.example.permission_profiles"),
        "{}",
        e.message
    );
    assert!(store.current().permission_profiles.contains_key("operator"));

    assert_eq!(
        store.delete("users.example", operator).await.unwrap(),
        "users.example"
    );
    store
        .delete("permission_profiles.operator", operator)
        .await
        .unwrap();
    assert!(store.current().users.is_empty());
    let e = store.delete("users.example", operator).await.unwrap_err();
    assert_eq!(e.kind, Kind::Invalid);
    assert_eq!(e.data, Some(json!({"prop": "users.example"})));
    // Deleting a key reverts it to its default.
    store.set("wss.port", json!(1234), operator).await.unwrap();
    store.delete("wss.port", operator).await.unwrap();
    assert_eq!(store.get(Some("wss.port")).unwrap(), json!(9781));
    let e = store.delete("providers.echo", operator).await.unwrap_err();
    assert!(
        e.message.contains("agents.default.provider"),
        "{}",
        e.message
    );
    assert!(ConfigStore::open(&path).is_ok());
}

#[tokio::test]
async fn secrets_are_masked() {
    let (_d, path) = tmp();
    let store = ConfigStore::open(&path).unwrap();
    store
        .set_many(
            sets(&[
                ("providers.local.kind", json!("openai")),
                (
                    "providers.local.base_url",
                    json!("http://127.0.0.1:11434/v1"),
                ),
                ("providers.local.api_key", json!("sk-secret")),
            ]),
            operator,
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(Some("providers.local.api_key")).unwrap(),
        json!("***")
    );
    assert_eq!(
        store.get(Some("providers.local")).unwrap()["api_key"],
        json!("***")
    );
    let all = store.get(None).unwrap();
    assert_eq!(all["providers"]["local"]["api_key"], json!("***"));
    assert!(!all.to_string().contains("sk-secret"));
    assert_eq!(store.current().providers["local"].api_key, "sk-secret");
    assert_eq!(
        Seen::from(store.get(Some("nope")).unwrap_err()).kind,
        Kind::Invalid
    );
    assert_eq!(
        Seen::from(store.get(Some("agents.ghost")).unwrap_err()).kind,
        Kind::Invalid
    );
    assert_eq!(
        Seen::from(store.get(Some("a..b")).unwrap_err()).kind,
        Kind::Invalid
    );
}

#[tokio::test]
async fn failed_persist_changes_nothing() {
    let (_d, path) = tmp();
    let store = ConfigStore::open(&path).unwrap();
    let mut rx = store.subscribe();
    let before_bytes = std::fs::read(&path).unwrap();
    let before = store.current();
    store.fail_next_persist();
    let e = store.set("wss.port", json!(1), operator).await.unwrap_err();
    assert_eq!(e.kind, Kind::Failed);
    assert_eq!(std::fs::read(&path).unwrap(), before_bytes);
    assert_eq!(*store.current(), *before);
    assert!(!rx.has_changed().unwrap());
    // The next write works, from the unchanged document, and is announced.
    store.set("wss.port", json!(2), operator).await.unwrap();
    assert!(rx.has_changed().unwrap());
    assert_eq!(rx.borrow_and_update().wss.port, 2);
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "temp files left behind: {leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_lose_nothing() {
    let (_d, path) = tmp();
    let store = Arc::new(ConfigStore::open(&path).unwrap());
    let mut tasks = Vec::new();
    for i in 0..8u32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .set_many(
                    sets(&[(&format!("users.u{i}.uid"), json!(10_000 + i))]),
                    operator,
                )
                .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let reopened = ConfigStore::open(&path).unwrap().current();
    for i in 0..8u32 {
        assert_eq!(
            store.current().users[&format!("u{i}")].uid,
            Some(10_000 + i)
        );
        assert_eq!(reopened.users[&format!("u{i}")].uid, Some(10_000 + i));
    }
}
