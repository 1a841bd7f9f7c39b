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

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use zeroclaw_config::policy;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_webhooks::{Accepted, MAX_BODY_BYTES, Verdict};

use super::http::{self, BodyError, RequestHead, Response};
use crate::caller::Unattended;
use crate::state::Daemon;
use crate::transport::TransportKind;
use crate::unattended::{Opening, UnattendedCaller};

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
    let by = format!("webhook:{}", a.webhook);
    let opening = Opening {
        limits_key: &by,
        label: by.clone(),
        kind: TransportKind::WebSocket,
        client: by.clone(),
        queue_of: None,
    };
    let owner = a.run_as.as_ref().map_or_else(
        || policy::OPERATOR.to_owned(),
        |user| format!("user:{user}"),
    );
    let acting = Unattended {
        owner,
        by: by.clone(),
        turn_id: Some(a.turn_id.as_str().into()),
    };
    let caller = UnattendedCaller::open(daemon, opening, acting).map_err(|e| e.message)?;
    let outcome = steps(&caller, a).await.map_err(|e| e.message);
    caller.close();
    outcome
}

async fn steps(caller: &UnattendedCaller, a: &Accepted) -> Result<String, ErrorObject> {
    let mut new = json!({"agentAlias": a.agent, "sessionId": a.session_id, "mode": "chat"});
    if !a.cwd.is_empty() {
        new["cwd"] = json!(a.cwd);
    }
    caller.call("session/new", new).await?;
    if let Some(autonomy) = &a.autonomy {
        let configure = json!({"sessionId": a.session_id, "mode": "chat", "autonomy": autonomy});
        caller.call("session/configure", configure).await?;
    }
    let prompt = json!({"sessionId": a.session_id, "mode": "chat", "prompt": a.prompt});
    let result = caller.call("session/prompt", prompt).await?;
    Ok(result
        .get("outcome")
        .and_then(Value::as_str)
        .unwrap_or("completed")
        .to_owned())
}
