//! The one request path: what happens to a JSON-RPC request once a front has read it,
//! whichever front that is — the connection loop of the local socket and the WebSocket
//! ([`crate::connection`]), `POST /rpc` ([`crate::gateway::post`]), and next the REST
//! routes (`POST /api/v1/METHOD`), which call [`answer`] the same way.
//!
//! In order: the method is looked up once ([`Call::new`]; a name the daemon does not
//! serve is -32601); the request waits for its place in its session's order (the
//! [`Ticket`] its front took in receive order, if any); the front door and the handler run
//! ([`dispatch::call`]: handshake, principal, transport, grant) under a panic guard (a
//! panic is logged and answered -32603; the connection and the session go on); the answer
//! line goes to the front; then the place is released, the hooks the handler left run
//! ([`Answering`]) and a successful `daemon/shutdown` starts the stop — after its answer
//! was handed over, never before. [`answer_in_place`] is the same path for the calls a
//! connection answers in place, in order, into its batch of replies.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use zeroclaw_protocol::Method;
use zeroclaw_rpc::message::{error_line, push_response_line, response_line};
use zeroclaw_rpc::{ErrorObject, Id, Request};

use crate::answering::Answering;
use crate::caller::ConnectionContext;
use crate::dispatch;
use crate::ordering::{Place, Ticket};
use crate::params::Params;
use crate::state::Daemon;

/// How long a call of a front that waits for it in place (`POST /rpc`) may go on once the
/// daemon stops (its turn is cancelled meanwhile).
const CALL_ON_SHUTDOWN: Duration = Duration::from_secs(3);

/// A request with its method looked up (`None`: a name the daemon does not serve).
pub(crate) struct Call {
    pub method: Option<Method>,
    pub request: Request,
}

impl Call {
    pub(crate) fn new(request: Request) -> Call {
        Call {
            method: Method::from_name(&request.method),
            request,
        }
    }
}

/// The front a request came through, for the few rules that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Front {
    /// A connection loop (local socket, WebSocket): the handshake comes first, and the
    /// loop itself bounds its requests when the daemon stops.
    Connection,
    /// One request per HTTP call (`POST /rpc`): the bearer authenticates every request,
    /// so there is no `initialize`; the call waits for its answer in place, at most
    /// [`CALL_ON_SHUTDOWN`] once the daemon stops.
    Post,
}

/// Runs `call` from `conn` through the one path and hands its answer line (none for a
/// notification) to `deliver`, which queues or returns it; `ticket` is its place in its
/// session's order, taken by the front in receive order.
pub(crate) async fn answer<D, F>(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    front: Front,
    call: Call,
    ticket: Option<Ticket>,
    deliver: D,
) where
    D: FnOnce(Vec<u8>) -> F,
    F: Future<Output = ()>,
{
    conn.touch();
    let place = match ticket {
        Some(ticket) => ticket.wait().await,
        None => Place::none(),
    };
    let answering = Answering::new(place);
    let Call { method, request } = call;
    let Request {
        id,
        method: name,
        params,
    } = request;
    let guarded = AssertUnwindSafe(run(daemon, conn, front, method, &name, params, &answering))
        .catch_unwind();
    let caught = match front {
        Front::Connection => guarded.await,
        Front::Post => {
            let stopping = async {
                daemon.shutdown.cancelled().await;
                tokio::time::sleep(CALL_ON_SHUTDOWN).await;
            };
            tokio::select! {
                caught = guarded => caught,
                () = stopping => Ok(Err(ErrorObject::internal("the daemon is stopping"))),
            }
        }
    };
    let outcome = caught.unwrap_or_else(|panic| Err(panicked(conn.id, &name, panic.as_ref())));
    let stopping = method == Some(Method::DaemonShutdown) && outcome.is_ok();
    // Handed over before the place lets this session's next request go, so answers that
    // do not wait (a refusal, an error) keep sending order.
    if let Some(id) = id {
        deliver(response_line(&id, &outcome)).await;
    }
    answering.answer_queued();
    if stopping {
        daemon.begin_shutdown(Method::DaemonShutdown.name());
    }
}

/// The front's rules, the method lookup's verdict, then the front door and the handler.
async fn run(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    front: Front,
    method: Option<Method>,
    name: &str,
    params: Params,
    answering: &Answering,
) -> Result<Value, ErrorObject> {
    match (front, method) {
        (Front::Post, Some(Method::Initialize)) => Err(ErrorObject::invalid_request(
            "initialize is not used over POST /rpc: the bearer authenticates every request",
        )),
        (_, Some(method)) => dispatch::call(daemon, conn, method, params, answering).await,
        (_, None) => Err(ErrorObject::method_not_found(name)),
    }
}

/// The same path for a call its connection answers in place (before the handshake, and
/// methods that never wait): its answer line (none for a notification) is appended to
/// `buf`. `status`, the call clients poll, is serialized straight into `buf` after the
/// same front door. Nothing here asks the daemon to stop.
pub(crate) async fn answer_in_place(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    call: Call,
    buf: &mut Vec<u8>,
) {
    conn.touch();
    let Call { method, request } = call;
    let Request {
        id,
        method: name,
        params,
    } = request;
    let before = buf.len();
    let written = AssertUnwindSafe(in_place(
        daemon,
        conn,
        method,
        id.as_ref(),
        &name,
        params,
        buf,
    ))
    .catch_unwind()
    .await;
    if let Err(panic) = written {
        // Nothing of a half-written answer is sent.
        buf.truncate(before);
        let error = panicked(conn.id, &name, panic.as_ref());
        if let Some(id) = id {
            buf.extend(error_line(&id, &error));
        }
    }
}

async fn in_place(
    daemon: &Arc<Daemon>,
    conn: &Arc<ConnectionContext>,
    method: Option<Method>,
    id: Option<&Id>,
    name: &str,
    params: Params,
    buf: &mut Vec<u8>,
) {
    if let (Some(Method::Status), Some(id)) = (method, id) {
        dispatch::status_into(daemon, conn, id, buf);
        return;
    }
    // Answered in the loop, in receive order already: no place to hold.
    let answering = Answering::unordered();
    // Boxed: the handlers' future (every method's, ~3 KiB) would otherwise sit inside each
    // connection's own future for as long as the connection lives, used or not.
    let outcome = Box::pin(run(
        daemon,
        conn,
        Front::Connection,
        method,
        name,
        params,
        &answering,
    ))
    .await;
    if let Some(id) = id {
        push_response_line(buf, id, &outcome);
    }
    answering.answer_queued();
}

/// Logs a handler's panic and makes its -32603 error.
fn panicked(conn: u64, method: &str, panic: &(dyn std::any::Any + Send)) -> ErrorObject {
    let why = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    tracing::error!(conn, method, "handler panicked: {why}");
    ErrorObject::internal(format!("internal error while running {method}"))
}
