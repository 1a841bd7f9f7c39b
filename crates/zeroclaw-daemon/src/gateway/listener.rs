//! The gateway's TCP listener (SPEC §10, §20): binds `[wss]` (TLS via rustls when a
//! certificate is configured, mandatory off loopback) or takes a loopback socket bound by
//! `gateway/start`, and accepts connections until the daemon stops. Each accepted
//! connection takes a slot of `[limits] unauthenticated_ws` (none left: closed at once),
//! finishes TLS within 10 s of the accept, and is handed to the HTTP loop
//! ([`super::conn`]).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use zeroclaw_config::Wss;

use super::conn;
use super::host::HostNames;
use super::peer::{Peer, Settings};
use super::tls::tls_acceptor;
use crate::connection::INITIALIZE_WITHIN;
use crate::server::{AcceptBackoff, wait_for_connections};
use crate::state::Daemon;

/// A bound gateway listener, ready to serve.
pub struct GatewayListener {
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    /// The listener's own address.
    pub addr: SocketAddr,
}

impl GatewayListener {
    /// Binds `[wss]`; refuses a non-loopback address without TLS.
    pub async fn bind(wss: &Wss) -> Result<GatewayListener, String> {
        let tls = match (wss.cert_path.is_empty(), wss.key_path.is_empty()) {
            (true, true) => None,
            (false, false) => Some(tls_acceptor(&wss.cert_path, &wss.key_path)?),
            _ => return Err("wss: cert_path and key_path must be set together".into()),
        };
        if tls.is_none() && !wss.is_loopback() {
            return Err(format!(
                "wss: refusing to serve {} without TLS: set wss.cert_path and wss.key_path, or bind a loopback address",
                wss.bind
            ));
        }
        let addr = format!("{}:{}", wss.bind, wss.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("wss: cannot listen on {addr}: {e}"))?;
        Self::ready(listener, tls).map_err(|e| format!("wss: {addr}: {e}"))
    }

    /// A listener bound already (`gateway/start`: loopback, no TLS).
    pub fn from_std(listener: std::net::TcpListener) -> std::io::Result<GatewayListener> {
        listener.set_nonblocking(true)?;
        Self::ready(TcpListener::from_std(listener)?, None)
    }

    fn ready(listener: TcpListener, tls: Option<TlsAcceptor>) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (ws, http) = match tls {
            Some(_) => ("wss", "https"),
            None => ("ws", "http"),
        };
        tracing::info!("websocket listening on {ws}://{addr}/ (dashboard: {http}://{addr}/)");
        Ok(GatewayListener {
            listener,
            tls,
            addr,
        })
    }

    /// The page's URL: `http://ADDR` (`https` with TLS), without a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }
}

/// Accepts gateway connections until shutdown; returns once they have all ended (or the
/// shutdown bound has passed).
pub async fn serve(daemon: Arc<Daemon>, gateway: GatewayListener) {
    let GatewayListener {
        listener,
        tls,
        addr,
    } = gateway;
    let config = daemon.config.current();
    let settings = Arc::new(Settings {
        allowed_origins: config.wss.allowed_origins.clone(),
        tls: tls.is_some(),
        hosts: HostNames::new(addr, tls.is_some(), &config.gateway.hostnames),
    });
    drop(config);
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = daemon.shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (tcp, addr) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                backoff.wait(&e).await;
                continue;
            }
        };
        backoff.reset();
        let accepted_at = Instant::now();
        let limits = daemon.config.current().limits.clone();
        let Some(admission) = daemon.connections.admit_unauthenticated(
            limits.unauthenticated_ws as usize,
            limits.connections_total as usize,
        ) else {
            // Too many peers that have not authenticated: hang up at once.
            tracing::debug!(peer = %addr, "refused: unauthenticated_ws limit");
            drop(tcp);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let daemon = Arc::clone(&daemon);
        let tls = tls.clone();
        let settings = Arc::clone(&settings);
        let peer = Peer {
            addr,
            admission,
            accepted_at,
        };
        connections.spawn(async move {
            let deadline = accepted_at + INITIALIZE_WITHIN;
            match tls {
                Some(tls) => match tokio::time::timeout_at(deadline, tls.accept(tcp)).await {
                    Ok(Ok(stream)) => conn::serve(daemon, stream, peer, settings).await,
                    Ok(Err(e)) => tracing::info!(peer = %addr, "tls handshake failed: {e}"),
                    Err(_) => tracing::info!(peer = %addr, "tls handshake timed out"),
                },
                None => conn::serve(daemon, tcp, peer, settings).await,
            }
        });
    }
    drop(listener);
    wait_for_connections(&mut connections).await;
}
