//! The agent's compaction settings (SPEC §18): defaults, and `config/set` validation
//! (`compact_threshold` in (0, 1], `keep_recent_turns` ≥ 0, `auto_compact` a boolean).

mod common;
use common::{Kind, Seen};

use serde_json::json;
use zeroclaw_config::{ConfigStore, Principal};

fn operator(_: &zeroclaw_config::Config) -> Result<Principal, Seen> {
    Ok(Principal::operator())
}

#[tokio::test]
async fn defaults_and_valid_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let store = ConfigStore::open(&path).unwrap();
    let a = &store.current().agents["default"];
    assert_eq!(
        (a.keep_recent_turns, a.auto_compact, a.compact_threshold),
        (2, true, 0.8)
    );
    for (prop, value) in [
        ("agents.default.compact_threshold", json!(0.5)),
        ("agents.default.compact_threshold", json!(1)),
        ("agents.default.compact_threshold", json!("0.25")),
        ("agents.default.keep_recent_turns", json!(0)),
        ("agents.default.auto_compact", json!(false)),
    ] {
        store
            .set(prop, value.clone(), operator)
            .await
            .unwrap_or_else(|e| {
                panic!("{prop} = {value}: {}", e.message);
            });
    }
    let a = &store.current().agents["default"];
    assert_eq!(
        (a.keep_recent_turns, a.auto_compact, a.compact_threshold),
        (0, false, 0.25)
    );
    // What was written parses again.
    let again = ConfigStore::open(&path).unwrap();
    assert_eq!(again.current().agents["default"].compact_threshold, 0.25);
}

#[tokio::test]
async fn out_of_range_values_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let store = ConfigStore::open(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    for (prop, value) in [
        ("agents.default.compact_threshold", json!(0)),
        ("agents.default.compact_threshold", json!(0.0)),
        ("agents.default.compact_threshold", json!(1.5)),
        ("agents.default.compact_threshold", json!(-0.1)),
        ("agents.default.compact_threshold", json!("high")),
        ("agents.default.compact_threshold", json!(true)),
        ("agents.default.keep_recent_turns", json!(-1)),
        ("agents.default.keep_recent_turns", json!(1.5)),
        ("agents.default.auto_compact", json!("maybe")),
    ] {
        let e = store.set(prop, value.clone(), operator).await.unwrap_err();
        assert_eq!(e.kind, Kind::Invalid, "{prop} = {value}");
        assert_eq!(e.data, Some(json!({"prop": prop})), "{prop} = {value}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(store.current().agents["default"].compact_threshold, 0.8);
}

#[test]
fn a_hand_written_threshold_out_of_range_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[providers.echo]\nkind = \"echo\"\n[agents.default]\nprovider = \"echo\"\ncompact_threshold = 2.0\n",
    )
    .unwrap();
    let e = match ConfigStore::open(&path) {
        Ok(_) => panic!("a threshold of 2.0 was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("agents.default.compact_threshold"), "{e}");
}
