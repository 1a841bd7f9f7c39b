//! What a non-admin config write may not bring about, whatever paths it names (SPEC §4.1,
//! §17.1). [`find`] compares the running configuration with a candidate and reports:
//! - escalation: some principal would hold more than the writer ([`crate::escalation`]);
//! - admin-only settings ([`crate::policy::admin_only`]: a provider's endpoint and key, an
//!   agent's MCP servers, hooks, workspace, autonomy, tools and sandbox, the `hooks`,
//!   `wss`, `security` sections and the like) added, changed or removed
//!   by a write above them (`agents.X = {…, mcp_servers = …}`, `agents = {…}`, deleting an
//!   agent that has MCP servers);
//! - identities taken: the `uid` of an existing user changed, or a user created under a
//!   name that owns sessions or pairing tokens. Which names do is the caller's knowledge
//!   (this crate knows no sessions), passed in as a predicate.
//!
//! Admin writers are not limited. Each finding names the properties whose change caused
//! it, so the store can blame the batch entry that made it.

use serde_json::Value;

use crate::escalation;
use crate::path::PropPath;
use crate::policy::{ADMIN_SECTIONS, PROVIDER_ADMIN_KEYS, Principal, agent_key_admin_only};
use crate::schema::{Agent, Config, Provider};

/// One thing a candidate config would bring about that its writer may not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offence {
    /// The properties whose change caused it; a write at, above or below one of them is to
    /// blame.
    pub props: Vec<PropPath>,
    /// A sentence saying what and why.
    pub message: String,
}

fn prop(segs: &[&str]) -> PropPath {
    // Literal section names and map keys of a validated config: never empty.
    PropPath::from_segments(segs.iter().copied()).unwrap_or_else(|| {
        PropPath::from_segments(["config"]).expect("literal segment is non-empty")
    })
}

/// Everything `after` would bring about, relative to `before`, that `writer` may not.
/// `name_in_use(name)`: whether user name `name` owns sessions or pairing tokens. Empty for
/// an admin writer.
pub fn find(
    writer: &Principal,
    before: &Config,
    after: &Config,
    name_in_use: &dyn Fn(&str) -> bool,
) -> Vec<Offence> {
    if writer.admin {
        return Vec::new();
    }
    let mut out: Vec<Offence> = escalation::find(writer, before, after)
        .into_iter()
        .map(|e| Offence {
            props: e.props,
            message: e.message,
        })
        .collect();
    for changed in admin_only_changes(before, after) {
        out.push(Offence {
            message: format!(
                "{changed} would change, and only an admin may change it (it decides which \
                 programs the daemon runs, where it connects and with which key, or what fences \
                 its tools and who may reach it); principal {} is not an admin",
                writer.id
            ),
            props: vec![changed],
        });
    }
    out.extend(identities_taken(writer, before, after, name_in_use));
    out
}

/// The admin-only settings whose value differs between `before` and `after` (an entry
/// missing on one side counts as its defaults).
pub fn admin_only_changes(before: &Config, after: &Config) -> Vec<PropPath> {
    let b = serde_json::to_value(before).unwrap_or(Value::Null);
    let a = serde_json::to_value(after).unwrap_or(Value::Null);
    let mut out = Vec::new();
    for section in ADMIN_SECTIONS {
        if b.get(section) != a.get(section) {
            out.push(prop(&[section]));
        }
    }
    let provider = serde_json::to_value(Provider::default()).unwrap_or(Value::Null);
    let agent = serde_json::to_value(Agent::default()).unwrap_or(Value::Null);
    fn provider_key(key: &str) -> bool {
        PROVIDER_ADMIN_KEYS.contains(&key)
    }
    /// A section of named tables, which of their keys are admin-only, a table's defaults.
    type Named<'a> = (&'a str, fn(&str) -> bool, &'a Value);
    let sections: [Named<'_>; 2] = [
        ("providers", provider_key, &provider),
        ("agents", agent_key_admin_only, &agent),
    ];
    for (section, admin_key, default) in sections {
        let (bs, as_) = (b.get(section), a.get(section));
        let mut names: Vec<&String> = [bs, as_]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys())
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            let be = bs.and_then(|m| m.get(name)).unwrap_or(default);
            let ae = as_.and_then(|m| m.get(name)).unwrap_or(default);
            let mut keys: Vec<&String> = [be, ae, default]
                .into_iter()
                .filter_map(Value::as_object)
                .flat_map(|m| m.keys())
                .filter(|k| admin_key(k))
                .collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                if be.get(key) != ae.get(key) {
                    out.push(prop(&[section, name, key]));
                }
            }
        }
    }
    out
}

/// An existing user's uid changed; a user created under a name in use.
fn identities_taken(
    writer: &Principal,
    before: &Config,
    after: &Config,
    name_in_use: &dyn Fn(&str) -> bool,
) -> Vec<Offence> {
    let mut out = Vec::new();
    for (name, user) in &after.users {
        match before.users.get(name) {
            Some(old) if old.uid != user.uid => out.push(Offence {
                props: vec![prop(&["users", name, "uid"])],
                message: format!(
                    "the uid of existing user {name} would change; only an admin may change \
                     it (whoever has the uid takes the user's sessions); principal {} is not an \
                     admin",
                    writer.id
                ),
            }),
            None if name_in_use(name) => out.push(Offence {
                props: vec![prop(&["users", name])],
                message: format!(
                    "user {name} would be created, but that name owns sessions or pairing \
                     tokens; only an admin may create it; principal {} is not an admin",
                    writer.id
                ),
            }),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        crate::value::check_document(&doc).unwrap()
    }

    const BASE: &str = r#"
[providers.echo]
kind = "echo"
[agents.a]
provider = "echo"
[agents.a.mcp_servers.s]
command = "server"
[agents.b]
provider = "echo"
[permission_profiles.editor]
grants = { config = ["update"] }
config_write_paths = ["*"]
[users.alice]
uid = 1001
permission_profiles = ["editor"]
[users.bob]
uid = 1002
permission_profiles = ["editor"]
[users.tok]
permission_profiles = []
"#;

    fn alice(c: &Config) -> Principal {
        Principal::for_user(c, "alice")
    }

    fn edit(change: impl FnOnce(&mut Config), in_use: &dyn Fn(&str) -> bool) -> Vec<Offence> {
        let before = cfg(BASE);
        let mut after = before.clone();
        change(&mut after);
        find(&alice(&before), &before, &after, in_use)
    }

    const NOBODY: &dyn Fn(&str) -> bool = &|_| false;

    fn props(found: &[Offence]) -> Vec<String> {
        found
            .iter()
            .flat_map(|o| o.props.iter().map(ToString::to_string))
            .collect()
    }

    #[test]
    fn admin_only_settings_changed_from_above() {
        let server = || crate::schema::McpServer {
            command: "sh".into(),
            ..Default::default()
        };
        // added to an agent without any, to a new agent, replaced, removed with the agent
        let found = edit(
            |c| {
                c.agents
                    .get_mut("b")
                    .unwrap()
                    .mcp_servers
                    .insert("x".into(), server());
                let mut n = Agent {
                    provider: "echo".into(),
                    ..Default::default()
                };
                n.mcp_servers.insert("y".into(), server());
                c.agents.insert("new".into(), n);
                c.agents.remove("a");
            },
            NOBODY,
        );
        assert_eq!(
            props(&found),
            [
                "agents.a.mcp_servers",
                "agents.b.mcp_servers",
                "agents.new.mcp_servers"
            ]
        );
        assert!(found[0].message.contains("only an admin"), "{found:?}");
        // a provider's endpoint, even for a provider created whole
        let found = edit(
            |c| {
                c.providers.insert(
                    "p".into(),
                    Provider {
                        base_url: "http://evil/".into(),
                        ..Default::default()
                    },
                );
            },
            NOBODY,
        );
        assert_eq!(props(&found), ["providers.p.base_url"]);
        // other agent settings, and new agents without servers, are no concern of this rule
        let found = edit(
            |c| {
                c.agents.get_mut("a").unwrap().model = "m".into();
                c.agents.insert(
                    "plain".into(),
                    Agent {
                        provider: "echo".into(),
                        ..Default::default()
                    },
                );
                c.agents.remove("b");
            },
            NOBODY,
        );
        assert!(found.is_empty(), "{found:?}");
        // admins are not limited
        let before = cfg(BASE);
        let mut after = before.clone();
        after.agents.clear();
        assert!(find(&Principal::operator(), &before, &after, NOBODY).is_empty());
        assert!(!find(&alice(&before), &before, &after, NOBODY).is_empty());
    }

    #[test]
    fn fences_moved_from_above_are_found() {
        // SPEC §17.2: an agent's workspace, autonomy, tools and sandbox, and the `wss` and
        // `security` sections, written whole or through a new agent
        let found = edit(
            |c| {
                let a = c.agents.get_mut("a").unwrap();
                a.workspace = "/".into();
                a.tools = vec!["bash".into()];
                c.agents.insert(
                    "new".into(),
                    Agent {
                        provider: "echo".into(),
                        autonomy: crate::schema::Autonomy::Full,
                        ..Default::default()
                    },
                );
                c.wss.bind = "0.0.0.0".into();
                c.security.trust_daemon_uid = false;
            },
            NOBODY,
        );
        assert_eq!(
            props(&found),
            [
                "wss",
                "security",
                "agents.a.tools",
                "agents.a.workspace",
                "agents.new.autonomy"
            ]
        );
    }

    #[test]
    fn identities_cannot_be_taken() {
        // swapping two equal users' uids escalates nothing, but takes identities
        let found = edit(
            |c| {
                c.users.get_mut("alice").unwrap().uid = Some(1002);
                c.users.get_mut("bob").unwrap().uid = Some(1001);
            },
            NOBODY,
        );
        assert_eq!(props(&found), ["users.alice.uid", "users.bob.uid"]);
        assert!(found[0].message.contains("uid of existing user alice"));
        // giving a token-only user a uid, or taking one away, changes it too
        let found = edit(
            |c| {
                c.users.get_mut("tok").unwrap().uid = Some(3000);
                c.users.get_mut("bob").unwrap().uid = None;
            },
            NOBODY,
        );
        assert_eq!(props(&found), ["users.bob.uid", "users.tok.uid"]);
        // a new user under a name that owns sessions or tokens; any other name is fine
        let new_user = |c: &mut Config, name: &str| {
            c.users.insert(
                name.into(),
                crate::schema::User {
                    uid: Some(4000),
                    permission_profiles: vec![],
                },
            );
        };
        let in_use: &dyn Fn(&str) -> bool = &|n| n == "ghost";
        let found = edit(|c| new_user(c, "ghost"), in_use);
        assert_eq!(props(&found), ["users.ghost"]);
        assert!(found[0].message.contains("owns sessions or pairing tokens"));
        assert!(edit(|c| new_user(c, "fresh"), in_use).is_empty());
        // an existing user whose name is in use keeps being edited
        let in_use: &dyn Fn(&str) -> bool = &|_| true;
        assert!(
            edit(
                |c| c.users.get_mut("bob").unwrap().permission_profiles.clear(),
                in_use
            )
            .is_empty()
        );
    }
}
