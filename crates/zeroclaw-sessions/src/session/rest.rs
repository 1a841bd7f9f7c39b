//! Sessions rest (SPEC §22): a live session nobody uses is unloaded, as `session/close`
//! would, and when the live limit is reached the longest-idle session makes room.
//!
//! A session is *idle* when no turn runs or waits, no approval or question is pending, no
//! connection is subscribed and nothing else holds it (an upload open: the daemon says so
//! through [`SessionManager::set_held_check`]). Its `rest_state` remembers when it was
//! last seen busy; [`SessionManager::rest_idle`] (one pass, called by the daemon's one
//! timer task) unloads the sessions idle for longer than the setting, and
//! [`SessionManager::make_room`] (before `session/new` or a rehydration registers a
//! session) unloads the longest-idle one when a limit is reached. The decision to close is
//! taken under the session's state lock (`LiveSession::close_if_idle`), so a prompt racing
//! it is either queued first (the session stays) or refused as closed; a rested ACP
//! session then comes back from the store on that same call.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it; errors are
//! [`SessionError`](super::error::SessionError).

use std::sync::Arc;
use std::time::Duration;

use zeroclaw_store::{Mode, SessionKey};

use super::error::SessionError;
use super::limits::MAX_LIVE_SESSIONS;
use super::live::LiveSession;
use super::manager::{Full, HeldCheck, Quota, SessionManager};

/// How long unloading one session may wait for its worker (it runs no turn).
const STOP_WAIT: Duration = Duration::from_secs(10);
/// Rested ACP sessions whose file-checkpoint index stays in memory: their next prompt's
/// turn start does not read every turn record from disk again (most of what bringing a
/// long session back would cost, see docs/BENCHMARKS.md). Past this the oldest one's
/// index is let go, as a close does at once.
pub const KEPT_INDEXES: usize = 256;

/// The live sessions a caller may see, counted (SPEC §22, `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub live: u64,
    /// A turn runs or waits, and no person is asked anything.
    pub running: u64,
    /// An approval or a question waits for a person.
    pub waiting: u64,
    /// No turn runs or waits.
    pub idle: u64,
}

/// `sessions` counted by what they do now.
pub fn counts(sessions: &[Arc<LiveSession>]) -> Counts {
    let mut c = Counts {
        live: sessions.len() as u64,
        ..Counts::default()
    };
    for s in sessions {
        match s.activity() {
            (_, true) => c.waiting += 1,
            (true, false) => c.running += 1,
            (false, false) => c.idle += 1,
        }
    }
    c
}

impl SessionManager {
    /// Tells the service what else may hold a live session (the daemon's uploads).
    pub fn set_held_check(&self, check: HeldCheck) {
        if self.held.set(check).is_err() {
            tracing::warn!("the sessions' held check was set twice; the first one stays");
        }
    }

    fn held(&self, live: &LiveSession) -> bool {
        self.held.get().is_some_and(|check| check(live))
    }

    /// Refreshes every busy session's clock; returns the idle ones, longest idle first.
    fn idle_sessions(&self, among: impl Fn(&LiveSession) -> bool) -> Vec<Arc<LiveSession>> {
        let mut idle: Vec<(Duration, Arc<LiveSession>)> = Vec::new();
        for s in self.all() {
            let (busy, _) = s.activity();
            if busy || s.subscribers() > 0 || self.held(&s) {
                s.rest.touch();
            } else if among(&s) {
                idle.push((s.rest.idle_for(), s));
            }
        }
        idle.sort_by_key(|s| std::cmp::Reverse(s.0));
        idle.into_iter().map(|(_, s)| s).collect()
    }

    /// Unloads `live` if it is still idle, as `session/close` would; `false` when it was
    /// busy after all.
    async fn rest(&self, live: &Arc<LiveSession>) -> bool {
        if !live.close_if_idle(self.held(live)) {
            return false;
        }
        self.remove(live);
        if live.wait_stopped(STOP_WAIT).await && live.key.mode == Mode::Acp {
            self.keep_files_index(&live.key.session_id).await;
        }
        tracing::info!(session = %live.key.session_id, mode = %live.key.mode, "idle session unloaded");
        true
    }

    /// Keeps a rested session's file-checkpoint index in memory, letting the oldest kept
    /// one go past [`KEPT_INDEXES`] (unless that session is live again).
    async fn keep_files_index(&self, session_id: &str) {
        let dropped = {
            let mut kept = self.rested_files.lock().unwrap_or_else(|p| p.into_inner());
            kept.retain(|id| id != session_id);
            kept.push_back(session_id.to_owned());
            if kept.len() > KEPT_INDEXES {
                kept.pop_front()
            } else {
                None
            }
        };
        if let Some(id) = dropped
            && self.get(&SessionKey::acp(id.clone())).is_none()
        {
            self.files.unload(&id).await;
        }
    }

    /// One pass of the idle timer: unloads every session idle for `idle` or longer (at
    /// most [`MAX_LIVE_SESSIONS`], the registry's size). Returns how many it unloaded.
    pub async fn rest_idle(&self, idle: Duration) -> usize {
        let mut unloaded = 0;
        for s in self.idle_sessions(|s| s.rest.idle_for() >= idle) {
            if self.rest(&s).await {
                unloaded += 1;
            }
        }
        unloaded
    }

    /// Room for `key` under `quota`: at the daemon-wide limit the longest-idle session,
    /// whoever owns it, is unloaded first, and -32001 comes only when every live session
    /// is busy. A principal's share (SPEC §17) stays a plain limit: -32001 at once. Called
    /// under the `loading` lock, which every registration takes, so the room found stays
    /// until the session is registered.
    pub(crate) async fn make_room(
        &self,
        key: &SessionKey,
        quota: Quota<'_>,
    ) -> Result<(), SessionError> {
        // Each round unloads one session or ends; the registry never holds more.
        for _ in 0..=MAX_LIVE_SESSIONS {
            let limit = match self.full(key, quota) {
                None => return Ok(()),
                Some((Full::Share, limit)) => return Err(SessionError::TooManySessions(limit)),
                Some((Full::Daemon, limit)) => limit,
            };
            let candidates = self.idle_sessions(|_| true);
            let mut freed = false;
            for s in candidates {
                if self.rest(&s).await {
                    freed = true;
                    break;
                }
            }
            if !freed {
                return Err(SessionError::AllBusy(limit));
            }
        }
        Err(SessionError::AllBusy(MAX_LIVE_SESSIONS))
    }
}
