//! Hooks (SPEC §21.1): commands the operator configured, run at points of a turn to check,
//! block, change or record what the agent does.
//!
//! - [`mod@set`]: the hooks of one session (global first, then the agent's), matchers
//!   compiled, and [`HookSet::run`], which runs the hooks of one event in order and folds
//!   their outcomes (the first deny wins);
//! - [`process`]: one hook as a process (`sh -c`, its own process group, the event's JSON on
//!   stdin, stdout and stderr read up to 64 KiB each, the group killed on timeout or drop);
//! - [`supervise`] (Linux): the supervisor that makes a hook die whole, `setsid`
//!   descendants included;
//! - [`outcome`]: what a finished hook said (exit status and stdout's JSON object).
//!
//! Every hook run is reported ([`HookReport`], the `hook` session update); a hook that fails
//! (other exit status, timeout, stdout not a JSON object) is reported and ignored.

pub mod outcome;
pub mod process;
pub mod set;
#[cfg(target_os = "linux")]
pub mod supervise;

pub use outcome::HookOutcome;
pub use set::{EventInput, HookDef, HookSet, Verdict};

/// The events of SPEC §21.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PreCompact,
    Stop,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::Stop,
    ];

    /// The name in the configuration and in the hook's input.
    pub const fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::Stop => "stop",
        }
    }

    /// Whether the event is about one tool call (its hooks have matchers).
    pub const fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// One hook run, as subscribers see it (`hook {event, command, outcome, durationMs,
/// message?}`).
#[derive(Debug, Clone, PartialEq)]
pub struct HookReport {
    pub event: HookEvent,
    pub command: String,
    /// `ok`, `deny`, `allow`, `continue` or `error`.
    pub outcome: &'static str,
    pub duration_ms: u64,
    /// The reason of a deny or continue, what went wrong for an error.
    pub message: Option<String>,
}
