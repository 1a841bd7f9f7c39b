//! Making a session live: `session/new` (a new row, or the resume of a persisted one) and
//! rehydration of a persisted ACP row when `session/prompt` finds no live owner
//! (SPEC §7.1, §7.3).
//!
//! Both run under the manager's `loading` lock, so one id is never loaded twice; both
//! recover open checkpoints of the row (its own surface only) before the session takes a
//! prompt. Rows of other interaction surfaces are refused and left untouched.
//!
//! Layers: an operation of the sessions service (an `impl SessionManager` block); it
//! imports the registry, the live session and the leaves below it, never another layer of
//! the daemon; errors are [`SessionError`](super::error::SessionError).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zeroclaw_config::Config;
use zeroclaw_config::policy::Principal;
use zeroclaw_protocol::session::SessionNewResult;
use zeroclaw_store::{Mode, NewSession, RPC_SURFACE, SessionKey, SessionRow};

use super::cwd_links;
use super::error::SessionError;
use super::live::LiveSession;
use super::manager::{Quota, SessionManager, check_owner};
use super::persist::context_from;
use super::worker;

/// Longest accepted session id, in bytes.
const MAX_SESSION_ID: usize = 256;

/// Parameters of `session/new`.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub agent_alias: String,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub mode: Mode,
    /// MCP servers for this session only (admins only; checked by the caller).
    pub mcp_servers: Vec<zeroclaw_protocol::session::McpServer>,
}

pub(super) fn check_agent(
    config: &Config,
    principal: &Principal,
    alias: &str,
) -> Result<(), SessionError> {
    if !config.agents.contains_key(alias) {
        return Err(SessionError::invalid(format!("unknown agent {alias:?}")));
    }
    if !principal.may_use_agent(alias) {
        return Err(SessionError::AgentNotAllowed {
            principal: principal.id.clone(),
            agent: alias.to_owned(),
        });
    }
    Ok(())
}

fn check_session_id(id: &str) -> Result<(), SessionError> {
    if id.is_empty() || id.len() > MAX_SESSION_ID || id.chars().any(char::is_control) {
        return Err(SessionError::invalid(format!(
            "invalid sessionId: use 1-{MAX_SESSION_ID} bytes without control characters"
        )));
    }
    Ok(())
}

/// Whether `requested` (relative to `workspace`, or absolute) names a path inside
/// `workspace` by its components alone (`..` taken lexically, nothing resolved on disk).
fn lexically_inside(workspace: &Path, requested: &str) -> bool {
    use std::path::Component;
    let mut path = PathBuf::new();
    for part in workspace.join(requested).components() {
        match part {
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    path.starts_with(workspace)
}

impl SessionManager {
    /// A non-admin may not take a session id that another owner's session holds, live or
    /// persisted, in either mode (SPEC §17.1): calls that name the id would reach the
    /// wrong session.
    async fn check_id_unclaimed(
        &self,
        principal: &Principal,
        session_id: &str,
    ) -> Result<(), SessionError> {
        if principal.admin {
            return Ok(());
        }
        for key in [SessionKey::acp(session_id), SessionKey::chat(session_id)] {
            let owner = match self.get(&key) {
                Some(live) => Some(live.owner.clone()),
                None => self.store.get_session(&key).await?.map(|row| row.owner),
            };
            if let Some(owner) = owner {
                check_owner(principal, &owner, session_id)?;
            }
        }
        Ok(())
    }

    /// The agent's workspace, created if needed, as an absolute path.
    fn workspace(&self, config: &Config, alias: &str) -> Result<PathBuf, SessionError> {
        let dir = config.agent_workspace(alias, &self.config_dir);
        std::fs::create_dir_all(&dir).map_err(|e| {
            SessionError::failed(format!("cannot create workspace {}: {e}", dir.display()))
        })?;
        dir.canonicalize().map_err(|e| {
            SessionError::failed(format!("cannot resolve workspace {}: {e}", dir.display()))
        })
    }

    /// Where `bash` runs (SPEC §17 "Names are data"): `requested` (relative to the
    /// workspace, or absolute), which must be an existing directory (-32602) and, when
    /// `confined` (non-admin principals), lie inside the workspace once canonicalized
    /// (-32012); else the row's cwd if it still exists (and is inside the workspace when
    /// confined), else the workspace.
    fn cwd(
        workspace: &Path,
        requested: Option<&str>,
        row: Option<&SessionRow>,
        confined: bool,
    ) -> Result<PathBuf, SessionError> {
        if let Some(req) = requested.filter(|c| !c.is_empty()) {
            let not_dir =
                || SessionError::invalid(format!("cwd {req:?} is not an existing directory"));
            let outside = || SessionError::CwdOutsideWorkspace(req.to_owned());
            // Containment first, on the path as given, before the disk is asked anything:
            // the answer must not say whether a path outside exists (SPEC §17.1).
            if confined && !lexically_inside(workspace, req) {
                return Err(outside());
            }
            let path = match workspace.join(req).canonicalize() {
                Ok(path) => path,
                // A link inside to a missing path outside is outside all the same.
                Err(_) if confined && cwd_links::leads_outside(workspace, req) => {
                    return Err(outside());
                }
                Err(_) => return Err(not_dir()),
            };
            // And as resolved: a symlink inside may point out.
            if confined && !path.starts_with(workspace) {
                return Err(outside());
            }
            if !path.is_dir() {
                return Err(not_dir());
            }
            return Ok(path);
        }
        Ok(row
            .and_then(|r| r.cwd.as_deref())
            .and_then(|c| PathBuf::from(c).canonicalize().ok())
            .filter(|p| p.is_dir() && (!confined || p.starts_with(workspace)))
            .unwrap_or_else(|| workspace.to_path_buf()))
    }

    async fn describe(
        &self,
        session: &LiveSession,
        resumed: bool,
    ) -> Result<SessionNewResult, SessionError> {
        let count = self
            .store
            .get_session(&session.key)
            .await?
            .map_or(0, |r| r.message_count);
        let mode = session.wire_mode();
        Ok(SessionNewResult {
            session_id: session.key.session_id.clone().into(),
            agent_alias: session.agent_alias.clone(),
            mode,
            message_count: count.max(0) as u64,
            workspace_dir: session.workspace.display().to_string(),
            resumed,
        })
    }

    /// An already live session named by `session/new`: the caller attaches to it.
    async fn attach(
        &self,
        principal: &Principal,
        session: &LiveSession,
        alias: &str,
    ) -> Result<SessionNewResult, SessionError> {
        check_owner(principal, &session.owner, session.session_id())?;
        if session.agent_alias != alias {
            return Err(SessionError::invalid(format!(
                "session {} runs agent {}, not {alias}",
                session.session_id(),
                session.agent_alias
            )));
        }
        self.describe(session, true).await
    }

    /// `session/new`.
    pub async fn new_session(
        self: &Arc<Self>,
        principal: &Principal,
        config: &Config,
        req: NewRequest,
    ) -> Result<SessionNewResult, SessionError> {
        let alias = req.agent_alias.as_str();
        check_agent(config, principal, alias)?;
        let session_id = req
            .session_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        check_session_id(&session_id)?;
        let key = SessionKey {
            mode: req.mode,
            session_id,
        };
        if let Some(live) = self.get(&key) {
            return self.attach(principal, &live, alias).await;
        }
        let quota = Quota::of(principal, config);
        let workspace = self.workspace(config, alias)?;
        let confined = !principal.admin;
        let cwd = Self::cwd(&workspace, req.cwd.as_deref(), None, confined)?;

        let _loading = self.loading.lock().await;
        if let Some(live) = self.get(&key) {
            return self.attach(principal, &live, alias).await;
        }
        self.check_id_unclaimed(principal, &key.session_id).await?;
        // At the live limit the longest-idle session is unloaded first (SPEC §22).
        self.make_room(&key, quota).await?;
        if let Some(row) = self.store.get_session(&key).await? {
            // Check before `open_session` so a refused resume writes nothing.
            if !row.is_killed() {
                check_owner(principal, &row.owner, &key.session_id)?;
                if row.agent_alias != alias {
                    return Err(SessionError::invalid(format!(
                        "session {} belongs to agent {}, not {alias}",
                        key.session_id, row.agent_alias
                    )));
                }
                if row.interaction_surface != RPC_SURFACE {
                    return Err(SessionError::not_found(format!(
                        "session {} belongs to interaction surface {:?} and is not served here",
                        key.session_id, row.interaction_surface
                    )));
                }
            }
        }
        let opened = self
            .store
            .open_session(NewSession {
                key: key.clone(),
                agent_alias: alias.to_owned(),
                owner: principal.id.clone(),
                cwd: Some(cwd.display().to_string()),
                interaction_surface: RPC_SURFACE.to_owned(),
            })
            .await?;
        let row = opened.row;
        let context = if !opened.resumed {
            Vec::new()
        } else if key.mode == Mode::Acp {
            let recovered = self.store.recover(&key, RPC_SURFACE).await?;
            context_from(&recovered.context)
        } else {
            let restored = self.store.context(&key).await?;
            context_from(&restored)
        };
        let cwd = Self::cwd(&workspace, req.cwd.as_deref(), Some(&row), confined)?;
        let now_in = cwd.display().to_string();
        if opened.resumed
            && req.cwd.as_deref().is_some_and(|c| !c.is_empty())
            && row.cwd.as_deref() != Some(now_in.as_str())
        {
            // Resumed in another directory: listed under the one it works in now.
            self.store.set_cwd(&key, &now_in).await?;
        }
        let live = worker::start(
            self,
            key,
            alias.to_owned(),
            row.owner.clone(),
            workspace,
            cwd,
            context,
        );
        if let Err(e) = self
            .prepare_live(&live, config, &req.mcp_servers, opened.resumed)
            .await
        {
            live.close();
            return Err(e);
        }
        self.register(&live, quota)?;
        tracing::info!(session = %live.key.session_id, mode = %live.key.mode, agent = alias, resumed = opened.resumed, "session live");
        self.describe(&live, opened.resumed).await
    }

    fn register(&self, live: &Arc<LiveSession>, quota: Quota) -> Result<(), SessionError> {
        match self.insert(Arc::clone(live), quota) {
            Ok(()) => Ok(()),
            Err(e) => {
                live.close();
                Err(match e {
                    Ok(_) => SessionError::failed("session registered twice"),
                    Err(e) => e,
                })
            }
        }
    }

    /// The live session for `key`, rehydrating a persisted ACP row of this surface when
    /// none is live (SPEC §7.3). Chat sessions are never rehydrated by a prompt.
    pub async fn live_or_rehydrate(
        self: &Arc<Self>,
        principal: &Principal,
        config: &Config,
        key: &SessionKey,
    ) -> Result<Arc<LiveSession>, SessionError> {
        if let Some(live) = self.get(key) {
            return Ok(live);
        }
        let not_found =
            || SessionError::not_found(format!("session not found: {}", key.session_id));
        if key.mode == Mode::Chat {
            return Err(not_found());
        }
        let started = std::time::Instant::now();
        let _loading = self.loading.lock().await;
        if let Some(live) = self.get(key) {
            return Ok(live);
        }
        let row = self.store.get_session(key).await?.ok_or_else(not_found)?;
        check_owner(principal, &row.owner, &key.session_id)?;
        if row.is_killed() {
            return Err(SessionError::not_found(format!(
                "session {} was killed",
                key.session_id
            )));
        }
        if row.interaction_surface != RPC_SURFACE {
            return Err(SessionError::not_found(format!(
                "session {} belongs to interaction surface {:?} and is not served here",
                key.session_id, row.interaction_surface
            )));
        }
        check_agent(config, principal, &row.agent_alias)?;
        // The session counts against its owner's share, whoever brings it back.
        let quota = Quota {
            owner: &row.owner,
            limit: Quota::of(principal, config).limit,
        };
        self.make_room(key, quota).await?;
        let workspace = self.workspace(config, &row.agent_alias)?;
        let cwd = Self::cwd(&workspace, None, Some(&row), !principal.admin)?;
        let recovered = self.store.recover(key, RPC_SURFACE).await?;
        let recovered_at = started.elapsed();
        if !recovered.interrupted_turns.is_empty() {
            tracing::info!(session = %key.session_id, turns = ?recovered.interrupted_turns, "recovered interrupted turns");
        }
        let live = worker::start(
            self,
            key.clone(),
            row.agent_alias.clone(),
            row.owner.clone(),
            workspace,
            cwd,
            context_from(&recovered.context),
        );
        let recovered_rows = recovered.context.rows.len();
        if let Err(e) = self.prepare_live(&live, config, &[], true).await {
            live.close();
            return Err(e);
        }
        self.register(&live, quota)?;
        // How long bringing it back took (SPEC §22: a 1,000-message session in under 50 ms).
        tracing::info!(
            session = %key.session_id,
            rows = recovered_rows,
            recover_us = recovered_at.as_micros() as u64,
            total_us = started.elapsed().as_micros() as u64,
            "session rehydrated"
        );
        Ok(live)
    }
}
