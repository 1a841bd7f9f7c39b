//! The WebSocket transport (SPEC §10): an upgraded gateway connection ([`crate::gateway`]
//! answers the HTTP upgrade) served by the same connection loop as the local socket. Each
//! text message is one JSON-RPC message; a binary message is refused with -32600 and the
//! connection stays open; a message over 8 MiB closes the connection with status 1009.
//!
//! The connection keeps the slot of `[limits] unauthenticated_ws` it took at the TCP accept
//! until `initialize` names its principal; `initialize` must finish within 10 s of that
//! accept (SPEC §17).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use zeroclaw_rpc::MAX_FRAME_BYTES;

use crate::connection;
use crate::read_gate::{Gated, ReadGate};
use crate::registry::Admission;
use crate::server::next_connection_id;
use crate::state::Daemon;
use crate::transport::{
    BoxFuture, FrameSink, FrameSource, Incoming, PRE_INITIALIZE_FRAME_BYTES, PeerIdentity,
    TransportKind,
};

/// Serves an upgraded WebSocket until it closes: the connection loop over its messages.
/// `gate` is the read allowance before `initialize` the socket's stream draws on.
pub(crate) async fn serve<S>(
    daemon: Arc<Daemon>,
    socket: WebSocketStream<Gated<S>>,
    gate: Arc<ReadGate>,
    addr: SocketAddr,
    admission: Admission,
    accepted_at: Instant,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let label = format!("ws:{}:{}", addr.ip(), addr.port());
    let id = next_connection_id();
    tracing::info!(conn = id, peer = %label, "accepted connection");
    let identity = PeerIdentity {
        label,
        uid: None,
        kind: TransportKind::WebSocket,
        ip: Some(addr.ip()),
        lineage: crate::lineage::Lineage::Outside,
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
