//! Just enough HTTP/1.1 for the gateway (SPEC §20): reading one request head (bounded in
//! size, parsed by `httparse`), reading a body of a declared length (bounded), and writing
//! a response that always carries the security headers. Keep-alive and pipelining follow
//! from reading heads off one buffer that keeps what follows each request.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head (request line and headers).
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most headers a request may have.
const MAX_HEADERS: usize = 64;
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 4096;

/// Sent with every response, whatever its status (SPEC §20).
pub(crate) const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "Content-Security-Policy",
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
];

/// A parsed request head.
#[derive(Debug)]
pub(crate) struct RequestHead {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    /// The target's path, without its query.
    pub fn path(&self) -> &str {
        self.target.split(['?', '#']).next().unwrap_or("")
    }

    /// The first header of this name (case-insensitive), when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
    }

    /// Whether a header's comma-separated value lists `token` (case-insensitive).
    pub fn header_has(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// Whether the client wants the connection kept open after the response.
    pub fn keep_alive(&self) -> bool {
        match self.minor_version {
            0 => self.header_has("connection", "keep-alive"),
            _ => !self.header_has("connection", "close"),
        }
    }

    /// What the request says about a body: `Ok(0)` for none, the declared length, or
    /// `Err` for a body of unknown length (chunked) or an unreadable length.
    pub fn body_length(&self) -> Result<usize, BodyError> {
        if self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
        {
            return Err(BodyError::Chunked);
        }
        let mut lengths = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"));
        let Some((_, first)) = lengths.next() else {
            return Ok(0);
        };
        // Several lengths (request smuggling) or a length that is not a number: refused.
        if lengths.next().is_some() {
            return Err(BodyError::BadLength);
        }
        std::str::from_utf8(first)
            .ok()
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse().ok())
            .ok_or(BodyError::BadLength)
    }
}

/// Why a body cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    Chunked,
    BadLength,
}

/// Why no request head was read.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// The peer closed the connection (cleanly, between requests, when `buf` is empty).
    Closed,
    /// The head passed [`MAX_HEAD_BYTES`].
    TooLarge,
    /// Not HTTP/1.x.
    Malformed,
    Io,
}

/// Reads one request head from `stream`, starting with the bytes already in `buf`; on
/// success `buf` keeps only what followed the head (a body, or pipelined requests).
pub(crate) async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
) -> Result<RequestHead, HeadError> {
    loop {
        if !buf.is_empty() {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(buf) {
                Ok(httparse::Status::Complete(len)) => {
                    let head = RequestHead {
                        method: req.method.unwrap_or("").to_owned(),
                        target: req.path.unwrap_or("").to_owned(),
                        minor_version: req.version.unwrap_or(1),
                        headers: req
                            .headers
                            .iter()
                            .map(|h| (h.name.to_owned(), h.value.to_vec()))
                            .collect(),
                    };
                    buf.drain(..len);
                    return Ok(head);
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
                Err(_) => return Err(HeadError::Malformed),
            }
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(HeadError::TooLarge);
        }
        let room = (MAX_HEAD_BYTES - buf.len()).min(READ_CHUNK);
        let mut chunk = [0u8; READ_CHUNK];
        let n = stream
            .read(&mut chunk[..room])
            .await
            .map_err(|_| HeadError::Io)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads a body of exactly `len` bytes: first from `buf` (what followed the head), then
/// from `stream`; `buf` keeps what follows the body.
pub(crate) async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    len: usize,
) -> io::Result<Vec<u8>> {
    if buf.len() >= len {
        let rest = buf.split_off(len);
        return Ok(std::mem::replace(buf, rest));
    }
    let mut body = std::mem::take(buf);
    body.reserve_exact(len - body.len());
    let mut limited = stream.take((len - body.len()) as u64);
    limited.read_to_end(&mut body).await?;
    if body.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the body ended early",
        ));
    }
    Ok(body)
}

/// A response's body: static bytes (an embedded file) are written as they are.
#[derive(Debug)]
pub(crate) enum Body {
    Static(&'static [u8]),
    Owned(Vec<u8>),
}

impl Body {
    fn bytes(&self) -> &[u8] {
        match self {
            Body::Static(b) => b,
            Body::Owned(b) => b,
        }
    }
}

/// One response.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
    /// The connection must close after it (whatever the client asked).
    pub close: bool,
}

impl Response {
    /// A response with a body of `content_type`.
    pub fn new(status: u16, content_type: &str, body: Body) -> Response {
        Response {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body,
            close: false,
        }
    }

    /// A short plain-text response (errors, `ok`).
    pub fn text(status: u16, text: &str) -> Response {
        let mut body = text.as_bytes().to_vec();
        body.push(b'\n');
        Response::new(status, "text/plain; charset=utf-8", Body::Owned(body))
    }

    /// A JSON response.
    pub fn json(status: u16, body: Vec<u8>) -> Response {
        Response::new(status, "application/json", Body::Owned(body))
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// Closes the connection after this response.
    pub fn closing(mut self) -> Response {
        self.close = true;
        self
    }

    /// The status line and headers, security headers and `Content-Length` included.
    fn head(&self, keep_alive: bool) -> Vec<u8> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in SECURITY_HEADERS {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", self.body.bytes().len()));
        head.push_str("Cache-Control: no-cache\r\n");
        if !keep_alive {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// Writes the response (without its body when `head_only`, for `HEAD`).
    pub async fn write<S: AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
        keep_alive: bool,
        head_only: bool,
    ) -> io::Result<()> {
        let head = self.head(keep_alive);
        let body = self.body.bytes();
        if head_only {
            stream.write_all(&head).await?;
        } else if body.len() <= 16 * 1024 {
            // One write for small responses.
            let mut all = head;
            all.extend_from_slice(body);
            stream.write_all(&all).await?;
        } else {
            stream.write_all(&head).await?;
            stream.write_all(body).await?;
        }
        stream.flush().await
    }
}

/// Writes the head of a `101 Switching Protocols` with the security headers and `extra`.
pub(crate) fn switching_protocols(extra: &[(&str, &str)]) -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 101 Switching Protocols\r\n");
    for (name, value) in SECURITY_HEADERS.iter().chain(extra) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        421 => "Misdirected Request",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn head_of(bytes: &[u8]) -> (Result<RequestHead, HeadError>, Vec<u8>) {
        let mut stream = bytes;
        let mut buf = Vec::new();
        let head = read_head(&mut stream, &mut buf).await;
        (head, buf)
    }

    #[tokio::test]
    async fn pipelined_requests_keep_what_follows() {
        let (head, rest) =
            head_of(b"POST /rpc?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\n\r\n")
                .await;
        let head = head.expect("parsed");
        assert_eq!((head.method.as_str(), head.path()), ("POST", "/rpc"));
        assert_eq!(head.body_length().ok(), Some(2));
        assert!(head.keep_alive());
        assert_eq!(rest, b"{}GET / HTTP/1.1\r\n\r\n");
    }

    #[tokio::test]
    async fn bad_heads_are_refused() {
        assert!(matches!(head_of(b"").await.0, Err(HeadError::Closed)));
        assert!(matches!(
            head_of(b"GET / HT").await.0,
            Err(HeadError::Closed)
        ));
        assert!(matches!(
            head_of(b"\x16\x03\x01junk\r\n\r\n").await.0,
            Err(HeadError::Malformed)
        ));
        let big = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert!(matches!(
            head_of(big.as_bytes()).await.0,
            Err(HeadError::TooLarge)
        ));
        let (head, _) =
            head_of(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").await;
        assert_eq!(
            head.expect("parsed").body_length(),
            Err(BodyError::BadLength)
        );
        let (head, _) = head_of(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").await;
        assert_eq!(head.expect("parsed").body_length(), Err(BodyError::Chunked));
        let (head, _) = head_of(b"GET / HTTP/1.0\r\n\r\n").await;
        assert!(!head.expect("parsed").keep_alive());
    }

    #[test]
    fn every_response_has_the_security_headers() {
        let text = String::from_utf8(Response::text(404, "no").head(true)).expect("utf-8");
        for (name, value) in SECURITY_HEADERS {
            assert!(text.contains(&format!("{name}: {value}\r\n")), "{text}");
        }
        let up =
            String::from_utf8(switching_protocols(&[("Upgrade", "websocket")])).expect("utf-8");
        assert!(up.contains("X-Content-Type-Options: nosniff\r\n"));
    }
}
