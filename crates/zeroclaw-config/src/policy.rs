//! Principals and grants (SPEC §4, §4.1): who a peer is, and what it may do.
//!
//! [`resolve`] maps a credential to a [`Principal`] against a given [`Config`]; callers
//! re-resolve on every call so a changed grant takes effect on the next call. Admin
//! principals pass every check. Which grant each RPC method needs is the protocol
//! vocabulary's (`zeroclaw_protocol::Method`); the daemon checks it with [`Principal::require`].

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{ConfigError, PolicyError};
use crate::path::{PropPath, WritePattern};
use crate::schema::{Config, Profile};

/// How a peer proved who it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// A local peer's uid (SO_PEERCRED).
    LocalUid(u32),
    /// A Windows named-pipe client: the pipe's ACL only lets the daemon's own user (or
    /// SYSTEM) write to it, so it stands where the daemon's uid stands on Unix (SPEC §2).
    PipeClient,
    /// A pairing token already checked by the token store, naming its user.
    Token { user: String },
}

/// resource → verbs.
pub type Grants = BTreeMap<String, BTreeSet<String>>;

/// The resolved identity of a caller and its powers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `"operator"` or `"user:<name>"`.
    pub id: String,
    pub admin: bool,
    pub grants: Grants,
    /// Aliases, or `"*"` for all.
    pub allowed_agents: BTreeSet<String>,
    pub config_write_paths: Vec<WritePattern>,
}

/// The principal id of the daemon's own uid while `security.trust_daemon_uid` is true.
pub const OPERATOR: &str = "operator";

/// Resolves a credential against `config`. `daemon_uid` is the daemon's own uid.
///
/// Errors: an unmapped uid, an unknown user, an untrusted pipe client (the caller is
/// nobody: [`PolicyError::is_unauthenticated`]).
pub fn resolve(
    config: &Config,
    cred: &Credential,
    daemon_uid: u32,
) -> Result<Principal, PolicyError> {
    match cred {
        Credential::LocalUid(uid) => {
            if *uid == daemon_uid && config.security.trust_daemon_uid {
                return Ok(Principal::operator());
            }
            // Validation keeps uids unique; the first match is the only one.
            match config.users.iter().find(|(_, u)| u.uid == Some(*uid)) {
                Some((name, _)) => Ok(Principal::for_user(config, name)),
                None => Err(PolicyError::UnmappedUid(*uid)),
            }
        }
        Credential::PipeClient => {
            if config.security.trust_daemon_uid {
                Ok(Principal::operator())
            } else {
                Err(PolicyError::UntrustedPipeClient)
            }
        }
        Credential::Token { user } => {
            if config.users.contains_key(user) {
                Ok(Principal::for_user(config, user))
            } else {
                Err(PolicyError::UnknownUser(user.clone()))
            }
        }
    }
}

impl Principal {
    /// The admin principal of the daemon's own uid.
    pub fn operator() -> Principal {
        Principal {
            id: OPERATOR.into(),
            admin: true,
            grants: Grants::new(),
            allowed_agents: BTreeSet::new(),
            config_write_paths: Vec::new(),
        }
    }

    /// The principal of user `name` (which must exist in `config`): the union of its
    /// profiles. Unknown profiles (impossible in a validated config) grant nothing.
    pub fn for_user(config: &Config, name: &str) -> Principal {
        let mut p = Principal::holding_nothing(format!("user:{name}"));
        let profiles = config
            .users
            .get(name)
            .map(|u| u.permission_profiles.as_slice())
            .unwrap_or(&[]);
        for prof in profiles
            .iter()
            .filter_map(|n| config.permission_profiles.get(n))
        {
            p.add_profile(prof);
        }
        p
    }

    /// A principal with no grant, agent or write path.
    pub fn holding_nothing(id: String) -> Principal {
        Principal {
            id,
            admin: false,
            grants: Grants::new(),
            allowed_agents: BTreeSet::new(),
            config_write_paths: Vec::new(),
        }
    }

    /// Adds what `prof` holds. Invalid write patterns (impossible in a validated config)
    /// add nothing.
    pub fn add_profile(&mut self, prof: &Profile) {
        self.admin |= prof.admin;
        for (res, verbs) in &prof.grants {
            self.grants
                .entry(res.clone())
                .or_default()
                .extend(verbs.iter().cloned());
        }
        self.allowed_agents
            .extend(prof.allowed_agents.iter().cloned());
        for pat in &prof.config_write_paths {
            if let Ok(wp) = WritePattern::parse(pat)
                && !self.config_write_paths.contains(&wp)
            {
                self.config_write_paths.push(wp);
            }
        }
    }

    pub fn has_grant(&self, resource: &str, verb: &str) -> bool {
        self.admin || self.grants.get(resource).is_some_and(|v| v.contains(verb))
    }

    /// [`PolicyError::MissingGrant`] unless the principal holds `resource:verb`, which
    /// `method` requires.
    pub fn require(&self, resource: &str, verb: &str, method: &str) -> Result<(), PolicyError> {
        if self.has_grant(resource, verb) {
            return Ok(());
        }
        Err(PolicyError::MissingGrant {
            principal: self.id.clone(),
            resource: resource.into(),
            verb: verb.into(),
            method: method.into(),
        })
    }

    pub fn may_use_agent(&self, alias: &str) -> bool {
        self.admin || self.allowed_agents.contains("*") || self.allowed_agents.contains(alias)
    }

    /// Whether `prop` is within `config_write_paths` (see [`WritePattern`]) and not
    /// [`admin_only`].
    pub fn may_write(&self, prop: &PropPath) -> bool {
        self.admin || (!admin_only(prop) && self.config_write_paths.iter().any(|p| p.matches(prop)))
    }

    /// [`ConfigError::NotWritable`] naming `prop` (and `index` for a batch entry) unless
    /// [`Self::may_write`].
    pub fn require_write(&self, prop: &PropPath, index: Option<usize>) -> Result<(), ConfigError> {
        if self.may_write(prop) {
            return Ok(());
        }
        Err(ConfigError::NotWritable {
            index,
            prop: prop.clone(),
            principal: self.id.clone(),
            admin_only: admin_only(prop),
        })
    }
}

/// The provider keys only an admin may write (SPEC §17 "Secrets stay with their endpoint"):
/// where the stored key is sent and which key is sent.
pub const PROVIDER_ADMIN_KEYS: &[&str] = &["base_url", "kind", "api_key", "api_key_env"];

/// The agent keys only an admin may write (SPEC §17.1 "Whatever runs a program or reaches a
/// host is admin-only", §17.2 "Whatever moves a fence is admin-only"): the programs started
/// for every session of the agent (MCP servers, hooks of SPEC §21.1), what confines its
/// tools (where they may write, what they may do, which tools there are) and what of the
/// daemon's environment they inherit (`env`). Every key that starts with `sandbox` (the
/// sandbox of SPEC §21.2) is too, see [`agent_key_admin_only`].
pub const AGENT_ADMIN_KEYS: &[&str] = &[
    "mcp_servers",
    "hooks",
    "workspace",
    "autonomy",
    "tools",
    "env",
    // Budgets (SPEC §24.2): a fence on spending.
    "max_turn_tokens",
    "max_session_tokens",
    "max_turn_usd",
];

/// Whether an agent's key is admin-only: one of [`AGENT_ADMIN_KEYS`] or a `sandbox*` key.
pub fn agent_key_admin_only(key: &str) -> bool {
    AGENT_ADMIN_KEYS.contains(&key) || key.starts_with("sandbox")
}

/// Top-level sections only an admin may write, every key of them: `hooks` run for every
/// agent (SPEC §21.1); `wss` and `gateway` decide who may reach the daemon from the
/// network; `security` decides who the operator is (SPEC §17.2); `webhooks` and `notify`
/// would reach hosts (none of them is built yet: the names are reserved).
pub const ADMIN_SECTIONS: &[&str] = &[
    "hooks", "wss", "gateway", "security", "webhooks", "notify", "pricing",
];

/// Whether writing or deleting `prop` is admin-only whatever `config_write_paths` says: the
/// `providers` section, a whole provider table, a provider's endpoint or key; anything at
/// or under an agent's MCP servers, hooks, workspace, autonomy, tools or sandbox settings;
/// the [`ADMIN_SECTIONS`].
///
/// A write *above* these (`agents.X = {…}`, `agents = {…}`) is not admin-only by its path;
/// the store refuses it when it would change one of them (see [`crate::guard`]).
pub fn admin_only(prop: &PropPath) -> bool {
    match prop.segments() {
        [first, ..] if ADMIN_SECTIONS.contains(&first.as_str()) => true,
        [first, rest @ ..] if first == "providers" => match rest {
            [] | [_] => true,
            [_, key, ..] => PROVIDER_ADMIN_KEYS.contains(&key.as_str()),
        },
        [first, _, key, ..] if first == "agents" => agent_key_admin_only(key),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAEMON: u32 = 500;

    fn cfg(extra: &str) -> Config {
        let text = format!("{}\n{extra}", crate::schema::DEFAULT_CONFIG_TOML);
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        crate::value::check_document(&doc).unwrap()
    }

    const PROFILES: &str = r#"
[permission_profiles.reader]
grants = { sessions = ["read"], system = ["read"] }
allowed_agents = ["default"]
[permission_profiles.writer]
grants = { sessions = ["create", "execute"], config = ["update"] }
config_write_paths = ["users.*"]
[permission_profiles.boss]
admin = true
[users.alice]
uid = 1001
permission_profiles = ["reader", "writer"]
[users.nobody]
uid = 1002
permission_profiles = []
[users.me]
uid = 500
permission_profiles = ["reader"]
[users.tok]
permission_profiles = ["boss"]
"#;

    #[test]
    fn operator_user_unmapped() {
        let c = cfg(PROFILES);
        let op = resolve(&c, &Credential::LocalUid(DAEMON), DAEMON).unwrap();
        assert_eq!(op.id, "operator");
        assert!(op.admin && op.may_use_agent("x") && op.has_grant("sessions", "delete"));
        let e = resolve(&c, &Credential::LocalUid(0), DAEMON).unwrap_err();
        assert!(e.is_unauthenticated());
        assert_eq!(
            e.to_string(),
            "authentication failed: uid 0 is not mapped to a user"
        );
        let e = resolve(
            &c,
            &Credential::Token {
                user: "ghost".into(),
            },
            DAEMON,
        )
        .unwrap_err();
        assert_eq!(e, PolicyError::UnknownUser("ghost".into()));
        let tok = resolve(&c, &Credential::Token { user: "tok".into() }, DAEMON).unwrap();
        assert_eq!(tok.id, "user:tok");
        assert!(tok.admin);
    }

    #[test]
    fn trust_daemon_uid_false() {
        let mut c = cfg(PROFILES);
        c.security.trust_daemon_uid = false;
        let me = resolve(&c, &Credential::LocalUid(DAEMON), DAEMON).unwrap();
        assert_eq!(me.id, "user:me");
        assert!(!me.admin);
        c.users.remove("me");
        assert_eq!(
            resolve(&c, &Credential::LocalUid(DAEMON), DAEMON).unwrap_err(),
            PolicyError::UnmappedUid(DAEMON)
        );
    }

    #[test]
    fn pipe_client_is_the_operator_while_the_daemon_user_is_trusted() {
        let mut c = cfg(PROFILES);
        let op = resolve(&c, &Credential::PipeClient, DAEMON).unwrap();
        assert_eq!(op, Principal::operator());
        c.security.trust_daemon_uid = false;
        let e = resolve(&c, &Credential::PipeClient, DAEMON).unwrap_err();
        assert!(e.is_unauthenticated());
        assert!(e.to_string().contains("trust_daemon_uid"), "{e}");
    }

    #[test]
    fn union_and_empty_profiles() {
        let c = cfg(PROFILES);
        let a = resolve(&c, &Credential::LocalUid(1001), DAEMON).unwrap();
        assert_eq!(a.id, "user:alice");
        for (r, v) in [
            ("sessions", "read"),
            ("sessions", "create"),
            ("system", "read"),
            ("config", "update"),
        ] {
            assert!(a.has_grant(r, v), "{r}:{v}");
        }
        assert!(!a.has_grant("sessions", "delete"));
        let e = a.require("sessions", "delete", "session/kill").unwrap_err();
        assert!(!e.is_unauthenticated());
        assert_eq!(
            e.to_string(),
            "principal user:alice lacks sessions:delete (required by session/kill)"
        );
        assert!(a.may_use_agent("default") && !a.may_use_agent("other"));
        assert!(a.may_write(&PropPath::parse("users.bob.uid").unwrap()));
        assert!(!a.may_write(&PropPath::parse("users").unwrap()));
        assert!(!a.may_write(&PropPath::parse("wss.port").unwrap()));
        let e = a
            .require_write(&PropPath::parse("wss.port").unwrap(), Some(2))
            .unwrap_err();
        assert_eq!((e.index(), e.prop()), (Some(2), Some("wss.port".into())));

        let n = resolve(&c, &Credential::LocalUid(1002), DAEMON).unwrap();
        assert_eq!(n.id, "user:nobody");
        assert!(n.grants.is_empty() && !n.admin);
        for (r, v) in [
            ("sessions", "read"),
            ("system", "read"),
            ("files", "create"),
        ] {
            assert!(!n.has_grant(r, v), "{r}:{v}");
            assert!(matches!(
                n.require(r, v, "m"),
                Err(PolicyError::MissingGrant { .. })
            ));
        }
    }

    #[test]
    fn the_gateways_host_names_are_admin_only() {
        let mut p = Principal::holding_nothing("user:x".into());
        p.config_write_paths.push(WritePattern::parse("*").unwrap());
        for prop in ["gateway", "gateway.hostnames", "gateway.cors_origins"] {
            let prop = PropPath::parse(prop).unwrap();
            assert!(admin_only(&prop), "{prop:?}");
            assert!(!p.may_write(&prop), "{prop:?}");
            assert!(Principal::operator().may_write(&prop), "{prop:?}");
        }
    }

    #[test]
    fn provider_endpoint_and_key_are_admin_only() {
        let mut p = Principal::holding_nothing("user:x".into());
        p.config_write_paths.push(WritePattern::parse("*").unwrap());
        let path = |s: &str| PropPath::parse(s).unwrap();
        for prop in [
            "providers",
            "providers.local",
            "providers.local.base_url",
            "providers.local.kind",
            "providers.local.api_key",
            "providers.local.api_key_env",
        ] {
            assert!(admin_only(&path(prop)), "{prop}");
            assert!(!p.may_write(&path(prop)), "{prop}");
            assert!(Principal::operator().may_write(&path(prop)), "{prop}");
        }
        for prop in ["providers.local.model", "providers.local.timeout_secs"] {
            assert!(!admin_only(&path(prop)), "{prop}");
            assert!(p.may_write(&path(prop)), "{prop}");
        }
        // what runs a program or confines one (SPEC §17.1, §21), at any depth
        for prop in [
            "agents.a.mcp_servers",
            "agents.a.mcp_servers.s",
            "agents.a.mcp_servers.s.command",
            "agents.a.mcp_servers.s.env.X",
            "agents.a.hooks",
            "agents.a.hooks.pre_tool_use",
            "agents.a.sandbox",
            "agents.a.sandbox_writable",
            "agents.a.sandbox_network",
            "agents.a.sandbox_deny_read",
            "agents.a.env",
            "hooks",
            "hooks.stop",
            // what fences the tools and who reaches the daemon (SPEC §17.2)
            "agents.a.workspace",
            "agents.a.autonomy",
            "agents.a.tools",
            "wss",
            "wss.port",
            "wss.bind",
            "gateway.hostnames",
            "security",
            "security.trust_daemon_uid",
        ] {
            assert!(admin_only(&path(prop)), "{prop}");
            assert!(!p.may_write(&path(prop)), "{prop}");
        }
        for prop in ["agents", "agents.a", "agents.a.model", "agents.mcp_servers"] {
            assert!(!admin_only(&path(prop)), "{prop}");
        }
        let e = p
            .require_write(&path("providers.local.base_url"), None)
            .unwrap_err();
        assert!(matches!(e, ConfigError::NotWritable { .. }), "{e}");
        assert!(e.to_string().contains("admin-only"), "{e}");
    }
}
