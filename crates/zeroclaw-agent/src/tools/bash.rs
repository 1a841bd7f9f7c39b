//! The `bash` tool: runs a shell command in the session's cwd and collects what it prints.
//!
//! stdout and stderr are read from a pipe each and kept in the order they arrive (the
//! model gets them combined); output beyond the cap is counted and dropped, with a note.
//! What is kept is also passed on live while the command runs, throttled
//! ([`super::live`], SPEC §22), when the caller asks for it ([`run_bash_live`]). The command runs with
//! everything it starts in one killable unit (a process group on Unix, a Job
//! object on Windows): on timeout, and when the future is dropped (a cancelled
//! turn), the whole unit is killed, children included. After a normal exit it
//! is left alone (a command may start background services on purpose); their
//! output is read only for a short grace period.
//!
//! Confined (SPEC §21.2, [`crate::sandbox`]): the ruleset is built before the spawn and
//! applied in the child; when it cannot be built or applied the command does not run and
//! the result says why.
//!
//! The shell and the kill are per platform: [`unix`] (`bash -c`, SIGKILL to the
//! group) and [`windows`] (PowerShell where present, else `cmd /C`; the Job object).

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::ToolLimits;
use super::live::{LiveSink, OutputStream, OutputThrottle};
use crate::sandbox::{self, Rules};

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as platform;

/// Runs the command and returns the text given to the model; `sandbox` = the rules and
/// the private temporary directory to confine it with; `env_allow` = the agent's `env`
/// allowlist (the environment is scrubbed, confined or not: SPEC §17.2).
/// Cancel-safe: dropping the future kills the command and everything it started.
pub async fn run_bash(
    command: &str,
    cwd: &Path,
    limits: &ToolLimits,
    sandbox: Option<(&Rules, &Path)>,
    env_allow: &[String],
) -> String {
    run_bash_live(command, cwd, limits, sandbox, env_allow, None).await
}

/// [`run_bash`], passing the output on to `live` while the command runs (never waiting
/// for it: see [`super::live`]).
pub async fn run_bash_live(
    command: &str,
    cwd: &Path,
    limits: &ToolLimits,
    sandbox: Option<(&Rules, &Path)>,
    env_allow: &[String],
    live: Option<&LiveSink>,
) -> String {
    if !cwd.is_dir() {
        return format!(
            "Error: the working directory {} does not exist",
            cwd.display()
        );
    }
    let prepared = match sandbox {
        None => None,
        Some((rules, tmp)) => match prepare_off_thread(rules, tmp).await {
            Ok(p) => Some((p, tmp)),
            Err(e) => {
                return format!(
                    "Error: the sandbox could not be set up ({e}); the command was not run."
                );
            }
        },
    };
    let confine = prepared.as_ref().map(|(p, tmp)| (p, *tmp));
    match run_inner(command, cwd, limits, confine, env_allow, live).await {
        Ok(s) => s,
        Err(e) if confine.is_some() => format!(
            "Error: failed to run {} in its sandbox: {e}; the command was not run unconfined.",
            platform::SHELL_NAME
        ),
        Err(e) => format!("Error: failed to run {}: {e}", platform::SHELL_NAME),
    }
}

/// Reads from the stderr pipe when there is one; never ready otherwise.
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match r {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

/// [`sandbox::prepare`] (it walks directories and opens paths) on the blocking pool.
pub(crate) async fn prepare_off_thread(
    rules: &Rules,
    tmp: &Path,
) -> Result<sandbox::Prepared, String> {
    let (rules, tmp) = (rules.clone(), tmp.to_path_buf());
    tokio::task::spawn_blocking(move || sandbox::prepare(&rules, &tmp))
        .await
        .map_err(|e| e.to_string())?
}

async fn run_inner(
    command: &str,
    cwd: &Path,
    limits: &ToolLimits,
    sandbox: Option<(&sandbox::Prepared, &Path)>,
    env_allow: &[String],
    live: Option<&LiveSink>,
) -> std::io::Result<String> {
    let platform::Spawned {
        mut child,
        mut rx,
        mut err,
        mut guard,
    } = platform::spawn(command, cwd, sandbox, env_allow)?;

    let cap = limits.bash_output_cap;
    let mut out: Vec<u8> = Vec::new();
    let mut omitted: usize = 0;
    let mut tmp = vec![0u8; 16 * 1024];
    let mut tmp_err = vec![0u8; 16 * 1024];
    let mut status = None;
    let mut eof = false;
    let mut err_eof = err.is_none();
    let mut timed_out = false;
    let mut throttle = OutputThrottle::new(live);
    let mut keep = |n: usize, buf: &[u8], stream, throttle: &mut OutputThrottle| {
        let kept = n.min(cap.saturating_sub(out.len()));
        out.extend_from_slice(&buf[..kept]);
        throttle.push(stream, &buf[..kept]);
        omitted += n - kept;
    };
    let deadline = tokio::time::sleep(limits.bash_timeout);
    tokio::pin!(deadline);
    let grace = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(grace);
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let flush = tokio::time::sleep_until(far);
    tokio::pin!(flush);
    while !(eof && err_eof && status.is_some()) {
        let due = throttle.next_due();
        if let Some(at) = due
            && flush.deadline() != at
        {
            flush.as_mut().reset(at);
        }
        tokio::select! {
            r = rx.read(&mut tmp), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => keep(n, &tmp, OutputStream::Stdout, &mut throttle),
            },
            r = read_some(&mut err, &mut tmp_err), if !err_eof => match r {
                Ok(0) | Err(_) => err_eof = true,
                Ok(n) => keep(n, &tmp_err, OutputStream::Stderr, &mut throttle),
            },
            _ = &mut flush, if due.is_some() => throttle.flush_due(),
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
    throttle.finish();

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
    } else if let Some(note) = status.and_then(platform::status_note) {
        text.push_str(&note);
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    Ok(text)
}

#[cfg(all(test, unix))]
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
            // stdout and stderr come through their own pipes: the pauses fix their order.
            "echo out; sleep 0.1; echo err 1>&2; sleep 0.1; pwd; exit 3",
            dir.path(),
            &limits(),
            None,
            &[],
        )
        .await;
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(
            out,
            format!("out\nerr\n{}\n\n[exit code: 3]", cwd.display())
        );
        assert_eq!(
            run_bash("true", dir.path(), &limits(), None, &[]).await,
            "(no output)"
        );
        let gone = dir.path().join("gone");
        assert!(
            run_bash("true", &gone, &limits(), None, &[])
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
        let out = run_bash(
            "head -c 5000 /dev/zero | tr '\\0' a",
            dir.path(),
            &l,
            None,
            &[],
        )
        .await;
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
        let out = run_bash(&cmd, dir.path(), &l, None, &[]).await;
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
        let fut = run_bash(&cmd, dir.path(), &l, None, &[]);
        let r = tokio::time::timeout(Duration::from_millis(200), fut).await;
        assert!(r.is_err());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "command survived cancellation");
    }

    /// Confined (Linux with Landlock only): writes beneath the allowed places and the
    /// private directory pass, others fail, and a timeout still kills the whole group.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn confined_writes_and_kills() {
        if sandbox::landlock_abi().is_none() {
            eprintln!("no Landlock here: skipped");
            return;
        }
        let cwd = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let rules = Rules {
            writable: vec![cwd.path().to_path_buf()],
            network: true,
            denied: vec![],
            read_only: false,
        };
        let sb = Some((&rules, tmp.path()));
        let cmd = format!(
            "echo a > in; echo b > \"$TMPDIR/t\"; echo c > /dev/null; echo d > {}/f",
            outside.path().display()
        );
        let out = run_bash(&cmd, cwd.path(), &limits(), sb, &[]).await;
        assert!(out.contains("Permission denied"), "{out}");
        assert!(cwd.path().join("in").exists());
        assert!(tmp.path().join("t").exists());
        assert!(!outside.path().join("f").exists());

        let marker = outside.path().join("marker");
        let l = ToolLimits {
            bash_timeout: Duration::from_millis(300),
            ..limits()
        };
        let keep = cwd.path().join("kept");
        let cmd = format!("(sleep 1; touch {}) & sleep 30", keep.display());
        let out = run_bash(&cmd, cwd.path(), &l, sb, &[]).await;
        assert!(out.contains("timed out"), "{out}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!keep.exists(), "background child survived the kill");
        assert!(!marker.exists());
    }

    /// Confined in `read_only` (Linux with Landlock only): a denied directory cannot be read
    /// (its neighbour can), a symlink to it leads nowhere, no file's mode changes, and the
    /// command holds no capability.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn confined_read_only_reads_and_metadata() {
        use std::os::unix::fs::PermissionsExt;
        if sandbox::landlock_abi().is_none() {
            eprintln!("no Landlock here: skipped");
            return;
        }
        let cwd = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let denied = outside.path().join("denied");
        std::fs::create_dir(&denied).unwrap();
        std::fs::write(denied.join("secret"), "hidden-text").unwrap();
        let open = outside.path().join("open");
        std::fs::write(&open, "open-text").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&denied, cwd.path().join("link")).unwrap();
        let rules = Rules {
            writable: vec![],
            network: true,
            denied: vec![denied.clone()],
            read_only: true,
        };
        let cmd = format!(
            "cat {d}/secret; echo d=$?; cat link/secret; echo l=$?; cat {o}; echo; \
             chmod 600 {o}; echo m=$?; grep CapEff /proc/self/status",
            d = denied.display(),
            o = open.display()
        );
        let out = run_bash(&cmd, cwd.path(), &limits(), Some((&rules, tmp.path())), &[]).await;
        assert!(out.contains("d=1") && out.contains("l=1"), "{out}");
        assert!(!out.contains("hidden-text"), "{out}");
        assert!(out.contains("open-text"), "{out}");
        assert!(out.contains("m=1"), "{out}");
        assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
        let mode = std::fs::metadata(&open).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    /// A sandbox that cannot be set up (here: its temporary directory is gone) fails the
    /// call; the command never runs unconfined.
    #[tokio::test]
    async fn a_sandbox_that_cannot_be_set_up_fails_closed() {
        let cwd = tempfile::tempdir().unwrap();
        let rules = Rules {
            writable: vec![cwd.path().to_path_buf()],
            network: true,
            denied: vec![],
            read_only: false,
        };
        let gone = cwd.path().join("no-such-tmp");
        let marker = cwd.path().join("ran");
        let cmd = format!("touch {}", marker.display());
        let out = run_bash(&cmd, cwd.path(), &limits(), Some((&rules, &gone)), &[]).await;
        assert!(
            out.starts_with("Error: the sandbox could not be set up"),
            "{out}"
        );
        assert!(!marker.exists(), "the command ran");
    }

    /// Output is passed on while the command runs, each piece tagged with its stream, and
    /// no more of it than the output limit.
    #[tokio::test]
    async fn live_output_is_tagged_and_capped() {
        use crate::tools::live::live_channel;
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = live_channel();
        let l = ToolLimits {
            bash_output_cap: 10_000,
            ..limits()
        };
        let cmd =
            "echo one; sleep 0.3; echo two 1>&2; sleep 0.3; head -c 100000 /dev/zero | tr '\\0' a";
        let run = run_bash_live(cmd, dir.path(), &l, None, &[], Some(&tx));
        let mut got = Vec::new();
        let collect = async {
            // The first piece arrives while the command still runs.
            let first = rx.recv().await.unwrap();
            got.push((Instant::now(), first));
        };
        let (out, ()) = tokio::join!(run, collect);
        let ended = Instant::now();
        drop(tx);
        while let Some(c) = rx.recv().await {
            got.push((ended, c));
        }
        assert!(out.contains("[output truncated: 90008 more bytes"), "{out}");
        assert_eq!(got[0].1.text, "one\n");
        assert!(ended.duration_since(got[0].0) > Duration::from_millis(300));
        let err: Vec<_> = got
            .iter()
            .filter(|(_, c)| c.stream == OutputStream::Stderr)
            .map(|(_, c)| c.text.as_str())
            .collect();
        assert_eq!(err, ["two\n"]);
        let sent: usize = got.iter().map(|(_, c)| c.text.len()).sum();
        assert_eq!(sent, 10_000);
    }

    #[tokio::test]
    async fn background_process_does_not_hang_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let out = run_bash("sleep 2 & echo hi", dir.path(), &limits(), None, &[]).await;
        assert_eq!(out, "hi\n");
        assert!(t.elapsed() < Duration::from_secs(3));
    }
}
