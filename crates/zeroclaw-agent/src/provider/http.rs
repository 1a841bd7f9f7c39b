//! What every HTTP provider does the same way: send a JSON request within the
//! first-byte timeout, and give its bytes back when that wait ends ([`send`]); turn an
//! HTTP error status into [`ProviderError::Http`] with the provider's own message and its
//! `retry-after` (SPEC §19), and read an error body within a size bound (SPEC §17); and
//! refuse a redirect or a web page answered in place of a stream, naming it ([`client`]
//! follows no redirect).

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::ProviderError;
use super::request_body::{Cursor, RequestBody};
use super::retry::retry_after_of;
use super::shown;

/// Bytes of an HTTP error body that are read (the rest is never received).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The piece of a request body handed to the connection at a time.
const BODY_PIECE: usize = 64 * 1024;

/// The HTTP client of a provider: connecting within `connect_timeout`, and following no
/// redirect ([`send`] refuses one, naming where it points). A redirect would either drop
/// the request's body and method (301, 302, 303) or need the body sent twice (307, 308),
/// and it would carry the provider's key to wherever it points.
pub fn client(connect_timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ProviderError::Config(e.to_string()))
}

/// Sends `builder` with the JSON `body`; a response with a status under 400 is returned
/// for its body to be streamed. `base_url` names the server in errors (without its
/// credentials), which never quote `api_key`; `limit` bounds the wait for the headers and
/// the reading of an error body.
///
/// The body is held here, not by the connection: the connection is handed copies of it a
/// piece at a time ([`BodyPieces`]). A server that stops reading keeps the connection
/// open after the wait is given up (until the kernel's user timeout closes it), and with
/// it whatever the connection holds; so when this returns, or is dropped, the body is
/// freed whatever became of the connection, and the connection keeps at most a piece.
/// An error answer is read before that, the request's body still sent meanwhile; a
/// success is taken to mean the request was read whole (a model reads all of it first).
pub async fn send(
    builder: reqwest::RequestBuilder,
    body: RequestBody,
    base_url: &str,
    api_key: Option<&str>,
    limit: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let base_url = shown::url(base_url);
    let body = Arc::new(body);
    let builder = builder
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::CONTENT_LENGTH, body.len())
        .body(reqwest::Body::wrap_stream(BodyPieces {
            body: Arc::downgrade(&body),
            cursor: Cursor::default(),
        }));
    let sent = tokio::time::timeout(limit, builder.send()).await;
    let resp = match sent {
        Err(_) => {
            return Err(ProviderError::Timeout(format!(
                "no response from {base_url} within {} s",
                limit.as_secs_f64()
            )));
        }
        Ok(Err(e)) if e.is_timeout() || e.is_connect() => {
            return Err(ProviderError::Request(format!(
                "cannot reach {base_url}: {e}"
            )));
        }
        // A request that cannot be built (a malformed base_url) is not retried.
        Ok(Err(e)) if e.is_builder() => return Err(ProviderError::Config(e.to_string())),
        Ok(Err(e)) => return Err(ProviderError::Request(e.to_string())),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    if status >= 400 {
        let retry_after = retry_after_of(resp.headers());
        // A server may refuse a request before reading all of it (a proxy over its size
        // limit answers 413 at once) and read the rest while its message follows: the
        // body is kept, within `limit`, until that message is read, or the connection
        // would be closed under it.
        let text = read_capped(resp, MAX_ERROR_BODY, limit).await;
        drop(body);
        return Err(ProviderError::Http {
            status,
            message: shown::without_key(error_message(&text), api_key),
            retry_after,
        });
    }
    refuse_what_is_not_a_stream(resp, &base_url, api_key, limit).await
}

/// A success answer that cannot be a model's stream, refused with a message saying what
/// it was: a redirect (none is followed, see [`client`]), or a web page (a `base_url`
/// naming a web application, which serves its page at any path, rather than its API; the
/// stream decoders would only see a stream ending without an event).
async fn refuse_what_is_not_a_stream(
    resp: reqwest::Response,
    base_url: &str,
    api_key: Option<&str>,
    limit: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let message = if resp.status().is_redirection() {
        let to = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| {
                format!(
                    " to {}",
                    shown::url(l).chars().take(200).collect::<String>()
                )
            })
            .unwrap_or_default();
        format!(
            "{base_url} answered with a redirect ({}){to}: set base_url to the address the \
             API answers at (a request is not sent on)",
            resp.status().as_u16()
        )
    } else if is_web_page(resp.headers()) {
        let page = read_capped(resp, WEB_PAGE_READ, limit).await;
        let title = page_title(&page)
            .map(|t| format!(" (\"{t}\")"))
            .unwrap_or_default();
        format!(
            "{base_url} answered with a web page{title}, not a model's stream: is base_url \
             the address of its API?"
        )
    } else {
        return Ok(resp);
    };
    Err(ProviderError::Config(shown::without_key(message, api_key)))
}

/// Bytes of a web page read to find its title.
const WEB_PAGE_READ: usize = 4096;

/// The response is an HTML page.
fn is_web_page(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or_default().trim();
            essence.eq_ignore_ascii_case("text/html")
        })
}

/// The text of a page's `<title>`, whitespace collapsed and at most 80 characters.
fn page_title(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: Vec<&str> = page[start..end].split_whitespace().collect();
    let title: String = title.join(" ").chars().take(80).collect();
    (!title.is_empty()).then_some(title)
}

/// A request body as the connection reads it: copies of [`BODY_PIECE`] bytes of a body
/// that [`send`] owns. Once `send` has let the body go, the rest of it is an error (the
/// connection is then closed as soon as it asks for more).
struct BodyPieces {
    body: Weak<RequestBody>,
    cursor: Cursor,
}

impl futures_util::Stream for BodyPieces {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(body) = self.body.upgrade() else {
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the request was given up before it was sent",
            ))));
        };
        // A spliced answer's piece is read from its file here: a read of the page cache.
        let mut cursor = self.cursor;
        let piece = body.next_piece(&mut cursor, BODY_PIECE);
        self.cursor = cursor;
        Poll::Ready(piece.map(|p| p.map(Bytes::from)))
    }
}

/// At most `cap` bytes of a response body (the connection is dropped after that), read
/// within `limit`; whatever arrived by then.
pub async fn read_capped(mut resp: reqwest::Response, cap: usize, limit: Duration) -> String {
    let mut body: Vec<u8> = Vec::new();
    let read = async {
        while body.len() < cap {
            match resp.chunk().await {
                Ok(Some(piece)) => {
                    let room = cap - body.len();
                    body.extend_from_slice(&piece[..piece.len().min(room)]);
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(limit, read).await;
    String::from_utf8_lossy(&body).into_owned()
}

/// The provider's own message in an error body: `error.message` (OpenAI, Anthropic,
/// Gemini), a string `error` (Ollama), a top-level `message`, else the text itself.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        if let Some(m) = v
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
        {
            return m.to_string();
        }
        if let Some(m) = v.get("error").and_then(Value::as_str) {
            return m.to_string();
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.to_string();
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        "(empty body)".to_string()
    } else {
        trimmed.chars().take(2000).collect()
    }
}

#[cfg(test)]
mod tests;
