//! The baseline: a minimal NDJSON JSON-RPC server over a Unix socket. It parses every line
//! as JSON (as a real server must, to find the id), answers every request with a result
//! padded to about the size of a daemon `status` reply, and coalesces the answers to one
//! read's worth of requests into one write. No handshake gate, no auth, no dispatch: the
//! cost of "a trivial JSON-RPC server" on this machine.

use std::path::Path;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use zeroclaw_rpc::code;

use crate::error::Result;

/// Frame cap, as in the protocol (8 MiB including the `\n`).
const MAX_LINE: usize = zeroclaw_rpc::MAX_FRAME_BYTES;

pub async fn serve(socket: &Path, reply_bytes: usize) -> Result<()> {
    let _ = std::fs::remove_file(socket);
    let listener =
        UnixListener::bind(socket).map_err(|e| format!("cannot bind {}: {e}", socket.display()))?;
    let pad = padding(reply_bytes);
    eprintln!(
        "zeroclaw-load echo-server: serving {} (replies of about {reply_bytes} bytes)",
        socket.display()
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let pad = pad.clone();
        tokio::spawn(async move {
            let _ = connection(stream, &pad).await;
        });
    }
}

/// The padding string that brings a reply with a short id to about `reply_bytes`.
fn padding(reply_bytes: usize) -> String {
    let base = reply(&json!(1000), "").len() + 1;
    "x".repeat(reply_bytes.saturating_sub(base))
}

fn reply(id: &Value, pad: &str) -> Vec<u8> {
    let message = json!({"jsonrpc": "2.0", "id": id, "result": {"echo": true, "pad": pad}});
    serde_json::to_vec(&message).unwrap_or_default()
}

async fn connection(mut stream: UnixStream, pad: &str) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(8 * 1024);
    loop {
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(8 * 1024);
        }
        let n = stream.read_buf(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        let mut start = 0;
        while let Some(end) = buf[start..].iter().position(|b| *b == b'\n') {
            let mut line = &buf[start..start + end];
            start += end + 1;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            answer(line, pad, &mut out);
        }
        buf.drain(..start);
        if buf.len() >= MAX_LINE {
            error_line(&mut out, code::INVALID_REQUEST, "frame too long");
            stream.write_all(&out).await?;
            return Ok(());
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
    }
}

/// An error answer with a null id, as one line.
fn error_line(out: &mut Vec<u8>, code: i64, message: &str) {
    let line = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

fn answer(line: &[u8], pad: &str, out: &mut Vec<u8>) {
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(_) => {
            error_line(out, code::PARSE_ERROR, "parse error");
            return;
        }
    };
    // Requests carry a method and an id; notifications and responses get no answer.
    let Some(object) = message.as_object() else {
        return;
    };
    if !object.get("method").is_some_and(Value::is_string) {
        return;
    }
    let Some(id) = object.get("id") else { return };
    out.extend_from_slice(&reply(id, pad));
    out.push(b'\n');
}
