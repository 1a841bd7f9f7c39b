//! Whether the gateway runs, and its URL (SPEC §20): started with the daemon by
//! `[wss] enabled = true`, or later by `gateway/start`, which binds 127.0.0.1 on the
//! configured `wss.port` (a free port when that one is taken) until the daemon stops,
//! without touching the configuration. Also holds what the gateway's logins share: the
//! login codes and dashboard sessions ([`Logins`]) and the failed-login counts
//! ([`FailedLogins`]).
//!
//! This module sits below the listener: the listener is started through a [`Starter`]
//! that the daemon installs once it is built.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Mutex, OnceLock};

use tokio::task::JoinHandle;
use zeroclaw_sessions::logins::Logins;

use crate::login_rate::FailedLogins;

/// Starts serving a bound loopback listener: its base URL and its task.
pub type Starter =
    Box<dyn Fn(TcpListener) -> Result<(String, JoinHandle<()>), String> + Send + Sync>;

struct Running {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    url: String,
    task: Option<JoinHandle<()>>,
}

/// The gateway's state in the daemon.
#[derive(Default)]
pub struct Gateway {
    running: Mutex<Option<Running>>,
    starter: OnceLock<Starter>,
    pub logins: Logins,
    pub failures: FailedLogins,
}

impl Gateway {
    /// A gateway whose login codes live `logins`' lifetime.
    pub fn with_logins(logins: Logins) -> Gateway {
        Gateway {
            logins,
            ..Gateway::default()
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Installs how `gateway/start` serves a listener (once).
    pub fn set_starter(&self, starter: Starter) {
        let _ = self.starter.set(starter);
    }

    /// Records the gateway `[wss]` started with the daemon.
    pub fn started(&self, url: String, task: JoinHandle<()>) {
        *self.running() = Some(Running {
            url,
            task: Some(task),
        });
    }

    /// The running gateway's base URL (`http://127.0.0.1:PORT`), if one runs.
    pub fn url(&self) -> Option<String> {
        self.running().as_ref().map(|r| r.url.clone())
    }

    /// Starts the gateway on 127.0.0.1:`port` (a free port when that one is taken), unless
    /// one runs already; either way, its base URL.
    pub fn start(&self, port: u16) -> Result<String, String> {
        let mut running = self.running();
        if let Some(r) = running.as_ref() {
            return Ok(r.url.clone());
        }
        let starter = self
            .starter
            .get()
            .ok_or_else(|| "the gateway cannot start: the daemon is not serving yet".to_string())?;
        let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = match TcpListener::bind(loopback) {
            Ok(listener) => listener,
            Err(e) if port != 0 => {
                tracing::info!("gateway: port {port} is taken ({e}); using a free port");
                TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                    .map_err(|e| format!("gateway: cannot listen on 127.0.0.1: {e}"))?
            }
            Err(e) => return Err(format!("gateway: cannot listen on 127.0.0.1: {e}")),
        };
        let (url, task) = starter(listener)?;
        *running = Some(Running {
            url: url.clone(),
            task: Some(task),
        });
        Ok(url)
    }

    /// The serving task, for the daemon to wait for as it stops.
    pub fn take_task(&self) -> Option<JoinHandle<()>> {
        self.running().as_mut().and_then(|r| r.task.take())
    }
}
