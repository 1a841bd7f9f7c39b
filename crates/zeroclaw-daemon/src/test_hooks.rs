//! Test hooks, compiled only with the `test-hooks` feature (which only the test suites
//! enable, through a dev-dependency): release binaries contain none of this.
//!
//! Read once at startup from the environment:
//! - `ZEROCLAW_TEST_STALL_TIMEOUT_MS` shortens the 30 s stalled-reader timeout;
//! - `ZEROCLAW_TEST_HOOKS=1` makes the daemon poll its data dir for two trigger files: while
//!   `test-fail-writes` exists every store write fails (rolled back by the store's failure
//!   injection); while `test-fail-snapshots` exists only the auto-trim snapshot write fails.
//!   The daemon acknowledges each switch: `<trigger>.active` exists exactly while the
//!   injection is on, so a test waits for that file instead of sleeping.
//!   That is how the integration tests inject storage failures into the real binary.
//!
//! - `ZEROCLAW_TEST_NO_LANDLOCK=1` makes the sandbox (SPEC §21.2) behave as on a system
//!   without Landlock: `read_only` refuses `bash`, `session/status` says `unavailable`.
//!
//! - `ZEROCLAW_TEST_LOGIN_CODE_TTL_MS` shortens the 60 s life of a dashboard login code
//!   (SPEC §20), so a test sees one expire.
//!
//! - `ZEROCLAW_TEST_PANIC_METHOD=NAME` makes the handler of method `NAME` panic, so tests
//!   see what a client gets from a handler that panics.
//!
//! The approval, ask-user and ephemeral waits have no override: `zeroclaw-daemon`'s
//! tests/timing.rs times them in process with a jumped clock ([`crate::harness`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use zeroclaw_sessions::session::SessionManager;

use crate::state::Daemon;

/// A duration in milliseconds from the environment variable `name`, if set and valid.
fn ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// The stalled-reader timeout override, if any.
pub(crate) fn stall_timeout_from_env() -> Option<Duration> {
    ms("ZEROCLAW_TEST_STALL_TIMEOUT_MS")
}

/// The notifications' coalescing window override, if any (SPEC §24.3: 10 s).
pub(crate) fn notify_coalesce_from_env() -> Option<Duration> {
    ms("ZEROCLAW_TEST_NOTIFY_COALESCE_MS")
}

/// How recently a face must have been active to count as watching (SPEC §24.3: 2 min).
pub(crate) fn notify_active_from_env() -> Option<Duration> {
    ms("ZEROCLAW_TEST_NOTIFY_ACTIVE_MS")
}

/// The dashboard login code lifetime override, if any.
pub(crate) fn login_code_ttl_from_env() -> Option<Duration> {
    ms("ZEROCLAW_TEST_LOGIN_CODE_TTL_MS")
}

/// Panics when `method` is the one `ZEROCLAW_TEST_PANIC_METHOD` names.
pub(crate) fn maybe_panic(method: &str) {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| std::env::var("ZEROCLAW_TEST_PANIC_METHOD").ok());
    if name.as_deref() == Some(method) {
        panic!("test hook: {method} panics");
    }
}

/// Starts the trigger-file watcher when `ZEROCLAW_TEST_HOOKS=1`; hides Landlock when
/// `ZEROCLAW_TEST_NO_LANDLOCK=1`.
pub(crate) fn start(daemon: &Arc<Daemon>) {
    if std::env::var("ZEROCLAW_TEST_NO_LANDLOCK").is_ok_and(|v| v == "1") {
        tracing::warn!("test hook: Landlock is treated as unavailable");
        zeroclaw_agent::sandbox::pretend_unavailable();
    }
    if std::env::var("ZEROCLAW_TEST_HOOKS").is_ok_and(|v| v == "1") {
        tokio::spawn(watch_fail_triggers(
            Arc::clone(&daemon.sessions),
            daemon.dirs.data_dir.clone(),
            daemon.shutdown.clone(),
        ));
    }
}

/// Mirrors the trigger files in `data_dir` into the failure-injection flags until `stop`
/// fires.
async fn watch_fail_triggers(
    sessions: Arc<SessionManager>,
    data_dir: PathBuf,
    stop: CancellationToken,
) {
    let writes = data_dir.join("test-fail-writes");
    let snapshots = data_dir.join("test-fail-snapshots");
    let (mut failing, mut failing_snapshots) = (false, false);
    loop {
        let now = writes.exists();
        if now != failing {
            tracing::warn!(fail = now, "test hook: store write failure injection");
            sessions.store.set_fail_writes(now);
            acknowledge(&writes, now);
            failing = now;
        }
        let now = snapshots.exists();
        if now != failing_snapshots {
            tracing::warn!(fail = now, "test hook: snapshot write failure injection");
            sessions.fail_snapshots(now);
            acknowledge(&snapshots, now);
            failing_snapshots = now;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Creates (`on`) or removes `<trigger>.active`, once the injection is switched.
fn acknowledge(trigger: &Path, on: bool) {
    let mut name = trigger.as_os_str().to_owned();
    name.push(".active");
    let ack = PathBuf::from(name);
    let done = if on {
        std::fs::write(&ack, b"")
    } else {
        std::fs::remove_file(&ack)
    };
    if let Err(e) = done {
        tracing::warn!("test hook: cannot update {}: {e}", ack.display());
    }
}
