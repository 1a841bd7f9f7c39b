//! ACP at the gateway's `/acp` (SPEC §25): a WebSocket upgrade on that path whose text
//! messages are the editor's ACP JSON-RPC frames, served by the same bridge as `zeroclaw
//! acp` ([`zeroclaw_acp::Agent`]). The bridge reaches the daemon through an in-process
//! connection served by the ordinary connection loop as a WebSocket peer, and authenticates
//! it at `initialize` with the editor's token: the upgrade's `Authorization: Bearer` (a
//! pairing or dashboard token, checked before the upgrade as `POST /rpc` checks its
//! bearer: 401 when refused, counted as a failed login), or the token of ACP's
//! `authenticate`, which must come within 10 s of the TCP accept. The connection itself
//! is opened at ACP `initialize`, which tells whether the editor answers questions.
//! So the principal rules, grants and limits are exactly those of every WebSocket client.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_util::sync::CancellationToken;
use zeroclaw_acp::{Agent, Connect, Halves};
use zeroclaw_rpc::MAX_FRAME_BYTES;

use super::http::{self, RequestHead, Response};
use super::peer::{Peer, Settings, WRITE_WITHIN};
use super::upgrade;
use crate::auth::{AuthError, Presented};
use crate::connection::{self, INITIALIZE_WITHIN};
use crate::login_rate::Attempt;
use crate::registry::Admission;
use crate::server::next_connection_id;
use crate::state::Daemon;
use crate::transport::{
    BoxFuture, FrameSource, Incoming, PeerIdentity, StreamSink, StreamSource, TransportKind,
};

/// The path ACP is served on.
pub(crate) const PATH: &str = "/acp";
/// The agent an `/acp` editor's new sessions run.
const AGENT: &str = "default";
/// Bytes in flight between the bridge and its in-process daemon connection.
const PIPE_BYTES: usize = 256 * 1024;

/// Whether a request is the upgrade of `/acp`.
pub(crate) fn is_acp(head: &RequestHead) -> bool {
    head.path() == PATH && upgrade::is_upgrade(head)
}

/// The token of `Authorization: Bearer TOKEN`, if sent.
fn bearer(head: &RequestHead) -> Option<String> {
    let value = head.header("authorization")?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

/// Answers the upgrade of `/acp` and serves the editor until the WebSocket closes.
pub(crate) async fn serve<S>(
    daemon: Arc<Daemon>,
    mut stream: S,
    head: RequestHead,
    leftover: Vec<u8>,
    peer: Peer,
    settings: &Settings,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Peer {
        addr,
        admission,
        accepted_at,
    } = peer;
    let accept = match upgrade::accept_key(&head, settings) {
        Ok(accept) => accept,
        Err(response) => return refuse(stream, addr, response).await,
    };
    let identity = PeerIdentity {
        label: format!("ws:{}:{}", addr.ip(), addr.port()),
        uid: None,
        kind: TransportKind::WebSocket,
        ip: Some(addr.ip()),
        lineage: crate::lineage::Lineage::Outside,
    };
    let cut = CancellationToken::new();
    let connect = connector(&daemon, identity, admission, accepted_at, cut.clone());
    let token = bearer(&head);
    if let Some(token) = &token
        && let Err(response) = check_bearer(&daemon, addr, token)
    {
        return refuse(stream, addr, response).await;
    }
    let (agent, mut outbox) = Agent::in_process(connect, token.clone(), AGENT.to_owned());
    let switching = http::switching_protocols(&[
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", &accept),
    ]);
    let written = tokio::time::timeout(WRITE_WITHIN, async {
        stream.write_all(&switching).await?;
        stream.flush().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        cut.cancel();
        return tracing::info!(peer = %addr, "acp upgrade: the answer could not be written");
    }
    tracing::info!(peer = %addr, bearer = token.is_some(), "acp editor connected");
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_FRAME_BYTES);
    config.max_frame_size = Some(MAX_FRAME_BYTES);
    let socket =
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    let (mut tx, mut rx) = socket.split();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let writer = tokio::spawn(async move {
        loop {
            let line = tokio::select! {
                line = outbox.next() => line,
                () = stopped.cancelled() => None,
            };
            let Some(line) = line else { break };
            let text =
                String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned();
            if tx.send(Message::Text(text.into())).await.is_err() {
                break;
            }
            outbox.delivered(1);
        }
        // Ends the close handshake (or starts it, when this side ends).
        let _ = tx.close().await;
    });
    loop {
        // Until its daemon connection is up (ACP `initialize` with a bearer, else
        // `authenticate`), the editor has what any WebSocket peer has to `initialize`:
        // 10 s from the TCP accept.
        let deadline = match agent.is_authenticated() {
            true => None,
            false => Some(accepted_at + INITIALIZE_WITHIN),
        };
        let next = tokio::select! {
            next = rx.next() => next,
            () = until(deadline) => {
                tracing::info!(peer = %addr, "acp: not authenticated in time");
                break;
            }
            () = daemon.shutdown.cancelled() => break,
        };
        match next {
            Some(Ok(Message::Text(text))) => agent.handle(text.as_bytes()).await,
            Some(Ok(Message::Binary(_))) => agent.handle(b"binary messages are not JSON-RPC").await,
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(_))) | None => break,
            Some(Err(e)) => {
                tracing::info!(peer = %addr, "acp websocket: {e}");
                break;
            }
        }
    }
    agent.finish().await;
    // The in-process connection ends as if its client had gone; the bridge's tasks end
    // with it.
    cut.cancel();
    stop.cancel();
    if tokio::time::timeout(WRITE_WITHIN, writer).await.is_err() {
        tracing::debug!(peer = %addr, "acp: the close could not be written");
    }
}

/// Checks an upgrade's bearer as `POST /rpc` does (the address's failed logins first):
/// the refusal to send, if refused.
fn check_bearer(daemon: &Daemon, addr: SocketAddr, token: &str) -> Result<(), Response> {
    let failures = &daemon.gateway.failures;
    let attempt = Attempt {
        ip: addr.ip(),
        credential: Some(token),
        conn: None,
    };
    if let Err(wait) = failures.check(&attempt) {
        let secs = wait.as_secs().max(1);
        let why = format!(
            "too many failed logins from {}: try again in {secs} s",
            addr.ip()
        );
        return Err(Response::text(429, &why).with_header("Retry-After", secs.to_string()));
    }
    match daemon.principal(&Presented::WebSocket { token: Some(token) }) {
        Ok(_) => Ok(()),
        Err(e @ (AuthError::Token(_) | AuthError::Login(_) | AuthError::NoToken)) => {
            failures.failed(&attempt);
            Err(Response::text(401, &e.to_string()).with_header("WWW-Authenticate", "Bearer"))
        }
        Err(e) => Err(Response::text(403, &e.to_string())),
    }
}

/// Answers a refused upgrade; the connection closes after it.
async fn refuse<S: AsyncWrite + Unpin>(
    mut stream: S,
    addr: std::net::SocketAddr,
    response: Response,
) {
    tracing::info!(peer = %addr, status = response.status, "acp upgrade refused");
    let _ = tokio::time::timeout(WRITE_WITHIN, response.write(&mut stream, false, false)).await;
}

async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Opens the bridge's daemon connection: the connection loop served over an in-process
/// pipe, as the WebSocket peer `identity`. The first takes the TCP connection's slot; a
/// later one (after a token was refused) takes a new unauthenticated slot, as a new
/// WebSocket peer would.
fn connector(
    daemon: &Arc<Daemon>,
    identity: PeerIdentity,
    admission: Admission,
    accepted_at: Instant,
    cut: CancellationToken,
) -> Connect {
    let daemon = Arc::clone(daemon);
    let slot = Mutex::new(Some(admission));
    Arc::new(move || -> Result<Halves, String> {
        let first = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (admission, accepted_at) = match first {
            Some(admission) => (admission, accepted_at),
            None => {
                let limits = daemon.config.current().limits.clone();
                let admission = daemon
                    .connections
                    .admit_unauthenticated(
                        limits.unauthenticated_ws as usize,
                        limits.connections_total as usize,
                    )
                    .ok_or_else(|| "too many connections are waiting to authenticate".to_owned())?;
                (admission, Instant::now())
            }
        };
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (read, write) = tokio::io::split(theirs);
        let source = Cut {
            inner: StreamSource::new(read),
            cut: cut.clone(),
        };
        let id = next_connection_id();
        tracing::info!(conn = id, peer = %identity.label, "accepted acp connection");
        tokio::spawn(connection::serve(
            Arc::clone(&daemon),
            id,
            identity.clone(),
            admission,
            accepted_at,
            source,
            StreamSink::new(write),
        ));
        let (read, write) = tokio::io::split(ours);
        Ok((Box::pin(read), Box::pin(write)))
    })
}

/// The in-process connection's frames, ending when the editor's WebSocket does.
struct Cut<R> {
    inner: StreamSource<R>,
    cut: CancellationToken,
}

impl<R: AsyncRead + Send + Unpin + 'static> FrameSource for Cut<R> {
    fn next_frame(&mut self) -> BoxFuture<'_, io::Result<Option<Incoming>>> {
        Box::pin(async {
            tokio::select! {
                frame = self.inner.next_frame() => frame,
                () = self.cut.cancelled() => Ok(None),
            }
        })
    }

    fn has_buffered(&self) -> bool {
        self.inner.has_buffered()
    }

    fn lift_frame_limit(&mut self) {
        self.inner.lift_frame_limit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        let head = |auth: &str| RequestHead {
            method: "GET".into(),
            target: PATH.into(),
            minor_version: 1,
            headers: vec![("authorization".into(), auth.as_bytes().to_vec())],
        };
        assert_eq!(bearer(&head("Bearer abc")).as_deref(), Some("abc"));
        assert_eq!(bearer(&head("bearer  abc ")).as_deref(), Some("abc"));
        assert_eq!(bearer(&head("Basic abc")), None);
        assert_eq!(bearer(&head("Bearer ")), None);
    }
}
