//! Linux: a hook dies whole (SPEC §17.2), `setsid` descendants included.
//!
//! The process the daemon starts for a hook is a small supervisor, forked from the daemon
//! and never exec'd: between fork and exec it makes itself a child subreaper and forks
//! again; the second child goes on to exec `sh -c COMMAND`, the supervisor stays behind.
//! Every descendant the hook leaves as an orphan (a `setsid` one too) is reparented to the
//! supervisor, not to the daemon. Once `sh` exits, or once the daemon closes the control
//! pipe (the hook timed out, its turn was cancelled, the daemon stopped or was killed), the
//! supervisor kills `sh` and every process that is its child by then, round after round
//! until none is left (at most [`ROUNDS`] rounds), and exits with `sh`'s status.
//!
//! The supervisor runs in the forked child of a multi-threaded process: it makes only
//! async-signal-safe system calls on stack buffers, and never allocates or locks.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Rounds of kill-and-reap the supervisor makes before it gives up (10 ms apart).
const ROUNDS: u32 = 200;

/// The daemon's end of one hook's control pipe: closing it (drop) makes the supervisor
/// end the hook and all it left.
pub struct Supervision {
    /// The supervisor's end, closed in the daemon once the hook has been started.
    read: Option<OwnedFd>,
    _write: OwnedFd,
}

impl Supervision {
    /// The daemon no longer needs the supervisor's end (after the spawn, successful or
    /// not).
    pub fn started(&mut self) {
        self.read = None;
    }
}

/// Makes `cmd` start under a supervisor that ends everything the hook leaves.
#[allow(unsafe_code)]
pub fn supervise(cmd: &mut tokio::process::Command) -> io::Result<Supervision> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid out array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, both descriptors are new and ours alone.
    let (read, write) = unsafe {
        use std::os::fd::FromRawFd;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    let ctl = read.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec; it and all it calls make
    // only async-signal-safe system calls on plain integers and stack buffers.
    unsafe {
        cmd.pre_exec(move || in_child(ctl));
    }
    Ok(Supervision {
        read: Some(read),
        _write: write,
    })
}

/// In the forked child: becomes the supervisor, or (in its child) returns to exec the hook.
#[allow(unsafe_code)]
fn in_child(ctl: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls (see `supervise`).
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let sh = libc::fork();
        if sh < 0 {
            return Err(io::Error::last_os_error());
        }
        if sh == 0 {
            // The hook: it goes with the supervisor should that be killed.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            return Ok(());
        }
        supervisor(sh, ctl)
    }
}

/// The supervisor's life: waits for `sh` or for the control pipe to close, then ends the
/// hook's processes and exits with `sh`'s status. Never returns.
#[allow(unsafe_code)]
unsafe fn supervisor(sh: libc::pid_t, ctl: RawFd) -> ! {
    // SAFETY (whole function): async-signal-safe system calls on integers and stack data.
    unsafe {
        // Hold nothing of the daemon's: not the hook's pipes (their readers see the end
        // once the hook's processes are gone), not the spawn's error pipe, not other
        // hooks' control pipes.
        for fd in 0..3 {
            libc::close(fd);
        }
        close_all_but(ctl);
        let pidfd = libc::syscall(libc::SYS_pidfd_open, sh, 0) as libc::c_int;
        let mut status: libc::c_int = 0;
        let mut sh_ended = false;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: ctl,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let (count, wait_ms) = if pidfd >= 0 { (2, -1) } else { (1, 10) };
            libc::poll(fds.as_mut_ptr(), count, wait_ms);
            if libc::waitpid(sh, &mut status, libc::WNOHANG) == sh {
                sh_ended = true;
                break;
            }
            if fds[0].revents != 0 {
                break;
            }
        }
        end_children();
        if !sh_ended {
            libc::_exit(137);
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Closes every descriptor from 3 up but `keep`.
#[allow(unsafe_code)]
unsafe fn close_all_but(keep: RawFd) {
    // SAFETY: plain system calls.
    unsafe {
        let keep = keep.max(0) as libc::c_uint;
        let ranges = [(3, keep.saturating_sub(1)), (keep + 1, libc::c_uint::MAX)];
        for (first, last) in ranges {
            if first > last {
                continue;
            }
            if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                for fd in first..last.min(4096) {
                    libc::close(fd as libc::c_int);
                }
            }
        }
    }
}

/// Kills every child of this process (adopted orphans included) and reaps them, round
/// after round, until it has none left or [`ROUNDS`] have passed.
#[allow(unsafe_code)]
unsafe fn end_children() {
    // SAFETY: plain system calls.
    unsafe {
        let me = libc::getpid();
        for _ in 0..ROUNDS {
            // Reap whatever has ended; stop once there is no child at all.
            loop {
                let mut st = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r < 0 {
                    return;
                }
                if r == 0 {
                    break;
                }
            }
            for_each_child(me, |pid| {
                libc::kill(pid, libc::SIGKILL);
            });
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// Calls `f` with the pid of every process whose parent is `parent`, from a scan of
/// `/proc` (this kernel may lack `/proc/PID/task/TID/children`).
#[allow(unsafe_code)]
unsafe fn for_each_child(parent: libc::pid_t, mut f: impl FnMut(libc::pid_t)) {
    // SAFETY: plain system calls on stack buffers; every length is checked.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let n = n as usize;
            let mut at = 0;
            // linux_dirent64: ino u64, off i64, reclen u16, type u8, name (NUL-ended).
            while at + 19 < n {
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 || at + reclen > n {
                    break;
                }
                let name = &buf[at + 19..at + reclen];
                if let Some(pid) = parse_pid(name)
                    && parent_of(pid) == Some(parent)
                {
                    f(pid);
                }
                at += reclen;
            }
        }
        libc::close(dir);
    }
}

/// The decimal pid a `/proc` entry's NUL-ended name holds, if it is one.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut digits = 0;
    for &b in name {
        if b == 0 {
            break;
        }
        if !b.is_ascii_digit() || digits >= 9 {
            return None;
        }
        pid = pid * 10 + libc::pid_t::from(b - b'0');
        digits += 1;
    }
    (digits > 0).then_some(pid)
}

/// The parent pid in `/proc/PID/stat` (the number after the state, after the last `)`).
#[allow(unsafe_code)]
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    // "/proc/" + up to 10 digits + "/stat" + NUL.
    let mut path = [0u8; 32];
    let mut at = 0;
    for &b in b"/proc/" {
        path[at] = b;
        at += 1;
    }
    let mut digits = [0u8; 10];
    let mut len = 0;
    let mut rest = pid;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 || len == digits.len() {
            break;
        }
    }
    for i in (0..len).rev() {
        path[at] = digits[i];
        at += 1;
    }
    for &b in b"/stat\0" {
        path[at] = b;
        at += 1;
    }
    let mut stat = [0u8; 512];
    // SAFETY: `path` is NUL-ended; `stat` is a valid buffer of its length.
    let n = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        n
    };
    if n <= 0 {
        return None;
    }
    parse_ppid(&stat[..n as usize])
}

/// The parent pid of a `/proc/PID/stat` text: `PID (COMM) STATE PPID …`.
fn parse_ppid(stat: &[u8]) -> Option<libc::pid_t> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    parse_pid(fields.next()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_their_parent() {
        assert_eq!(parse_ppid(b"42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid(b"42 (a) b) (c) R 1234 1 1"), Some(1234));
        assert_eq!(parse_ppid(b"42 (sh S"), None);
        assert_eq!(parse_pid(b"123\0junk"), Some(123));
        assert_eq!(parse_pid(b"self\0"), None);
        assert_eq!(parse_pid(b"\0"), None);
    }

    /// A hook command that starts a `setsid` sleeper, writes its pid to `file`, then runs
    /// `then`.
    fn leaving_a_sleeper(file: &std::path::Path, then: &str) -> String {
        format!(
            "setsid sh -c 'echo $$ > {f}.tmp && mv {f}.tmp {f} && exec sleep 1000' \
             </dev/null >/dev/null 2>&1 & \
             while [ ! -e {f} ]; do sleep 0.01; done; {then}",
            f = file.display()
        )
    }

    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_owned()))
            .is_some_and(|r| !r.starts_with('Z'))
    }

    async fn gone_soon(pid: &str) -> bool {
        for _ in 0..100 {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    use super::super::process::{Ended, run};
    use std::time::Duration;

    #[tokio::test]
    async fn a_setsid_child_ends_with_the_hook_and_the_status_is_the_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let ended = run(
            &leaving_a_sleeper(&file, "echo out; exit 3"),
            dir.path(),
            b"",
            Duration::from_secs(10),
        )
        .await;
        let Ended::Exited { code, stdout, .. } = ended else {
            panic!("{ended:?}");
        };
        assert_eq!((code, stdout), (Some(3), b"out\n".to_vec()));
        let pid = std::fs::read_to_string(&file).unwrap();
        assert!(
            gone_soon(pid.trim()).await,
            "the setsid sleeper outlived the hook"
        );
    }

    #[tokio::test]
    async fn a_setsid_child_ends_at_the_timeout_and_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let ended = run(
            &leaving_a_sleeper(&file, "sleep 1000"),
            dir.path(),
            b"",
            Duration::from_millis(500),
        )
        .await;
        assert!(matches!(ended, Ended::TimedOut), "{ended:?}");
        let pid = std::fs::read_to_string(&file).unwrap();
        assert!(gone_soon(pid.trim()).await, "outlived the timeout");

        let file = dir.path().join("pid2");
        let hook = leaving_a_sleeper(&file, "sleep 1000");
        let running = run(&hook, dir.path(), b"", Duration::from_secs(60));
        let seen = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::pin!(running);
            tokio::select! {
                _ = &mut running => None,
                pid = async {
                    while !file.exists() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    let pid = std::fs::read_to_string(&file).unwrap();
                    // Control, while the hook still runs: the sleeper does too.
                    assert!(alive(pid.trim()), "the sleeper ran");
                    pid
                } => Some(pid),
            }
            // `running` is dropped here, the turn's hook cancelled.
        })
        .await
        .unwrap()
        .expect("the hook ran");
        assert!(gone_soon(seen.trim()).await, "outlived the dropped hook");
    }

    #[test]
    fn this_process_is_the_child_of_its_parent() {
        // SAFETY-free wrappers are unsafe fns only for their system calls.
        #[allow(unsafe_code)]
        let parent = unsafe { parent_of(libc::getpid()) };
        assert_eq!(
            parent,
            Some(std::os::unix::process::parent_id() as libc::pid_t)
        );
    }
}
