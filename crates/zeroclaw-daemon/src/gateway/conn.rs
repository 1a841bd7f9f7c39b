//! One gateway connection (SPEC §20): reads HTTP/1.1 requests off the socket (keep-alive and
//! pipelining: one head after another, in order) and answers each by its route — the
//! dashboard's files, `/healthz`, `POST /rpc`, the REST routes under `/api/v1/` (SPEC
//! §23.2: [`super::rest`]), `POST /webhooks/NAME` (SPEC §23.1) — or hands the socket to the WebSocket
//! transport when the request is an upgrade on `/` or `/rpc` (or to the ACP bridge on
//! `/acp`, SPEC §25). A request whose `Host` does
//! not name the gateway gets 421 first, whatever its route ([`super::host`]).
//!
//! Every wait ends: until a request authenticates (a bearer on `POST /rpc`, or the
//! WebSocket's `initialize`), every request head must be in within 10 s of the TCP accept
//! (SPEC §17), so a peer that trickles a header or idles holds its unauthenticated slot
//! no longer than that; once authenticated, it may idle 10 s between requests. A body has
//! 30 s, a response 10 s to be written.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::acp;
use super::assets;
use super::http::{self, HeadError, RequestHead, Response};
use super::peer::{Peer, Settings, WRITE_WITHIN};
use super::post::{self, PostState};
use super::rest;
use super::upgrade;
use super::webhook;
use crate::connection::INITIALIZE_WITHIN;
use crate::state::Daemon;

/// Idle time allowed between requests once the connection has authenticated.
const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(10);
/// What one request came to.
enum Next {
    /// Answer, then read the next request (unless the response or the client closes).
    Answer(Response),
    /// The socket went to the WebSocket transport, or is done.
    Done,
}

/// Serves one connection until it closes, times out, or is upgraded.
pub(crate) async fn serve<S>(
    daemon: Arc<Daemon>,
    mut stream: S,
    peer: Peer,
    settings: Arc<Settings>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Peer {
        addr,
        admission,
        accepted_at,
    } = peer;
    let mut buf = Vec::new();
    let mut state = PostState::new(addr, admission);
    loop {
        let deadline = match state.is_authenticated() {
            false => accepted_at + INITIALIZE_WITHIN,
            true => Instant::now() + KEEP_ALIVE_IDLE,
        };
        let read = tokio::select! {
            read = tokio::time::timeout_at(deadline, http::read_head(&mut stream, &mut buf)) => read,
            () = daemon.shutdown.cancelled() => break,
        };
        let head = match read {
            Ok(Ok(head)) => head,
            Ok(Err(HeadError::TooLarge)) => {
                let r = Response::text(431, "request head too large").closing();
                let _ = send(&mut stream, &r, false, false).await;
                break;
            }
            Ok(Err(HeadError::Malformed)) => {
                let r = Response::text(400, "not an HTTP/1.1 request").closing();
                let _ = send(&mut stream, &r, false, false).await;
                break;
            }
            Ok(Err(HeadError::Closed | HeadError::Io)) => break,
            Err(_) => {
                tracing::debug!(peer = %addr, "closing: no complete request in time");
                break;
            }
        };
        let keep_alive = head.keep_alive();
        let head_only = head.method == "HEAD";
        // Every route, the upgrade included, answers only a Host that names it.
        if let Err(r) = settings.hosts.check(&head) {
            tracing::info!(peer = %addr, host = ?head.header("host"), "misdirected request (Host)");
            let _ = send(&mut stream, &r, false, head_only).await;
            break;
        }
        if upgrade::is_upgrade(&head) {
            let Some(admission) = state.take_for_upgrade() else {
                // Upgrading a connection that already authenticated a bearer: refused.
                let r = Response::text(400, "upgrade on a fresh connection").closing();
                let _ = send(&mut stream, &r, false, false).await;
                break;
            };
            let peer = Peer {
                addr,
                admission,
                accepted_at,
            };
            let leftover = std::mem::take(&mut buf);
            if acp::is_acp(&head) {
                acp::serve(daemon, stream, head, leftover, peer, &settings).await;
            } else {
                upgrade::upgrade(daemon, stream, head, leftover, peer, &settings).await;
            }
            return;
        }
        let next = route(&daemon, &mut stream, &mut buf, &head, &mut state).await;
        let Next::Answer(response) = next else { break };
        // A request whose body was not read leaves the stream unusable: close after it.
        let reads_body =
            post::reads_body(&head) || rest::reads_body(&head) || webhook::reads_body(&head);
        let body_left = !reads_body && head.body_length() != Ok(0);
        let keep = keep_alive && !response.close && !body_left && !daemon.shutdown.is_cancelled();
        if send(&mut stream, &response, keep, head_only).await.is_err() || !keep {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
    state.finish();
}

/// Writes a response within [`WRITE_WITHIN`].
async fn send<S: AsyncWrite + Unpin>(
    stream: &mut S,
    response: &Response,
    keep_alive: bool,
    head_only: bool,
) -> Result<(), ()> {
    match tokio::time::timeout(WRITE_WITHIN, response.write(stream, keep_alive, head_only)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// Answers one request that is not an upgrade.
async fn route<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    buf: &mut Vec<u8>,
    head: &RequestHead,
    state: &mut PostState,
) -> Next
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let path = head.path();
    let method = head.method.as_str();
    let read_only = matches!(method, "GET" | "HEAD");
    if let Some(name) = webhook::name_of(path) {
        return match webhook::handle(daemon, stream, buf, head, name).await {
            Some(response) => Next::Answer(response),
            None => Next::Done,
        };
    }
    match path {
        "/rpc" if method == "POST" => match post::handle(daemon, stream, buf, head, state).await {
            Some(response) => Next::Answer(response),
            None => Next::Done,
        },
        "/rpc" => Next::Answer(
            Response::text(405, "POST a JSON-RPC request, or upgrade to a WebSocket")
                .with_header("Allow", "POST"),
        ),
        "/healthz" if read_only => Next::Answer(Response::text(200, "ok")),
        "/healthz" => Next::Answer(not_allowed()),
        _ if rest::is_rest(head) => match rest::handle(daemon, stream, buf, head, state).await {
            Some(response) => Next::Answer(response),
            None => Next::Done,
        },
        _ => match assets::lookup(path) {
            Some(asset) if read_only => Next::Answer(Response::new(
                200,
                asset.content_type,
                http::Body::Static(asset.content),
            )),
            Some(_) => Next::Answer(not_allowed()),
            None => Next::Answer(Response::text(404, "not found")),
        },
    }
}

fn not_allowed() -> Response {
    Response::text(405, "method not allowed").with_header("Allow", "GET, HEAD")
}
