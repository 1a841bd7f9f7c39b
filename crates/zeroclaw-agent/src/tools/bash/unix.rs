//! The Unix side of the `bash` tool: `bash -c COMMAND` in its own process group, stdout
//! and stderr through a pipe each (so live output can say which it came from), SIGKILL to the whole group on kill; the
//! environment scrubbed to the short list and the agent's allowlist (SPEC §17.2); when
//! confined (SPEC §21.2), the prepared ruleset applied in the child and `TMPDIR` set to the
//! private temporary directory.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use tokio::net::unix::pipe;

use crate::sandbox::Prepared;
use crate::spawned::Registered;

/// The shell's name in error messages.
pub const SHELL_NAME: &str = "bash";

/// A started command: the child, the read ends of its stdout and stderr pipes, and the
/// group killer.
pub struct Spawned {
    pub child: tokio::process::Child,
    pub rx: pipe::Receiver,
    pub err: Option<pipe::Receiver>,
    pub guard: GroupGuard,
}

/// Kills a process group when dropped while armed.
pub struct GroupGuard {
    pgid: i32,
    pub armed: bool,
    /// Keeps the daemon's reaper of adopted orphans off this child (SPEC §17.2).
    _registered: Registered,
}

impl GroupGuard {
    #[allow(unsafe_code)]
    pub fn kill(&self) {
        if self.pgid > 0 {
            // SAFETY: plain syscall; a negative pid addresses the group we
            // created with process_group(0).
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

/// Starts `bash -c command` in `cwd`, in a new process group, with the daemon's environment
/// scrubbed but for `env_allow` ([`crate::sandbox::env`]), confined by `sandbox` (the
/// ruleset and the private temporary directory) when given.
pub fn spawn(
    command: &str,
    cwd: &Path,
    sandbox: Option<(&Prepared, &Path)>,
    env_allow: &[String],
) -> std::io::Result<Spawned> {
    let (reader, writer) = std::io::pipe()?;
    let (err_reader, writer2) = std::io::pipe()?;
    let child = {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .process_group(0)
            .kill_on_drop(true);
        crate::sandbox::env::scrub(&mut cmd, env_allow);
        if let Some((prepared, tmp)) = sandbox {
            cmd.env("TMPDIR", tmp);
            prepared.confine(&mut cmd);
        }
        // `cmd` (holding our copies of the write end) is dropped at the end
        // of this block, so EOF arrives once the child side closes.
        cmd.spawn()?
    };
    let guard = GroupGuard {
        pgid: child.id().map(|p| p as i32).unwrap_or(0),
        armed: true,
        _registered: Registered::new(child.id()),
    };
    let rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let err = Some(pipe::Receiver::from_owned_fd(OwnedFd::from(err_reader))?);
    Ok(Spawned {
        child,
        rx,
        err,
        guard,
    })
}

/// The note appended for a non-zero exit or a signal; `None` for success.
pub fn status_note(st: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = st.code() {
        (code != 0).then(|| format!("\n[exit code: {code}]"))
    } else {
        st.signal().map(|sig| format!("\n[killed by signal {sig}]"))
    }
}
