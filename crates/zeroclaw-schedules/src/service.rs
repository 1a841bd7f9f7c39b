//! The schedules service (SPEC §24.1): the schedules in memory and in the store, what is
//! due, catch-up after downtime, one run of a schedule at a time.
//!
//! It decides when and what runs; it does not run turns. The daemon's timer asks
//! [`Schedules::next_due`], sleeps until then (or until [`Schedules::changed`] wakes
//! it), takes the [`Fire`]s [`Schedules::take_due`] hands out and starts each as an
//! ordinary turn, then reports back with [`Schedules::session_chosen`] and
//! [`Schedules::finished`]. A run still going when its schedule comes due again records
//! that time as `skipped_overlap`. One async lock guards the schedules; it is held
//! across store calls (the local SQLite thread), never across a turn or the network.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, Notify};
use zeroclaw_protocol::Autonomy;
use zeroclaw_protocol::schedule::{
    Schedule, ScheduleCreated, ScheduleFields, ScheduleRun, ScheduleRunStarted,
    ScheduleUpdateParams,
};
use zeroclaw_store::{ScheduleRow, ScheduleRunRow, Store, StoreError};

use crate::when::{self, Invalid, When};

/// Runs recorded `missed` for one schedule at start, at most (the rest are not listed).
const MAX_MISSED: usize = 100;
/// Longest name, prompt and session id.
const MAX_NAME_CHARS: usize = 100;
const MAX_PROMPT_BYTES: usize = 100_000;
const MAX_SESSION_ID_CHARS: usize = 200;
/// `schedule/runs` default and largest `limit`.
pub const DEFAULT_RUNS: u32 = 20;
pub const MAX_RUNS: u32 = zeroclaw_store::RUNS_KEPT as u32;

/// What the service refuses.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A field is missing or wrong (-32602 naming it).
    #[error("{0}")]
    Invalid(Invalid),
    /// No such schedule the caller may see.
    #[error("no schedule {0}")]
    NotFound(String),
    /// The caller keeps as many schedules as it may.
    #[error("at most {0} schedules per principal")]
    Limit(u32),
    #[error("schedule store: {0}")]
    Store(#[from] StoreError),
}

impl From<Invalid> for ScheduleError {
    fn from(i: Invalid) -> Self {
        ScheduleError::Invalid(i)
    }
}

/// Who asks: non-admins see and touch only their own schedules.
#[derive(Debug, Clone, Copy)]
pub struct Viewer<'a> {
    pub principal: &'a str,
    pub admin: bool,
}

impl Viewer<'_> {
    fn sees(&self, owner: &str) -> bool {
        self.admin || self.principal == owner
    }
}

/// Which session a run prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A new session, titled "NAME · date".
    New,
    /// The session of the last run (a new one the first time).
    Continue(Option<String>),
    /// This session (created with this id if it does not exist).
    Fixed(String),
}

/// A run to start now.
#[derive(Debug, Clone)]
pub struct Fire {
    pub run_id: String,
    pub schedule_id: String,
    pub name: String,
    /// The creator's principal id: the run is a turn as this principal.
    pub owner: String,
    pub agent_alias: String,
    pub prompt: String,
    pub session: Target,
    pub cwd: Option<String>,
    pub autonomy: Option<Autonomy>,
    pub scheduled_for: Timestamp,
    pub started_at: Timestamp,
    /// The schedule's zone, for the title of a new session.
    pub tz: TimeZone,
}

impl Fire {
    /// The title of the session `session: "new"` makes: "NAME · date" in the schedule's
    /// zone.
    pub fn title(&self) -> String {
        let local = self.scheduled_for.to_zoned(self.tz.clone());
        let title = format!("{} · {}", self.name, local.strftime("%Y-%m-%d %H:%M"));
        title.chars().take(200).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CatchUp {
    Skip,
    Once,
}

impl CatchUp {
    fn parse(s: &str) -> Result<CatchUp, Invalid> {
        match s {
            "skip" => Ok(CatchUp::Skip),
            "once" => Ok(CatchUp::Once),
            other => Err(Invalid::new(
                "catchUp",
                format!("{other:?}: expected \"skip\" or \"once\""),
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            CatchUp::Skip => "skip",
            CatchUp::Once => "once",
        }
    }
}

/// A schedule's definition as the store keeps it (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Definition {
    agent_alias: String,
    prompt: String,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    every: Option<String>,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    tz: Option<String>,
    session: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    autonomy: Option<Autonomy>,
    catch_up: CatchUp,
    enabled: bool,
    /// Where `every` counts from (ms).
    anchor: i64,
}

struct Entry {
    id: String,
    owner: String,
    name: String,
    def: Definition,
    when: When,
    tz: TimeZone,
    next: Option<Timestamp>,
    running: bool,
    last_session: Option<String>,
    last_run: Option<ScheduleRunRow>,
    created_at: i64,
}

impl Entry {
    fn row(&self) -> Result<ScheduleRow, ScheduleError> {
        let definition = serde_json::to_string(&self.def)
            .map_err(|e| StoreError::Corrupt(format!("schedule definition: {e}")))?;
        Ok(ScheduleRow {
            schedule_id: self.id.clone(),
            owner: self.owner.clone(),
            name: self.name.clone(),
            definition,
            next_run_at: self.next.map(|t| t.as_millisecond()),
            last_session: self.last_session.clone(),
            created_at: self.created_at,
        })
    }

    fn anchor(&self) -> Timestamp {
        Timestamp::from_millisecond(self.def.anchor).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The next run strictly after `after`, or none while disabled.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        if !self.def.enabled {
            return None;
        }
        self.when.next_after(after, &self.tz, self.anchor())
    }

    fn target(&self) -> Target {
        match self.def.session.as_str() {
            "new" => Target::New,
            "continue" => Target::Continue(self.last_session.clone()),
            id => Target::Fixed(id.to_owned()),
        }
    }

    fn fire(&self, scheduled_for: Timestamp, now: Timestamp) -> Fire {
        Fire {
            run_id: new_id(),
            schedule_id: self.id.clone(),
            name: self.name.clone(),
            owner: self.owner.clone(),
            agent_alias: self.def.agent_alias.clone(),
            prompt: self.def.prompt.clone(),
            session: self.target(),
            cwd: self.def.cwd.clone(),
            autonomy: self.def.autonomy,
            scheduled_for,
            started_at: now,
            tz: self.tz.clone(),
        }
    }

    fn view(&self) -> Schedule {
        Schedule {
            schedule_id: self.id.clone(),
            owner: self.owner.clone(),
            name: self.name.clone(),
            agent_alias: self.def.agent_alias.clone(),
            prompt: self.def.prompt.clone(),
            cron: self.def.cron.clone(),
            every: self.def.every.clone(),
            at: self.def.at.clone(),
            tz: when::zone_name(self.def.tz.as_deref()),
            session: self.def.session.clone(),
            cwd: self.def.cwd.clone(),
            autonomy: self.def.autonomy,
            catch_up: self.def.catch_up.as_str().to_owned(),
            enabled: self.def.enabled,
            next_run_at: self.next.map(|t| t.to_string()),
            last_run: self.last_run.as_ref().map(run_view),
            created_at: ms_text(self.created_at),
        }
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn ms_text(ms: i64) -> String {
    Timestamp::from_millisecond(ms)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_string()
}

/// A stored run as the wire shows it.
pub fn run_view(r: &ScheduleRunRow) -> ScheduleRun {
    ScheduleRun {
        run_id: r.run_id.clone(),
        scheduled_for: ms_text(r.scheduled_for),
        started_at: r.started_at.map(ms_text),
        session_id: r.session_id.clone().map(Into::into),
        turn_id: r.turn_id.clone().map(Into::into),
        outcome: r.outcome.clone(),
        error: r.error.clone(),
    }
}

fn run_row(schedule_id: &str, scheduled_for: Timestamp, outcome: &str) -> ScheduleRunRow {
    ScheduleRunRow {
        run_id: new_id(),
        schedule_id: schedule_id.to_owned(),
        scheduled_for: scheduled_for.as_millisecond(),
        started_at: None,
        session_id: None,
        turn_id: None,
        outcome: outcome.to_owned(),
        error: None,
    }
}

/// The schedules of the daemon.
pub struct Schedules {
    store: Store,
    entries: Mutex<BTreeMap<String, Entry>>,
    /// Runs asked for with `schedule/run`, handed out by the next [`Schedules::take_due`]
    /// (at most one per schedule: a schedule whose run is going skips).
    asked: std::sync::Mutex<Vec<Fire>>,
    changed: Notify,
}

impl Schedules {
    /// Loads the stored schedules at start. Runs left `running` by a daemon that stopped
    /// are recorded `failed`; runs that came due while the daemon was down are recorded
    /// `missed`, except that `catchUp: "once"` returns the last of them to run now.
    pub async fn open(
        store: Store,
        now: Timestamp,
    ) -> Result<(Arc<Schedules>, Vec<Fire>), ScheduleError> {
        let mut entries = BTreeMap::new();
        let mut fires = Vec::new();
        for (row, last) in store.load_schedules().await? {
            let mut entry = match restore(row, last) {
                Ok(entry) => entry,
                Err((id, why)) => {
                    tracing::warn!(schedule = %id, "a stored schedule cannot be read: {why}");
                    continue;
                }
            };
            if let Some(run) = entry.last_run.as_mut().filter(|r| r.outcome == "running") {
                run.outcome = "failed".into();
                run.error = Some("the daemon stopped during this run".into());
                store.save_schedule_run(run.clone()).await?;
            }
            if let Some(fire) = catch_up(&store, &mut entry, now).await? {
                fires.push(fire);
            }
            entries.insert(entry.id.clone(), entry);
        }
        let service = Arc::new(Schedules {
            store,
            entries: Mutex::new(entries),
            asked: std::sync::Mutex::new(Vec::new()),
            changed: Notify::new(),
        });
        Ok((service, fires))
    }

    /// Resolves when a schedule was created, changed or deleted (the timer looks again), or a run was asked for.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// `schedule/create` for `owner`, who may keep at most `limit` schedules.
    pub async fn create(
        &self,
        owner: &str,
        fields: ScheduleFields,
        limit: u32,
        now: Timestamp,
    ) -> Result<ScheduleCreated, ScheduleError> {
        let name = required("name", fields.name.as_deref())?;
        let agent_alias = required("agentAlias", fields.agent_alias.as_deref())?;
        let prompt = required("prompt", fields.prompt.as_deref())?;
        let def = Definition {
            agent_alias,
            prompt,
            cron: fields.cron,
            every: fields.every,
            at: fields.at,
            tz: fields.tz,
            session: fields.session.unwrap_or_else(|| "new".into()),
            cwd: fields.cwd,
            autonomy: fields.autonomy,
            catch_up: CatchUp::parse(fields.catch_up.as_deref().unwrap_or("skip"))?,
            enabled: fields.enabled.unwrap_or(true),
            anchor: now.as_millisecond(),
        };
        let mut entry = checked(new_id(), owner.to_owned(), name, def, now.as_millisecond())?;
        if let When::At(at) = entry.when
            && at <= now
        {
            return Err(Invalid::new("at", format!("{at} has passed")).into());
        }
        entry.next = entry.next_after(now);
        let mut entries = self.entries.lock().await;
        let held = entries.values().filter(|e| e.owner == owner).count();
        if held >= limit as usize {
            return Err(ScheduleError::Limit(limit));
        }
        self.store.save_schedule(entry.row()?).await?;
        let created = ScheduleCreated {
            schedule_id: entry.id.clone(),
            next_run_at: entry.next.map(|t| t.to_string()),
        };
        entries.insert(entry.id.clone(), entry);
        drop(entries);
        self.changed.notify_one();
        Ok(created)
    }

    /// `schedule/list`: the viewer's schedules (every one for an admin), oldest first.
    pub async fn list(&self, viewer: Viewer<'_>) -> Vec<Schedule> {
        let entries = self.entries.lock().await;
        let mut out: Vec<&Entry> = entries.values().filter(|e| viewer.sees(&e.owner)).collect();
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        out.into_iter().map(Entry::view).collect()
    }

    /// `schedule/update`: the given fields change; a new timing, zone or enabling counts
    /// from now.
    pub async fn update(
        &self,
        viewer: Viewer<'_>,
        params: ScheduleUpdateParams,
        now: Timestamp,
    ) -> Result<Schedule, ScheduleError> {
        let mut entries = self.entries.lock().await;
        let entry = visible(&mut entries, viewer, &params.schedule_id)?;
        let f = params.fields;
        let mut def = entry.def.clone();
        let mut name = entry.name.clone();
        if let Some(n) = f.name.as_deref() {
            name = required("name", Some(n))?;
        }
        if let Some(a) = f.agent_alias.as_deref() {
            def.agent_alias = required("agentAlias", Some(a))?;
        }
        if let Some(p) = f.prompt.as_deref() {
            def.prompt = required("prompt", Some(p))?;
        }
        let retimed = f.cron.is_some() || f.every.is_some() || f.at.is_some();
        if retimed {
            (def.cron, def.every, def.at) = (f.cron, f.every, f.at);
        }
        let rezoned = f.tz.is_some();
        if rezoned {
            def.tz = f.tz;
        }
        if let Some(s) = f.session {
            def.session = s;
        }
        if f.cwd.is_some() {
            def.cwd = f.cwd;
        }
        if f.autonomy.is_some() {
            def.autonomy = f.autonomy;
        }
        if let Some(c) = f.catch_up.as_deref() {
            def.catch_up = CatchUp::parse(c)?;
        }
        let enabling = f.enabled == Some(true) && !def.enabled;
        if let Some(e) = f.enabled {
            def.enabled = e;
        }
        if retimed || rezoned || enabling {
            def.anchor = now.as_millisecond();
        }
        let mut next = checked(
            entry.id.clone(),
            entry.owner.clone(),
            name,
            def,
            entry.created_at,
        )?;
        if retimed
            && let When::At(at) = next.when
            && at <= now
        {
            return Err(Invalid::new("at", format!("{at} has passed")).into());
        }
        next.running = entry.running;
        next.last_session = entry.last_session.take();
        next.last_run = entry.last_run.take();
        next.next = if retimed || rezoned || enabling || entry.next.is_none() {
            next.next_after(now)
        } else if next.def.enabled {
            entry.next
        } else {
            None
        };
        let row = next.row();
        let saved = match row {
            Ok(row) => self
                .store
                .save_schedule(row)
                .await
                .map_err(ScheduleError::from),
            Err(e) => Err(e),
        };
        if let Err(e) = saved {
            // Nothing changed: the old entry keeps what it had.
            entry.last_session = next.last_session;
            entry.last_run = next.last_run;
            return Err(e);
        }
        let view = next.view();
        *entry = next;
        drop(entries);
        self.changed.notify_one();
        Ok(view)
    }

    /// `schedule/delete`.
    pub async fn delete(&self, viewer: Viewer<'_>, schedule_id: &str) -> Result<(), ScheduleError> {
        let mut entries = self.entries.lock().await;
        visible(&mut entries, viewer, schedule_id)?;
        self.store.delete_schedule(schedule_id).await?;
        entries.remove(schedule_id);
        drop(entries);
        self.changed.notify_one();
        Ok(())
    }

    /// `schedule/run`: a run now, unless one is still going (then `skipped_overlap` is
    /// recorded and no run starts). The timer starts it at once.
    pub async fn run_now(
        &self,
        viewer: Viewer<'_>,
        schedule_id: &str,
        now: Timestamp,
    ) -> Result<ScheduleRunStarted, ScheduleError> {
        let mut entries = self.entries.lock().await;
        let entry = visible(&mut entries, viewer, schedule_id)?;
        let (run, fire) = self.start_or_skip(entry, now, now).await?;
        drop(entries);
        if let Some(fire) = fire {
            self.asked
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(fire);
            self.changed.notify_one();
        }
        Ok(ScheduleRunStarted {
            run_id: run.run_id,
            outcome: run.outcome,
        })
    }

    /// `schedule/runs`: newest first.
    pub async fn runs(
        &self,
        viewer: Viewer<'_>,
        schedule_id: &str,
        limit: Option<u32>,
    ) -> Result<Vec<ScheduleRun>, ScheduleError> {
        let limit = limit.unwrap_or(DEFAULT_RUNS);
        if limit == 0 || limit > MAX_RUNS {
            return Err(Invalid::new("limit", format!("must be 1 to {MAX_RUNS}")).into());
        }
        {
            let mut entries = self.entries.lock().await;
            visible(&mut entries, viewer, schedule_id)?;
        }
        let rows = self.store.schedule_runs(schedule_id, limit).await?;
        Ok(rows.iter().map(run_view).collect())
    }

    /// The earliest time a schedule comes due, if any.
    pub async fn next_due(&self) -> Option<Timestamp> {
        let entries = self.entries.lock().await;
        entries.values().filter_map(|e| e.next).min()
    }

    /// The runs due at `now`: each schedule due moves on to its next time after `now`; a
    /// schedule whose run is still going records `skipped_overlap` instead.
    /// Runs asked for with `schedule/run` come first.
    pub async fn take_due(&self, now: Timestamp) -> Vec<Fire> {
        let mut fires = std::mem::take(&mut *self.asked.lock().unwrap_or_else(|p| p.into_inner()));
        let mut entries = self.entries.lock().await;
        for entry in entries.values_mut() {
            let Some(due) = entry.next.filter(|t| *t <= now) else {
                continue;
            };
            entry.next = entry.next_after(now);
            match self.start_or_skip(entry, due, now).await {
                Ok((_, Some(fire))) => fires.push(fire),
                Ok((_, None)) => {}
                Err(e) => tracing::warn!(schedule = %entry.id, "cannot record a run: {e}"),
            }
        }
        fires
    }

    /// Records that `fire`'s turn goes to `session_id`.
    pub async fn session_chosen(&self, fire: &Fire, session_id: &str) {
        let mut entries = self.entries.lock().await;
        let Some(entry) = entries.get_mut(&fire.schedule_id) else {
            return;
        };
        entry.last_session = Some(session_id.to_owned());
        let mut run = started_row(fire);
        run.session_id = Some(session_id.to_owned());
        entry.last_run = Some(run.clone());
        let saved = match entry.row() {
            Ok(row) => self
                .store
                .save_schedule(row)
                .await
                .map_err(ScheduleError::from),
            Err(e) => Err(e),
        };
        if let Err(e) = saved {
            tracing::warn!(schedule = %fire.schedule_id, "cannot record the run's session: {e}");
        }
        if let Err(e) = self.store.save_schedule_run(run).await {
            tracing::warn!(schedule = %fire.schedule_id, "cannot record a run: {e}");
        }
    }

    /// Records how `fire` ended; the schedule may run again.
    pub async fn finished(
        &self,
        fire: &Fire,
        session_id: Option<&str>,
        turn_id: Option<&str>,
        outcome: &str,
        error: Option<String>,
    ) {
        let mut entries = self.entries.lock().await;
        let Some(entry) = entries.get_mut(&fire.schedule_id) else {
            // Deleted meanwhile: its runs went with it.
            return;
        };
        entry.running = false;
        let mut run = started_row(fire);
        run.session_id = session_id.map(str::to_owned);
        run.turn_id = turn_id.map(str::to_owned);
        run.outcome = outcome.to_owned();
        run.error = error;
        entry.last_run = Some(run.clone());
        if let Err(e) = self.store.save_schedule_run(run).await {
            tracing::warn!(schedule = %fire.schedule_id, "cannot record a run: {e}");
        }
    }

    /// A run of `entry` for `due` at `now`, or `skipped_overlap` when one is going.
    async fn start_or_skip(
        &self,
        entry: &mut Entry,
        due: Timestamp,
        now: Timestamp,
    ) -> Result<(ScheduleRunRow, Option<Fire>), ScheduleError> {
        let result = if entry.running {
            (run_row(&entry.id, due, "skipped_overlap"), None)
        } else {
            let fire = entry.fire(due, now);
            entry.running = true;
            (started_row(&fire), Some(fire))
        };
        entry.last_run = Some(result.0.clone());
        self.store.save_schedule(entry.row()?).await?;
        self.store.save_schedule_run(result.0.clone()).await?;
        Ok(result)
    }
}

/// The run row of a run that started.
fn started_row(fire: &Fire) -> ScheduleRunRow {
    ScheduleRunRow {
        run_id: fire.run_id.clone(),
        schedule_id: fire.schedule_id.clone(),
        scheduled_for: fire.scheduled_for.as_millisecond(),
        started_at: Some(fire.started_at.as_millisecond()),
        session_id: None,
        turn_id: None,
        outcome: "running".into(),
        error: None,
    }
}

/// The schedule `id` if `viewer` may see it.
fn visible<'a>(
    entries: &'a mut BTreeMap<String, Entry>,
    viewer: Viewer<'_>,
    id: &str,
) -> Result<&'a mut Entry, ScheduleError> {
    entries
        .get_mut(id)
        .filter(|e| viewer.sees(&e.owner))
        .ok_or_else(|| ScheduleError::NotFound(id.to_owned()))
}

/// A required text field: present, not blank, within its bounds.
fn required(field: &'static str, value: Option<&str>) -> Result<String, Invalid> {
    let v = value.unwrap_or_default();
    if v.trim().is_empty() {
        return Err(Invalid::new(field, "is required"));
    }
    let too_long = match field {
        "prompt" => v.len() > MAX_PROMPT_BYTES,
        _ => v.chars().count() > MAX_NAME_CHARS,
    };
    if too_long {
        return Err(Invalid::new(field, "is too long"));
    }
    if field != "prompt" && v.chars().any(char::is_control) {
        return Err(Invalid::new(field, "has control characters"));
    }
    Ok(v.to_owned())
}

/// A schedule built from a definition, every field checked.
fn checked(
    id: String,
    owner: String,
    name: String,
    def: Definition,
    created_at: i64,
) -> Result<Entry, Invalid> {
    let when = When::parse(def.cron.as_deref(), def.every.as_deref(), def.at.as_deref())?;
    let tz = when::zone(def.tz.as_deref())?;
    match def.session.as_str() {
        "new" | "continue" => {}
        id if id.trim().is_empty()
            || id.chars().count() > MAX_SESSION_ID_CHARS
            || id.chars().any(char::is_control) =>
        {
            return Err(Invalid::new(
                "session",
                "expected \"new\", \"continue\" or a session id",
            ));
        }
        _ => {}
    }
    if let Some(cwd) = def.cwd.as_deref()
        && !std::path::Path::new(cwd).is_absolute()
    {
        return Err(Invalid::new("cwd", "must be an absolute path"));
    }
    Ok(Entry {
        id,
        owner,
        name,
        def,
        when,
        tz,
        next: None,
        running: false,
        last_session: None,
        last_run: None,
        created_at,
    })
}

/// A stored schedule back in memory.
fn restore(row: ScheduleRow, last: Option<ScheduleRunRow>) -> Result<Entry, (String, String)> {
    let id = row.schedule_id.clone();
    let def: Definition =
        serde_json::from_str(&row.definition).map_err(|e| (id.clone(), e.to_string()))?;
    let mut entry = checked(row.schedule_id, row.owner, row.name, def, row.created_at)
        .map_err(|e| (id.clone(), e.to_string()))?;
    entry.next = row
        .next_run_at
        .and_then(|ms| Timestamp::from_millisecond(ms).ok());
    entry.last_session = row.last_session;
    entry.last_run = last;
    Ok(entry)
}

/// The runs of `entry` that came due before `now` while the daemon was down: recorded
/// `missed`, but for the last under `catchUp: "once"`, which is returned to run now.
async fn catch_up(
    store: &Store,
    entry: &mut Entry,
    now: Timestamp,
) -> Result<Option<Fire>, StoreError> {
    let Some(first) = entry.next.filter(|t| *t <= now) else {
        return Ok(None);
    };
    let mut due = vec![first];
    let mut last = first;
    while due.len() < MAX_MISSED {
        match entry.next_after(last) {
            Some(t) if t <= now => {
                due.push(t);
                last = t;
            }
            _ => break,
        }
    }
    entry.next = entry.next_after(now);
    let run_one = (entry.def.catch_up == CatchUp::Once)
        .then(|| due.pop())
        .flatten();
    for t in due {
        let row = run_row(&entry.id, t, "missed");
        store.save_schedule_run(row.clone()).await?;
        entry.last_run = Some(row);
    }
    let fire = run_one.map(|t| {
        entry.running = true;
        entry.fire(t, now)
    });
    if let Some(fire) = &fire {
        let row = started_row(fire);
        store.save_schedule_run(row.clone()).await?;
        entry.last_run = Some(row);
    }
    let row = entry
        .row()
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    store.save_schedule(row).await?;
    Ok(fire)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn every(name: &str, period: &str, catch_up: &str) -> ScheduleFields {
        ScheduleFields {
            name: Some(name.into()),
            agent_alias: Some("default".into()),
            prompt: Some("p".into()),
            every: Some(period.into()),
            tz: Some("UTC".into()),
            catch_up: Some(catch_up.into()),
            ..Default::default()
        }
    }

    const OP: Viewer<'static> = Viewer {
        principal: "operator",
        admin: true,
    };

    #[tokio::test]
    async fn downtime_is_caught_up_by_policy_and_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let t0 = ts("2026-03-06T10:00:00Z");
        let (skip, once, many) = {
            let store = Store::open(&path).await.expect("store");
            let (s, fires) = Schedules::open(store, t0).await.expect("open");
            assert!(fires.is_empty());
            let skip = s
                .create("operator", every("skip", "15m", "skip"), 100, t0)
                .await;
            let once = s
                .create("operator", every("once", "15m", "once"), 100, t0)
                .await;
            let many = s
                .create("operator", every("many", "1m", "skip"), 100, t0)
                .await;
            (
                skip.expect("skip").schedule_id,
                once.expect("once").schedule_id,
                many.expect("many").schedule_id,
            )
        };
        // Down for two hours and five minutes.
        let store = Store::open(&path).await.expect("store");
        let later = ts("2026-03-06T12:05:00Z");
        let (s, fires) = Schedules::open(store, later).await.expect("open");
        assert_eq!(fires.len(), 1, "{fires:?}");
        assert_eq!(fires[0].schedule_id, once);
        assert_eq!(fires[0].scheduled_for, ts("2026-03-06T12:00:00Z"));
        let outcomes = |runs: Vec<ScheduleRun>| -> Vec<(String, String)> {
            runs.into_iter()
                .map(|r| (r.scheduled_for, r.outcome))
                .collect()
        };
        let missed = outcomes(s.runs(OP, &skip, None).await.expect("runs"));
        let want: Vec<(String, String)> = [
            "12:00", "11:45", "11:30", "11:15", "11:00", "10:45", "10:30", "10:15",
        ]
        .iter()
        .map(|t| (format!("2026-03-06T{t}:00Z"), "missed".to_owned()))
        .collect();
        assert_eq!(missed, want);
        let once_runs = outcomes(s.runs(OP, &once, None).await.expect("runs"));
        assert_eq!(
            once_runs[0],
            ("2026-03-06T12:00:00Z".into(), "running".into())
        );
        assert!(
            once_runs[1..].iter().all(|(_, o)| o == "missed"),
            "{once_runs:?}"
        );
        assert_eq!(once_runs.len(), 8, "{once_runs:?}");
        // A minute schedule missed 125 times records at most MAX_MISSED.
        let many_runs = s.runs(OP, &many, Some(MAX_RUNS)).await.expect("runs");
        assert_eq!(many_runs.len(), MAX_MISSED);
        // Each moves on to its next time after the restart.
        let listed = s.list(OP).await;
        let next = |id: &str| {
            listed
                .iter()
                .find(|l| l.schedule_id == id)
                .and_then(|l| l.next_run_at.clone())
        };
        assert_eq!(next(&skip).as_deref(), Some("2026-03-06T12:15:00Z"));
        assert_eq!(next(&once).as_deref(), Some("2026-03-06T12:15:00Z"));
        assert_eq!(next(&many).as_deref(), Some("2026-03-06T12:06:00Z"));
    }

    #[tokio::test]
    async fn a_due_schedule_whose_run_goes_on_records_skipped_overlap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("s.db")).await.expect("store");
        let t0 = ts("2026-03-06T10:00:00Z");
        let (s, _) = Schedules::open(store, t0).await.expect("open");
        let id = s
            .create("operator", every("e", "1m", "skip"), 100, t0)
            .await
            .expect("create")
            .schedule_id;
        assert_eq!(s.next_due().await, Some(ts("2026-03-06T10:01:00Z")));
        assert!(s.take_due(ts("2026-03-06T10:00:59Z")).await.is_empty());
        let fires = s.take_due(ts("2026-03-06T10:01:00.004Z")).await;
        assert_eq!(fires.len(), 1);
        // Still going a minute later: recorded, not started.
        assert!(s.take_due(ts("2026-03-06T10:02:00Z")).await.is_empty());
        s.finished(&fires[0], Some("sid"), Some("t1"), "completed", None)
            .await;
        assert_eq!(s.take_due(ts("2026-03-06T10:03:00Z")).await.len(), 1);
        let runs: Vec<String> = s
            .runs(OP, &id, None)
            .await
            .expect("runs")
            .into_iter()
            .map(|r| r.outcome)
            .collect();
        assert_eq!(runs, ["running", "skipped_overlap", "completed"]);
    }
}
