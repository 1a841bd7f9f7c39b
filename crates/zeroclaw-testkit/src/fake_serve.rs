//! What the four fake provider servers share, written once: the serve loop ([`serve`]: an
//! accept loop on `127.0.0.1:0` and a task per connection, all stopped when the returned
//! task is aborted), and the reading of one HTTP/1.1 request ([`read_request`]) with its
//! record ([`RecordedRequest`], kept by [`read_recorded`]).
//!
//! What differs stays with each fake: its routes, its scripted replies and its wire format.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Binds `127.0.0.1:0` and serves every connection with `handle` on a task of its own (on
/// the current tokio runtime). Aborting the returned task stops the server and, with its
/// set of connection tasks, every open response. `what` names the server in logs.
pub(crate) async fn serve<S, H, Fut>(
    state: Arc<S>,
    what: &'static str,
    handle: H,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)>
where
    S: Send + Sync + 'static,
    H: Fn(TcpStream, Arc<S>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        conns.spawn(handle(stream, Arc::clone(&state)));
                    }
                    Err(e) => {
                        tracing::warn!("{what} accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
    });
    Ok((addr, task))
}

/// Reads one request from `stream` and appends it to `requests`: its method, path and
/// body (parsed as JSON, `Value::Null` when it is not), or `None` when no whole request
/// head arrived.
pub(crate) async fn read_recorded(
    stream: &mut TcpStream,
    requests: &Mutex<Vec<RecordedRequest>>,
) -> Option<(String, String, Value)> {
    let Ok(Some((head, body))) = read_request(stream).await else {
        return None;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (method, path) = (head.method.clone(), head.path.clone());
    requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(RecordedRequest {
            method: head.method,
            path: head.path,
            headers: head.headers,
            body: body.clone(),
        });
    Some((method, path, body))
}

/// What the fake server saw for one request.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
}

pub(crate) async fn read_request(
    stream: &mut TcpStream,
) -> std::io::Result<Option<(Head, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head_text = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head_text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let content_length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_BODY);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < content_length {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(content_length);
    Ok(Some((
        Head {
            method,
            path,
            headers,
        },
        body,
    )))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
