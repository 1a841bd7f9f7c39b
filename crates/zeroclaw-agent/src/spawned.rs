//! The pids of the programs this process started itself and still waits for (bash
//! commands, hooks, MCP servers), so that the daemon's reaper of adopted orphans (it is a
//! child subreaper, SPEC §17.2) never reaps one of them in the place of the code that owns
//! its `Child`.
//!
//! A [`Registered`] guard holds a pid in the set from just after the spawn until it is
//! dropped, which the owner does once it has waited for the child (or given it up). The
//! reaper also leaves a zombie alone for a grace period, which covers a child that exits
//! before its spawner had time to register it.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, OnceLock};

fn set() -> MutexGuard<'static, HashSet<u32>> {
    static SET: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
    SET.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A pid held in the set of this process's own children while the guard lives.
#[derive(Debug)]
pub struct Registered {
    pid: Option<u32>,
}

impl Registered {
    /// Registers `pid` (`None`: a child that was already reaped, nothing to hold).
    pub fn new(pid: Option<u32>) -> Registered {
        if let Some(pid) = pid {
            set().insert(pid);
        }
        Registered { pid }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            set().remove(&pid);
        }
    }
}

/// Whether `pid` is a child that some code of this process started and waits for.
pub fn is_registered(pid: u32) -> bool {
    set().contains(&pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_is_held_while_its_guard_lives() {
        let pid = u32::MAX - 7;
        assert!(!is_registered(pid));
        let guard = Registered::new(Some(pid));
        assert!(is_registered(pid));
        drop(guard);
        assert!(!is_registered(pid));
        drop(Registered::new(None));
    }
}
