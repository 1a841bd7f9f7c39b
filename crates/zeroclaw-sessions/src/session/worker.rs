//! A live session's worker: [`start`] creates the session and spawns the task that takes its
//! prompts in submit order and runs each as one turn ([`Runner`]), until the session closes;
//! then it answers the prompts still queued with -32000 and stops.
//!
//! In the layers of the sessions service it sits above the registry
//! ([`manager`](super::manager)), the turn and the live session's state, and below the
//! operations that open sessions.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;
use zeroclaw_agent::ChatMessage;
use zeroclaw_protocol::TurnId;
use zeroclaw_store::SessionKey;

use super::live::{Job, JobAnswer, JobKind, LiveSession};
use super::manager::SessionManager;
use super::turn::Runner;

/// Creates the session and starts its worker with the restored `context`.
pub(crate) fn start(
    manager: &SessionManager,
    key: SessionKey,
    agent_alias: String,
    owner: String,
    workspace: PathBuf,
    cwd: PathBuf,
    context: Vec<ChatMessage>,
) -> Arc<LiveSession> {
    let (session, rx) = LiveSession::new(
        key,
        agent_alias,
        owner,
        manager.next_generation(),
        workspace,
        cwd,
    );
    if let Some(tap) = manager.tap.get() {
        session
            .stream
            .set_tap(Arc::clone(tap), session.owner.clone());
    }
    let runner = Runner::new(manager.store.clone(), manager.tuning.clone(), context)
        .with_files(manager.files.clone())
        .with_user_dir(super::instructions::user_dir_of(
            &session.owner,
            &manager.config_dir,
        ));
    tokio::spawn(run(Arc::clone(&session), rx, runner));
    session
}

/// Runs the session's prompts in order until it is closed.
async fn run(session: Arc<LiveSession>, mut rx: mpsc::UnboundedReceiver<Job>, mut runner: Runner) {
    loop {
        let job = tokio::select! {
            biased;
            job = rx.recv() => job,
            () = session.closing() => None,
        };
        let Some(mut job) = job else { break };
        let turn_id = match &job.kind {
            JobKind::Prompt {
                turn_id: Some(preset),
                ..
            } => preset.clone(),
            _ => TurnId::from(format!("turn_{}", uuid::Uuid::new_v4().simple())),
        };
        let Some(cancel) = session.start_turn(&turn_id) else {
            let _ = job.reply.send(Err(session.closed_error()));
            continue;
        };
        let outcome = match &job.kind {
            JobKind::Prompt {
                prompt, prompted, ..
            } => {
                // The turn's first event is its prompt, whoever sent it (SPEC §18).
                session.stream.emit_update(&prompted.user_message(prompt));
                runner
                    .run(&session, &mut job, &turn_id, cancel)
                    .await
                    .map(JobAnswer::Turn)
            }
            JobKind::Rewind {
                turn_id: to,
                restore_files,
                force,
            } => {
                let (to, restore_files, force) = (to.clone(), *restore_files, *force);
                let budget_mb = job
                    .config
                    .agents
                    .get(&session.agent_alias)
                    .map_or(zeroclaw_config::schema::DEFAULT_CHECKPOINT_BUDGET_MB, |a| {
                        a.checkpoint_budget_mb
                    });
                runner
                    .rewind(&session, &to, restore_files, force, budget_mb)
                    .await
                    .map(JobAnswer::Rewound)
            }
            JobKind::Compact { instructions } => {
                let instructions = instructions.clone();
                runner
                    .compact_job(
                        &session,
                        &job.config,
                        instructions.as_deref(),
                        &turn_id,
                        cancel,
                    )
                    .await
                    .map(JobAnswer::Compacted)
            }
        };
        session.end_turn();
        // The caller may be gone (its connection closed); the turn is persisted anyway.
        let _ = job.reply.send(outcome);
        // Its answer goes on the wire before the next turn's first event (SPEC §17.2); a
        // session closing meanwhile stops at once.
        tokio::select! {
            () = job.answered.wait() => {}
            () = session.closing() => {}
        }
    }
    session.drain_and_stop(&mut rx);
    tracing::debug!(session = %session.key.session_id, "session worker stopped");
}
