//! The sandbox of `bash` commands and MCP servers (SPEC §21.2, §17.2): what each autonomy
//! may read and write, decided here, enforced by the kernel (Landlock on Linux,
//! [`landlock`]; no capabilities, and in `read_only` no metadata change, [`child`]).
//!
//! The daemon's own files (its config file, data dir and socket, [`set_daemon_private`])
//! are neither read nor written by any confined program; in `read_only` neither are the
//! agent's `sandbox_deny_read` paths. The environment of every program, confined or not,
//! is scrubbed ([`env`]).
//!
//! [`plan`] turns the agent's settings, the autonomy and the session's cwd into a
//! [`Plan`]: with `sandbox = "auto"` and Landlock available, `read_only` may write nowhere
//! but its private temporary directory ([`Scratch`]) and `/dev/null`; `supervised` and
//! `full` also beneath the cwd and the agent's `sandbox_writable` paths. Without Landlock
//! (or with `sandbox = "off"`) `read_only` refuses and the others run unconfined.
//! [`Prepared::build`] makes the ruleset before the fork and [`Prepared::confine`] has the
//! child apply it; a ruleset that cannot be made or applied fails the call.
//!
//! Test builds of the daemon may pretend Landlock is missing ([`pretend_unavailable`]).

#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod complement;
pub mod env;
#[cfg(target_os = "linux")]
mod landlock;
mod rules;
mod scratch;
#[cfg(not(target_os = "linux"))]
mod unsupported;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
use landlock as platform;
#[cfg(not(target_os = "linux"))]
use unsupported as platform;

pub use platform::Prepared;
pub use rules::{Plan, Rules, SandboxMode, SandboxSettings};
pub use scratch::Scratch;

static PRETEND_UNAVAILABLE: AtomicBool = AtomicBool::new(false);
static DAEMON_PRIVATE: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Records the daemon's own places (its config file, data dir, socket), which no confined
/// program may read or write (SPEC §17.2 "No way back in"). Set once, at the daemon's start;
/// a second call is ignored.
pub fn set_daemon_private(paths: Vec<PathBuf>) {
    let _ = DAEMON_PRIVATE.set(paths);
}

fn daemon_private() -> &'static [PathBuf] {
    DAEMON_PRIVATE.get().map(Vec::as_slice).unwrap_or(&[])
}

/// Makes [`landlock_abi`] answer `None` from now on (the daemon's test hooks only).
pub fn pretend_unavailable() {
    PRETEND_UNAVAILABLE.store(true, Ordering::SeqCst);
}

/// The kernel's Landlock ABI version (asked once), `None` where there is none.
pub fn landlock_abi() -> Option<u32> {
    static ABI: OnceLock<Option<u32>> = OnceLock::new();
    if PRETEND_UNAVAILABLE.load(Ordering::SeqCst) {
        return None;
    }
    *ABI.get_or_init(platform::kernel_abi)
}

/// What `session/status` shows: `landlock vN`, `unavailable` or `off`.
pub fn status(settings: &SandboxSettings) -> String {
    match (settings.mode, landlock_abi()) {
        (SandboxMode::Off, _) => "off".to_owned(),
        (SandboxMode::Auto, Some(v)) => format!("landlock v{v}"),
        (SandboxMode::Auto, None) => "unavailable".to_owned(),
    }
}

/// How a program of a session in `cwd` runs, `read_only` or not.
pub fn plan(settings: &SandboxSettings, read_only: bool, cwd: &Path) -> Plan {
    match (settings.mode, landlock_abi()) {
        (SandboxMode::Auto, Some(_)) => Plan::Confine(Rules {
            writable: if read_only {
                Vec::new()
            } else {
                std::iter::once(cwd.to_path_buf())
                    .chain(settings.writable.iter().cloned())
                    .collect()
            },
            network: settings.network,
            denied: daemon_private()
                .iter()
                .chain(settings.deny_read.iter().filter(|_| read_only))
                .cloned()
                .collect(),
            read_only,
        }),
        _ if !read_only => Plan::Unconfined,
        (SandboxMode::Off, _) => Plan::Refuse(
            "Refused: the agent runs in read_only autonomy and its sandbox is off \
             (sandbox = \"off\"), so `bash` cannot run confined."
                .to_owned(),
        ),
        (SandboxMode::Auto, None) => Plan::Refuse(
            "Refused: the agent runs in read_only autonomy and this system has no sandbox \
             (Landlock is unavailable), so `bash` cannot run confined."
                .to_owned(),
        ),
    }
}

/// Builds the ruleset of `rules` with the private directory `tmp`, for the running kernel.
pub fn prepare(rules: &Rules, tmp: &Path) -> Result<Prepared, String> {
    let abi = landlock_abi().ok_or_else(|| "Landlock is unavailable".to_owned())?;
    Prepared::build(rules, tmp, abi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_autonomy() {
        let cwd = Path::new("/work/here");
        let mut s = SandboxSettings {
            writable: vec!["/opt/cache".into()],
            deny_read: vec!["/etc/shadow".into()],
            ..SandboxSettings::default()
        };
        if landlock_abi().is_some() {
            assert_eq!(
                plan(&s, true, cwd),
                Plan::Confine(Rules {
                    writable: vec![],
                    network: true,
                    denied: vec!["/etc/shadow".into()],
                    read_only: true,
                })
            );
            assert_eq!(
                plan(&s, false, cwd),
                Plan::Confine(Rules {
                    writable: vec![cwd.into(), "/opt/cache".into()],
                    network: true,
                    denied: vec![],
                    read_only: false,
                })
            );
        }
        s.mode = SandboxMode::Off;
        assert_eq!(status(&s), "off");
        assert_eq!(plan(&s, false, cwd), Plan::Unconfined);
        assert!(matches!(plan(&s, true, cwd), Plan::Refuse(m) if m.contains("sandbox is off")));
    }
}
