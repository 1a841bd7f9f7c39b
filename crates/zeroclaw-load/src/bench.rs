//! `zeroclaw-load bench`: the echo baseline and the daemon measured side by side in one run,
//! on this machine, against the targets; prints a Markdown table.
//!
//! Everything runs under a temporary directory (Unix sockets, the daemon's config dir), is
//! bounded in count and time, and every child process is stopped at the end, also on error.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::args::{BenchArgs, Pin};
use crate::client::{self, IdleReport, LatencyReport, ThroughputReport};
use crate::error::Result;
use crate::sys::{self, ChildGuard};

/// How long a server may take to start before the run fails.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the socket is polled while a server starts.
const POLL: Duration = Duration::from_millis(1);
/// Pause before reading an idle RSS, so the server settles.
const SETTLE: Duration = Duration::from_millis(500);

/// The kinds of server measured.
#[derive(Clone, Copy)]
enum Kind {
    Echo,
    Daemon,
}

struct Setup {
    dir: tempfile::TempDir,
    load_bin: PathBuf,
    daemon_bin: PathBuf,
    reply_bytes: usize,
}

impl Setup {
    fn daemon_socket(&self) -> PathBuf {
        self.dir.path().join("data").join("daemon.sock")
    }

    fn echo_socket(&self) -> PathBuf {
        self.dir.path().join("echo.sock")
    }

    fn socket(&self, kind: Kind) -> PathBuf {
        match kind {
            Kind::Echo => self.echo_socket(),
            Kind::Daemon => self.daemon_socket(),
        }
    }

    /// Spawns a server (not waiting for it).
    fn spawn(&self, kind: Kind) -> Result<ChildGuard> {
        let log = self.dir.path().join("servers.log");
        match kind {
            Kind::Echo => {
                let socket = self.echo_socket();
                let reply = self.reply_bytes.to_string();
                ChildGuard::spawn(
                    "echo server",
                    &self.load_bin,
                    &[
                        "echo-server",
                        "--socket",
                        path_str(&socket)?,
                        "--reply-bytes",
                        &reply,
                    ],
                    &log,
                )
            }
            Kind::Daemon => ChildGuard::spawn(
                "zeroclaw daemon",
                &self.daemon_bin,
                &["daemon", "--config-dir", path_str(self.dir.path())?],
                &log,
            ),
        }
    }

    /// Spawns a server and waits until its socket accepts a connection.
    fn start(&self, kind: Kind) -> Result<(ChildGuard, Startup)> {
        let socket = self.socket(kind);
        let began = Instant::now();
        let mut child = self.spawn(kind)?;
        let accepting = loop {
            if let Ok(stream) = UnixStream::connect(&socket) {
                break (began.elapsed(), stream);
            }
            child.check_alive()?;
            if began.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "{} did not accept on {} within {START_TIMEOUT:?}",
                    child.name,
                    socket.display()
                )
                .into());
            }
            std::thread::sleep(POLL);
        };
        let (accept, stream) = accepting;
        initialize_sync(stream)?;
        let initialized = began.elapsed();
        Ok((
            child,
            Startup {
                accept,
                initialized,
            },
        ))
    }
}

/// Time from spawn to the socket accepting, and to the first `initialize` answered.
#[derive(Clone, Copy)]
struct Startup {
    accept: Duration,
    initialized: Duration,
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .ok_or_else(|| format!("path {} is not UTF-8", path.display()).into())
}

/// Sends `initialize` on a blocking stream and waits for its answer.
fn initialize_sync(mut stream: UnixStream) -> Result<()> {
    stream.set_read_timeout(Some(START_TIMEOUT))?;
    stream.write_all(client::initialize_line().as_bytes())?;
    stream.write_all(b"\n")?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    if !line.contains("\"result\"") {
        return Err(format!("initialize failed: {}", line.trim_end()).into());
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return 0.0;
    }
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `kind` `starts` times; returns the startups (each server stopped after).
fn startups(setup: &Setup, kind: Kind, starts: usize) -> Result<Vec<Startup>> {
    let mut all = Vec::with_capacity(starts);
    for _ in 0..starts {
        let (mut child, startup) = setup.start(kind)?;
        child.stop(Duration::from_secs(5));
        all.push(startup);
    }
    Ok(all)
}

/// Per-round measurements of one server.
#[derive(Default)]
struct Rounds {
    latency: Vec<LatencyReport>,
    pipelined: Vec<ThroughputReport>,
    conns: Vec<ThroughputReport>,
}

impl Rounds {
    fn p50(&self) -> f64 {
        median(&mut self.latency.iter().map(|r| r.p50_us).collect::<Vec<_>>())
    }
    fn p99(&self) -> f64 {
        median(&mut self.latency.iter().map(|r| r.p99_us).collect::<Vec<_>>())
    }
    fn mean(&self) -> f64 {
        median(&mut self.latency.iter().map(|r| r.mean_us).collect::<Vec<_>>())
    }
    fn pipelined(&self) -> f64 {
        median(
            &mut self
                .pipelined
                .iter()
                .map(|r| r.calls_per_sec)
                .collect::<Vec<_>>(),
        )
    }
    fn conns(&self) -> f64 {
        median(
            &mut self
                .conns
                .iter()
                .map(|r| r.calls_per_sec)
                .collect::<Vec<_>>(),
        )
    }
}

/// Reads VmRSS after letting the process settle.
fn settled_rss(pid: u32) -> Result<u64> {
    std::thread::sleep(SETTLE);
    sys::vm_rss_kib(pid)
}

/// Waits until `path` exists (the daemon has bound its socket) without connecting.
fn wait_for_path(path: &Path, child: &mut ChildGuard) -> Result<()> {
    let began = Instant::now();
    while !path.exists() {
        child.check_alive()?;
        if began.elapsed() > START_TIMEOUT {
            return Err(format!("{} never appeared", path.display()).into());
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// Pins the client (this thread) and the servers as `pin` asks; describes the placement.
fn place(pin: Pin, servers: &[u32]) -> Result<String> {
    let cpus = sys::allowed_cpus();
    let (server_cpu, client_cpu) = match (pin, cpus.as_slice()) {
        (Pin::None, _) => return Ok(format!("none (scheduler decides among CPUs {cpus:?})")),
        (Pin::Shared, [first, ..]) => (*first, *first),
        (Pin::Split, [first, second, ..]) => (*first, *second),
        _ => return Err(format!("--pin {pin:?} needs more CPUs than {cpus:?}").into()),
    };
    sys::pin_self(&[client_cpu])?;
    for &pid in servers {
        sys::pin_process(pid, &[server_cpu])?;
    }
    let name = format!("{pin:?}").to_lowercase();
    Ok(format!(
        "{name}: servers (all threads) on CPU {server_cpu}, client on CPU {client_cpu}"
    ))
}

fn pass(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let nofile = sys::raise_nofile(args.idle_conns as u64 * 2 + 256);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = tempfile::Builder::new().prefix("zcload").tempdir()?;
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[limits]\nconnections_per_principal = {}\nconnections_total = {}\n",
            args.idle_conns * 2,
            args.idle_conns * 4
        ),
    )?;
    let mut setup = Setup {
        dir,
        load_bin: std::env::current_exe()?,
        daemon_bin: args.bin.clone(),
        reply_bytes: 0,
    };
    let method = args.method.as_str();
    eprintln!(
        "bench: daemon {} | work dir {} | open-files soft limit {nofile}",
        args.bin.display(),
        setup.dir.path().display()
    );

    let busy_before = sys::cpu_busy(Duration::from_secs(1));

    // 1. Startup: spawn → socket accepting, median of N starts each.
    eprintln!("bench: {} daemon starts", args.starts);
    let daemon_starts = startups(&setup, Kind::Daemon, args.starts)?;

    // 2. Idle daemon RSS: after start (no connection yet) and after one connection closed;
    //    that connection also tells us how big a status answer is, for the echo replies.
    eprintln!("bench: idle daemon RSS");
    let mut daemon = setup.spawn(Kind::Daemon)?;
    let daemon_pid = daemon.pid();
    wait_for_path(&setup.daemon_socket(), &mut daemon)?;
    let rss_fresh = settled_rss(daemon_pid)?;
    let reply_bytes = rt.block_on(async {
        let mut conn = client::Conn::open(&setup.daemon_socket()).await?;
        conn.call(method).await
    })?;
    let rss_one_conn = settled_rss(daemon_pid)?;
    setup.reply_bytes = reply_bytes + 1;

    eprintln!("bench: {} echo server starts", args.starts);
    let echo_starts = startups(&setup, Kind::Echo, args.starts)?;
    let (mut echo, _) = setup.start(Kind::Echo)?;
    let echo_pid = echo.pid();
    let echo_rss_fresh = settled_rss(echo_pid)?;

    // 3. Load, interleaved echo / daemon, `rounds` times, with the CPU placement asked for.
    let placement = place(args.pin, &[echo_pid, daemon_pid])?;
    let mut echo_rounds = Rounds::default();
    let mut daemon_rounds = Rounds::default();
    for round in 1..=args.rounds {
        for (kind, rounds, child) in [
            (Kind::Echo, &mut echo_rounds, &mut echo),
            (Kind::Daemon, &mut daemon_rounds, &mut daemon),
        ] {
            let socket = setup.socket(kind);
            let name = child.name.clone();
            let l = rt.block_on(client::latency(
                &socket,
                method,
                args.latency_calls,
                args.warmup,
            ))?;
            eprintln!("bench: round {round} {name} latency: {l}");
            rounds.latency.push(l);
            let p = rt.block_on(client::pipelined(
                &socket,
                method,
                args.pipelined_calls,
                args.window,
            ))?;
            eprintln!("bench: round {round} {name} pipelined: {p}");
            rounds.pipelined.push(p);
            let c = rt.block_on(client::connections(
                &socket,
                method,
                args.conns,
                args.conn_calls,
            ))?;
            eprintln!("bench: round {round} {name} connections: {c}");
            rounds.conns.push(c);
            child.check_alive()?;
        }
    }
    let rss_after_load = sys::vm_rss_kib(daemon_pid)?;
    daemon.stop(Duration::from_secs(5));
    echo.stop(Duration::from_secs(5));

    // 4. Idle connections, each against a fresh server.
    eprintln!("bench: {} idle connections", args.idle_conns);
    let idle = |kind: Kind| -> Result<IdleReport> {
        let (mut child, _) = setup.start(kind)?;
        let report = rt.block_on(client::idle(
            &setup.socket(kind),
            args.idle_conns,
            child.pid(),
            SETTLE,
        ))?;
        child.check_alive()?;
        child.stop(Duration::from_secs(5));
        eprintln!("bench: {} {report}", child.name);
        Ok(report)
    };
    let echo_idle = idle(Kind::Echo)?;
    let daemon_idle = idle(Kind::Daemon)?;

    let busy_after = sys::cpu_busy(Duration::from_secs(1));

    // 5. The table.
    let e_p50 = echo_rounds.p50();
    let d_p50 = daemon_rounds.p50();
    let lat_ratio = d_p50 / e_p50;
    let e_pipe = echo_rounds.pipelined();
    let d_pipe = daemon_rounds.pipelined();
    let pipe_ratio = d_pipe / e_pipe;
    let e_conns = echo_rounds.conns();
    let d_conns = daemon_rounds.conns();
    let conns_ratio = d_conns / e_conns;
    let d_start = median(
        &mut daemon_starts
            .iter()
            .map(|s| ms(s.accept))
            .collect::<Vec<_>>(),
    );
    let d_start_init = median(
        &mut daemon_starts
            .iter()
            .map(|s| ms(s.initialized))
            .collect::<Vec<_>>(),
    );
    let e_start = median(&mut echo_starts.iter().map(|s| ms(s.accept)).collect::<Vec<_>>());
    let mib = |kib: u64| kib as f64 / 1024.0;

    println!(
        "| measure | echo baseline | zeroclaw | daemon vs echo | target | result |\n\
         |---|---:|---:|---:|---|---|"
    );
    println!(
        "| `{method}` round-trip p50, 1 connection, sequential | {e_p50:.1} µs | {d_p50:.1} µs | {lat_ratio:.2}× | ≤ 1.5× echo | {} |",
        pass(lat_ratio <= 1.5)
    );
    println!(
        "| `{method}` round-trip p99 / mean (info) | {:.1} / {:.1} µs | {:.1} / {:.1} µs | {:.2}× / {:.2}× | — | — |",
        echo_rounds.p99(),
        echo_rounds.mean(),
        daemon_rounds.p99(),
        daemon_rounds.mean(),
        daemon_rounds.p99() / echo_rounds.p99(),
        daemon_rounds.mean() / echo_rounds.mean()
    );
    println!(
        "| pipelined throughput, 1 connection, window {} | {e_pipe:.0} calls/s | {d_pipe:.0} calls/s | {:.0}% | ≥ 60% of echo | {} |",
        args.window,
        pipe_ratio * 100.0,
        pass(pipe_ratio >= 0.6)
    );
    println!(
        "| {} connections × {} sequential calls | {e_conns:.0} calls/s | {d_conns:.0} calls/s | {:.0}% | ≥ 60% of echo | {} |",
        args.conns,
        args.conn_calls,
        conns_ratio * 100.0,
        pass(conns_ratio >= 0.6)
    );
    println!(
        "| memory per idle connection ({} held) | {:.1} KiB | {:.1} KiB | — | ≤ 32 KiB | {} |",
        args.idle_conns,
        echo_idle.per_conn_kib,
        daemon_idle.per_conn_kib,
        pass(daemon_idle.per_conn_kib <= 32.0)
    );
    println!(
        "| idle RSS after start, no connection yet | {:.1} MiB | {:.1} MiB | — | ≤ 10 MiB | {} |",
        mib(echo_rss_fresh),
        mib(rss_fresh),
        pass(mib(rss_fresh) <= 10.0)
    );
    println!(
        "| idle RSS after one connection closed | — | {:.1} MiB | — | ≤ 10 MiB | {} |",
        mib(rss_one_conn),
        pass(mib(rss_one_conn) <= 10.0)
    );
    println!(
        "| socket accepting after spawn (median of {}) | {e_start:.1} ms | {d_start:.1} ms | — | ≤ 50 ms | {} |",
        args.starts,
        pass(d_start <= 50.0)
    );
    println!(
        "| first `initialize` answered after spawn (info) | — | {d_start_init:.1} ms | — | — | — |"
    );
    println!();
    println!("Details:");
    println!("- CPU placement: {placement}");
    let busy = |b: Option<f64>| b.map_or("unknown".to_string(), |b| format!("{b:.0}%"));
    println!(
        "- other activity on the machine (all CPUs busy, 1 s sample while the bench idles): \
         {} before the run, {} after",
        busy(busy_before),
        busy(busy_after)
    );
    println!(
        "- {} rounds, echo and daemon interleaved; each figure is the median over rounds. \
         Latency: {} measured calls after {} warm-up calls. Pipelined: {} calls. \
         Echo replies padded to {} bytes (the daemon's `{method}` answer).",
        args.rounds, args.latency_calls, args.warmup, args.pipelined_calls, setup.reply_bytes
    );
    for (name, rounds) in [("echo", &echo_rounds), ("zeroclaw", &daemon_rounds)] {
        let lat: Vec<String> = rounds
            .latency
            .iter()
            .map(|r| format!("{:.1}", r.p50_us))
            .collect();
        let pipe: Vec<String> = rounds
            .pipelined
            .iter()
            .map(|r| format!("{:.0}", r.calls_per_sec))
            .collect();
        let conns: Vec<String> = rounds
            .conns
            .iter()
            .map(|r| format!("{:.0}", r.calls_per_sec))
            .collect();
        println!(
            "- {name} per round: p50 µs [{}], pipelined calls/s [{}], {}×{} calls/s [{}]",
            lat.join(", "),
            pipe.join(", "),
            args.conns,
            args.conn_calls,
            conns.join(", ")
        );
    }
    let starts: Vec<String> = daemon_starts
        .iter()
        .map(|s| format!("{:.1}/{:.1}", ms(s.accept), ms(s.initialized)))
        .collect();
    println!(
        "- daemon starts, accepting/initialized ms: [{}]",
        starts.join(", ")
    );
    println!(
        "- daemon RSS: {:.1} MiB fresh, {:.1} MiB after one connection, {:.1} MiB after the load rounds",
        mib(rss_fresh),
        mib(rss_one_conn),
        mib(rss_after_load)
    );
    println!("- idle connections, echo: {echo_idle}");
    println!("- idle connections, zeroclaw: {daemon_idle}");
    Ok(())
}
