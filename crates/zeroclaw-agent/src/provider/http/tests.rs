//! The tests of `send` against servers that misbehave as real ones do, of its pieces,
//! and of what it reads from an answer.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::test]
async fn a_body_goes_out_in_copied_pieces_until_its_owner_lets_it_go() {
    use futures_util::StreamExt;

    let bytes = (0..200_000u32)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>();
    let body = Arc::new(RequestBody::from(bytes.clone()));
    let mut pieces = BodyPieces {
        body: Arc::downgrade(&body),
        cursor: Cursor::default(),
    };
    let mut seen = Vec::new();
    while let Some(piece) = pieces.next().await {
        let piece = piece.expect("a piece while the body is owned");
        assert!(piece.len() <= BODY_PIECE);
        seen.extend_from_slice(&piece);
    }
    assert_eq!(seen, bytes, "the pieces make up the body");

    let mut pieces = BodyPieces {
        body: Arc::downgrade(&body),
        cursor: Cursor::default(),
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

/// `send` of an empty JSON object to `url` (given as the base URL too), with a 5 s limit.
async fn post_empty(
    builder: reqwest::RequestBuilder,
    url: &str,
    api_key: Option<&str>,
) -> Result<reqwest::Response, ProviderError> {
    send(
        builder,
        b"{}".to_vec().into(),
        url,
        api_key,
        Duration::from_secs(5),
    )
    .await
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
    let sent = post_empty(reqwest::Client::new().post(&url), &url, None).await;
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
    let sent = post_empty(reqwest::Client::new().post(&url), &url, None)
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
        let sent = post_empty(client.post(&url), &url, None).await;
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
        let sent = post_empty(
            reqwest::Client::new().post(&with_credentials),
            &with_credentials,
            Some(key),
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
        vec![b'x'; 8 << 20].into(),
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
