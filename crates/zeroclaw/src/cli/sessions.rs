//! `zeroclaw sessions` (a table of the sessions the caller may see, most recently active
//! first, titled by the start of their first prompt) and `zeroclaw sessions show ID` (the
//! transcript).

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::session::{ListParams, MessagesParams, SessionRef};
use zeroclaw_client::{ClientHandle, Mode};

use super::error::CliError;
use super::{human, rpc};

/// Characters of a title.
const TITLE_CHARS: usize = 48;

#[derive(Subcommand)]
pub enum SessionsAction {
    /// Print the transcript of a session.
    Show {
        /// The session id.
        id: String,
        /// Only the last N messages.
        #[arg(long, value_name = "N")]
        last: Option<u32>,
    },
    /// Unload a live session (`session/close`): its history stays, and an ACP session
    /// comes back on its next prompt.
    Close {
        /// The session id.
        id: String,
        /// The chat-mode session of that id (default: the ACP one).
        #[arg(long)]
        chat: bool,
    },
}

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    action: Option<SessionsAction>,
    limit: usize,
    json: bool,
) -> Result<(), CliError> {
    let handle = rpc::handle(config_dir, socket).await?;
    match action {
        None => list(&handle, limit, json).await,
        Some(SessionsAction::Show { id, last }) => show(&handle, &id, last, json).await,
        Some(SessionsAction::Close { id, chat }) => close(&handle, id, chat, json).await,
    }
}

async fn list(handle: &ClientHandle, limit: usize, json: bool) -> Result<(), CliError> {
    let result = handle
        .call_typed_value::<call::SessionList>(&ListParams::default())
        .await
        .map_err(CliError::from_client)?;
    if json {
        rpc::print_json(&result);
        return Ok(());
    }
    print!("{}", table(handle, &result, limit).await);
    Ok(())
}

/// The sessions table (at most `limit` rows); titles cost one small call per row shown.
pub async fn table(handle: &ClientHandle, list: &Value, limit: usize) -> String {
    let mut sessions: Vec<Value> = list["sessions"].as_array().cloned().unwrap_or_default();
    if sessions.is_empty() {
        return "no sessions\n".to_string();
    }
    sessions.sort_by_key(|s| std::cmp::Reverse(s["lastActivity"].as_i64().unwrap_or(0)));
    let hidden = sessions.len().saturating_sub(limit);
    sessions.truncate(limit);
    let now = human::now_ms();
    let mut rows = Vec::new();
    for s in &sessions {
        let id = s["sessionId"].as_str().unwrap_or("?");
        let mode = s["mode"]
            .as_str()
            .and_then(Mode::parse)
            .unwrap_or(Mode::Acp);
        let title = title(handle, s, id, mode).await;
        rows.push(vec![
            id.to_string(),
            s["agentAlias"].as_str().unwrap_or("?").to_string(),
            human::age(&s["lastActivity"], now),
            s["messageCount"].to_string(),
            if s["live"] == true { "yes" } else { "no" }.to_string(),
            title,
        ]);
    }
    let mut text = human::table(&["ID", "AGENT", "ACTIVE", "MSGS", "LIVE", "TITLE"], &rows);
    if hidden > 0 {
        text.push_str(&format!("… and {hidden} more (--limit N shows more)\n"));
    }
    text
}

/// The start of the first prompt, from `session/list` when it has a title, else from the
/// first transcript row.
async fn title(handle: &ClientHandle, session: &Value, id: &str, mode: Mode) -> String {
    if let Some(title) = session["title"].as_str() {
        return human::first_line(title, TITLE_CHARS);
    }
    if session["messageCount"].as_u64() == Some(0) {
        return String::new();
    }
    let params = MessagesParams {
        session_id: id.to_string().into(),
        mode: Some(mode),
        limit: Some(1),
        before_seq: Some(2),
        include_rewound: None,
    };
    match handle.call_typed::<call::SessionMessages>(&params).await {
        Ok(page) => page
            .messages
            .first()
            .map(|row| human::first_line(&row.content, TITLE_CHARS))
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn show(
    handle: &ClientHandle,
    id: &str,
    last: Option<u32>,
    json: bool,
) -> Result<(), CliError> {
    let params = MessagesParams {
        session_id: id.to_string().into(),
        mode: None,
        limit: last,
        before_seq: None,
        include_rewound: None,
    };
    let result = handle
        .call_typed_value::<call::SessionMessages>(&params)
        .await
        .map_err(CliError::from_client)?;
    if json {
        rpc::print_json(&result);
        return Ok(());
    }
    let rows = result["messages"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        println!("(no messages)");
    }
    print!("{}", transcript(&rows));
    Ok(())
}

/// `zeroclaw sessions close ID`: `session/close`.
async fn close(handle: &ClientHandle, id: String, chat: bool, json: bool) -> Result<(), CliError> {
    let params = SessionRef {
        session_id: id.clone().into(),
        mode: chat.then_some(Mode::Chat),
    };
    let result = handle
        .call_typed_value::<call::SessionClose>(&params)
        .await
        .map_err(CliError::from_client)?;
    if json {
        rpc::print_json(&result);
    } else {
        println!("session {id} closed");
    }
    Ok(())
}

/// Transcript rows for people: `you:` / `agent:` / the role, then the text indented.
pub fn transcript(rows: &[Value]) -> String {
    let mut out = String::new();
    for row in rows {
        let role = row["role"].as_str().unwrap_or("?");
        let who = match role {
            "user" => "you",
            "assistant" => "agent",
            other => other,
        };
        out.push_str(&format!("{who}:\n"));
        let content = row["content"].as_str().unwrap_or("");
        // A failed turn's error (SPEC §22): its message and the retries made, not JSON.
        let error = (role == "error")
            .then(|| serde_json::from_str::<Value>(content).ok())
            .flatten();
        let content = match &error {
            Some(e) => match (e["message"].as_str(), e["retries"].as_u64()) {
                (Some(m), Some(1)) => format!("{m}\n(after 1 retry)"),
                (Some(m), Some(n)) if n > 1 => format!("{m}\n(after {n} retries)"),
                (Some(m), _) => m.to_owned(),
                _ => content.to_owned(),
            },
            None => content.to_owned(),
        };
        for line in content.lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::transcript;

    #[test]
    fn transcript_for_people() {
        let rows = [
            json!({"role": "user", "content": "hi\nthere"}),
            json!({"role": "assistant", "content": "hello"}),
            json!({"role": "error", "content": "{\"message\":\"HTTP 500\",\"retries\":2}"}),
        ];
        assert_eq!(
            transcript(&rows),
            "you:\n  hi\n  there\n\nagent:\n  hello\n\nerror:\n  HTTP 500\n  (after 2 retries)\n\n"
        );
    }
}
