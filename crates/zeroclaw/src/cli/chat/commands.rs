//! The chat's session commands (SPEC §18 "Clients"): `/title TEXT`, `/fork`, `/compact
//! [instructions]` and `/rewind [N]`, each one daemon call by its wire name. A daemon that
//! does not have the method (-32601: older than this client) gets a clear note, not an
//! error code.

use std::cell::RefCell;

use serde_json::{Value, json};
use zeroclaw_client::protocol::code;
use zeroclaw_client::{ClientError, ClientHandle, Events, Outcome, PROMPT_TIMEOUT};

use super::input::{Input, Interrupts};
use super::turn::{Ending, Turn};
use super::ui::{Ui, message};

const SET_TITLE: &str = "session/set_title";
const FORK: &str = "session/fork";
const COMPACT: &str = "session/compact";
const REWIND: &str = "session/rewind";
const MESSAGES: &str = "session/messages";
/// Transcript rows read per page while looking for the turn to rewind to.
const REWIND_PAGE: u32 = 200;

/// The note for a failed session command.
fn failure(method: &str, e: &ClientError) -> String {
    match e {
        ClientError::Rpc(e) if e.code == code::METHOD_NOT_FOUND => {
            format!("this daemon does not support {method} yet (it is older than this client)")
        }
        other => format!("{method} failed: {}", message(other)),
    }
}

/// `/title TEXT`: `session/set_title`.
pub async fn title(handle: &ClientHandle, session_id: &str, ui: &mut Ui, text: &str) {
    if text.is_empty() {
        ui.note("usage: /title TEXT");
        return;
    }
    let params = json!({"sessionId": session_id, "title": text});
    match handle.call_name(SET_TITLE, params).await {
        Ok(r) => ui.note(&format!("title: {}", r["title"].as_str().unwrap_or(text))),
        Err(e) => ui.error(&failure(SET_TITLE, &e)),
    }
}

/// `/fork`: `session/fork` of the last completed turn; the new session's id, to continue in.
pub async fn fork(handle: &ClientHandle, session_id: &str, ui: &mut Ui) -> Option<String> {
    match handle
        .call_name(FORK, json!({"sessionId": session_id}))
        .await
    {
        Ok(r) => {
            let Some(id) = r["sessionId"].as_str() else {
                ui.error(&format!("{FORK} answered without a sessionId: {r}"));
                return None;
            };
            ui.note(&format!(
                "forked {session_id} into {id} ({} messages); this window goes on in {id}",
                r["messageCount"].as_u64().unwrap_or(0)
            ));
            Some(id.to_string())
        }
        Err(e) => {
            ui.error(&failure(FORK, &e));
            None
        }
    }
}

/// `/compact [instructions]`: `session/compact`, queued by the daemon like a prompt; the
/// turn it runs as is shown like any other, then what it did.
pub async fn compact(
    mut turn: Turn<'_>,
    events: &mut Events,
    interrupts: &mut Interrupts,
    instructions: &str,
) -> Result<(), ClientError> {
    let mut params = json!({"sessionId": turn.session_id});
    if !instructions.is_empty() {
        params["instructions"] = json!(instructions);
    }
    // A compaction may take as long as a turn.
    let mut handle = turn.handle.clone();
    handle.set_timeout(PROMPT_TIMEOUT);
    let answer = RefCell::new(Value::Null);
    let call = async {
        let r = handle.call_name(COMPACT, params).await?;
        let outcome =
            serde_json::from_value::<Outcome>(r["outcome"].clone()).unwrap_or(Outcome::Completed);
        let content = r["error"].as_str().unwrap_or_default().to_string();
        *answer.borrow_mut() = r;
        Ok(Ending { outcome, content })
    };
    match turn.command(events, interrupts, call).await {
        Ok(()) => {}
        Err(e @ ClientError::Rpc(_)) => {
            turn.ui.error(&failure(COMPACT, &e));
            return Ok(());
        }
        Err(e) => return Err(e),
    }
    // What it did was shown by its `context_compacted` event; a compaction with nothing
    // old enough to summarize has none.
    let r = answer.into_inner();
    if r["outcome"] == "completed" && r["summarizedMessages"] == 0 {
        turn.ui
            .note("nothing to compact yet: the context holds only the most recent turns");
    }
    Ok(())
}

/// The turn `n` prompts back (1 = the last one), from the transcript; `Err` says why not.
async fn turn_back(handle: &ClientHandle, session_id: &str, n: u32) -> Result<String, String> {
    let mut turns: Vec<String> = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut params = json!({"sessionId": session_id, "limit": REWIND_PAGE});
        if let Some(seq) = before {
            params["beforeSeq"] = json!(seq);
        }
        let page = handle
            .call_name(MESSAGES, params)
            .await
            .map_err(|e| failure(MESSAGES, &e))?;
        let rows = page["messages"].as_array().cloned().unwrap_or_default();
        for row in rows.iter().rev() {
            if row["role"] != "user" {
                continue;
            }
            let Some(turn) = row["turnId"].as_str() else {
                continue;
            };
            if turns.last().map(String::as_str) != Some(turn) {
                turns.push(turn.to_string());
            }
            if turns.len() == n as usize {
                return Ok(turn.to_string());
            }
        }
        let first = rows.first().and_then(|r| r["seq"].as_i64());
        match first {
            Some(seq) if page["hasMore"] == true || rows.len() == REWIND_PAGE as usize => {
                before = Some(seq)
            }
            _ => break,
        }
    }
    Err(match turns.len() {
        0 => "there is no turn to rewind".to_string(),
        k => format!("the session has only {k} turns to rewind"),
    })
}

/// `/rewind [N]`: `session/rewind` to the turn N prompts back; its prompt goes back in the
/// input line (on a terminal) to be edited and sent again. Returns the turn rewound to
/// (its `session_rewound` event is then this window's own, not news).
pub async fn rewind(
    handle: &ClientHandle,
    session_id: &str,
    ui: &mut Ui,
    input: &mut Input,
    n: u32,
) -> Option<String> {
    let turn_id = match turn_back(handle, session_id, n).await {
        Ok(turn_id) => turn_id,
        Err(why) => {
            ui.note(&why);
            return None;
        }
    };
    let params = json!({"sessionId": session_id, "turnId": turn_id});
    let r = match handle.call_name(REWIND, params).await {
        Ok(r) => r,
        Err(ClientError::Rpc(e)) if e.code == code::SESSION_BUSY => {
            ui.note("a turn is running or waiting in this session: rewind once it is over");
            return None;
        }
        Err(e) => {
            ui.error(&failure(REWIND, &e));
            return None;
        }
    };
    let list = |key: &str| r[key].as_array().cloned().unwrap_or_default();
    let mut note = format!("rewound {} turn(s)", list("rewoundTurns").len());
    let restored = list("restoredFiles");
    if !restored.is_empty() {
        note.push_str(&format!("; {} files restored", restored.len()));
    }
    ui.note(&note);
    for file in list("unrestorable") {
        ui.note(&format!(
            "not restored: {} ({})",
            file["path"].as_str().unwrap_or("?"),
            file["reason"].as_str().unwrap_or("?")
        ));
    }
    for file in list("conflicts") {
        ui.note(&format!(
            "left alone: {} ({})",
            file["path"].as_str().unwrap_or("?"),
            file["reason"].as_str().unwrap_or("?")
        ));
    }
    let prompt = r["prompt"].as_str().unwrap_or("");
    if input.is_editor() {
        input.prefill(prompt);
    } else if !prompt.is_empty() {
        ui.note(&format!("the rewound prompt was: {prompt}"));
    }
    Some(turn_id)
}

#[cfg(test)]
mod tests {
    use zeroclaw_client::ErrorObject;

    use super::*;

    #[test]
    fn an_older_daemon_gets_a_clear_note() {
        let missing = ClientError::Rpc(ErrorObject::method_not_found(COMPACT));
        assert_eq!(
            failure(COMPACT, &missing),
            "this daemon does not support session/compact yet (it is older than this client)"
        );
        let busy = ClientError::Rpc(ErrorObject::session_busy("busy"));
        assert_eq!(
            failure(FORK, &busy),
            "session/fork failed: busy (code -32002)"
        );
    }
}
