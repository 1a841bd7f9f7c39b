//! `zeroclaw-load sessions-bench`: streamed turns, prompt → first chunk over a fake OpenAI
//! provider, chunked uploads and staged-upload memory, each against a daemon it starts in
//! a temporary config dir; prints Markdown tables with the targets.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zeroclaw_testkit::FakeOpenAi;

use crate::args::SessionsBenchArgs;
use crate::error::Result;
use crate::sys::{self, ChildGuard};
use crate::turns::{self, FirstChunkReport, median};

const START_TIMEOUT: Duration = Duration::from_secs(10);
const SETTLE: Duration = Duration::from_millis(500);

/// A daemon started in its own temporary config dir.
pub(crate) struct Daemon {
    pub(crate) child: ChildGuard,
    pub(crate) socket: PathBuf,
    _dir: tempfile::TempDir,
}

/// A fake OpenAI server on its own runtime thread (so the client's clock does not wait
/// for the server's work); stopped when dropped.
pub(crate) struct FakeProvider {
    fake: Option<FakeOpenAi>,
    rt: Option<tokio::runtime::Runtime>,
}

impl FakeProvider {
    pub(crate) fn start() -> Result<FakeProvider> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let fake = rt.block_on(FakeOpenAi::start())?;
        Ok(FakeProvider {
            fake: Some(fake),
            rt: Some(rt),
        })
    }

    pub(crate) fn fake(&self) -> &FakeOpenAi {
        self.fake.as_ref().expect("present until dropped")
    }

    /// A daemon config whose agent `default` streams from this server, with a key as a
    /// user's provider has one (the stream is then wrapped to mask it in errors: a step
    /// more per event).
    pub(crate) fn config(&self) -> String {
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\n\
             api_key = \"sk-load-test-key\"\n\n\
             [agents.default]\nprovider = \"fake\"\ntools = []\n",
            self.fake().base_url()
        )
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        drop(self.fake.take());
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Starts `bin daemon --config-dir <temp>` with `config` (none = the default config the
/// daemon writes itself) and waits until its socket accepts a connection.
pub(crate) fn start_daemon(bin: &Path, config: Option<&str>) -> Result<Daemon> {
    let dir = tempfile::Builder::new().prefix("zcturns").tempdir()?;
    if let Some(config) = config {
        std::fs::write(dir.path().join("config.toml"), config)?;
    }
    let socket = dir.path().join("data").join("daemon.sock");
    let log = dir.path().join("daemon.log");
    let config_dir = dir
        .path()
        .to_str()
        .ok_or("temporary dir is not UTF-8")?
        .to_owned();
    let mut child = ChildGuard::spawn(
        "zeroclaw daemon",
        bin,
        &["daemon", "--config-dir", &config_dir],
        &log,
    )?;
    let began = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        child.check_alive()?;
        if began.elapsed() > START_TIMEOUT {
            return Err(format!("daemon did not accept within {START_TIMEOUT:?}").into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(Daemon {
        child,
        socket,
        _dir: dir,
    })
}

fn pass(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

fn list(values: impl IntoIterator<Item = String>) -> String {
    values.into_iter().collect::<Vec<_>>().join(", ")
}

pub fn run(args: &SessionsBenchArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    eprintln!("sessions-bench: daemon {}", args.bin.display());
    let busy_before = sys::cpu_busy(Duration::from_secs(1));

    // 1. Streaming from the echo provider (the default config's agent).
    let mut echo = start_daemon(&args.bin, None)?;
    let mut streams = Vec::with_capacity(args.stream_rounds);
    for round in 1..=args.stream_rounds {
        let r = rt.block_on(turns::stream(&echo.socket, "default", args.words))?;
        eprintln!("sessions-bench: stream round {round}: {r}");
        streams.push(r);
    }
    echo.child.check_alive()?;

    // 2. Uploads on the same daemon, each with its in-process baseline.
    let uploads = rt.block_on(turns::uploads(
        &echo.socket,
        "default",
        args.upload_bytes,
        args.upload_rounds,
    ))?;
    for (i, (u, b)) in uploads.iter().enumerate() {
        eprintln!(
            "sessions-bench: upload round {}: {u}; baseline decode+hash {:.1} ms",
            i + 1,
            b.as_secs_f64() * 1e3
        );
    }
    echo.child.check_alive()?;
    echo.child.stop(Duration::from_secs(5));

    // 3. Staged-upload memory on a fresh daemon.
    let mut fresh = start_daemon(&args.bin, None)?;
    let staged = rt.block_on(turns::staged(
        &fresh.socket,
        fresh.child.pid(),
        "default",
        args.staged_uploads,
        args.staged_bytes,
        SETTLE,
    ))?;
    eprintln!("sessions-bench: {staged}");
    fresh.child.check_alive()?;
    fresh.child.stop(Duration::from_secs(5));

    // 4. Prompt → first chunk through a fake OpenAI provider.
    let provider = FakeProvider::start()?;
    let mut daemon = start_daemon(&args.bin, Some(&provider.config()))?;
    let first: FirstChunkReport = rt.block_on(turns::first_chunk(
        &daemon.socket,
        provider.fake().addr(),
        "default",
        args.iterations,
        args.warmup,
    ))?;
    eprintln!("sessions-bench: first chunk: {first}");
    daemon.child.check_alive()?;
    daemon.child.stop(Duration::from_secs(5));
    drop(provider);

    let busy_after = sys::cpu_busy(Duration::from_secs(1));

    // The tables.
    let rate = median(&streams.iter().map(|s| s.rate()).collect::<Vec<_>>());
    let mibs = median(&streams.iter().map(|s| s.mib_per_sec()).collect::<Vec<_>>());
    let turn = median(
        &streams
            .iter()
            .map(|s| s.turn.as_secs_f64())
            .collect::<Vec<_>>(),
    );
    let turn_rate = median(&streams.iter().map(|s| s.turn_rate()).collect::<Vec<_>>());
    let first_echo = median(
        &streams
            .iter()
            .map(|s| s.first_chunk.as_secs_f64() * 1e3)
            .collect::<Vec<_>>(),
    );
    let s0 = &streams[0];
    println!("### Streaming (`echo` provider, one client)\n");
    println!("| measure | result |\n|---|---:|");
    println!(
        "| prompt | {} words, {:.2} MiB; {} chunks, {:.2} MiB of `session/update` lines |",
        args.words,
        s0.prompt_bytes as f64 / 1048576.0,
        s0.chunks,
        s0.chunk_line_bytes as f64 / 1048576.0
    );
    println!("| notifications/s while streaming (first → last chunk) | {rate:.0} /s |");
    println!("| bytes/s while streaming | {mibs:.1} MiB/s |");
    println!(
        "| whole turn (prompt sent → answer) | {turn:.3} s ({turn_rate:.0} notifications/s) |"
    );
    println!("| prompt sent → first chunk | {first_echo:.1} ms |");
    println!();

    let p = FirstChunkReport::p;
    let added50 = p(&first.daemon, 50.0) - p(&first.direct, 50.0);
    let added90 = p(&first.daemon, 90.0) - p(&first.direct, 90.0);
    println!(
        "### Prompt → first chunk over a fake OpenAI provider ({} iterations)\n",
        first.iterations
    );
    println!("| measure | p50 | p90 | target | result |\n|---|---:|---:|---|---|");
    println!(
        "| provider's first content delta, direct HTTP client (connect → delta) | {:.3} ms | {:.3} ms | — | — |",
        p(&first.direct, 50.0),
        p(&first.direct, 90.0)
    );
    println!(
        "| daemon: `session/prompt` sent → first `agent_message_chunk` | {:.3} ms | {:.3} ms | — | — |",
        p(&first.daemon, 50.0),
        p(&first.daemon, 90.0)
    );
    println!(
        "| added by the daemon (difference of the percentiles) | {added50:.3} ms | {added90:.3} ms | < 2 ms | {} |",
        pass(added50 < 2.0 && added90 < 2.0)
    );
    println!(
        "| added by the daemon (per-iteration difference, its percentiles) | {:.3} ms | {:.3} ms | < 2 ms | {} |",
        p(&first.paired, 50.0),
        p(&first.paired, 90.0),
        pass(p(&first.paired, 50.0) < 2.0 && p(&first.paired, 90.0) < 2.0)
    );
    println!(
        "| whole turn through the daemon (prompt → answer, info) | {:.3} ms | {:.3} ms | — | — |",
        p(&first.turn, 50.0),
        p(&first.turn, 90.0)
    );
    println!();

    let size_mib = args.upload_bytes as f64 / 1048576.0;
    let up = median(
        &uploads
            .iter()
            .map(|(u, _)| u.mib_per_sec())
            .collect::<Vec<_>>(),
    );
    let base = median(
        &uploads
            .iter()
            .map(|(_, b)| size_mib / b.as_secs_f64())
            .collect::<Vec<_>>(),
    );
    let ratio = up / base;
    println!(
        "### Chunked upload of {size_mib:.0} MiB ({} rounds)\n",
        uploads.len()
    );
    println!("| measure | result | target | result |\n|---|---:|---|---|");
    println!(
        "| end-to-end payload throughput (begin → commit answered) | {up:.0} MiB/s | ≥ 150 MiB/s | {} |",
        pass(up >= 150.0)
    );
    println!(
        "| baseline: base64-decode + SHA-256 in process, same bytes | {base:.0} MiB/s | — | — |"
    );
    println!(
        "| upload vs baseline | {:.0}% | ≥ 50% | {} |",
        ratio * 100.0,
        pass(ratio >= 0.5)
    );
    println!(
        "| memory per staged upload ({} × {:.0} MiB received, uncommitted) | {:.0} KiB ({:.3}× payload) | — | — |",
        staged.uploads,
        staged.size as f64 / 1048576.0,
        staged.per_upload_kib(),
        staged.per_upload_kib() * 1024.0 / staged.size as f64
    );
    println!(
        "| memory per begun upload (nothing sent yet) | {:.1} KiB | — | — |",
        staged.begun_per_upload_kib()
    );
    println!();
    println!("Details:");
    let busy = |b: Option<f64>| b.map_or("unknown".to_string(), |b| format!("{b:.0}%"));
    println!(
        "- other activity on the machine (all CPUs busy, 1 s sample while the bench idles): {} before the run, {} after",
        busy(busy_before),
        busy(busy_after)
    );
    println!(
        "- streaming per round: notifications/s [{}], MiB/s [{}], turn s [{}]",
        list(streams.iter().map(|s| format!("{:.0}", s.rate()))),
        list(streams.iter().map(|s| format!("{:.1}", s.mib_per_sec()))),
        list(
            streams
                .iter()
                .map(|s| format!("{:.3}", s.turn.as_secs_f64()))
        )
    );
    println!(
        "- first chunk: direct p99 {:.3} ms, daemon p99 {:.3} ms, min {:.3} / {:.3} ms",
        p(&first.direct, 99.0),
        p(&first.daemon, 99.0),
        first.direct.first().copied().unwrap_or(0.0),
        first.daemon.first().copied().unwrap_or(0.0)
    );
    for (i, (u, b)) in uploads.iter().enumerate() {
        println!(
            "- upload round {}: {u}; baseline {:.1} ms = {:.0} MiB/s",
            i + 1,
            b.as_secs_f64() * 1e3,
            size_mib / b.as_secs_f64()
        );
    }
    println!("- staged: {staged}");
    Ok(())
}
