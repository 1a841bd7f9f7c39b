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
    body: Vec<u8>,
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
            sent: 0,
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
    if (300..400).contains(&status) {
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
        let message = format!(
            "{base_url} answered with a redirect ({status}){to}: set base_url to the \
             address the API answers at (a request is not sent on)"
        );
        return Err(ProviderError::Config(shown::without_key(message, api_key)));
    }
    if is_web_page(resp.headers()) {
        // A `base_url` naming a web application (a chat UI serves its page at any path)
        // rather than its API: no model streams HTML, and the stream decoders would only
        // see a stream that ended without an event.
        let page = read_capped(resp, WEB_PAGE_READ, limit).await;
        let title = page_title(&page)
            .map(|t| format!(" (\"{t}\")"))
            .unwrap_or_default();
        let message = format!(
            "{base_url} answered with a web page{title}, not a model's stream: \
             is base_url the address of its API?"
        );
        return Err(ProviderError::Config(shown::without_key(message, api_key)));
    }
    Ok(resp)
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
    body: Weak<Vec<u8>>,
    sent: usize,
}

impl futures_util::Stream for BodyPieces {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(body) = self.body.upgrade() else {
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the request was given up before it was sent",
            ))));
        };
        let rest = body.get(self.sent..).unwrap_or_default();
        if rest.is_empty() {
            return Poll::Ready(None);
        }
        let piece = Bytes::copy_from_slice(&rest[..rest.len().min(BODY_PIECE)]);
        self.sent += piece.len();
        Poll::Ready(Some(Ok(piece)))
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
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn a_body_goes_out_in_copied_pieces_until_its_owner_lets_it_go() {
        use futures_util::StreamExt;

        let body = Arc::new(
            (0..200_000u32)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<u8>>(),
        );
        let mut pieces = BodyPieces {
            body: Arc::downgrade(&body),
            sent: 0,
        };
        let mut seen = Vec::new();
        while let Some(piece) = pieces.next().await {
            let piece = piece.expect("a piece while the body is owned");
            assert!(piece.len() <= BODY_PIECE);
            seen.extend_from_slice(&piece);
        }
        assert_eq!(seen, *body, "the pieces make up the body");

        let mut pieces = BodyPieces {
            body: Arc::downgrade(&body),
            sent: 0,
        };
        let first = pieces.next().await.expect("a piece").expect("owned");
        drop(body);
        assert!(
            matches!(pieces.next().await, Some(Err(_))),
            "the rest of a body let go is an error"
        );
        assert_eq!(
            first.len(),
            BODY_PIECE,
            "a piece outlives the body: it is a copy"
        );
    }

    #[test]
    fn error_message_extraction() {
        assert_eq!(error_message(r#"{"error":{"message":"boom"}}"#), "boom");
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_message(r#"{"error":"bad"}"#), "bad");
        assert_eq!(error_message("plain text"), "plain text");
        assert_eq!(error_message(""), "(empty body)");
    }

    /// A server that answers every request with status 200, `content_type` and `body`.
    async fn answering(content_type: &str, body: &str) -> String {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}");
        answering_with(&head, body).await
    }

    /// A server that answers every request with `head` (status line and headers) and
    /// `body`.
    async fn answering_with(head: &str, body: &str) -> String {
        let response = format!("{head}\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let response = response.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let _ = socket.read(&mut buf).await;
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn a_web_page_is_a_configuration_error_naming_the_page() {
        let url = answering(
            "Text/HTML; charset=utf-8",
            "<!doctype html><html><head><TITLE>\n  Chat  UI\n</TITLE></head></html>\n",
        )
        .await;
        let sent = send(
            reqwest::Client::new().post(&url),
            b"{}".to_vec(),
            &url,
            None,
            Duration::from_secs(5),
        )
        .await;
        match sent {
            Err(ProviderError::Config(message)) => assert_eq!(
                message,
                format!(
                    "{url} answered with a web page (\"Chat UI\"), not a model's stream: \
                     is base_url the address of its API?"
                )
            ),
            other => panic!("expected a configuration error, got {other:?}"),
        }
        let decision = super::super::retry::decide(&ProviderError::Config(String::new()), 0);
        assert!(matches!(
            decision,
            super::super::retry::RetryDecision::GiveUp
        ));
    }

    #[tokio::test]
    async fn a_stream_of_another_type_is_read_as_a_stream() {
        let url = answering("text/plain", "hello").await;
        let sent = send(
            reqwest::Client::new().post(&url),
            b"{}".to_vec(),
            &url,
            None,
            Duration::from_secs(5),
        )
        .await
        .expect("a success");
        assert_eq!(sent.text().await.expect("its body"), "hello");
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed_but_named() {
        for status in [
            "301 Moved Permanently",
            "307 Temporary Redirect",
            "308 Permanent Redirect",
        ] {
            // Where it points answers too: a followed redirect would succeed.
            let there = answering("text/event-stream", "data: [DONE]\n\n").await;
            let head = format!("HTTP/1.1 {status}\r\nlocation: {there}/chat/completions");
            let url = answering_with(&head, "").await;
            let client = client(Duration::from_secs(5)).expect("a client");
            let sent = send(
                client.post(&url),
                b"{}".to_vec(),
                &url,
                None,
                Duration::from_secs(5),
            )
            .await;
            let code = &status[..3];
            match sent {
                Err(ProviderError::Config(message)) => assert_eq!(
                    message,
                    format!(
                        "{url} answered with a redirect ({code}) to {there}/chat/completions: \
                         set base_url to the address the API answers at (a request is not \
                         sent on)"
                    )
                ),
                other => panic!("{status}: expected a configuration error, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn errors_name_the_server_without_credentials_and_never_quote_the_key() {
        let key = "sk-TOPSECRET";
        let refusing = answering_with(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json",
            r#"{"error":{"message":"the key sk-TOPSECRET is not valid"}}"#,
        )
        .await;
        let page = answering("text/html", "<title>Log in</title>").await;
        for server in [refusing, page] {
            let with_credentials = server.replace("http://", "http://alice:s3cret@");
            let sent = send(
                reqwest::Client::new().post(&with_credentials),
                b"{}".to_vec(),
                &with_credentials,
                Some(key),
                Duration::from_secs(5),
            )
            .await;
            let message = match sent {
                Err(e) => e.to_string(),
                Ok(r) => panic!("expected an error, got {r:?}"),
            };
            assert!(
                !message.contains("s3cret") && !message.contains(key),
                "{message}"
            );
            assert!(
                message.contains("the key *** is not valid")
                    || message.contains(&format!("{server} answered with a web page")),
                "{message}"
            );
        }
    }

    #[test]
    fn page_titles() {
        assert_eq!(page_title("<title>A</title>").as_deref(), Some("A"));
        assert_eq!(
            page_title("<title lang=en> x  y </title>").as_deref(),
            Some("x y")
        );
        assert_eq!(page_title("<title></title>"), None);
        assert_eq!(page_title("<html>no title"), None);
        assert_eq!(page_title("<title>unclosed"), None);
        assert_eq!(
            page_title(&format!("<title>{}</title>", "é".repeat(100))).map(|t| t.chars().count()),
            Some(80)
        );
    }

    /// What nginx does with a body over `client_max_body_size`: it answers 413 once it has
    /// the headers, then reads and discards the rest while its message goes out.
    async fn refusing_proxy(listener: TcpListener, message_after: Duration) {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        let (mut rd, mut wr) = socket.into_split();
        let mut head = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let message = r#"{"error":{"message":"request body over this proxy's limit"}}"#;
        let status = format!(
            "HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n",
            message.len()
        );
        if wr.write_all(status.as_bytes()).await.is_err() {
            return;
        }
        tokio::spawn(async move {
            while let Ok(n) = rd.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
        tokio::time::sleep(message_after).await;
        let _ = wr.write_all(message.as_bytes()).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn an_error_answered_before_the_body_was_read_keeps_its_message() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().expect("addr")
        );
        tokio::spawn(refusing_proxy(listener, Duration::from_millis(200)));
        let started = std::time::Instant::now();
        let sent = send(
            reqwest::Client::new().post(&url),
            vec![b'x'; 8 << 20],
            &url,
            None,
            Duration::from_secs(5),
        )
        .await;
        match sent {
            Err(ProviderError::Http {
                status, message, ..
            }) => {
                assert_eq!(status, 413);
                assert_eq!(message, "request body over this proxy's limit");
            }
            other => panic!("expected the proxy's 413, got {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "read without waiting out the limit"
        );
    }
}
