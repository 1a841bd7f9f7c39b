//! Schedules fire (SPEC §24.1): the daemon's one timer task that sleeps until the next
//! schedule comes due (or until one is created, changed or deleted), takes what is due
//! from the schedules service and starts each run as an ordinary turn.
//!
//! A run calls through the one request path ([`crate::unattended`], as `POST /rpc` calls) in
//! a context of its own that acts as the schedule's creator, with the grants the policy
//! gives the creator at that moment, and whose prompts say `schedule:NAME`: `session/new`
//! (and `session/set_title` "NAME · date" for a new session), `session/configure` when the
//! schedule sets an autonomy, then `session/prompt`, whose answer is the turn's end. The
//! service decides what is due; nothing here holds a lock across an await.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use zeroclaw_rpc::ErrorObject;
use zeroclaw_schedules::{Fire, Schedules, Target, Timestamp};
use zeroclaw_sessions::session::SessionManager;

use crate::caller::Unattended;
use crate::state::Daemon;
use crate::transport::TransportKind;
use crate::unattended::{Opening, UnattendedCaller};

/// The longest the timer sleeps without looking again (the wall clock may have moved).
const MAX_SLEEP: Duration = Duration::from_secs(30);

/// Loads the schedules from the sessions' store; the runs to catch up come back too.
pub(crate) async fn open(sessions: &SessionManager) -> Result<(Arc<Schedules>, Vec<Fire>), String> {
    Schedules::open(sessions.store.clone(), Timestamp::now())
        .await
        .map_err(|e| format!("cannot load the schedules: {e}"))
}

/// Starts the runs caught up at start, then the timer, until the daemon stops.
pub(crate) fn start(daemon: &Arc<Daemon>, catch_up: Vec<Fire>) {
    for fire in catch_up {
        spawn_run(daemon, fire);
    }
    let weak = Arc::downgrade(daemon);
    let stop = daemon.shutdown.clone();
    let schedules = Arc::clone(&daemon.schedules);
    tokio::spawn(async move {
        loop {
            let wait = match schedules.next_due().await {
                Some(due) => until(due),
                None => MAX_SLEEP,
            };
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = schedules.changed() => {}
                () = tokio::time::sleep(wait) => {}
            }
            let Some(daemon) = weak.upgrade() else { return };
            for fire in schedules.take_due(Timestamp::now()).await {
                spawn_run(&daemon, fire);
            }
        }
    });
}

/// How long until `due`, at most [`MAX_SLEEP`].
fn until(due: Timestamp) -> Duration {
    let ms = due.as_millisecond() - Timestamp::now().as_millisecond();
    Duration::from_millis(ms.max(0) as u64).min(MAX_SLEEP)
}

/// Runs `fire` as a turn on a task of its own, unless the daemon is stopping.
fn spawn_run(daemon: &Arc<Daemon>, fire: Fire) {
    let daemon = Arc::clone(daemon);
    tokio::spawn(async move {
        if daemon.shutdown.is_cancelled() {
            let why = Some("the daemon was stopping".to_owned());
            daemon
                .schedules
                .finished(&fire, None, None, "failed", why)
                .await;
            return;
        }
        tracing::info!(schedule = %fire.schedule_id, run = %fire.run_id, "schedule run starts");
        let mut run = match Run::new(&daemon, &fire) {
            Ok(run) => run,
            Err(e) => {
                let why = Some(e.message);
                daemon
                    .schedules
                    .finished(&fire, None, None, "failed", why)
                    .await;
                return;
            }
        };
        let (session, ended) = run.turn(&fire).await;
        run.caller.close();
        let (turn, outcome, error) = match ended {
            Ok(result) => {
                let outcome = result["outcome"].as_str().unwrap_or("failed").to_owned();
                let error = (outcome == "failed")
                    .then(|| result["content"].as_str().unwrap_or_default().to_owned());
                let turn = result["turnId"].as_str().map(str::to_owned);
                (turn, outcome, error)
            }
            Err(e) => (None, "failed".to_owned(), Some(e.message)),
        };
        tracing::info!(schedule = %fire.schedule_id, run = %fire.run_id, %outcome, "schedule run ended");
        daemon
            .schedules
            .finished(&fire, session.as_deref(), turn.as_deref(), &outcome, error)
            .await;
    });
}

/// The calling context of one run: its creator, through the one request path.
struct Run {
    daemon: Arc<Daemon>,
    caller: UnattendedCaller,
}

impl Run {
    fn new(daemon: &Arc<Daemon>, fire: &Fire) -> Result<Run, ErrorObject> {
        let opening = Opening {
            limits_key: &format!("schedule:{}", fire.owner),
            label: format!("schedule:{}", fire.schedule_id),
            kind: TransportKind::Local,
            client: "schedule".to_owned(),
            queue_of: Some(&fire.owner),
        };
        let acting = Unattended {
            owner: fire.owner.clone(),
            by: format!("schedule:{}", fire.name),
            turn_id: None,
        };
        let caller = UnattendedCaller::open(daemon, opening, acting)?;
        Ok(Run {
            daemon: Arc::clone(daemon),
            caller,
        })
    }

    /// The session, then the turn: the session used (if one was) and the turn's result.
    async fn turn(&mut self, fire: &Fire) -> (Option<String>, Result<Value, ErrorObject>) {
        let session = match self.session(fire).await {
            Ok(session) => session,
            Err(e) => return (None, Err(e)),
        };
        self.daemon.schedules.session_chosen(fire, &session).await;
        if let Some(autonomy) = fire.autonomy {
            let params = json!({"sessionId": session, "autonomy": autonomy});
            if let Err(e) = self.caller.call("session/configure", params).await {
                return (Some(session), Err(e));
            }
        }
        let params = json!({"sessionId": session, "prompt": fire.prompt});
        let ended = self.caller.call("session/prompt", params).await;
        (Some(session), ended)
    }

    /// The session `fire` prompts: made (and titled) or resumed.
    async fn session(&self, fire: &Fire) -> Result<String, ErrorObject> {
        let mut params = json!({"agentAlias": fire.agent_alias});
        if let Some(cwd) = &fire.cwd {
            params["cwd"] = json!(cwd);
        }
        let existing = match &fire.session {
            Target::New | Target::Continue(None) => None,
            Target::Continue(Some(id)) | Target::Fixed(id) => Some(id.clone()),
        };
        if let Some(id) = &existing {
            let mut resume = params.clone();
            resume["sessionId"] = json!(id);
            match self.caller.call("session/new", resume).await {
                Ok(_) => return Ok(id.clone()),
                // The last run's session is gone: a new one.
                Err(_) if matches!(fire.session, Target::Continue(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let made = self.caller.call("session/new", params).await?;
        let id = made["sessionId"]
            .as_str()
            .ok_or_else(|| ErrorObject::internal("session/new answered no sessionId"))?
            .to_owned();
        let title = json!({"sessionId": id, "title": fire.title()});
        if let Err(e) = self.caller.call("session/set_title", title).await {
            tracing::warn!(schedule = %fire.schedule_id, "cannot title the run's session: {}", e.message);
        }
        Ok(id)
    }
}
