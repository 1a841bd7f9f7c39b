//! `fanout`: one long streamed turn watched by N subscribers (SPEC §14). Each subscriber
//! reads its stream raw on a thread of its own ([`crate::raw_watch`]); reported per
//! subscriber: notifications/s while streaming and prompt → first chunk, how far the
//! slowest one fell behind (chunks the provider had sent that it had not read yet, sampled
//! every 10 ms: with `--bin`, where the provider is this tool's fake), plus the daemon's
//! peak RSS growth during the turn (VmHWM, reset before the turn through
//! `/proc/PID/clear_refs`; sampled VmRSS where that is not allowed) and that peak itself,
//! the largest replay buffer `session/status` reported while it ran (`replayBytes`, capped
//! at 8 MiB per session), the daemon's CPU time per delivered
//! notification (what fan-out costs the daemon, apart from the client's reading) and the
//! client's own CPU time per notification (what the bench takes from a shared machine).
//! The turn is either the echo of a long prompt on a running daemon (`--socket`, echo's
//! chunks are up to 4 KiB) or, with `--bin --chunks N`, a reply scripted as N one-word
//! deltas by the fake OpenAI server to a daemon started for the run.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use zeroclaw_protocol::Method;

use serde_json::{Value, json};
use zeroclaw_testkit::{FakeOpenAi, Scripted};

use crate::error::Result;
use crate::raw_watch::{Progress, RawConn, Seen};
use crate::sys;
use crate::turns::{RpcConn, median};
use crate::turns_bench::{FakeProvider, start_daemon};

pub struct FanoutReport {
    pub subscribers: usize,
    pub chunks: usize,
    /// Per-subscriber notifications/s, ascending.
    pub rates: Vec<f64>,
    /// Per-subscriber prompt → first chunk, ms, ascending.
    pub first_ms: Vec<f64>,
    pub rss_growth_kib: u64,
    /// The daemon's resident set at the turn's peak: growth is measured from what earlier
    /// turns left, this is comparable across builds whatever they left.
    pub rss_peak_kib: u64,
    /// Whether `rss_growth_kib` is the kernel's peak (VmHWM) or the largest sample.
    pub rss_from_hwm: bool,
    /// The largest growth of the anonymous and of the file-backed resident set among the
    /// samples (every 10 ms, so a lower bound): memory the turn allocated, and pages of
    /// the binary it ran for the first time.
    pub anon_growth_kib: u64,
    pub file_growth_kib: u64,
    /// The most chunks any subscriber was behind the provider (`None`: no provider to
    /// compare with; then behind the subscriber furthest ahead).
    pub max_lag: Option<usize>,
    /// The most chunks any subscriber was behind the one furthest ahead.
    pub max_spread: usize,
    /// Largest `replayBytes` that `session/status` reported during the turn.
    pub replay_peak_bytes: u64,
    /// Daemon CPU time spent on the turn, per delivered notification (all subscribers).
    pub daemon_cpu_per_delivery: Duration,
    /// This client's CPU time for the turn, per notification read (all subscribers).
    pub client_cpu_per_delivery: Duration,
}

impl std::fmt::Display for FanoutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
        let first = |v: &[f64]| v.first().copied().unwrap_or(0.0);
        write!(
            f,
            "{:>2} subscribers, {} chunks each: notifications/s per subscriber min {:.0} median {:.0}; first chunk median {:.2} ms max {:.2} ms; slowest subscriber behind the provider by at most {} chunks, behind the fastest by {}; daemon RSS +{:.1} MiB at peak, {:.1} MiB in all ({}; sampled: anonymous +{:.1}, file-backed +{:.1}); replay buffer peak {:.2} MiB (cap 8); daemon CPU {:.2} µs per delivered notification; client CPU {:.2} µs per notification read",
            self.subscribers,
            self.chunks,
            first(&self.rates),
            median(&self.rates),
            median(&self.first_ms),
            last(&self.first_ms),
            self.max_lag
                .map_or_else(|| "?".to_owned(), |l| l.to_string()),
            self.max_spread,
            self.rss_growth_kib as f64 / 1024.0,
            self.rss_peak_kib as f64 / 1024.0,
            if self.rss_from_hwm {
                "VmHWM"
            } else {
                "sampled VmRSS"
            },
            self.anon_growth_kib as f64 / 1024.0,
            self.file_growth_kib as f64 / 1024.0,
            self.replay_peak_bytes as f64 / (1024.0 * 1024.0),
            self.daemon_cpu_per_delivery.as_secs_f64() * 1e6,
            self.client_cpu_per_delivery.as_secs_f64() * 1e6
        )
    }
}

/// One turn answering `prompt` on `agent`, watched by `subscribers` connections (the
/// prompting one included); `provider`, when the turn streams from this tool's fake, is
/// what the subscribers' lag is measured against. The turn runs in `session`, or in a
/// new session then kept there.
pub async fn fanout(
    socket: &Path,
    agent: &str,
    prompt: &str,
    subscribers: usize,
    provider: Option<&FakeOpenAi>,
    session: &mut Option<String>,
) -> Result<FanoutReport> {
    let prompt = serde_json::to_string(&json!({
        "jsonrpc": "2.0",
        "method": Method::SessionPrompt.name(),
        "params": {"sessionId": "SESSION", "prompt": prompt},
        "id": 1,
    }))?;
    // Session set-up on a control connection kept open for the turn.
    let mut control = RpcConn::open(socket).await?;
    let session = match session {
        Some(id) => id.clone(),
        None => session.insert(control.new_session(agent).await?).clone(),
    };
    let pid = control
        .call(Method::Status.name(), json!({}))
        .await?
        .get("serverPid")
        .and_then(Value::as_u64)
        .ok_or("status without serverPid")? as u32;
    let prompt = prompt.replacen("SESSION", &session, 1);
    let subscribe = serde_json::to_string(&json!({
        "jsonrpc": "2.0",
        "method": Method::SessionSubscribe.name(),
        "params": {"sessionId": session},
        "id": 1,
    }))?;
    let mut prompter = RawConn::open(socket).await?;
    let mut others = Vec::new();
    for _ in 1..subscribers.max(1) {
        let mut conn = RawConn::open(socket).await?;
        conn.send(&subscribe).await?;
        conn.answers(1).await?;
        others.push(conn);
    }
    let me = std::process::id();
    // The kernel's peak from here on, if it lets us reset it; samples of VmRSS otherwise.
    let rss_from_hwm = sys::reset_peak_rss(pid).is_ok();
    let rss_before = sys::vm_rss_kib(pid)?;
    let parts_before = sys::rss_parts_kib(pid)?;
    let mut parts_peak = parts_before;
    let cpu_before = sys::cpu_time(pid)?;
    let client_before = sys::cpu_time(me)?;
    let sent_before = provider.map(FakeOpenAi::text_chunks_sent);
    let start = Instant::now();
    prompter.send(&prompt).await?;
    let mut watchers = Vec::new();
    let mut progress: Vec<Progress> = Vec::new();
    for (conn, answers) in std::iter::once((prompter, 1)).chain(others.into_iter().map(|c| (c, 0)))
    {
        let read = Progress::default();
        watchers.push(conn.watch(start, answers, read.clone())?);
        progress.push(read);
    }
    let mut peak = rss_before;
    let mut replay_peak = 0;
    let (mut max_lag, mut max_spread) = (0, 0);
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut ticks = 0u64;
    while !watchers.iter().all(|w| w.is_finished()) {
        tick.tick().await;
        let sent = provider
            .zip(sent_before)
            .map(|(p, before)| p.text_chunks_sent() - before);
        let read: Vec<usize> = progress.iter().map(|p| p.load(Ordering::Relaxed)).collect();
        let ahead = read.iter().copied().max().unwrap_or(0);
        let slowest = read.iter().copied().min().unwrap_or(0);
        max_spread = max_spread.max(ahead - slowest);
        max_lag = max_lag.max(sent.unwrap_or(ahead).saturating_sub(slowest));
        peak = peak.max(sys::vm_rss_kib(pid)?);
        let (anon, file) = sys::rss_parts_kib(pid)?;
        parts_peak = (parts_peak.0.max(anon), parts_peak.1.max(file));
        ticks += 1;
        if ticks.is_multiple_of(2) {
            replay_peak = replay_peak.max(replay_bytes(&mut control, &session).await?);
        }
    }
    let mut seen: Vec<Seen> = Vec::new();
    for w in watchers {
        seen.push(w.join().map_err(|_| "a subscriber's thread panicked")??);
    }
    if rss_from_hwm {
        peak = peak.max(sys::vm_hwm_kib(pid)?);
    }
    let cpu = sys::cpu_time(pid)?.saturating_sub(cpu_before);
    let client_cpu = sys::cpu_time(me)?.saturating_sub(client_before);
    // The completed turn stays buffered: the last look is the whole turn's.
    replay_peak = replay_peak.max(replay_bytes(&mut control, &session).await?);
    drop(control);
    let chunks = seen.iter().map(|s| s.chunks).min().unwrap_or(0);
    let deliveries = (chunks * seen.len()).max(1) as u32;
    if seen.iter().any(|s| s.chunks != chunks) {
        return Err("subscribers saw different numbers of chunks".into());
    }
    // Every subscriber got the whole turn: one turn id, every event from 1 to the last.
    let turn = seen.first().map(|s| s.turn_id.clone()).unwrap_or_default();
    if seen
        .iter()
        .any(|s| s.turn_id != turn || s.updates != s.complete_seq)
    {
        return Err("a subscriber missed events (turnId or eventSeq count differs)".into());
    }
    let mut rates: Vec<f64> = seen.iter().map(Seen::rate).collect();
    rates.sort_by(f64::total_cmp);
    let mut first_ms: Vec<f64> = seen.iter().map(|s| s.first.as_secs_f64() * 1e3).collect();
    first_ms.sort_by(f64::total_cmp);
    Ok(FanoutReport {
        subscribers: seen.len(),
        chunks,
        rates,
        first_ms,
        rss_growth_kib: peak.saturating_sub(rss_before),
        rss_peak_kib: peak,
        rss_from_hwm,
        anon_growth_kib: parts_peak.0.saturating_sub(parts_before.0),
        file_growth_kib: parts_peak.1.saturating_sub(parts_before.1),
        max_lag: provider.map(|_| max_lag),
        max_spread,
        replay_peak_bytes: replay_peak,
        daemon_cpu_per_delivery: cpu / deliveries,
        client_cpu_per_delivery: client_cpu / deliveries,
    })
}

/// The session's replay buffer now, from `session/status`.
async fn replay_bytes(control: &mut RpcConn, session: &str) -> Result<u64> {
    control
        .call(Method::SessionStatus.name(), json!({"sessionId": session}))
        .await?
        .get("replayBytes")
        .and_then(Value::as_u64)
        .ok_or_else(|| "session/status without replayBytes".into())
}

/// `fanout --bin B --chunks N`: starts the fake OpenAI server (its own runtime thread) and
/// `B daemon` with an agent on it, then for each subscriber count scripts one reply of
/// `chunks` one-word deltas (one `agent_message_chunk` each) and measures that turn;
/// `rounds` times over, then a summary of the rounds. Each turn is a new session's first,
/// or with `same_session` the next turn of the run's one session.
pub fn run_scripted(
    bin: &Path,
    chunks: usize,
    subscribers: &[usize],
    rounds: usize,
    same_session: bool,
) -> Result<()> {
    let provider = FakeProvider::start()?;
    let mut daemon = start_daemon(bin, Some(&provider.config()))?;
    let rt = sys::client_runtime()?;
    let mut runs: Vec<Vec<FanoutReport>> = Vec::new();
    let mut session = None;
    for _ in 0..rounds.max(1) {
        let mut round = Vec::new();
        for &n in subscribers {
            provider.fake().push(Scripted::chunks(
                (0..chunks).map(|i| format!("w{} ", i % 10)),
                Duration::ZERO,
            ));
            let report = rt.block_on(fanout(
                &daemon.socket,
                "default",
                "go",
                n,
                Some(provider.fake()),
                &mut session,
            ))?;
            if !same_session {
                session = None;
            }
            println!("fanout: {report}");
            if report.chunks != chunks {
                return Err(
                    format!("each subscriber read {} chunks of {chunks}", report.chunks).into(),
                );
            }
            round.push(report);
        }
        runs.push(round);
    }
    daemon.child.check_alive()?;
    daemon.child.stop(Duration::from_secs(5));
    drop(provider);
    if runs.len() > 1 {
        print!("{}", summary(&runs));
    }
    Ok(())
}

/// Per count: the median per-subscriber rate as a share of the first count's in the same
/// round (one figure per round, then their median), and the largest replay buffer seen.
fn summary(runs: &[Vec<FanoutReport>]) -> String {
    let mut out = String::new();
    let counts = runs.first().map_or(0, Vec::len);
    for i in 1..counts {
        let shares: Vec<f64> = runs
            .iter()
            .map(|r| 100.0 * median(&r[i].rates) / median(&r[0].rates).max(1e-9))
            .collect();
        let per_round: Vec<String> = shares.iter().map(|s| format!("{s:.1}")).collect();
        out += &format!(
            "summary: {} subscribers receive each {:.1} % (median of {} rounds; per round {}) of the rate with {}\n",
            runs[0][i].subscribers,
            median(&shares),
            runs.len(),
            per_round.join(", "),
            runs[0][0].subscribers,
        );
    }
    let replay = runs.iter().flatten().map(|r| r.replay_peak_bytes).max();
    out += &format!(
        "summary: largest replay buffer seen {:.2} MiB (cap 8 MiB)\n",
        replay.unwrap_or(0) as f64 / (1024.0 * 1024.0)
    );
    out
}
