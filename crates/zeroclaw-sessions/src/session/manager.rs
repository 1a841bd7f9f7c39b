//! The registry of live sessions ([`SessionManager`]): every live session of the daemon,
//! keyed by `(mode, session_id)`, the store behind them, the limits on how many may be live
//! (daemon-wide and per principal), and who may touch which session.
//!
//! In the layers of the sessions service it sits above one live session ([`live`](super::live))
//! and below the service's operations (`open`, `lifecycle`, `subscribe`, `configure`,
//! `status`, `mcp`, which add `impl SessionManager` blocks) and the worker that starts a
//! session. It never imports them.
//!
//! Invariants:
//! - at most [`MAX_LIVE_SESSIONS`] live sessions;
//! - the registry lock is a plain mutex, never held across an `.await`;
//! - non-admin principals only see and touch sessions they own (-32003).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use zeroclaw_protocol::SessionId;

use zeroclaw_config::policy::Principal;
use zeroclaw_store::{Mode, SessionKey, Store};

use super::error::SessionError;
use super::file_checkpoints::FileCheckpoints;
use super::limits::MAX_LIVE_SESSIONS;
use super::live::LiveSession;
use super::tuning::Tuning;

/// Whether something outside the sessions service holds a live session (an upload open,
/// SPEC §22): such a session does not rest.
pub type HeldCheck = Box<dyn Fn(&LiveSession) -> bool + Send + Sync>;

/// Every live session of the daemon, and the store they write through.
pub struct SessionManager {
    pub store: Store,
    pub(crate) tuning: Tuning,
    /// The working directories' checkpoints (SPEC §18).
    pub(crate) files: FileCheckpoints,
    /// Where relative agent workspaces are resolved.
    pub(crate) config_dir: PathBuf,
    live: Mutex<HashMap<SessionKey, Arc<LiveSession>>>,
    /// Serializes creating and rehydrating sessions (store work plus registration), so two
    /// calls for one id never both load it. Held across store calls only, never the network.
    pub(crate) loading: tokio::sync::Mutex<()>,
    next_generation: AtomicU64,
    /// Providers' model lists (`models/list`, `session/configure`), cached 60 s.
    pub models: zeroclaw_agent::ModelCatalog,
    /// What else may hold a live session, so it does not rest (SPEC §22; set by the daemon).
    pub(crate) held: std::sync::OnceLock<HeldCheck>,
    /// What watches every session's notable updates (SPEC §24.3; set by the daemon).
    pub(crate) tap: std::sync::OnceLock<Arc<dyn super::tap::UpdateTap>>,
    /// ACP sessions that rested with their file-checkpoint index kept in memory, oldest
    /// first (a bounded number, see the sessions' `rest` module).
    pub(crate) rested_files: Mutex<std::collections::VecDeque<String>>,
}

impl SessionManager {
    pub fn new(
        store: Store,
        files: FileCheckpoints,
        config_dir: PathBuf,
        tuning: Tuning,
    ) -> Arc<SessionManager> {
        Arc::new(SessionManager {
            store,
            tuning,
            files,
            config_dir,
            live: Mutex::new(HashMap::new()),
            loading: tokio::sync::Mutex::new(()),
            next_generation: AtomicU64::new(1),
            models: zeroclaw_agent::ModelCatalog::default(),
            held: std::sync::OnceLock::new(),
            tap: std::sync::OnceLock::new(),
            rested_files: Mutex::new(std::collections::VecDeque::new()),
        })
    }

    /// Lets `tap` watch every session that goes live from now on (set once, at start).
    pub fn set_tap(&self, tap: Arc<dyn super::tap::UpdateTap>) {
        if self.tap.set(tap).is_err() {
            tracing::warn!("the sessions' update tap was already set");
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionKey, Arc<LiveSession>>> {
        // The map stays consistent even if a holder panicked: every update is one insert
        // or one remove.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Test hooks: while `on`, every auto-trim snapshot write fails (the daemon's
    /// `ZEROCLAW_TEST_HOOKS` trigger file; feature `test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub fn fail_snapshots(&self, on: bool) {
        self.tuning
            .fail_snapshots
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn next_generation(&self) -> u64 {
        self.next_generation.fetch_add(1, Ordering::Relaxed)
    }

    /// The live session with exactly this key (one resting, SPEC §22, is gone already).
    pub fn get(&self, key: &SessionKey) -> Option<Arc<LiveSession>> {
        self.lock().get(key).filter(|s| !s.rest.rested()).cloned()
    }

    /// With `mode` that mode; without it the ACP session, never a chat session of the same
    /// id (SPEC §17.1: the mode-less calls of ACP clients must not reach another session).
    pub fn resolve_key(&self, session_id: &SessionId, mode: Option<Mode>) -> SessionKey {
        SessionKey {
            mode: mode.unwrap_or(Mode::Acp),
            session_id: session_id.as_str().to_owned(),
        }
    }

    /// Registers `session` unless a limit is reached or the key is taken (then the
    /// session already registered is returned as `Err(Ok(existing))`).
    pub(crate) fn insert(
        &self,
        session: Arc<LiveSession>,
        quota: Quota,
    ) -> Result<(), Result<Arc<LiveSession>, SessionError>> {
        let mut map = self.lock();
        if let Some(existing) = map.get(&session.key) {
            if !existing.rest.rested() {
                return Err(Ok(Arc::clone(existing)));
            }
            // Resting, and about to be unregistered: the new instance takes its place.
            map.remove(&session.key);
        }
        room(&map, quota).map_err(Err)?;
        map.insert(session.key.clone(), session);
        Ok(())
    }

    /// Unregisters exactly this session object (not a newer one with the same key).
    pub(crate) fn remove(&self, session: &Arc<LiveSession>) {
        let mut map = self.lock();
        if map
            .get(&session.key)
            .is_some_and(|s| Arc::ptr_eq(s, session))
        {
            map.remove(&session.key);
        }
    }

    /// Live sessions `principal` may see, ordered by id then mode.
    pub fn visible(&self, principal: &Principal) -> Vec<Arc<LiveSession>> {
        let mut out: Vec<Arc<LiveSession>> = self
            .lock()
            .values()
            .filter(|s| may_touch(principal, &s.owner))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            (a.key.session_id.as_str(), a.key.mode.as_str())
                .cmp(&(b.key.session_id.as_str(), b.key.mode.as_str()))
        });
        out
    }

    /// Which limit (and its number) leaves no room for `key` under `quota`; `None` when
    /// there is room or `key` is live already.
    pub(crate) fn full(&self, key: &SessionKey, quota: Quota) -> Option<(Full, usize)> {
        let map = self.lock();
        if map.contains_key(key) {
            return None;
        }
        crowded(&map, quota)
    }

    /// Every live session (shutdown, resting).
    pub(crate) fn all(&self) -> Vec<Arc<LiveSession>> {
        self.lock().values().cloned().collect()
    }

    /// Daemon shutdown, step one: cancel every running turn and stop taking prompts. The
    /// turns then finish (cancelled) and persist on their own.
    pub fn cancel_all(&self) {
        for s in self.all() {
            s.close();
        }
    }

    /// Daemon shutdown, step two: waits (up to `limit`) for every worker to have persisted
    /// its last turn and stopped.
    pub async fn wait_idle(&self, limit: Duration) {
        let sessions = self.all();
        let wait = async {
            for s in &sessions {
                s.stopped().await;
            }
        };
        if tokio::time::timeout(limit, wait).await.is_err() {
            tracing::warn!("some turns did not finish persisting before shutdown");
        }
    }
}

/// The per-principal share of the live sessions (SPEC §17 "Quotas per principal"): a
/// non-admin principal holds at most `limit` of them; admins are only bound by
/// [`MAX_LIVE_SESSIONS`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quota<'a> {
    pub owner: &'a str,
    pub limit: Option<usize>,
}

impl<'a> Quota<'a> {
    /// The quota of `principal` under `config`.
    pub fn of(principal: &'a Principal, config: &zeroclaw_config::Config) -> Quota<'a> {
        Quota {
            owner: &principal.id,
            limit: (!principal.admin).then_some(config.limits.live_sessions_per_principal as usize),
        }
    }
}

/// Which limit a full registry reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// [`MAX_LIVE_SESSIONS`].
    Daemon,
    /// The principal's share.
    Share,
}

/// The limit the daemon-wide count or `quota` reached, with its number; `None` when one
/// more session fits.
fn crowded(map: &HashMap<SessionKey, Arc<LiveSession>>, quota: Quota) -> Option<(Full, usize)> {
    if map.len() >= MAX_LIVE_SESSIONS {
        return Some((Full::Daemon, MAX_LIVE_SESSIONS));
    }
    if let Some(limit) = quota.limit
        && map.values().filter(|s| s.owner == quota.owner).count() >= limit
    {
        return Some((Full::Share, limit));
    }
    None
}

/// -32001 when the daemon-wide limit or `quota` leaves no room for one more session.
fn room(map: &HashMap<SessionKey, Arc<LiveSession>>, quota: Quota) -> Result<(), SessionError> {
    match crowded(map, quota) {
        Some((_, limit)) => Err(SessionError::TooManySessions(limit)),
        None => Ok(()),
    }
}

/// Whether `principal` may see and touch a session owned by `owner`.
pub fn may_touch(principal: &Principal, owner: &str) -> bool {
    principal.admin || principal.id == owner
}

/// -32003 unless `principal` may touch a session owned by `owner`.
pub fn check_owner(
    principal: &Principal,
    owner: &str,
    session_id: &str,
) -> Result<(), SessionError> {
    if may_touch(principal, owner) {
        Ok(())
    } else {
        Err(SessionError::not_owner(session_id))
    }
}
