//! The Unix side of background processes: `bash` runs the command in a new process group,
//! its stdout and stderr through pipes, the environment scrubbed and the sandbox applied
//! as for the `bash` tool. Before the command, the shell starts a watcher in the same
//! group that blocks reading a lifeline pipe whose only write end the daemon holds; when
//! the daemon goes away, even by SIGKILL, the pipe closes and the watcher kills the group.
//! The watcher ignores SIGTERM so that it is still there to do so should the daemon die
//! between SIGTERM and SIGKILL.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio_util::sync::CancellationToken;

use super::ended::{Ended, TERM_GRACE};
use crate::sandbox::Prepared;
use crate::spawned::Registered;

/// The shell around the command: the watcher (descriptor 3 is the lifeline; its output
/// closed so it never holds the command's pipes open), then the command itself, `$1`.
const WRAPPER: &str = "( trap '' TERM; read -r line <&3; kill -KILL 0 ) >&- 2>&- & \
                       exec 3<&-; eval \"$1\"";

/// A started process: the child, its pipes, the lifeline's write end.
pub struct Spawned {
    child: tokio::process::Child,
    out: pipe::Receiver,
    err: pipe::Receiver,
    group: Group,
}

impl Spawned {
    pub fn pid(&self) -> u32 {
        self.group.pgid as u32
    }
}

/// The process group: killed with SIGKILL when dropped before it was finished with (the
/// runtime went away), and the lifeline closed.
struct Group {
    pgid: i32,
    done: bool,
    _lifeline: OwnedFd,
    _registered: Registered,
}

impl Group {
    #[allow(unsafe_code)]
    fn signal(&self, sig: libc::c_int) {
        if self.pgid > 0 && !self.done {
            // SAFETY: plain system call; the negative pid names the group made with
            // process_group(0), which lives while its watcher does.
            unsafe {
                libc::kill(-self.pgid, sig);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// Starts the command (see the module doc).
#[allow(unsafe_code)]
pub fn spawn(
    command: &str,
    cwd: &Path,
    sandbox: Option<(&Prepared, &Path)>,
    env_allow: &[String],
) -> std::io::Result<Spawned> {
    let (out_r, out_w) = std::io::pipe()?;
    let (err_r, err_w) = std::io::pipe()?;
    let (life_r, life_w) = std::io::pipe()?;
    let life_r = OwnedFd::from(life_r);
    let life_fd = life_r.as_raw_fd();
    let child = {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("zeroclaw-background")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(err_w))
            .process_group(0)
            .kill_on_drop(true);
        crate::sandbox::env::scrub(&mut cmd, env_allow);
        // SAFETY: runs in the forked child before exec: two system calls on integers.
        unsafe {
            cmd.pre_exec(move || {
                if life_fd == 3 {
                    if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(life_fd, 3) != 3 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        if let Some((prepared, tmp)) = sandbox {
            cmd.env("TMPDIR", tmp);
            prepared.confine(&mut cmd);
        }
        cmd.spawn()?
    };
    drop(life_r);
    let pid = child.id().unwrap_or(0);
    let group = Group {
        pgid: pid as i32,
        done: false,
        _lifeline: OwnedFd::from(life_w),
        _registered: Registered::new(child.id()),
    };
    Ok(Spawned {
        child,
        out: pipe::Receiver::from_owned_fd(OwnedFd::from(out_r))?,
        err: pipe::Receiver::from_owned_fd(OwnedFd::from(err_r))?,
        group,
    })
}

/// Reads the output into `push` until the process ended and its pipes closed; `stop`
/// cancelled = SIGTERM to the group, SIGKILL after [`TERM_GRACE`]. Once the command
/// itself ended, what it left running in its group is killed.
pub async fn run(s: Spawned, stop: &CancellationToken, mut push: impl FnMut(&[u8])) -> Ended {
    let Spawned {
        mut child,
        mut out,
        mut err,
        mut group,
    } = s;
    let mut buf = vec![0u8; 16 * 1024];
    let mut buf2 = vec![0u8; 16 * 1024];
    let (mut out_eof, mut err_eof) = (false, false);
    let mut status = None;
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let kill_at = tokio::time::sleep_until(far);
    tokio::pin!(kill_at);
    let mut termed = false;
    while !(out_eof && err_eof && status.is_some()) {
        tokio::select! {
            r = out.read(&mut buf), if !out_eof => match r {
                Ok(0) | Err(_) => out_eof = true,
                Ok(n) => push(&buf[..n]),
            },
            r = err.read(&mut buf2), if !err_eof => match r {
                Ok(0) | Err(_) => err_eof = true,
                Ok(n) => push(&buf2[..n]),
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s.ok());
                // The command is over: whatever it left behind (and the watcher) goes.
                group.signal(libc::SIGKILL);
                group.done = true;
                // Output still buffered in the pipes is read; a writer that escaped the
                // group cannot hold the reading open for long.
                kill_at.as_mut().reset(tokio::time::Instant::now() + TERM_GRACE);
            },
            _ = stop.cancelled(), if !termed && status.is_none() => {
                termed = true;
                group.signal(libc::SIGTERM);
                kill_at.as_mut().reset(tokio::time::Instant::now() + TERM_GRACE);
            },
            _ = &mut kill_at => {
                if status.is_some() {
                    break;
                }
                group.signal(libc::SIGKILL);
                kill_at.as_mut().reset(far);
            },
        }
    }
    use std::os::unix::process::ExitStatusExt;
    match status.flatten() {
        Some(st) => match (st.code(), st.signal()) {
            (Some(c), _) => Ended::Code(c),
            (None, Some(sig)) => Ended::Signal(sig),
            _ => Ended::Unknown,
        },
        None => Ended::Unknown,
    }
}
