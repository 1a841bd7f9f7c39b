//! Session and upload load modes: a streamed turn from the `echo` provider
//! (`session/update` notifications per second), the time from `session/prompt` to the first
//! `agent_message_chunk` over a fake OpenAI server compared with that server's own first
//! byte, and chunked uploads (`file/upload/*`) with an in-process decode-and-hash baseline
//! and the daemon memory held per staged upload.
//!
//! Like the rest of the tool, every exchange is real NDJSON JSON-RPC 2.0 after
//! `initialize`; an error answer fails the run.

use std::path::Path;
use std::time::{Duration, Instant};
use zeroclaw_protocol::update::{AGENT_MESSAGE_CHUNK, TURN_COMPLETE};
use zeroclaw_protocol::{Method, SESSION_UPDATE};

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, UnixStream};
use zeroclaw_rpc::{Frame, FrameReader};

use crate::client::initialize_line;
use crate::error::Result;

/// How long any single line may take before the run is declared failed.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);
/// Chunk size of `file/upload/chunk` (SPEC §8.2).
pub const CHUNK_BYTES: usize = 1024 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// The fields of an incoming line this module looks at.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<UpdateParams>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct UpdateParams {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// One initialized connection that sends requests with any params.
pub struct RpcConn {
    frames: FrameReader<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    next_id: u64,
}

/// A line received, parsed, with its size (including its `\n`).
struct Line {
    msg: Incoming,
    bytes: usize,
}

impl RpcConn {
    pub async fn open(socket: &Path) -> Result<RpcConn> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        let (read, writer) = stream.into_split();
        let mut conn = RpcConn {
            frames: FrameReader::new(BufReader::with_capacity(256 * 1024, read)),
            writer,
            next_id: 1,
        };
        conn.writer.write_all(initialize_line().as_bytes()).await?;
        conn.writer.write_all(b"\n").await?;
        let line = conn.line().await?;
        if line.msg.error.is_some() || line.msg.id != Some(json!(0)) {
            return Err("initialize failed".into());
        }
        Ok(conn)
    }

    async fn line(&mut self) -> Result<Line> {
        let frame = tokio::time::timeout(LINE_TIMEOUT, self.frames.next_frame())
            .await
            .map_err(|_| format!("nothing received within {LINE_TIMEOUT:?}"))??;
        let raw = match frame {
            Some(Frame::Line(line)) => line,
            Some(Frame::Oversize) => return Err("server sent an oversize line".into()),
            None => return Err("server closed the connection".into()),
        };
        let msg: Incoming = serde_json::from_slice(&raw)
            .map_err(|e| format!("server sent a line that is not JSON ({e})"))?;
        Ok(Line {
            msg,
            bytes: raw.len() + 1,
        })
    }

    /// Writes one request; returns its id.
    async fn send(&mut self, method: &str, params: &Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}),
        )?;
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        Ok(id)
    }

    /// Waits for the answer to `id`, skipping notifications; an error answer fails.
    async fn answer(&mut self, id: u64, what: &str) -> Result<Value> {
        loop {
            let line = self.line().await?;
            if line.msg.method.is_some() {
                continue;
            }
            if line.msg.id != Some(json!(id)) {
                return Err(format!("{what}: unexpected answer id {:?}", line.msg.id).into());
            }
            if let Some(error) = line.msg.error {
                return Err(format!("{what} failed: {error}").into());
            }
            return Ok(line.msg.result.unwrap_or(Value::Null));
        }
    }

    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.send(method, &params).await?;
        self.answer(id, method).await
    }

    /// `session/new` on `agent`; returns the session id.
    pub async fn new_session(&mut self, agent: &str) -> Result<String> {
        let result = self
            .call(Method::SessionNew.name(), json!({"agentAlias": agent}))
            .await?;
        result
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| "session/new answered without a sessionId".into())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

// ---------------------------------------------------------------------------------------
// Streaming: one long prompt echoed back word by word.

/// A prompt of `words` distinct words separated by single spaces.
pub fn long_prompt(words: usize) -> String {
    let mut s = String::with_capacity(words * 10);
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str("word");
        s.push_str(&i.to_string());
    }
    s
}

#[derive(Debug, Clone)]
pub struct StreamReport {
    pub prompt_bytes: usize,
    pub chunks: usize,
    /// Bytes of the chunk notification lines, `\n` included.
    pub chunk_line_bytes: usize,
    /// Other `session/update` types seen (e.g. `history_trimmed`), besides `turn_complete`.
    pub other_updates: usize,
    pub first_chunk: Duration,
    /// First chunk to last chunk.
    pub streaming: Duration,
    /// `session/prompt` sent to its answer received.
    pub turn: Duration,
}

impl StreamReport {
    /// Notifications per second while streaming (first to last chunk).
    pub fn rate(&self) -> f64 {
        self.chunks.saturating_sub(1) as f64 / secs(self.streaming).max(1e-9)
    }
    /// Chunk-line bytes per second while streaming, in MiB/s.
    pub fn mib_per_sec(&self) -> f64 {
        self.chunk_line_bytes as f64 / MIB / secs(self.streaming).max(1e-9)
    }
    /// Notifications per second over the whole turn (prompt sent → answer).
    pub fn turn_rate(&self) -> f64 {
        self.chunks as f64 / secs(self.turn).max(1e-9)
    }
}

impl std::fmt::Display for StreamReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} chunks ({:.1} MiB of lines) for a {:.1} MiB prompt: first chunk {:.1} ms, streaming {:.3} s = {:.0} notifications/s, {:.1} MiB/s; whole turn {:.3} s = {:.0} notifications/s; other updates {}",
            self.chunks,
            self.chunk_line_bytes as f64 / MIB,
            self.prompt_bytes as f64 / MIB,
            secs(self.first_chunk) * 1e3,
            secs(self.streaming),
            self.rate(),
            self.mib_per_sec(),
            secs(self.turn),
            self.turn_rate(),
            self.other_updates
        )
    }
}

/// `session/new` on `agent`, then one `session/prompt` of `words` words; counts the
/// `agent_message_chunk` notifications and checks they concatenate to the prompt.
pub async fn stream(socket: &Path, agent: &str, words: usize) -> Result<StreamReport> {
    let prompt = long_prompt(words);
    let mut conn = RpcConn::open(socket).await?;
    let session = conn.new_session(agent).await?;
    let mut text = String::with_capacity(prompt.len());
    let start = Instant::now();
    let id = conn
        .send(
            Method::SessionPrompt.name(),
            &json!({"sessionId": session, "prompt": prompt}),
        )
        .await?;
    let mut chunks = 0usize;
    let mut chunk_line_bytes = 0usize;
    let mut other_updates = 0usize;
    let mut first = None;
    let mut last = start;
    let turn = loop {
        let line = conn.line().await?;
        match line.msg.method.as_deref() {
            Some(SESSION_UPDATE) => {
                let params = line.msg.params.ok_or("session/update without params")?;
                match params.kind.as_deref() {
                    Some(AGENT_MESSAGE_CHUNK) => {
                        let now = Instant::now();
                        first.get_or_insert(now);
                        last = now;
                        chunks += 1;
                        chunk_line_bytes += line.bytes;
                        text.push_str(params.text.as_deref().unwrap_or_default());
                    }
                    Some(TURN_COMPLETE) => {}
                    _ => other_updates += 1,
                }
            }
            Some(_) => {}
            None => {
                if line.msg.id != Some(json!(id)) {
                    return Err(format!("unexpected answer id {:?}", line.msg.id).into());
                }
                if let Some(error) = line.msg.error {
                    return Err(format!("session/prompt failed: {error}").into());
                }
                let outcome = line
                    .msg
                    .result
                    .as_ref()
                    .and_then(|r| r.get("outcome"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if outcome != "completed" {
                    return Err(format!("turn ended {outcome:?}").into());
                }
                break start.elapsed();
            }
        }
    };
    if text != prompt {
        return Err(format!(
            "streamed text ({} bytes) differs from the prompt ({} bytes)",
            text.len(),
            prompt.len()
        )
        .into());
    }
    let first = first.ok_or("no agent_message_chunk received")?;
    Ok(StreamReport {
        prompt_bytes: prompt.len(),
        chunks,
        chunk_line_bytes,
        other_updates,
        first_chunk: first - start,
        streaming: last - first,
        turn,
    })
}

// ---------------------------------------------------------------------------------------
// First chunk: daemon prompt → first agent_message_chunk vs the provider's own first byte.

/// What a direct HTTP client sends the fake provider.
const DIRECT_BODY: &str =
    r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"ping"}]}"#;

/// Time from connecting to the provider to the first content delta received, as a plain
/// HTTP/1.1 client (new connection, as the fake closes each one) sees it. Reads the rest
/// of the response so the server is idle afterwards.
pub async fn direct_first_content(addr: std::net::SocketAddr) -> Result<Duration> {
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n\r\n{DIRECT_BODY}",
        DIRECT_BODY.len()
    );
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.write_all(request.as_bytes()).await?;
    let mut buf = Vec::with_capacity(8192);
    let mut first = None;
    loop {
        let n = tokio::time::timeout(LINE_TIMEOUT, stream.read_buf(&mut buf))
            .await
            .map_err(|_| "provider sent nothing in time")??;
        if first.is_none() && contains(&buf, b"\"content\"") {
            first = Some(start.elapsed());
        }
        if n == 0 {
            break;
        }
    }
    first.ok_or_else(|| "the provider answered without a content delta".into())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// One `session/prompt` of a short text: time from the request written to the first
/// `agent_message_chunk`, and to the answer.
pub async fn prompt_first_chunk(conn: &mut RpcConn, session: &str) -> Result<(Duration, Duration)> {
    let start = Instant::now();
    let id = conn
        .send(
            Method::SessionPrompt.name(),
            &json!({"sessionId": session, "prompt": "ping"}),
        )
        .await?;
    let mut first = None;
    loop {
        let line = conn.line().await?;
        if line.msg.method.as_deref() == Some(SESSION_UPDATE) {
            if first.is_none()
                && line.msg.params.as_ref().and_then(|p| p.kind.as_deref())
                    == Some(AGENT_MESSAGE_CHUNK)
            {
                first = Some(start.elapsed());
            }
            continue;
        }
        if line.msg.method.is_some() {
            continue;
        }
        if line.msg.id != Some(json!(id)) {
            return Err(format!("unexpected answer id {:?}", line.msg.id).into());
        }
        if let Some(error) = line.msg.error {
            return Err(format!("session/prompt failed: {error}").into());
        }
        let outcome = line
            .msg
            .result
            .as_ref()
            .and_then(|r| r.get("outcome"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if outcome != "completed" {
            return Err(format!("turn ended {outcome:?}: {:?}", line.msg.result).into());
        }
        let first = first.ok_or("turn completed without an agent_message_chunk")?;
        return Ok((first, start.elapsed()));
    }
}

#[derive(Debug, Clone)]
pub struct FirstChunkReport {
    pub iterations: usize,
    /// Sorted, in ms.
    pub direct: Vec<f64>,
    pub daemon: Vec<f64>,
    pub turn: Vec<f64>,
    /// daemon − direct of the same iteration, sorted, in ms.
    pub paired: Vec<f64>,
}

impl FirstChunkReport {
    pub fn p(v: &[f64], p: f64) -> f64 {
        percentile(v, p)
    }
}

impl std::fmt::Display for FirstChunkReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = FirstChunkReport::p;
        write!(
            f,
            "{} iterations: provider first content (direct) p50 {:.3} / p90 {:.3} ms; daemon prompt→first chunk p50 {:.3} / p90 {:.3} ms; added p50 {:.3} / p90 {:.3} ms (difference of percentiles), paired p50 {:.3} / p90 {:.3} ms; whole turn p50 {:.3} ms",
            self.iterations,
            p(&self.direct, 50.0),
            p(&self.direct, 90.0),
            p(&self.daemon, 50.0),
            p(&self.daemon, 90.0),
            p(&self.daemon, 50.0) - p(&self.direct, 50.0),
            p(&self.daemon, 90.0) - p(&self.direct, 90.0),
            p(&self.paired, 50.0),
            p(&self.paired, 90.0),
            p(&self.turn, 50.0),
        )
    }
}

/// Alternates a direct request to the provider and a prompt through the daemon,
/// `warmup` unmeasured pairs first.
pub async fn first_chunk(
    socket: &Path,
    provider: std::net::SocketAddr,
    agent: &str,
    iterations: usize,
    warmup: usize,
) -> Result<FirstChunkReport> {
    let mut conn = RpcConn::open(socket).await?;
    let session = conn.new_session(agent).await?;
    let ms = |d: Duration| secs(d) * 1e3;
    let mut direct = Vec::with_capacity(iterations);
    let mut daemon = Vec::with_capacity(iterations);
    let mut turn = Vec::with_capacity(iterations);
    let mut paired = Vec::with_capacity(iterations);
    for i in 0..warmup + iterations {
        let d = direct_first_content(provider).await?;
        let (first, whole) = prompt_first_chunk(&mut conn, &session).await?;
        if i >= warmup {
            direct.push(ms(d));
            daemon.push(ms(first));
            turn.push(ms(whole));
            paired.push(ms(first) - ms(d));
        }
    }
    for v in [&mut direct, &mut daemon, &mut turn, &mut paired] {
        v.sort_by(f64::total_cmp);
    }
    Ok(FirstChunkReport {
        iterations,
        direct,
        daemon,
        turn,
        paired,
    })
}

// ---------------------------------------------------------------------------------------
// Uploads.

/// `size` deterministic, incompressible-looking bytes (xorshift), different per `seed`.
pub fn payload(size: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(size);
    out
}

/// A seed that differs between runs (time and pid).
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// One file prepared for upload: its chunks in base64 and its digest.
pub struct Prepared {
    pub size: usize,
    pub sha256: String,
    pub chunks_b64: Vec<String>,
}

pub fn prepare(bytes: &[u8]) -> Prepared {
    let b64 = base64::engine::general_purpose::STANDARD;
    Prepared {
        size: bytes.len(),
        sha256: hex::encode(Sha256::digest(bytes)),
        chunks_b64: bytes.chunks(CHUNK_BYTES).map(|c| b64.encode(c)).collect(),
    }
}

/// The baseline: decode every chunk and hash the bytes, in process, on one thread.
pub fn decode_and_hash(file: &Prepared) -> Result<Duration> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let start = Instant::now();
    let mut hasher = Sha256::new();
    let mut buf = Vec::with_capacity(CHUNK_BYTES);
    for chunk in &file.chunks_b64 {
        buf.clear();
        b64.decode_vec(chunk, &mut buf)?;
        hasher.update(&buf);
    }
    let digest = hex::encode(hasher.finalize());
    let took = start.elapsed();
    if digest != file.sha256 {
        return Err("baseline digest mismatch".into());
    }
    Ok(took)
}

#[derive(Debug, Clone)]
pub struct UploadReport {
    pub size: usize,
    pub begin: Duration,
    pub chunks: Duration,
    pub commit: Duration,
    pub total: Duration,
}

impl UploadReport {
    pub fn mib_per_sec(&self) -> f64 {
        self.size as f64 / MIB / secs(self.total)
    }
}

impl std::fmt::Display for UploadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} MiB in {:.1} ms = {:.0} MiB/s (begin {:.2} ms, chunks {:.1} ms, commit {:.1} ms)",
            self.size as f64 / MIB,
            secs(self.total) * 1e3,
            self.mib_per_sec(),
            secs(self.begin) * 1e3,
            secs(self.chunks) * 1e3,
            secs(self.commit) * 1e3
        )
    }
}

/// `file/upload/begin` for `file` on `session`; returns the upload id.
async fn begin(conn: &mut RpcConn, session: &str, file: &Prepared, name: &str) -> Result<String> {
    let result = conn
        .call(
            Method::FileUploadBegin.name(),
            json!({"session_id": session, "size_bytes": file.size, "filename": name, "sha256": file.sha256}),
        )
        .await?;
    result
        .get("upload_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "file/upload/begin answered without an upload_id".into())
}

/// Sends every chunk of `file`, one at a time (each waits for its answer: offsets must
/// arrive in order). The base64 text is written straight from `file`, not copied.
async fn send_chunks(conn: &mut RpcConn, upload: &str, file: &Prepared) -> Result<()> {
    for (i, chunk) in file.chunks_b64.iter().enumerate() {
        let id = conn.next_id;
        conn.next_id += 1;
        let offset = i * CHUNK_BYTES;
        let head = format!(
            r#"{{"jsonrpc":"2.0","method":"{method}","id":{id},"params":{{"upload_id":"{upload}","offset":{offset},"data_b64":""#,
            method = Method::FileUploadChunk.name()
        );
        conn.writer.write_all(head.as_bytes()).await?;
        conn.writer.write_all(chunk.as_bytes()).await?;
        conn.writer.write_all(b"\"}}\n").await?;
        let result = conn.answer(id, Method::FileUploadChunk.name()).await?;
        let received = result
            .get("received_bytes")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let expected = (offset + CHUNK_BYTES).min(file.size) as u64;
        if received != expected {
            return Err(
                format!("chunk {i}: received_bytes {received}, expected {expected}").into(),
            );
        }
    }
    Ok(())
}

/// One whole upload: begin, every chunk, commit; the clock runs from begin sent to the
/// commit answered.
pub async fn upload_once(
    conn: &mut RpcConn,
    session: &str,
    file: &Prepared,
    name: &str,
) -> Result<UploadReport> {
    let start = Instant::now();
    let upload = begin(conn, session, file, name).await?;
    let begun = Instant::now();
    send_chunks(conn, &upload, file).await?;
    let sent = Instant::now();
    let entry = conn
        .call(
            Method::FileUploadCommit.name(),
            json!({"upload_id": upload}),
        )
        .await?;
    let done = Instant::now();
    let want = format!("sha256:{}", file.sha256);
    if entry.get("ref_id").and_then(Value::as_str) != Some(want.as_str()) {
        return Err(format!("commit answered {entry}").into());
    }
    if entry.get("deduplicated").and_then(Value::as_bool) == Some(true) {
        return Err("commit deduplicated: the payload was not fresh".into());
    }
    Ok(UploadReport {
        size: file.size,
        begin: begun - start,
        chunks: sent - begun,
        commit: done - sent,
        total: done - start,
    })
}

/// `rounds` uploads of `size` bytes (fresh content each round, so nothing deduplicates)
/// on one connection and one new session of `agent`, each with the baseline on the same
/// bytes right after it.
pub async fn uploads(
    socket: &Path,
    agent: &str,
    size: usize,
    rounds: usize,
) -> Result<Vec<(UploadReport, Duration)>> {
    let mut conn = RpcConn::open(socket).await?;
    let session = conn.new_session(agent).await?;
    let mut out = Vec::with_capacity(rounds);
    // Fresh bytes on every run too: a file already in the workspace would only be compared.
    let run = fresh_seed();
    for round in 0..rounds {
        let file = prepare(&payload(size, run + round as u64));
        let report = upload_once(&mut conn, &session, &file, &format!("bench-{round}.bin")).await?;
        let baseline = decode_and_hash(&file)?;
        out.push((report, baseline));
    }
    Ok(out)
}

#[derive(Debug, Clone)]
pub struct StagedReport {
    pub uploads: usize,
    pub size: usize,
    pub rss_before_kib: u64,
    /// After every upload was begun, nothing sent yet.
    pub rss_begun_kib: u64,
    /// After every byte was sent (nothing committed).
    pub rss_filled_kib: u64,
    /// After the connections closed (the uploads dropped).
    pub rss_closed_kib: u64,
}

impl StagedReport {
    pub fn per_upload_kib(&self) -> f64 {
        self.rss_filled_kib.saturating_sub(self.rss_before_kib) as f64 / self.uploads as f64
    }
    pub fn begun_per_upload_kib(&self) -> f64 {
        self.rss_begun_kib.saturating_sub(self.rss_before_kib) as f64 / self.uploads as f64
    }
}

impl std::fmt::Display for StagedReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} staged uploads of {:.1} MiB: VmRSS {} KiB before, {} KiB begun ({:.1} KiB each), {} KiB filled ({:.1} KiB = {:.3}× payload each), {} KiB after the connections closed",
            self.uploads,
            self.size as f64 / MIB,
            self.rss_before_kib,
            self.rss_begun_kib,
            self.begun_per_upload_kib(),
            self.rss_filled_kib,
            self.per_upload_kib(),
            self.per_upload_kib() * 1024.0 / self.size as f64,
            self.rss_closed_kib
        )
    }
}

/// Holds `uploads` staged uploads of `size` bytes each (4 per connection, the limit),
/// begun, then filled, never committed; reads the daemon's VmRSS at each step.
pub async fn staged(
    socket: &Path,
    pid: u32,
    agent: &str,
    uploads: usize,
    size: usize,
    settle: Duration,
) -> Result<StagedReport> {
    const PER_CONN: usize = 4;
    let conns_needed = uploads.div_ceil(PER_CONN);
    let mut conns = Vec::with_capacity(conns_needed);
    for _ in 0..conns_needed {
        conns.push(RpcConn::open(socket).await?);
    }
    let session = conns[0].new_session(agent).await?;
    let run = fresh_seed();
    let files: Vec<Prepared> = (0..uploads)
        .map(|i| prepare(&payload(size, run + i as u64)))
        .collect();
    tokio::time::sleep(settle).await;
    let rss_before_kib = crate::sys::vm_rss_kib(pid)?;
    let mut ids = Vec::with_capacity(uploads);
    for (i, file) in files.iter().enumerate() {
        let conn = &mut conns[i / PER_CONN];
        ids.push(begin(conn, &session, file, &format!("staged-{i}.bin")).await?);
    }
    tokio::time::sleep(settle).await;
    let rss_begun_kib = crate::sys::vm_rss_kib(pid)?;
    for (i, file) in files.iter().enumerate() {
        let conn = &mut conns[i / PER_CONN];
        send_chunks(conn, &ids[i], file).await?;
    }
    tokio::time::sleep(settle).await;
    let rss_filled_kib = crate::sys::vm_rss_kib(pid)?;
    drop(conns);
    tokio::time::sleep(settle * 2).await;
    let rss_closed_kib = crate::sys::vm_rss_kib(pid)?;
    Ok(StagedReport {
        uploads,
        size,
        rss_before_kib,
        rss_begun_kib,
        rss_filled_kib,
        rss_closed_kib,
    })
}
