//! The sessions service's fixed limits (SPEC §3.3, §13). A leaf: every other session module
//! may read these, and this file imports none of them.

/// Live sessions per daemon (SPEC §3.3).
pub const MAX_LIVE_SESSIONS: usize = 64;
/// Prompts waiting per session, the running turn not counted (SPEC §13).
pub const MAX_QUEUED_PROMPTS: usize = 32;
