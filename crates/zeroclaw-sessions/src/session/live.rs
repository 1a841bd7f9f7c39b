//! One live session's state: identity (key, agent, owner, generation, workspace, cwd), its
//! FIFO queue of waiting prompts and the running turn, the approval registry its turns wait
//! on, its `session/configure` overrides, token totals and MCP servers.
//!
//! In the layers of the sessions service this is the state everything above reads: the
//! turn ([`turn`](super::turn)), the worker that takes the queued prompts
//! ([`worker`](super::worker)), the registry and the operations. It imports only the
//! session's [`stream`](super::stream), the [`link`](super::link) to clients and leaves,
//! never the turn or the worker.
//!
//! Invariants:
//! - `waiting` counts prompts accepted but not yet started (the running turn is not
//!   counted); it never exceeds [`MAX_QUEUED_PROMPTS`];
//! - once `closing` fires no prompt is accepted, the running turn is cancelled, and the
//!   worker answers every prompt still queued with -32000 before it stops;
//! - locks here are plain mutexes held for a few instructions, never across an `.await`:
//!   approvals wait on a oneshot channel, not on a lock.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use zeroclaw_agent::ApprovalDecision;
use zeroclaw_agent::mcp::McpSet;
use zeroclaw_config::Config;
use zeroclaw_protocol::DecidedBy;
use zeroclaw_protocol::compact::CompactResult;
use zeroclaw_protocol::history::RewindResult;
use zeroclaw_protocol::session::TurnResult;
use zeroclaw_protocol::{SessionId, TurnId};
use zeroclaw_store::SessionKey;

use super::answered::AnswerWait;
use super::error::SessionError;
use super::limits::MAX_QUEUED_PROMPTS;
use super::link::ClientLink;
use super::live_id::LiveId;
use super::prompted::Prompted;
use super::stream::SessionStream;

/// One piece of work waiting for the session's worker: a prompt, a rewind or a compaction.
/// They share one queue, so each runs alone and in submit order (SPEC §18).
pub(crate) struct Job {
    pub kind: JobKind,
    /// The connection that sent it: asked first when the turn needs `elicitation/create`
    /// (it is subscribed to the session's updates when there is room).
    pub link: Arc<dyn ClientLink>,
    /// The configuration in force when the prompt was accepted.
    pub config: Arc<Config>,
    pub reply: oneshot::Sender<Result<JobAnswer, SessionError>>,
    /// Ends once the caller's answer is queued: the next job waits for it (SPEC §17.2).
    pub answered: AnswerWait,
}

/// What the worker answers a [`Job`] with: the result of its kind.
pub(crate) enum JobAnswer {
    Turn(TurnResult),
    Rewound(RewindResult),
    Compacted(CompactResult),
}

impl JobAnswer {
    fn mismatch() -> SessionError {
        SessionError::failed("the session answered another kind of job")
    }

    pub fn turn(self) -> Result<TurnResult, SessionError> {
        match self {
            JobAnswer::Turn(t) => Ok(t),
            _ => Err(Self::mismatch()),
        }
    }

    pub fn rewound(self) -> Result<RewindResult, SessionError> {
        match self {
            JobAnswer::Rewound(r) => Ok(r),
            _ => Err(Self::mismatch()),
        }
    }

    pub fn compacted(self) -> Result<CompactResult, SessionError> {
        match self {
            JobAnswer::Compacted(c) => Ok(c),
            _ => Err(Self::mismatch()),
        }
    }
}

/// What a queued [`Job`] does.
pub(crate) enum JobKind {
    /// `session/prompt`: one turn; `prompted` is what its `user_message` shows (SPEC §18).
    /// `turn_id`: the id its sender chose in advance, if any.
    Prompt {
        prompt: String,
        prompted: Prompted,
        turn_id: Option<TurnId>,
    },
    /// `session/rewind` (SPEC §18): back to just before turn `turn_id`.
    /// With `force`, files someone else changed too (admin only, SPEC §17.2).
    Rewind {
        turn_id: TurnId,
        restore_files: bool,
        force: bool,
    },
    /// `session/compact` (SPEC §18).
    Compact { instructions: Option<String> },
}

struct Running {
    turn_id: TurnId,
    cancel: CancellationToken,
    /// Its prompt's place in submit order (1, 2, …).
    seq: u64,
}

#[derive(Default)]
struct State {
    waiting: usize,
    running: Option<Running>,
    /// Prompts queued so far, and prompts the worker has taken (both in submit order).
    submitted: u64,
    started: u64,
    /// A cancel for a prompt not started yet: the first prompt from this number on starts
    /// cancelled (SPEC §14 "Order").
    cancel_from: Option<u64>,
}

/// What `session/configure` changed for this session (`None` = the agent's setting).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub autonomy: Option<zeroclaw_config::Autonomy>,
    pub model: Option<String>,
}

/// The session's overrides, shared with its running turn (read before every provider and
/// tool call, so a change applies from the next one).
#[derive(Default)]
pub(crate) struct SharedOverrides(Mutex<Overrides>);

impl zeroclaw_agent::LiveSettings for SharedOverrides {
    fn model(&self) -> Option<String> {
        lock(&self.0).model.clone()
    }

    fn autonomy(&self) -> Option<zeroclaw_agent::Autonomy> {
        lock(&self.0).autonomy.map(|a| match a {
            zeroclaw_config::Autonomy::Supervised => zeroclaw_agent::Autonomy::Supervised,
            zeroclaw_config::Autonomy::Full => zeroclaw_agent::Autonomy::Full,
            zeroclaw_config::Autonomy::ReadOnly => zeroclaw_agent::Autonomy::ReadOnly,
            zeroclaw_config::Autonomy::Plan => zeroclaw_agent::Autonomy::Plan,
        })
    }
}

/// The session's token counts (SPEC §16).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Every token of every provider call of the session.
    pub session_total: u64,
    /// Input plus output of the latest provider call: what the context amounts to now.
    pub context: u64,
}

/// Pending approval requests of a session and the tools it always allows.
#[derive(Default)]
pub(crate) struct Approvals {
    pending: Mutex<HashMap<String, oneshot::Sender<(ApprovalDecision, DecidedBy)>>>,
    always: Mutex<HashSet<String>>,
    next: AtomicU64,
}

/// Removes a pending approval when its waiter goes away (answered, timed out or
/// abandoned by a cancelled turn).
pub(crate) struct ApprovalGuard<'a> {
    approvals: &'a Approvals,
    pub id: String,
}

impl Drop for ApprovalGuard<'_> {
    fn drop(&mut self) {
        lock(&self.approvals.pending).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Approvals {
    pub fn always_allows(&self, tool: &str) -> bool {
        lock(&self.always).contains(tool)
    }

    pub fn allow_always(&self, tool: &str) {
        lock(&self.always).insert(tool.to_owned());
    }

    /// Registers a new request; its id is unique within the session.
    pub fn register(
        &self,
    ) -> (
        ApprovalGuard<'_>,
        oneshot::Receiver<(ApprovalDecision, DecidedBy)>,
    ) {
        let id = format!("apr_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        (
            ApprovalGuard {
                approvals: self,
                id,
            },
            rx,
        )
    }

    /// Ids of the requests waiting for an answer, oldest first.
    pub fn pending_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.pending).keys().cloned().collect();
        ids.sort_by_key(|id| {
            id.strip_prefix("apr_")
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        ids
    }

    /// Whether any request waits for an answer.
    pub fn any_pending(&self) -> bool {
        !lock(&self.pending).is_empty()
    }

    /// Delivers a decision with who made it (SPEC §22 `decidedBy`); `false` when no
    /// request with that id is pending.
    pub fn answer(&self, id: &str, decision: ApprovalDecision, by: DecidedBy) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send((decision, by)).is_ok(),
            None => false,
        }
    }
}

pub struct LiveSession {
    pub key: SessionKey,
    pub agent_alias: String,
    /// Principal id of the owner.
    pub owner: String,
    /// Distinguishes this live instance from an earlier or later one with the same key.
    pub generation: u64,
    /// This instance's identity as connections remember it (their last prompt to it).
    pub(crate) instance: LiveId,
    /// The agent's workspace (absolute; uploads go here).
    pub workspace: PathBuf,
    /// Where `bash` runs.
    pub cwd: PathBuf,
    state: Mutex<State>,
    jobs: mpsc::UnboundedSender<Job>,
    closing: CancellationToken,
    stopped: CancellationToken,
    pub(crate) approvals: Approvals,
    /// Budget requests a paused turn waits on (SPEC §24.2).
    pub(crate) budgets: super::budget_requests::BudgetRequests,
    /// The session's updates: subscribers and the replay buffer (SPEC §14).
    pub(crate) stream: SessionStream,
    overrides: Arc<SharedOverrides>,
    usage: Mutex<UsageTotals>,
    /// The cost of the priced calls since the session was loaded (SPEC §24.2).
    cost_usd: Mutex<Option<f64>>,
    /// The instructions files as last read (session start, then each turn), with their
    /// bytes in the system prompt (SPEC §26).
    instructions: Mutex<Vec<(PathBuf, u64)>>,
    /// The session's MCP servers, once started.
    mcp: OnceLock<Arc<McpSet>>,
    /// When the session was last seen busy (SPEC §22 "Sessions rest").
    pub(crate) rest: super::rest_state::RestState,
    /// The session's background processes (SPEC §26), all killed by [`LiveSession::close`].
    pub(crate) shells: Arc<zeroclaw_agent::tools::background::Shells>,
}

impl LiveSession {
    /// Creates the session, with the receiving end of its prompt queue for its worker
    /// (see [`worker::start`](super::worker::start)).
    pub(crate) fn new(
        key: SessionKey,
        agent_alias: String,
        owner: String,
        generation: u64,
        workspace: PathBuf,
        cwd: PathBuf,
    ) -> (Arc<LiveSession>, mpsc::UnboundedReceiver<Job>) {
        let (jobs, rx) = mpsc::unbounded_channel();
        let key_id = key.session_id.clone();
        let session = Arc::new(LiveSession {
            key,
            agent_alias,
            owner,
            generation,
            instance: LiveId::new(),
            workspace,
            cwd,
            state: Mutex::new(State::default()),
            jobs,
            closing: CancellationToken::new(),
            stopped: CancellationToken::new(),
            approvals: Approvals::default(),
            budgets: Default::default(),
            stream: SessionStream::new(&SessionId::from(key_id.as_str())),
            overrides: Arc::default(),
            usage: Mutex::new(UsageTotals::default()),
            cost_usd: Mutex::new(None),
            instructions: Mutex::new(Vec::new()),
            mcp: OnceLock::new(),
            rest: super::rest_state::RestState::new(),
            shells: Arc::default(),
        });
        (session, rx)
    }

    pub fn session_id(&self) -> &str {
        &self.key.session_id
    }

    /// Queues a job: -32000 once the session is closing, -32002 when
    /// [`MAX_QUEUED_PROMPTS`] are already waiting, and for a rewind while a turn runs or
    /// anything waits (SPEC §18: a rewind goes back from a settled session).
    /// Returns the job's number in submit order.
    pub(crate) fn submit(&self, job: Job) -> Result<u64, SessionError> {
        self.submit_or_return(job).map_err(|(e, _)| e)
    }

    /// [`LiveSession::submit`] that hands a refused job back.
    pub(crate) fn submit_or_return(&self, job: Job) -> Result<u64, (SessionError, Box<Job>)> {
        let mut st = lock(&self.state);
        if self.closing.is_cancelled() {
            return Err((
                SessionError::not_found(format!("session {} is closed", self.key.session_id)),
                Box::new(job),
            ));
        }
        if matches!(job.kind, JobKind::Rewind { .. }) && (st.running.is_some() || st.waiting > 0) {
            return Err((
                SessionError::busy(format!(
                    "session {} is busy: a turn is running or waiting; rewind once it has ended",
                    self.key.session_id
                )),
                Box::new(job),
            ));
        }
        if st.waiting >= MAX_QUEUED_PROMPTS {
            return Err((
                SessionError::busy(format!(
                    "session {} is busy: {MAX_QUEUED_PROMPTS} prompts are already waiting",
                    self.key.session_id
                )),
                Box::new(job),
            ));
        }
        st.waiting += 1;
        if let Err(back) = self.jobs.send(job) {
            st.waiting -= 1;
            return Err((
                SessionError::not_found(format!("session {} has stopped", self.key.session_id)),
                Box::new(back.0),
            ));
        }
        st.submitted += 1;
        self.rest.touch();
        Ok(st.submitted)
    }

    /// Cancels the running turn; `false` when none runs.
    pub fn cancel_turn(&self) -> bool {
        match &lock(&self.state).running {
            Some(r) => {
                r.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The running turn's id.
    pub fn running_turn(&self) -> Option<TurnId> {
        lock(&self.state)
            .running
            .as_ref()
            .map(|r| r.turn_id.clone())
    }

    /// Prompts accepted and not yet started.
    pub fn queued_prompts(&self) -> usize {
        lock(&self.state).waiting
    }

    /// Cancels the turn of prompt number `from` or a later one, never an earlier turn: the
    /// running turn if its prompt is `from` or later, else the first such prompt still
    /// waiting (it starts cancelled); `false` when there is none.
    pub fn cancel_from(&self, from: u64) -> bool {
        let mut st = lock(&self.state);
        if let Some(r) = st.running.as_ref().filter(|r| r.seq >= from) {
            r.cancel.cancel();
            return true;
        }
        if st.submitted > st.started && st.submitted >= from {
            let from = from.max(st.started + 1);
            st.cancel_from = Some(st.cancel_from.map_or(from, |c| c.min(from)));
            return true;
        }
        false
    }

    /// Connections receiving this session's updates (SPEC §14).
    pub fn subscribers(&self) -> usize {
        self.stream.subscriber_count()
    }

    /// Bytes of serialized updates its stream keeps for replay.
    pub fn replay_bytes(&self) -> usize {
        self.stream.buffered_bytes()
    }

    /// The session's mode as the wire spells it.
    pub fn wire_mode(&self) -> zeroclaw_protocol::Mode {
        super::wire::mode(self.key.mode)
    }

    pub fn overrides(&self) -> Overrides {
        lock(&self.overrides.0).clone()
    }

    pub fn set_overrides(&self, o: Overrides) {
        *lock(&self.overrides.0) = o;
    }

    /// The handle a turn reads the overrides through.
    pub(crate) fn live_settings(&self) -> Arc<dyn zeroclaw_agent::LiveSettings> {
        Arc::clone(&self.overrides) as Arc<dyn zeroclaw_agent::LiveSettings>
    }

    /// The instructions files as last read, with the bytes of each in the prompt.
    pub fn instructions(&self) -> Vec<(PathBuf, u64)> {
        lock(&self.instructions).clone()
    }

    pub(crate) fn set_instructions(&self, files: Vec<(PathBuf, u64)>) {
        *lock(&self.instructions) = files;
    }

    pub fn usage(&self) -> UsageTotals {
        *lock(&self.usage)
    }

    pub fn set_usage(&self, u: UsageTotals) {
        *lock(&self.usage) = u;
    }

    /// Adds a priced call's cost.
    pub fn add_cost(&self, usd: f64) {
        let mut c = lock(&self.cost_usd);
        *c = Some(c.unwrap_or(0.0) + usd);
    }

    /// The cost of the priced calls since the session was loaded; `None` when none was.
    pub fn cost_usd(&self) -> Option<f64> {
        *lock(&self.cost_usd)
    }

    /// Adds one provider call; returns the new totals.
    pub fn add_usage(&self, input: u64, output: u64) -> UsageTotals {
        let mut u = lock(&self.usage);
        u.session_total = u.session_total.saturating_add(input.saturating_add(output));
        u.context = input.saturating_add(output);
        *u
    }

    /// The session's MCP servers (none until started).
    pub fn mcp(&self) -> Option<Arc<McpSet>> {
        self.mcp.get().cloned()
    }

    /// Installs the session's MCP servers (once); a closing session stops them at once.
    pub(crate) fn set_mcp(&self, set: Arc<McpSet>) {
        if self.mcp.set(Arc::clone(&set)).is_err() || self.closing.is_cancelled() {
            set.shutdown();
        }
    }

    /// Stops taking prompts, cancels the running turn and kills the MCP servers' process
    /// groups; the worker answers the queued prompts and stops once the turn has persisted.
    pub fn close(&self) {
        self.closing.cancel();
        self.cancel_turn();
        if let Some(mcp) = self.mcp.get() {
            mcp.shutdown();
        }
        self.shells.kill_all();
    }

    /// Resolves once the worker has stopped (after [`LiveSession::close`]).
    pub async fn stopped(&self) {
        self.stopped.cancelled().await
    }

    /// Waits up to `limit` for the worker to stop.
    pub async fn wait_stopped(&self, limit: Duration) -> bool {
        let stopped = tokio::time::timeout(limit, self.stopped()).await.is_ok();
        if !stopped {
            tracing::warn!(session = %self.key.session_id, "worker still running after {limit:?}");
        }
        stopped
    }

    /// Whether the session is closing (closed, killed, deleted or the daemon stopping).
    pub fn is_closing(&self) -> bool {
        self.closing.is_cancelled()
    }

    /// Resolves once the session is closing (the worker then stops taking prompts).
    pub(crate) async fn closing(&self) {
        self.closing.cancelled().await
    }

    /// The worker takes its next prompt, whose turn will be `turn_id`: the turn's cancel
    /// token (already cancelled when a cancel was sent for this prompt before it started),
    /// or `None` when the session is closing (the prompt is answered as closed).
    pub(crate) fn start_turn(&self, turn_id: &TurnId) -> Option<CancellationToken> {
        let mut st = lock(&self.state);
        st.waiting = st.waiting.saturating_sub(1);
        st.started += 1;
        let seq = st.started;
        if self.closing.is_cancelled() {
            return None;
        }
        let cancel = CancellationToken::new();
        self.stream.begin_turn(turn_id);
        if st.cancel_from.is_some_and(|from| seq >= from) {
            st.cancel_from = None;
            cancel.cancel();
        }
        st.running = Some(Running {
            turn_id: turn_id.clone(),
            cancel: cancel.clone(),
            seq,
        });
        Some(cancel)
    }

    /// The running turn has ended.
    pub(crate) fn end_turn(&self) {
        lock(&self.state).running = None;
        self.rest.touch();
    }

    /// Whether a turn runs or a job waits; `waiting_for_person`: a pending approval or
    /// question (SPEC §22 counts).
    pub(crate) fn activity(&self) -> (bool, bool) {
        let working = {
            let st = lock(&self.state);
            st.running.is_some() || st.waiting > 0
        };
        let person =
            self.approvals.any_pending() || self.budgets.any_pending() || self.rest.asking();
        (working || person, person)
    }

    /// Closes the session for resting (SPEC §22) only if it is idle: no turn running or
    /// queued, no approval or question pending, no subscriber, nothing `held` elsewhere
    /// (an upload open). Decided under the state lock that `submit` takes, so a prompt is
    /// either queued before (and the session is busy) or refused as closed after (and its
    /// caller brings the session back, see `rested`). `true` when it closed.
    pub(crate) fn close_if_idle(&self, held: bool) -> bool {
        let st = lock(&self.state);
        if self.closing.is_cancelled()
            || held
            || st.running.is_some()
            || st.waiting > 0
            || self.approvals.any_pending()
            || self.budgets.any_pending()
            || self.rest.asking()
            || self.stream.subscriber_count() > 0
        {
            return false;
        }
        self.rest.mark_rested();
        self.closing.cancel();
        drop(st);
        self.close();
        true
    }

    /// Answers every prompt still queued in `rx` as closed, then marks the worker stopped.
    pub(crate) fn drain_and_stop(&self, rx: &mut mpsc::UnboundedReceiver<Job>) {
        {
            // Under the state lock: `submit` checks `closing` under it, so nothing can be
            // queued after this drain.
            let mut st = lock(&self.state);
            while let Ok(job) = rx.try_recv() {
                st.waiting = st.waiting.saturating_sub(1);
                let _ = job.reply.send(Err(self.closed_error()));
            }
        }
        self.stopped.cancel();
    }

    /// The answer to a prompt that never ran because the session closed.
    pub(crate) fn closed_error(&self) -> SessionError {
        SessionError::not_found(format!(
            "session {} was closed before this prompt ran",
            self.key.session_id
        ))
    }
}
