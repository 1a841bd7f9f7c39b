//! `POST /webhooks/NAME` (SPEC §23.1): a signed delivery starts a turn.
//!
//! The body is read only when its declared length is at most 1 MiB (else 413 at once, the
//! connection closed unread); what it comes to is [`zeroclaw_webhooks`]' decision —
//! signature (401, an unknown name alike), event (422), rate (429), a delivery id seen in
//! the last 24 h (200 with the first delivery's `{sessionId, turnId}`) — and an accepted
//! delivery answers 202 `{sessionId, turnId}` at once. Its turn then runs in the
//! background through the daemon's one request path ([`crate::request::answer`]):
//! `session/new` (resume or create its session), `session/configure` when the webhook sets
//! an autonomy, then `session/prompt`, each as a call of a caller context that runs as
//! the webhook's `run_as` ([`Unattended`]), with that principal's grants, the session order, the
//! in-flight limit and the panic guard of every other call. What became of the turn is
//! recorded on the delivery (`webhook/deliveries`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use zeroclaw_config::policy;
use zeroclaw_rpc::{Id, Request};
use zeroclaw_webhooks::{Accepted, MAX_BODY_BYTES, Verdict};

use super::http::{self, BodyError, RequestHead, Response};
use crate::caller::{ConnectionContext, Handshake, Unattended};
use crate::outbound::{self, Outbound};
use crate::request::{self, Call, Front};
use crate::server::next_connection_id;
use crate::state::Daemon;
use crate::transport::{BoxFuture, FrameSink, PeerIdentity, TransportKind};

/// Time for a body to arrive once its head has.
const BODY_WITHIN: Duration = Duration::from_secs(30);

/// The webhook a path names: `/webhooks/NAME`.
pub(crate) fn name_of(path: &str) -> Option<&str> {
    path.strip_prefix("/webhooks/")
        .filter(|n| !n.is_empty() && !n.contains('/'))
}

/// Whether this route reads the request's body.
pub(crate) fn reads_body(head: &RequestHead) -> bool {
    head.method == "POST" && name_of(head.path()).is_some()
}

/// Answers one request to `/webhooks/NAME`; `None` when the connection must close without
/// an answer (the body did not arrive).
pub(crate) async fn handle<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    name: &str,
) -> Option<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    if head.method != "POST" {
        return Some(Response::text(405, "POST a webhook delivery").with_header("Allow", "POST"));
    }
    let len = match head.body_length() {
        Ok(len) if len > MAX_BODY_BYTES => {
            let why = format!("the body exceeds {MAX_BODY_BYTES} bytes");
            return Some(Response::text(413, &why).closing());
        }
        Ok(len) => len,
        Err(BodyError::Chunked) => {
            return Some(Response::text(411, "send the body with a Content-Length").closing());
        }
        Err(BodyError::BadLength) => {
            return Some(Response::text(400, "bad Content-Length").closing());
        }
    };
    let body = match tokio::time::timeout(BODY_WITHIN, http::read_body(stream, buf, len)).await {
        Ok(Ok(body)) => body,
        _ => return None,
    };
    let config = daemon.config.current();
    let header = |n: &str| head.header(n);
    let verdict = daemon.webhooks.accept(&config, name, header, &body).await;
    Some(match verdict {
        Verdict::Refused(r) => {
            if r.status == 401 {
                tracing::info!(webhook = name, "webhook delivery refused: {}", r.message);
            }
            let response = Response::text(r.status, &r.message);
            match r.retry_after {
                Some(secs) => response.with_header("Retry-After", secs.to_string()),
                None => response,
            }
        }
        Verdict::Seen {
            session_id,
            turn_id,
        } => ids(200, session_id.as_deref(), turn_id.as_deref()),
        Verdict::Accepted(accepted) => {
            let response = ids(202, Some(&accepted.session_id), Some(&accepted.turn_id));
            tracing::info!(webhook = name, delivery = %accepted.delivery_id, session = %accepted.session_id, "webhook delivery accepted");
            tokio::spawn(run(Arc::clone(daemon), accepted));
            response
        }
    })
}

fn ids(status: u16, session_id: Option<&str>, turn_id: Option<&str>) -> Response {
    let body = json!({"sessionId": session_id, "turnId": turn_id});
    Response::json(status, body.to_string().into_bytes())
}

/// Runs an accepted delivery's turn and records how it ended.
async fn run(daemon: Arc<Daemon>, accepted: Accepted) {
    let (status, error) = match turn(&daemon, &accepted).await {
        Ok(outcome) => (outcome, None),
        Err(error) => {
            tracing::warn!(webhook = %accepted.webhook, delivery = %accepted.delivery_id, "webhook turn did not run: {error}");
            ("failed".to_owned(), Some(error))
        }
    };
    daemon.webhooks.finish(&accepted, &status, error).await;
}

/// The turn of `a`, as `a.run_as`: its outcome (`completed`, `cancelled`, `failed`).
async fn turn(daemon: &Arc<Daemon>, a: &Accepted) -> Result<String, String> {
    let limits = daemon.config.current().limits.clone();
    let key = format!("webhook:{}", a.webhook);
    let admission = daemon
        .connections
        .admit(
            Some(&key),
            limits.connections_per_principal as usize,
            limits.connections_total as usize,
        )
        .map_err(|e| e.message)?;
    let peer = PeerIdentity {
        label: key.clone(),
        uid: None,
        kind: TransportKind::WebSocket,
        ip: None,
        lineage: crate::lineage::Lineage::Outside,
    };
    let (out, rx) = Outbound::new(daemon.stall_timeout);
    let writer = tokio::spawn(outbound::run_writer(Nowhere, rx, out.clone()));
    let owner = a.run_as.as_ref().map_or_else(
        || policy::OPERATOR.to_owned(),
        |user| format!("user:{user}"),
    );
    let ctx =
        ConnectionContext::new(next_connection_id(), peer, out, admission).acting_for(Unattended {
            owner,
            by: key.clone(),
            turn_id: Some(a.turn_id.as_str().into()),
        });
    let _ = ctx.handshake.set(Handshake {
        auth_token: None,
        elicitation: false,
        client: key,
    });
    let ctx = Arc::new(ctx);
    let outcome = steps(daemon, &ctx, a).await;
    ctx.out.close();
    ctx.pending.close();
    ctx.admission
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .release();
    writer.abort();
    outcome
}

async fn steps(
    daemon: &Arc<Daemon>,
    ctx: &Arc<ConnectionContext>,
    a: &Accepted,
) -> Result<String, String> {
    let mut new = json!({"agentAlias": a.agent, "sessionId": a.session_id, "mode": "chat"});
    if !a.cwd.is_empty() {
        new["cwd"] = json!(a.cwd);
    }
    call(daemon, ctx, "session/new", new).await?;
    if let Some(autonomy) = &a.autonomy {
        let configure = json!({"sessionId": a.session_id, "mode": "chat", "autonomy": autonomy});
        call(daemon, ctx, "session/configure", configure).await?;
    }
    let prompt = json!({"sessionId": a.session_id, "mode": "chat", "prompt": a.prompt});
    let result = call(daemon, ctx, "session/prompt", prompt).await?;
    Ok(result
        .get("outcome")
        .and_then(Value::as_str)
        .unwrap_or("completed")
        .to_owned())
}

/// One call through the one request path: its result, or its error's message.
async fn call(
    daemon: &Arc<Daemon>,
    ctx: &Arc<ConnectionContext>,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let params = serde_json::value::to_raw_value(&params).map_err(|e| e.to_string())?;
    let request = Request {
        id: Some(Id::from_value(&json!(1))),
        method: method.to_owned(),
        params: Some(params),
    };
    let mut line = None;
    let deliver = |l| {
        line = Some(l);
        std::future::ready(())
    };
    request::answer(daemon, ctx, Front::Post, Call::new(request), None, deliver).await;
    let line = line.ok_or_else(|| format!("{method}: no answer"))?;
    let mut answer: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
    if let Some(error) = answer.get("error") {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(format!("{method}: {message}"));
    }
    Ok(answer
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// A sink that drops what it is given: an unattended turn has no client to show it to.
struct Nowhere;

impl FrameSink for Nowhere {
    fn send_lines<'a>(&'a mut self, _: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
