//! The hooks of the configuration (SPEC §21.1): `[[hooks.EVENT]]` for every agent and
//! `[[agents.NAME.hooks.EVENT]]` for one, each `{command, matcher?, timeout_secs?}`, and the
//! checks types cannot make (a command is given, a matcher is a regular expression).
//!
//! Writing any of them is admin-only ([`crate::policy::admin_only`]): a hook runs as the
//! daemon's user.

use serde::{Deserialize, Serialize};

use crate::path::PropPath;

/// The events a hook may be attached to, in the order of SPEC §21.1.
pub const HOOK_EVENTS: &[&str] = &[
    "session_start",
    "user_prompt_submit",
    "pre_tool_use",
    "post_tool_use",
    "pre_compact",
    "stop",
];

/// `timeout_secs` when not set.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;
/// The longest `timeout_secs` accepted (one hour).
pub const MAX_HOOK_TIMEOUT_SECS: u64 = 3600;

/// One hook: a command run by `sh -c` with the event's JSON on stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hook {
    pub command: String,
    /// A regular expression that must match the whole tool name (tool events only); none
    /// = every tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub timeout_secs: u64,
}

impl Default for Hook {
    fn default() -> Self {
        Hook {
            command: String::new(),
            matcher: None,
            timeout_secs: DEFAULT_HOOK_TIMEOUT_SECS,
        }
    }
}

/// The hooks of one scope (global or one agent), by event, each list in its run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Hooks {
    pub session_start: Vec<Hook>,
    pub user_prompt_submit: Vec<Hook>,
    pub pre_tool_use: Vec<Hook>,
    pub post_tool_use: Vec<Hook>,
    pub pre_compact: Vec<Hook>,
    pub stop: Vec<Hook>,
}

impl Hooks {
    /// The hooks of `event` (one of [`HOOK_EVENTS`]); empty for an unknown name.
    pub fn of(&self, event: &str) -> &[Hook] {
        match event {
            "session_start" => &self.session_start,
            "user_prompt_submit" => &self.user_prompt_submit,
            "pre_tool_use" => &self.pre_tool_use,
            "post_tool_use" => &self.post_tool_use,
            "pre_compact" => &self.pre_compact,
            "stop" => &self.stop,
            _ => &[],
        }
    }

    pub fn is_empty(&self) -> bool {
        HOOK_EVENTS.iter().all(|e| self.of(e).is_empty())
    }

    /// Checks every hook of this scope; `at` is where the scope sits (`hooks`,
    /// `agents.NAME.hooks`). Each problem is pushed with the property it is at.
    pub fn validate(&self, at: &PropPath, out: &mut Vec<(PropPath, String)>) {
        for event in HOOK_EVENTS {
            let here = at.child(*event);
            for (i, hook) in self.of(event).iter().enumerate() {
                if hook.command.trim().is_empty() {
                    out.push((here.clone(), format!("hook {i}: command is required")));
                }
                if let Some(m) = &hook.matcher
                    && let Err(e) = compile_matcher(m)
                {
                    out.push((
                        here.clone(),
                        format!("hook {i}: matcher is not a regular expression: {e}"),
                    ));
                }
            }
        }
    }
}

/// The matcher as a regular expression anchored at both ends (it must match the whole
/// tool name).
pub fn compile_matcher(matcher: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{matcher})$"))
        .size_limit(1 << 20)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_match_the_whole_name() {
        let m = compile_matcher("bash|write_.*").unwrap();
        assert!(m.is_match("bash"));
        assert!(m.is_match("write_file"));
        assert!(!m.is_match("rebash"));
        assert!(!m.is_match("bash2"));
        assert!(compile_matcher("(").is_err());
    }

    #[test]
    fn a_hook_needs_a_command_and_a_valid_matcher() {
        let hooks = Hooks {
            pre_tool_use: vec![
                Hook {
                    command: " ".into(),
                    ..Hook::default()
                },
                Hook {
                    command: "true".into(),
                    matcher: Some("(".into()),
                    ..Hook::default()
                },
            ],
            ..Hooks::default()
        };
        let mut out = Vec::new();
        hooks.validate(&PropPath::parse("hooks").unwrap(), &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].0.to_string(), "hooks.pre_tool_use");
        assert!(out[1].1.contains("matcher"), "{}", out[1].1);
    }
}
