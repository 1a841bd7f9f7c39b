//! The per-connection loop: reads frames, applies the envelope rules, keeps the handshake
//! gate, routes responses to our own pending requests, and runs requests with at most
//! [`MAX_IN_FLIGHT`] at a time (beyond that it stops reading: backpressure, no error).
//!
//! Requests before a successful `initialize`, and methods that never wait (see
//! [`dispatch::is_immediate`]), are answered in place and in order — a pipelined
//! `initialize` + `status` never races — and the answers to one burst of input leave in one
//! write. Every other request runs in its own task; requests addressing one session keep
//! their receive order through [`ordering`] tickets. Valid notifications of known methods
//! run like requests once initialized, and are never answered (SPEC §14).
//!
//! A connection that has not completed `initialize` within [`INITIALIZE_WITHIN`] of being
//! accepted is closed without a reply (SPEC §17); when the loop ends, the connection stops
//! counting in the limits at once, whatever still holds its context.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use zeroclaw_rpc::message::{error_line, response_line};
use zeroclaw_rpc::{ErrorObject, Id, Inbound, MAX_FRAME_BYTES, Pending, Request};

use crate::dispatch;
use crate::ordering::{LastPrompts, SessionOrder};
use crate::outbound::{self, Outbound};
use crate::registry::Admission;
use crate::session::LiveId;
use crate::session::link::collect_after_answer;
use crate::state::Daemon;
use crate::transport::{FrameSink, FrameSource, Incoming, PeerIdentity};

/// Requests of one connection running at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// Oversize frames tolerated before the connection is closed (the last one is answered).
const MAX_OVERSIZE_FRAMES: u32 = 3;
/// Replies gathered in place are queued at the latest when they reach this size.
const REPLY_BATCH_BYTES: usize = 64 * 1024;
/// How long a closing connection may take to flush what it already queued.
const FLUSH_ON_CLOSE: Duration = Duration::from_secs(2);
/// Every connection must complete `initialize` this long after it was accepted.
pub const INITIALIZE_WITHIN: Duration = Duration::from_secs(10);

/// What `initialize` established for a connection.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// Token presented at `initialize` (WebSocket); re-checked on every call.
    pub auth_token: Option<String>,
    /// The client declared `clientCapabilities.elicitation`.
    pub elicitation: bool,
}

/// Everything handlers may know about the connection a call came on.
pub struct ConnectionContext {
    pub id: u64,
    pub peer: PeerIdentity,
    pub out: Outbound,
    /// Our outbound requests to this peer (`elicitation/create`).
    pub pending: Pending,
    pub handshake: OnceLock<Handshake>,
    /// This connection's slot in the connection limits.
    pub admission: std::sync::Mutex<Admission>,
    /// This connection's last prompt to each live session (what a cancel applies to).
    pub prompts: LastPrompts,
}

impl ConnectionContext {
    pub fn is_initialized(&self) -> bool {
        self.handshake.get().is_some()
    }

    /// Records that prompt number `seq` of `live` came from this connection.
    pub fn prompted(&self, live: &LiveId, seq: u64) {
        self.prompts.record(live, seq);
    }

    /// The number of this connection's last prompt to `live` (0: none).
    pub fn last_prompt(&self, live: &LiveId) -> u64 {
        self.prompts.get(live)
    }
}

/// Serves one accepted connection until the peer leaves, it is closed for misbehaving,
/// stalling or not initializing in time, or the daemon shuts down. `accepted` is when its
/// transport connection was accepted.
pub async fn serve<S: FrameSource, K: FrameSink>(
    daemon: Arc<Daemon>,
    id: u64,
    peer: PeerIdentity,
    admission: Admission,
    accepted: Instant,
    mut source: S,
    sink: K,
) {
    let (out, rx) = Outbound::new(daemon.stall_timeout);
    let writer = tokio::spawn(outbound::run_writer(sink, rx, out.clone()));
    let conn = Arc::new(ConnectionContext {
        id,
        peer,
        out: out.clone(),
        pending: Pending::new(),
        handshake: OnceLock::new(),
        admission: std::sync::Mutex::new(admission),
        prompts: LastPrompts::default(),
    });
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut order = SessionOrder::default();
    let initialize_by = accepted + INITIALIZE_WITHIN;
    let mut oversize = 0u32;
    // Answers made right here (errors, the handshake, immediate methods), in the order of
    // their requests; queued as one write once no further input is already buffered.
    let mut replies: Vec<u8> = Vec::new();

    loop {
        if !replies.is_empty()
            && (!source.has_buffered() || replies.len() >= REPLY_BATCH_BYTES)
            && send_unless_stopping(&daemon, &out, std::mem::take(&mut replies))
                .await
                .is_err()
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
        let frame = tokio::select! {
            frame = source.next_frame() => frame,
            () = out.closed() => break,
            () = daemon.shutdown.cancelled() => break,
            () = tokio::time::sleep_until(initialize_by), if !conn.is_initialized() => {
                tracing::info!(conn = id, "closing: no initialize within {INITIALIZE_WITHIN:?}");
                out.close();
                break;
            }
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
                let error =
                    ErrorObject::invalid_request(format!("frame exceeds {MAX_FRAME_BYTES} bytes"));
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
            // Before the handshake, or of an unknown method: never run, never answered.
            Inbound::Request(request)
                if request.is_notification()
                    && (!conn.is_initialized() || !dispatch::is_known(&request.method)) =>
            {
                tracing::debug!(conn = id, method = %request.method, "notification ignored");
            }
            // Before the handshake, and for methods that never wait, answer in place.
            Inbound::Request(request)
                if !conn.is_initialized() || dispatch::is_immediate(&request.method) =>
            {
                let (line, _) = answer(&daemon, &conn, request).await;
                replies.extend(line.unwrap_or_default());
            }
            Inbound::Request(request) => {
                if !replies.is_empty()
                    && send_unless_stopping(&daemon, &out, std::mem::take(&mut replies))
                        .await
                        .is_err()
                {
                    break;
                }
                let permit = tokio::select! {
                    permit = Arc::clone(&in_flight).acquire_owned() => permit,
                    () = out.closed() => break,
                    () = daemon.shutdown.cancelled() => break,
                };
                let Ok(permit) = permit else { break };
                // Taken here, in receive order; waited for inside the task.
                let ticket = order.ticket(&request.method, request.params.as_ref());
                let daemon = Arc::clone(&daemon);
                let conn = Arc::clone(&conn);
                tokio::spawn(async move {
                    let ((line, shutting_down), after) = collect_after_answer(async {
                        match ticket {
                            Some(ticket) => ticket.run(answer(&daemon, &conn, request)).await,
                            None => answer(&daemon, &conn, request).await,
                        }
                    })
                    .await;
                    // A closed connection cannot be answered; the work itself is done.
                    if let Some(line) = line {
                        let _ = conn.out.send(line).await;
                    }
                    after.run();
                    if shutting_down {
                        daemon.begin_shutdown("daemon/shutdown");
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

/// Runs one request or notification: its answer line (none for a notification), and
/// whether it asked the daemon to stop (which happens only once that answer is queued).
async fn answer(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    request: Request,
) -> (Option<Vec<u8>>, bool) {
    let Request { id, method, params } = request;
    let outcome = dispatch::call(daemon, conn, &method, params).await;
    let shutting_down = method == "daemon/shutdown" && outcome.is_ok();
    let line = id.map(|id: Id| response_line(&id, &outcome));
    (line, shutting_down)
}
