//! `[notify.NAME]`: where notifications go besides Web Push (SPEC §24.3) — the channel's
//! settings, their shape for writes and forms, and the checks types cannot make. The whole
//! section is admin-only (see [`crate::policy::ADMIN_SECTIONS`]): a `command` channel runs
//! a command as the daemon's user.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::path::PropPath;

/// The events a channel may ask for (its `events` filter).
pub const NOTIFY_EVENTS: &[&str] = &[
    "approval_request",
    "ask_user",
    "budget_request",
    "turn_failed",
    "turn_ended",
];

/// The kinds of channel.
pub const NOTIFY_KINDS: &[&str] = &["webhook", "ntfy", "command"];

/// The longest a command channel's command may run, in seconds.
pub const MAX_COMMAND_SECS: u64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    #[default]
    Webhook,
    Ntfy,
    Command,
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyChannel {
    pub kind: NotifyKind,
    /// Where a webhook or ntfy channel posts.
    pub url: String,
    /// The webhook's HMAC-SHA256 key (`X-Zeroclaw-Signature`); empty = unsigned.
    pub secret: String,
    /// A command channel's command (`sh -c`).
    pub command: String,
    /// The events it gets; empty = all of [`NOTIFY_EVENTS`].
    pub events: Vec<String>,
    /// Whose sessions it hears about (principal ids); empty = everyone's.
    pub users: Vec<String>,
    /// ntfy's `Priority` (1-5).
    pub priority: u8,
    /// The longest a command runs, in seconds.
    pub timeout_secs: u64,
}

impl Default for NotifyChannel {
    fn default() -> Self {
        NotifyChannel {
            kind: NotifyKind::Webhook,
            url: String::new(),
            secret: String::new(),
            command: String::new(),
            events: Vec::new(),
            users: Vec::new(),
            priority: 4,
            timeout_secs: 10,
        }
    }
}

impl NotifyChannel {
    /// Whether this channel gets `event` about a session of `owner`.
    pub fn wants(&self, event: &str, owner: &str) -> bool {
        (self.events.is_empty() || self.events.iter().any(|e| e == event))
            && (self.users.is_empty() || self.users.iter().any(|u| u == owner))
    }
}

fn at(name: &str, key: &str) -> PropPath {
    PropPath::from_segments(["notify", name, key])
        .or_else(|| PropPath::from_segments(["notify"]))
        .expect("literal segment is non-empty")
}

/// What types cannot check: a URL for webhook and ntfy, a command for command, known
/// events only.
pub(crate) fn validate(
    channels: &BTreeMap<String, NotifyChannel>,
    out: &mut Vec<(PropPath, String)>,
) {
    for (name, c) in channels {
        let needs_url = matches!(c.kind, NotifyKind::Webhook | NotifyKind::Ntfy);
        if needs_url && !(c.url.starts_with("http://") || c.url.starts_with("https://")) {
            out.push((
                at(name, "url"),
                "an http:// or https:// URL is required for a webhook or ntfy channel".into(),
            ));
        }
        if c.kind == NotifyKind::Command && c.command.trim().is_empty() {
            out.push((
                at(name, "command"),
                "a command channel needs its command".into(),
            ));
        }
        for e in &c.events {
            if !NOTIFY_EVENTS.contains(&e.as_str()) {
                out.push((
                    at(name, "events"),
                    format!("unknown event {e:?} (one of {})", NOTIFY_EVENTS.join(", ")),
                ));
            }
        }
        if !(1..=5).contains(&c.priority) {
            out.push((at(name, "priority"), "must be 1 to 5".into()));
        }
        if c.timeout_secs == 0 || c.timeout_secs > MAX_COMMAND_SECS {
            out.push((
                at(name, "timeout_secs"),
                format!("must be 1 to {MAX_COMMAND_SECS}"),
            ));
        }
    }
}
