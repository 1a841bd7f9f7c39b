//! The editor side of the bridge: JSON-RPC frames towards the editor, whatever carries
//! them. For `zeroclaw acp` that is NDJSON on stdout: one writer thread
//! owns stdout (so frames never interleave and nothing else reaches it; a plain thread
//! with blocking writes costs one wake-up per burst, where async stdout costs a
//! blocking-pool hand-off per write and per flush); requests we send
//! to the editor (`session/request_permission`, `elicitation/create`) are numbered and
//! matched to their answers through a pending map. For the gateway's `/acp` (SPEC §25)
//! the frames are handed out through an [`Outbox`] instead, one WebSocket text message each.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use zeroclaw_rpc::message::{request_line, response_line};
use zeroclaw_rpc::{ErrorObject, PeerError, Pending, Response};

/// Frames waiting to be written to stdout. A full queue makes producers wait, which
/// reaches the daemon as backpressure (its updates are read by the same tasks).
const OUT_QUEUE: usize = 1024;

/// The writing half towards the editor: cheap to clone.
#[derive(Clone)]
pub struct Editor {
    out: mpsc::Sender<Vec<u8>>,
    pending: Arc<Pending>,
    /// Frames queued and frames written (and flushed), for [`Editor::flushed`].
    queued: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
}

impl Editor {
    /// Starts the thread that writes frames to `sink` (stdout in production).
    pub fn start<W: Write + Send + 'static>(sink: W) -> Editor {
        let (out, rx) = mpsc::channel(OUT_QUEUE);
        let written = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&written);
        let spawned = std::thread::Builder::new()
            .name("acp-stdout".into())
            .spawn(move || write_loop(sink, rx, &counter));
        if let Err(e) = spawned {
            tracing::error!("cannot start the stdout writer: {e}");
        }
        Editor {
            out,
            pending: Arc::new(Pending::new()),
            queued: Arc::new(AtomicU64::new(0)),
            written,
        }
    }

    /// An editor whose frames are read from the returned [`Outbox`] (the gateway's `/acp`).
    pub fn queue() -> (Editor, Outbox) {
        let (out, rx) = mpsc::channel(OUT_QUEUE);
        let written = Arc::new(AtomicU64::new(0));
        let editor = Editor {
            out,
            pending: Arc::new(Pending::new()),
            queued: Arc::new(AtomicU64::new(0)),
            written: Arc::clone(&written),
        };
        (editor, Outbox { rx, written })
    }

    /// Sends a notification (e.g. `session/update`).
    pub async fn notify<P: Serialize>(&self, method: &str, params: &P) {
        match serde_json::to_value(params) {
            Ok(params) => self.send(request_line(None, method, Some(&params))).await,
            Err(e) => tracing::warn!("cannot encode {method}: {e}"),
        }
    }

    /// Answers a request of the editor.
    pub async fn respond(&self, id: &Value, outcome: Result<Value, ErrorObject>) {
        self.send(response_line(id, &outcome)).await;
    }

    /// Sends a request to the editor and waits up to `timeout` for its answer.
    pub async fn request<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<Value, PeerError> {
        self.request_as(method, params, timeout, |_| {}).await
    }

    /// [`Editor::request`], telling `announce` the request's id before it is sent (so it
    /// can be withdrawn with `$/cancel_request`, SPEC §25). Dropping the future forgets
    /// the request: a reply that comes later matches nothing and is ignored.
    pub async fn request_as<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
        announce: impl FnOnce(String),
    ) -> Result<Value, PeerError> {
        let params = serde_json::to_value(params)
            .map_err(|e| PeerError::Remote(ErrorObject::internal(e.to_string())))?;
        let ticket = self.pending.register().ok_or(PeerError::Closed)?;
        announce(ticket.id.clone());
        let id = Value::String(ticket.id.clone());
        self.send(request_line(Some(&id), method, Some(&params)))
            .await;
        ticket.wait(timeout).await
    }

    /// Routes an answer of the editor to the request waiting for it; `false` = not ours.
    pub fn resolve(&self, response: Response) -> bool {
        self.pending.resolve(response)
    }

    /// Stdin ended: every request waiting on the editor fails.
    pub fn close(&self) {
        self.pending.close();
    }

    async fn send(&self, line: Vec<u8>) {
        if self.out.send(line).await.is_ok() {
            self.queued.fetch_add(1, Ordering::Relaxed);
        } else {
            tracing::debug!("stdout is closed; dropping a frame");
        }
    }

    /// Resolves once every frame queued so far has been written, or after 2 s (used
    /// before exiting).
    pub async fn flushed(&self) {
        let target = self.queued.load(Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while self.written.load(Ordering::Relaxed) < target && !self.out.is_closed() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    }
}

/// The frames for the editor, in order, each a JSON-RPC message ending with `\n`.
pub struct Outbox {
    rx: mpsc::Receiver<Vec<u8>>,
    written: Arc<AtomicU64>,
}

impl Outbox {
    /// The next frame; `None` once the bridge is gone.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.rx.recv().await
    }

    /// Counts `n` frames as delivered (for [`Editor::flushed`]).
    pub fn delivered(&self, n: u64) {
        self.written.fetch_add(n, Ordering::Relaxed);
    }
}

fn write_loop<W: Write>(mut sink: W, mut rx: mpsc::Receiver<Vec<u8>>, written: &AtomicU64) {
    while let Some(line) = rx.blocking_recv() {
        let mut ok = sink.write_all(&line).is_ok();
        let mut n = 1;
        // Flush only when nothing else is queued: a burst of chunks leaves in one write.
        while ok && let Ok(next) = rx.try_recv() {
            ok = sink.write_all(&next).is_ok();
            n += 1;
        }
        if !ok || sink.flush().is_err() {
            tracing::debug!("stdout closed");
            return;
        }
        written.fetch_add(n, Ordering::Relaxed);
    }
}
