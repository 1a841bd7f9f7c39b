//! The environment of the programs a session starts (`bash`, MCP servers), confined or not
//! (SPEC §17.2): of the daemon's variables only `PATH`, `HOME`, `USER`, `LANG`, `LC_*`,
//! `TERM`, `SHELL`, `TMPDIR` and the names of the agent's `env` allowlist are passed on;
//! never a `ZEROCLAW_*` one, whatever the allowlist says. No provider key, no token reaches
//! a program unless the admin named it. (On Unix; on Windows the environment is left whole,
//! see [`scrub`].)

use std::ffi::{OsStr, OsString};

/// The daemon's variables every program gets (besides the `LC_*` family).
const KEPT: [&str; 7] = ["PATH", "HOME", "USER", "LANG", "TERM", "SHELL", "TMPDIR"];

/// Whether the variable `name` is passed on under the allowlist `allow`.
pub fn passes(name: &OsStr, allow: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if name.starts_with("ZEROCLAW_") {
        return false;
    }
    KEPT.contains(&name) || name.starts_with("LC_") || allow.iter().any(|a| a == name)
}

/// The daemon's variables passed on under `allow`.
pub fn inherited(allow: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| passes(k, allow))
        .collect()
}

/// Clears `cmd`'s environment down to [`inherited`]; variables set on `cmd` afterwards (an
/// MCP server's own `env`, the private `TMPDIR`) are added to that.
#[cfg(unix)]
pub fn scrub(cmd: &mut tokio::process::Command, allow: &[String]) {
    cmd.env_clear().envs(inherited(allow));
}

/// Not on Windows: its programs need variables (`SystemRoot`, `ComSpec`, …) the list above
/// does not name, so the environment is left whole there.
#[cfg(not(unix))]
pub fn scrub(cmd: &mut tokio::process::Command, allow: &[String]) {
    let _ = (cmd, allow);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_short_list_and_the_allowlist_pass() {
        let allow = vec!["MY_TOOL_HOME".to_owned(), "ZEROCLAW_SOCKET".to_owned()];
        for keep in [
            "PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "SHELL",
        ] {
            assert!(passes(OsStr::new(keep), &[]), "{keep}");
        }
        assert!(passes(OsStr::new("TMPDIR"), &[]));
        assert!(passes(OsStr::new("MY_TOOL_HOME"), &allow));
        for drop in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "ZEROCLAW_SOCKET",
            "ZEROCLAW_CONFIG_DIR",
            "MY_TOOL_HOME",
            "LD_PRELOAD",
            "path",
        ] {
            assert!(!passes(OsStr::new(drop), &[]), "{drop}");
        }
        // The allowlist never lets the daemon's own variables through.
        assert!(!passes(OsStr::new("ZEROCLAW_SOCKET"), &allow));
    }
}
