//! `fanout`: one long streamed turn watched by N subscribers (SPEC §14). Each subscriber
//! counts its `agent_message_chunk` lines without parsing them; reported per subscriber:
//! notifications/s while streaming and prompt → first chunk, plus the daemon's RSS growth
//! during the turn (the replay buffer is capped at 8 MiB per session) and its CPU time per
//! delivered notification (what fan-out costs the daemon, apart from the client's reading).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::Result;
use crate::sys;
use crate::turns::{RpcConn, long_prompt, median};

/// What one subscriber saw.
struct Seen {
    chunks: usize,
    first: Duration,
    streaming: Duration,
}

impl Seen {
    fn rate(&self) -> f64 {
        self.chunks.saturating_sub(1) as f64 / self.streaming.as_secs_f64().max(1e-9)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Reads `conn` until the turn's `turn_complete` (and, for the prompter, its answer).
async fn watch(mut conn: RpcConn, start: Instant, prompt_id: Option<u64>) -> Result<Seen> {
    let (mut chunks, mut first, mut last) = (0usize, None, start);
    let mut complete = false;
    let mut answered = prompt_id.is_none();
    while !(complete && answered) {
        let line = conn.raw_line().await?;
        if contains(&line, b"\"agent_message_chunk\"") {
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            chunks += 1;
        } else if contains(&line, b"\"turn_complete\"") {
            complete = true;
        } else if !contains(&line, b"\"method\"") {
            answered = true;
        }
    }
    let first = first.ok_or("no chunk received")?;
    Ok(Seen {
        chunks,
        first: first - start,
        streaming: last - first,
    })
}

pub struct FanoutReport {
    pub subscribers: usize,
    pub chunks: usize,
    /// Per-subscriber notifications/s, ascending.
    pub rates: Vec<f64>,
    /// Per-subscriber prompt → first chunk, ms, ascending.
    pub first_ms: Vec<f64>,
    pub rss_growth_kib: u64,
    /// Daemon CPU time spent on the turn, per delivered notification (all subscribers).
    pub daemon_cpu_per_delivery: Duration,
}

impl std::fmt::Display for FanoutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
        let first = |v: &[f64]| v.first().copied().unwrap_or(0.0);
        write!(
            f,
            "{:>2} subscribers, {} chunks each: notifications/s per subscriber min {:.0} median {:.0}; first chunk median {:.2} ms max {:.2} ms; daemon RSS +{:.1} MiB at peak; daemon CPU {:.2} µs per delivered notification",
            self.subscribers,
            self.chunks,
            first(&self.rates),
            median(&self.rates),
            median(&self.first_ms),
            last(&self.first_ms),
            self.rss_growth_kib as f64 / 1024.0,
            self.daemon_cpu_per_delivery.as_secs_f64() * 1e6
        )
    }
}

/// One turn of `words` words on `agent`, watched by `subscribers` connections (the
/// prompting one included).
pub async fn fanout(
    socket: &Path,
    agent: &str,
    words: usize,
    subscribers: usize,
) -> Result<FanoutReport> {
    let prompt = long_prompt(words);
    let mut prompter = RpcConn::open(socket).await?;
    let session = prompter.new_session(agent).await?;
    let pid = prompter
        .call("status", json!({}))
        .await?
        .get("serverPid")
        .and_then(Value::as_u64)
        .ok_or("status without serverPid")? as u32;
    let mut others = Vec::new();
    for _ in 1..subscribers.max(1) {
        let mut conn = RpcConn::open(socket).await?;
        conn.call("session/subscribe", json!({"sessionId": session}))
            .await?;
        others.push(conn);
    }
    let rss_before = sys::vm_rss_kib(pid)?;
    let cpu_before = sys::cpu_time(pid)?;
    let start = Instant::now();
    let id = prompter
        .send_request(
            "session/prompt",
            &json!({"sessionId": session, "prompt": prompt}),
        )
        .await?;
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(watch(prompter, start, Some(id)));
    for conn in others {
        tasks.spawn(watch(conn, start, None));
    }
    let mut peak = rss_before;
    let mut seen = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while !tasks.is_empty() {
        tokio::select! {
            done = tasks.join_next() => {
                if let Some(done) = done {
                    seen.push(done??);
                }
            }
            _ = tick.tick() => peak = peak.max(sys::vm_rss_kib(pid)?),
        }
    }
    let cpu = sys::cpu_time(pid)?.saturating_sub(cpu_before);
    let chunks = seen.iter().map(|s| s.chunks).min().unwrap_or(0);
    let deliveries = (chunks * seen.len()).max(1) as u32;
    if seen.iter().any(|s| s.chunks != chunks) {
        return Err("subscribers saw different numbers of chunks".into());
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
        daemon_cpu_per_delivery: cpu / deliveries,
    })
}
