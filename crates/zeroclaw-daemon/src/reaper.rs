//! The daemon as a child subreaper (Linux, SPEC §17.2): the orphans of the programs it
//! starts (a `bash` command's background processes, those of MCP servers) are reparented to
//! it rather than to init, so they stay its descendants and the lineage check of local
//! peers (`lineage`) still knows them.
//!
//! Such an adopted orphan becomes the daemon's zombie when it exits; nobody waits for it
//! by pid, so this task reaps it. It never reaps a child some code of the daemon started
//! itself and will wait for (registered in [`zeroclaw_agent::spawned`]), and it leaves an
//! unregistered zombie alone for [`GRACE`] first, so a child that exits before its spawner
//! registered it is not taken from it. It looks when SIGCHLD comes and every [`TICK`]
//! anyway, at most once per [`MIN_GAP`], and only scans `/proc` when some child of the
//! daemon is a zombie.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long an unregistered zombie is left to whoever may still wait for it.
const GRACE: Duration = Duration::from_secs(2);
/// The longest time between two looks.
const TICK: Duration = Duration::from_secs(1);
/// The shortest time between two looks.
const MIN_GAP: Duration = Duration::from_millis(200);
/// The most zombies remembered between two looks (the rest are seen again at the next).
const MAX_TRACKED: usize = 65_536;

/// Makes the daemon the reaper of its descendants' orphans. Logs and goes on when the
/// kernel refuses (their orphans then go to init, and escape the lineage check).
#[allow(unsafe_code)]
pub(crate) fn become_subreaper() {
    // SAFETY: plain prctl on integers.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    if r != 0 {
        tracing::warn!(
            "cannot become a child subreaper: {}; orphans of tools are not recognised",
            std::io::Error::last_os_error()
        );
    }
}

/// Reaps adopted orphans until `stop` is cancelled.
pub(crate) async fn run(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigchld = match signal(SignalKind::child()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("no SIGCHLD stream for the reaper ({e}); it looks every second");
            None
        }
    };
    let mut seen: HashMap<u32, Instant> = HashMap::new();
    loop {
        let woken = async {
            match sigchld.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = woken => {}
            () = tokio::time::sleep(TICK) => {}
        }
        let looked = tokio::task::spawn_blocking(move || {
            reap(&mut seen);
            seen
        })
        .await;
        seen = looked.unwrap_or_default();
        tokio::time::sleep(MIN_GAP).await;
    }
}

/// One look: reaps the unregistered zombie children seen for longer than [`GRACE`];
/// `seen` holds when each zombie was first seen.
#[allow(unsafe_code)]
fn reap(seen: &mut HashMap<u32, Instant>) {
    if !has_zombie() {
        seen.clear();
        return;
    }
    let me = std::process::id();
    let now = Instant::now();
    let Ok(pids) = crate::procfs::pids() else {
        return;
    };
    let mut zombies = Vec::new();
    for pid in pids {
        match crate::procfs::stat(pid) {
            Ok(st) if st.ppid == me && st.state == b'Z' => zombies.push(pid),
            _ => {}
        }
    }
    seen.retain(|pid, _| zombies.contains(pid));
    for pid in zombies {
        if zeroclaw_agent::spawned::is_registered(pid) {
            seen.remove(&pid);
            continue;
        }
        let Some(first) = seen.get(&pid).copied() else {
            if seen.len() < MAX_TRACKED {
                seen.insert(pid, now);
            }
            continue;
        };
        if now.duration_since(first) < GRACE {
            continue;
        }
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            continue;
        };
        let mut status = 0;
        // SAFETY: plain waitpid on a pid that is this process's zombie child, with a valid
        // out pointer; WNOHANG never blocks.
        let r = unsafe { libc::waitpid(raw, &mut status, libc::WNOHANG) };
        if r == raw {
            tracing::debug!(pid, "reaped an adopted orphan");
        }
        seen.remove(&pid);
    }
}

/// Whether some child of this process is a zombie, without reaping it.
#[allow(unsafe_code)]
fn has_zombie() -> bool {
    // SAFETY: `info` is a valid out pointer, zeroed first as waitid requires for WNOHANG;
    // WNOWAIT leaves the zombie in place.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() != 0
    }
}
