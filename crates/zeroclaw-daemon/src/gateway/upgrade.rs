//! The WebSocket upgrade of a gateway request (SPEC §10, §20): on `/` or `/rpc`, with the
//! `Origin` checked (the page's own origin — same scheme, host and port as the request's
//! `Host` — always allowed, plus `wss.allowed_origins`; any other is refused with 403), and
//! answered `101` with the security headers. The socket, with whatever the client sent
//! after its request, then goes to the WebSocket transport ([`crate::ws`]).

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use zeroclaw_rpc::MAX_FRAME_BYTES;

use super::http::{self, RequestHead, Response};
use super::peer::{Peer, Settings, WRITE_WITHIN};
use crate::read_gate::{Gated, ReadGate};
use crate::state::Daemon;
use crate::ws;

/// Whether a request asks for a WebSocket (`Upgrade: websocket`).
pub(crate) fn is_upgrade(head: &RequestHead) -> bool {
    head.header_has("upgrade", "websocket")
}

/// Why an upgrade is refused, as the response to send.
fn check(head: &RequestHead, settings: &Settings) -> Result<String, Response> {
    if !matches!(head.path(), "/" | "/rpc") {
        return Err(Response::text(404, "the websocket endpoint is /rpc (or /)"));
    }
    accept_key(head, settings)
}

/// The checks of any upgrade, whatever its path (method, version, key, Origin): the
/// `Sec-WebSocket-Accept` to answer, or the refusal to send.
pub(crate) fn accept_key(head: &RequestHead, settings: &Settings) -> Result<String, Response> {
    if head.method != "GET" || !head.header_has("connection", "upgrade") {
        return Err(Response::text(400, "not a websocket upgrade"));
    }
    if head.header("sec-websocket-version") != Some("13") {
        return Err(Response::text(426, "websocket version 13 only")
            .with_header("Sec-WebSocket-Version", "13"));
    }
    let Some(key) = head.header("sec-websocket-key").filter(|k| !k.is_empty()) else {
        return Err(Response::text(400, "Sec-WebSocket-Key missing"));
    };
    if let Some(origin) = head.header("origin")
        && !origin_allowed(origin, head.header("host"), settings)
    {
        return Err(Response::text(403, "origin not allowed"));
    }
    Ok(derive_accept_key(key.as_bytes()))
}

/// The page's own origin, or one of `wss.allowed_origins` (cross-site WebSocket hijacking).
fn origin_allowed(origin: &str, host: Option<&str>, settings: &Settings) -> bool {
    let scheme = if settings.tls { "https" } else { "http" };
    let own = host.is_some_and(|host| {
        origin
            .strip_prefix(scheme)
            .and_then(|o| o.strip_prefix("://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(host))
    });
    own || settings.allowed_origins.iter().any(|a| a == origin)
}

/// Answers the upgrade and serves the WebSocket until it closes; a refused upgrade gets its
/// error response and the connection closes.
pub(crate) async fn upgrade<S>(
    daemon: Arc<Daemon>,
    mut stream: S,
    head: RequestHead,
    leftover: Vec<u8>,
    peer: Peer,
    settings: &Settings,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let accept = match check(&head, settings) {
        Ok(accept) => accept,
        Err(response) => {
            tracing::info!(peer = %peer.addr, status = response.status, "websocket upgrade refused");
            let _ =
                tokio::time::timeout(WRITE_WITHIN, response.write(&mut stream, false, false)).await;
            return;
        }
    };
    let switching = http::switching_protocols(&[
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", &accept),
    ]);
    let written = tokio::time::timeout(WRITE_WITHIN, async {
        use tokio::io::AsyncWriteExt;
        stream.write_all(&switching).await?;
        stream.flush().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
        return tracing::info!(peer = %peer.addr, "websocket upgrade: the answer could not be written");
    }
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_FRAME_BYTES);
    config.max_frame_size = Some(MAX_FRAME_BYTES);
    let gate = Arc::new(ReadGate::default());
    let stream = Gated::new(stream, Arc::clone(&gate));
    let socket =
        WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    ws::serve(
        daemon,
        socket,
        gate,
        peer.addr,
        peer.admission,
        peer.accepted_at,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::super::host::HostNames;
    use super::*;

    #[test]
    fn own_origin_and_listed_origins_only() {
        let any = "127.0.0.1:4000".parse().expect("addr");
        let plain = Settings {
            allowed_origins: vec!["https://ok.example".into()],
            tls: false,
            hosts: HostNames::new(any, false, &[]),
        };
        let host = Some("127.0.0.1:4000");
        assert!(origin_allowed("http://127.0.0.1:4000", host, &plain));
        assert!(origin_allowed("https://ok.example", host, &plain));
        assert!(!origin_allowed("https://127.0.0.1:4000", host, &plain));
        assert!(!origin_allowed("http://127.0.0.1:4001", host, &plain));
        assert!(!origin_allowed("http://evil.example", host, &plain));
        assert!(!origin_allowed("http://127.0.0.1:4000", None, &plain));
        assert!(!origin_allowed("null", host, &plain));
        let tls = Settings {
            allowed_origins: vec![],
            tls: true,
            hosts: HostNames::new(any, true, &[]),
        };
        assert!(origin_allowed(
            "https://LOCALHOST:4000",
            Some("localhost:4000"),
            &tls
        ));
        assert!(!origin_allowed(
            "http://localhost:4000",
            Some("localhost:4000"),
            &tls
        ));
    }
}
