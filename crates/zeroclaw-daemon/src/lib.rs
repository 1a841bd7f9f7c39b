//! The zeroclaw daemon: binds the local endpoint, loads the configuration, and serves
//! JSON-RPC connections until it is told to stop (SPEC §2–§5, §9, §11).
//!
//! Layers, outside in, each importing only those below it: transports (`server`, `ws`,
//! `transport`, `outbound`, `gateway`: bytes ↔ frames) → the connection loop
//! (`connection`: envelope rules, handshake gate, queues, order) → `dispatch` (one match on
//! [`zeroclaw_protocol::Method`], grants via `auth`) → handlers (`methods`: typed params
//! in, typed results out) → the services, in their own crate (`zeroclaw-sessions`:
//! sessions, files, [`pairing`] tokens, dashboard logins; and the config store) → store,
//! agent, config, ipc, rpc. The per-connection state the handlers see is `caller`, below
//! all of them; services see a principal, the answer to a credential check the daemon
//! makes, a `session::link::ClientLink` (implemented in `client_link`) and a callback that
//! admits the request's ordering ticket, never the loop's types. Only [`run`],
//! [`DaemonOptions`] and [`pairing`] are public (the `zeroclaw` binary's needs).
//!
//! Every service error becomes a JSON-RPC error in one place, `wire_error`.
//!
//! Unsafe code is denied but for libc calls std does not wrap, each `#[allow]`ed where it
//! is made: `geteuid` (the daemon's own uid, which the policy trusts) and
//! `getrlimit`/`setrlimit` (raising the open-files limit at start), on Unix; `mallopt`
//! (glibc's mmap threshold and arena count, `malloc_tuning`), on Linux with glibc;
//! `prctl(PR_SET_CHILD_SUBREAPER)`, `waitid` and `waitpid` (the reaper of adopted
//! orphans, `reaper`), on Linux.

#![deny(unsafe_code)]

mod answering;
mod auth;
mod caller;
mod client_link;
mod connection;
mod dispatch;
mod gateway;
mod gateway_control;
#[cfg(feature = "test-hooks")]
pub mod harness;
mod lineage;
mod login_rate;
mod malloc_tuning;
pub use malloc_tuning::limit_malloc_arenas;
mod methods;
mod notify_glue;
mod ordering;
mod outbound;
mod params;
#[cfg(target_os = "linux")]
mod procfs;
mod read_gate;
#[cfg(target_os = "linux")]
mod reaper;
mod registry;
mod request;
mod resting;
mod scheduling;
mod server;
mod state;
mod status_text;
#[cfg(feature = "test-hooks")]
mod test_hooks;
mod transport;
mod unattended;
mod wire_error;
mod ws;

/// The pairing-token store (`zeroclaw pair`, `zeroclaw unpair`), from the services crate.
pub use zeroclaw_sessions::pairing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use zeroclaw_config::ConfigStore;
use zeroclaw_ipc::{BindOptions, Dirs, LocalListener};
use zeroclaw_sessions::files;
use zeroclaw_sessions::session::file_checkpoints::FileCheckpoints;
use zeroclaw_sessions::session::{SessionManager, Tuning};
use zeroclaw_store::{RPC_SURFACE, Store};

use crate::registry::ConnectionRegistry;
use crate::state::Daemon;

/// How the daemon was asked to run.
#[derive(Debug, Clone, Default)]
pub struct DaemonOptions {
    pub config_dir: Option<PathBuf>,
    pub ephemeral: bool,
}

/// The whole stop, from the signal to the exit, stays within this (SPEC §17: 10 s).
const SHUTDOWN_BUDGET: Duration = Duration::from_secs(9);

/// Opens `<data dir>/zeroclaw.db`, recovers turns a previous run left open (before any
/// client is served), and creates the session manager.
async fn open_sessions(dirs: &Dirs) -> Result<Arc<SessionManager>, StartupError> {
    // The socket may live elsewhere (`ZEROCLAW_SOCKET`): make sure the data dir exists.
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dirs.data_dir)
        .map_err(|e| StartupError(format!("cannot create {}: {e}", dirs.data_dir.display())))?;
    // Long answers are kept on disk beside the store, not in memory (issue 27).
    zeroclaw_agent::text::set_spill_dir(&dirs.data_dir.join("spill"));
    let path = dirs.data_dir.join("zeroclaw.db");
    let store = Store::open(&path)
        .await
        .map_err(|e| StartupError(format!("cannot open {}: {e}", path.display())))?;
    let recovered = store
        .recover_all_interrupted(RPC_SURFACE)
        .await
        .map_err(|e| StartupError(format!("cannot recover {}: {e}", path.display())))?;
    if !recovered.is_empty() {
        tracing::info!(sessions = recovered.len(), "recovered interrupted turns");
    }
    // Completes any file restore a crash interrupted (SPEC §18) before a client is served.
    let checkpoints = dirs.data_dir.join("checkpoints");
    let files = tokio::task::spawn_blocking(move || FileCheckpoints::open(&checkpoints))
        .await
        .map_err(|e| StartupError(format!("cannot open the file checkpoints: {e}")))?;
    Ok(SessionManager::new(
        store,
        files,
        dirs.config_dir.clone(),
        Tuning::default(),
    ))
}

/// A startup failure, with a message fit for the terminal.
#[derive(Debug)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

fn startup<E: std::fmt::Display>(e: E) -> StartupError {
    StartupError(e.to_string())
}

/// Runs the daemon to completion. Must be called inside a multi-threaded tokio runtime.
pub async fn run(options: DaemonOptions) -> Result<(), StartupError> {
    let started = Instant::now();
    // Before anything is started: the orphans of every program the daemon starts are its
    // own, and local peers among them are refused (SPEC §17.2).
    #[cfg(target_os = "linux")]
    reaper::become_subreaper();
    raise_open_files_limit();
    malloc_tuning::fix_mmap_threshold();
    let signals = server::StopSignals::install()
        .map_err(|e| StartupError(format!("cannot install signal handlers: {e}")))?;
    let dirs = Dirs::resolve(options.config_dir.as_deref()).map_err(startup)?;
    let endpoint = zeroclaw_ipc::endpoint_path(&dirs).map_err(startup)?;
    // The configuration is in place before the socket appears, so the first client already
    // finds it on disk (opening it writes the defaults only when the file is missing).
    let config = ConfigStore::open(&dirs.config_file()).map_err(startup)?;
    let listener = LocalListener::bind_with(&endpoint, BindOptions::for_endpoint(&dirs, &endpoint))
        .map_err(startup)?;
    // Leftovers of interrupted writes, swept only once this daemon holds the endpoint.
    zeroclaw_config::sweep_config_temp_files(config.config_dir());
    files::workspace::sweep_partial_uploads(&config.current(), &dirs.config_dir);
    let sessions = open_sessions(&dirs).await?;
    let (schedules, catch_up) = scheduling::open(&sessions).await.map_err(StartupError)?;
    // No program a session starts may read or write these (SPEC §17.2 "No way back in").
    zeroclaw_agent::sandbox::set_daemon_private(vec![
        dirs.config_file(),
        dirs.data_dir.clone(),
        endpoint.clone(),
        {
            let mut lock = endpoint.clone().into_os_string();
            lock.push(".lock");
            PathBuf::from(lock)
        },
    ]);
    let wss = config.current().wss.clone();
    let ws = match wss.enabled {
        true => Some(
            gateway::listener::GatewayListener::bind(&wss)
                .await
                .map_err(StartupError)?,
        ),
        false => None,
    };
    tracing::info!(endpoint = %endpoint.display(), config = %dirs.config_file().display(), "serving");

    let tokens = pairing::TokenStore::new(&dirs.data_dir);
    let stall_timeout = outbound::DEFAULT_STALL_TIMEOUT;
    #[cfg(feature = "test-hooks")]
    let stall_timeout = test_hooks::stall_timeout_from_env().unwrap_or(stall_timeout);
    let code_ttl = zeroclaw_sessions::logins::CODE_TTL;
    #[cfg(feature = "test-hooks")]
    let code_ttl = test_hooks::login_code_ttl_from_env().unwrap_or(code_ttl);
    let sessions_store = sessions.store.clone();
    let daemon = Arc::new(Daemon {
        dirs,
        endpoint,
        config,
        started,
        pid: std::process::id(),
        uid: state::current_uid(),
        connections: ConnectionRegistry::new(),
        tokens,
        stall_timeout,
        shutdown: CancellationToken::new(),
        sessions,
        files: files::commit::FileLocks::default(),
        uploads: files::UploadManager::default(),
        gateway: gateway_control::Gateway::with_logins(
            zeroclaw_sessions::logins::Logins::with_code_ttl(code_ttl),
        ),
        status_text: Default::default(),
        schedules,
        notifier: Default::default(),
        webhooks: zeroclaw_webhooks::Webhooks::new(sessions_store),
    });
    install_gateway_starter(&daemon);
    // Schedules fire (SPEC §24.1), the runs caught up after downtime first.
    scheduling::start(&daemon, catch_up);
    // Idle sessions rest (SPEC §22).
    resting::start(&daemon);
    // Notifications watch the sessions from here on (SPEC §24.3).
    notify_glue::start(&daemon);
    tokio::spawn(signals.watch(Arc::clone(&daemon)));
    #[cfg(target_os = "linux")]
    let reaping = tokio::spawn(reaper::run(daemon.shutdown.clone()));
    #[cfg(feature = "test-hooks")]
    test_hooks::start(&daemon);
    let stopping = {
        // Stopping: cancel running turns at once so their prompts are answered (cancelled)
        // while connections are still flushing.
        let daemon = Arc::clone(&daemon);
        tokio::spawn(async move {
            daemon.shutdown.cancelled().await;
            let since = Instant::now();
            daemon.sessions.cancel_all();
            since
        })
    };
    if options.ephemeral {
        tokio::spawn(server::watch_ephemeral(Arc::clone(&daemon)));
    }
    if let Some(ws) = ws {
        let url = ws.base_url();
        let task = tokio::spawn(gateway::listener::serve(Arc::clone(&daemon), ws));
        daemon.gateway.started(gateway_url(&url), task);
    }
    server::serve_local(Arc::clone(&daemon), listener).await;
    if let Some(task) = daemon.gateway.take_task() {
        let _ = task.await;
    }
    daemon.sessions.cancel_all();
    let since = stopping.await.unwrap_or_else(|_| Instant::now());
    let left = SHUTDOWN_BUDGET.saturating_sub(since.elapsed());
    daemon.sessions.wait_idle(left).await;
    #[cfg(target_os = "linux")]
    let _ = reaping.await;
    tracing::info!("stopped");
    Ok(())
}

/// Lets `gateway/start` serve a loopback listener it bound (SPEC §20).
fn install_gateway_starter(daemon: &Arc<Daemon>) {
    let weak = Arc::downgrade(daemon);
    daemon.gateway.set_starter(Box::new(move |listener| {
        let daemon = weak
            .upgrade()
            .ok_or_else(|| "the daemon is stopping".to_string())?;
        let listener = gateway::listener::GatewayListener::from_std(listener)
            .map_err(|e| format!("gateway: {e}"))?;
        let url = listener.base_url();
        Ok((
            url,
            tokio::spawn(gateway::listener::serve(daemon, listener)),
        ))
    }));
}

/// The URL a browser on this host opens: an unspecified bind address (`0.0.0.0`, `::`)
/// is reached at the loopback address.
fn gateway_url(url: &str) -> String {
    url.replace("://0.0.0.0:", "://127.0.0.1:")
        .replace("://[::]:", "://[::1]:")
}

/// Raises the open-files soft limit to the hard limit (SPEC §17), so a flood of
/// connections meets the connection limits before the descriptor limit.
#[allow(unsafe_code)]
fn raise_open_files_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return;
            }
            if limit.rlim_cur < limit.rlim_max {
                let wanted = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
                    tracing::debug!("cannot raise the open-files limit");
                }
            }
        }
    }
}
