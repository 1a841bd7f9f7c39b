//! The models an OpenAI-compatible provider offers (`GET {base_url}/models`), with a
//! cache (SPEC §16: 60 s) so `models/list` and `session/configure` do not ask every time.
//!
//! [`ModelCatalog`] keeps one entry per endpoint and key. A successful list is kept for
//! [`LIST_TTL`]; a failure for [`FAILURE_TTL`] only, so a provider that comes back is seen
//! soon. The cache lock is never held across the request.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a fetched list is served from the cache.
pub const LIST_TTL: Duration = Duration::from_secs(60);
/// How long a failure is remembered.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);
/// How long one `GET /models` may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest `/models` body read.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Entries kept (one per endpoint and key; a daemon has a handful).
const MAX_ENTRIES: usize = 256;

type Entry = (Instant, Result<Vec<String>, String>);

/// A cache of model lists, shared by the daemon.
#[derive(Default)]
pub struct ModelCatalog {
    /// Built on the first fetch: a daemon that never lists models (the offline `echo`
    /// agent) never sets up an HTTP client and its TLS roots.
    client: OnceLock<reqwest::Client>,
    entries: Mutex<HashMap<(String, String), Entry>>,
}

impl ModelCatalog {
    /// The model ids of the endpoint at `base_url`, from the cache while fresh.
    pub async fn list(&self, base_url: &str, api_key: Option<&str>) -> Result<Vec<String>, String> {
        let key = (
            base_url.trim_end_matches('/').to_string(),
            api_key.unwrap_or_default().to_string(),
        );
        let now = Instant::now();
        {
            let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, result)) = entries.get(&key) {
                let ttl = if result.is_ok() {
                    LIST_TTL
                } else {
                    FAILURE_TTL
                };
                if now.duration_since(*at) < ttl {
                    return result.clone();
                }
            }
        }
        let client = self.client.get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(FETCH_TIMEOUT)
                .build()
                .unwrap_or_default()
        });
        let result = fetch(client, &key.0, api_key).await;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (at, _)| now.duration_since(*at) < LIST_TTL);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), result.clone()));
        result
    }
}

/// One `GET {base_url}/models`: the `data[].id` of an OpenAI-style answer.
pub async fn fetch(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
) -> Result<Vec<String>, String> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let mut req = client.get(&url);
    if let Some(k) = api_key.filter(|k| !k.is_empty()) {
        req = req.bearer_auth(k);
    }
    let read = async {
        let mut resp = req
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(format!("{url}: answer larger than {MAX_BODY} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(500).collect();
            return Err(format!(
                "{url} answered HTTP {}: {}",
                status.as_u16(),
                text.trim()
            ));
        }
        Ok(body)
    };
    let body = tokio::time::timeout(FETCH_TIMEOUT, read)
        .await
        .map_err(|_| format!("{url} did not answer within {} s", FETCH_TIMEOUT.as_secs()))??;
    parse(&body).ok_or_else(|| format!("{url}: not an OpenAI model list"))
}

/// `{"data":[{"id":…},…]}` → the ids, in order.
fn parse(body: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let data = v.get("data")?.as_array()?;
    Some(
        data.iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_openai_lists() {
        assert_eq!(
            parse(br#"{"object":"list","data":[{"id":"a"},{"id":"b","owned_by":"x"}]}"#),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(parse(b"[]"), None);
        assert_eq!(parse(b"not json"), None);
    }
}
