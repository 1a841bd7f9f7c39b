//! What the daemon sends unasked, routed to the editor: `session/update` notifications
//! become ACP `session/update`s (or, for `approval_request`, a permission round trip), and
//! the daemon's `elicitation/create` questions are forwarded when the editor declared the
//! elicitation capability, else declined. One router task per daemon connection. Message
//! chunks get their `messageId` here: one message per turn and kind of chunk, a new one
//! after each tool call (SPEC §25).

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    CLIENT_METHOD_NAMES, CreateElicitationRequest, CreateElicitationResponse, SessionNotification,
    SessionUpdate as AcpUpdate,
};
use serde_json::Value;
use zeroclaw_client::protocol::ElicitationAction;
use zeroclaw_client::protocol::SESSION_UPDATE;
use zeroclaw_client::protocol::update::ElicitationResult;
use zeroclaw_client::{
    ClientHandle, ELICITATION_CREATE, Event, Events, ServerMessage, SessionUpdate, UpdateKind,
};
use zeroclaw_rpc::ErrorObject;

use super::bridge::Bridge;
use super::questions::{self, ELICITATION_TIMEOUT};
use super::turns::{self, AskedTool};
use super::{budget, info, updates};

/// The daemon's update type of a running tool's output (SPEC §25).
const TOOL_OUTPUT_CHUNK: &str = "tool_output_chunk";

/// Starts [`route`] for a new link in its own task (the bridge's [`Router`](super::bridge::Router)).
pub fn spawn_route(bridge: Arc<Bridge>, generation: u64, client: ClientHandle, events: Events) {
    tokio::spawn(route(bridge, generation, client, events));
}

/// Routes one connection's events until it closes, then forgets the connection.
async fn route(bridge: Arc<Bridge>, generation: u64, client: ClientHandle, mut events: Events) {
    while let Some(message) = events.recv().await {
        match Event::from_message(message) {
            Event::Update(update) => on_update(&bridge, update).await,
            Event::Elicitation(request) => {
                let params = serde_json::to_value(request.params()).unwrap_or(Value::Null);
                elicit(&bridge, &client, request.id, params)
            }
            // A question the vocabulary could not read: declined, as ACP could not carry it.
            Event::Other(ServerMessage::Request { id, method, params })
                if method == ELICITATION_CREATE =>
            {
                elicit(&bridge, &client, id, params)
            }
            Event::Other(ServerMessage::Request { id, method, .. }) => {
                let _ = client
                    .respond(id, Err(ErrorObject::method_not_found(&method)))
                    .await;
            }
            Event::Other(ServerMessage::Notification { method, params })
                if method == SESSION_UPDATE =>
            {
                on_unknown_update(&bridge, &params).await
            }
            Event::Other(ServerMessage::Notification { method, .. }) => {
                tracing::debug!("ignoring daemon notification {method}")
            }
        }
    }
    bridge.daemon.lost(generation);
}

async fn on_update(bridge: &Arc<Bridge>, update: SessionUpdate) {
    let session_id = update.session_id.into_string();
    match &update.kind {
        UpdateKind::ApprovalRequest { request_id, .. } => {
            let last = bridge
                .sessions()
                .get(&session_id)
                .and_then(|s| s.last_tool_call.clone());
            let (tool_call_id, name, raw_input) = last.unwrap_or_default();
            let tool = AskedTool {
                tool_call_id,
                name,
                raw_input,
            };
            turns::ask_permission(bridge, session_id, request_id.clone(), tool);
            return;
        }
        UpdateKind::TurnComplete { .. } => {
            turns::turn_completed(bridge, &session_id, update.turn_id.as_deref());
            // The first prompt titles a session without an update: read until known (a
            // title set later comes as `session_info`, so a turn costs no daemon call).
            let untitled = bridge
                .sessions()
                .get(&session_id)
                .is_some_and(|s| s.title.is_none());
            if untitled {
                let (bridge, session_id) = (Arc::clone(bridge), session_id.clone());
                tokio::spawn(async move { info::refresh(&bridge, &session_id).await });
            }
            return;
        }
        // A rewind may take back the prompt the title came from.
        UpdateKind::SessionRewound { .. } => {
            let (bridge, session_id) = (Arc::clone(bridge), session_id.clone());
            tokio::spawn(async move { info::refresh(&bridge, &session_id).await });
        }
        // Another client's prompt goes to the editor; its own is never sent back (SPEC §18).
        UpdateKind::UserMessage {
            text, truncated, ..
        } if turns::is_own_prompt(
            bridge,
            &session_id,
            update.turn_id.as_deref(),
            text,
            *truncated,
        ) =>
        {
            return;
        }
        UpdateKind::ToolCall {
            tool_call_id,
            name,
            raw_input,
            ..
        } => {
            if let Some(session) = bridge.sessions().get_mut(&session_id) {
                session.last_tool_call =
                    Some((tool_call_id.clone(), name.clone(), raw_input.clone()));
            }
        }
        // A title set anywhere (SPEC §25): told at once, not at the next turn's end.
        UpdateKind::SessionInfo { title, updated_at } => {
            info::told(bridge, &session_id, title.clone(), *updated_at).await;
            return;
        }
        UpdateKind::ApprovalResolved { request_id, .. }
        | UpdateKind::BudgetResolved { request_id, .. } => {
            turns::approval_resolved(bridge, &session_id, request_id).await;
            return;
        }
        // A turn paused by a budget (SPEC §24.2): the editor is asked raise or stop.
        UpdateKind::BudgetRequest {
            request_id,
            budget,
            used,
            limit,
            timeout_secs,
        } => {
            let ask = budget::BudgetAsk {
                request_id: request_id.clone(),
                budget: budget.clone(),
                used: *used,
                limit: *limit,
                timeout_secs: *timeout_secs,
            };
            budget::ask(bridge, session_id, ask);
            return;
        }
        UpdateKind::AskUserResolved { request_id, .. } => {
            questions::settled(bridge, &session_id, request_id).await;
            return;
        }
        UpdateKind::ToolResult { tool_call_id, .. } => {
            if let Some(session) = bridge.sessions().get_mut(&session_id) {
                session.outputs.done(tool_call_id);
            }
        }
        _ => {}
    }
    // A running tool's output, whether this vocabulary knows the type yet or not.
    if update.kind.update_type().as_str() == TOOL_OUTPUT_CHUNK {
        if let Ok(mut fields) = serde_json::to_value(&update.kind)
            && let Some(members) = fields.as_object_mut()
        {
            members.insert("sessionId".into(), Value::String(session_id));
            on_unknown_update(bridge, &fields).await;
        }
        return;
    }
    if let Some(acp) = updates::from_event(&update.kind) {
        let acp = stamp(bridge, &session_id, update.turn_id.as_deref(), acp);
        let note = SessionNotification::new(session_id, acp);
        bridge
            .editor
            .notify(CLIENT_METHOD_NAMES.session_update, &note)
            .await;
    }
}

/// Gives a message chunk its `messageId`: `<turn>-<n>`, `n` counting the messages of the
/// turn (a new one when the kind of chunk changes or a tool call came between).
fn stamp(bridge: &Bridge, session_id: &str, turn_id: Option<&str>, update: AcpUpdate) -> AcpUpdate {
    let turn = turn_id.unwrap_or("turn");
    let mut sessions = bridge.sessions();
    let Some(session) = sessions.get_mut(session_id) else {
        return update;
    };
    let Some(kind) = updates::chunk_kind(&update) else {
        if matches!(update, AcpUpdate::ToolCall(_))
            && let Some(message) = session.message.as_mut()
        {
            message.1 = "tool";
        }
        return update;
    };
    let n = match &session.message {
        Some((t, k, n)) if t == turn && *k == kind => *n,
        Some((t, _, n)) if t == turn => n + 1,
        _ => 1,
    };
    session.message = Some((turn.to_owned(), kind, n));
    drop(sessions);
    updates::with_message_id(update, format!("{turn}-{n}"))
}

/// A `session/update` of a type this vocabulary does not know yet: a running tool's
/// output (`tool_output_chunk`) becomes throttled `tool_call_update`s; others are ignored.
async fn on_unknown_update(bridge: &Bridge, params: &Value) {
    if params.get("type").and_then(Value::as_str) != Some(TOOL_OUTPUT_CHUNK) {
        return;
    }
    let Some(session_id) = params.get("sessionId").and_then(Value::as_str) else {
        return;
    };
    let update = bridge
        .sessions()
        .get_mut(session_id)
        .and_then(|s| s.outputs.chunk(params));
    if let Some(update) = update {
        let note = SessionNotification::new(session_id.to_owned(), update);
        bridge
            .editor
            .notify(CLIENT_METHOD_NAMES.session_update, &note)
            .await;
    }
}

/// Answers a daemon `elicitation/create`: forwarded to the editor when it can answer,
/// declined otherwise (and when the question or the answer does not fit ACP's schema).
fn elicit(bridge: &Arc<Bridge>, client: &ClientHandle, id: Value, params: Value) {
    let decline = serde_json::to_value(ElicitationResult {
        action: ElicitationAction::Decline,
        content: None,
    })
    .unwrap_or(Value::Null);
    let forward = bridge
        .elicitation
        .load(std::sync::atomic::Ordering::Relaxed);
    let asked = questions::asked(&params);
    let request = serde_json::from_value::<CreateElicitationRequest>(params);
    if forward && let (Ok(request), Some((session_id, request_id))) = (&request, asked) {
        // A question the daemon may settle elsewhere: withdrawn from the editor then.
        questions::forward(bridge, client, id, session_id, request_id, request.clone());
        return;
    }
    let (bridge, client) = (Arc::clone(bridge), client.clone());
    tokio::spawn(async move {
        let answer = match request {
            Ok(request) if forward => bridge
                .editor
                .request(
                    CLIENT_METHOD_NAMES.elicitation_create,
                    &request,
                    ELICITATION_TIMEOUT,
                )
                .await
                .ok()
                .and_then(|v| serde_json::from_value::<CreateElicitationResponse>(v).ok())
                .and_then(|r| serde_json::to_value(r).ok())
                .unwrap_or(decline),
            Ok(_) => decline,
            Err(e) => {
                tracing::warn!("declining a question ACP cannot carry: {e}");
                decline
            }
        };
        let _ = client.respond(id, Ok(answer)).await;
    });
}
