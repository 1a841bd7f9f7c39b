//! The commit step (SPEC §8.2): storing files for one exact session, atomically with
//! respect to that session and to policy changes.
//!
//! Under the session's file lock it confirms the session is still the one the upload was
//! bound to (same id, generation, owner and agent), then — with the configuration write
//! lock and the pairing-token file lock held so neither can change until the file is
//! stored — re-checks the caller's credential, `files:create`, ownership and agent
//! permission, and only then writes and indexes the bytes. Any failure writes nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use zeroclaw_config::policy;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_store::SessionKey;

use super::staging::UploadTarget;
use super::workspace::{self, FileIndex, StoredFile};
use crate::auth;
use crate::connection::ConnectionContext;
use crate::session::check_owner;
use crate::state::Daemon;

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

/// File indexes of live sessions, by session key and generation.
#[derive(Default)]
pub struct FileLocks {
    by_session: Mutex<HashMap<(SessionKey, u64), LockedIndex>>,
}

impl FileLocks {
    fn index(&self, key: &SessionKey, generation: u64) -> LockedIndex {
        let mut map = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        // Indexes of sessions that ended (older generations) are dropped as we go.
        map.retain(|(k, g), _| k != key || *g == generation);
        Arc::clone(map.entry((key.clone(), generation)).or_default())
    }
}

/// The session a call names, as an upload target (checks it is live and the caller may
/// use it: -32000 unknown, -32003 not the owner, -32012 agent not allowed).
pub fn target_of(
    daemon: &Daemon,
    principal: &policy::Principal,
    key: &SessionKey,
) -> Result<UploadTarget, ErrorObject> {
    let live = daemon.sessions.get(key).ok_or_else(|| {
        ErrorObject::session_not_found(format!("session {} not found", key.session_id))
    })?;
    check_owner(principal, &live.owner, &key.session_id)?;
    if !principal.may_use_agent(&live.agent_alias) {
        return Err(ErrorObject::forbidden(format!(
            "principal {} may not use agent {}",
            principal.id, live.agent_alias
        )));
    }
    Ok(UploadTarget {
        key: key.clone(),
        generation: live.generation,
        owner: live.owner.clone(),
        agent: live.agent_alias.clone(),
    })
}

/// Stores `items` for `target` on behalf of `conn`, or fails having written nothing.
pub async fn commit(
    daemon: &Arc<Daemon>,
    conn: &ConnectionContext,
    target: &UploadTarget,
    items: Vec<Item>,
) -> Result<Vec<StoredFile>, ErrorObject> {
    let gone = || {
        ErrorObject::session_not_found(format!(
            "session {} was closed or re-created; nothing was stored",
            target.key.session_id
        ))
    };
    let index = daemon.files.index(&target.key, target.generation);
    let mut index = index.lock().await;
    let live = daemon.sessions.get(&target.key).ok_or_else(gone)?;
    if live.generation != target.generation
        || live.owner != target.owner
        || live.agent_alias != target.agent
    {
        return Err(gone());
    }
    let frozen = daemon.config.freeze().await;
    let tokens = daemon.tokens.hold();
    let principal = auth::resolve_frozen(daemon, conn, frozen.config())?;
    principal.check_method("file/attach")?;
    check_owner(&principal, &live.owner, &target.key.session_id)?;
    if !principal.may_use_agent(&live.agent_alias) {
        return Err(ErrorObject::forbidden(format!(
            "principal {} may not use agent {}",
            principal.id, live.agent_alias
        )));
    }
    let workspace = live.workspace.clone();
    let stored = tokio::task::block_in_place(|| {
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
    drop(tokens);
    drop(frozen);
    stored
}
