//! The plain data of the sandbox (SPEC §21.2): the agent's settings, the rules one program
//! runs under, and what a call gets (confined, unconfined or refused). Shared by the
//! decision ([`super`]) and the platform code ([`super::landlock`]); imports neither.

use std::path::PathBuf;

/// The agent's `sandbox` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Confine with Landlock where the kernel has it.
    #[default]
    Auto,
    /// Never confine (`read_only` then refuses `bash`).
    Off,
}

/// The agent's sandbox settings: `sandbox`, `sandbox_writable`, `sandbox_network`,
/// `sandbox_deny_read`, and the `env` allowlist (which applies confined or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// Extra places `supervised` and `full` may write (absolute paths).
    pub writable: Vec<PathBuf>,
    /// `false` denies TCP connect and bind where the Landlock ABI has network rules.
    pub network: bool,
    /// Places a `read_only` program cannot read (absolute paths, `~` already expanded).
    pub deny_read: Vec<PathBuf>,
    /// Names of the daemon's variables a program also inherits ([`super::env`]).
    pub env: Vec<String>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            mode: SandboxMode::Auto,
            writable: Vec::new(),
            network: true,
            deny_read: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// What one confined program may do: read everywhere but beneath `denied`; write beneath
/// `writable` (and its private temporary directory, and `/dev/null` and the like, always)
/// but never beneath `denied`; reach the network when `network`; change file metadata
/// (mode, owner, extended attributes) unless `read_only`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Directories (or files) written beneath; one that does not exist is skipped.
    pub writable: Vec<PathBuf>,
    pub network: bool,
    /// Neither read nor written (the daemon's own files always; `sandbox_deny_read` in
    /// `read_only`); one that does not exist when the ruleset is built is ignored.
    pub denied: Vec<PathBuf>,
    /// `read_only`: no `chmod`, `chown` or extended-attribute change anywhere.
    pub read_only: bool,
}

/// How a program is to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Under these rules (fails, and never runs, when they cannot be set up).
    Confine(Rules),
    /// As the daemon's user, unconfined.
    Unconfined,
    /// Not at all: the text is the tool's error result.
    Refuse(String),
}
