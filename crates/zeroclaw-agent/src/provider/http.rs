//! What every HTTP provider does the same way: send the request within the first-byte
//! timeout, turn an HTTP error status into [`ProviderError::Http`] with the provider's own
//! message and its `retry-after` (SPEC §19), and read an error body within a size bound
//! (SPEC §17).

use std::time::Duration;

use serde_json::Value;

use super::ProviderError;
use super::retry::retry_after_of;

/// Bytes of an HTTP error body that are read (the rest is never received).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// Sends `builder`; a response with a status under 400 is returned for its body to be
/// streamed. `base_url` names the server in errors; `limit` bounds the wait for the
/// headers and the reading of an error body.
pub async fn send(
    builder: reqwest::RequestBuilder,
    base_url: &str,
    limit: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let resp = match tokio::time::timeout(limit, builder.send()).await {
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
        let text = read_capped(resp, MAX_ERROR_BODY, limit).await;
        return Err(ProviderError::Http {
            status,
            message: error_message(&text),
            retry_after,
        });
    }
    Ok(resp)
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
}
