//! zeroclaw-store: the durable session history of the zeroclaw daemon, in one SQLite file
//! (`<data dir>/zeroclaw.db`). It knows nothing about sockets or providers: provider
//! messages are opaque JSON ([`serde_json::Value`]).
//!
//! Three records, three jobs (see DURABILITY.md):
//! - the **transcript** (what clients see): append-only rows numbered by `seq`, dense from
//!   1 per session, never renumbered or deleted by trimming;
//! - **checkpoints**: one per ACP turn, opened with the user prompt, progress events
//!   upserted as steps complete, closed when the turn ends;
//! - **snapshots**: the retained provider context, each naming the transcript `seq` it
//!   covers.
//!
//! # Threading
//!
//! One dedicated OS thread owns the [`rusqlite::Connection`]. [`Store`] is a cheap
//! `Clone + Send + Sync` handle: every async method sends a closure over a bounded channel
//! and awaits a oneshot reply. Each writing call is exactly one transaction and returns
//! only after it committed. Dropping a call's future does not cancel it: a write that
//! reached the thread still commits. The thread ends (and the database is closed) when the
//! last handle is dropped; that drop waits for calls already queued to finish.
//!
//! # A turn (ACP)
//!
//! ```text
//! begin_turn(key, turn, prompt)          -> user row + checkpoint `open`
//! record_progress(key, turn, Progress)*  -> checkpoint events (text upserted per segment)
//! finish_turn(key, turn, status, rows)   -> final rows + checkpoint closed
//! save_snapshot(key, covers_seq, msgs)   -> after a trim; send `history_trimmed` after Ok
//! ```
//! `begin_turn` also records the turn's retained-context boundary (the latest snapshot's
//! id with the prompt's seq), so the context before any turn can be rebuilt:
//! [`Store::rewind`] flags that turn's rows and later ones `rewound` and commits that
//! context as a new snapshot, in one transaction; [`Store::fork`] copies a session's
//! history up to a turn into a new session (SPEC §18). Rewound and `compaction` rows never
//! reach the provider context.
//!
//! After a crash, [`Store::recover_all_interrupted`] (daemon start) or [`Store::recover`]
//! (rehydrating one session) turn open checkpoints into transcript rows plus one
//! `[interrupted]` marker, and return the context to restore.

#![forbid(unsafe_code)]

mod compaction;
mod db;
mod error;
mod history;
mod json;
mod large_text;
mod push;
mod recovery;
mod rewind;
mod schedules;
mod schema;
mod sessions;
mod settings;
mod turns;
mod types;
mod usage;
mod webhooks;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

pub use compaction::CompactionCommit;
pub use error::{Result, StoreError};
pub use history::{char_floor, json_size as message_json_size};
pub use json::{EncodeJson, SerdeJson, to_json_exact};
pub use push::{MAX_PUSH_SUBSCRIPTIONS, PushSubscription};
pub use recovery::provider_safe;
pub use rewind::ToMessages;
pub use schedules::{RUNS_KEPT, ScheduleRow, ScheduleRunRow};
pub use schema::SCHEMA_VERSION;
pub use types::*;
pub use usage::UsageDay;
pub use webhooks::{Claim, DELIVERY_TTL_MS, Delivery};

use db::Db;

/// Calls waiting for the store thread; senders wait (asynchronously) when it is full.
const QUEUE_DEPTH: usize = 256;

type Job = Box<dyn FnOnce(&mut Db) + Send>;

/// Handle to the store. Clone freely; all clones share one connection thread.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: Option<mpsc::Sender<Job>>,
    fail_writes: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop once queued jobs ran; joining makes the
        // database closed by the time the last handle is gone (a reopen sees a clean file).
        self.jobs.take();
        let handle = self.thread.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Store {
    /// Opens (creating if needed, mode 0600) the database at `path`, sets WAL, foreign keys,
    /// busy timeout and `synchronous = FULL`, and runs pending migrations. Blocks the caller
    /// for the time it takes; see [`Store::open`] for async callers.
    pub fn open_blocking(path: impl AsRef<Path>) -> Result<Store> {
        let (tx, rx) = std::sync::mpsc::channel();
        let store = Self::spawn(path.as_ref(), move |r| {
            let _ = tx.send(r);
        })?;
        rx.recv().map_err(|_| StoreError::Closed)??;
        Ok(store)
    }

    /// Async form of [`Store::open_blocking`]: the file is opened on the store thread.
    pub async fn open(path: impl AsRef<Path>) -> Result<Store> {
        let (tx, rx) = oneshot::channel();
        let store = Self::spawn(path.as_ref(), move |r| {
            let _ = tx.send(r);
        })?;
        rx.await.map_err(|_| StoreError::Closed)??;
        Ok(store)
    }

    fn spawn(path: &Path, ready: impl FnOnce(Result<()>) + Send + 'static) -> Result<Store> {
        let (jobs, mut rx) = mpsc::channel::<Job>(QUEUE_DEPTH);
        let fail_writes = Arc::new(AtomicBool::new(false));
        let thread_fail = fail_writes.clone();
        let thread_path = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("zeroclaw-store".into())
            .spawn(move || {
                let conn = match schema::open_connection(&thread_path) {
                    Ok(conn) => {
                        ready(Ok(()));
                        conn
                    }
                    Err(e) => return ready(Err(e)),
                };
                let mut db = Db {
                    conn,
                    fail_writes: thread_fail,
                };
                while let Some(job) = rx.blocking_recv() {
                    // A panicking job drops its reply sender (its caller sees `Closed`) and
                    // its open transaction (rolled back); the thread keeps serving.
                    if catch_unwind(AssertUnwindSafe(|| job(&mut db))).is_err() {
                        tracing::error!("store job panicked; its transaction was rolled back");
                    }
                }
            })
            .map_err(|source| StoreError::Io {
                path: path.display().to_string(),
                source,
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                jobs: Some(jobs),
                fail_writes,
                thread: Mutex::new(Some(handle)),
                path: path.to_path_buf(),
            }),
        })
    }

    /// Runs `f` on the store thread and returns its result.
    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |db| {
            let _ = tx.send(f(db));
        });
        let jobs = self.inner.jobs.as_ref().ok_or(StoreError::Closed)?;
        jobs.send(job).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Claims a webhook delivery id (SPEC §23.1): records `delivery` unless its id was
    /// seen in the last 24 h, in one transaction.
    pub async fn claim_delivery(&self, delivery: Delivery) -> Result<Claim> {
        self.call(move |db| webhooks::claim(db, delivery)).await
    }

    /// Sets what became of a recorded webhook delivery.
    pub async fn finish_delivery(
        &self,
        webhook: &str,
        delivery_id: &str,
        status: &str,
        error: Option<String>,
    ) -> Result<()> {
        let (webhook, delivery_id, status) = (
            webhook.to_owned(),
            delivery_id.to_owned(),
            status.to_owned(),
        );
        self.call(move |db| webhooks::finish(db, &webhook, &delivery_id, &status, error.as_deref()))
            .await
    }

    /// The last `limit` deliveries of `webhook`, newest first.
    pub async fn deliveries(&self, webhook: &str, limit: u32) -> Result<Vec<Delivery>> {
        let webhook = webhook.to_owned();
        self.call(move |db| webhooks::list(db, &webhook, limit))
            .await
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Failure injection for tests: while set, every writing call runs its statements and
    /// then rolls back and returns [`StoreError::InjectedFailure`]. Reads keep working.
    #[doc(hidden)]
    pub fn set_fail_writes(&self, fail: bool) {
        self.inner.fail_writes.store(fail, Ordering::SeqCst);
    }

    /// Creates the database file at `path` with the schema of `version` only, as an older
    /// build left it (for migration tests).
    #[doc(hidden)]
    pub fn create_at_version(path: impl AsRef<Path>, version: i64) -> Result<()> {
        schema::create_at_version(path.as_ref(), version)
    }

    /// Schema version of the open database (equals [`SCHEMA_VERSION`] after open).
    pub async fn schema_version(&self) -> Result<i64> {
        self.call(|db| schema::user_version(&db.conn)).await
    }

    // ----- sessions -------------------------------------------------------------------

    /// Creates the session row, or finds an existing one (`resumed: true`; the row is not
    /// modified). A killed row is [`StoreError::Killed`].
    pub async fn open_session(&self, new: NewSession) -> Result<OpenedSession> {
        self.call(move |db| sessions::open_session(db, new)).await
    }

    /// The row, killed or not, with its message count.
    pub async fn get_session(&self, key: &SessionKey) -> Result<Option<SessionRow>> {
        let key = key.clone();
        self.call(move |db| sessions::get_session(db, &key)).await
    }

    /// Non-killed rows (of `mode`, if given), oldest first, with message counts.
    pub async fn list_sessions(&self, mode: Option<Mode>) -> Result<Vec<SessionRow>> {
        self.call(move |db| sessions::list_sessions(db, mode)).await
    }

    /// One page of non-killed rows, newest activity first (SPEC §17 `session/list`).
    pub async fn list_page(&self, query: ListQuery) -> Result<SessionPage> {
        self.call(move |db| sessions::list_page(db, &query)).await
    }

    /// Every principal owning a session row, killed ones included (SPEC §17.1: a name that
    /// owns sessions is not handed to a new user by a non-admin).
    pub async fn owners(&self) -> Result<Vec<String>> {
        self.call(sessions::owners).await
    }

    /// Tombstones the row: never resumed or recovered again; its transcript stays readable.
    /// [`StoreError::NotFound`] if there is no row; killing twice is a no-op.
    pub async fn kill(&self, key: &SessionKey) -> Result<()> {
        let key = key.clone();
        self.call(move |db| sessions::kill(db, &key)).await
    }

    /// Removes the row of exactly this `(mode, session_id)` with its transcript,
    /// checkpoints and snapshots. Returns whether a row existed.
    pub async fn delete(&self, key: &SessionKey) -> Result<bool> {
        let key = key.clone();
        self.call(move |db| sessions::delete(db, &key)).await
    }

    /// Appends rows without a checkpoint (chat sessions' plain history); returns their seqs.
    pub async fn append_rows(
        &self,
        key: &SessionKey,
        turn_id: Option<&str>,
        rows: Vec<NewRow>,
    ) -> Result<Vec<i64>> {
        let key = key.clone();
        let turn_id = turn_id.map(str::to_owned);
        self.call(move |db| sessions::append_rows(db, &key, turn_id.as_deref(), &rows))
            .await
    }

    // ----- settings and usage (SPEC §16) ----------------------------------------------

    /// The session's saved settings and token totals (defaults when none were saved);
    /// `None` when there is no such session.
    pub async fn settings(&self, key: &SessionKey) -> Result<Option<SessionSettings>> {
        let key = key.clone();
        self.call(move |db| settings::get(db, &key)).await
    }

    /// Saves the session's autonomy and model overrides (`None` = the agent's).
    pub async fn set_overrides(
        &self,
        key: &SessionKey,
        autonomy: Option<String>,
        model: Option<String>,
    ) -> Result<()> {
        let key = key.clone();
        self.call(move |db| settings::set_overrides(db, &key, autonomy, model))
            .await
    }

    /// Saves the session's token total and context size.
    pub async fn set_usage(
        &self,
        key: &SessionKey,
        total_tokens: u64,
        context_tokens: u64,
    ) -> Result<()> {
        let key = key.clone();
        self.call(move |db| settings::set_usage(db, &key, total_tokens, context_tokens))
            .await
    }

    // ----- daily usage (SPEC §24.2) ------------------------------------------------

    /// Adds one provider call's tokens and cost to its day, principal and agent.
    pub async fn add_daily_usage(&self, row: UsageDay) -> Result<()> {
        self.call(move |db| usage::add(db, &row)).await
    }

    /// A principal's tokens and cost on `day` (`YYYY-MM-DD`, UTC), over all agents.
    pub async fn daily_usage(&self, day: &str, principal: &str) -> Result<(u64, f64)> {
        let (day, principal) = (day.to_owned(), principal.to_owned());
        self.call(move |db| usage::day_total(db, &day, &principal))
            .await
    }

    /// Daily rows from `since` on, of one principal (`Some`) or all; at most `limit`.
    pub async fn usage_summary(
        &self,
        since: &str,
        principal: Option<&str>,
        limit: usize,
    ) -> Result<Vec<UsageDay>> {
        let (since, principal) = (since.to_owned(), principal.map(str::to_owned));
        self.call(move |db| usage::summary(db, &since, principal.as_deref(), limit))
            .await
    }

    // ----- turns (ACP) ----------------------------------------------------------------

    /// One transaction: the user prompt row and an `open` checkpoint whose `started_seq` is
    /// that row's seq (returned). Refuses killed rows, chat sessions, a reused turn id, and
    /// a session whose previous turn is still open ([`StoreError::TurnStillOpen`]: call
    /// [`Store::recover`] first).
    pub async fn begin_turn(&self, key: &SessionKey, turn_id: &str, prompt: &str) -> Result<i64> {
        self.begin_turn_owned(key, turn_id, prompt.to_owned()).await
    }

    /// [`Store::begin_turn`] of a prompt the caller hands over (a large prompt is then not
    /// copied once more for the write).
    pub async fn begin_turn_owned(
        &self,
        key: &SessionKey,
        turn_id: &str,
        prompt: String,
    ) -> Result<i64> {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        self.call(move |db| turns::begin_turn(db, &key, &turn_id, &prompt))
            .await
    }

    /// One transaction recording a step of an open turn; returns its event number. Text is
    /// upserted per segment (pass the accumulated text of the segment, at every step
    /// boundary and at least every 250 ms while streaming); tool calls and results are
    /// upserted per tool call id, so recording the same step twice never duplicates it.
    pub async fn record_progress(
        &self,
        key: &SessionKey,
        turn_id: &str,
        progress: Progress,
    ) -> Result<u32> {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        self.call(move |db| turns::record_progress(db, &key, &turn_id, &progress))
            .await
    }

    /// [`Store::record_progress`] of `Progress::Text { segment, text }` encoded from the
    /// borrowed `text`: a persister that keeps accumulating a long streamed text hands the
    /// store only its JSON, never a copy of the text as well. The text is encoded when
    /// this is called, not when the returned future is first polled.
    pub fn record_text(
        &self,
        key: &SessionKey,
        turn_id: &str,
        segment: u32,
        text: &str,
    ) -> impl std::future::Future<Output = Result<u32>> + Send + 'static + use<> {
        // Encoded now, so the caller may drop its text before awaiting the write.
        let encoded = turns::EncodedProgress::text(segment, text);
        let (store, key, turn_id) = (self.clone(), key.clone(), turn_id.to_owned());
        async move {
            let encoded = encoded?;
            store
                .call(move |db| turns::record_encoded(db, &key, &turn_id, encoded))
                .await
        }
    }

    /// [`Store::record_text`] of only the text streamed since the last write of `segment`:
    /// `piece` is appended to what is recorded (one new row; nothing already written is
    /// written again), so the checkpoint of a long answer costs what streamed since, not
    /// the whole answer so far. The caller appends each piece once and in order, and only
    /// after the previous write succeeded (a failed write appended nothing). Encoded when
    /// called, like `record_text`.
    pub fn append_text(
        &self,
        key: &SessionKey,
        turn_id: &str,
        segment: u32,
        piece: &str,
    ) -> impl std::future::Future<Output = Result<u32>> + Send + 'static + use<> {
        let encoded = turns::EncodedProgress::text(segment, piece);
        let (store, key, turn_id) = (self.clone(), key.clone(), turn_id.to_owned());
        async move {
            let encoded = encoded?;
            store
                .call(move |db| turns::append_text(db, &key, &turn_id, segment, encoded))
                .await
        }
    }

    /// One transaction appending the turn's final rows (build them with
    /// [`Progress::to_row`] / [`NewRow`] helpers) and closing its checkpoint with `status`
    /// (`Completed`, `Cancelled` or `Failed`). Returns the rows' seqs. Fails with
    /// [`StoreError::TurnNotOpen`] if the turn was already closed (e.g. recovered).
    /// Allowed on a killed row (and so is `record_progress`): a kill cancels the running
    /// turn first, and that turn may still persist what it did.
    pub async fn finish_turn(
        &self,
        key: &SessionKey,
        turn_id: &str,
        status: CheckpointStatus,
        rows: Vec<NewRow>,
    ) -> Result<Vec<i64>> {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        self.call(move |db| turns::finish_turn(db, &key, &turn_id, status, &rows))
            .await
    }

    /// [`Store::finish_turn`] that hands `rows` back once written: a caller that moved large
    /// texts out of its own messages into the rows puts them back, so a long answer is not
    /// held twice while it is written. The rows come back `None` only when the store is
    /// closed (the result is then [`StoreError::Closed`]).
    pub async fn finish_turn_lent(
        &self,
        key: &SessionKey,
        turn_id: &str,
        status: CheckpointStatus,
        rows: Vec<NewRow>,
    ) -> (Result<Vec<i64>>, Option<Vec<NewRow>>) {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        let outcome = self
            .call(move |db| Ok((turns::finish_turn(db, &key, &turn_id, status, &rows), rows)))
            .await;
        match outcome {
            Ok((written, rows)) => (written, Some(rows)),
            Err(e) => (Err(e), None),
        }
    }

    /// A turn's checkpoint and events (`None` if the turn is unknown).
    pub async fn checkpoint(&self, key: &SessionKey, turn_id: &str) -> Result<Option<Checkpoint>> {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        self.call(move |db| turns::checkpoint(db, &key, &turn_id))
            .await
    }

    /// One transaction saving the retained provider context `messages` as covering
    /// transcript rows `..= covers_seq`; returns the snapshot id only after commit (send
    /// `history_trimmed` then, never before). Older snapshots of the session are dropped.
    /// Take snapshots between turns: `covers_seq` is a transcript boundary, and rows after
    /// it are replayed on recovery.
    pub async fn save_snapshot<T: Serialize + Send + 'static>(
        &self,
        key: &SessionKey,
        covers_seq: i64,
        messages: T,
    ) -> Result<i64> {
        let key = key.clone();
        self.call(move |db| turns::save_snapshot(db, &key, covers_seq, &SerdeJson(&messages)))
            .await
    }

    /// [`Store::save_snapshot`] that hands `messages` back once written: a caller moves its
    /// retained context in and puts it back, and a large snapshot is encoded straight into
    /// its row, so the context is never held a second time as JSON. The messages come back
    /// `None` only when the store is closed (the result is then [`StoreError::Closed`]).
    pub async fn save_snapshot_lent<T: EncodeJson + Send + 'static>(
        &self,
        key: &SessionKey,
        covers_seq: i64,
        messages: T,
    ) -> (Result<i64>, Option<T>) {
        let key = key.clone();
        let outcome = self
            .call(move |db| {
                Ok((
                    turns::save_snapshot(db, &key, covers_seq, &messages),
                    messages,
                ))
            })
            .await;
        match outcome {
            Ok((saved, messages)) => (saved, Some(messages)),
            Err(e) => (Err(e), None),
        }
    }

    /// A compaction (SPEC §18), in ONE transaction: the visible `compaction` row of
    /// `turn_id` holding `summary`, and the snapshot `messages` covering rows `..=
    /// covers_seq` (`None` = up to and including that new row). Send `context_compacted`
    /// only after this returned `Ok`.
    pub async fn commit_compaction(
        &self,
        key: &SessionKey,
        turn_id: &str,
        summary: &str,
        covers_seq: Option<i64>,
        messages: impl EncodeJson + Send + 'static,
    ) -> Result<CompactionCommit> {
        let (key, turn_id, summary) = (key.clone(), turn_id.to_owned(), summary.to_owned());
        self.call(move |db| compaction::commit(db, &key, &turn_id, &summary, covers_seq, &messages))
            .await
    }

    // ----- going back, branching off, naming (SPEC §18) ---------------------------------

    /// One transaction going back to just before turn `turn_id`: that turn's rows and every
    /// later row are flagged rewound (kept, never renumbered) and a new snapshot covering
    /// the last seq holds the context as it was before the turn's prompt (`to_messages`
    /// converts the rebuilt context). Refuses an open turn ([`StoreError::TurnStillOpen`]),
    /// an unknown turn ([`StoreError::TurnNotFound`]) and killed rows. When every turn from
    /// `turn_id` on is already rewound nothing is written (`rewound_turns` is empty).
    pub async fn rewind(
        &self,
        key: &SessionKey,
        turn_id: &str,
        to_messages: ToMessages,
    ) -> Result<Rewound> {
        let (key, turn_id) = (key.clone(), turn_id.to_owned());
        self.call(move |db| rewind::rewind(db, &key, &turn_id, to_messages))
            .await
    }

    /// One transaction creating ACP session `new_session_id` (same agent, owner, cwd,
    /// surface and saved settings as the source) whose transcript is a copy of the source's
    /// visible rows up to the end of the chosen turn (default: the last finished one) and
    /// whose snapshot is the source's context after that turn. The source is unchanged.
    pub async fn fork(&self, req: ForkRequest, to_messages: ToMessages) -> Result<Forked> {
        self.call(move |db| rewind::fork(db, &req, to_messages))
            .await
    }

    /// Records the directory the session works in (`session/new` resuming it with a
    /// `cwd`, SPEC §22), so `session/list {cwd}` finds it there.
    pub async fn set_cwd(&self, key: &SessionKey, cwd: &str) -> Result<()> {
        let (key, cwd) = (key.clone(), cwd.to_owned());
        self.call(move |db| sessions::set_cwd(db, &key, &cwd)).await
    }

    /// Sets the session's title (killed rows included: their transcript stays readable).
    pub async fn set_title(&self, key: &SessionKey, title: &str) -> Result<()> {
        let (key, title) = (key.clone(), title.to_owned());
        self.call(move |db| rewind::set_title(db, &key, &title))
            .await
    }

    // ----- reading ----------------------------------------------------------------------

    /// The visible transcript, ascending by seq: the last `limit` rows before `before_seq`
    /// (exclusive) that fit `max_bytes`; `total` counts every row of the session. Killed
    /// sessions stay readable.
    pub async fn messages(&self, key: &SessionKey, query: MessagesQuery) -> Result<MessagesPage> {
        let key = key.clone();
        self.call(move |db| history::messages(db, &key, query))
            .await
    }

    /// The model context as it stands (no recovery, no writes). See [`RestoredContext`].
    pub async fn context(&self, key: &SessionKey) -> Result<RestoredContext> {
        let key = key.clone();
        self.call(move |db| recovery::context(db, &key)).await
    }

    // ----- schedules (SPEC §24.1) --------------------------------------------------------

    /// Saves a schedule (inserted, or replaced but for its creation time).
    pub async fn save_schedule(&self, row: ScheduleRow) -> Result<()> {
        self.call(move |db| schedules::save(db, row)).await
    }

    /// Deletes a schedule and its runs; `false` when there was none.
    pub async fn delete_schedule(&self, schedule_id: &str) -> Result<bool> {
        let id = schedule_id.to_owned();
        self.call(move |db| schedules::delete(db, &id)).await
    }

    /// Every schedule, oldest first, each with its newest run.
    pub async fn load_schedules(&self) -> Result<Vec<(ScheduleRow, Option<ScheduleRunRow>)>> {
        self.call(schedules::load).await
    }

    /// Records a run (inserted, or its outcome updated), dropping runs past [`RUNS_KEPT`].
    pub async fn save_schedule_run(&self, run: ScheduleRunRow) -> Result<()> {
        self.call(move |db| schedules::save_run(db, run)).await
    }

    /// The newest `limit` runs of a schedule, newest first.
    pub async fn schedule_runs(
        &self,
        schedule_id: &str,
        limit: u32,
    ) -> Result<Vec<ScheduleRunRow>> {
        let id = schedule_id.to_owned();
        self.call(move |db| schedules::runs(db, &id, limit)).await
    }

    // ----- recovery ---------------------------------------------------------------------

    /// Rehydration of one session, in ONE transaction: every `open` checkpoint's visible
    /// progress not yet in the transcript is appended, then one `[interrupted]` row, and
    /// the checkpoint is marked `interrupted`; then the context to restore is read.
    /// Idempotent: a second call appends nothing. Refuses killed rows
    /// ([`StoreError::Killed`]) and rows of another surface
    /// ([`StoreError::UnsupportedSurface`], nothing touched).
    pub async fn recover(&self, key: &SessionKey, surface: &str) -> Result<Recovery> {
        let (key, surface) = (key.clone(), surface.to_owned());
        self.call(move |db| recovery::recover(db, &key, &surface))
            .await
    }

    /// Daemon start-up: recovers every non-killed ACP row of `surface` (normally
    /// [`RPC_SURFACE`]) that has an open checkpoint, one transaction per session. Rows of
    /// other surfaces are left byte-for-byte unchanged.
    pub async fn recover_all_interrupted(&self, surface: &str) -> Result<Vec<RecoveredSession>> {
        let surface = surface.to_owned();
        self.call(move |db| recovery::recover_all(db, &surface))
            .await
    }
}
