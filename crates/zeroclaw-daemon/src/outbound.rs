//! The per-connection outbound queue and its writer (SPEC §3.3 "outbound queue").
//!
//! Lines are queued against a byte budget of 16 MiB: producers wait while the queue is
//! full. A producer that has waited the stall timeout (30 s by default) for room declares the peer
//! stalled (it has read nothing for that long while its queue was full) and closes the
//! connection; producers then get [`Closed`] and carry on without this peer (a turn goes on
//! and is persisted). The writer coalesces queued lines into one write.
//!
//! Lines are [`Bytes`]: a session update fanned out to many subscribers is one shared
//! buffer, queued to each by reference.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::transport::FrameSink;

/// Bytes the queue may hold before producers wait.
pub const QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// How long a full queue may go without the peer reading before it is disconnected.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest batch of queued lines handed to the transport in one write.
const BATCH_BYTES: usize = 256 * 1024;
/// A batch smaller than this waits one scheduling round for more while streaming.
const GATHER_BYTES: usize = 16 * 1024;
/// Writes closer together than this mean lines are streaming.
const STREAMING_GAP: Duration = Duration::from_micros(200);
/// How long closing may wait on the peer (a WebSocket close frame, a TLS close-notify)
/// before the socket is simply dropped: within the 2 s of SPEC §17 "Every wait ends".
pub const CLOSE_WAIT: Duration = Duration::from_millis(1500);

/// The connection is closed; nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// A cloneable handle for queueing lines to one connection.
#[derive(Clone)]
pub struct Outbound {
    tx: mpsc::UnboundedSender<Bytes>,
    budget: Arc<Semaphore>,
    closed: CancellationToken,
    /// Set with `closed`: a check per queued line that takes no lock (the token's does).
    is_closed: Arc<AtomicBool>,
    stall_timeout: Duration,
    /// Bytes queued by [`Outbound::push_now`] beyond the budget; repaid first as lines are
    /// written.
    debt: Arc<AtomicUsize>,
    /// Bytes handed to the sink so far (the stall watchdog's measure of progress).
    written: Arc<AtomicU64>,
    /// A stall watchdog is running for the current overdraft.
    watching: Arc<AtomicBool>,
}

impl Outbound {
    /// Creates the queue; the receiving half goes to [`run_writer`].
    pub fn new(stall_timeout: Duration) -> (Outbound, mpsc::UnboundedReceiver<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let out = Outbound {
            tx,
            budget: Arc::new(Semaphore::new(QUEUE_BYTES)),
            closed: CancellationToken::new(),
            is_closed: Arc::default(),
            stall_timeout,
            debt: Arc::default(),
            written: Arc::default(),
            watching: Arc::default(),
        };
        (out, rx)
    }

    /// Queues one line (with its `\n`), waiting for room in the budget.
    pub async fn send(&self, line: impl Into<Bytes>) -> Result<(), Closed> {
        let line = line.into();
        let cost = cost_of(&line);
        // The common case: room in the queue, no timer needed.
        match self.budget.try_acquire_many(cost) {
            Ok(permit) => permit.forget(),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => self.wait_for_room(cost).await?,
        }
        self.tx.send(line).map_err(|_| Closed)
    }

    /// Queues one line at once, never waiting: session streams fan one event out to many
    /// subscribers and must not be slowed by any of them. A line that finds the budget
    /// full is queued on credit; a peer whose queue stays over budget without reading for
    /// the stall timeout, or whose credit exceeds a second budget, is disconnected.
    pub fn push_now(&self, line: Bytes) -> Result<(), Closed> {
        if self.is_closed() {
            return Err(Closed);
        }
        let cost = cost_of(&line);
        match self.budget.try_acquire_many(cost) {
            Ok(permit) => permit.forget(),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let debt = self.debt.fetch_add(cost as usize, Ordering::SeqCst) + cost as usize;
                if debt > QUEUE_BYTES {
                    tracing::warn!("peer's queue is more than twice full; disconnecting");
                    self.close();
                    return Err(Closed);
                }
                self.watch_stall();
            }
        }
        self.tx.send(line).map_err(|_| Closed)
    }

    /// Starts (once per overdraft) a watchdog that disconnects the peer if nothing is
    /// written for the stall timeout while the queue is over budget.
    fn watch_stall(&self) {
        if self.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let out = self.clone();
        tokio::spawn(async move {
            let mut seen = out.written.load(Ordering::SeqCst);
            loop {
                tokio::select! {
                    () = tokio::time::sleep(out.stall_timeout) => {}
                    () = out.closed() => break,
                }
                let now = out.written.load(Ordering::SeqCst);
                if out.debt.load(Ordering::SeqCst) == 0 {
                    break;
                }
                if now == seen {
                    tracing::warn!(
                        "peer read nothing for {:?} with a full queue; disconnecting",
                        out.stall_timeout
                    );
                    out.close();
                    break;
                }
                seen = now;
            }
            out.watching.store(false, Ordering::SeqCst);
        });
    }

    /// Gives back the budget of `cost` written bytes, repaying credit first.
    fn release(&self, cost: usize) {
        self.written.fetch_add(cost as u64, Ordering::SeqCst);
        let mut debt = self.debt.load(Ordering::SeqCst);
        let mut rest = cost;
        while debt > 0 {
            let repay = debt.min(rest);
            match self
                .debt
                .compare_exchange(debt, debt - repay, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    rest -= repay;
                    break;
                }
                Err(now) => debt = now,
            }
        }
        if rest > 0 {
            self.budget.add_permits(rest);
        }
    }

    async fn wait_for_room(&self, cost: u32) -> Result<(), Closed> {
        let acquire = self.budget.acquire_many(cost);
        let permit = tokio::select! {
            permit = tokio::time::timeout(self.stall_timeout, acquire) => permit,
            () = self.closed.cancelled() => return Err(Closed),
        };
        match permit {
            Ok(Ok(permit)) => {
                permit.forget();
                Ok(())
            }
            Ok(Err(_)) => Err(Closed),
            Err(_) => {
                tracing::warn!(
                    "peer read nothing for {:?} with a full queue; disconnecting",
                    self.stall_timeout
                );
                self.close();
                Err(Closed)
            }
        }
    }

    /// Closes the connection: the writer stops and every waiting producer is released.
    pub fn close(&self) {
        self.is_closed.store(true, Ordering::SeqCst);
        self.closed.cancel();
        self.budget.close();
    }

    /// Closes the connection once what is queued now (and the answer being built) had a
    /// moment to be written: used to refuse a peer with an error line, then hang up.
    pub fn close_after_flush(&self) {
        let out = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            out.drain(Duration::from_secs(2)).await;
            out.close();
        });
    }

    pub fn is_closed(&self) -> bool {
        self.is_closed.load(Ordering::Relaxed)
    }

    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Whether every queued line has been written.
    pub fn is_drained(&self) -> bool {
        self.debt.load(Ordering::SeqCst) == 0 && self.budget.available_permits() == QUEUE_BYTES
    }

    /// Waits (up to `limit`) until everything queued so far has been written.
    pub async fn drain(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_drained() && !self.is_closed() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Moves what is queued now into `batch`, up to [`BATCH_BYTES`].
fn drain_into(rx: &mut mpsc::UnboundedReceiver<Bytes>, batch: &mut Vec<Bytes>, bytes: &mut usize) {
    while *bytes < BATCH_BYTES {
        match rx.try_recv() {
            Ok(line) => {
                *bytes += line.len();
                batch.push(line);
            }
            Err(_) => break,
        }
    }
}

fn cost_of(line: &[u8]) -> u32 {
    // A single line is at most 8 MiB, so the cost always fits the 16 MiB budget.
    line.len().clamp(1, QUEUE_BYTES) as u32
}

/// Writes queued lines to the sink until the connection closes or the sink fails.
///
/// Lines queued meanwhile go out in one write. While lines keep coming (the last write was
/// less than [`STREAMING_GAP`] ago) a small batch first lets the other tasks run once, so a
/// streaming turn's next lines join it: fewer writes for the daemon and fewer reads for
/// the peer, at the cost of one scheduling round.
pub async fn run_writer<S: FrameSink>(
    mut sink: S,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    out: Outbound,
) {
    let mut batch: Vec<Bytes> = Vec::new();
    let closed = out.closed.clone();
    let closed = closed.cancelled();
    tokio::pin!(closed);
    let mut last_write: Option<Instant> = None;
    loop {
        let first = tokio::select! {
            line = rx.recv() => line,
            () = &mut closed => None,
        };
        let Some(first) = first else { break };
        let mut bytes = first.len();
        batch.push(first);
        drain_into(&mut rx, &mut batch, &mut bytes);
        if bytes < GATHER_BYTES && last_write.is_some_and(|t| t.elapsed() < STREAMING_GAP) {
            tokio::task::yield_now().await;
            drain_into(&mut rx, &mut batch, &mut bytes);
        }
        let written = tokio::select! {
            r = sink.send_lines(&batch) => r,
            () = &mut closed => break,
        };
        last_write = Some(Instant::now());
        let cost: u32 = batch.iter().map(|l| cost_of(l)).sum();
        batch.clear();
        out.release(cost as usize);
        if let Err(e) = written {
            tracing::debug!("write failed: {e}");
            break;
        }
    }
    out.close();
    if tokio::time::timeout(CLOSE_WAIT, sink.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("peer did not take the close in {CLOSE_WAIT:?}; dropping the socket");
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::Mutex;

    use super::*;
    use crate::transport::BoxFuture;

    /// A sink that records each write's lines.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<Bytes>>>>);

    impl FrameSink for Recorder {
        fn send_lines<'a>(&'a mut self, lines: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
            self.0.lock().unwrap().push(lines.to_vec());
            Box::pin(async { Ok(()) })
        }

        fn shutdown(&mut self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_streaming_producers_lines_go_out_in_order_and_several_to_a_write() {
        const LINES: usize = 2000;
        let (out, rx) = Outbound::new(DEFAULT_STALL_TIMEOUT);
        let sink = Recorder::default();
        let writer = tokio::spawn(run_writer(sink.clone(), rx, out.clone()));
        for i in 0..LINES {
            out.push_now(Bytes::from(format!("{i}\n"))).unwrap();
            // Like a turn between two provider events: other tasks get to run.
            tokio::task::yield_now().await;
        }
        out.drain(Duration::from_secs(5)).await;
        out.close();
        writer.await.unwrap();
        let writes = sink.0.lock().unwrap();
        let lines: Vec<Bytes> = writes.iter().flatten().cloned().collect();
        let sent: Vec<Bytes> = (0..LINES).map(|i| Bytes::from(format!("{i}\n"))).collect();
        assert_eq!(lines, sent, "every line once, in order");
        // Without gathering, each line would be its own write.
        assert!(
            writes.len() < LINES * 3 / 4,
            "{} writes for {LINES} streamed lines",
            writes.len()
        );
    }
}
