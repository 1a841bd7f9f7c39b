//! Where `zeroclaw chat` works (SPEC §22 "The project directory", "A banner that tells the
//! truth"): the session starts in the directory the chat runs from, or `--cwd DIR`;
//! `--continue` resumes the newest session of the agent in that directory, `--resume`
//! lists them to pick one; and the one-line banner (agent, provider and model, cwd,
//! autonomy, sandbox) read back from `session/status`, so it says what the daemon runs.

use std::path::{Path, PathBuf};

use clap::Args;
use zeroclaw_client::protocol::session::{ListParams, SessionRef};
use zeroclaw_client::protocol::stream::SessionStatusResult;
use zeroclaw_client::protocol::{Mode, call, code};
use zeroclaw_client::{ClientError, ClientHandle, SessionNewParams, SessionNewResult};

use super::approve::ApprovePolicy;
use super::input::{Input, Read};
use super::ui::{Ui, message};
use crate::cli::human;

/// The README section that sets up a real model (named by the `echo` banner line).
pub const REAL_MODEL_SECTION: &str = "Setting up a real model";
/// Sessions `--resume` offers at most.
const RESUME_CHOICES: usize = 20;

/// `zeroclaw chat` options about where it works and how it decides what it cannot ask.
#[derive(Debug, Clone, Default, Args)]
pub struct Place {
    /// The project directory the session works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Resume the newest session of this agent in the project directory (a new one when
    /// there is none).
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["session", "resume"])]
    pub continue_newest: bool,
    /// List this agent's sessions in the project directory and pick one to resume.
    #[arg(long, conflicts_with = "session")]
    pub resume: bool,
    /// Decide approvals without asking: `all` allows, `none` rejects, `read_only` allows
    /// only tools that change nothing. Without it approvals are asked, and with piped
    /// input rejected once the input has ended.
    #[arg(long, value_name = "WHICH")]
    pub approve: Option<ApprovePolicy>,
}

impl Place {
    /// The directory to send as `cwd` (absolute), and whether the user named it.
    fn directory(&self) -> (Option<PathBuf>, bool) {
        match &self.cwd {
            Some(dir) => (Some(absolute(dir)), true),
            None => (std::env::current_dir().ok(), false),
        }
    }
}

/// `dir` made absolute against the current directory (the daemon resolves links).
fn absolute(dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        return dir.to_path_buf();
    }
    std::env::current_dir()
        .map(|here| here.join(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// Opens the chat's session: `--session ID`, the newest of this directory (`-c`), the one
/// picked (`--resume`), or a new one in the directory. A directory the user did not name
/// that the daemon refuses (a non-admin outside its workspace, SPEC §17.1) is said and
/// the session starts in the agent's workspace instead.
pub async fn open(
    handle: &ClientHandle,
    agent: &str,
    session: Option<String>,
    place: &Place,
    ui: &mut Ui,
    input: &mut Input,
) -> Result<SessionNewResult, String> {
    let (dir, named) = place.directory();
    let mut params = SessionNewParams::agent(agent);
    params.session_id = session.map(Into::into);
    if place.continue_newest || place.resume {
        let chosen = match &dir {
            Some(dir) => pick(handle, agent, dir, place.resume, ui, input).await?,
            None => None,
        };
        if chosen.is_some() {
            // A resumed session keeps the directory it recorded.
            params.session_id = chosen.map(Into::into);
            return new_session(handle, &params).await;
        }
    }
    params.cwd = dir.map(|d| d.display().to_string());
    match handle.new_session(&params).await {
        Err(ClientError::Rpc(e)) if !named && e.code == code::FORBIDDEN => {
            ui.note(&format!(
                "{} is outside what you may use ({}); working in the agent's workspace",
                params.cwd.as_deref().unwrap_or("?"),
                e.message
            ));
            params.cwd = None;
            new_session(handle, &params).await
        }
        other => other.map_err(|e| failed(&e)),
    }
}

async fn new_session(
    handle: &ClientHandle,
    params: &SessionNewParams,
) -> Result<SessionNewResult, String> {
    handle.new_session(params).await.map_err(|e| failed(&e))
}

fn failed(e: &ClientError) -> String {
    format!(
        "{} failed: {}",
        zeroclaw_client::Method::SessionNew,
        message(e)
    )
}

/// This agent's sessions in `dir`, newest first: the newest (`-c`), or the one picked
/// from a numbered list (`--resume`); `None` for a new session.
async fn pick(
    handle: &ClientHandle,
    agent: &str,
    dir: &Path,
    ask: bool,
    ui: &mut Ui,
    input: &mut Input,
) -> Result<Option<String>, String> {
    let params = ListParams {
        mode: Some(Mode::Acp),
        cwd: Some(dir.display().to_string()),
        ..ListParams::default()
    };
    let list = handle
        .call_typed::<call::SessionList>(&params)
        .await
        .map_err(|e| format!("session/list failed: {}", message(&e)))?;
    let mine: Vec<_> = list
        .sessions
        .into_iter()
        .filter(|s| s.agent_alias == agent)
        .take(RESUME_CHOICES)
        .collect();
    if mine.is_empty() {
        ui.note(&format!(
            "no {agent} session in {}; starting a new one",
            dir.display()
        ));
        return Ok(None);
    }
    if !ask {
        return Ok(mine.first().map(|s| s.session_id.to_string()));
    }
    let now = human::now_ms();
    let mut text = format!("sessions of {agent} in {}:\n", dir.display());
    for (i, s) in mine.iter().enumerate() {
        let title = s
            .title
            .as_deref()
            .map(|t| human::first_line(t, 60))
            .unwrap_or_else(|| "(untitled)".to_string());
        text.push_str(&format!(
            "  {}) {title} · {} · {} messages · {}\n",
            i + 1,
            human::age(&serde_json::Value::from(s.last_activity), now),
            s.message_count,
            s.session_id
        ));
    }
    ui.print(text.trim_end());
    loop {
        let line = match input
            .next("resume which? (number, Enter for a new session) ", true)
            .await
        {
            Read::Line(line) => line,
            Read::End | Read::Interrupt => return Err("no session picked".into()),
        };
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        match line.parse::<usize>() {
            Ok(n) if (1..=mine.len()).contains(&n) => {
                return Ok(Some(mine[n - 1].session_id.to_string()));
            }
            _ => ui.note(&format!("type a number from 1 to {}", mine.len())),
        }
    }
}

/// The banner (SPEC §22): one line — agent, provider kind and model, cwd, autonomy,
/// sandbox — and with the `echo` provider one more saying answers are echoes and where
/// the README sets up a real model. From `session/status`; without it, nothing.
pub async fn banner(handle: &ClientHandle, session_id: &str, ui: &mut Ui) {
    let params = SessionRef {
        session_id: session_id.to_string().into(),
        mode: None,
    };
    match handle.call_typed::<call::SessionStatus>(&params).await {
        Ok(status) => {
            for line in banner_lines(&status) {
                ui.banner(&line);
            }
        }
        Err(e) => ui.note(&format!(
            "cannot read the session's status: {}",
            message(&e)
        )),
    }
}

/// The banner's lines for a session's status.
pub fn banner_lines(s: &SessionStatusResult) -> Vec<String> {
    let model = if s.model.is_empty() {
        String::new()
    } else {
        format!(" {}", s.model)
    };
    let mut lines = vec![format!(
        "agent {} · {}{model} · cwd {} · autonomy {} · sandbox {}",
        s.agent_alias, s.provider, s.cwd, s.autonomy, s.sandbox
    )];
    if s.provider == "echo" {
        lines.push(format!(
            "the echo provider answers with your own words; README \"{REAL_MODEL_SECTION}\" connects a real model"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(provider: &str, model: &str) -> SessionStatusResult {
        serde_json::from_value(serde_json::json!({
            "sessionId": "s", "mode": "acp", "agentAlias": "default",
            "autonomy": "supervised", "model": model, "activeTurnId": null,
            "queuedPrompts": 0, "subscribers": 0,
            "usage": {"sessionTotalTokens": 0, "contextTokens": 0, "contextWindow": 0},
            "mcpServers": [], "sandbox": "off", "cwd": "/p", "provider": provider
        }))
        .expect("a status")
    }

    #[test]
    fn the_banner_names_everything_and_warns_about_echo() {
        assert_eq!(
            banner_lines(&status("openai", "m")),
            ["agent default · openai m · cwd /p · autonomy supervised · sandbox off"]
        );
        let echo = banner_lines(&status("echo", ""));
        assert_eq!(
            echo[0],
            "agent default · echo · cwd /p · autonomy supervised · sandbox off"
        );
        assert!(echo[1].contains("\"Setting up a real model\""), "{echo:?}");
    }
}
