//! The WebSocket transport (SPEC §10): a TCP listener (TLS via rustls when a certificate is
//! configured, mandatory off loopback) whose connections are upgraded at path `/` and then
//! served by the same connection loop as the local socket. Each text message is one
//! JSON-RPC message; a binary message is refused with -32600 and the connection stays open;
//! a message over 8 MiB closes the connection with status 1009. An upgrade carrying an
//! `Origin` header is refused with HTTP 403 unless that origin is allowed (cross-site
//! WebSocket hijacking).
//!
//! A TCP connection takes a slot of `[limits] unauthenticated_ws` as it is accepted (none
//! left: it is closed at once) and keeps it until `initialize` names its principal; TLS,
//! upgrade and `initialize` must all finish within 10 s of the accept (SPEC §17).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use zeroclaw_config::Wss;
use zeroclaw_rpc::MAX_FRAME_BYTES;

use crate::connection::{self, INITIALIZE_WITHIN};
use crate::read_gate::{Gated, ReadGate};
use crate::registry::Admission;
use crate::server::{AcceptBackoff, next_connection_id, wait_for_connections};
use crate::state::Daemon;
use crate::transport::{
    BoxFuture, FrameSink, FrameSource, Incoming, PRE_INITIALIZE_FRAME_BYTES, PeerIdentity,
    TransportKind,
};

/// A bound WebSocket listener, ready to serve.
pub struct WsListener {
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    allowed_origins: Arc<Vec<String>>,
}

impl WsListener {
    /// Binds `[wss]`; refuses a non-loopback address without TLS.
    pub async fn bind(wss: &Wss) -> Result<WsListener, String> {
        let tls = match (wss.cert_path.is_empty(), wss.key_path.is_empty()) {
            (true, true) => None,
            (false, false) => Some(tls_acceptor(&wss.cert_path, &wss.key_path)?),
            _ => return Err("wss: cert_path and key_path must be set together".into()),
        };
        if tls.is_none() && !wss.is_loopback() {
            return Err(format!(
                "wss: refusing to serve {} without TLS: set wss.cert_path and wss.key_path, or bind a loopback address",
                wss.bind
            ));
        }
        let addr = format!("{}:{}", wss.bind, wss.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("wss: cannot listen on {addr}: {e}"))?;
        let scheme = if tls.is_some() { "wss" } else { "ws" };
        tracing::info!(
            "websocket listening on {scheme}://{}/",
            listener.local_addr().map_or(addr, |a| a.to_string())
        );
        Ok(WsListener {
            listener,
            tls,
            allowed_origins: Arc::new(wss.allowed_origins.clone()),
        })
    }
}

fn tls_acceptor(cert_path: &str, key_path: &str) -> Result<TlsAcceptor, String> {
    use rustls::pki_types::pem::{self, PemObject};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    // Opening or reading a file names it; a malformed PEM names the file and the problem.
    let fail = |path: &str, e: pem::Error| match e {
        pem::Error::Io(e) => format!("wss: cannot read {path}: {e}"),
        e => format!("wss: {path}: {e}"),
    };
    let certs = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| fail(cert_path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(cert_path, e))?;
    if certs.is_empty() {
        return Err(format!("wss: {cert_path}: no certificate found"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| match e {
        pem::Error::NoItemsFound => format!("wss: {key_path}: no private key found"),
        e => fail(key_path, e),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("wss: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("wss: {cert_path}: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accepts WebSocket connections until shutdown; returns once they have all ended (or
/// the shutdown bound has passed).
pub async fn serve(daemon: Arc<Daemon>, ws: WsListener) {
    let WsListener {
        listener,
        tls,
        allowed_origins,
    } = ws;
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = daemon.shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        match accepted {
            Ok((tcp, addr)) => {
                backoff.reset();
                let accepted_at = Instant::now();
                let limits = daemon.config.current().limits.clone();
                let Some(admission) = daemon.connections.admit_unauthenticated(
                    limits.unauthenticated_ws as usize,
                    limits.connections_total as usize,
                ) else {
                    // Too many peers that have not authenticated: hang up at once.
                    tracing::debug!(peer = %addr, "refused: unauthenticated_ws limit");
                    drop(tcp);
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let daemon = Arc::clone(&daemon);
                let tls = tls.clone();
                let origins = Arc::clone(&allowed_origins);
                let deadline = accepted_at + INITIALIZE_WITHIN;
                connections.spawn(async move {
                    let peer = Peer {
                        addr,
                        admission,
                        accepted_at,
                    };
                    match tls {
                        Some(tls) => match tokio::time::timeout_at(deadline, tls.accept(tcp)).await
                        {
                            Ok(Ok(stream)) => upgrade(daemon, stream, peer, origins).await,
                            Ok(Err(e)) => tracing::info!(peer = %addr, "tls handshake failed: {e}"),
                            Err(_) => tracing::info!(peer = %addr, "tls handshake timed out"),
                        },
                        None => upgrade(daemon, tcp, peer, origins).await,
                    }
                });
            }
            Err(e) => backoff.wait(&e).await,
        }
    }
    drop(listener);
    wait_for_connections(&mut connections).await;
}

/// An accepted TCP peer on its way to the connection loop.
struct Peer {
    addr: SocketAddr,
    /// Its slot in the unauthenticated pool.
    admission: Admission,
    accepted_at: Instant,
}

fn refuse(status: StatusCode, why: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(why.to_string()));
    *response.status_mut() = status;
    response
}

// The upgrade callback's `Result<Response, ErrorResponse>` is tungstenite's signature.
#[allow(clippy::result_large_err)]
async fn upgrade<S>(daemon: Arc<Daemon>, stream: S, peer: Peer, origins: Arc<Vec<String>>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Peer {
        addr,
        admission,
        accepted_at,
    } = peer;
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        if req.uri().path() != "/" {
            return Err(refuse(StatusCode::NOT_FOUND, "the websocket endpoint is /"));
        }
        if let Some(origin) = req.headers().get("origin") {
            let allowed = origin
                .to_str()
                .is_ok_and(|o| origins.iter().any(|a| a == o));
            if !allowed {
                return Err(refuse(StatusCode::FORBIDDEN, "origin not allowed"));
            }
        }
        Ok(resp)
    };
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_FRAME_BYTES);
    config.max_frame_size = Some(MAX_FRAME_BYTES);
    let gate = Arc::new(ReadGate::default());
    let stream = Gated::new(stream, Arc::clone(&gate));
    let upgraded = tokio::time::timeout_at(
        accepted_at + INITIALIZE_WITHIN,
        tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)),
    )
    .await;
    let socket = match upgraded {
        Ok(Ok(socket)) => socket,
        Ok(Err(e)) => return tracing::info!(peer = %addr, "websocket upgrade refused: {e}"),
        Err(_) => return tracing::info!(peer = %addr, "websocket upgrade timed out"),
    };
    let label = format!("ws:{}:{}", addr.ip(), addr.port());
    let id = next_connection_id();
    tracing::info!(conn = id, peer = %label, "accepted connection");
    let identity = PeerIdentity {
        label,
        uid: None,
        kind: TransportKind::WebSocket,
    };
    let close = Arc::new(Mutex::new(None));
    // The upgrade request has its own limits; the allowance is for the first message.
    gate.message_delivered();
    let (tx, rx) = socket.split();
    let source = WsSource {
        rx,
        close: Arc::clone(&close),
        gate,
        ended: false,
    };
    let sink = WsSink { tx, close };
    connection::serve(daemon, id, identity, admission, accepted_at, source, sink).await;
}

type CloseSlot = Arc<Mutex<Option<CloseFrame>>>;

struct WsSource<S> {
    rx: SplitStream<WebSocketStream<Gated<S>>>,
    /// How the sink should close the connection when this side decides to end it.
    close: CloseSlot,
    /// The read allowance before `initialize`.
    gate: Arc<ReadGate>,
    /// The stream failed for passing that allowance; nothing more is read.
    ended: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> FrameSource for WsSource<S> {
    fn lift_frame_limit(&mut self) {
        self.gate.open();
    }

    fn next_frame(&mut self) -> BoxFuture<'_, io::Result<Option<Incoming>>> {
        Box::pin(async {
            if self.ended {
                return Ok(None);
            }
            loop {
                match self.rx.next().await {
                    Some(Ok(Message::Text(text))) => {
                        self.gate.message_delivered();
                        return Ok(Some(Incoming::Message(text.as_bytes().to_vec())));
                    }
                    // Over the allowance before `initialize`: answered as an oversize
                    // frame, then the connection ends (the library cannot resume).
                    Some(Err(_)) if self.gate.overflowed() => {
                        self.ended = true;
                        let frame = CloseFrame {
                            code: CloseCode::Size,
                            reason: format!(
                                "message before initialize exceeds {PRE_INITIALIZE_FRAME_BYTES} bytes"
                            )
                            .into(),
                        };
                        *self.close.lock().unwrap_or_else(|p| p.into_inner()) = Some(frame);
                        return Ok(Some(Incoming::Oversize));
                    }
                    Some(Ok(Message::Binary(_))) => return Ok(Some(Incoming::Binary)),
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => return Ok(None),
                    Some(Err(WsError::Capacity(e))) => {
                        tracing::info!("closing a websocket: {e}");
                        let frame = CloseFrame {
                            code: CloseCode::Size,
                            reason: format!("message exceeds {MAX_FRAME_BYTES} bytes").into(),
                        };
                        *self.close.lock().unwrap_or_else(|p| p.into_inner()) = Some(frame);
                        return Ok(None);
                    }
                    Some(Err(e)) => return Err(io::Error::other(e)),
                }
            }
        })
    }
}

struct WsSink<S> {
    tx: SplitSink<WebSocketStream<Gated<S>>, Message>,
    close: CloseSlot,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> FrameSink for WsSink<S> {
    fn send_lines<'a>(&'a mut self, lines: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async move {
            // An item may hold several lines; each line is one message. Our lines are
            // compact JSON: valid UTF-8, never a raw newline inside a message. A message
            // is a slice of the shared line, not a copy.
            for item in lines {
                for line in item.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    let text = Utf8Bytes::try_from(item.slice_ref(line))
                        .unwrap_or_else(|_| String::from_utf8_lossy(line).into_owned().into());
                    self.tx
                        .feed(Message::Text(text))
                        .await
                        .map_err(io::Error::other)?;
                }
            }
            self.tx.flush().await.map_err(io::Error::other)
        })
    }

    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            let frame = self.close.lock().unwrap_or_else(|p| p.into_inner()).take();
            let frame = frame.unwrap_or(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            });
            let _ = self.tx.send(Message::Close(Some(frame))).await;
            let _ = self.tx.close().await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::tls_acceptor;

    fn err(cert: &str, key: &str) -> String {
        match tls_acceptor(cert, key) {
            Ok(_) => panic!("accepted {cert} / {key}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unusable_pem_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem at all\n").unwrap();
        let broken = dir.path().join("broken.pem");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
        let (empty, broken) = (empty.to_str().unwrap(), broken.to_str().unwrap());
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        assert!(
            err(missing, empty).starts_with(&format!("wss: cannot read {missing}: ")),
            "{}",
            err(missing, empty)
        );
        assert_eq!(
            err(empty, empty),
            format!("wss: {empty}: no certificate found")
        );
        assert!(err(broken, empty).starts_with(&format!("wss: {broken}: ")));
        // A certificate-shaped section only, no key: the key file is named.
        let cert = dir.path().join("cert.pem");
        std::fs::write(
            &cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let cert = cert.to_str().unwrap();
        assert_eq!(
            err(cert, empty),
            format!("wss: {empty}: no private key found")
        );
        assert!(err(cert, missing).starts_with(&format!("wss: cannot read {missing}: ")));
    }
}
