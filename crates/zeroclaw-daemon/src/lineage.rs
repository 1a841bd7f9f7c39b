//! No way back in (SPEC §17.2): whether a local peer is a program the daemon started for a
//! session (a `bash` command, a process it left behind, an MCP server, a hook) or descends
//! from one. Such a peer runs as the daemon's user, so its uid would make it the operator;
//! it is refused instead (-32010 at `initialize` and at every later call).
//!
//! On Linux the daemon is a child subreaper (`reaper`), so the orphans of what it started
//! are reparented to it and stay its descendants: the peer's pid (SO_PEERCRED) is followed
//! up its parents in `/proc` until the daemon (a descendant), pid 1 or a process without
//! parent (outside). A peer whose pid is gone, a chain that changes under the walk (a
//! parent that started after its child: its pid was reused) or one deeper than
//! [`MAX_DEPTH`] cannot be vetted and is refused too. The daemon itself is outside.
//!
//! A process found outside stays outside (an orphan is reparented to a subreaper among its
//! own ancestors, or to init, never under the daemon), so the walk remembers the last
//! [`REMEMBERED`] processes it found outside by pid and start time and stops at the first
//! of them: a client started again and again from one shell reads two files, not its whole
//! chain of parents.
//!
//! Elsewhere (other Unix systems) peers are not vetted: there a tool that reaches the
//! socket is the operator; only the sandbox, where there is one, keeps it out.

/// Where a local peer stands with respect to the daemon's own programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lineage {
    /// Not started by the daemon (or the OS did not give a pid to follow).
    Outside,
    /// A program the daemon started, or a descendant of one.
    SessionProgram,
    /// The peer could not be vetted (why).
    Unvetted(&'static str),
}

/// The longest chain of parents followed.
#[cfg(target_os = "linux")]
const MAX_DEPTH: usize = 4096;

/// Vets the peer `pid` of the daemon `daemon_pid`. Inline, on the connection's own task: a
/// walk reads a few `/proc/PID/stat` files (kernel memory, no disk, tens of microseconds),
/// and handing each connection to the blocking pool grew it by a thread per connection
/// under a burst of connects (1,000 connects: +500 threads, +8 kB per held connection).
pub(crate) fn vet(pid: Option<u32>, daemon_pid: u32) -> Lineage {
    let Some(pid) = pid else {
        return Lineage::Outside;
    };
    walk(pid, daemon_pid)
}

/// How many processes found outside are remembered.
#[cfg(target_os = "linux")]
const REMEMBERED: usize = 64;

/// Processes found outside a daemon: `(daemon pid, pid, start)`, the oldest replaced first.
#[cfg(target_os = "linux")]
struct KnownOutside {
    seen: [(u32, u32, u64); REMEMBERED],
    next: usize,
}

#[cfg(target_os = "linux")]
static KNOWN_OUTSIDE: std::sync::Mutex<KnownOutside> = std::sync::Mutex::new(KnownOutside {
    seen: [(0, 0, 0); REMEMBERED],
    next: 0,
});

#[cfg(target_os = "linux")]
impl KnownOutside {
    fn holds(daemon_pid: u32, pid: u32, start: u64) -> bool {
        let known = KNOWN_OUTSIDE.lock().unwrap_or_else(|e| e.into_inner());
        known.seen.contains(&(daemon_pid, pid, start))
    }

    fn remember(daemon_pid: u32, chain: &[(u32, u64)]) {
        let mut known = KNOWN_OUTSIDE.lock().unwrap_or_else(|e| e.into_inner());
        for &(pid, start) in chain {
            if !known.seen.contains(&(daemon_pid, pid, start)) {
                let at = known.next;
                known.seen[at] = (daemon_pid, pid, start);
                known.next = (at + 1) % REMEMBERED;
            }
        }
    }
}

/// The parents a walk passed, remembered when it ends outside (the peer itself is not: it
/// is rarely seen twice).
#[cfg(target_os = "linux")]
const CHAIN_REMEMBERED: usize = 8;

#[cfg(target_os = "linux")]
fn walk(pid: u32, daemon_pid: u32) -> Lineage {
    let mut passed: Vec<(u32, u64)> = Vec::new();
    let lineage = walk_from(pid, daemon_pid, &mut passed);
    if lineage == Lineage::Outside {
        KnownOutside::remember(daemon_pid, &passed);
    }
    lineage
}

#[cfg(target_os = "linux")]
fn walk_from(pid: u32, daemon_pid: u32, passed: &mut Vec<(u32, u64)>) -> Lineage {
    use crate::procfs;
    // Pid 0: the peer is in a pid namespace this daemon cannot see, which no descendant of
    // it can be in (its descendants' namespaces are all visible from its own).
    if pid == daemon_pid || pid == 0 {
        return Lineage::Outside;
    }
    let Ok(mut child) = procfs::stat(pid) else {
        return Lineage::Unvetted("its process is gone");
    };
    for _ in 0..MAX_DEPTH {
        if child.ppid == daemon_pid {
            return Lineage::SessionProgram;
        }
        if child.ppid <= 1 {
            return Lineage::Outside;
        }
        let Ok(parent) = procfs::stat(child.ppid) else {
            return Lineage::Unvetted("a parent of its process is gone");
        };
        if parent.start > child.start {
            return Lineage::Unvetted("its parents changed while they were read");
        }
        if KnownOutside::holds(daemon_pid, child.ppid, parent.start) {
            return Lineage::Outside;
        }
        if passed.len() < CHAIN_REMEMBERED {
            passed.push((child.ppid, parent.start));
        }
        child = parent;
    }
    Lineage::Unvetted("its chain of parents is too deep")
}

#[cfg(not(target_os = "linux"))]
fn walk(_pid: u32, _daemon_pid: u32) -> Lineage {
    Lineage::Outside
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn children_are_session_programs_and_others_are_not() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        assert_eq!(vet(Some(child.id()), me), Lineage::SessionProgram);
        assert_eq!(vet(Some(me), me), Lineage::Outside, "the daemon itself");
        assert_eq!(
            vet(Some(me), child.id()),
            Lineage::Outside,
            "a parent is not a descendant"
        );
        assert_eq!(vet(None, me), Lineage::Outside);
        let _ = child.kill();
        let _ = child.wait();
        assert!(matches!(vet(Some(child.id()), me), Lineage::Unvetted(_)));
    }

    /// A walk that found this test's parents outside remembers them, and a later walk stops
    /// at them; a child of the "daemon" is still found, whatever is remembered.
    #[test]
    fn parents_found_outside_are_remembered_and_children_still_found() {
        let me = std::process::id();
        // A made-up daemon pid, ancestor of nothing (no process has pid u32::MAX).
        let daemon = u32::MAX;
        assert_eq!(vet(Some(me), daemon), Lineage::Outside);
        let parent = std::os::unix::process::parent_id();
        let parent_start = crate::procfs::stat(parent).expect("parent's stat").start;
        assert!(
            KnownOutside::holds(daemon, parent, parent_start),
            "the parent is remembered"
        );
        assert!(!KnownOutside::holds(me, parent, parent_start), "per daemon");
        let mut passed = Vec::new();
        assert_eq!(walk_from(me, daemon, &mut passed), Lineage::Outside);
        assert!(
            passed.is_empty(),
            "the walk stopped at the remembered parent: {passed:?}"
        );
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        assert_eq!(vet(Some(child.id()), me), Lineage::SessionProgram);
        let _ = child.kill();
        let _ = child.wait();
    }
}
