//! `GET /api/v1/sessions/{id}/events` (SPEC §23.2): the session's stream (§14) as
//! Server-Sent Events. The caller context subscribes through the one request path
//! (`session/subscribe`; a `Last-Event-ID` of `TURN_ID:EVENT_SEQ` is its cursor, so the
//! replay and gap rules are §14's own), and its lines are taken from the context's
//! [`super::tap::Tap`] and written as events: `id:` the cursor, `event:` the type, `data:`
//! the `session/update` params. A `: keepalive` comment goes out every 15 s.
//!
//! A reader that does not keep up leaves the lines in the context's bounded outbound
//! queue, closed by its slow-peer rule like a WebSocket subscriber's; the stream then
//! ends. A client that goes away (its side of the socket reads end-of-file or fails) ends
//! it too, and the subscription with it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use zeroclaw_protocol::{Method, SESSION_UPDATE};
use zeroclaw_rpc::ErrorObject;

use super::super::http::{RequestHead, Response, SECURITY_HEADERS};
use super::super::post::PostState;
use super::call::{error_response, run_call};
use crate::caller::ConnectionContext;
use crate::state::Daemon;

/// Time between keepalive comments.
pub(crate) const KEEPALIVE: Duration = Duration::from_secs(15);

/// The `Last-Event-ID` header as a §14 cursor.
fn cursor(head: &RequestHead) -> Result<Option<(String, u64)>, ErrorObject> {
    let Some(last) = head.header("last-event-id").filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    last.rsplit_once(':')
        .and_then(|(turn, seq)| Some((turn.to_owned(), seq.parse().ok()?)))
        .filter(|(turn, _)| !turn.is_empty())
        .map(Some)
        .ok_or_else(|| {
            ErrorObject::invalid_params("Last-Event-ID: expected TURN_ID:EVENT_SEQ as sent in id:")
        })
}

/// Subscribes and streams until the client goes, the queue is closed or the daemon stops;
/// `None` (the connection closes) once a stream ran, or the error response.
pub(crate) async fn serve<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    head: &RequestHead,
    state: &PostState,
    ctx: &Arc<ConnectionContext>,
    session_id: String,
    origin: Option<&str>,
) -> Option<Response>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let Some(tap) = state.tap() else {
        return Some(error_response(&ErrorObject::internal("no caller context")));
    };
    let mut params = Map::new();
    params.insert("sessionId".into(), Value::String(session_id.clone()));
    match cursor(head) {
        Ok(Some((turn, seq))) => {
            params.insert("turnId".into(), Value::String(turn));
            params.insert("afterEventSeq".into(), Value::from(seq));
        }
        Ok(None) => {}
        Err(error) => return Some(error_response(&error).closing()),
    }
    // Attached first: the replay that follows the answer is in the channel already.
    let events = tap.attach();
    let subscribe = Method::SessionSubscribe.name();
    if let Err(error) = run_call(daemon, ctx, subscribe, params).await {
        tap.detach();
        return Some(error_response(&error).closing());
    }
    let ended = pump(daemon, stream, ctx, events, &session_id, origin).await;
    tracing::debug!(conn = ctx.id, session = %session_id, "event stream ended: {ended}");
    tap.detach();
    // Unsubscribed now rather than when the session next prunes closed subscribers.
    let mut params = Map::new();
    params.insert("sessionId".into(), Value::String(session_id));
    let unsubscribe = Method::SessionUnsubscribe.name();
    let _ = run_call(daemon, ctx, unsubscribe, params).await;
    None
}

fn stream_head(origin: Option<&str>) -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for (name, value) in SECURITY_HEADERS {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(origin) = origin {
        head.push_str(&format!(
            "Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n"
        ));
    }
    head.push_str("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n");
    head.push_str("Connection: close\r\n\r\n");
    head.into_bytes()
}

/// Writes the stream until it ends; says why.
async fn pump<S>(
    daemon: &Arc<Daemon>,
    stream: &mut S,
    ctx: &Arc<ConnectionContext>,
    mut events: mpsc::Receiver<Vec<Bytes>>,
    session_id: &str,
    origin: Option<&str>,
) -> &'static str
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let (mut reader, mut writer) = tokio::io::split(stream);
    let out = &ctx.out;
    // A write waits at most as long as the outbound queue's stall rule lets a peer not read.
    let write_within = daemon.stall_timeout;
    let mut text = stream_head(origin);
    let mut keepalive =
        tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
    let mut scratch = [0u8; 512];
    loop {
        if !text.is_empty() {
            let write = tokio::time::timeout(write_within, async {
                writer.write_all(&text).await?;
                writer.flush().await
            });
            let written = tokio::select! {
                w = write => matches!(w, Ok(Ok(()))),
                () = out.closed() => return "the outbound queue was closed",
            };
            if !written {
                return "the client stopped reading";
            }
            text.clear();
        }
        tokio::select! {
            batch = events.recv() => match batch {
                Some(batch) => {
                    for line in batch.iter().flat_map(|b| b.split(|&c| c == b'\n')) {
                        render(line, session_id, &mut text);
                    }
                }
                None => return "the tap was detached",
            },
            _ = keepalive.tick() => text.extend_from_slice(b": keepalive\n\n"),
            read = reader.read(&mut scratch) => match read {
                Ok(0) | Err(_) => return "the client went away",
                // Nothing is expected from the client; what it sends is ignored.
                Ok(_) => {}
            },
            () = out.closed() => return "the outbound queue was closed",
            () = daemon.shutdown.cancelled() => return "the daemon is stopping",
        }
    }
}

/// Appends `line`, when it is an update of `session_id`, as one event.
fn render(line: &[u8], session_id: &str, text: &mut Vec<u8>) {
    let Ok(mut v) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    if v.get("method").and_then(Value::as_str) != Some(SESSION_UPDATE) {
        return;
    }
    let Some(params) = v.get_mut("params").map(Value::take) else {
        return;
    };
    if params.get("sessionId").and_then(Value::as_str) != Some(session_id) {
        return;
    }
    let turn = params.get("turnId").and_then(Value::as_str);
    let seq = params.get("eventSeq").and_then(Value::as_u64);
    if let (Some(turn), Some(seq)) = (turn, seq) {
        text.extend_from_slice(format!("id: {turn}:{seq}\n").as_bytes());
    }
    if let Some(kind) = params.get("type").and_then(Value::as_str) {
        text.extend_from_slice(format!("event: {kind}\n").as_bytes());
    }
    text.extend_from_slice(b"data: ");
    // Serialized JSON has no raw newline: one data line.
    if serde_json::to_writer(&mut *text, &params).is_err() {
        return;
    }
    text.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_is_one_event_and_other_lines_none() {
        let mut text = Vec::new();
        let line = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","turnId":"t1","eventSeq":3,"type":"agent_message_chunk","text":"a\nb"}}"#;
        render(line, "s", &mut text);
        let text = String::from_utf8(text).expect("utf-8");
        assert!(
            text.starts_with("id: t1:3\nevent: agent_message_chunk\ndata: {"),
            "{text}"
        );
        assert!(
            text.ends_with("}\n\n") && text.matches('\n').count() == 4,
            "{text}"
        );
        let mut none = Vec::new();
        render(line, "other", &mut none);
        render(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "s", &mut none);
        assert!(none.is_empty());
    }
}
