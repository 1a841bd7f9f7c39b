//! One MCP server: its child process (own process group), the `rmcp` client over its
//! stdio, its state and tool list, and the task that starts and watches it.
//!
//! A server with sandbox rules (SPEC §21.2) gets its own private temporary directory
//! (`TMPDIR`, removed once the server is gone) and its ruleset is built before the spawn;
//! one that cannot be set up fails the server, which never starts unconfined.
//!
//! States: `starting` → `ready` → (`failed` when it exits or a call finds it gone) and
//! `stopped` once the session stops it. A start that fails or exceeds the ready budget is
//! `failed` too. Whatever the state, [`Slot::stop`] kills the whole process group with
//! SIGKILL, synchronously (it runs from `Drop` and at daemon shutdown).

use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::types::{McpServerConfig, McpServerStatus, McpTool, SEPARATOR};
use crate::provider::ToolSchema;
use crate::provider::shown;
use crate::sandbox::{self, Scratch};

/// Tool output kept for the model, in bytes.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
/// Stderr kept for error messages, in bytes (the last line that fits).
const STDERR_TAIL: usize = 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Starting,
    Ready,
    Failed,
    Stopped,
}

struct Inner {
    state: State,
    error: Option<String>,
    tools: Vec<McpTool>,
    peer: Option<Peer<RoleClient>>,
    /// Process group id (= the server's pid) once spawned.
    pgid: Option<u32>,
    stderr_tail: String,
}

pub(super) struct Slot {
    pub name: String,
    /// The values of the server's `env`, masked in its error (SPEC §17.1: they are
    /// secrets wherever read, and a server may well print its token as it fails).
    secrets: Vec<String>,
    inner: Mutex<Inner>,
    stop: CancellationToken,
    /// Cancelled once the server is gone (failed, exited or stopped): calls in flight end.
    gone: CancellationToken,
}

impl Slot {
    pub fn spawn(config: McpServerConfig, ready_timeout: Duration) -> Arc<Slot> {
        let slot = Slot::starting(&config);
        tokio::spawn(run(Arc::clone(&slot), config, ready_timeout));
        slot
    }

    /// The slot of a server about to be started.
    fn starting(config: &McpServerConfig) -> Arc<Slot> {
        Arc::new(Slot {
            name: config.name.clone(),
            secrets: config.env.iter().map(|(_, v)| v.clone()).collect(),
            inner: Mutex::new(Inner {
                state: State::Starting,
                error: None,
                tools: Vec::new(),
                peer: None,
                pgid: None,
                stderr_tail: String::new(),
            }),
            stop: CancellationToken::new(),
            gone: CancellationToken::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> McpServerStatus {
        let inner = self.lock();
        McpServerStatus {
            name: self.name.clone(),
            state: match inner.state {
                State::Starting => "starting",
                State::Ready => "ready",
                State::Failed => "failed",
                State::Stopped => "stopped",
            },
            tools: inner.tools.iter().map(|t| t.schema.name.clone()).collect(),
            error: inner.error.clone(),
            pid: inner.pgid,
        }
    }

    pub fn tools(&self) -> Vec<McpTool> {
        let inner = self.lock();
        if inner.state == State::Ready {
            inner.tools.clone()
        } else {
            Vec::new()
        }
    }

    /// Marks the server failed (once; a stopped server stays stopped) and withdraws its
    /// tools.
    fn fail(&self, error: String) {
        let mut inner = self.lock();
        if matches!(inner.state, State::Stopped | State::Failed) {
            return;
        }
        let error = if inner.stderr_tail.is_empty() {
            error
        } else {
            format!("{error} (stderr: {})", inner.stderr_tail)
        };
        let error = shown::without_secrets(error, self.secrets.iter().map(String::as_str));
        tracing::warn!(server = %self.name, "MCP server failed: {error}");
        inner.state = State::Failed;
        inner.error = Some(error);
        inner.tools.clear();
        inner.peer = None;
        drop(inner);
        self.gone.cancel();
    }

    /// Kills the process group now and marks the server stopped.
    pub fn stop(&self) {
        self.stop.cancel();
        let pgid = {
            let mut inner = self.lock();
            if inner.state != State::Failed {
                inner.state = State::Stopped;
            }
            inner.tools.clear();
            inner.peer = None;
            inner.pgid
        };
        self.gone.cancel();
        if let Some(pgid) = pgid {
            kill_group(pgid);
        }
    }

    pub async fn call(
        &self,
        qualified: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<String, String> {
        let (peer, tool) = {
            let inner = self.lock();
            match inner.state {
                State::Ready => {}
                State::Starting => {
                    return Err(format!(
                        "Error: the MCP server `{}` is still starting; `{qualified}` is not available yet.",
                        self.name
                    ));
                }
                State::Failed | State::Stopped => {
                    return Err(format!(
                        "Error: the MCP server `{}` is not running ({}); `{qualified}` is not available.",
                        self.name,
                        inner.error.as_deref().unwrap_or("stopped")
                    ));
                }
            }
            let Some(tool) = inner.tools.iter().find(|t| t.schema.name == qualified) else {
                return Err(format!(
                    "Error: the MCP server `{}` has no tool for `{qualified}`.",
                    self.name
                ));
            };
            (inner.peer.clone(), tool.tool.clone())
        };
        let Some(peer) = peer else {
            return Err(format!("Error: the MCP server `{}` is gone.", self.name));
        };
        let mut params = CallToolRequestParams::new(tool);
        params.arguments = args.as_object().cloned();
        let answer = tokio::select! {
            () = self.gone.cancelled() => {
                let inner = self.lock();
                return Err(format!(
                    "Error: the MCP server `{}` stopped during the call ({}).",
                    self.name,
                    inner.error.as_deref().unwrap_or("stopped")
                ));
            }
            r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
        };
        match answer {
            Err(_) => Err(format!(
                "Error: `{qualified}` did not answer within {} s.",
                timeout.as_secs()
            )),
            Ok(Err(e)) => {
                if matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    self.fail(format!("the server exited: {e}"));
                }
                Err(format!("Error: `{qualified}` failed: {e}"))
            }
            Ok(Ok(result)) => Ok(result_text(&result)),
        }
    }
}

/// SIGKILL to the whole process group.
#[allow(unsafe_code)]
fn kill_group(pgid: u32) {
    #[cfg(unix)]
    {
        let Ok(pgid) = libc::pid_t::try_from(pgid) else {
            return;
        };
        if pgid <= 1 {
            return;
        }
        // SAFETY: killpg has no memory preconditions; the group is the server's own (it was
        // spawned as the leader of a new group), never the daemon's.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// The text given to the model: the text blocks, other blocks as JSON, capped.
fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    if parts.is_empty()
        && let Some(s) = &result.structured_content
    {
        parts.push(s.to_string());
    }
    let mut out = parts.join("\n");
    if result.is_error == Some(true) {
        out = format!("Error: {out}");
    }
    if out.len() > MAX_RESULT_BYTES {
        let mut cut = MAX_RESULT_BYTES;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = out.len() - cut;
        out.truncate(cut);
        out.push_str(&format!("\n[output truncated: {dropped} more bytes]"));
    }
    out
}

fn tool_of(server: &str, t: &rmcp::model::Tool) -> McpTool {
    let read_only = t
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    McpTool {
        schema: ToolSchema {
            name: format!("{server}{SEPARATOR}{}", t.name),
            description: t.description.as_deref().unwrap_or_default().to_string(),
            parameters: Value::Object((*t.input_schema).clone()),
        },
        tool: t.name.to_string(),
        read_only,
    }
}

/// How long a server that failed to start is given to finish writing to stderr.
const LAST_WORDS: Duration = Duration::from_millis(200);

/// Keeps the last stderr line of the server (for error messages) until it closes.
async fn read_stderr(slot: Arc<Slot>, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        tracing::debug!(server = %slot.name, "MCP stderr: {line}");
        let mut tail: String = line.chars().take(STDERR_TAIL).collect();
        tail.shrink_to_fit();
        slot.lock().stderr_tail = tail;
    }
}

/// Starts the server, publishes its tools, then waits for it to exit or be stopped.
async fn run(slot: Arc<Slot>, config: McpServerConfig, ready_timeout: Duration) {
    let mut cmd = tokio::process::Command::new(&config.command);
    // The daemon's environment scrubbed (SPEC §17.2), then the server's own variables.
    sandbox::env::scrub(&mut cmd, &config.inherit);
    cmd.args(&config.args)
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    // Kept until the server is gone (this task's end): removed then.
    let mut scratch = None;
    if config.sandbox.is_some() {
        match Scratch::make_async().await {
            Ok(s) => scratch = Some(s),
            Err(e) => {
                return slot.fail(format!(
                    "cannot set up the sandbox of `{}`: its temporary directory: {e}",
                    config.command
                ));
            }
        }
    }
    let rules = config.sandbox.clone();
    let tmp = scratch.as_ref().map(|s| s.path().to_path_buf());
    // The ruleset and fork/exec off the runtime's workers: they keep answering clients
    // meanwhile.
    let spawned = tokio::task::spawn_blocking(move || {
        let prepared = match (&rules, &tmp) {
            (Some(rules), Some(tmp)) => {
                let p = sandbox::prepare(rules, tmp).map_err(|e| format!("its sandbox: {e}"))?;
                cmd.env("TMPDIR", tmp);
                p.confine(&mut cmd);
                Some(p)
            }
            _ => None,
        };
        let spawned = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string());
        // The ruleset's descriptor is closed only once the child has been started.
        drop(prepared);
        spawned
    })
    .await;
    let (process, stderr) = match spawned {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            return slot.fail(format!("cannot start `{}`: {e}", config.command));
        }
        Err(e) => return slot.fail(format!("cannot start `{}`: {e}", config.command)),
    };
    slot.lock().pgid = process.id();
    // Held until this task ends, after the server is gone: the daemon's reaper of adopted
    // orphans leaves it to the code that waits for it (SPEC §17.2).
    let _registered = crate::spawned::Registered::new(process.id());
    if slot.stop.is_cancelled() {
        // Stopped while spawning: `stop` saw no group yet.
        return slot.stop();
    }
    let stderr_read = stderr.map(|stderr| tokio::spawn(read_stderr(Arc::clone(&slot), stderr)));
    let start = async {
        let service = ().serve(process).await.map_err(|e| e.to_string())?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok::<_, String>((service, tools))
    };
    let started = tokio::select! {
        () = slot.stop.cancelled() => return slot.stop(),
        r = tokio::time::timeout(ready_timeout, start) => r,
    };
    let service = match started {
        Err(_) => {
            slot.fail(format!(
                "not ready within {} s",
                ready_timeout.as_secs_f64()
            ));
            return slot.kill_only();
        }
        Ok(Err(e)) => {
            // The server most likely exited, saying why on stderr: its last line is read
            // (within a moment: a helper it started may hold the pipe open) to go with
            // the error.
            if let Some(read) = stderr_read {
                let _ = tokio::time::timeout(LAST_WORDS, read).await;
            }
            slot.fail(format!("start failed: {e}"));
            return slot.kill_only();
        }
        Ok(Ok((service, tools))) => {
            let mut inner = slot.lock();
            if inner.state != State::Starting {
                drop(inner);
                return slot.kill_only();
            }
            inner.tools = tools.iter().map(|t| tool_of(&slot.name, t)).collect();
            inner.peer = Some(service.peer().clone());
            inner.state = State::Ready;
            tracing::info!(server = %slot.name, tools = inner.tools.len(), "MCP server ready");
            drop(inner);
            service
        }
    };
    let pid = slot.lock().pgid;
    tokio::select! {
        () = slot.stop.cancelled() => {}
        quit = service.waiting() => {
            slot.fail(format!("the server closed its connection ({quit:?})"));
        }
        () = exited(pid) => slot.fail("the server process exited".to_owned()),
    }
    slot.kill_only();
    drop(scratch);
}

/// How often a ready server's process is checked for.
const EXIT_POLL: Duration = Duration::from_millis(200);

/// Resolves once process `pid` has exited. Its pipes may outlive it (a helper it started
/// keeps them open), so the end of its output alone does not tell.
async fn exited(pid: Option<u32>) {
    let Some(pid) = pid else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(EXIT_POLL).await;
        if !process_running(pid) {
            return;
        }
    }
}

/// Whether `pid` runs (a zombie — exited, not yet reaped — does not).
#[allow(unsafe_code)]
fn process_running(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

impl Slot {
    /// Kills the group without changing the state (after a failure).
    fn kill_only(&self) {
        if let Some(pgid) = self.lock().pgid {
            kill_group(pgid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::TextContent;

    #[test]
    fn result_text_joins_and_caps() {
        let r = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("a")),
            ContentBlock::Text(TextContent::new("b")),
        ]);
        assert_eq!(result_text(&r), "a\nb");
        let r = CallToolResult::error(vec![ContentBlock::Text(TextContent::new("boom"))]);
        assert_eq!(result_text(&r), "Error: boom");
        let big = "x".repeat(MAX_RESULT_BYTES + 10);
        let r = CallToolResult::success(vec![ContentBlock::Text(TextContent::new(big))]);
        let t = result_text(&r);
        assert!(
            t.ends_with("[output truncated: 10 more bytes]"),
            "{}",
            &t[t.len() - 50..]
        );
    }

    #[test]
    fn env_values_are_masked_in_the_error() {
        let config = McpServerConfig {
            name: "gh".into(),
            command: "gh-mcp".into(),
            args: Vec::new(),
            env: vec![
                ("SHORT".into(), "1".into()),
                ("TOKEN".into(), "ghp_TOPSECRET".into()),
            ],
            cwd: None,
            sandbox: None,
            inherit: Vec::new(),
        };
        let slot = Slot::starting(&config);
        slot.fail("exit 1: token ghp_TOPSECRET refused".into());
        assert_eq!(
            slot.status().error.as_deref(),
            Some("exit 1: token *** refused")
        );
    }
}
