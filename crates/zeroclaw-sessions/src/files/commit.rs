//! The commit step (SPEC §8.2): storing files for one exact session, atomically with
//! respect to that session and to policy changes.
//!
//! Under the session's file lock it confirms the session is still the one the upload was
//! bound to (same id, generation, owner and agent), then — with the configuration write
//! lock and, for a token credential, the pairing-token file lock held so neither can
//! change until the file is stored — re-checks the caller's credential and `files:create`
//! (the daemon's check, passed in as a [`Caller`]), ownership and agent permission, and
//! only then writes and indexes the bytes (off the async threads). Any failure writes
//! nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zeroclaw_config::policy::Principal;
use zeroclaw_config::{Config, ConfigStore};
use zeroclaw_store::SessionKey;

use super::error::FilesError;
use super::staging::UploadTarget;
use super::workspace::{self, FileIndex, StoredFile};
use crate::pairing::TokenStore;
use crate::session::{LiveSession, SessionManager, may_touch};

/// One file to store.
pub struct Item {
    pub bytes: Vec<u8>,
    /// The bytes' SHA-256 (hex) when already known.
    pub sha256: Option<String>,
    pub filename: Option<String>,
    pub mime: Option<String>,
}

/// One session's file index behind the lock its commits take.
type LockedIndex = Arc<tokio::sync::Mutex<FileIndex>>;

/// How long the file writes of one commit may take before the commit fails.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(30);

/// What the commit step reads and locks: the daemon's parts, lent for one call.
pub struct Stores<'a> {
    pub sessions: &'a SessionManager,
    pub config: &'a ConfigStore,
    /// Held shared while a token credential is re-checked and its files stored.
    pub tokens: &'a TokenStore,
    pub locks: &'a FileLocks,
}

/// Who asks to store, as the daemon knows it: the commit step re-checks the caller with
/// this under the configuration (and, for a token, the pairing file) it holds.
pub struct Caller<'a, D> {
    /// Whether the caller's credential is a pairing token: the token file is then held
    /// until the files are stored, so an unpairing cannot slip in between.
    pub by_token: bool,
    /// The caller's principal under `config`, if its credential still stands and it may
    /// store files (`files:create`); a refusal is the daemon's own error, passed back
    /// unchanged as [`Refused::Denied`].
    pub check: &'a (dyn Fn(&Config) -> Result<Principal, D> + Sync),
}

/// Why a commit stored nothing: the files service's own reasons, or the caller's check
/// refused it.
#[derive(Debug)]
pub enum Refused<D> {
    Files(FilesError),
    Denied(D),
}

impl<D> From<FilesError> for Refused<D> {
    fn from(e: FilesError) -> Self {
        Refused::Files(e)
    }
}

/// File indexes of live sessions, by session key and generation. An entry lives no longer
/// than its session: every lookup drops the entries of sessions that have ended, so the
/// map never holds more than the live sessions plus the one being looked up.
#[derive(Default)]
pub struct FileLocks {
    by_session: Mutex<HashMap<(SessionKey, u64), LockedIndex>>,
}

impl FileLocks {
    /// The index of `key` at `generation`; `is_live(key, generation)` tells which other
    /// entries still belong to a live session.
    fn index(
        &self,
        key: &SessionKey,
        generation: u64,
        is_live: impl Fn(&SessionKey, u64) -> bool,
    ) -> LockedIndex {
        let mut map = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|(k, g), _| (k == key && *g == generation) || is_live(k, *g));
        Arc::clone(map.entry((key.clone(), generation)).or_default())
    }

    /// Sessions with an index held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

/// -32003 / -32012 unless `principal` may store files for `live`.
fn check_access(principal: &Principal, live: &LiveSession) -> Result<(), FilesError> {
    if !may_touch(principal, &live.owner) {
        return Err(FilesError::NotOwner(live.key.session_id.clone()));
    }
    if !principal.may_use_agent(&live.agent_alias) {
        return Err(FilesError::AgentNotAllowed {
            principal: principal.id.clone(),
            agent: live.agent_alias.clone(),
        });
    }
    Ok(())
}

/// The session a call names, as an upload target (checks it is live and the caller may
/// use it: -32000 unknown, -32003 not the owner, -32012 agent not allowed).
pub fn target_of(
    sessions: &SessionManager,
    principal: &Principal,
    key: &SessionKey,
) -> Result<UploadTarget, FilesError> {
    let live = sessions
        .get(key)
        .ok_or_else(|| FilesError::SessionNotFound(key.session_id.clone()))?;
    check_access(principal, &live)?;
    Ok(UploadTarget {
        key: key.clone(),
        generation: live.generation,
        owner: live.owner.clone(),
        agent: live.agent_alias.clone(),
    })
}

/// Stores `items` for `target` on behalf of `caller`, or fails having written nothing.
pub async fn commit<D>(
    stores: Stores<'_>,
    caller: Caller<'_, D>,
    target: &UploadTarget,
    items: Vec<Item>,
) -> Result<Vec<StoredFile>, Refused<D>> {
    let gone = || FilesError::SessionGone(target.key.session_id.clone());
    let sessions = stores.sessions;
    let index = stores.locks.index(&target.key, target.generation, |k, g| {
        sessions.get(k).is_some_and(|live| live.generation == g)
    });
    // Another commit of this session holds it at most until its writes' deadline.
    let mut index = tokio::time::timeout(WRITE_DEADLINE, index.lock_owned())
        .await
        .map_err(|_| FilesError::Busy)?;
    let live = sessions.get(&target.key).ok_or_else(gone)?;
    if live.generation != target.generation
        || live.owner != target.owner
        || live.agent_alias != target.agent
    {
        return Err(gone().into());
    }
    let frozen = stores.config.freeze().await;
    // Only a token credential depends on the pairing file; a local uid does not wait on it.
    let tokens = match caller.by_token {
        true => Some(stores.tokens.hold().await.map_err(FilesError::TokensHeld)?),
        false => None,
    };
    let principal = (caller.check)(frozen.config()).map_err(Refused::Denied)?;
    check_access(&principal, &live)?;
    let workspace = live.workspace.clone();
    // The writes run off the async threads; the session's index lock travels with them,
    // so a write that outlives the deadline still keeps other commits of it waiting.
    let write = tokio::task::spawn_blocking(move || {
        items
            .into_iter()
            .map(|item| {
                workspace::store(
                    &workspace,
                    &mut index,
                    &item.bytes,
                    item.sha256.as_deref(),
                    item.filename.as_deref(),
                    item.mime.as_deref(),
                )
            })
            .collect::<Result<Vec<_>, _>>()
    });
    let stored = match tokio::time::timeout(WRITE_DEADLINE, write).await {
        Ok(Ok(stored)) => stored,
        Ok(Err(e)) => Err(FilesError::WriterLost(e.to_string())),
        Err(_) => Err(FilesError::WriteTimeout(WRITE_DEADLINE)),
    };
    drop(tokens);
    drop(frozen);
    Ok(stored?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroclaw_store::Mode;

    fn key(i: usize) -> SessionKey {
        SessionKey {
            mode: Mode::Acp,
            session_id: format!("s{i}"),
        }
    }

    #[test]
    fn indexes_of_ended_sessions_are_dropped() {
        let locks = FileLocks::default();
        // 2,000 sessions each created, attached to and ended: at most the live ones stay.
        for i in 0..2000 {
            let _ = locks.index(&key(i), i as u64, |_, _| false);
            assert!(
                locks.len() <= 1,
                "{} entries after {i} sessions",
                locks.len()
            );
        }
        // Live sessions keep their index (the same one on every lookup).
        let live = |k: &SessionKey, g: u64| k.session_id.len() == 2 && g < 10;
        let first = locks.index(&key(3), 3, live);
        for i in 0..10 {
            let _ = locks.index(&key(i), i as u64, live);
        }
        assert_eq!(locks.len(), 10);
        assert!(Arc::ptr_eq(&first, &locks.index(&key(3), 3, live)));
        // A new generation of the same id does not inherit the old index.
        let regen = locks.index(&key(3), 99, |_, _| false);
        assert!(!Arc::ptr_eq(&first, &regen));
        assert_eq!(locks.len(), 1);
    }
}
