//! `subscribers`: finding 5 of issue 21 (SPEC §17.1 "Queued output is bounded per
//! principal") played as the attack it was: one principal's connections each subscribe
//! several times to sessions whose buffered turn is large, and read nothing. Reported: the
//! daemon's RSS before, its peak while the connections are held (sampled every 50 ms), how
//! many the daemon closed, and its RSS once they are dropped.
//!
//! Run it as the attacking principal (for a non-admin, a `users.*` uid: see
//! `scripts/measure-subscriber-memory.sh`). Blocking std sockets, one thread: nothing is
//! read from the subscribed connections, which is the point.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::Result;
use crate::sys;

pub struct Options<'a> {
    pub socket: &'a Path,
    pub agent: &'a str,
    pub connections: usize,
    pub subscriptions: usize,
    pub sessions: usize,
    pub prompt_bytes: usize,
    pub hold: Duration,
    pub settle: Duration,
}

pub struct Report {
    pub pid: u32,
    pub buffered_bytes: Vec<u64>,
    pub before_kib: u64,
    pub peak_kib: u64,
    pub open_while_held: u64,
    pub after_kib: u64,
    pub connections: usize,
    pub subscriptions: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let buffered: Vec<String> = self
            .buffered_bytes
            .iter()
            .map(|b| format!("{:.2}", *b as f64 / (1024.0 * 1024.0)))
            .collect();
        write!(
            f,
            "daemon pid {}: {} connections x {} subscriptions to sessions buffering [{}] MiB; RSS before {:.1} MiB, peak {:.1} MiB (+{:.1} MiB), {} of the connections still open after the hold; RSS after they were dropped {:.1} MiB (+{:.1} MiB over before)",
            self.pid,
            self.connections,
            self.subscriptions,
            buffered.join(", "),
            mib(self.before_kib),
            mib(self.peak_kib),
            mib(self.peak_kib.saturating_sub(self.before_kib)),
            self.open_while_held,
            mib(self.after_kib),
            mib(self.after_kib.saturating_sub(self.before_kib)),
        )
    }
}

/// One blocking connection.
struct Conn {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl Conn {
    fn open(socket: &Path) -> Result<(Conn, Value)> {
        let stream = UnixStream::connect(socket)
            .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let reader = BufReader::new(stream.try_clone()?);
        let mut conn = Conn {
            stream,
            reader,
            next_id: 1,
        };
        let init = conn.call("initialize", json!({"protocolVersion": 1}))?;
        Ok((conn, init))
    }

    fn send(&mut self, method: &str, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stream.write_all(format!("{line}\n").as_bytes())?;
        Ok(id)
    }

    /// Sends a request and reads (skipping notifications) until its answer's result.
    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.send(method, params)?;
        let mut line = Vec::new();
        loop {
            line.clear();
            if self.reader.read_until(b'\n', &mut line)? == 0 {
                return Err(format!("{method}: the daemon closed the connection").into());
            }
            if line.starts_with(br#"{"jsonrpc":"2.0","method""#) {
                continue;
            }
            let msg: Value = serde_json::from_slice(&line)?;
            if msg["id"] != json!(id) {
                continue;
            }
            if let Some(error) = msg.get("error") {
                return Err(format!("{method} failed: {error}").into());
            }
            return Ok(msg["result"].clone());
        }
    }
}

fn open_connections(control: &mut Conn) -> Result<u64> {
    let status = control.call("status", json!({}))?;
    Ok(status["connections"].as_u64().unwrap_or(0))
}

/// The highest VmRSS seen while sampling every 50 ms for `span`.
fn peak_over(pid: u32, span: Duration) -> Result<u64> {
    let until = Instant::now() + span;
    let mut peak = sys::vm_rss_kib(pid)?;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        peak = peak.max(sys::vm_rss_kib(pid)?);
    }
    Ok(peak)
}

pub fn run(o: &Options) -> Result<Report> {
    let (mut control, init) = Conn::open(o.socket)?;
    let pid = init["serverPid"]
        .as_u64()
        .ok_or("initialize did not report the daemon's pid")? as u32;
    // The sessions and their large turns (echoed prompts), read through on `control`.
    let word = "x".repeat(999);
    let prompt = vec![word.as_str(); o.prompt_bytes / 1000].join(" ");
    let mut targets = Vec::new();
    let mut buffered_bytes = Vec::new();
    for _ in 0..o.sessions {
        let sid = control.call("session/new", json!({"agentAlias": o.agent}))?["sessionId"]
            .as_str()
            .ok_or("session/new answered without a sessionId")?
            .to_owned();
        let turn = control.call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": prompt}),
        )?["turnId"]
            .clone();
        let status = control.call("session/status", json!({"sessionId": sid}))?;
        buffered_bytes.push(status["replayBytes"].as_u64().unwrap_or(0));
        targets.push((sid, turn));
    }
    std::thread::sleep(Duration::from_secs(1));
    let before_kib = sys::vm_rss_kib(pid)?;

    // The attack: every connection subscribes `subscriptions` times with a replay of its
    // session's buffered turn, and reads nothing after `initialize`.
    let mut held = Vec::new();
    for i in 0..o.connections {
        let (mut conn, _) = Conn::open(o.socket)?;
        let (sid, turn) = &targets[i % targets.len()];
        for _ in 0..o.subscriptions {
            conn.send(
                "session/subscribe",
                json!({"sessionId": sid, "turnId": turn, "afterEventSeq": 0}),
            )?;
        }
        held.push(conn);
    }
    let peak_kib = peak_over(pid, o.hold)?;
    let open_while_held = open_connections(&mut control)?.saturating_sub(1);

    drop(held);
    let gone_by = Instant::now() + Duration::from_secs(30);
    while open_connections(&mut control)? > 1 && Instant::now() < gone_by {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(o.settle);
    let after_kib = sys::vm_rss_kib(pid)?;
    Ok(Report {
        pid,
        buffered_bytes,
        before_kib,
        peak_kib,
        open_while_held,
        after_kib,
        connections: o.connections,
        subscriptions: o.subscriptions,
    })
}
