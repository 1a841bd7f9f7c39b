//! Questions (`elicitation/create`, the agent's `ask_user`) forwarded to the editor that
//! the daemon may settle elsewhere (SPEC §22 "Approvals reach every face"): each is kept
//! in its session's `questions` by the daemon's question `requestId` while the editor has
//! it open, and when `ask_user_resolved` says another face answered (or it timed out, or
//! its turn went away) it is withdrawn with `$/cancel_request`, as a permission request
//! is (SPEC §25). The editor's late answer then matches nothing and is ignored, and the
//! daemon, which no longer waits, is not answered.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CLIENT_METHOD_NAMES, CreateElicitationRequest, CreateElicitationResponse,
};
use serde_json::Value;
use zeroclaw_client::ClientHandle;
use zeroclaw_client::protocol::ElicitationAction;
use zeroclaw_client::protocol::update::ElicitationResult;

use super::bridge::{Approval, Bridge};
use super::turns;

/// How long a forwarded question may wait for the editor (the daemon's own limit).
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The session and the daemon's question id of an `elicitation/create`, when it has both.
pub fn asked(params: &Value) -> Option<(String, String)> {
    let session_id = params.get("sessionId")?.as_str()?;
    let request_id = params.get("requestId")?.as_str()?;
    Some((session_id.to_owned(), request_id.to_owned()))
}

/// Forwards a question to the editor in its own task, registered so that
/// [`settled`] can withdraw it; the editor's answer (or a decline when it has none that
/// fits) goes back to the daemon.
pub fn forward(
    bridge: &Arc<Bridge>,
    client: &ClientHandle,
    id: Value,
    session_id: String,
    request_id: String,
    request: CreateElicitationRequest,
) {
    // Hold the session map while spawning so the task cannot finish (and unregister)
    // before it is registered.
    let mut sessions = bridge.sessions();
    let (task_bridge, client) = (Arc::clone(bridge), client.clone());
    let (sid, rid) = (session_id.clone(), request_id.clone());
    let task = tokio::spawn(async move {
        let announce = |editor_id: String| {
            if let Some(open) = task_bridge
                .sessions()
                .get_mut(&sid)
                .and_then(|s| s.questions.get_mut(&rid))
            {
                open.editor_id = Some(editor_id);
            }
        };
        let answer = task_bridge
            .editor
            .request_as(
                CLIENT_METHOD_NAMES.elicitation_create,
                &request,
                ELICITATION_TIMEOUT,
                announce,
            )
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<CreateElicitationResponse>(v).ok())
            .and_then(|r| serde_json::to_value(r).ok())
            .unwrap_or_else(decline);
        if let Some(session) = task_bridge.sessions().get_mut(&sid) {
            session.questions.remove(&rid);
        }
        let _ = client.respond(id, Ok(answer)).await;
    });
    let open = Approval {
        task: task.abort_handle(),
        editor_id: None,
    };
    match sessions.get_mut(&session_id) {
        Some(session) => {
            session.questions.insert(request_id, open);
        }
        // Not a session the editor follows: the question still goes to the editor, it
        // just cannot be withdrawn.
        None => drop(open),
    }
}

/// `ask_user_resolved`: the question is settled; the editor's copy is withdrawn.
pub async fn settled(bridge: &Bridge, session_id: &str, request_id: &str) {
    let open = bridge
        .sessions()
        .get_mut(session_id)
        .and_then(|s| s.questions.remove(request_id));
    if let Some(open) = open {
        tracing::debug!("question {request_id} of {session_id} settled elsewhere");
        turns::withdraw(bridge, session_id, vec![open]).await;
    }
}

fn decline() -> Value {
    serde_json::to_value(ElicitationResult {
        action: ElicitationAction::Decline,
        content: None,
    })
    .unwrap_or(Value::Null)
}
