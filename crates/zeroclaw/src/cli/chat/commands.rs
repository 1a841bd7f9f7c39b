//! The chat's session commands (SPEC §18 "Clients"): `/title TEXT`, `/fork`, `/compact
//! [instructions]` and `/rewind [N]`, each one typed daemon call (the method table's
//! params and result). A daemon that does not have the method (-32601: older than this
//! client) gets a clear note, not an error code.

use std::cell::RefCell;

use zeroclaw_client::protocol::compact::{CompactParams, CompactResult};
use zeroclaw_client::protocol::history::{ForkParams, RewindParams, SetTitleParams};
use zeroclaw_client::protocol::session::MessagesParams;
use zeroclaw_client::protocol::{Method, Role, call, code};
use zeroclaw_client::{ClientError, ClientHandle, Events, Outcome, PROMPT_TIMEOUT};

use super::input::{Input, Interrupts};
use super::turn::{Ending, Turn};
use super::ui::{Ui, message};

/// Transcript rows read per page while looking for the turn to rewind to.
const REWIND_PAGE: u32 = 200;

/// The note for a failed session command.
fn failure(method: Method, e: &ClientError) -> String {
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
    let params = SetTitleParams {
        session_id: session_id.to_string().into(),
        mode: None,
        title: text.to_string(),
    };
    match handle.call_typed::<call::SessionSetTitle>(&params).await {
        Ok(r) => ui.note(&format!("title: {}", r.title)),
        Err(e) => ui.error(&failure(Method::SessionSetTitle, &e)),
    }
}

/// `/fork`: `session/fork` of the last completed turn; the new session's id, to continue in.
pub async fn fork(handle: &ClientHandle, session_id: &str, ui: &mut Ui) -> Option<String> {
    let params = ForkParams {
        session_id: session_id.to_string().into(),
        mode: None,
        turn_id: None,
    };
    match handle.call_typed::<call::SessionFork>(&params).await {
        Ok(r) => {
            let id = r.session_id.into_string();
            ui.note(&format!(
                "forked {session_id} into {id} ({} messages); this window goes on in {id}",
                r.message_count
            ));
            Some(id)
        }
        Err(e) => {
            ui.error(&failure(Method::SessionFork, &e));
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
    let params = CompactParams {
        session_id: turn.session_id.to_string().into(),
        mode: None,
        instructions: (!instructions.is_empty()).then(|| instructions.to_string()),
    };
    // A compaction may take as long as a turn.
    let handle = turn.handle;
    let answer: RefCell<Option<CompactResult>> = RefCell::new(None);
    let call = async {
        let r = handle
            .call_typed_within::<call::SessionCompact>(&params, PROMPT_TIMEOUT)
            .await?;
        let ending = Ending {
            outcome: r.outcome,
            content: r.error.clone().unwrap_or_default(),
        };
        *answer.borrow_mut() = Some(r);
        Ok(ending)
    };
    match turn.command(events, interrupts, call).await {
        Ok(()) => {}
        // Refused, or an answer that is not a compaction's: said, and the chat goes on.
        Err(e @ (ClientError::Rpc(_) | ClientError::Unexpected(_))) => {
            turn.ui.error(&failure(Method::SessionCompact, &e));
            return Ok(());
        }
        Err(e) => return Err(e),
    }
    // What it did was shown by its `context_compacted` event; a compaction with nothing
    // old enough to summarize has none.
    let Some(r) = answer.into_inner() else {
        return Ok(());
    };
    if r.outcome == Outcome::Completed && r.summarized_messages == 0 {
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
        let params = MessagesParams {
            session_id: session_id.to_string().into(),
            mode: None,
            limit: Some(REWIND_PAGE),
            before_seq: before,
            include_rewound: None,
        };
        let page = handle
            .call_typed::<call::SessionMessages>(&params)
            .await
            .map_err(|e| failure(Method::SessionMessages, &e))?;
        let rows = page.messages;
        for row in rows.iter().rev() {
            if row.role != Role::User {
                continue;
            }
            let Some(turn) = row.turn_id.as_deref() else {
                continue;
            };
            if turns.last().map(String::as_str) != Some(turn) {
                turns.push(turn.to_string());
            }
            if turns.len() == n as usize {
                return Ok(turn.to_string());
            }
        }
        let first = rows.first().map(|r| r.seq);
        match first {
            Some(seq) if page.has_more == Some(true) || rows.len() == REWIND_PAGE as usize => {
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
    restore_files: bool,
) -> Option<String> {
    let turn_id = match turn_back(handle, session_id, n).await {
        Ok(turn_id) => turn_id,
        Err(why) => {
            ui.note(&why);
            return None;
        }
    };
    let params = RewindParams {
        session_id: session_id.to_string().into(),
        mode: None,
        turn_id: turn_id.clone().into(),
        restore_files: Some(restore_files),
        force: None,
    };
    let r = match handle.call_typed::<call::SessionRewind>(&params).await {
        Ok(r) => r,
        Err(ClientError::Rpc(e)) if e.code == code::SESSION_BUSY => {
            ui.note("a turn is running or waiting in this session: rewind once it is over");
            return None;
        }
        Err(e) => {
            ui.error(&failure(Method::SessionRewind, &e));
            return None;
        }
    };
    let mut note = format!("rewound {} turn(s)", r.rewound_turns.len());
    if !restore_files {
        note.push_str("; files kept as they are");
    } else if !r.restored_files.is_empty() {
        // Which files came back (SPEC §22).
        note.push_str(&format!(
            "; files restored: {}",
            r.restored_files.join(", ")
        ));
    }
    ui.note(&note);
    for file in &r.unrestorable {
        ui.note(&format!("not restored: {} ({})", file.path, file.reason));
    }
    for file in &r.conflicts {
        ui.note(&format!("left alone: {} ({})", file.path, file.reason));
    }
    let prompt = r.prompt.as_str();
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
        let missing = ClientError::Rpc(ErrorObject::method_not_found("session/compact"));
        assert_eq!(
            failure(Method::SessionCompact, &missing),
            "this daemon does not support session/compact yet (it is older than this client)"
        );
        let busy = ClientError::Rpc(ErrorObject::session_busy("busy"));
        assert_eq!(
            failure(Method::SessionFork, &busy),
            "session/fork failed: busy (code -32002)"
        );
    }
}
