//! The per-connection loop: reads frames, applies the envelope rules, keeps the handshake
//! gate, routes responses to our own pending requests, and runs requests with at most
//! [`MAX_IN_FLIGHT`] at a time (beyond that it stops reading: backpressure, no error).
//!
//! Requests before a successful `initialize`, and methods that never wait (see
//! [`Method::answers_in_place`]), are answered in place and in order — a pipelined
//! `initialize` + `status` never races — and the answers to one burst of input leave in one
//! write. Every other request runs in its own task; requests addressing one session keep
//! their receive order through [`ordering`](crate::ordering) tickets. Valid notifications of known methods
//! run like requests once initialized, and are never answered (SPEC §14).
//!
//! The loop creates and owns the connection's [`ConnectionContext`] (in [`crate::caller`],
//! below dispatch and the handlers, so none of them imports this loop) and parses each
//! method name once into a [`Method`]; [`dispatch`] takes it from there.
//!
//! A connection that has not completed `initialize` within [`INITIALIZE_WITHIN`] of being
//! accepted is closed without a reply (SPEC §17); when the loop ends, the connection stops
//! counting in the limits at once, whatever still holds its context.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use tokio::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use zeroclaw_protocol::Method;
use zeroclaw_rpc::message::{error_line, response_line};
use zeroclaw_rpc::{ErrorObject, Inbound, MAX_FRAME_BYTES, Request};
use zeroclaw_sessions::session::link::collect_after_answer;

use crate::caller::ConnectionContext;
use crate::dispatch;
use crate::ordering::{Place, SessionOrder};
use crate::outbound::{self, Outbound};
use crate::registry::Admission;
use crate::state::Daemon;
use crate::transport::{
    FrameSink, FrameSource, Incoming, PRE_INITIALIZE_FRAME_BYTES, PeerIdentity,
};

/// Requests of one connection running at once.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// Oversize frames tolerated before the connection is closed (the last one is answered).
const MAX_OVERSIZE_FRAMES: u32 = 3;
/// Replies gathered in place are queued at the latest when they reach this size.
const REPLY_BATCH_BYTES: usize = 64 * 1024;
/// The reply buffer is kept for the next replies up to this capacity (a `status` answer
/// fits; the handshake's does not, so an idle connection holds none).
const REPLY_BUFFER_KEPT: usize = 512;
/// How long a closing connection may take to flush what it already queued.
const FLUSH_ON_CLOSE: Duration = Duration::from_secs(2);
/// Every connection must complete `initialize` this long after it was accepted.
pub(crate) const INITIALIZE_WITHIN: Duration = Duration::from_secs(10);

/// Serves one accepted connection until the peer leaves, it is closed for misbehaving,
/// stalling or not initializing in time, or the daemon shuts down. `accepted` is when its
/// transport connection was accepted.
pub(crate) async fn serve<S: FrameSource, K: FrameSink>(
    daemon: Arc<Daemon>,
    id: u64,
    peer: PeerIdentity,
    admission: Admission,
    accepted: Instant,
    mut source: S,
    sink: K,
) {
    let (out, rx) = Outbound::with_write_now(daemon.stall_timeout, sink.write_now_handle());
    let writer = tokio::spawn(outbound::run_writer(sink, rx, out.clone()));
    let conn = Arc::new(ConnectionContext::new(id, peer, out.clone(), admission));
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut order = SessionOrder::default();
    let initialize_by = accepted + INITIALIZE_WITHIN;
    let mut oversize = 0u32;
    // Frames are capped lower until `initialize` succeeds (SPEC §17.1).
    let mut full_frames = false;
    // Answers made right here (errors, the handshake, immediate methods), in the order of
    // their requests; queued as one write once no further input is already buffered.
    let mut replies: Vec<u8> = Vec::new();

    loop {
        if !replies.is_empty()
            && (!source.has_buffered() || replies.len() >= REPLY_BATCH_BYTES)
            && send_replies(&daemon, &out, &mut replies).await.is_err()
        {
            break;
        }
        // With every slot taken, read nothing more until a request finishes.
        if in_flight.available_permits() == 0 {
            tokio::select! {
                permit = in_flight.acquire() => drop(permit),
                () = out.closed() => break,
                () = daemon.shutdown.cancelled() => break,
            }
        }
        // A frame already buffered (a pipelined burst) is taken without the wait below: its
        // other branches only matter once the loop would wait, and are checked here first.
        let buffered = match conn.is_initialized()
            && source.has_buffered()
            && !out.is_closed()
            && !daemon.shutdown.is_cancelled()
        {
            true => source.next_frame().now_or_never(),
            false => None,
        };
        let frame = match buffered {
            Some(frame) => frame,
            None => tokio::select! {
                frame = source.next_frame() => frame,
                () = out.closed() => break,
                () = daemon.shutdown.cancelled() => break,
                () = tokio::time::sleep_until(initialize_by), if !conn.is_initialized() => {
                    tracing::info!(conn = id, "closing: no initialize within {INITIALIZE_WITHIN:?}");
                    out.close();
                    break;
                }
            },
        };
        let line = match frame {
            Ok(Some(Incoming::Message(line))) => line,
            Ok(Some(Incoming::Binary)) => {
                let error = ErrorObject::invalid_request(
                    "binary messages are not supported: send JSON-RPC as text",
                );
                replies.extend(error_line(&Value::Null, &error));
                continue;
            }
            Ok(Some(Incoming::Oversize)) => {
                oversize += 1;
                let error = ErrorObject::invalid_request(match full_frames {
                    true => format!("frame exceeds {MAX_FRAME_BYTES} bytes"),
                    false => format!(
                        "frame exceeds {PRE_INITIALIZE_FRAME_BYTES} bytes before initialize"
                    ),
                });
                replies.extend(error_line(&Value::Null, &error));
                if oversize >= MAX_OVERSIZE_FRAMES {
                    tracing::info!(conn = id, "closing after {oversize} oversize frames");
                    break;
                }
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(conn = id, "read failed: {e}");
                break;
            }
        };
        match zeroclaw_rpc::classify(&line) {
            Inbound::Reject { id, error } => replies.extend(error_line(&id, &error)),
            Inbound::DropInvalidResponse(why) => {
                tracing::warn!(conn = id, "dropping an invalid response: {why}");
            }
            Inbound::Response(response) => {
                if !conn.pending.resolve(response) {
                    tracing::warn!(
                        conn = id,
                        "dropping a response that answers none of our requests"
                    );
                }
            }
            Inbound::Request(request) => {
                let method = Method::from_name(&request.method);
                // Before the handshake, or of an unknown method: never run, never answered.
                if request.is_notification() && (!conn.is_initialized() || method.is_none()) {
                    tracing::debug!(conn = id, method = %request.method, "notification ignored");
                    continue;
                }
                // Before the handshake, and for methods that never wait, answer in place.
                if !conn.is_initialized() || method.is_some_and(Method::answers_in_place) {
                    // Straight into the batch; none of these asks the daemon to stop.
                    let (request_id, name) = (request.id.clone(), request.method.clone());
                    let in_place =
                        dispatch::answer_in_place(&daemon, &conn, method, request, &mut replies);
                    if let Err(panic) = AssertUnwindSafe(in_place).catch_unwind().await {
                        replies.extend(
                            panicked(id, &name, request_id, panic.as_ref()).unwrap_or_default(),
                        );
                    }
                    if !full_frames && conn.is_initialized() {
                        source.lift_frame_limit();
                        full_frames = true;
                    }
                    continue;
                }
                if !replies.is_empty() && send_replies(&daemon, &out, &mut replies).await.is_err() {
                    break;
                }
                let permit = tokio::select! {
                    permit = Arc::clone(&in_flight).acquire_owned() => permit,
                    () = out.closed() => break,
                    () = daemon.shutdown.cancelled() => break,
                };
                let Ok(permit) = permit else { break };
                // Taken here, in receive order; waited for inside the task.
                let ticket = order.ticket(method, request.params.as_deref());
                let daemon = Arc::clone(&daemon);
                let conn = Arc::clone(&conn);
                tokio::spawn(async move {
                    let step = async {
                        let place = match ticket {
                            Some(ticket) => ticket.wait().await,
                            None => Place::none(),
                        };
                        let (line, shutting_down) =
                            answer_even_if_it_panics(&daemon, &conn, method, request, &place).await;
                        // Queued before the place lets this session's next request go,
                        // so answers that do not wait (a refusal, an error) keep sending
                        // order. A closed connection cannot be answered; the work is done.
                        if let Some(line) = line {
                            let _ = conn.out.send(line).await;
                        }
                        drop(place);
                        shutting_down
                    };
                    let (shutting_down, after) = collect_after_answer(step).await;
                    after.run();
                    if shutting_down {
                        daemon.begin_shutdown(Method::DaemonShutdown.name());
                    }
                    drop(permit);
                });
            }
        }
    }
    if !replies.is_empty() {
        let _ = tokio::time::timeout(FLUSH_ON_CLOSE, out.send(replies)).await;
    }

    // Let requests already running finish and their answers (or a final error, or the
    // reply to daemon/shutdown) reach the peer for a moment, then close: a client that
    // half-closes after its last request still gets its answers.
    // A connection already closed (stalled, misbehaving) waits for nothing.
    if !out.is_closed() {
        let all = MAX_IN_FLIGHT as u32;
        tokio::select! {
            _ = tokio::time::timeout(FLUSH_ON_CLOSE, in_flight.acquire_many(all)) => {}
            () = out.closed() => {}
        }
        out.drain(FLUSH_ON_CLOSE).await;
    }
    out.close();
    drop(source);
    conn.pending.close();
    daemon.uploads.drop_connection(id);
    // The writer gives up on the peer within its close wait; the bound here is a backstop.
    let _ = tokio::time::timeout(FLUSH_ON_CLOSE * 2, writer).await;
    // Gone: stop counting it now, even while a queued prompt still holds its context.
    conn.admission
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .release();
    tracing::debug!(conn = id, "connection closed");
}

/// Sends the gathered `replies` and empties them: written at once from the buffer when
/// nothing is queued before them (the buffer is then kept, if small, for the next ones),
/// otherwise handed to the queue.
async fn send_replies(
    daemon: &Daemon,
    out: &Outbound,
    replies: &mut Vec<u8>,
) -> Result<(), outbound::Closed> {
    if out.try_write_now(replies) {
        replies.clear();
        if replies.capacity() > REPLY_BUFFER_KEPT {
            *replies = Vec::new();
        }
        return Ok(());
    }
    send_unless_stopping(daemon, out, std::mem::take(replies)).await
}

/// Queues `bytes` unless the daemon starts to stop while the queue has no room for them.
async fn send_unless_stopping(
    daemon: &Daemon,
    out: &Outbound,
    bytes: Vec<u8>,
) -> Result<(), outbound::Closed> {
    tokio::select! {
        sent = out.send(bytes) => sent,
        () = daemon.shutdown.cancelled() => Err(outbound::Closed),
    }
}

/// [`answer`], except that a handler that panics is answered -32603 (and logged) instead
/// of leaving its client waiting forever; the connection and the session go on.
async fn answer_even_if_it_panics(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Option<Method>,
    request: Request,
    place: &Place,
) -> (Option<Vec<u8>>, bool) {
    let id = request.id.clone();
    let name = request.method.clone();
    match AssertUnwindSafe(answer(daemon, conn, method, request, place))
        .catch_unwind()
        .await
    {
        Ok(answered) => answered,
        Err(panic) => (panicked(conn.id, &name, id, panic.as_ref()), false),
    }
}

/// Logs a handler's panic and makes its -32603 answer (none for a notification).
fn panicked(
    conn: u64,
    method: &str,
    id: Option<zeroclaw_rpc::Id>,
    panic: &(dyn std::any::Any + Send),
) -> Option<Vec<u8>> {
    let why = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    tracing::error!(conn, method, "handler panicked: {why}");
    let error = ErrorObject::internal(format!("internal error while running {method}"));
    id.map(|id| error_line(&id, &error))
}

/// Runs one request or notification of `method` (`None`: a name the daemon does not serve):
/// its answer line (none for a notification), and whether it asked the daemon to stop
/// (which happens only once that answer is queued).
async fn answer(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Option<Method>,
    request: Request,
    place: &Place,
) -> (Option<Vec<u8>>, bool) {
    let Request {
        id,
        method: name,
        params,
    } = request;
    let outcome = match method {
        Some(method) => dispatch::call(daemon, conn, method, params, place).await,
        None => Err(ErrorObject::method_not_found(&name)),
    };
    let shutting_down = method == Some(Method::DaemonShutdown) && outcome.is_ok();
    let line = id.map(|id| response_line(&id, &outcome));
    (line, shutting_down)
}
