//! Turns driven by the editor: `session/prompt` (one running prompt per session, answered
//! with a stop reason once the daemon's turn ends), the `session/cancel` notification, and
//! the approval round trip (`approval_request` → `session/request_permission` →
//! `session/approve`), including withdrawing open permission requests with
//! `$/cancel_request` on cancel and when the approval is settled elsewhere (SPEC §25).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_client_protocol_schema::v1::ErrorCode as AcpCode;
use agent_client_protocol_schema::v1::{
    AGENT_METHOD_NAMES, CLIENT_METHOD_NAMES, CancelNotification, CancelRequestNotification,
    PROTOCOL_LEVEL_METHOD_NAMES, PermissionOption, PermissionOptionKind, PromptRequest,
    PromptResponse, RequestId, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, StopReason, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;
use tokio::sync::oneshot;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::session::{
    ApproveParams, SessionPromptParams, SessionRef, TurnResult,
};
use zeroclaw_client::{Decision, Method, PROMPT_TIMEOUT};
use zeroclaw_rpc::{ErrorObject, code};

use super::bridge::{Approval, Bridge, Turn, decode};
use super::{daemon, info, prompt, updates};

/// How long the editor may take to answer a permission request (the daemon itself
/// rejects after 120 s, so this only bounds a silent editor).
const PERMISSION_TIMEOUT: Duration = Duration::from_secs(130);
/// How long a prompt's answer waits for the turn's last updates to be written first.
const LAST_UPDATES_WAIT: Duration = Duration::from_secs(2);

static SERIAL: AtomicU64 = AtomicU64::new(1);

fn not_found(session_id: &str) -> ErrorObject {
    daemon::session_not_found(session_id)
}

/// `session/prompt`: checks run here, in order with the editor's other requests; the turn
/// itself runs in a task that answers the request when it ends.
pub async fn prompt(bridge: &Arc<Bridge>, id: Value, params: Option<Value>) {
    if let Some((session_id, title)) = title_prompt(bridge, params.as_ref()) {
        let outcome = info::set_title(bridge, &session_id, &title)
            .await
            .and_then(|()| {
                serde_json::to_value(PromptResponse::new(StopReason::EndTurn))
                    .map_err(|e| ErrorObject::internal(e.to_string()))
            });
        return bridge.editor.respond(&id, outcome).await;
    }
    match start(bridge, params) {
        Ok((session_id, daemon_params, serial, done)) => {
            let bridge = Arc::clone(bridge);
            tokio::spawn(async move {
                let outcome = run(&bridge, &session_id, daemon_params, serial, done).await;
                bridge.editor.respond(&id, outcome).await;
            });
        }
        Err(e) => bridge.editor.respond(&id, Err(e)).await,
    }
}

/// A prompt that is `/title TEXT` in a session the editor opened: (session, title).
fn title_prompt(bridge: &Bridge, params: Option<&Value>) -> Option<(String, String)> {
    let req: PromptRequest = serde_json::from_value(params?.clone()).ok()?;
    let text = prompt::translate(&req.prompt).ok()?.text;
    let title = info::title_command(&text)?.to_owned();
    let session_id = req.session_id.0.to_string();
    bridge
        .sessions()
        .contains_key(&session_id)
        .then_some((session_id, title))
}

type Started = (String, SessionPromptParams, u64, oneshot::Receiver<()>);

fn start(bridge: &Bridge, params: Option<Value>) -> Result<Started, ErrorObject> {
    let req: PromptRequest = decode(AGENT_METHOD_NAMES.session_prompt, params)?;
    let session_id = req.session_id.0.to_string();
    let translated = prompt::translate(&req.prompt)?;
    let mut sessions = bridge.sessions();
    let session = sessions
        .get_mut(&session_id)
        .ok_or_else(|| not_found(&session_id))?;
    if session.turn.is_some() {
        return Err(ErrorObject::invalid_request(format!(
            "a prompt is already running in session {session_id}"
        )));
    }
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = oneshot::channel();
    session.turn = Some(Turn {
        serial,
        prompt: Some(translated.text.clone()),
        turn_id: None,
        cancelled: false,
        done: Some(tx),
    });
    let params = translated.params(&session_id);
    Ok((session_id, params, serial, rx))
}

async fn run(
    bridge: &Arc<Bridge>,
    session_id: &str,
    params: SessionPromptParams,
    serial: u64,
    done: oneshot::Receiver<()>,
) -> Result<Value, ErrorObject> {
    let answer: Result<TurnResult, ErrorObject> = match bridge.link().await {
        Ok(link) => link
            .client
            .call_typed_within::<call::SessionPrompt>(&params, PROMPT_TIMEOUT)
            .await
            .map_err(|e| bridge.failed(&link, e)),
        Err(e) => Err(e),
    };
    if answer.is_ok() {
        // The daemon sends turn_complete just before its answer: let the router forward
        // every update of the turn before the editor sees the stop reason.
        let _ = tokio::time::timeout(LAST_UPDATES_WAIT, done).await;
    }
    let (turn, open) = finish(bridge, session_id, serial);
    withdraw(bridge, session_id, open).await;
    let cancelled = turn.as_ref().is_some_and(|t| t.cancelled);
    let stop = prompt::stop_reason(&answer?, cancelled)?;
    serde_json::to_value(PromptResponse::new(stop))
        .map_err(|e| ErrorObject::internal(e.to_string()))
}

/// Ends the session's turn `serial`, with the permission requests still open (to withdraw).
fn finish(bridge: &Bridge, session_id: &str, serial: u64) -> (Option<Turn>, Vec<Approval>) {
    let mut sessions = bridge.sessions();
    let Some(session) = sessions.get_mut(session_id) else {
        return (None, Vec::new());
    };
    if session.turn.as_ref().is_none_or(|t| t.serial != serial) {
        return (None, Vec::new());
    }
    let open = session.approvals.drain().map(|(_, a)| a).collect();
    (session.turn.take(), open)
}

/// Withdraws permission requests: their tasks stop waiting, and the editor is told with
/// `$/cancel_request` for each request it was sent (SPEC §25); its answer, if one still
/// comes, matches nothing and is ignored.
pub async fn withdraw(bridge: &Bridge, session_id: &str, approvals: Vec<Approval>) {
    for approval in approvals {
        approval.task.abort();
        if let Some(id) = approval.editor_id {
            tracing::debug!("withdrawing permission request {id} of {session_id}");
            let note = CancelRequestNotification::new(RequestId::Str(id));
            bridge
                .editor
                .notify(PROTOCOL_LEVEL_METHOD_NAMES.cancel_request, &note)
                .await;
        }
    }
}

/// Called by the event router when a session's daemon turn `turn_id` ended (its
/// `turn_complete` has been forwarded); only the end of the editor's own turn matters.
pub fn turn_completed(bridge: &Bridge, session_id: &str, turn_id: Option<&str>) {
    if let Some(turn) = bridge
        .sessions()
        .get_mut(session_id)
        .and_then(|s| s.turn.as_mut())
        .filter(|t| t.turn_id.is_some() && t.turn_id.as_deref() == turn_id)
        && let Some(done) = turn.done.take()
    {
        let _ = done.send(());
    }
}

/// Whether a `user_message` (turn `turn_id`, `text`, maybe `truncated`) is the editor's
/// own running prompt: its text, while that prompt waits for its turn. The first match is
/// taken, and its turn remembered as the editor's.
pub fn is_own_prompt(
    bridge: &Bridge,
    session_id: &str,
    turn_id: Option<&str>,
    text: &str,
    truncated: bool,
) -> bool {
    let mut sessions = bridge.sessions();
    let Some(turn) = sessions.get_mut(session_id).and_then(|s| s.turn.as_mut()) else {
        return false;
    };
    let mine = turn
        .prompt
        .as_deref()
        .is_some_and(|own| own == text || (truncated && own.starts_with(text)));
    if mine {
        turn.prompt = None;
        turn.turn_id = turn_id.map(str::to_string);
    }
    mine
}

/// The `session/cancel` notification: the daemon cancels the turn, open permission
/// requests of the turn are withdrawn (the daemon is answered `reject` for each), and the
/// pending prompt answers `cancelled`. Never answered, errors included.
pub async fn cancel(bridge: &Arc<Bridge>, params: Option<Value>) {
    let Ok(req) = decode::<CancelNotification>(AGENT_METHOD_NAMES.session_cancel, params) else {
        tracing::warn!("ignoring a malformed session/cancel");
        return;
    };
    let session_id = req.session_id.0.to_string();
    let open: Vec<(String, Approval)> = {
        let mut sessions = bridge.sessions();
        let Some(session) = sessions.get_mut(&session_id) else {
            return;
        };
        let Some(turn) = session.turn.as_mut() else {
            tracing::debug!(
                "{method} for {session_id}: no prompt running",
                method = AGENT_METHOD_NAMES.session_cancel
            );
            return;
        };
        turn.cancelled = true;
        session.approvals.drain().collect()
    };
    let (withdrawn, open): (Vec<String>, Vec<Approval>) = open.into_iter().unzip();
    withdraw(bridge, &session_id, open).await;
    let bridge = Arc::clone(bridge);
    tokio::spawn(async move {
        let params = SessionRef {
            session_id: session_id.clone().into(),
            mode: None,
        };
        if let Err(e) = bridge.send::<call::SessionCancel>(&params).await
            && e.code != daemon::acp_code(AcpCode::ResourceNotFound)
        {
            tracing::warn!("{} for {session_id}: {}", Method::SessionCancel, e.message);
        }
        for request_id in withdrawn {
            approve(&bridge, &session_id, &request_id, Decision::Reject).await;
        }
    });
}

async fn approve(bridge: &Arc<Bridge>, session_id: &str, request_id: &str, decision: Decision) {
    let params = ApproveParams {
        session_id: session_id.into(),
        request_id: request_id.to_owned(),
        decision,
        replacement: None,
        raise_by: None,
        mode: None,
    };
    if let Err(e) = bridge.send::<call::SessionApprove>(&params).await {
        // -32602: no longer pending (answered elsewhere, timed out or cancelled).
        if e.code != code::INVALID_PARAMS {
            tracing::warn!("{} {request_id}: {}", Method::SessionApprove, e.message);
        }
    }
}

/// The tool call an approval is about (the `tool_call` update that preceded it).
pub struct AskedTool {
    pub tool_call_id: String,
    pub name: String,
    pub raw_input: Value,
}

fn permission_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(
            Decision::AllowOnce.as_str(),
            "Allow once",
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            Decision::AllowAlways.as_str(),
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    ]
}

/// The daemon decision for the editor's answer; anything but an allow option rejects.
fn decision(answer: Result<Value, zeroclaw_rpc::PeerError>) -> Decision {
    let outcome = answer
        .ok()
        .and_then(|v| serde_json::from_value::<RequestPermissionResponse>(v).ok())
        .map(|r| r.outcome);
    match outcome {
        Some(RequestPermissionOutcome::Selected(s)) => match Decision::parse(&s.option_id.0) {
            Some(allow @ (Decision::AllowOnce | Decision::AllowAlways)) => allow,
            _ => Decision::Reject,
        },
        _ => Decision::Reject,
    }
}

/// An `approval_request`: asks the editor with `session/request_permission` and answers
/// the daemon with its choice. Runs in its own task, registered with the session's turn so
/// a cancel can withdraw it.
pub fn ask_permission(
    bridge: &Arc<Bridge>,
    session_id: String,
    request_id: String,
    tool: AskedTool,
) {
    let fields = ToolCallUpdateFields::new()
        .title(updates::tool_title(&tool.name, &tool.raw_input))
        .kind(updates::tool_kind(&tool.name))
        .status(ToolCallStatus::Pending)
        .raw_input(tool.raw_input);
    let request = RequestPermissionRequest::new(
        session_id.clone(),
        ToolCallUpdate::new(tool.tool_call_id, fields),
        permission_options(),
    );
    // Hold the session map while spawning so the task cannot finish (and unregister)
    // before it is registered.
    let mut sessions = bridge.sessions();
    let task_bridge = Arc::clone(bridge);
    let (sid, rid) = (session_id.clone(), request_id.clone());
    let task = tokio::spawn(async move {
        let announce = |id: String| {
            if let Some(open) = task_bridge
                .sessions()
                .get_mut(&sid)
                .and_then(|s| s.approvals.get_mut(&rid))
            {
                open.editor_id = Some(id);
            }
        };
        let answer = task_bridge
            .editor
            .request_as(
                CLIENT_METHOD_NAMES.session_request_permission,
                &request,
                PERMISSION_TIMEOUT,
                announce,
            )
            .await;
        let decision = decision(answer);
        if let Some(session) = task_bridge.sessions().get_mut(&sid) {
            session.approvals.remove(&rid);
        }
        approve(&task_bridge, &sid, &rid, decision).await;
    });
    let approval = Approval {
        task: task.abort_handle(),
        editor_id: None,
    };
    match sessions.get_mut(&session_id) {
        Some(session) => {
            session.approvals.insert(request_id, approval);
        }
        None => task.abort(),
    }
}

/// The daemon resolved an approval (answered from another client, timed out, turn
/// cancelled): the editor's question is moot; it is withdrawn (SPEC §25).
pub async fn approval_resolved(bridge: &Bridge, session_id: &str, request_id: &str) {
    let open = bridge
        .sessions()
        .get_mut(session_id)
        .and_then(|s| s.approvals.remove(request_id));
    if let Some(open) = open {
        withdraw(bridge, session_id, vec![open]).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn permission_answers() {
        let selected = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(decision(selected("allow_once")), Decision::AllowOnce);
        assert_eq!(decision(selected("allow_always")), Decision::AllowAlways);
        assert_eq!(decision(selected("reject_once")), Decision::Reject);
        assert_eq!(decision(selected("reject_with_edit")), Decision::Reject);
        assert_eq!(decision(selected("bogus")), Decision::Reject);
        assert_eq!(
            decision(Ok(json!({"outcome": {"outcome": "cancelled"}}))),
            Decision::Reject
        );
        assert_eq!(decision(Ok(json!({"nonsense": 1}))), Decision::Reject);
        assert_eq!(
            decision(Err(zeroclaw_rpc::PeerError::Timeout)),
            Decision::Reject
        );
        let options = serde_json::to_value(permission_options()).unwrap();
        assert_eq!(
            options,
            json!([
                {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            ])
        );
    }
}
