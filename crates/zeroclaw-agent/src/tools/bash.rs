//! The `bash` tool: `bash -c COMMAND` in the session's cwd.
//!
//! stdout and stderr share one pipe (so their interleaving is kept); output
//! beyond the cap is counted and dropped, with a note. The child runs in its
//! own process group: on timeout, and when the future is dropped (a
//! cancelled turn), the whole group is killed with SIGKILL, children
//! included. After a normal exit the group is left alone (a command may
//! start background services on purpose); their output is read only for a
//! short grace period.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::ToolLimits;

/// Kills a process group when dropped while armed.
struct GroupGuard {
    pgid: i32,
    armed: bool,
}

impl GroupGuard {
    fn kill(&self) {
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

/// Runs the command and returns the text given to the model.
/// Cancel-safe: dropping the future kills the process group.
pub async fn run_bash(command: &str, cwd: &Path, limits: &ToolLimits) -> String {
    if !cwd.is_dir() {
        return format!(
            "Error: the working directory {} does not exist",
            cwd.display()
        );
    }
    match run_inner(command, cwd, limits).await {
        Ok(s) => s,
        Err(e) => format!("Error: failed to run bash: {e}"),
    }
}

async fn run_inner(command: &str, cwd: &Path, limits: &ToolLimits) -> std::io::Result<String> {
    let (reader, writer) = std::io::pipe()?;
    let mut child = {
        let writer2 = writer.try_clone()?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .process_group(0)
            .kill_on_drop(true);
        // `cmd` (holding our copies of the write end) is dropped at the end
        // of this block, so EOF arrives once the child side closes.
        cmd.spawn()?
    };
    let mut guard = GroupGuard {
        pgid: child.id().map(|p| p as i32).unwrap_or(0),
        armed: true,
    };
    let mut rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let cap = limits.bash_output_cap;
    let mut out: Vec<u8> = Vec::new();
    let mut omitted: usize = 0;
    let mut tmp = vec![0u8; 16 * 1024];
    let mut status = None;
    let mut eof = false;
    let mut timed_out = false;
    let deadline = tokio::time::sleep(limits.bash_timeout);
    tokio::pin!(deadline);
    let grace = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(grace);
    while !(eof && status.is_some()) {
        tokio::select! {
            r = rx.read(&mut tmp), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    let keep = n.min(cap.saturating_sub(out.len()));
                    out.extend_from_slice(&tmp[..keep]);
                    omitted += n - keep;
                }
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                grace.as_mut().reset(tokio::time::Instant::now() + limits.bash_drain_grace);
            },
            _ = &mut grace, if status.is_some() => break,
            _ = &mut deadline => {
                timed_out = true;
                break;
            }
        }
    }
    if timed_out {
        guard.kill();
        if status.is_none() {
            status = tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
    }
    guard.armed = false;

    let mut text = String::from_utf8_lossy(&out).into_owned();
    if omitted > 0 {
        text.push_str(&format!(
            "\n[output truncated: {omitted} more bytes not shown; limit {cap} bytes]"
        ));
    }
    if timed_out {
        text.push_str(&format!(
            "\n[timed out after {} s; the command and its children were killed]",
            limits.bash_timeout.as_secs_f64()
        ));
    } else if let Some(st) = status {
        use std::os::unix::process::ExitStatusExt;
        if let Some(code) = st.code() {
            if code != 0 {
                text.push_str(&format!("\n[exit code: {code}]"));
            }
        } else if let Some(sig) = st.signal() {
            text.push_str(&format!("\n[killed by signal {sig}]"));
        }
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn limits() -> ToolLimits {
        ToolLimits {
            bash_timeout: Duration::from_secs(10),
            ..ToolLimits::default()
        }
    }

    #[tokio::test]
    async fn combined_output_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_bash(
            "echo out; echo err 1>&2; pwd; exit 3",
            dir.path(),
            &limits(),
        )
        .await;
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(
            out,
            format!("out\nerr\n{}\n\n[exit code: 3]", cwd.display())
        );
        assert_eq!(run_bash("true", dir.path(), &limits()).await, "(no output)");
        let gone = dir.path().join("gone");
        assert!(
            run_bash("true", &gone, &limits())
                .await
                .contains("does not exist")
        );
    }

    #[tokio::test]
    async fn output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let l = ToolLimits {
            bash_output_cap: 1000,
            ..limits()
        };
        let out = run_bash("head -c 5000 /dev/zero | tr '\\0' a", dir.path(), &l).await;
        assert!(out.starts_with(&"a".repeat(1000)));
        assert!(out.contains("[output truncated: 4000 more bytes not shown; limit 1000 bytes]"));
    }

    #[tokio::test]
    async fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("marker");
        let l = ToolLimits {
            bash_timeout: Duration::from_millis(300),
            ..limits()
        };
        let cmd = format!(
            "echo started; (sleep 1; touch {}) & sleep 30",
            marker.display()
        );
        let t = Instant::now();
        let out = run_bash(&cmd, dir.path(), &l).await;
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(out.starts_with("started\n"), "{out}");
        assert!(out.contains("timed out"), "{out}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "background child survived the kill");
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("marker");
        let cmd = format!("sleep 1; touch {}", marker.display());
        let l = limits();
        let fut = run_bash(&cmd, dir.path(), &l);
        let r = tokio::time::timeout(Duration::from_millis(200), fut).await;
        assert!(r.is_err());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "command survived cancellation");
    }

    #[tokio::test]
    async fn background_process_does_not_hang_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let out = run_bash("sleep 2 & echo hi", dir.path(), &limits()).await;
        assert_eq!(out, "hi\n");
        assert!(t.elapsed() < Duration::from_secs(3));
    }
}
