//! Background processes (SPEC §26 "Background processes"): `bash {command, background:
//! true}` starts a command that outlives the call; `bash_output` reads what it printed
//! since the last read, `bash_kill` stops it.
//!
//! A session owns one [`Shells`]: at most [`MAX_RUNNING`] processes run at a time, each
//! in a process group of its own, confined and with its environment scrubbed exactly as
//! `bash` would be ([`crate::sandbox`]). One task per process reads its stdout and stderr
//! into a ring of [`RING_BYTES`] (older bytes are counted and dropped, so a chatty
//! process never grows memory and never waits for a reader) and waits for it; the turn
//! only ever takes a short lock to copy what is new.
//!
//! Every way out kills the whole group: [`Shells::kill_all`] (the session closed,
//! unloaded, killed or deleted, or the daemon stopping) sends SIGTERM and SIGKILL after
//! [`TERM_GRACE`]; a reader task dropped with its runtime kills at once; and when the
//! daemon dies without a word (kill -9) a watcher inside the group sees its lifeline pipe
//! close and kills the group itself ([`unix`]).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::sandbox::{Rules, Scratch};

mod ended;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as platform;
#[cfg(not(unix))]
mod other;
#[cfg(not(unix))]
use other as platform;

/// Processes that may run at once in one session; the next start is refused.
pub const MAX_RUNNING: usize = 8;
/// Output kept per process (stdout and stderr together, in arrival order).
pub const RING_BYTES: usize = 64 * 1024;
/// Ended processes kept listed (with their output) besides the running ones.
pub const KEEP_ENDED: usize = 8;
pub use ended::{Ended, TERM_GRACE};

/// One process as `session/status` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellInfo {
    pub shell_id: String,
    pub command: String,
    /// Unix ms.
    pub started_at: i64,
    pub pid: u32,
    pub running: bool,
    pub exit_code: Option<i32>,
}

/// The output ring and state of one process.
#[derive(Default)]
struct Output {
    ring: VecDeque<u8>,
    /// Bytes printed in all.
    total: u64,
    /// Bytes the agent has been given (`bash_output`): its read position in `total`.
    read: u64,
    ended: Option<Ended>,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let bytes = &bytes[bytes.len().saturating_sub(RING_BYTES)..];
        let over = (self.ring.len() + bytes.len()).saturating_sub(RING_BYTES);
        self.ring.drain(..over);
        self.ring.extend(bytes);
    }

    /// The ring's bytes from position `from` of `total` on, and how many bytes between
    /// `from` and the ring's start were dropped.
    fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let start = self.total - self.ring.len() as u64;
        let dropped = start.saturating_sub(from);
        let skip = from.saturating_sub(start) as usize;
        (self.ring.iter().skip(skip).copied().collect(), dropped)
    }
}

impl Output {
    /// What the agent has not read yet, how many of those bytes were dropped, and its next
    /// read position. While the process runs, a character cut at the end waits for its
    /// rest (it goes with the next read), so a read never splits one.
    fn take_new(&self) -> (Vec<u8>, u64, u64) {
        let (mut bytes, dropped) = self.since(self.read);
        let mut held = 0;
        if self.ended.is_none()
            && let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            held = bytes.len() - e.valid_up_to();
        }
        bytes.truncate(bytes.len() - held);
        (bytes, dropped, self.total - held as u64)
    }
}

struct Shell {
    id: String,
    command: String,
    started_at: i64,
    pid: u32,
    out: Mutex<Output>,
    /// Cancelled to stop it (SIGTERM, then SIGKILL after the grace).
    stop: CancellationToken,
}

impl Shell {
    fn out(&self) -> MutexGuard<'_, Output> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn info(&self) -> ShellInfo {
        let ended = self.out().ended;
        ShellInfo {
            shell_id: self.id.clone(),
            command: self.command.clone(),
            started_at: self.started_at,
            pid: self.pid,
            running: ended.is_none(),
            exit_code: match ended {
                Some(Ended::Code(c)) => Some(c),
                _ => None,
            },
        }
    }

    fn state_json(&self, ended: Option<Ended>) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("shellId".into(), json!(self.id));
        m.insert("running".into(), json!(ended.is_none()));
        match ended {
            Some(Ended::Code(c)) => {
                m.insert("exitCode".into(), json!(c));
            }
            Some(Ended::Signal(s)) => {
                m.insert("signal".into(), json!(s));
            }
            _ => {}
        }
        m
    }
}

#[derive(Default)]
struct Inner {
    next: u64,
    list: Vec<Arc<Shell>>,
    /// Set by [`Shells::kill_all`]: nothing starts any more.
    closed: bool,
}

/// A session's background processes.
#[derive(Default)]
pub struct Shells {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Shells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shells")
            .field("count", &self.inner().list.len())
            .finish()
    }
}

/// What one read of a process's output gives the dashboard (`session/shell_output`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutput {
    pub info: ShellInfo,
    /// The ring as it is (the newest [`RING_BYTES`] at most).
    pub output: String,
    /// Bytes printed before the ring's start.
    pub dropped: u64,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Shells {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn find(&self, id: &str) -> Option<Arc<Shell>> {
        self.inner().list.iter().find(|s| s.id == id).cloned()
    }

    /// The processes, oldest first.
    pub fn list(&self) -> Vec<ShellInfo> {
        let list: Vec<Arc<Shell>> = self.inner().list.clone();
        list.iter().map(|s| s.info()).collect()
    }

    /// How many still run.
    pub fn running(&self) -> usize {
        let list: Vec<Arc<Shell>> = self.inner().list.clone();
        list.iter().filter(|s| s.out().ended.is_none()).count()
    }

    /// `bash {command, background: true}`: starts `command` in `cwd` (confined by `rules`
    /// when given, the environment scrubbed but for `env_allow`) and returns the tool's
    /// result at once: `{"shellId", "pid"}` or an error.
    pub async fn start(
        self: &Arc<Self>,
        command: &str,
        cwd: &Path,
        rules: Option<&Rules>,
        env_allow: &[String],
    ) -> String {
        if let Err(e) = self.room() {
            return e;
        }
        if !cwd.is_dir() {
            return format!(
                "Error: the working directory {} does not exist",
                cwd.display()
            );
        }
        let confined = match rules {
            None => None,
            Some(rules) => {
                let scratch = match Scratch::make_async().await {
                    Ok(s) => s,
                    Err(e) => {
                        return format!(
                            "Error: the sandbox could not be set up (its temporary \
                             directory: {e}); the command was not run."
                        );
                    }
                };
                match super::bash::prepare_off_thread(rules, scratch.path()).await {
                    Ok(p) => Some((p, scratch)),
                    Err(e) => {
                        return format!(
                            "Error: the sandbox could not be set up ({e}); the command was not run."
                        );
                    }
                }
            }
        };
        let sandbox = confined.as_ref().map(|(p, s)| (p, s.path()));
        let spawned = match platform::spawn(command, cwd, sandbox, env_allow) {
            Ok(s) => s,
            Err(e) => return format!("Error: the background command could not start: {e}"),
        };
        let scratch = confined.map(|(_, s)| s);
        let pid = spawned.pid();
        let shell = {
            let mut inner = self.inner();
            // Checked again: a close or another start may have come while it spawned.
            let running = inner
                .list
                .iter()
                .filter(|s| s.out().ended.is_none())
                .count();
            if inner.closed || running >= MAX_RUNNING {
                drop(inner);
                drop(spawned);
                return self.room().err().unwrap_or_else(|| {
                    "Error: the session is closing; the command was not started.".into()
                });
            }
            inner.next += 1;
            let shell = Arc::new(Shell {
                id: format!("sh{}", inner.next),
                command: command.to_owned(),
                started_at: now_ms(),
                pid,
                out: Mutex::default(),
                stop: CancellationToken::new(),
            });
            inner.list.push(Arc::clone(&shell));
            prune(&mut inner.list);
            shell
        };
        let reader = Arc::clone(&shell);
        tokio::spawn(async move {
            let ended = platform::run(spawned, &reader.stop, |b| reader.out().push(b)).await;
            reader.out().ended = Some(ended);
            drop(scratch);
        });
        json!({"shellId": shell.id, "pid": pid}).to_string()
    }

    /// Refuses a start when the session is closing or [`MAX_RUNNING`] run already.
    fn room(&self) -> Result<(), String> {
        let inner = self.inner();
        if inner.closed {
            return Err("Error: the session is closing; the command was not started.".into());
        }
        let running = inner
            .list
            .iter()
            .filter(|s| s.out().ended.is_none())
            .count();
        if running >= MAX_RUNNING {
            return Err(format!(
                "Error: {running} background processes already run in this session (at most \
                 {MAX_RUNNING}); stop one with bash_kill or wait for one to end."
            ));
        }
        Ok(())
    }

    /// `bash_output {shellId}`: what the process printed since the last read, whether it
    /// runs, its exit code once it ended.
    pub fn read(&self, args: &Value) -> String {
        let shell = match self.shell_arg(args, "bash_output") {
            Ok(s) => s,
            Err(e) => return e,
        };
        let mut out = shell.out();
        let (bytes, dropped, next) = out.take_new();
        out.read = next;
        let ended = out.ended;
        drop(out);
        let mut m = shell.state_json(ended);
        m.insert("output".into(), json!(String::from_utf8_lossy(&bytes)));
        if dropped > 0 {
            m.insert("droppedBytes".into(), json!(dropped));
            m.insert(
                "note".into(),
                json!(format!(
                    "{dropped} bytes printed since the last read were dropped: only the \
                     newest {RING_BYTES} bytes are kept"
                )),
            );
        }
        Value::Object(m).to_string()
    }

    /// `bash_kill {shellId}`: stops the process and everything it started.
    pub fn kill(&self, args: &Value) -> String {
        let shell = match self.shell_arg(args, "bash_kill") {
            Ok(s) => s,
            Err(e) => return e,
        };
        let ended = shell.out().ended;
        let mut m = shell.state_json(ended);
        if ended.is_none() {
            shell.stop.cancel();
            m.insert("killed".into(), json!(true));
        } else {
            m.insert("killed".into(), json!(false));
            m.insert("note".into(), json!("it had already ended"));
        }
        Value::Object(m).to_string()
    }

    /// The dashboard's view of one process: the whole ring, without moving the agent's
    /// read position. `None` = no such process.
    pub fn peek(&self, shell_id: &str) -> Option<ShellOutput> {
        let shell = self.find(shell_id)?;
        let out = shell.out();
        let (bytes, dropped) = out.since(0);
        drop(out);
        Some(ShellOutput {
            info: shell.info(),
            output: String::from_utf8_lossy(&bytes).into_owned(),
            dropped,
        })
    }

    /// Stops every process (SIGTERM, SIGKILL after [`TERM_GRACE`]) and refuses new ones.
    pub fn kill_all(&self) {
        let list = {
            let mut inner = self.inner();
            inner.closed = true;
            inner.list.clone()
        };
        for s in list {
            s.stop.cancel();
        }
    }

    fn shell_arg(&self, args: &Value, tool: &str) -> Result<Arc<Shell>, String> {
        let id = super::str_arg(args, "shellId", tool)?;
        self.find(id).ok_or_else(|| {
            let known: Vec<String> = self.inner().list.iter().map(|s| s.id.clone()).collect();
            format!(
                "Error: no background process `{id}` in this session (known: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })
    }
}

impl Drop for Shells {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Keeps the running processes and the newest [`KEEP_ENDED`] ended ones.
fn prune(list: &mut Vec<Arc<Shell>>) {
    let mut ended = list.iter().filter(|s| s.out().ended.is_some()).count();
    list.retain(|s| {
        if ended > KEEP_ENDED && s.out().ended.is_some() {
            ended -= 1;
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_bytes_and_counts_the_rest() {
        let mut o = Output::default();
        o.push(b"abc");
        assert_eq!(o.since(0), (b"abc".to_vec(), 0));
        assert_eq!(o.since(2), (b"c".to_vec(), 0));
        o.push(&vec![b'x'; RING_BYTES]);
        let (bytes, dropped) = o.since(1);
        assert_eq!((bytes.len(), dropped), (RING_BYTES, 2));
        o.push(&vec![b'y'; 2 * RING_BYTES]);
        assert_eq!(o.ring.len(), RING_BYTES);
        assert_eq!(o.total, 3 * RING_BYTES as u64 + 3);
        assert_eq!(o.since(o.total), (Vec::new(), 0));
    }

    #[test]
    fn a_read_never_splits_a_character_while_it_runs() {
        let mut o = Output::default();
        let e = "é".as_bytes();
        o.push(b"caf");
        o.push(&e[..1]);
        let (bytes, _, next) = o.take_new();
        assert_eq!((bytes.as_slice(), next), (&b"caf"[..], 3));
        o.read = next;
        o.push(&e[1..]);
        let (bytes, _, next) = o.take_new();
        assert_eq!(
            (String::from_utf8(bytes).unwrap(), next),
            ("é".to_owned(), 5)
        );
        // Once it ended, what is there goes as it is.
        o.read = next;
        o.push(&e[..1]);
        o.ended = Some(Ended::Code(0));
        assert_eq!(o.take_new().0, e[..1].to_vec());
    }
}
