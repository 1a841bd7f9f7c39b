//! The daemon's shared state: where it lives, its configuration, its connections, its
//! sessions and the shutdown signal. One [`Daemon`] is shared by every connection and handler.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use zeroclaw_config::{Config, ConfigStore};
use zeroclaw_ipc::Dirs;
use zeroclaw_sessions::files::UploadManager;
use zeroclaw_sessions::files::commit::{FileLocks, Stores};
use zeroclaw_sessions::pairing::TokenStore;
use zeroclaw_sessions::session::SessionManager;

use crate::auth::{self, AuthError, Bearers, Presented, Principal};
use crate::gateway_control::Gateway;
use crate::registry::ConnectionRegistry;
use crate::status_text::FixedText;

pub struct Daemon {
    pub dirs: Dirs,
    /// The plain socket path (or pipe name) clients connect to.
    pub endpoint: PathBuf,
    pub config: ConfigStore,
    pub started: Instant,
    pub pid: u32,
    /// The daemon's own uid (the operator's, while `security.trust_daemon_uid`).
    pub uid: u32,
    pub connections: Arc<ConnectionRegistry>,
    /// Paired WebSocket tokens (re-read when the file changes).
    pub tokens: TokenStore,
    /// How long a full outbound queue may wait for its peer to read.
    pub stall_timeout: Duration,
    /// Cancelled once, when the daemon starts to stop.
    pub shutdown: CancellationToken,
    /// Live sessions and the durable store behind them.
    pub sessions: Arc<SessionManager>,
    /// Per-session file indexes and the lock upload commits take.
    pub files: FileLocks,
    /// Chunked uploads being staged.
    pub uploads: UploadManager,
    /// The gateway: whether it runs, its logins (SPEC §20).
    pub gateway: Gateway,
    /// What `status` answers that never changes, encoded at its first call.
    pub status_text: OnceLock<FixedText>,
    /// Schedules (SPEC §24.1), kept in the sessions' store.
    pub schedules: Arc<zeroclaw_schedules::Schedules>,
    /// Notifications (SPEC §24.3), once started.
    pub notifier: OnceLock<Arc<zeroclaw_notify::Notifier>>,
    /// Webhook deliveries: rates and the idempotency record (SPEC §23.1).
    pub webhooks: zeroclaw_webhooks::Webhooks,
}

impl Daemon {
    /// What the files service's commit step reads and locks.
    pub fn file_stores(&self) -> Stores<'_> {
        Stores {
            sessions: &self.sessions,
            config: &self.config,
            tokens: &self.tokens,
            locks: &self.files,
        }
    }

    /// The caller's principal under the current policy (refused once the credential it
    /// presented is revoked).
    pub fn principal(&self, presented: &Presented) -> Result<Principal, AuthError> {
        self.principal_under(&self.config.current(), presented)
    }

    /// The caller's principal under a configuration the caller holds unchanged.
    pub fn principal_under(
        &self,
        config: &Config,
        presented: &Presented,
    ) -> Result<Principal, AuthError> {
        auth::principal(config, self.bearers(), self.uid, presented)
    }

    /// Where bearer tokens are looked up.
    pub fn bearers(&self) -> Bearers<'_> {
        Bearers {
            tokens: &self.tokens,
            logins: &self.gateway.logins,
        }
    }

    pub fn begin_shutdown(&self, reason: &str) {
        if !self.shutdown.is_cancelled() {
            tracing::info!("shutting down ({reason})");
            self.shutdown.cancel();
        }
    }
}

/// The daemon's effective uid.
#[allow(unsafe_code)]
pub fn current_uid() -> u32 {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() }
    }
    #[cfg(not(unix))]
    {
        0
    }
}
