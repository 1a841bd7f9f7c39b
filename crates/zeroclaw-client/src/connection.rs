//! One connection to the daemon: [`Client`] connects (or wraps any NDJSON byte stream) and
//! splits into a [`ClientHandle`], which sends requests with its own `zc-out-N` ids and
//! waits for their answers, and [`Events`], the queue of what the daemon sent unasked. A
//! writer task and a reader task own the two halves of the stream.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use zeroclaw_protocol::system::{ClientCapabilities, ClientInfo, InitializeParams};
use zeroclaw_protocol::{Call, Method};
use zeroclaw_rpc::message::{request_line, response_line};
use zeroclaw_rpc::{ErrorObject, Frame, FrameReader, Inbound, Pending};

use crate::error::ClientError;
use crate::event::{Event, ServerMessage};

/// Lines waiting to be written.
const SEND_QUEUE: usize = 256;
/// Messages from the daemon waiting for the application to read them.
const EVENT_QUEUE: usize = 4096;

/// How long a call ([`ClientHandle::call_typed`]) waits by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The sending half of a connection: cheap to clone, usable from many tasks at once (one
/// task may wait for a `session/prompt` answer while another approves, cancels or answers
/// an `elicitation/create` request).
#[derive(Clone)]
pub struct ClientHandle {
    out: mpsc::Sender<Vec<u8>>,
    pending: Arc<Pending>,
    timeout: Duration,
}

/// The receiving half of a connection: what the daemon sends unasked, in arrival order.
pub struct Events {
    rx: mpsc::Receiver<ServerMessage>,
}

/// A connection to the daemon: a [`ClientHandle`] (reachable through `Deref`, so every
/// sending method works on `Client` too) plus the [`Events`] queue.
pub struct Client {
    handle: ClientHandle,
    events: Events,
}

impl Client {
    /// Connects to the daemon's local endpoint.
    pub async fn connect(path: &Path) -> Result<Client, ClientError> {
        let conn = zeroclaw_ipc::connect(path).await.map_err(ClientError::Io)?;
        Ok(Client::over(conn.reader, conn.writer))
    }

    /// A client over any byte stream speaking NDJSON.
    pub fn over<R, W>(reader: R, writer: W) -> Client
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let pending = Arc::new(Pending::new());
        let (out, out_rx) = mpsc::channel(SEND_QUEUE);
        let (events_tx, events_rx) = mpsc::channel(EVENT_QUEUE);
        tokio::spawn(write_loop(writer, out_rx));
        tokio::spawn(read_loop(reader, Arc::clone(&pending), events_tx));
        Client {
            handle: ClientHandle {
                out,
                pending,
                timeout: DEFAULT_TIMEOUT,
            },
            events: Events { rx: events_rx },
        }
    }

    /// Sets how long [`ClientHandle::call_typed`] waits for an answer (default 10 minutes).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.handle.timeout = timeout;
    }

    /// A clone of the sending half, e.g. to run a `session/prompt` in another task.
    pub fn handle(&self) -> ClientHandle {
        self.handle.clone()
    }

    /// Splits into the sending half and the event queue.
    pub fn split(self) -> (ClientHandle, Events) {
        (self.handle, self.events)
    }

    /// The next message the daemon sent unasked; `None` once the connection is closed.
    pub async fn next_event(&mut self) -> Option<ServerMessage> {
        self.events.recv().await
    }

    /// Like [`Client::next_event`] but gives up after `timeout`.
    pub async fn next_event_within(&mut self, timeout: Duration) -> Option<ServerMessage> {
        self.events.recv_within(timeout).await
    }

    /// The event queue, to read typed [`Event`]s without splitting the client.
    pub fn events(&mut self) -> &mut Events {
        &mut self.events
    }
}

impl std::ops::Deref for Client {
    type Target = ClientHandle;
    fn deref(&self) -> &ClientHandle {
        &self.handle
    }
}

impl Events {
    /// The next message the daemon sent unasked; `None` once the connection is closed and
    /// everything received before has been read.
    pub async fn recv(&mut self) -> Option<ServerMessage> {
        self.rx.recv().await
    }

    /// Like [`Events::recv`] but gives up after `timeout`.
    pub async fn recv_within(&mut self, timeout: Duration) -> Option<ServerMessage> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// The next message, typed ([`Event::from_message`]).
    pub async fn next(&mut self) -> Option<Event> {
        self.recv().await.map(Event::from_message)
    }

    /// Like [`Events::next`] but gives up after `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Event> {
        self.recv_within(timeout).await.map(Event::from_message)
    }

    /// A message already received, without waiting.
    pub fn try_recv(&mut self) -> Option<ServerMessage> {
        self.rx.try_recv().ok()
    }
}

impl ClientHandle {
    /// How long a call ([`ClientHandle::call_typed`]) waits for an answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets how long a call on this handle waits (clones made afterwards
    /// inherit it).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// `initialize` with protocol version 1 and the elicitation capability when asked. The
    /// result is returned as sent (decode it as an
    /// [`InitializeResult`](zeroclaw_protocol::system::InitializeResult) when needed): a
    /// successful answer is all the handshake requires.
    pub async fn initialize(&self, name: &str, elicitation: bool) -> Result<Value, ClientError> {
        let params = InitializeParams {
            protocol_version: Some(Value::from(zeroclaw_protocol::system::PROTOCOL_VERSION)),
            client_info: Some(
                ClientInfo {
                    name: Some(name.to_owned()),
                    version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                }
                .into(),
            ),
            client_capabilities: elicitation.then(|| {
                ClientCapabilities {
                    elicitation: Some(Value::Object(Default::default())),
                }
                .into()
            }),
            auth_token: None,
            auth_code: None,
        };
        self.send(Method::Initialize, &params, self.timeout).await
    }

    /// Calls method `C` (a marker of [`zeroclaw_protocol::call`]) with its params type and
    /// decodes its result type, as the method table binds them, so a method cannot be sent
    /// with another method's params or read as another's result (up to the handle's
    /// timeout): `handle.call_typed::<call::SessionNew>(&params)`. This and its siblings are
    /// the only way to send a method of the vocabulary; [`ClientHandle::call_name`] is for
    /// names outside it.
    pub async fn call_typed<C: Call>(&self, params: &C::Params) -> Result<C::Result, ClientError> {
        self.call_typed_within::<C>(params, self.timeout).await
    }

    /// Like [`ClientHandle::call_typed`], waiting up to `timeout`.
    pub async fn call_typed_within<C: Call>(
        &self,
        params: &C::Params,
        timeout: Duration,
    ) -> Result<C::Result, ClientError> {
        let result = self.call_typed_value_within::<C>(params, timeout).await?;
        serde_json::from_value(result)
            .map_err(|e| ClientError::Unexpected(format!("{} result: {e}", C::METHOD)))
    }

    /// Calls method `C` with its params type and returns the result as the daemon sent it,
    /// undecoded: for printing it whole (`--json`), where a round trip through `C::Result`
    /// could drop what a newer daemon added, and for acknowledgements.
    pub async fn call_typed_value<C: Call>(
        &self,
        params: &C::Params,
    ) -> Result<Value, ClientError> {
        self.call_typed_value_within::<C>(params, self.timeout)
            .await
    }

    /// Like [`ClientHandle::call_typed_value`], waiting up to `timeout`.
    pub async fn call_typed_value_within<C: Call>(
        &self,
        params: &C::Params,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        self.send(C::METHOD, params, timeout).await
    }

    /// Sends params of `method` and returns the result as sent; reached only through the
    /// typed calls above (and `initialize`), which bind `P` to the method.
    async fn send<P: Serialize>(
        &self,
        method: Method,
        params: &P,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Unexpected(format!("{method} params: {e}")))?;
        self.call_name_within(method.name(), params, timeout).await
    }

    /// A request by wire name, for names outside the vocabulary (`zeroclaw rpc`, the one
    /// raw path of the command line, and tests of unknown methods); waits up to the
    /// handle's timeout.
    pub async fn call_name(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.call_name_within(method, params, self.timeout).await
    }

    async fn call_name_within(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let ticket = self.pending.register().ok_or(ClientError::Closed)?;
        let line = request_line(
            Some(&Value::String(ticket.id.clone())),
            method,
            Some(&params),
        );
        self.out.send(line).await.map_err(|_| ClientError::Closed)?;
        Ok(ticket.wait(timeout).await?)
    }

    /// Answers a request the daemon sent us.
    pub async fn respond(
        &self,
        id: Value,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), ClientError> {
        self.out
            .send(response_line(&id, &outcome))
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// Sends raw bytes as they are (tests of malformed input).
    pub async fn send_raw(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.out.send(bytes).await.map_err(|_| ClientError::Closed)
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if writer.write_all(&line).await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    pending: Arc<Pending>,
    events: mpsc::Sender<ServerMessage>,
) {
    let mut frames = FrameReader::new(BufReader::new(reader));
    loop {
        let frame = match frames.next_frame().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("reading from the daemon failed: {e}");
                break;
            }
        };
        let Frame::Line(line) = frame else {
            tracing::warn!("daemon sent an oversize frame");
            continue;
        };
        let message = match zeroclaw_rpc::classify(&line) {
            Inbound::Response(response) => {
                if !pending.resolve(response) {
                    tracing::warn!("dropping a response that answers none of our requests");
                }
                continue;
            }
            Inbound::Request(req) => {
                let params = req.params_value().unwrap_or(Value::Null);
                match req.id {
                    Some(id) => ServerMessage::Request {
                        id: id.value(),
                        method: req.method,
                        params,
                    },
                    None => ServerMessage::Notification {
                        method: req.method,
                        params,
                    },
                }
            }
            Inbound::Reject { error, .. } => {
                tracing::warn!("daemon sent an invalid message: {}", error.message);
                continue;
            }
            Inbound::DropInvalidResponse(why) => {
                tracing::warn!("daemon sent an invalid response: {why}");
                continue;
            }
        };
        // Never drop a message (a lost chunk is lost text): a full queue makes this loop
        // wait, and the wait reaches the daemon as backpressure. An application that does
        // not want events drops its `Events`, and they are discarded here.
        let _ = events.send(message).await;
    }
    pending.close();
}
