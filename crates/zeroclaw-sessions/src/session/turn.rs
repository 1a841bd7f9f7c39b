//! One turn, end to end, run by the session's worker ([`Runner::run`]):
//!
//! 1. build the agent from the configuration (nothing is written if that fails);
//! 2. ACP: `begin_turn` (prompt row + open checkpoint) before the provider is called;
//!    when the context would go over `compact_threshold` × `max_context_tokens`, the
//!    earlier turns are compacted first ([`compact`], SPEC §18);
//! 3. run the turn loop with a [`SessionHost`]; a [`Persister`] records its progress;
//! 4. ACP: `finish_turn` (the turn's rows + closed checkpoint) in one transaction; chat:
//!    the prompt and the turn's rows appended as plain history;
//! 5. auto-trim when the context is over `max_context_tokens`: the snapshot is committed
//!    first, `history_trimmed` is sent only after that;
//! 6. `turn_complete`, then the result (returned to the `session/prompt` handler).
//!
//! If the turn's final write fails the session remembers it (`needs_recover`): before the
//! next turn the open checkpoint is recovered and the context reloaded from the store, so
//! memory never runs ahead of what is durable for long.
//!
//! In the layers of the sessions service a turn sits above the live session's state, its
//! [`host`](super::host), [`agent`](super::agent) and [`persist`](super::persist); the
//! worker above it calls [`Runner::run`]. It never imports the worker or the registry.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;
use zeroclaw_agent::{ChatMessage, TurnOutcome, run_turn};
use zeroclaw_protocol::TurnId;
use zeroclaw_protocol::session::{TurnResult, TurnUsage};
use zeroclaw_protocol::{Outcome, UpdateKind};
use zeroclaw_store::{CheckpointStatus, Mode, NewRow, RPC_SURFACE, Store, StoreError, TurnError};

use super::agent::{self, ProviderCache};
use super::compaction as compact;
use super::error::SessionError;
use super::file_checkpoints::FileCheckpoints;
use super::host::SessionHost;
use super::instructions::{self, Instructions};
use super::live::{Job, JobKind, LiveSession};
use super::long_answers::Snapshot;
use super::persist::{self, Persister};
use super::text;
use super::tuning::Tuning;
use zeroclaw_agent::tools::skill;

/// The worker's per-session state between turns.
pub(crate) struct Runner {
    pub(super) store: Store,
    pub(super) tuning: Tuning,
    /// The retained provider context (never the system prompt).
    pub(super) context: Vec<ChatMessage>,
    /// The last turn could not be closed in the store: recover before the next one.
    pub(super) needs_recover: bool,
    pub(super) providers: ProviderCache,
    /// The working directory's checkpoints (SPEC §18), recorded at every ACP turn start.
    pub(super) files: Option<FileCheckpoints>,
    /// Where the user's instructions file is (the daemon's config dir), and the files as
    /// last read (SPEC §26).
    pub(super) instructions: (Option<PathBuf>, Option<Instructions>),
}

impl Runner {
    pub fn new(store: Store, tuning: Tuning, context: Vec<ChatMessage>) -> Runner {
        Runner {
            store,
            tuning,
            context,
            needs_recover: false,
            providers: ProviderCache::default(),
            files: None,
            instructions: (None, None),
        }
    }

    /// Looks for the user's instructions file and skills in `dir` (none: the session's
    /// owner has none, [`instructions::user_dir_of`]).
    pub fn with_user_dir(mut self, dir: Option<PathBuf>) -> Runner {
        self.instructions.0 = dir;
        self
    }

    /// The instructions files now (read again only if one changed), when the agent has
    /// them on; also what `session/status` lists.
    async fn instructions(&mut self, session: &LiveSession, enabled: bool) -> Option<String> {
        if !enabled {
            self.instructions.1 = None;
            session.set_instructions(Vec::new());
            return None;
        }
        let user_dir = self.instructions.0.clone();
        let cwd = session.cwd.clone();
        let previous = self.instructions.1.take();
        let loaded = tokio::task::spawn_blocking(move || {
            Instructions::load(user_dir.as_deref(), &cwd, previous.as_ref())
        })
        .await
        .ok()?;
        session.set_instructions(loaded.files.clone());
        let text = loaded.text.clone();
        self.instructions.1 = Some(loaded);
        Some(text)
    }

    /// Records file checkpoints in `files` at every ACP turn start.
    pub fn with_files(mut self, files: FileCheckpoints) -> Runner {
        self.files = Some(files);
        self
    }

    /// Replaces the in-memory context with the store's, after recovering open turns.
    pub(super) async fn reload(&mut self, session: &LiveSession) -> Result<(), SessionError> {
        let recovered = self.store.recover(&session.key, RPC_SURFACE).await?;
        self.context = persist::context_from(&recovered.context);
        self.needs_recover = false;
        Ok(())
    }

    /// `begin_turn`, recovering a turn left open by a failed write first.
    async fn begin(
        &mut self,
        session: &LiveSession,
        turn_id: &TurnId,
        prompt: &str,
    ) -> Result<i64, SessionError> {
        if self.needs_recover {
            self.reload(session).await?;
        }
        match self.store.begin_turn(&session.key, turn_id, prompt).await {
            Ok(seq) => Ok(seq),
            Err(StoreError::TurnStillOpen { .. }) => {
                self.reload(session).await?;
                self.store
                    .begin_turn(&session.key, turn_id, prompt)
                    .await
                    .map_err(SessionError::from)
            }
            Err(e) => Err(SessionError::from(e)),
        }
    }

    pub async fn run(
        &mut self,
        session: &Arc<LiveSession>,
        job: &mut Job,
        turn_id: &TurnId,
        cancel: CancellationToken,
    ) -> Result<TurnResult, SessionError> {
        let mut agent = agent::build(&job.config, session, &mut self.providers)?;
        let enabled = job
            .config
            .agents
            .get(&session.agent_alias)
            .is_some_and(|a| a.instructions_files);
        if let Some(text) = self.instructions(session, enabled).await {
            agent.spec.system_prompt = instructions::append(&agent.spec.system_prompt, &text);
        }
        // Skills (SPEC §26): found again every turn; their names and descriptions end the
        // system prompt, their bodies are read with the `skill` tool.
        let (user_dir, cwd) = (self.instructions.0.clone(), session.cwd.clone());
        let skills =
            tokio::task::spawn_blocking(move || skill::discover(user_dir.as_deref(), &cwd))
                .await
                .unwrap_or_default();
        agent.spec.system_prompt =
            instructions::append(&agent.spec.system_prompt, &skill::prompt_section(&skills));
        agent.spec.skills = Arc::new(skills);
        agent.spec.background = Some(Arc::clone(&session.shells));
        if let Some(hooks) = &mut agent.spec.hooks {
            Arc::make_mut(hooks).turn_id = Some(turn_id.to_string());
        }
        let key = &session.key;
        let acp = key.mode == Mode::Acp;
        let context_before = self.context.len();
        // The turn takes the prompt; only the store gets a copy (SPEC §17: a prompt is not
        // multiplied in memory).
        let (prompt, prompted_by) = match &mut job.kind {
            JobKind::Prompt {
                prompt, prompted, ..
            } => (std::mem::take(prompt), prompted.by.clone()),
            _ => return Err(SessionError::failed("not a prompt")),
        };
        let chat_prompt = (!acp).then(|| prompt.clone());
        // Normally `begin_turn` runs on the persister, overlapping the provider call; after
        // a failed write it runs here first, with recovery. So does a long prompt's: the
        // persister would hold a copy of it while the provider streams (issue 27).
        let mut started_seq = 0;
        let begin_first = self.needs_recover || prompt.len() > persist::MAX_PIECE;
        // Auto-compaction (SPEC §18) needs the prompt row's seq first: its snapshot ends
        // just before it.
        let compact_first =
            acp && self.wants_auto_compact(&agent.compaction, agent.max_context_tokens, &prompt);
        let (persister, began) = if !acp {
            (None, None)
        } else if begin_first || compact_first {
            started_seq = self.begin(session, turn_id, &prompt).await?;
            if self.wants_auto_compact(&agent.compaction, agent.max_context_tokens, &prompt) {
                let req = compact::Request {
                    provider: Arc::clone(&agent.spec.provider),
                    model: compact::model_of(&agent.spec),
                    settings: agent.compaction,
                    instructions: None,
                    turn_id,
                    boundary: compact::Boundary::Before(started_seq - 1),
                    hooks: agent.spec.hooks.clone(),
                    cancel: &cancel,
                };
                self.auto_compact(session, req).await;
            }
            let (p, _) =
                Persister::spawn(self.store.clone(), key.clone(), turn_id.to_owned(), None);
            (Some(p), None)
        } else {
            let (p, began) = Persister::spawn(
                self.store.clone(),
                key.clone(),
                turn_id.to_owned(),
                Some(prompt.clone()),
            );
            (Some(p), began)
        };
        let budget = job
            .config
            .agents
            .get(&session.agent_alias)
            .map_or(zeroclaw_config::schema::DEFAULT_CHECKPOINT_BUDGET_MB, |a| {
                a.checkpoint_budget_mb
            });
        if acp && let Some(files) = &self.files {
            files
                .record_turn_start(&key.session_id, turn_id, session.cwd.clone(), budget)
                .await;
        }
        let prompt_seq = Arc::new(OnceLock::new());
        if started_seq > 0 {
            let _ = prompt_seq.set(started_seq);
        }
        let mid_turn = (acp && agent.compaction.auto_compact).then(|| compact::MidTurn {
            store: self.store.clone(),
            tuning: self.tuning.clone(),
            provider: Arc::clone(&agent.spec.provider),
            model: compact::model_of(&agent.spec),
            settings: agent.compaction,
            max_context_tokens: agent.max_context_tokens,
            turn_id: turn_id.to_string(),
            cancel: cancel.clone(),
            prompt_seq: Arc::clone(&prompt_seq),
            hooks: agent.spec.hooks.clone(),
        });
        let host = SessionHost {
            session,
            progress: persister.as_ref().map(Persister::sender),
            prompter: &job.link,
            tuning: &self.tuning,
            context_window: agent.max_context_tokens as u64,
            mid_turn,
            retries: Default::default(),
            budget: super::budget::Gate::new(
                &job.config,
                session,
                &priced_model(&job.config, session, &agent.spec),
                &prompted_by,
                self.store.clone(),
                cancel.clone(),
            ),
            plan: Default::default(),
        };
        let abandon = cancel.clone();
        let watch_begin = async move {
            let Some(began) = began else {
                return Ok(None);
            };
            let outcome = began.await.unwrap_or(Err(StoreError::Closed));
            if let Ok(seq) = outcome {
                let _ = prompt_seq.set(seq);
            }
            if outcome.is_err() {
                // Never run a turn whose prompt is not on disk.
                abandon.cancel();
            }
            outcome.map(Some)
        };
        let (mut result, began) = tokio::join!(
            run_turn(&agent.spec, &mut self.context, prompt, &host, cancel,),
            watch_begin
        );
        let retries = host.retries.load(Ordering::Relaxed);
        let reason = (result.outcome == TurnOutcome::Cancelled && host.budget.stopped())
            .then(|| "budget".to_owned());
        let plan = host.plan.lock().ok().and_then(|mut p| p.take());
        drop(host);
        // What the turn left, for a rewind to tell its changes from others' (SPEC §17.2).
        if acp && let Some(files) = &self.files {
            files
                .record_turn_end(&key.session_id, turn_id, session.cwd.clone(), budget)
                .await;
        }
        if let Some(p) = persister {
            p.finish().await;
        }
        match began {
            Ok(Some(seq)) => started_seq = seq,
            Ok(None) => {}
            Err(e) => {
                self.context.truncate(context_before);
                self.needs_recover = matches!(e, StoreError::TurnStillOpen { .. });
                return Err(SessionError::from(e));
            }
        }

        // The answer comes cut for the wire (the host's `result_text_max`): the context
        // holds the whole text, and a long answer is not held twice while it is written
        // below or while a trim writes its snapshot. A limit note may still take it over.
        let (content, truncated) = text::cut_owned(std::mem::take(&mut result.content));
        let truncated = truncated || result.content_cut;
        let appended = self.context.len() - result.appended;
        // A failed turn keeps its error in the transcript (SPEC §22), after the turn's
        // rows; the model context never holds it.
        let error_row = (result.outcome == TurnOutcome::Failed).then(|| {
            NewRow::error(&TurnError {
                message: content.clone(),
                retries,
            })
        });
        // A proposed plan keeps its own row (SPEC §26), also outside the model context.
        let plan_row = plan.map(NewRow::plan);
        let written = if acp {
            let status = match result.outcome {
                TurnOutcome::Completed => CheckpointStatus::Completed,
                TurnOutcome::Cancelled => CheckpointStatus::Cancelled,
                TurnOutcome::Failed => CheckpointStatus::Failed,
            };
            // The answer's text is lent to the store, not copied, and comes back into the
            // context once written. Should the store be closed the rows are lost with it;
            // the turn then fails to save and the context is reloaded before the next one.
            let (mut rows, from) = persist::lend_rows(&mut self.context[appended..]);
            // Last, so the lent rows keep their places for `give_back`.
            rows.extend(error_row);
            rows.extend(plan_row);
            let (written, back) = self
                .store
                .finish_turn_lent(key, turn_id, status, rows)
                .await;
            if let Some(rows) = back {
                from.give_back(&mut self.context[appended..], rows);
            }
            written
        } else {
            let mut all = vec![NewRow::user(chat_prompt.unwrap_or_default())];
            all.extend(persist::visible_rows(&self.context[appended..]));
            all.extend(error_row);
            all.extend(plan_row);
            self.store.append_rows(key, Some(turn_id), all).await
        };
        let seqs = match written {
            Ok(seqs) => seqs,
            Err(e) => {
                tracing::error!(session = %key.session_id, turn = %turn_id, "the turn could not be saved: {e}");
                self.needs_recover = acp;
                // A session killed or deleted while its turn ran ended under it: that is
                // the caller's "session not found", not a storage failure.
                return Err(match e {
                    StoreError::NotFound { .. } | StoreError::Killed { .. } => {
                        SessionError::from(e)
                    }
                    other => SessionError::failed(format!(
                        "the turn ran but could not be saved: {other}"
                    )),
                });
            }
        };
        let covers_seq = seqs.last().copied().unwrap_or(started_seq);
        if result.provider_calls > 0 {
            let totals = session.usage();
            if let Err(e) = self
                .store
                .set_usage(key, totals.session_total, totals.context)
                .await
            {
                // The totals stay right in memory; only a resume after a restart loses them.
                tracing::warn!(session = %key.session_id, "token totals not saved: {e}");
            }
        }
        let usage = TurnUsage {
            input_tokens: result.usage.input_tokens,
            output_tokens: result.usage.output_tokens,
        };
        let outcome = match result.outcome {
            TurnOutcome::Completed => Outcome::Completed,
            TurnOutcome::Cancelled => Outcome::Cancelled,
            TurnOutcome::Failed => Outcome::Failed,
        };
        drop(result);
        self.trim(session, agent.max_context_tokens, covers_seq)
            .await;
        let complete = UpdateKind::TurnComplete {
            outcome,
            content,
            truncated,
            usage: Some(usage),
            reason: reason.clone(),
        };
        session.stream.emit_update(&complete);
        tracing::debug!(session = %key.session_id, turn = %turn_id, %outcome, "turn finished");
        let UpdateKind::TurnComplete { content, .. } = complete else {
            unreachable!("built just above")
        };
        let answer = TurnResult {
            session_id: key.session_id.clone().into(),
            turn_id: turn_id.clone(),
            outcome,
            content,
            truncated,
            usage: Some(usage),
            reason,
        };
        Ok(answer)
    }

    /// Auto-trim (SPEC §7.3): snapshot first; `history_trimmed` only after it committed.
    async fn trim(&mut self, session: &LiveSession, max_tokens: usize, covers_seq: i64) {
        let Some(trim) = persist::plan_trim(&self.context, max_tokens) else {
            return;
        };
        // The kept messages go to the store and come back: it encodes a large snapshot
        // straight into its row, so a context holding a large prompt and its answer is not
        // held a second time as JSON (issue 27).
        let kept = Snapshot(self.context.split_off(trim.dropped));
        let (saved, kept) = if self.tuning.fail_snapshots.load(Ordering::SeqCst) {
            (Err(StoreError::InjectedFailure), Some(kept))
        } else {
            self.store
                .save_snapshot_lent(&session.key, covers_seq, kept)
                .await
        };
        let kept = kept.map(|k| k.0);
        let Some(kept) = kept else {
            // The store thread is gone, and the kept messages with it: no turn may run on
            // what is left, so the context is reloaded before the next one.
            tracing::error!(session = %session.key.session_id, "the store stopped during a trim");
            self.context.clear();
            self.needs_recover = true;
            return;
        };
        match saved {
            Ok(_) => {
                self.context = kept;
                session.stream.emit_update(&UpdateKind::HistoryTrimmed {
                    dropped_messages: trim.dropped as u64,
                    kept_messages: self.context.len() as u64,
                    checkpoint_seq: covers_seq,
                    reason: "max_context_tokens".to_owned(),
                });
            }
            Err(e) => {
                // Keep the untrimmed context: the next turn tries again, and memory never
                // holds a trim the store does not have.
                self.context.extend(kept);
                tracing::warn!(session = %session.key.session_id, "context snapshot not saved, no trim: {e}");
            }
        }
    }
}

/// The model a turn's calls name, for its price (SPEC §24.2): the session's or agent's
/// choice, else the provider's.
fn priced_model(
    config: &zeroclaw_config::Config,
    session: &LiveSession,
    spec: &zeroclaw_agent::AgentSpec,
) -> String {
    let chosen = compact::model_of(spec);
    if chosen.is_empty() {
        agent::effective_model(config, &session.agent_alias, None)
    } else {
        chosen
    }
}
