//! Schema: the default file, defaults for missing sections, cross-reference checks.

use std::path::Path;

use zeroclaw_config::schema::{Autonomy, Config, Limits, ProviderKind, TOOLS, Wss};

#[test]
fn default_file_is_valid_and_round_trips() {
    let c = Config::default_file();
    assert!(c.validate().is_empty(), "{:?}", c.validate());
    assert_eq!(c.providers["echo"].kind, ProviderKind::Echo);
    let a = &c.agents["default"];
    assert_eq!(a.provider, "echo");
    assert_eq!(a.tools, TOOLS);
    assert_eq!(a.autonomy, Autonomy::Supervised);
    assert_eq!(c.limits, Limits::default());
    assert_eq!(c.wss, Wss::default());
    assert!(c.security.trust_daemon_uid);
    // Serialize → parse gives the same typed view.
    let text = toml_edit::ser::to_string(&c).unwrap();
    let back: Config = toml_edit::de::from_str(&text).unwrap();
    assert_eq!(back, c);
}

#[test]
fn empty_file_has_no_agents() {
    let c: Config = toml_edit::de::from_str("").unwrap();
    assert!(c.agents.is_empty() && c.providers.is_empty());
    assert!(c.security.trust_daemon_uid);
    assert!(c.validate().is_empty());
}

#[test]
fn dangling_references_name_the_prop() {
    let c: Config = toml_edit::de::from_str(
        "[agents.a]\nprovider = \"nope\"\n[users.u]\nuid = 5\npermission_profiles = [\"ghost\"]\n",
    )
    .unwrap();
    let v = c.validate();
    let props: Vec<String> = v.iter().map(|v| v.prop.to_string()).collect();
    assert!(props.contains(&"agents.a.provider".to_string()), "{v:?}");
    assert!(
        props.contains(&"users.u.permission_profiles".to_string()),
        "{v:?}"
    );
}

#[test]
fn workspace_helper() {
    let c = Config::default_file();
    let d = Path::new("/cfg");
    assert_eq!(
        c.agent_workspace("default", d),
        Path::new("/cfg/agents/default/workspace")
    );
    let mut c2 = c.clone();
    c2.agents.get_mut("default").unwrap().workspace = "/w".into();
    assert_eq!(c2.agent_workspace("default", d), Path::new("/w"));
}

#[test]
fn wss_tls_rule() {
    let mut c = Config::default();
    c.wss.enabled = true;
    c.wss.bind = "0.0.0.0".into();
    assert_eq!(c.validate()[0].prop.to_string(), "wss.cert_path");
    c.wss.bind = "::1".into();
    assert!(c.validate().is_empty());
}
