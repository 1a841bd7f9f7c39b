//! `POST /rpc` (SPEC §20): one JSON-RPC request as the body, its response as the body
//! (`application/json`, HTTP 200 also for a JSON-RPC error; 204 for a notification), under
//! `Authorization: Bearer TOKEN` — a pairing token or a dashboard session token — else 401.
//!
//! The bearer is checked before the body is read, and a refused one counts as a failed
//! login of its prefix from the peer's source ([`crate::login_rate`]: past the limit, that
//! prefix gets 429 until the window passes; other bearers are not refused for it). An
//! authenticated connection gets one caller context (its slot moves from the
//! unauthenticated pool to the token's count, as a WebSocket's does at `initialize`); the
//! call takes the same request path as every other ([`crate::request`]) and waits for its
//! result (`session/prompt`: the turn's end). Notifications the call causes are
//! written to nowhere — the context's queue is drained and dropped — unless a REST route
//! listens on the context's [`Tap`] (SPEC §23.2).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use zeroclaw_rpc::message::error_line;
use zeroclaw_rpc::{ErrorObject, Inbound, MAX_FRAME_BYTES, Request};

use super::http::{self, BodyError, RequestHead, Response};
use super::tap::Tap;

use crate::auth::{AuthError, Presented};
use crate::caller::{ConnectionContext, Handshake};
use crate::login_rate::Attempt;
use crate::outbound::{self, Outbound};
use crate::registry::Admission;
use crate::request::{self, Call, Front};
use crate::server::next_connection_id;
use crate::state::Daemon;
use crate::transport::{PeerIdentity, TransportKind};

/// Time for a body to arrive once its head has.
const BODY_WITHIN: Duration = Duration::from_secs(30);

/// What `POST /rpc` keeps per connection.
pub(crate) struct PostState {
    addr: SocketAddr,
    /// The connection's slot, until a caller context takes it.
    admission: Option<Admission>,
    /// Once a bearer was accepted: the token and the context calls run in.
    caller: Option<Caller>,
}

struct Caller {
    token: String,
    ctx: Arc<ConnectionContext>,
    /// Where the context's notifications go (nowhere unless a REST route listens).
    tap: Tap,
    writer: JoinHandle<()>,
}

impl PostState {
    pub fn new(addr: SocketAddr, admission: Admission) -> PostState {
        PostState {
            addr,
            admission: Some(admission),
            caller: None,
        }
    }

    /// Whether a bearer was accepted on this connection.
    pub fn is_authenticated(&self) -> bool {
        self.caller.is_some()
    }

    /// The caller context's tap, once a bearer was accepted.
    pub fn tap(&self) -> Option<&Tap> {
        self.caller.as_ref().map(|c| &c.tap)
    }

    /// The slot, for a WebSocket upgrade: only a connection that has not authenticated a
    /// bearer may upgrade.
    pub fn take_for_upgrade(&mut self) -> Option<Admission> {
        match self.caller {
            Some(_) => None,
            None => self.admission.take(),
        }
    }

    /// The connection is gone: it stops counting now.
    pub fn finish(self) {
        if let Some(caller) = self.caller {
            caller.ctx.out.close();
            caller.ctx.pending.close();
            caller
                .ctx
                .admission
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .release();
            caller.writer.abort();
        }
    }
}

/// Whether this route reads the request's body (others close the connection after a
/// request that has one).
pub(crate) fn reads_body(head: &RequestHead) -> bool {
    head.method == "POST" && head.path() == "/rpc"
}

/// The token of `Authorization: Bearer TOKEN`.
fn bearer(head: &RequestHead) -> Option<&str> {
    let value = head.header("authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

pub(crate) fn unauthorized(why: &str) -> Response {
    Response::text(401, why)
        .with_header("WWW-Authenticate", "Bearer")
        .closing()
}

/// Answers one `POST /rpc`; `None` when the connection must close without an answer (the
/// body did not arrive).
pub(crate) async fn handle<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    state: &mut PostState,
) -> Option<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let ctx = match authenticate(daemon, head, state) {
        Ok(ctx) => ctx,
        Err(response) => return Some(response),
    };
    let body = match read_body(stream, buf, head, state).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let line = match zeroclaw_rpc::classify(&body) {
        Inbound::Request(request) => run(daemon, &ctx, request).await,
        Inbound::Reject { id, error } => Some(error_line(&id, &error)),
        Inbound::Response(_) | Inbound::DropInvalidResponse(_) => Some(error_line(
            &Value::Null,
            &ErrorObject::invalid_request("POST /rpc takes a request, not a response"),
        )),
    };
    Some(match line {
        Some(mut line) => {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            Response::json(200, line)
        }
        None => Response::new(204, "application/json", http::Body::Static(b"")),
    })
}

/// Reads a request's body within [`MAX_FRAME_BYTES`] and [`BODY_WITHIN`]: `Err` holds the
/// response (`None`: close without one, the body did not arrive).
pub(crate) async fn read_body<S>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    state: &PostState,
) -> Result<Vec<u8>, Option<Response>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let len = match head.body_length() {
        Ok(len) if len > MAX_FRAME_BYTES => {
            let why = format!("the body exceeds {MAX_FRAME_BYTES} bytes");
            return Err(Some(Response::text(413, &why).closing()));
        }
        Ok(len) => len,
        Err(BodyError::Chunked) => {
            return Err(Some(
                Response::text(411, "send the body with a Content-Length").closing(),
            ));
        }
        Err(BodyError::BadLength) => {
            return Err(Some(Response::text(400, "bad Content-Length").closing()));
        }
    };
    match tokio::time::timeout(BODY_WITHIN, http::read_body(stream, buf, len)).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(e)) => {
            tracing::debug!(peer = %state.addr, "{}: {e}", head.path());
            Err(None)
        }
        Err(_) => {
            tracing::info!(peer = %state.addr, "{}: the body did not arrive in time", head.path());
            Err(None)
        }
    }
}

/// Checks the bearer (and the address's failed logins) and returns the caller context,
/// made on the first accepted bearer of the connection.
pub(crate) fn authenticate(
    daemon: &Arc<Daemon>,
    head: &RequestHead,
    state: &mut PostState,
) -> Result<Arc<ConnectionContext>, Response> {
    let ip = state.addr.ip();
    let token = bearer(head);
    // A connection that logged in already is not logging in again.
    if let Some(caller) = &state.caller {
        return match token {
            Some(token) if caller.token == token => Ok(Arc::clone(&caller.ctx)),
            Some(_) => Err(Response::text(400, "one bearer per connection").closing()),
            None => Err(unauthorized("Authorization: Bearer TOKEN is required")),
        };
    }
    let failures = &daemon.gateway.failures;
    let attempt = Attempt {
        ip,
        credential: token,
        conn: None,
    };
    if let Err(wait) = failures.check(&attempt) {
        let secs = wait.as_secs().max(1);
        let why = format!("too many failed logins from {ip}: try again in {secs} s");
        return Err(Response::text(429, &why)
            .with_header("Retry-After", secs.to_string())
            .closing());
    }
    let Some(token) = token else {
        return Err(unauthorized("Authorization: Bearer TOKEN is required"));
    };
    let presented = Presented::WebSocket { token: Some(token) };
    let principal = match daemon.principal(&presented) {
        Ok(principal) => principal,
        Err(e @ (AuthError::Token(_) | AuthError::Login(_) | AuthError::NoToken)) => {
            failures.failed(&attempt);
            tracing::info!(peer = %state.addr, "POST /rpc refused: {e}");
            return Err(unauthorized(&e.to_string()));
        }
        Err(e) => {
            tracing::info!(peer = %state.addr, "POST /rpc refused: {e}");
            return Err(Response::text(403, &e.to_string()).closing());
        }
    };
    let Some(mut admission) = state.admission.take() else {
        return Err(Response::text(500, "connection slot lost").closing());
    };
    let per_token = daemon.config.current().limits.connections_per_principal as usize;
    let key = format!("token:{}", zeroclaw_sessions::pairing::fingerprint(token));
    if let Err(error) = admission.assign(&key, per_token) {
        return Err(Response::text(429, &error.message).closing());
    }
    let id = next_connection_id();
    let label = format!("http:{}:{}", ip, state.addr.port());
    tracing::info!(conn = id, peer = %label, principal = %principal.id, "accepted connection (POST /rpc)");
    let peer = PeerIdentity {
        label,
        uid: None,
        kind: TransportKind::WebSocket,
        ip: Some(ip),
        lineage: crate::lineage::Lineage::Outside,
    };
    let (out, rx) = Outbound::new(daemon.stall_timeout);
    out.count_in(daemon.connections.principal_queue(&principal.id));
    let tap = Tap::default();
    let writer = tokio::spawn(outbound::run_writer(tap.sink(), rx, out.clone()));
    let ctx = Arc::new(ConnectionContext::new(id, peer, out, admission));
    let handshake = Handshake {
        auth_token: Some(token.to_owned()),
        elicitation: false,
        client: "rpc".to_owned(),
    };
    let _ = ctx.handshake.set(handshake);
    state.caller = Some(Caller {
        token: token.to_owned(),
        ctx: Arc::clone(&ctx),
        tap,
        writer,
    });
    Ok(ctx)
}

/// Runs one request in `ctx` through the one request path: its response line (none for
/// a notification).
pub(crate) async fn run(
    daemon: &Arc<Daemon>,
    ctx: &Arc<ConnectionContext>,
    request: Request,
) -> Option<Vec<u8>> {
    let mut answer = None;
    // One request per POST: no order to keep with another, so no ticket.
    let deliver = |line| {
        answer = Some(line);
        std::future::ready(())
    };
    request::answer(daemon, ctx, Front::Post, Call::new(request), None, deliver).await;
    answer
}
