//! An in-process daemon for tests (feature `test-hooks`): the real connection loop,
//! sessions, files and store on a given config dir, served over in-memory streams
//! (`tokio::io::duplex`) instead of a socket. No listener, no signal handlers, no
//! environment overrides: the timeouts are the real ones, so tests drive them with tokio's
//! paused clock (`tokio::time::pause`/`advance`) and take milliseconds.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::DuplexStream;
use tokio_util::sync::CancellationToken;
use zeroclaw_config::ConfigStore;
use zeroclaw_ipc::Dirs;
use zeroclaw_rpc::ErrorObject;
use zeroclaw_sessions::{files, pairing};

use crate::registry::ConnectionRegistry;
use crate::state::{self, Daemon};
use crate::transport::{PeerIdentity, StreamSink, StreamSource, TransportKind};
use crate::{StartupError, connection, outbound, server, startup};

/// One daemon's state, without its transports.
pub struct Harness {
    daemon: Arc<Daemon>,
}

impl Harness {
    /// Opens the configuration (written with its defaults when missing) and the store of
    /// `config_dir`, as the daemon does at startup.
    pub async fn open(config_dir: &Path) -> Result<Harness, StartupError> {
        let dirs = Dirs::from_config_dir(config_dir).map_err(startup)?;
        let config = ConfigStore::open(&dirs.config_file()).map_err(startup)?;
        let sessions = crate::open_sessions(&dirs).await?;
        let (schedules, _) = crate::scheduling::open(&sessions)
            .await
            .map_err(crate::StartupError)?;
        let tokens = pairing::TokenStore::new(&dirs.data_dir);
        let sessions_store = sessions.store.clone();
        let daemon = Arc::new(Daemon {
            endpoint: dirs.config_dir.join("harness.sock"),
            dirs,
            config,
            started: Instant::now(),
            pid: std::process::id(),
            uid: state::current_uid(),
            connections: ConnectionRegistry::new(),
            tokens,
            stall_timeout: outbound::DEFAULT_STALL_TIMEOUT,
            shutdown: CancellationToken::new(),
            sessions,
            files: files::commit::FileLocks::default(),
            uploads: files::UploadManager::default(),
            gateway: crate::gateway_control::Gateway::default(),
            status_text: Default::default(),
            schedules,
            notifier: Default::default(),
            webhooks: zeroclaw_webhooks::Webhooks::new(sessions_store),
        });
        Ok(Harness { daemon })
    }

    /// A new local connection from the daemon's own uid (the operator), served by the
    /// connection loop; returns the client's end of a pipe of `buffer` bytes each way, or
    /// the -32013 error when the connection limits refuse it.
    pub fn connect(&self, buffer: usize) -> Result<DuplexStream, ErrorObject> {
        let daemon = &self.daemon;
        let limits = daemon.config.current().limits.clone();
        let key = format!("uid:{}", daemon.uid);
        let admission = daemon.connections.admit(
            Some(&key),
            limits.connections_per_principal as usize,
            limits.connections_total as usize,
        )?;
        let (client, server_end) = tokio::io::duplex(buffer);
        let (reader, writer) = tokio::io::split(server_end);
        let peer = PeerIdentity {
            label: "harness".to_string(),
            uid: Some(daemon.uid),
            kind: TransportKind::Local,
            ip: None,
            lineage: crate::lineage::Lineage::Outside,
        };
        tokio::spawn(connection::serve(
            Arc::clone(daemon),
            server::next_connection_id(),
            peer,
            admission,
            tokio::time::Instant::now(),
            StreamSource::new(reader),
            StreamSink::new(writer),
        ));
        Ok(client)
    }

    /// Connections open right now.
    pub fn open_connections(&self) -> usize {
        self.daemon.connections.open_count()
    }

    /// Waits until exactly `n` connections are open.
    pub async fn wait_open(&self, n: usize) {
        let mut open = self.daemon.connections.watch();
        let _ = open.wait_for(|count| *count == n).await;
    }

    /// Waits until the daemon begins to stop.
    pub async fn stopped(&self) {
        self.daemon.shutdown.cancelled().await;
    }

    /// Starts the ephemeral-mode watcher (`zeroclaw daemon --ephemeral`).
    pub fn watch_ephemeral(&self) {
        tokio::spawn(server::watch_ephemeral(Arc::clone(&self.daemon)));
    }

    /// Whether the daemon has begun to stop.
    pub fn is_stopping(&self) -> bool {
        self.daemon.shutdown.is_cancelled()
    }

    /// Stops the daemon: connections close, running turns are cancelled.
    pub fn shutdown(&self) {
        self.daemon.begin_shutdown("harness");
        self.daemon.sessions.cancel_all();
    }
}
