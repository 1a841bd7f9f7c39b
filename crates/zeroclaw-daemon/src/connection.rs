//! The per-connection loop: reads frames, applies the envelope rules, keeps the handshake
//! gate, routes responses to our own pending requests, and runs requests with at most
//! [`MAX_IN_FLIGHT`] at a time (beyond that it stops reading: backpressure, no error).
//!
//! Requests before a successful `initialize`, and methods that never wait (see
//! [`Method::answers_in_place`]), are answered in place and in order — a pipelined
//! `initialize` + `status` never races — and the answers to a burst of input leave in few
//! writes: before the loop waits for input, and mid-burst each time they fill a batch.
//! Every other request runs in its own task; requests addressing one session keep their
//! receive order through [`ordering`](crate::ordering) tickets. Valid notifications of
//! known methods run like requests once initialized, and are never answered (SPEC §14).
//!
//! The loop creates and owns the connection's [`ConnectionContext`] (in [`crate::caller`],
//! below dispatch and the handlers, so none of them imports this loop), bounds the
//! requests in flight and takes each one's ordering ticket; what happens to a request
//! from there (lookup, front door, panic guard, answer, shutdown after it) is the one
//! request path of every front, [`crate::request`].
//!
//! A connection that has not completed `initialize` within [`INITIALIZE_WITHIN`] of being
//! accepted is closed without a reply (SPEC §17); when the loop ends, the connection stops
//! counting in the limits at once, whatever still holds its context.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;

use tokio::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use zeroclaw_protocol::Method;
use zeroclaw_rpc::message::error_line;
use zeroclaw_rpc::{ErrorObject, Inbound, MAX_FRAME_BYTES};

use crate::caller::ConnectionContext;
use crate::ordering::SessionOrder;
use crate::outbound::{self, Outbound};
use crate::registry::Admission;
use crate::request::{self, Call, Front};
use crate::state::Daemon;
use crate::transport::{
    FrameSink, FrameSource, Incoming, PRE_INITIALIZE_FRAME_BYTES, PeerIdentity,
};

/// Requests of one connection running at once.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// Oversize frames tolerated before the connection is closed (the last one is answered).
const MAX_OVERSIZE_FRAMES: u32 = 3;
/// Replies gathered in place leave at the latest when they reach this size. With another
/// CPU to read them, a pipelining peer reads its first answers (and sends more) while the
/// daemon answers the rest of its burst: 4 KiB, about eleven `status` answers, measured
/// best among 1-64 KiB. Alone on one CPU, every write would wake the peer to take the CPU
/// from the daemon, so a burst leaves whole, up to 64 KiB (docs/BENCHMARKS.md,
/// "Pipelined").
fn reply_batch_bytes() -> usize {
    static BATCH: OnceLock<usize> = OnceLock::new();
    *BATCH.get_or_init(|| match std::thread::available_parallelism() {
        Ok(cpus) if cpus.get() > 1 => 4 * 1024,
        _ => 64 * 1024,
    })
}

/// A connection waiting for input keeps a reply buffer of at most this capacity (a
/// `status` answer fits; the handshake's does not, so an idle connection holds none).
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
    let mut replies = Replies::default();

    loop {
        if replies.full() && replies.send(&daemon, &out).await.is_err() {
            break;
        }
        // With every slot taken, read nothing more until a request finishes.
        if in_flight.available_permits() == 0 {
            if replies.send_before_wait(&daemon, &out).await.is_err() {
                break;
            }
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
            None => {
                // Nothing complete to read: what was answered leaves before the wait, even
                // while the start of a frame is already buffered.
                if replies.send_before_wait(&daemon, &out).await.is_err() {
                    break;
                }
                tokio::select! {
                    frame = source.next_frame() => frame,
                    () = out.closed() => break,
                    () = daemon.shutdown.cancelled() => break,
                    () = tokio::time::sleep_until(initialize_by), if !conn.is_initialized() => {
                        tracing::info!(conn = id, "closing: no initialize within {INITIALIZE_WITHIN:?}");
                        out.close();
                        break;
                    }
                }
            }
        };
        let line = match frame {
            Ok(Some(Incoming::Message(line))) => line,
            Ok(Some(Incoming::Binary)) => {
                let error = ErrorObject::invalid_request(
                    "binary messages are not supported: send JSON-RPC as text",
                );
                replies.buf.extend(error_line(&Value::Null, &error));
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
                replies.buf.extend(error_line(&Value::Null, &error));
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
            Inbound::Reject { id, error } => replies.buf.extend(error_line(&id, &error)),
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
                let call = Call::new(request);
                // Before the handshake, or of an unknown method: never run, never answered.
                if call.request.is_notification()
                    && (!conn.is_initialized() || call.method.is_none())
                {
                    tracing::debug!(conn = id, method = %call.request.method, "notification ignored");
                    continue;
                }
                // Before the handshake, and for methods that never wait, answer in place.
                if !conn.is_initialized() || call.method.is_some_and(Method::answers_in_place) {
                    request::answer_in_place(&daemon, &conn, call, replies.for_burst()).await;
                    if !full_frames && conn.is_initialized() {
                        source.lift_frame_limit();
                        full_frames = true;
                    }
                    continue;
                }
                if replies.send(&daemon, &out).await.is_err() {
                    break;
                }
                let permit = tokio::select! {
                    permit = Arc::clone(&in_flight).acquire_owned() => permit,
                    () = out.closed() => break,
                    () = daemon.shutdown.cancelled() => break,
                };
                let Ok(permit) = permit else { break };
                // Taken here, in receive order; waited for inside the task.
                let ticket = order.ticket(call.method, call.request.params.as_deref());
                let daemon = Arc::clone(&daemon);
                let conn = Arc::clone(&conn);
                tokio::spawn(async move {
                    let out = conn.out.clone();
                    // A closed connection cannot be answered; the work is done.
                    let deliver = |line| async move {
                        let _ = out.send(line).await;
                    };
                    request::answer(&daemon, &conn, Front::Connection, call, ticket, deliver).await;
                    drop(permit);
                });
            }
        }
    }
    // The peer reads no more of its sessions from here on: it no longer watches them.
    conn.hung_up();
    if !replies.buf.is_empty() {
        let _ = tokio::time::timeout(FLUSH_ON_CLOSE, out.send(replies.buf)).await;
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

/// Answers made right here (errors, the handshake, immediate methods), in the order of
/// their requests: gathered into few writes, sent before the loop waits and mid-burst
/// once they fill a batch.
#[derive(Default)]
struct Replies {
    buf: Vec<u8>,
    /// The size of the last batch sent: the next burst's buffer is made that size at once
    /// instead of growing (and copying) to it again.
    last_batch: usize,
}

impl Replies {
    /// The buffer to answer into, sized for a whole batch when it starts one.
    fn for_burst(&mut self) -> &mut Vec<u8> {
        if self.buf.is_empty() {
            self.buf.reserve(self.last_batch);
        }
        &mut self.buf
    }

    /// A batch is full: it leaves now, and the peer reads its first answers (and can send
    /// more) while the rest of its burst is answered.
    fn full(&self) -> bool {
        self.buf.len() >= reply_batch_bytes()
    }

    /// Sends what was gathered, if anything: written at once from the buffer when nothing
    /// is queued before it (the buffer is then kept for the next answers), otherwise handed
    /// to the queue.
    async fn send(&mut self, daemon: &Daemon, out: &Outbound) -> Result<(), outbound::Closed> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.last_batch = self.buf.len();
        if out.try_write_now(&self.buf) {
            self.buf.clear();
            return Ok(());
        }
        send_unless_stopping(daemon, out, std::mem::take(&mut self.buf)).await
    }

    /// Before the loop waits: everything answered leaves, and a waiting connection keeps
    /// no reply buffer beyond a `status` answer's size.
    async fn send_before_wait(
        &mut self,
        daemon: &Daemon,
        out: &Outbound,
    ) -> Result<(), outbound::Closed> {
        self.send(daemon, out).await?;
        if self.buf.capacity() > REPLY_BUFFER_KEPT {
            self.buf = Vec::new();
        }
        Ok(())
    }
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
