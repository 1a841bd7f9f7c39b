//! Accept loops: takes connections from every transport, admits them against the
//! connection limits (refusing with one -32013 line), logs the audit line, and hands each to
//! the connection loop; an accept that fails backs off instead of spinning, and a stopping
//! listener waits for its connections only so long. Also owns the signal handlers and the
//! ephemeral-exit watcher.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinSet;
use tokio::time::Instant;
use zeroclaw_ipc::{LocalConnection, LocalListener};
use zeroclaw_rpc::message::error_line;

use crate::connection;
use crate::lineage::{self, Lineage};
use crate::state::Daemon;
use crate::transport::{PeerIdentity, StreamSink, StreamSource, TransportKind};

/// How long ephemeral mode waits after the last client leaves.
pub const EPHEMERAL_GRACE: Duration = Duration::from_secs(1);

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// A fresh connection id for logs.
pub fn next_connection_id() -> u64 {
    NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed)
}

/// How long a stopping daemon lets its connections flush and close before dropping them
/// (SPEC §17: the whole stop takes at most 10 s).
pub const CONNECTIONS_ON_SHUTDOWN: Duration = Duration::from_secs(6);

/// Accepts local connections until shutdown; returns once every connection has ended (or
/// the shutdown bound has passed).
pub async fn serve_local(daemon: Arc<Daemon>, listener: LocalListener) {
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = daemon.shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        match accepted {
            Ok(conn) => {
                backoff.reset();
                connections.spawn(admit_local(Arc::clone(&daemon), conn, Instant::now()));
            }
            Err(e) => backoff.wait(&e).await,
        }
    }
    drop(listener);
    wait_for_connections(&mut connections).await;
}

/// Waits for the connections of a stopping listener, at most [`CONNECTIONS_ON_SHUTDOWN`];
/// the ones still open then are dropped.
pub async fn wait_for_connections(connections: &mut JoinSet<()>) {
    let all_ended = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(CONNECTIONS_ON_SHUTDOWN, all_ended)
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "connections did not close in time; dropping them"
        );
        connections.abort_all();
    }
}

/// The pause after a failed accept (out of file descriptors and the like): it grows while
/// accepts keep failing, so the loop never spins, and resets on the next success.
#[derive(Default)]
pub struct AcceptBackoff {
    failures: u32,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    pub async fn wait(&mut self, error: &std::io::Error) {
        let pause = Self::FIRST
            .saturating_mul(1 << self.failures.min(7))
            .min(Self::MAX);
        if self.failures == 0 {
            tracing::warn!("accept failed: {error}; backing off");
        }
        self.failures = self.failures.saturating_add(1);
        tokio::time::sleep(pause).await;
    }

    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

async fn admit_local(daemon: Arc<Daemon>, conn: LocalConnection, accepted: Instant) {
    let LocalConnection {
        reader,
        mut writer,
        peer,
        write_now,
    } = conn;
    let id = next_connection_id();
    let key = match peer.uid {
        Some(uid) => format!("uid:{uid}"),
        // Every pipe client is the daemon's own user (SPEC §2): one principal, one key.
        None if cfg!(windows) => "pipe".to_string(),
        None => peer.label.clone(),
    };
    let limits = daemon.config.current().limits.clone();
    let admission = match daemon.connections.admit(
        Some(key.as_str()),
        limits.connections_per_principal as usize,
        limits.connections_total as usize,
    ) {
        Ok(admission) => admission,
        Err(error) => {
            tracing::warn!(peer = %peer.label, "refused: {}", error.message);
            let line = error_line(&Value::Null, &error);
            let _ = tokio::time::timeout(Duration::from_secs(1), writer.write_all(&line)).await;
            let _ = writer.shutdown().await;
            return;
        }
    };
    // SPEC §17.2: a program the daemon started (or one of its descendants) is no operator.
    let lineage = lineage::vet(peer.pid, daemon.pid);
    match lineage {
        Lineage::Outside => {
            tracing::info!(conn = id, peer = %peer.label, "accepted connection");
        }
        Lineage::SessionProgram => tracing::warn!(
            conn = id,
            peer = %peer.label,
            "accepted connection from a program the daemon started: every call is refused"
        ),
        Lineage::Unvetted(why) => tracing::warn!(
            conn = id,
            peer = %peer.label,
            "accepted connection that cannot be vetted ({why}): every call is refused"
        ),
    }
    let identity = PeerIdentity {
        label: peer.label,
        uid: peer.uid,
        kind: TransportKind::Local,
        ip: None,
        lineage,
    };
    let source = StreamSource::new(reader);
    let sink = StreamSink::with_write_now(writer, write_now);
    connection::serve(daemon, id, identity, admission, accepted, source, sink).await;
}

/// Ephemeral mode: stop about [`EPHEMERAL_GRACE`] after the last client leaves; a client
/// arriving within the grace cancels it. Never stops before a first client has come.
pub async fn watch_ephemeral(daemon: Arc<Daemon>) {
    let mut open = daemon.connections.watch();
    // Wait for the first client.
    if open.wait_for(|n| *n > 0).await.is_err() {
        return;
    }
    loop {
        if open.wait_for(|n| *n == 0).await.is_err() {
            return;
        }
        let returned = tokio::time::timeout(EPHEMERAL_GRACE, open.wait_for(|n| *n > 0)).await;
        match returned {
            Ok(Ok(_)) => continue,
            Ok(Err(_)) => return,
            Err(_) => {
                daemon.begin_shutdown("ephemeral: last client left");
                return;
            }
        }
    }
}

/// The stop signals, registered before the socket exists so that a SIGTERM sent as soon as
/// clients can connect is never met by the default (abrupt) action.
pub struct StopSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(StopSignals {})
        }
    }

    /// Stops the daemon on SIGINT or SIGTERM (Ctrl-C on Windows).
    #[cfg_attr(not(unix), allow(unused_mut))]
    pub async fn watch(mut self, daemon: Arc<Daemon>) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => daemon.begin_shutdown("SIGTERM"),
            _ = self.int.recv() => daemon.begin_shutdown("SIGINT"),
            () = daemon.shutdown.cancelled() => {}
        }
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => daemon.begin_shutdown("Ctrl-C"),
            () = daemon.shutdown.cancelled() => {}
        }
    }
}
