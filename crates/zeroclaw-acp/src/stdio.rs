//! The editor side of `zeroclaw acp`: NDJSON JSON-RPC on stdin/stdout. One writer thread
//! owns stdout (so frames never interleave and nothing else reaches it; a plain thread
//! with blocking writes costs one wake-up per burst, where async stdout costs a
//! blocking-pool hand-off per write and per flush); requests we send
//! to the editor (`session/request_permission`, `elicitation/create`) are numbered and
//! matched to their answers through a pending map.

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
        let params = serde_json::to_value(params)
            .map_err(|e| PeerError::Remote(ErrorObject::internal(e.to_string())))?;
        let ticket = self.pending.register().ok_or(PeerError::Closed)?;
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
