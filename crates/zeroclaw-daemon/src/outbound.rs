//! The per-connection outbound queue and its writer (SPEC §3.3 "outbound queue", SPEC
//! §17.1 "Queued output is bounded per principal").
//!
//! Lines are queued against a byte budget of 16 MiB: producers wait while the queue is
//! full. A producer that has waited the stall timeout (30 s by default) for room declares the peer
//! stalled (it has read nothing for that long while its queue was full) and closes the
//! connection; producers then get [`Closed`] and carry on without this peer (a turn goes on
//! and is persisted). The writer coalesces queued lines into one write.
//!
//! Two rules bound what slow peers pin:
//! - a queue that stays above [`HIGH_WATER_BYTES`] for longer than the stall timeout is
//!   closed, even if its peer reads a little;
//! - once `initialize` names the connection's principal, its queued bytes also count in
//!   that principal's [`PrincipalQueue`], shared by all of its connections: a line that
//!   would take the total past [`PRINCIPAL_QUEUE_BYTES`] closes the connection it was for.
//!   Bytes leave the count when written, or all at once when the connection closes.
//!
//! Lines are [`Bytes`]: a session update fanned out to many subscribers is one shared
//! buffer, queued to each by reference.
//!
//! Where the transport offers a non-blocking second way to the socket ([`WriteNow`], an
//! accepted Unix socket), [`Outbound::send`] writes a line itself when nothing is queued
//! and the writer is idle: an answer leaves without waking the writer task. The socket's
//! turn (who writes now) keeps the two from interleaving; the rest of a line only partly
//! written that way is written first by the writer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use zeroclaw_ipc::WriteNow;

use crate::transport::{FrameSink, MAX_SLICES};

/// Bytes the queue may hold before producers wait.
pub const QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// How long a full queue may go without the peer reading before it is disconnected, and
/// how long a queue may stay above [`HIGH_WATER_BYTES`].
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// A queue above this for longer than the stall timeout is closed (SPEC §17.1).
pub const HIGH_WATER_BYTES: usize = 8 * 1024 * 1024;
/// Bytes queued to all of one principal's connections together (SPEC §17.1).
pub const PRINCIPAL_QUEUE_BYTES: usize = 64 * 1024 * 1024;
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

/// The bytes queued to all connections of one principal, against [`PRINCIPAL_QUEUE_BYTES`].
#[derive(Debug, Default)]
pub struct PrincipalQueue {
    queued: AtomicUsize,
}

impl PrincipalQueue {
    /// Counts `cost` more bytes, unless that would pass the limit.
    fn try_add(&self, cost: usize) -> bool {
        self.queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                now.checked_add(cost)
                    .filter(|&total| total <= PRINCIPAL_QUEUE_BYTES)
            })
            .is_ok()
    }

    fn add(&self, cost: usize) {
        self.queued.fetch_add(cost, Ordering::SeqCst);
    }

    fn sub(&self, cost: usize) {
        let _ = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_sub(cost))
            });
    }

    /// Bytes queued to the principal's connections now.
    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

/// What one connection has queued, and where else it is counted.
#[derive(Default)]
struct Account {
    /// Bytes queued and not yet written.
    queued: usize,
    /// The principal's count, once `initialize` named it; `queued` is included in it.
    principal: Option<Arc<PrincipalQueue>>,
    /// Since when `queued` has been above [`HIGH_WATER_BYTES`].
    above_since: Option<tokio::time::Instant>,
    /// A high-water watchdog is running.
    watching: bool,
    /// The unwritten rest of a line written partly by [`Outbound::send`]: the writer writes
    /// it before anything else.
    head: Option<Bytes>,
}

/// The socket's non-blocking way in, and whose turn it is to write to it.
struct Direct {
    socket: Arc<dyn WriteNow>,
    /// Set while somebody writes: the writer task for a whole batch, or a producer for one
    /// non-blocking write (never across an await).
    writing: AtomicBool,
}

impl Direct {
    fn try_take_turn(&self) -> bool {
        self.writing
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The writer's wait for its turn: a producer holds it for one system call at most.
    async fn take_turn(&self) {
        while !self.try_take_turn() {
            tokio::task::yield_now().await;
        }
    }

    fn give_back_turn(&self) {
        self.writing.store(false, Ordering::Release);
    }
}

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
    /// What is queued, for the high-water and per-principal rules.
    account: Arc<Mutex<Account>>,
    /// The socket's non-blocking way in, where the transport has one.
    direct: Option<Arc<Direct>>,
}

impl Outbound {
    /// Creates the queue; the receiving half goes to [`run_writer`].
    pub fn new(stall_timeout: Duration) -> (Outbound, mpsc::UnboundedReceiver<Bytes>) {
        Outbound::with_write_now(stall_timeout, None)
    }

    /// The same, for a transport with a non-blocking second way to its socket.
    pub fn with_write_now(
        stall_timeout: Duration,
        write_now: Option<Arc<dyn WriteNow>>,
    ) -> (Outbound, mpsc::UnboundedReceiver<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let out = Outbound {
            tx,
            budget: Arc::new(Semaphore::new(QUEUE_BYTES)),
            closed: CancellationToken::new(),
            is_closed: Arc::default(),
            stall_timeout,
            debt: Arc::default(),
            account: Arc::default(),
            direct: write_now.map(|socket| {
                Arc::new(Direct {
                    socket,
                    writing: AtomicBool::new(false),
                })
            }),
        };
        (out, rx)
    }

    fn account(&self) -> MutexGuard<'_, Account> {
        // A few additions under the lock; it stays consistent after a panic.
        self.account.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts this connection's queue in its principal's from now on (at `initialize`),
    /// what is queued already included.
    pub fn count_in(&self, principal: Arc<PrincipalQueue>) {
        let mut account = self.account();
        if self.is_closed() || account.principal.is_some() {
            return;
        }
        principal.add(account.queued);
        account.principal = Some(principal);
    }

    /// Counts `cost` bytes about to be queued: closes the connection (`Closed`) when they
    /// would take its principal past [`PRINCIPAL_QUEUE_BYTES`]; starts the high-water clock
    /// when they take the queue above [`HIGH_WATER_BYTES`].
    fn charge(&self, cost: usize) -> Result<(), Closed> {
        let mut account = self.account();
        if let Some(principal) = &account.principal
            && !principal.try_add(cost)
        {
            drop(account);
            tracing::warn!(
                "a principal's connections have {PRINCIPAL_QUEUE_BYTES} bytes queued; disconnecting one"
            );
            self.close();
            return Err(Closed);
        }
        account.queued += cost;
        if account.queued > HIGH_WATER_BYTES && account.above_since.is_none() {
            account.above_since = Some(tokio::time::Instant::now());
            if !std::mem::replace(&mut account.watching, true) {
                self.watch_high_water();
            }
        }
        Ok(())
    }

    /// Takes `cost` written (or dropped) bytes out of the counts.
    fn discharge(&self, cost: usize) {
        let mut account = self.account();
        let cost = cost.min(account.queued);
        account.queued -= cost;
        if let Some(principal) = &account.principal {
            principal.sub(cost);
        }
        if account.queued <= HIGH_WATER_BYTES {
            account.above_since = None;
        }
    }

    /// Queues one line (with its `\n`), waiting for room in the budget; or writes it at
    /// once when nothing is queued before it (see the module doc).
    pub async fn send(&self, line: impl Into<Bytes>) -> Result<(), Closed> {
        let line = line.into();
        if self.write_at_once(&line, |written| line.slice(written..)) {
            return Ok(());
        }
        let cost = cost_of(&line);
        // The common case: room in the queue, no timer needed.
        match self.budget.try_acquire_many(cost) {
            Ok(permit) => permit.forget(),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => self.wait_for_room(cost).await?,
        }
        self.charge(cost as usize)?;
        self.tx.send(line).map_err(|_| Closed)
    }

    /// Queues one line at once, never waiting: session streams fan one event out to many
    /// subscribers and must not be slowed by any of them. A line that finds the budget
    /// full is queued on credit; a peer whose queue stays above [`HIGH_WATER_BYTES`] for
    /// the stall timeout, or whose credit exceeds a second budget, is disconnected.
    pub fn push_now(&self, line: Bytes) -> Result<(), Closed> {
        self.reserve_now(cost_of(&line))?;
        self.tx.send(line).map_err(|_| Closed)
    }

    /// Counts `cost` bytes in the budget (on credit when it is full) and the account.
    fn reserve_now(&self, cost: u32) -> Result<(), Closed> {
        if self.is_closed() {
            return Err(Closed);
        }
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
            }
        }
        self.charge(cost as usize)
    }

    /// Writes `line` at once from the caller's buffer, as [`Outbound::send`] would, when
    /// the transport allows it and nothing is queued or being written (the rest of a
    /// partly written line is copied and queued ahead of everything else). False when
    /// nothing was written: the line must then be sent. The caller keeps its buffer, so a
    /// connection answering one call at a time reuses one buffer instead of allocating
    /// one per answer.
    pub fn try_write_now(&self, line: &[u8]) -> bool {
        self.write_at_once(line, |written| {
            Bytes::copy_from_slice(line.get(written..).unwrap_or_default())
        })
    }

    /// Writes `line` to the socket from the calling task when the transport allows it and
    /// nothing is queued or being written: one non-blocking write, no task woken. True
    /// when the line is taken care of: written whole, or partly with `rest(written)`
    /// queued ahead of everything else; false when nothing was written.
    fn write_at_once(&self, line: &[u8], rest: impl FnOnce(usize) -> Bytes) -> bool {
        let Some(direct) = &self.direct else {
            return false;
        };
        if line.is_empty() || self.is_closed() || !direct.try_take_turn() {
            return false;
        }
        // Our turn: the writer task writes nothing until it is given back, and whatever it
        // has taken from the queue still counts in the budget.
        let written = match self.is_drained() {
            // A failed write is the writer's to find and report; the line goes to it.
            true => direct.socket.write_now(line).unwrap_or(0),
            false => 0,
        };
        if written > 0 && written < line.len() {
            self.queue_head(rest(written));
        }
        direct.give_back_turn();
        written > 0
    }

    /// Queues the unwritten rest of a line for the writer to write first; called holding
    /// the turn, so the writer cannot have started on anything else.
    fn queue_head(&self, rest: Bytes) {
        if self.reserve_now(cost_of(&rest)).is_err() {
            return;
        }
        self.account().head = Some(rest);
        // An empty line wakes the writer (and costs one byte, like any other line).
        let _ = self.push_now(Bytes::new());
    }

    /// The rest of a partly written line, if one waits.
    fn take_head(&self) -> Option<Bytes> {
        self.direct.as_ref()?;
        self.account().head.take()
    }

    /// Watches the queue while it is above [`HIGH_WATER_BYTES`]: one that stays there for
    /// the stall timeout is closed, however much its peer reads meanwhile (SPEC §17.1).
    /// Started by the crossing that finds no watchdog running; ends once the queue is back
    /// under.
    fn watch_high_water(&self) {
        let out = self.clone();
        tokio::spawn(async move {
            loop {
                let deadline = {
                    let mut account = out.account();
                    match account.above_since {
                        Some(since) if !out.is_closed() => since + out.stall_timeout,
                        _ => {
                            account.watching = false;
                            return;
                        }
                    }
                };
                if deadline <= tokio::time::Instant::now() {
                    tracing::warn!(
                        "peer's queue stayed above {HIGH_WATER_BYTES} bytes for {:?}; disconnecting",
                        out.stall_timeout
                    );
                    out.close();
                    // Looping once more finds it closed and ends the watch.
                    continue;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = out.closed() => {}
                }
            }
        });
    }

    /// Gives back the budget of `cost` written bytes, repaying credit first.
    fn release(&self, cost: usize) {
        self.discharge(cost);
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

    /// Closes the connection: the writer stops, every waiting producer is released, and
    /// what is still queued (dropped with the queue) leaves the principal's count.
    pub fn close(&self) {
        self.is_closed.store(true, Ordering::SeqCst);
        self.closed.cancel();
        self.budget.close();
        let mut account = self.account();
        if let Some(principal) = account.principal.take() {
            principal.sub(account.queued);
        }
        account.queued = 0;
        account.above_since = None;
        account.head = None;
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

/// Moves what is queued now into `batch`, up to [`BATCH_BYTES`] and one vectored write's
/// lines ([`MAX_SLICES`]): the batch's own vector stays at most 32 KiB per connection.
fn drain_into(rx: &mut mpsc::UnboundedReceiver<Bytes>, batch: &mut Vec<Bytes>, bytes: &mut usize) {
    while *bytes < BATCH_BYTES && batch.len() < MAX_SLICES {
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
        if let Some(direct) = &out.direct {
            direct.take_turn().await;
        }
        if let Some(head) = out.take_head() {
            batch.insert(0, head);
        }
        let written = tokio::select! {
            r = sink.send_lines(&batch) => r,
            () = &mut closed => break,
        };
        if let Some(direct) = &out.direct {
            direct.give_back_turn();
        }
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

    /// A line of `n` bytes (with its newline).
    fn line(n: usize) -> Bytes {
        let mut text = vec![b'x'; n - 1];
        text.push(b'\n');
        Bytes::from(text)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_principals_connections_share_one_limit_and_the_one_passing_it_is_closed() {
        const MIB: usize = 1024 * 1024;
        let principal = Arc::new(PrincipalQueue::default());
        let conns: Vec<Outbound> = (0..3)
            .map(|_| {
                let (out, rx) = Outbound::new(DEFAULT_STALL_TIMEOUT);
                std::mem::forget(rx);
                out.count_in(Arc::clone(&principal));
                out
            })
            .collect();
        // 30 MiB on each of the first two: 60 MiB in all, under the 64.
        for out in &conns[..2] {
            for _ in 0..30 {
                out.push_now(line(MIB)).expect("under the limit");
            }
        }
        assert_eq!(principal.queued(), 60 * MIB);
        // The third passes the limit with its fifth MiB: it is the one closed.
        for _ in 0..4 {
            conns[2].push_now(line(MIB)).expect("still under");
        }
        assert_eq!(conns[2].push_now(line(MIB)), Err(Closed));
        assert!(conns[2].is_closed());
        assert_eq!(principal.queued(), 60 * MIB, "its queue left the count");
        // The others stay usable up to the limit; a connection that waits for room in
        // its own queue counts the same.
        conns[0].push_now(line(MIB)).expect("room again");
        let (late, rx) = Outbound::new(DEFAULT_STALL_TIMEOUT);
        std::mem::forget(rx);
        late.count_in(Arc::clone(&principal));
        late.send(line(MIB)).await.expect("room for one more");
        assert_eq!(principal.queued(), 62 * MIB);
        assert_eq!(late.send(line(3 * MIB)).await, Err(Closed));
        assert!(!conns[0].is_closed() && !conns[1].is_closed());
        assert_eq!(principal.queued(), 61 * MIB);
        // Written bytes leave the count.
        conns[1].release(10 * MIB);
        assert_eq!(principal.queued(), 51 * MIB);
        let (fresh, rx) = Outbound::new(DEFAULT_STALL_TIMEOUT);
        std::mem::forget(rx);
        fresh.count_in(Arc::clone(&principal));
        for _ in 0..13 {
            fresh.push_now(line(MIB)).expect("written bytes made room");
        }
        assert_eq!(principal.queued(), 64 * MIB, "up to the limit exactly");
        assert_eq!(fresh.push_now(line(MIB)), Err(Closed));
        assert!(!conns[0].is_closed() && !conns[1].is_closed());
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_queue_above_high_water_for_the_stall_timeout_is_closed_though_it_reads() {
        const MIB: usize = 1024 * 1024;
        let stall = Duration::from_secs(30);
        let (out, rx) = Outbound::new(stall);
        std::mem::forget(rx);
        for _ in 0..12 {
            out.push_now(line(MIB)).expect("queued");
        }
        // The peer reads 64 KiB a second: never back under 8 MiB.
        for _ in 0..29 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            out.release(64 * 1024);
            assert!(!out.is_closed(), "closed before the stall timeout");
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(out.is_closed(), "above 8 MiB for the whole stall timeout");

        // A queue that gets back under in time starts a new clock when it crosses again.
        let (out, rx) = Outbound::new(stall);
        std::mem::forget(rx);
        for _ in 0..9 {
            out.push_now(line(MIB)).expect("queued");
        }
        tokio::time::sleep(Duration::from_secs(20)).await;
        out.release(2 * MIB);
        tokio::time::sleep(Duration::from_secs(1)).await;
        out.push_now(line(2 * MIB)).expect("above again");
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert!(
            !out.is_closed(),
            "the clock restarted when the queue went under"
        );
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(out.is_closed());
    }
}

#[cfg(test)]
mod write_at_once_tests;
