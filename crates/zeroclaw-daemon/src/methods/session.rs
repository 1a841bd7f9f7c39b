//! `session/*` handlers (SPEC §7): typed params in (decoded once by [`crate::dispatch`],
//! both spellings), the [`SessionManager`](zeroclaw_sessions::session::SessionManager) called, a typed
//! result out. Grants were checked by the dispatcher; ownership and agent permission are
//! checked by the manager.

use std::sync::Arc;

use zeroclaw_protocol::Decision;
use zeroclaw_protocol::compact::{CompactParams, CompactResult};
use zeroclaw_protocol::session::{
    ApproveParams, ApproveResult, CancelResult, CloseResult, DeleteResult, KillResult, ListParams,
    ListResult, MessagesParams, MessagesResult, SessionNewParams, SessionNewResult,
    SessionPromptParams, SessionRef, TurnResult,
};
use zeroclaw_protocol::stream::{SubscribeParams, SubscribeResult, UnsubscribeResult};
use zeroclaw_protocol::update::PromptAttachment;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::session::lifecycle::approval_decision;
use zeroclaw_sessions::session::link::ClientLink;
use zeroclaw_sessions::session::mcp::check_session_servers;
use zeroclaw_sessions::session::open::NewRequest;
use zeroclaw_sessions::session::prompted::Incoming;
use zeroclaw_sessions::session::stream::Cursor;
use zeroclaw_store::Mode;

use crate::answering::Answering;
use crate::auth::Principal;
use crate::caller::ConnectionContext;
use crate::methods::file;
use crate::methods::mode;
use crate::state::Daemon;
use crate::wire_error;

/// `session/new {agentAlias, sessionId?, cwd?, mode?, mcpServers?}`.
pub(crate) async fn new(
    daemon: &Daemon,
    principal: &Principal,
    p: SessionNewParams,
) -> Result<SessionNewResult, ErrorObject> {
    let mcp_servers = p.mcp_servers.unwrap_or_default();
    if !mcp_servers.is_empty() {
        // They run as the daemon's user (SPEC §16).
        if !principal.admin {
            return Err(ErrorObject::forbidden(format!(
                "principal {} may not start MCP servers (mcpServers needs an admin)",
                principal.id
            ))
            .with_data(serde_json::json!({"resource": "mcpServers"})));
        }
        check_session_servers(&mcp_servers).map_err(wire_error::session)?;
    }
    let req = NewRequest {
        agent_alias: p.agent_alias,
        session_id: p.session_id.map(Into::into),
        cwd: p.cwd,
        mode: mode(p.mode).unwrap_or(Mode::Acp),
        mcp_servers,
    };
    daemon
        .sessions
        .new_session(principal, &daemon.config.current(), req)
        .await
        .map_err(wire_error::session)
}

/// `session/prompt {sessionId, prompt, mode?, attachments?}`: attachments are stored first
/// (the same commit step as `file/attach`), their markers follow the prompt text. The
/// turn's `user_message` shows the text and the attachments apart (SPEC §18).
pub(crate) async fn prompt(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    p: SessionPromptParams,
    answering: &Answering,
) -> Result<TurnResult, ErrorObject> {
    let sessions = &daemon.sessions;
    let mode = mode(p.mode);
    let mut prompt = p.prompt.into_text();
    let text_len = prompt.len();
    let mut shown = Vec::new();
    if let Some(attachments) = p.attachments.filter(|a| !a.is_empty()) {
        // Stored through the same commit step as file/attach; the markers follow
        // the prompt, one per line.
        let key = sessions.resolve_key(&p.session_id, mode);
        // A persisted session is brought back first, as the prompt would.
        sessions
            .live_or_rehydrate(principal, &daemon.config.current(), &key)
            .await
            .map_err(wire_error::session)?;
        let target = zeroclaw_sessions::files::commit::target_of(&daemon.sessions, principal, &key)
            .map_err(wire_error::files)?;
        let items = file::decode_inputs(conn, principal, attachments).await?;
        let names: Vec<Option<String>> = items.iter().map(|i| i.filename.clone()).collect();
        let stored = file::store(daemon, conn, &target, items).await?;
        for (stored, name) in stored.into_iter().zip(names) {
            prompt.push('\n');
            prompt.push_str(&stored.marker);
            // A file sent without a name is shown by the name it is stored under.
            let filename = name.unwrap_or_else(|| {
                std::path::Path::new(&stored.workspace_path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            shown.push(PromptAttachment {
                filename,
                marker: stored.marker,
            });
        }
    }
    sessions
        .prompt(
            principal,
            Arc::clone(conn) as Arc<dyn ClientLink>,
            daemon.config.current(),
            &p.session_id,
            mode,
            Incoming {
                text: prompt,
                text_len,
                attachments: shown,
                by: conn.unattended.as_ref().map(|u| u.by.clone()),
                turn_id: conn.unattended.as_ref().and_then(|u| u.turn_id.clone()),
            },
            answering,
        )
        .await
        .map_err(wire_error::session)
}

/// `session/compact {sessionId, mode?, instructions?}` (SPEC §18): queued like a prompt.
pub(crate) async fn compact(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    p: CompactParams,
    answering: &Answering,
) -> Result<CompactResult, ErrorObject> {
    daemon
        .sessions
        .compact(
            principal,
            Arc::clone(conn) as Arc<dyn ClientLink>,
            daemon.config.current(),
            &p.session_id,
            mode(p.mode),
            p.instructions,
            answering,
        )
        .await
        .map_err(wire_error::session)
}

/// `session/cancel {sessionId, mode?}`: this connection's last prompt, or a later turn.
pub(crate) fn cancel(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    p: SessionRef,
) -> Result<CancelResult, ErrorObject> {
    daemon
        .sessions
        .cancel(principal, conn, &p.session_id, mode(p.mode))
        .map_err(wire_error::session)
}

/// `session/approve {sessionId, requestId, decision, replacement?, mode?}`; the
/// connection's client name goes into `approval_resolved.decidedBy` (SPEC §22).
pub(crate) fn approve(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    p: ApproveParams,
) -> Result<ApproveResult, ErrorObject> {
    if matches!(p.decision, Decision::Raise | Decision::Stop) {
        return answer_budget(daemon, conn, principal, p);
    }
    let decision = approval_decision(p.decision, p.replacement);
    daemon
        .sessions
        .approve(
            principal,
            conn.client_name(),
            &p.session_id,
            mode(p.mode),
            &p.request_id,
            decision,
        )
        .map_err(wire_error::session)
}

/// `session/approve` with `raise` (and `raiseBy` > 0) or `stop`: the answer to a
/// `budget_request` (SPEC §24.2).
fn answer_budget(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    p: ApproveParams,
) -> Result<ApproveResult, ErrorObject> {
    let raise_by = match (p.decision, p.raise_by) {
        (Decision::Raise, Some(by)) if by.is_finite() && by > 0.0 => Some(by),
        (Decision::Raise, _) => {
            return Err(ErrorObject::invalid_params(
                "raiseBy: required with decision raise, a number > 0",
            ));
        }
        _ => None,
    };
    daemon
        .sessions
        .answer_budget(
            principal,
            conn.client_name(),
            &p.session_id,
            mode(p.mode),
            &p.request_id,
            raise_by,
        )
        .map_err(wire_error::session)
}

/// `session/close {sessionId, mode?}`.
pub(crate) async fn close(
    daemon: &Daemon,
    principal: &Principal,
    p: SessionRef,
) -> Result<CloseResult, ErrorObject> {
    daemon
        .sessions
        .close(principal, &p.session_id, mode(p.mode))
        .await
        .map_err(wire_error::session)
}

/// `session/kill {sessionId, mode?}`.
pub(crate) async fn kill(
    daemon: &Daemon,
    principal: &Principal,
    p: SessionRef,
) -> Result<KillResult, ErrorObject> {
    daemon
        .sessions
        .kill(principal, &p.session_id, mode(p.mode))
        .await
        .map_err(wire_error::session)
}

/// `session/delete {sessionId, mode?}`.
pub(crate) async fn delete(
    daemon: &Daemon,
    principal: &Principal,
    p: SessionRef,
) -> Result<DeleteResult, ErrorObject> {
    daemon
        .sessions
        .delete(principal, &p.session_id, mode(p.mode))
        .await
        .map_err(wire_error::session)
}

/// `session/subscribe {sessionId, mode?, turnId?, afterEventSeq?}`.
pub(crate) async fn subscribe(
    daemon: &Daemon,
    conn: &Arc<ConnectionContext>,
    principal: &Principal,
    p: SubscribeParams,
    answering: &Answering,
) -> Result<SubscribeResult, ErrorObject> {
    let cursor = Cursor {
        turn_id: p.turn_id.map(Into::into),
        after_event_seq: p.after_event_seq.unwrap_or(0),
    };
    let link = Arc::clone(conn) as Arc<dyn ClientLink>;
    daemon
        .sessions
        .subscribe(
            principal,
            &daemon.config.current(),
            link,
            &p.session_id,
            mode(p.mode),
            cursor,
            answering,
        )
        .await
        .map_err(wire_error::session)
}

/// `session/unsubscribe {sessionId, mode?}`.
pub(crate) fn unsubscribe(
    daemon: &Daemon,
    conn: &ConnectionContext,
    principal: &Principal,
    p: SessionRef,
) -> Result<UnsubscribeResult, ErrorObject> {
    daemon
        .sessions
        .unsubscribe(principal, conn, &p.session_id, mode(p.mode))
        .map_err(wire_error::session)
}

/// `session/list {mode?, limit?, cursor?, search?, cwd?}` (`cwd` absolute, SPEC §22).
pub(crate) async fn list(
    daemon: &Daemon,
    principal: &Principal,
    p: ListParams,
) -> Result<ListResult, ErrorObject> {
    if let Some(cwd) = p.cwd.as_deref()
        && !std::path::Path::new(cwd).is_absolute()
    {
        return Err(ErrorObject::invalid_params(format!(
            "cwd: expected an absolute directory, got {cwd:?}"
        )));
    }
    daemon
        .sessions
        .list(
            principal,
            mode(p.mode),
            p.limit,
            p.cursor.as_deref(),
            p.search,
            p.cwd,
        )
        .await
        .map_err(wire_error::session)
}

/// `session/messages {sessionId, mode?, limit?, beforeSeq?, includeRewound?}`.
pub(crate) async fn messages(
    daemon: &Daemon,
    principal: &Principal,
    p: MessagesParams,
) -> Result<MessagesResult, ErrorObject> {
    daemon
        .sessions
        .messages(
            principal,
            &p.session_id,
            mode(p.mode),
            p.limit,
            p.before_seq,
            p.include_rewound.unwrap_or(false),
        )
        .await
        .map_err(wire_error::session)
}
