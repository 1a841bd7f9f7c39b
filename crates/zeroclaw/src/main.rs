//! The `zeroclaw` binary: parses the command line and hands over to the daemon or the
//! client commands. No logic of its own lives here.

#![forbid(unsafe_code)]

mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

/// Threads that run the daemon's (and a client command's) async tasks, unless
/// [`WORKERS_VARIABLE`] says otherwise: nothing blocks them (the store, file reads, config
/// writes and checkpoints have threads of their own), a call costs a few microseconds, and
/// a second worker on a small machine mostly takes a core from the daemon's own clients
/// (docs/BENCHMARKS.md, fan-out).
const ASYNC_WORKERS: usize = 1;
/// Tokio's own name for the setting, kept so that what its documentation says holds.
const WORKERS_VARIABLE: &str = "TOKIO_WORKER_THREADS";

/// The number of async workers; `None` when the variable is set to anything but a number
/// of 1 or more (which tokio would answer with a panic).
fn async_workers() -> Option<usize> {
    match std::env::var_os(WORKERS_VARIABLE) {
        None => Some(ASYNC_WORKERS),
        Some(value) => value.to_str()?.trim().parse().ok().filter(|n| *n > 0),
    }
}

fn main() -> ExitCode {
    // Before any thread exists: the daemon's long turns keep less memory in one arena.
    zeroclaw_daemon::limit_malloc_arenas();
    // The daemon's plain command line skips the full grammar (see cli::daemon_args).
    let invocation = match cli::recognize_daemon(std::env::args_os().skip(1)) {
        Some(options) => Invocation::Daemon(options),
        None => Invocation::Client(Box::new(cli::Cli::parse())),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let Some(workers) = async_workers() else {
        eprintln!("error: {WORKERS_VARIABLE} must be a whole number of 1 or more");
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match invocation {
            Invocation::Daemon(options) => cli::run_daemon(options).await,
            Invocation::Client(args) => cli::run(*args).await,
        }
    });
    // Blocking work still running (a stuck file read, say) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.exit)
        }
    }
}

/// What the command line asks for.
enum Invocation {
    Daemon(zeroclaw_daemon::DaemonOptions),
    Client(Box<cli::Cli>),
}
