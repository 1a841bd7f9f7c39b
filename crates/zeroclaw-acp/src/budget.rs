//! A `budget_request` (SPEC §24.2) on an editor's session becomes a permission request:
//! "Raise" (by as much again as the limit) or "Stop", asked about a pseudo tool call named
//! after the request. The editor's choice answers the daemon with `session/approve`
//! (`raise` with `raiseBy`, or `stop`; anything else, a timeout included, stops). Registered
//! like a tool approval, so a cancel or a `budget_resolved` withdraws it.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CLIENT_METHOD_NAMES, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use zeroclaw_client::protocol::call;
use zeroclaw_client::protocol::session::ApproveParams;
use zeroclaw_client::{Decision, Method};
use zeroclaw_rpc::code;

use super::bridge::{Approval, Bridge};

/// Longer than the daemon waits, so the daemon's own timeout settles an unanswered one.
const SLACK: Duration = Duration::from_secs(10);

/// What the daemon asked.
pub struct BudgetAsk {
    pub request_id: String,
    pub budget: String,
    pub used: f64,
    pub limit: f64,
    pub timeout_secs: u64,
}

/// What "Raise" raises the budget by: as much again as the limit (at least 1).
fn raise_by(limit: f64) -> f64 {
    limit.max(1.0)
}

fn options(limit: f64) -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(
            Decision::Raise.as_str(),
            format!("Raise by {}", raise_by(limit)),
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            Decision::Stop.as_str(),
            "Stop the turn",
            PermissionOptionKind::RejectOnce,
        ),
    ]
}

/// The editor's answer: raise (by how much) or stop (`None`).
fn answer(reply: Result<Value, zeroclaw_rpc::PeerError>, limit: f64) -> Option<f64> {
    let outcome = reply
        .ok()
        .and_then(|v| serde_json::from_value::<RequestPermissionResponse>(v).ok())
        .map(|r| r.outcome);
    match outcome {
        Some(RequestPermissionOutcome::Selected(s)) if s.option_id.0.as_ref() == "raise" => {
            Some(raise_by(limit))
        }
        _ => None,
    }
}

/// Asks the editor about a `budget_request` in a task of its own.
pub fn ask(bridge: &Arc<Bridge>, session_id: String, ask: BudgetAsk) {
    let fields = ToolCallUpdateFields::new()
        .title(format!(
            "Budget {}: {} used of {}",
            ask.budget, ask.used, ask.limit
        ))
        .kind(ToolKind::Other)
        .status(ToolCallStatus::Pending);
    let request = RequestPermissionRequest::new(
        session_id.clone(),
        ToolCallUpdate::new(ask.request_id.clone(), fields),
        options(ask.limit),
    );
    let wait = Duration::from_secs(ask.timeout_secs) + SLACK;
    let mut sessions = bridge.sessions();
    let task_bridge = Arc::clone(bridge);
    let (sid, rid, limit) = (session_id.clone(), ask.request_id.clone(), ask.limit);
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
        let reply = task_bridge
            .editor
            .request_as(
                CLIENT_METHOD_NAMES.session_request_permission,
                &request,
                wait,
                announce,
            )
            .await;
        let raise = answer(reply, limit);
        if let Some(session) = task_bridge.sessions().get_mut(&sid) {
            session.approvals.remove(&rid);
        }
        let params = ApproveParams {
            session_id: sid.as_str().into(),
            request_id: rid.clone(),
            decision: if raise.is_some() {
                Decision::Raise
            } else {
                Decision::Stop
            },
            replacement: None,
            raise_by: raise,
            mode: None,
        };
        if let Err(e) = task_bridge.send::<call::SessionApprove>(&params).await
            && e.code != code::INVALID_PARAMS
        {
            tracing::warn!("{} {rid}: {}", Method::SessionApprove, e.message);
        }
    });
    let approval = Approval {
        task: task.abort_handle(),
        editor_id: None,
    };
    match sessions.get_mut(&session_id) {
        Some(session) => {
            session.approvals.insert(ask.request_id, approval);
        }
        None => task.abort(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn raise_or_stop() {
        let selected = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(answer(selected("raise"), 20.0), Some(20.0));
        assert_eq!(answer(selected("stop"), 20.0), None);
        assert_eq!(answer(selected("allow_once"), 20.0), None);
        assert_eq!(
            answer(Ok(json!({"outcome": {"outcome": "cancelled"}})), 20.0),
            None
        );
        assert_eq!(answer(Err(zeroclaw_rpc::PeerError::Timeout), 0.5), None);
        let o = serde_json::to_value(options(0.25)).unwrap_or_default();
        assert_eq!(o[0]["optionId"], "raise");
        assert_eq!(o[0]["name"], "Raise by 1");
        assert_eq!(o[1]["kind"], "reject_once");
    }
}
