//! The webhooks of the configuration (SPEC §23.1): `[webhooks.NAME]`, each naming the agent
//! a delivery prompts, the secret its signature is checked under, the user its turn runs
//! as, the prompt template, which session it goes to, the events it takes, and its rate;
//! and the checks types cannot make (a secret is given, the agent and user exist, the
//! autonomy is at most the agent's, the key is a JSON pointer).
//!
//! Writing any of them is admin-only ([`crate::policy::ADMIN_SECTIONS`]): a webhook starts
//! turns as its `run_as` user for whoever holds its secret.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::autonomy::Autonomy;
use crate::path::PropPath;

/// `rate_per_minute` when not set.
pub const DEFAULT_WEBHOOK_RATE: u32 = 60;
/// The largest `rate_per_minute` accepted.
pub const MAX_WEBHOOK_RATE: u32 = 60_000;
/// The session modes besides a fixed session id.
pub const WEBHOOK_SESSION_NEW: &str = "new";
pub const WEBHOOK_SESSION_PER_KEY: &str = "per_key";

/// One webhook: `[webhooks.NAME]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Webhook {
    /// The agent whose session each delivery prompts.
    pub agent: String,
    /// Name of the environment variable holding the signing secret.
    pub secret_env: String,
    /// The signing secret itself (secret: read back masked; prefer `secret_env`).
    pub secret: String,
    /// The user the turn runs as; empty = the daemon's owner.
    pub run_as: String,
    /// The prompt template (`{{event}}`, `{{delivery}}`, `{{json /pointer}}`,
    /// `{{payload}}`); empty = the payload alone.
    pub prompt: String,
    /// `new` (a session per delivery), `per_key` (one per value of `key`) or a session id.
    pub session: String,
    /// A JSON pointer into the payload (`/pull_request/number`) for `session = "per_key"`.
    pub key: String,
    /// The event header's values taken; empty = every event.
    pub events: Vec<String>,
    /// Where `bash` runs; empty = the agent's workspace.
    pub cwd: String,
    /// At most the agent's; `None` = the agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<Autonomy>,
    pub rate_per_minute: u32,
}

impl Default for Webhook {
    fn default() -> Self {
        Webhook {
            agent: String::new(),
            secret_env: String::new(),
            secret: String::new(),
            run_as: String::new(),
            prompt: String::new(),
            session: WEBHOOK_SESSION_NEW.to_owned(),
            key: String::new(),
            events: Vec::new(),
            cwd: String::new(),
            autonomy: None,
            rate_per_minute: DEFAULT_WEBHOOK_RATE,
        }
    }
}

/// The problems of `webhooks` (`[webhooks.*]`), each at its property: `agent_autonomy`
/// says whether an agent exists and its autonomy, `user_known` whether a user does.
pub(crate) fn violations(
    webhooks: &BTreeMap<String, Webhook>,
    agent_autonomy: &dyn Fn(&str) -> Option<Autonomy>,
    user_known: &dyn Fn(&str) -> bool,
) -> Vec<(PropPath, String)> {
    let mut out = Vec::new();
    for (name, w) in webhooks {
        let at = |key: &str| {
            PropPath::from_segments(["webhooks", name.as_str(), key])
                .unwrap_or_else(|| PropPath::from_segments(["webhooks"]).expect("literal"))
        };
        let mut bad = |key: &str, message: String| out.push((at(key), message));
        if w.secret.is_empty() && w.secret_env.is_empty() {
            bad(
                "secret_env",
                "a webhook needs a signing secret: set secret_env (or secret)".into(),
            );
        }
        match agent_autonomy(&w.agent) {
            None if w.agent.is_empty() => bad("agent", "the agent to prompt is required".into()),
            None => bad("agent", format!("unknown agent {:?}", w.agent)),
            Some(allowed) => {
                if let Some(a) = w.autonomy
                    && a.latitude() > allowed.latitude()
                {
                    bad(
                        "autonomy",
                        format!(
                            "{a:?} is more than agent {:?} allows ({allowed:?})",
                            w.agent
                        ),
                    );
                }
            }
        }
        if !w.run_as.is_empty() && !user_known(&w.run_as) {
            bad("run_as", format!("unknown user {:?}", w.run_as));
        }
        if w.session.is_empty() || w.session.len() > 256 || w.session.chars().any(char::is_control)
        {
            bad(
                "session",
                "use \"new\", \"per_key\" or a session id of 1-256 bytes".into(),
            );
        }
        if w.session == WEBHOOK_SESSION_PER_KEY && !w.key.starts_with('/') {
            bad(
                "key",
                "session = \"per_key\" needs key, a JSON pointer such as /pull_request/number"
                    .into(),
            );
        }
        if !w.key.is_empty() && !w.key.starts_with('/') {
            bad("key", "a JSON pointer starts with /".into());
        }
        if w.rate_per_minute == 0 {
            bad("rate_per_minute", "at least 1".into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::schema::Config;

    fn messages(toml_text: &str) -> Vec<String> {
        let config: Config = toml_edit::de::from_str(toml_text).expect("parses");
        config
            .validate()
            .into_iter()
            .map(|v| format!("{}: {}", v.prop, v.message))
            .collect()
    }

    #[test]
    fn a_webhook_needs_a_secret_a_known_agent_and_no_more_autonomy() {
        let base = "[providers.p]\nkind = \"echo\"\n[agents.a]\nprovider = \"p\"\nautonomy = \"supervised\"\n";
        assert_eq!(
            messages(&format!(
                "{base}[webhooks.gh]\nagent = \"a\"\nsecret_env = \"S\"\n"
            )),
            Vec::<String>::new()
        );
        let found = messages(&format!(
            "{base}[webhooks.gh]\nagent = \"b\"\n[webhooks.x]\nagent = \"a\"\nsecret = \"s\"\nautonomy = \"full\"\nsession = \"per_key\"\nrun_as = \"nobody\"\n"
        ));
        let all = found.join("\n");
        for needle in [
            "webhooks.gh.secret_env: a webhook needs a signing secret",
            "webhooks.gh.agent: unknown agent",
            "webhooks.x.autonomy:",
            "webhooks.x.key:",
            "webhooks.x.run_as: unknown user",
        ] {
            assert!(all.contains(needle), "{needle} missing in:\n{all}");
        }
    }
}
