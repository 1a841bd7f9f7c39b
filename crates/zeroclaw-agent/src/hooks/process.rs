//! One hook as a process (SPEC §21.1): `sh -c COMMAND` (`cmd /C` on Windows) in the
//! session's cwd, in its own process group, the event's JSON written to its stdin, stdout
//! and stderr read up to [`OUTPUT_CAP`] each (the rest is read and dropped, so a hook that
//! prints without end never blocks on a full pipe and never costs the daemon memory).
//!
//! A hook dies whole (SPEC §17.2): at the timeout, when the future is dropped (a cancelled
//! turn, a daemon that stops) and once the hook has finished, nothing it started is left
//! running. On Linux its supervisor ([`super::supervise`]) ends every descendant, `setsid`
//! ones included; elsewhere the hook's process group is killed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The most bytes kept of a hook's stdout, and of its stderr.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// How long the pipes are still read after the hook exited (a child it left may hold them).
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// How one hook process ended.
#[derive(Debug)]
pub enum Ended {
    /// Exit status (`None` = killed by a signal), and the kept output.
    Exited {
        code: Option<i32>,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    TimedOut,
    /// It could not be started.
    SpawnFailed(String),
}

/// Kills the hook's process group when dropped (where there is no supervisor).
#[cfg(not(target_os = "linux"))]
struct GroupGuard {
    #[cfg_attr(not(unix), allow(dead_code))]
    pgid: i32,
}

#[cfg(not(target_os = "linux"))]
impl Drop for GroupGuard {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.pgid > 0 {
            // SAFETY: plain syscall; a negative pid addresses the group created with
            // process_group(0) for this hook.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }
}

fn command(cmd: &str) -> tokio::process::Command {
    #[cfg(unix)]
    {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c").arg(cmd).process_group(0);
        c
    }
    #[cfg(windows)]
    {
        let mut c = tokio::process::Command::new("cmd");
        c.arg("/C").arg(cmd);
        c
    }
}

/// Reads `r` to its end, keeping the first [`OUTPUT_CAP`] bytes in `into`.
async fn read_capped<R: AsyncRead + Unpin>(mut r: R, into: &mut Vec<u8>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let keep = n.min(OUTPUT_CAP.saturating_sub(into.len()));
                into.extend_from_slice(&buf[..keep]);
            }
        }
    }
}

/// Runs `cmd` in `cwd` with `input` on its stdin, for at most `timeout`. Cancel-safe:
/// dropping the future ends the hook and everything it started.
pub async fn run(cmd: &str, cwd: &Path, input: &[u8], timeout: Duration) -> Ended {
    let mut c = command(cmd);
    c.current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Declared before the child: dropped after it, which is when the supervisor ends the
    // hook's processes (the supervisor itself is never killed from here, so that it can).
    #[cfg(target_os = "linux")]
    let mut _supervision = match super::supervise::supervise(&mut c) {
        Ok(s) => s,
        Err(e) => return Ended::SpawnFailed(format!("cannot supervise the hook: {e}")),
    };
    #[cfg(not(target_os = "linux"))]
    c.kill_on_drop(true);
    let spawned = c.spawn();
    #[cfg(target_os = "linux")]
    _supervision.started();
    let mut child = match spawned {
        Ok(ch) => ch,
        Err(e) => return Ended::SpawnFailed(e.to_string()),
    };
    let _registered = crate::spawned::Registered::new(child.id());
    #[cfg(not(target_os = "linux"))]
    let _guard = GroupGuard {
        pgid: child.id().map_or(0, |p| p as i32),
    };
    let (Some(mut stdin), Some(out), Some(err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Ended::SpawnFailed("the hook's pipes are missing".to_owned());
    };
    let input = input.to_vec();
    let feed = async move {
        // A hook may exit without reading its input: a broken pipe is not an error.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let status = {
        let deadline = tokio::time::sleep(timeout);
        let grace = tokio::time::sleep(Duration::MAX / 4);
        let out_read = read_capped(out, &mut stdout);
        let err_read = read_capped(err, &mut stderr);
        tokio::pin!(deadline, grace, feed, out_read, err_read);
        let (mut fed, mut out_done, mut err_done) = (false, false, false);
        let mut status = None;
        while !(status.is_some() && out_done && err_done) {
            tokio::select! {
                () = &mut feed, if !fed => fed = true,
                () = &mut out_read, if !out_done => out_done = true,
                () = &mut err_read, if !err_done => err_done = true,
                s = child.wait(), if status.is_none() => {
                    match s {
                        Ok(st) => status = Some(st),
                        Err(e) => return Ended::SpawnFailed(e.to_string()),
                    }
                    grace.as_mut().reset(tokio::time::Instant::now() + DRAIN_GRACE);
                }
                () = &mut grace, if status.is_some() => break,
                () = &mut deadline => return Ended::TimedOut,
            }
        }
        status
    };
    let Some(status) = status else {
        return Ended::TimedOut;
    };
    Ended::Exited {
        code: status.code(),
        stdout,
        stderr,
    }
}
