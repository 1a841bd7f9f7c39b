//! `zeroclaw-load`: a load tool that speaks zeroclaw's protocol (NDJSON JSON-RPC 2.0 over a
//! Unix socket), with a minimal NDJSON echo server as the same-run baseline.
//!
//! Modes: `latency` (sequential round trips), `pipelined` (a window of requests in flight on
//! one connection), `connections` (many concurrent connections), `idle` (daemon memory per
//! held connection), `echo-server`, and `bench` (all of them, echo vs daemon, in one run).
//! Session and upload modes: `stream` (notifications/s of a long streamed turn), `upload`
//! (chunked upload throughput vs an in-process baseline), and `sessions-bench` (those, plus
//! prompt → first chunk over a fake OpenAI provider and staged-upload memory), and
//! `subscribers` (daemon memory under silent subscribers: issue 21, finding 5).
//! The client side runs on one thread, so on a small machine it leaves the other cores to
//! the server under test.
//!
//! It is Unix-only (Unix sockets, rlimits, CPU pinning); on other platforms the binary
//! builds but only says so.
//!
//! Unsafe code is denied but for the libc calls of `sys.rs`, each `#[allow]`ed where it is
//! made: clock ticks (`sysconf`), the open-files limit, signalling the daemon under test,
//! and CPU affinity (`sched_setaffinity`/`sched_getaffinity`).

#![deny(unsafe_code)]
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

mod args;
#[cfg(unix)]
mod bench;
#[cfg(unix)]
mod client;
#[cfg(unix)]
mod echo;
mod error;
#[cfg(unix)]
mod fanout;
#[cfg(unix)]
mod raw_watch;
#[cfg(unix)]
mod subscribers;
#[cfg(unix)]
mod sys;
#[cfg(unix)]
mod turns;
#[cfg(unix)]
mod turns_bench;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use args::{BenchArgs, SessionsBenchArgs};
use error::Result;

#[derive(Parser)]
#[command(name = "zeroclaw-load", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Minimal NDJSON JSON-RPC server: answers every request with a padded empty-ish result.
    EchoServer {
        #[arg(long)]
        socket: PathBuf,
        /// Approximate size of each answer line, in bytes (a daemon `status` answer is ~250).
        #[arg(long, default_value_t = 250)]
        reply_bytes: usize,
    },
    /// One connection, N sequential calls: p50/p90/p99/mean round trip.
    Latency {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value_t = 10_000)]
        calls: usize,
        /// Unmeasured calls first.
        #[arg(long, default_value_t = 1_000)]
        warmup: usize,
        #[arg(long, default_value = "status")]
        method: String,
    },
    /// One connection keeping W requests in flight: calls/s.
    Pipelined {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value_t = 100_000)]
        calls: usize,
        #[arg(long, default_value_t = 32)]
        window: usize,
        #[arg(long, default_value = "status")]
        method: String,
    },
    /// C concurrent connections × N sequential calls each: total calls/s.
    Connections {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value_t = 64)]
        conns: usize,
        #[arg(long, default_value_t = 1_000)]
        calls: usize,
        #[arg(long, default_value = "status")]
        method: String,
    },
    /// Opens and holds N initialized connections; the server's VmRSS delta per connection.
    Idle {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value_t = 1_000)]
        conns: usize,
        /// The server's pid (for /proc/PID/status).
        #[arg(long)]
        pid: u32,
        /// Pause before each RSS reading, in milliseconds.
        #[arg(long, default_value_t = 500)]
        settle_ms: u64,
    },
    /// Everything, echo baseline vs daemon, in one run; prints a Markdown table.
    Bench(BenchArgs),
    /// One long prompt streamed back by an `echo` agent: notifications/s and bytes/s.
    Stream {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value = "default")]
        agent: String,
        /// Words in the prompt (each comes back as one `agent_message_chunk`).
        #[arg(long, default_value_t = 100_000)]
        words: usize,
    },
    /// One long streamed turn watched by 1, 4, 16 … subscribers: per-subscriber
    /// notifications/s, prompt → first chunk, daemon RSS growth.
    Fanout {
        /// A running daemon whose `agent` echoes a prompt of `words` words.
        #[arg(long, required_unless_present = "bin")]
        socket: Option<PathBuf>,
        #[arg(long, default_value = "default")]
        agent: String,
        #[arg(long, default_value_t = 100_000)]
        words: usize,
        /// Instead of `--socket`: start this zeroclaw binary with an agent on the fake
        /// OpenAI server, which streams each reply as `chunks` one-word deltas.
        #[arg(long, conflicts_with = "socket")]
        bin: Option<PathBuf>,
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// Subscriber counts to measure, one turn each.
        #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
        subscribers: Vec<usize>,
        /// With `--bin`: measure every count this many times, interleaved, and summarize
        /// each count's per-subscriber rate against the first count's of the same round.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Every turn in one session (each turn after the first replaces the finished turn
        /// in its replay buffer) instead of a new session per turn.
        #[arg(long)]
        same_session: bool,
    },
    /// Chunked uploads (`file/upload/*`) through the socket vs an in-process
    /// base64-decode + SHA-256 baseline of the same bytes.
    Upload {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value = "default")]
        agent: String,
        #[arg(long, default_value_t = 10 * 1024 * 1024)]
        bytes: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// Streaming, prompt → first chunk over a fake OpenAI provider, uploads and staged
    /// upload memory, each against a daemon started for it; prints Markdown tables.
    SessionsBench(SessionsBenchArgs),
    /// Issue 21 finding 5: C connections of the calling principal subscribe K times each,
    /// with a replay, to sessions holding a large echoed turn, and read nothing; the
    /// daemon's RSS before, at peak, and after the connections are dropped.
    Subscribers {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, default_value = "default")]
        agent: String,
        #[arg(long, default_value_t = 32)]
        connections: usize,
        #[arg(long, default_value_t = 4)]
        subscriptions: usize,
        /// Sessions to spread the connections over (16 non-admin subscribers each at most).
        #[arg(long, default_value_t = 2)]
        sessions: usize,
        /// Bytes of the echoed prompt (its turn buffers ~1.1x that, up to 8 MiB).
        #[arg(long, default_value_t = 6_500_000)]
        prompt_bytes: usize,
        /// How long the silent connections are held (RSS sampled every 50 ms).
        #[arg(long, default_value_t = 20)]
        hold_secs: u64,
        /// Pause after the connections are gone before the last RSS reading.
        #[arg(long, default_value_t = 5)]
        settle_secs: u64,
    },
}

#[cfg(not(unix))]
fn run(_cli: Cli) -> Result<()> {
    Err("zeroclaw-load runs on Unix only".into())
}

#[cfg(unix)]
fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::EchoServer {
            socket,
            reply_bytes,
        } => {
            sys::raise_nofile(65_536);
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(echo::serve(&socket, reply_bytes))
        }
        Command::Latency {
            socket,
            calls,
            warmup,
            method,
        } => {
            let report = sys::client_runtime()?
                .block_on(client::latency(&socket, &method, calls, warmup))?;
            println!("latency {method}: {report}");
            Ok(())
        }
        Command::Pipelined {
            socket,
            calls,
            window,
            method,
        } => {
            let report = sys::client_runtime()?
                .block_on(client::pipelined(&socket, &method, calls, window))?;
            println!("pipelined {method} (window {window}): {report}");
            Ok(())
        }
        Command::Connections {
            socket,
            conns,
            calls,
            method,
        } => {
            sys::raise_nofile(conns as u64 + 64);
            let report = sys::client_runtime()?
                .block_on(client::connections(&socket, &method, conns, calls))?;
            println!("connections {conns}×{calls} {method}: {report}");
            Ok(())
        }
        Command::Idle {
            socket,
            conns,
            pid,
            settle_ms,
        } => {
            let settle = Duration::from_millis(settle_ms);
            let report =
                sys::client_runtime()?.block_on(client::idle(&socket, conns, pid, settle))?;
            println!("idle: {report}");
            Ok(())
        }
        Command::Bench(args) => bench::run(&args),
        Command::Stream {
            socket,
            agent,
            words,
        } => {
            let report = sys::client_runtime()?.block_on(turns::stream(&socket, &agent, words))?;
            println!("stream: {report}");
            Ok(())
        }
        Command::Fanout {
            socket,
            agent,
            words,
            bin,
            chunks,
            subscribers,
            rounds,
            same_session,
        } => {
            if let Some(bin) = bin {
                return fanout::run_scripted(&bin, chunks, &subscribers, rounds, same_session);
            }
            let socket = socket.ok_or("--socket or --bin is required")?;
            let rt = sys::client_runtime()?;
            let prompt = turns::long_prompt(words);
            for n in subscribers {
                let report =
                    rt.block_on(fanout::fanout(&socket, &agent, &prompt, n, None, &mut None))?;
                println!("fanout: {report}");
            }
            Ok(())
        }
        Command::Upload {
            socket,
            agent,
            bytes,
            rounds,
        } => {
            let runs =
                sys::client_runtime()?.block_on(turns::uploads(&socket, &agent, bytes, rounds))?;
            for (report, baseline) in runs {
                println!(
                    "upload: {report}; baseline decode+hash {:.1} ms = {:.0} MiB/s",
                    baseline.as_secs_f64() * 1e3,
                    bytes as f64 / 1048576.0 / baseline.as_secs_f64()
                );
            }
            Ok(())
        }
        Command::SessionsBench(args) => turns_bench::run(&args),
        Command::Subscribers {
            socket,
            agent,
            connections,
            subscriptions,
            sessions,
            prompt_bytes,
            hold_secs,
            settle_secs,
        } => {
            let report = subscribers::run(&subscribers::Options {
                socket: &socket,
                agent: &agent,
                connections,
                subscriptions,
                sessions: sessions.max(1),
                prompt_bytes,
                hold: Duration::from_secs(hold_secs),
                settle: Duration::from_secs(settle_secs),
            })?;
            println!("subscribers: {report}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zeroclaw-load: {e}");
            ExitCode::FAILURE
        }
    }
}
