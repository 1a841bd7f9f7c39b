//! The protocol client and the load modes: sequential latency, pipelined throughput, many
//! concurrent connections, and idle connections (memory per connection).
//!
//! Every mode speaks real NDJSON JSON-RPC 2.0: the first call on a connection is
//! `initialize`, each answer is parsed and matched to its request by id, and an error answer
//! fails the run (so a refused connection or a missing grant is never counted as a call).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Barrier, Semaphore};
use zeroclaw_rpc::{Frame, FrameReader};

use zeroclaw_protocol::Method;
use zeroclaw_protocol::system::PROTOCOL_VERSION;

use crate::error::Result;

/// How long any single answer may take before the run is declared failed.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// Read buffer per client connection.
const READ_BUFFER: usize = 64 * 1024;

/// The handshake every connection of the tool sends first (id 0).
pub fn initialize_line() -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": Method::Initialize.name(),
        "params": {"protocolVersion": PROTOCOL_VERSION,
                   "clientInfo": {"name": "zeroclaw-load", "version": env!("CARGO_PKG_VERSION")}},
        "id": 0,
    })
    .to_string()
}

/// The parts of an incoming message the client looks at; `result` is skipped unparsed
/// beyond what serde must scan, so the client spends as little CPU as it can per answer.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// One answer: its numeric id, and its error if it was one.
enum Answer {
    Reply {
        id: u64,
        error: Option<String>,
    },
    /// A notification or a request from the server: not an answer to us.
    Other,
}

fn parse_answer(line: &[u8]) -> Result<Answer> {
    let msg: Incoming = serde_json::from_slice(line)
        .map_err(|e| format!("server sent a line that is not JSON ({e})"))?;
    if msg.method.is_some() {
        return Ok(Answer::Other);
    }
    let id = match &msg.id {
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| format!("unexpected id {n} in an answer"))?,
        other => {
            let error = msg.error.map(|e| e.to_string()).unwrap_or_default();
            return Err(format!("answer with id {other:?} (not one of ours): {error}").into());
        }
    };
    Ok(Answer::Reply {
        id,
        error: msg.error.map(|e| e.to_string()),
    })
}

/// Writes request `id` for `method` (empty params) into `buf`, with its `\n`.
fn push_request(buf: &mut Vec<u8>, method: &str, id: u64) {
    use std::io::Write;
    let _ = writeln!(
        buf,
        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}},"id":{id}}}"#
    );
}

pub struct Reader {
    frames: FrameReader<BufReader<OwnedReadHalf>>,
    /// Bytes of the last answer line (without its `\n`).
    pub last_len: usize,
}

impl Reader {
    /// The next answer to one of our requests (skipping notifications and server requests).
    async fn answer(&mut self) -> Result<(u64, Option<String>)> {
        loop {
            let frame = tokio::time::timeout(ANSWER_TIMEOUT, self.frames.next_frame())
                .await
                .map_err(|_| format!("no answer within {ANSWER_TIMEOUT:?}"))??;
            let line = match frame {
                Some(Frame::Line(line)) => line,
                Some(Frame::Oversize) => return Err("server sent an oversize line".into()),
                None => return Err("server closed the connection".into()),
            };
            self.last_len = line.len();
            if let Answer::Reply { id, error } = parse_answer(&line)? {
                return Ok((id, error));
            }
        }
    }
}

/// One initialized client connection.
pub struct Conn {
    pub reader: Reader,
    writer: OwnedWriteHalf,
    buf: Vec<u8>,
    next_id: u64,
}

impl Conn {
    /// Connects and completes the `initialize` handshake.
    pub async fn open(socket: &Path) -> Result<Conn> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        let (read, writer) = stream.into_split();
        let mut conn = Conn {
            reader: Reader {
                frames: FrameReader::new(BufReader::with_capacity(READ_BUFFER, read)),
                last_len: 0,
            },
            writer,
            buf: Vec::with_capacity(256),
            next_id: 1,
        };
        conn.writer.write_all(initialize_line().as_bytes()).await?;
        conn.writer.write_all(b"\n").await?;
        match conn.reader.answer().await? {
            (0, None) => Ok(conn),
            (0, Some(error)) => Err(format!("initialize failed: {error}").into()),
            (id, _) => Err(format!("answer to initialize carries id {id}").into()),
        }
    }

    /// One request, waiting for its answer; returns the answer's line length.
    pub async fn call(&mut self, method: &str) -> Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        self.buf.clear();
        push_request(&mut self.buf, method, id);
        self.writer.write_all(&self.buf).await?;
        let (got, error) = self.reader.answer().await?;
        if let Some(error) = error {
            return Err(format!("{method} failed: {error}").into());
        }
        if got != id {
            return Err(format!("expected the answer to {id}, got {got}").into());
        }
        Ok(self.reader.last_len)
    }
}

#[derive(Debug, Clone)]
pub struct LatencyReport {
    pub calls: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
}

impl std::fmt::Display for LatencyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls: p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, mean {:.1} µs, max {:.1} µs",
            self.calls, self.p50_us, self.p90_us, self.p99_us, self.mean_us, self.max_us
        )
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// One connection, `warmup` unmeasured calls, then `calls` sequential measured calls.
pub async fn latency(
    socket: &Path,
    method: &str,
    calls: usize,
    warmup: usize,
) -> Result<LatencyReport> {
    let mut conn = Conn::open(socket).await?;
    for _ in 0..warmup {
        conn.call(method).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        conn.call(method).await?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let mean_us = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
    samples.sort_by(f64::total_cmp);
    Ok(LatencyReport {
        calls,
        p50_us: percentile(&samples, 50.0),
        p90_us: percentile(&samples, 90.0),
        p99_us: percentile(&samples, 99.0),
        mean_us,
        max_us: samples.last().copied().unwrap_or(0.0),
    })
}

#[derive(Debug, Clone)]
pub struct ThroughputReport {
    pub calls: usize,
    pub secs: f64,
    pub calls_per_sec: f64,
}

impl std::fmt::Display for ThroughputReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls in {:.3} s: {:.0} calls/s",
            self.calls, self.secs, self.calls_per_sec
        )
    }
}

/// One connection with `window` requests in flight; the writer sends a new request each
/// time an answer frees a slot (batching whatever slots are free into one write).
pub async fn pipelined(
    socket: &Path,
    method: &str,
    calls: usize,
    window: usize,
) -> Result<ThroughputReport> {
    let window = window.max(1);
    let Conn {
        mut reader,
        mut writer,
        ..
    } = Conn::open(socket).await?;
    let slots = Arc::new(Semaphore::new(window));
    let start = Instant::now();
    let send = {
        let slots = Arc::clone(&slots);
        async move {
            let mut buf = Vec::with_capacity(window * 64);
            let mut id = 1u64;
            let last = calls as u64;
            while id <= last {
                slots.acquire().await?.forget();
                buf.clear();
                push_request(&mut buf, method, id);
                id += 1;
                while id <= last {
                    match slots.try_acquire() {
                        Ok(permit) => permit.forget(),
                        Err(_) => break,
                    }
                    push_request(&mut buf, method, id);
                    id += 1;
                }
                writer.write_all(&buf).await?;
            }
            Ok::<_, crate::error::Error>(writer)
        }
    };
    let receive = async {
        let mut seen = 0usize;
        while seen < calls {
            let (id, error) = reader.answer().await?;
            if let Some(error) = error {
                return Err(format!("{method} {id} failed: {error}").into());
            }
            // The daemon runs requests concurrently, so answers may come out of order;
            // count them and check each id was one we sent.
            if id == 0 || id > calls as u64 {
                return Err(format!("answer with unknown id {id}").into());
            }
            seen += 1;
            slots.add_permits(1);
        }
        Ok::<_, crate::error::Error>(())
    };
    let (sent, received) = tokio::join!(send, receive);
    let _writer = sent?;
    received?;
    let secs = start.elapsed().as_secs_f64();
    Ok(ThroughputReport {
        calls,
        secs,
        calls_per_sec: calls as f64 / secs,
    })
}

/// `conns` concurrent connections, each making `calls` sequential calls; the clock runs
/// from the moment all of them are initialized until the last answer.
pub async fn connections(
    socket: &Path,
    method: &str,
    conns: usize,
    calls: usize,
) -> Result<ThroughputReport> {
    let ready = Arc::new(Barrier::new(conns + 1));
    let done = Arc::new(Barrier::new(conns + 1));
    let mut tasks = Vec::with_capacity(conns);
    for _ in 0..conns {
        let socket = socket.to_path_buf();
        let method = method.to_string();
        let ready = Arc::clone(&ready);
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            let opened = Conn::open(&socket).await;
            ready.wait().await;
            let result = async {
                let mut conn = opened?;
                for _ in 0..calls {
                    conn.call(&method).await?;
                }
                Ok::<_, crate::error::Error>(conn)
            }
            .await;
            done.wait().await;
            // Connections are closed only after the clock stopped.
            result.map(drop)
        }));
    }
    ready.wait().await;
    let start = Instant::now();
    done.wait().await;
    let secs = start.elapsed().as_secs_f64();
    for task in tasks {
        task.await??;
    }
    let total = conns * calls;
    Ok(ThroughputReport {
        calls: total,
        secs,
        calls_per_sec: total as f64 / secs,
    })
}

#[derive(Debug, Clone)]
pub struct IdleReport {
    pub conns: usize,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub per_conn_kib: f64,
}

impl std::fmt::Display for IdleReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} idle connections: VmRSS {} KiB -> {} KiB, {:.1} KiB per connection",
            self.conns, self.rss_before_kib, self.rss_after_kib, self.per_conn_kib
        )
    }
}

/// Opens and initializes `conns` connections (one at a time, so the listen backlog never
/// overflows), holds them for `settle`, and reads the server's VmRSS before and after.
pub async fn idle(socket: &Path, conns: usize, pid: u32, settle: Duration) -> Result<IdleReport> {
    crate::sys::raise_nofile(conns as u64 + 64);
    tokio::time::sleep(settle).await;
    let rss_before_kib = crate::sys::vm_rss_kib(pid)?;
    let mut held = Vec::with_capacity(conns);
    for i in 0..conns {
        let conn = Conn::open(socket)
            .await
            .map_err(|e| format!("connection {} of {conns}: {e}", i + 1))?;
        held.push(conn);
    }
    // One call on each, so every connection has been through the request path too.
    for conn in &mut held {
        conn.call(Method::Status.name()).await?;
    }
    tokio::time::sleep(settle).await;
    let rss_after_kib = crate::sys::vm_rss_kib(pid)?;
    drop(held);
    let delta = rss_after_kib.saturating_sub(rss_before_kib);
    Ok(IdleReport {
        conns,
        rss_before_kib,
        rss_after_kib,
        per_conn_kib: delta as f64 / conns.max(1) as f64,
    })
}
