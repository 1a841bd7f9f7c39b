//! The `zeroclaw` binary: parses the command line and hands over to the daemon or the
//! client commands. No logic of its own lives here.

#![forbid(unsafe_code)]

mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

/// Threads that run the daemon's (and a client command's) async tasks.
const ASYNC_WORKERS: usize = 1;

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
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    // One async worker unless TOKIO_WORKER_THREADS says otherwise: nothing blocks it (the
    // store, file reads, config writes and checkpoints have threads of their own), a call
    // costs it a few microseconds, and a second worker on a small machine mostly takes
    // cores from the daemon's own clients and moves shared state between caches
    // (docs/BENCHMARKS.md, fan-out).
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(ASYNC_WORKERS);
    }
    let runtime = match runtime.enable_all().build() {
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
