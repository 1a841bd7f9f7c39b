//! Process plumbing: VmRSS and its peak, the open-files limit, the client runtime, and child processes
//! that are always stopped (SIGTERM, then SIGKILL) when their guard is dropped, also on
//! error or panic.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Result;

/// The resident set size of `pid` in KiB, from `/proc/PID/status`.
pub fn vm_rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS")
}

/// The peak resident set size of `pid` in KiB (VmHWM), since start or the last
/// [`reset_peak_rss`].
pub fn vm_hwm_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmHWM")
}

/// The anonymous and the file-backed part of `pid`'s resident set in KiB (RssAnon,
/// RssFile): what the process allocated, and the pages of files it maps (its own code).
pub fn rss_parts_kib(pid: u32) -> Result<(u64, u64)> {
    Ok((status_kib(pid, "RssAnon")?, status_kib(pid, "RssFile")?))
}

/// One `field:` of `/proc/PID/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status").into())
}

/// Resets `pid`'s peak RSS to its RSS now (`5` into `/proc/PID/clear_refs`; needs the
/// right to write there, e.g. the same user on a kernel that allows it).
pub fn reset_peak_rss(pid: u32) -> Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .map_err(|e| format!("cannot reset the peak RSS of {pid}: {e}").into())
}

/// CPU time `pid` has used so far (user + system), from `/proc/PID/stat`.
#[allow(unsafe_code)]
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    // Fields after the command name (which may hold spaces) start at its closing paren.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the paren.
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return Err(format!("unexpected /proc/{pid}/stat").into());
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(Duration::from_millis((user + system) * 1000 / hz))
}

/// Raises the soft open-files limit to at least `want` (up to the hard limit); returns the
/// soft limit in force afterwards.
#[allow(unsafe_code)]
pub fn raise_nofile(want: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read or write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        let current = limit.rlim_cur;
        if current >= want {
            return current;
        }
        let target = want.min(limit.rlim_max);
        let raised = libc::rlimit {
            rlim_cur: target,
            rlim_max: limit.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            if target < want {
                eprintln!(
                    "zeroclaw-load: open-files limit is {target} (hard limit); {want} wanted"
                );
            }
            target
        } else {
            current
        }
    }
}

/// A child process stopped when dropped.
pub struct ChildGuard {
    pub name: String,
    child: Option<Child>,
    pub log: PathBuf,
}

impl ChildGuard {
    /// Spawns `program args…` with stdin closed and stdout/stderr appended to `log`.
    pub fn spawn(name: &str, program: &Path, args: &[&str], log: &Path) -> Result<ChildGuard> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let err = out.try_clone()?;
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        Ok(ChildGuard {
            name: name.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Errors if the child has already exited (with the tail of its log).
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(child) = self.child.as_mut()
            && let Some(status) = child.try_wait()?
        {
            return Err(format!(
                "{} exited early ({status}); log tail:\n{}",
                self.name,
                log_tail(&self.log)
            )
            .into());
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the exit.
    #[allow(unsafe_code)]
    pub fn stop(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // SAFETY: signalling our own child by pid; it has not been reaped yet.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// The last lines of a log file, for error messages.
pub fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Restricts the calling thread (and threads and processes it creates later) to `cpus`.
pub fn pin_self(cpus: &[usize]) -> Result<()> {
    pin_tid(0, cpus)
}

/// Restricts every thread of process `pid` to `cpus`.
pub fn pin_process(pid: u32, cpus: &[usize]) -> Result<()> {
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let tid: libc::pid_t = entry?
            .file_name()
            .to_string_lossy()
            .parse()
            .map_err(|_| "unexpected entry in /proc/PID/task")?;
        pin_tid(tid, cpus)?;
    }
    Ok(())
}

#[allow(unsafe_code)]
fn pin_tid(tid: libc::pid_t, cpus: &[usize]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it and
    // sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "sched_setaffinity({tid}, {cpus:?}): {}",
                std::io::Error::last_os_error()
            )
            .into());
        }
    }
    Ok(())
}

/// The CPUs this process may run on.
#[allow(unsafe_code)]
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: as in pin_tid; sched_getaffinity writes the set we pass.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// The share of all CPUs busy (not idle or iowait) over `window`, from `/proc/stat`:
/// taken while the bench itself is idle, it tells how much else the machine was doing.
pub fn cpu_busy(window: Duration) -> Option<f64> {
    fn sample() -> Option<(u64, u64)> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.parse().ok())
            .collect();
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).unwrap_or(&0);
        Some((total, idle))
    }
    let (t0, i0) = sample()?;
    std::thread::sleep(window);
    let (t1, i1) = sample()?;
    let total = t1.saturating_sub(t0);
    (total > 0).then(|| 100.0 * (total - i1.saturating_sub(i0)) as f64 / total as f64)
}

/// The single-threaded runtime a client measurement runs on.
pub fn client_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
