//! The Windows side of the `bash` tool: the command runs through PowerShell where it is
//! installed (`powershell.exe` on PATH), else through `cmd /C`, inside a Job object so that a
//! kill reaches every process it started; stdout and stderr share one anonymous pipe, read
//! on a small thread (Windows has no async anonymous pipe) and handed over in bounded chunks.
//!
//! The child is assigned to the job right after it is created; a process it started in
//! between (microseconds, while the shell is still loading) would escape the job.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, TerminateJobObject,
};

/// The shell's name in error messages.
pub const SHELL_NAME: &str = "the shell";

/// `CREATE_NO_WINDOW`: the daemon has no console to lend; the shell gets none of its own.
const CREATE_NO_WINDOW: u32 = 0x0800_0000;
/// Output chunks in flight between the reader thread and the tool.
const CHUNKS_IN_FLIGHT: usize = 4;
/// Bytes per read on the reader thread.
const CHUNK_BYTES: usize = 16 * 1024;

/// A started command: the child, its merged output, and the job killer.
pub struct Spawned {
    pub child: tokio::process::Child,
    pub rx: OutputReader,
    /// stderr apart: not on Windows, where both share `rx` (live output says `stdout`).
    pub err: Option<OutputReader>,
    pub guard: JobGuard,
}

/// A Job object holding the command and everything it starts; terminated when dropped
/// while armed.
pub struct JobGuard {
    job: HANDLE,
    pub armed: bool,
}

// SAFETY: a job handle is a kernel handle usable from any thread.
#[allow(unsafe_code)]
unsafe impl Send for JobGuard {}

impl JobGuard {
    #[allow(unsafe_code)]
    fn new() -> io::Result<JobGuard> {
        // SAFETY: null attributes and name create an unnamed job with the default security.
        let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if job.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(JobGuard { job, armed: true })
    }

    #[allow(unsafe_code)]
    fn assign(&self, process: HANDLE) -> io::Result<()> {
        // SAFETY: both handles are open: the job is ours, the process handle is borrowed
        // from a live `Child`.
        if unsafe { AssignProcessToJobObject(self.job, process) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Terminates every process in the job.
    #[allow(unsafe_code)]
    pub fn kill(&self) {
        // SAFETY: the job handle stays open until drop.
        unsafe {
            TerminateJobObject(self.job, 1);
        }
    }
}

impl Drop for JobGuard {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
        // SAFETY: closed exactly once. The job has no kill-on-close limit, so processes
        // left running after a normal exit (background services) keep running.
        unsafe {
            CloseHandle(self.job);
        }
    }
}

/// The command's merged output, as an async reader fed by the reader thread.
pub struct OutputReader {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    pending: Vec<u8>,
    pos: usize,
}

impl AsyncRead for OutputReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pos >= this.pending.len() {
            match ready!(this.chunks.poll_recv(cx)) {
                None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(chunk)) => {
                    this.pending = chunk;
                    this.pos = 0;
                }
            }
        }
        let n = buf.remaining().min(this.pending.len() - this.pos);
        buf.put_slice(&this.pending[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// Reads the pipe until EOF (every writer closed) or until the tool stops listening.
fn pump(mut reader: io::PipeReader, tx: mpsc::Sender<io::Result<Vec<u8>>>) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tx.blocking_send(Ok(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}

/// Environment variable choosing the shell: `cmd` forces `cmd /C` even where PowerShell is
/// on PATH (Wine ships a `powershell.exe` stub that runs nothing).
const ENV_SHELL: &str = "ZEROCLAW_SHELL";

/// `powershell.exe` from PATH, looked up once; `None` when `ZEROCLAW_SHELL=cmd`.
fn powershell() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if std::env::var(ENV_SHELL).is_ok_and(|v| v.trim().eq_ignore_ascii_case("cmd")) {
                return None;
            }
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|dir| dir.join("powershell.exe"))
                .find(|candidate| candidate.is_file())
        })
        .as_deref()
}

fn shell_command(command: &str) -> tokio::process::Command {
    if let Some(ps) = powershell() {
        let mut cmd = tokio::process::Command::new(ps);
        cmd.args([
            "-NoLogo",
            "-NoProfile",
            "-NonInteractive",
            "-ExecutionPolicy",
            "Bypass",
            "-Command",
            command,
        ]);
        cmd
    } else {
        let comspec = std::env::var_os("ComSpec").unwrap_or_else(|| OsString::from("cmd.exe"));
        let mut cmd = tokio::process::Command::new(comspec);
        // `/S /C "<command>"`: cmd strips the outer quotes and runs the rest verbatim, so
        // the command is not re-quoted by the C runtime's rules (which cmd does not follow).
        let mut arg = OsString::from("/D /S /C \"");
        arg.push(command);
        arg.push("\"");
        cmd.raw_arg(arg);
        cmd
    }
}

/// Starts the command in `cwd`, inside a new Job object.
/// `sandbox` is always `None` here: Windows has no Landlock ([`crate::sandbox`]). The
/// environment is not scrubbed here (`env_allow` is unused): a Windows shell needs
/// variables (`SystemRoot`, …) that the Unix list does not name.
pub fn spawn(
    command: &str,
    cwd: &Path,
    sandbox: Option<(&crate::sandbox::Prepared, &Path)>,
    env_allow: &[String],
) -> io::Result<Spawned> {
    let _ = env_allow;
    if let Some((prepared, _)) = sandbox {
        match *prepared {}
    }
    let (reader, writer) = io::pipe()?;
    let guard = JobGuard::new()?;
    let child = {
        let writer2 = writer.try_clone()?;
        let mut cmd = shell_command(command);
        cmd.current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .creation_flags(CREATE_NO_WINDOW)
            .kill_on_drop(true);
        // `cmd` (holding our copies of the write end) is dropped at the end of this
        // block, so EOF arrives once the child side closes.
        cmd.spawn()?
    };
    match child.raw_handle() {
        Some(handle) => {
            if let Err(e) = guard.assign(handle as HANDLE) {
                // Only the shell itself can be killed then (kill_on_drop).
                tracing::warn!("could not put the shell in a job object: {e}");
            }
        }
        None => tracing::warn!("the shell exited before it could join its job object"),
    }
    let (tx, chunks) = mpsc::channel(CHUNKS_IN_FLIGHT);
    std::thread::Builder::new()
        .name("zeroclaw-shell-output".into())
        .spawn(move || pump(reader, tx))?;
    let rx = OutputReader {
        chunks,
        pending: Vec::new(),
        pos: 0,
    };
    Ok(Spawned {
        child,
        rx,
        err: None,
        guard,
    })
}

/// The note appended for a non-zero exit; `None` for success.
pub fn status_note(st: ExitStatus) -> Option<String> {
    st.code()
        .filter(|code| *code != 0)
        .map(|code| format!("\n[exit code: {code}]"))
}
