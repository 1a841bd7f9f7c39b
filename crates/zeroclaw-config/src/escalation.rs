//! The "no escalation" rule (SPEC §4.1): a non-admin writer can never make configuration
//! that gives any principal more than the writer holds itself.
//!
//! [`find`] compares the config before a write with the candidate after it and reports each
//! place where something the writer lacks (`admin`, a grant, an allowed agent, a write path)
//! is newly held:
//! - by a permission profile (new, or changed);
//! - by a uid, because a user with more now carries it (changed `uid` or profiles);
//! - by a user name, which pairing tokens name (changed profiles, or a new user);
//! - by the daemon's uid, when `security.trust_daemon_uid` is switched on.
//!
//! Each finding names the properties whose change caused it, so the store can blame the
//! first batch entry that touched one of them.

use crate::path::PropPath;
use crate::policy::Principal;
use crate::schema::Config;

/// One way a candidate config would give a principal more than its writer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// The properties whose change caused it; an entry at or above or below one of them is
    /// to blame.
    pub props: Vec<PropPath>,
    /// A sentence naming who would gain what.
    pub message: String,
}

fn prop(segs: &[&str]) -> PropPath {
    // Callers pass literal section names and map keys of a validated config: never empty.
    PropPath::from_segments(segs.iter().copied()).unwrap_or_else(|| {
        PropPath::from_segments(["config"]).expect("literal segment is non-empty")
    })
}

fn covers_agent(p: &Principal, alias: &str) -> bool {
    p.admin || p.allowed_agents.contains("*") || p.allowed_agents.contains(alias)
}

fn covers_pattern(p: &Principal, pat: &crate::path::WritePattern) -> bool {
    p.admin || p.config_write_paths.iter().any(|w| pat.within(w))
}

/// What `new` holds that neither `old` held nor `writer` holds, described one item each.
pub fn gained(new: &Principal, old: &Principal, writer: &Principal) -> Vec<String> {
    if old.admin || writer.admin {
        return Vec::new();
    }
    if new.admin {
        return vec!["admin".into()];
    }
    let mut out = Vec::new();
    for (res, verbs) in &new.grants {
        for verb in verbs {
            if !old.has_grant(res, verb) && !writer.has_grant(res, verb) {
                out.push(format!("{res}:{verb}"));
            }
        }
    }
    for alias in &new.allowed_agents {
        if !covers_agent(old, alias) && !covers_agent(writer, alias) {
            out.push(format!("agent {alias:?}"));
        }
    }
    for pat in &new.config_write_paths {
        if !covers_pattern(old, pat) && !covers_pattern(writer, pat) {
            out.push(format!("write path {:?}", pat.as_str()));
        }
    }
    out
}

fn profile_powers(config: &Config, name: &str) -> Principal {
    let mut p = Principal::holding_nothing(format!("profile:{name}"));
    if let Some(prof) = config.permission_profiles.get(name) {
        p.add_profile(prof);
    }
    p
}

fn user_powers(config: &Config, name: &str) -> Principal {
    match config.users.contains_key(name) {
        true => Principal::for_user(config, name),
        false => Principal::holding_nothing(format!("user:{name}")),
    }
}

/// The properties that decide what user `name` holds in `config` (and its `uid`, when
/// `uid_changed`).
fn user_props(config: &Config, name: &str, uid_changed: bool) -> Vec<PropPath> {
    let mut props = vec![prop(&["users", name, "permission_profiles"])];
    if uid_changed {
        props.push(prop(&["users", name, "uid"]));
    }
    if let Some(u) = config.users.get(name) {
        props.extend(
            u.permission_profiles
                .iter()
                .map(|p| prop(&["permission_profiles", p])),
        );
    }
    props
}

/// Every escalation `after` would bring about relative to `before`, for a write by
/// `writer`. Empty for an admin writer.
pub fn find(writer: &Principal, before: &Config, after: &Config) -> Vec<Escalation> {
    let mut out = Vec::new();
    if writer.admin {
        return out;
    }
    let lacks = |what: Vec<String>| {
        format!(
            "{}, which principal {} does not hold (no escalation)",
            what.join(", "),
            writer.id
        )
    };
    for name in after.permission_profiles.keys() {
        let what = gained(
            &profile_powers(after, name),
            &profile_powers(before, name),
            writer,
        );
        if !what.is_empty() {
            out.push(Escalation {
                props: vec![prop(&["permission_profiles", name])],
                message: format!("permission profile {name} would hold {}", lacks(what)),
            });
        }
    }
    // uid → user name before the write (validation keeps uids unique).
    let before_uids: std::collections::HashMap<u32, &String> = before
        .users
        .iter()
        .filter_map(|(name, u)| u.uid.map(|uid| (uid, name)))
        .collect();
    for (name, user) in &after.users {
        let new = user_powers(after, name);
        let what = gained(&new, &user_powers(before, name), writer);
        if !what.is_empty() {
            out.push(Escalation {
                props: user_props(after, name, false),
                message: format!("user {name} would hold {}", lacks(what)),
            });
        }
        let Some(uid) = user.uid else { continue };
        let old = match before_uids.get(&uid) {
            Some(old_name) => Principal::for_user(before, old_name),
            None => Principal::holding_nothing(format!("uid:{uid}")),
        };
        let what = gained(&new, &old, writer);
        if !what.is_empty() {
            let uid_changed = before.users.get(name).is_none_or(|u| u.uid != Some(uid));
            out.push(Escalation {
                props: user_props(after, name, uid_changed),
                message: format!("uid {uid} would map to user {name} holding {}", lacks(what)),
            });
        }
    }
    if after.security.trust_daemon_uid && !before.security.trust_daemon_uid {
        out.push(Escalation {
            props: vec![prop(&["security", "trust_daemon_uid"])],
            message: format!(
                "the daemon's uid would become the admin principal operator, {}",
                lacks(vec!["admin".into()])
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Credential, resolve};

    fn cfg(extra: &str) -> Config {
        let text = format!("{}\n{extra}", crate::schema::DEFAULT_CONFIG_TOML);
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        crate::value::check_document(&doc).unwrap()
    }

    const BASE: &str = r#"
[permission_profiles.editor]
grants = { config = ["read", "update"], sessions = ["read"] }
allowed_agents = ["default"]
config_write_paths = ["users.*", "permission_profiles.*"]
[permission_profiles.reader]
grants = { sessions = ["read"] }
[permission_profiles.boss]
admin = true
[permission_profiles.deleter]
grants = { sessions = ["delete"] }
[users.alice]
uid = 1001
permission_profiles = ["editor"]
[users.root2]
uid = 1002
permission_profiles = ["boss"]
[users.token_only]
permission_profiles = ["reader"]
"#;

    fn alice(c: &Config) -> Principal {
        resolve(c, &Credential::LocalUid(1001), 0).unwrap()
    }

    fn with(extra: &str) -> Config {
        cfg(&format!("{BASE}{extra}"))
    }

    fn edit(before: &Config, change: impl FnOnce(&mut Config)) -> Vec<Escalation> {
        let mut after = before.clone();
        change(&mut after);
        find(&alice(before), before, &after)
    }

    #[test]
    fn own_profiles_to_an_admin_profile() {
        let c = with("");
        let found = edit(&c, |a| {
            a.users.get_mut("alice").unwrap().permission_profiles = vec!["boss".into()];
        });
        assert!(!found.is_empty());
        assert!(
            found[0].message.contains("user alice would hold admin"),
            "{found:?}"
        );
        assert!(
            found[0]
                .props
                .contains(&prop(&["users", "alice", "permission_profiles"]))
        );
    }

    #[test]
    fn swapping_uids() {
        let c = with("");
        let found = edit(&c, |a| {
            a.users.get_mut("alice").unwrap().uid = Some(1002);
            a.users.get_mut("root2").unwrap().uid = Some(1001);
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .message
                .starts_with("uid 1001 would map to user root2 holding admin")
        );
        assert!(found[0].props.contains(&prop(&["users", "root2", "uid"])));
    }

    #[test]
    fn new_admin_profile_and_a_grant_to_own_profile() {
        let c = with("");
        let found = edit(&c, |a| {
            let mut p = a.permission_profiles["reader"].clone();
            p.admin = true;
            a.permission_profiles.insert("mine".into(), p);
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .message
                .starts_with("permission profile mine would hold admin")
        );

        let found = edit(&c, |a| {
            let p = a.permission_profiles.get_mut("editor").unwrap();
            p.grants.insert("system".into(), vec!["read".into()]);
            p.allowed_agents.push("*".into());
            p.config_write_paths.push("wss.*".into());
        });
        let msg = &found[0].message;
        assert!(
            msg.contains("system:read")
                && msg.contains("agent \"*\"")
                && msg.contains("write path \"wss.*\""),
            "{msg}"
        );
        // a token user (no uid) counts too
        let found = edit(&c, |a| {
            a.users.get_mut("token_only").unwrap().permission_profiles = vec!["deleter".into()];
        });
        assert!(found[0].message.contains("sessions:delete"), "{found:?}");
    }

    #[test]
    fn subsets_of_the_writer_are_allowed() {
        let c = with("");
        assert!(
            edit(&c, |a| {
                // a new user on a new uid with a subset of alice's rights
                a.users.insert(
                    "bob".into(),
                    crate::schema::User {
                        uid: Some(3000),
                        permission_profiles: vec!["editor".into()],
                    },
                );
                // narrower paths and agents alice holds, in a new profile
                let mut p = crate::schema::Profile::default();
                p.grants.insert("config".into(), vec!["read".into()]);
                p.allowed_agents.push("default".into());
                p.config_write_paths.push("users.bob.*".into());
                a.permission_profiles.insert("narrow".into(), p);
                // taking rights away is always allowed
                a.permission_profiles.get_mut("boss").unwrap().admin = false;
                a.users
                    .get_mut("token_only")
                    .unwrap()
                    .permission_profiles
                    .clear();
                // what a profile already held it keeps
                a.permission_profiles
                    .get_mut("deleter")
                    .unwrap()
                    .grants
                    .insert("config".into(), vec!["read".into()]);
            })
            .is_empty()
        );
        // Admin writers are not limited.
        let mut after = c.clone();
        after.users.get_mut("alice").unwrap().permission_profiles = vec!["boss".into()];
        assert!(find(&Principal::operator(), &c, &after).is_empty());
    }

    #[test]
    fn trusting_the_daemon_uid() {
        let mut before = with("");
        before.security.trust_daemon_uid = false;
        let mut after = before.clone();
        after.security.trust_daemon_uid = true;
        let found = find(&alice(&before), &before, &after);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].props, [prop(&["security", "trust_daemon_uid"])]);
    }
}
