//! The models a provider offers (OpenAI-compatible `GET {base_url}/models`, Anthropic's
//! `GET {base_url}/v1/models`: [`ModelApi`]), with a cache (SPEC §16: 60 s) so `models/list` and `session/configure` do not ask every time.
//!
//! [`ModelCatalog`] keeps one entry per endpoint and key. A successful list is kept for
//! [`LIST_TTL`]; a failure for [`FAILURE_TTL`] only, so a provider that comes back is seen
//! soon. Concurrent lists of one endpoint and key share one fetch (SPEC §17.1): each entry
//! has its own async lock, held across its fetch, so callers that arrive meanwhile wait and
//! then read what it fetched. The map's lock is never held across a request.
//!
//! Error texts never carry credentials (SPEC §17.1): the URL they name has its
//! `user:password@` removed, transport errors are shown without their URL, and the API key
//! is masked wherever the provider's answer quotes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
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

/// Which API a model list is asked of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ModelApi {
    /// `GET {base_url}/models`, bearer key.
    #[default]
    OpenAi,
    /// `GET {base_url}/v1/models`, `x-api-key` and `anthropic-version` (SPEC §19).
    Anthropic,
    /// `GET {base_url}/api/tags`: `models[].name`.
    Ollama,
    /// `GET {base_url}/v1beta/models`, `x-goog-api-key`: `models[].name` without `models/`.
    Gemini,
}

/// One endpoint and key: its last answer, behind the lock its fetch holds.
type Slot = Arc<tokio::sync::Mutex<Option<Entry>>>;

/// A cache of model lists, shared by the daemon.
#[derive(Default)]
pub struct ModelCatalog {
    /// Built on the first fetch: a daemon that never lists models (the offline `echo`
    /// agent) never sets up an HTTP client and its TLS roots.
    client: OnceLock<reqwest::Client>,
    slots: Mutex<HashMap<(ModelApi, String, String), Slot>>,
}

/// Whether `entry` may still be served.
fn fresh(entry: &Entry, now: Instant) -> bool {
    let ttl = if entry.1.is_ok() {
        LIST_TTL
    } else {
        FAILURE_TTL
    };
    now.duration_since(entry.0) < ttl
}

impl ModelCatalog {
    /// The model ids of the endpoint at `base_url`, from the cache while fresh; one fetch
    /// at a time per endpoint and key.
    pub async fn list(&self, base_url: &str, api_key: Option<&str>) -> Result<Vec<String>, String> {
        self.list_api(ModelApi::OpenAi, base_url, api_key).await
    }

    /// The model ids of the `api` endpoint at `base_url`, as [`ModelCatalog::list`] does.
    pub async fn list_api(
        &self,
        api: ModelApi,
        base_url: &str,
        api_key: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let key = (
            api,
            base_url.trim_end_matches('/').to_string(),
            api_key.unwrap_or_default().to_string(),
        );
        let slot = self.slot(&key);
        let mut entry = slot.lock().await;
        if let Some(e) = entry.as_ref().filter(|e| fresh(e, Instant::now())) {
            return e.1.clone();
        }
        // Like a provider's, it follows no redirect (whose target would get the key).
        let client = self
            .client
            .get_or_init(|| super::http::client(FETCH_TIMEOUT).unwrap_or_default());
        let result = fetch_api(client, api, &key.1, api_key).await;
        *entry = Some((Instant::now(), result.clone()));
        result
    }

    /// The slot of one endpoint and key, made on first use. Beyond [`MAX_ENTRIES`] slots,
    /// those neither fresh nor in use are dropped.
    fn slot(&self, key: &(ModelApi, String, String)) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get(key) {
            return Arc::clone(slot);
        }
        if slots.len() >= MAX_ENTRIES {
            let now = Instant::now();
            slots.retain(|_, slot| match slot.try_lock() {
                Ok(entry) => entry.as_ref().is_some_and(|e| fresh(e, now)),
                Err(_) => true, // a fetch is under way
            });
        }
        let slot = Slot::default();
        slots.insert(key.clone(), Arc::clone(&slot));
        slot
    }
}

/// One `GET {base_url}/models`: the `data[].id` of an OpenAI-style answer. An error names
/// the URL without credentials and never quotes the key.
pub async fn fetch(
    client: &reqwest::Client,
    base_url: &str,
    api_key: Option<&str>,
) -> Result<Vec<String>, String> {
    fetch_api(client, ModelApi::OpenAi, base_url, api_key).await
}

/// One model list of `api` at `base_url` (see [`fetch`]).
pub async fn fetch_api(
    client: &reqwest::Client,
    api: ModelApi,
    base_url: &str,
    api_key: Option<&str>,
) -> Result<Vec<String>, String> {
    let base = base_url.trim_end_matches('/');
    let url = match api {
        ModelApi::OpenAi => format!("{base}/models"),
        ModelApi::Anthropic => format!("{base}/v1/models"),
        ModelApi::Ollama => format!("{base}/api/tags"),
        ModelApi::Gemini => format!("{base}/v1beta/models"),
    };
    let shown = super::shown::url(&url);
    let mut req = client.get(&url);
    if api == ModelApi::Anthropic {
        req = req.header("anthropic-version", super::anthropic::API_VERSION);
    }
    if let Some(k) = api_key.filter(|k| !k.is_empty()) {
        req = match api {
            ModelApi::OpenAi | ModelApi::Ollama => req.bearer_auth(k),
            ModelApi::Anthropic => req.header("x-api-key", k),
            ModelApi::Gemini => req.header("x-goog-api-key", k),
        };
    }
    let read = async {
        let mut resp = req
            .send()
            .await
            .map_err(|e| format!("cannot reach {shown}: {}", e.without_url()))?;
        let status = resp.status();
        if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| {
                    let l = super::shown::url(l);
                    format!(" to {}", l.chars().take(200).collect::<String>())
                })
                .unwrap_or_default();
            return Err(format!(
                "{shown} answered with a redirect ({}){to}, which is not followed",
                status.as_u16()
            ));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("{shown}: {}", e.without_url()))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(format!("{shown}: answer larger than {MAX_BODY} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(500).collect();
            return Err(format!(
                "{shown} answered HTTP {}: {}",
                status.as_u16(),
                text.trim()
            ));
        }
        Ok(body)
    };
    let answer = match tokio::time::timeout(FETCH_TIMEOUT, read).await {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "{shown} did not answer within {} s",
            FETCH_TIMEOUT.as_secs()
        )),
    };
    let body = answer.map_err(|e| super::shown::without_key(e, api_key))?;
    parse(&body).ok_or_else(|| format!("{shown}: not a model list"))
}

/// `{"data":[{"id":…},…]}` (or Ollama's `{"models":[{"name":…},…]}`) → the ids, in order.
fn parse(body: &[u8]) -> Option<Vec<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if let Some(models) = v.get("models").and_then(Value::as_array) {
        return Some(
            models
                .iter()
                .filter_map(|m| m.get("name").and_then(Value::as_str))
                .map(|n| n.strip_prefix("models/").unwrap_or(n).to_string())
                .collect(),
        );
    }
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

    #[tokio::test]
    async fn an_unreachable_endpoint_with_credentials_is_named_without_them() {
        let client = reqwest::Client::new();
        // a port nothing listens on (bound, then released)
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let e = fetch(
            &client,
            &format!("http://user:hunter2@127.0.0.1:{port}/v1"),
            Some("sk-topsecret"),
        )
        .await
        .unwrap_err();
        assert!(e.starts_with("cannot reach http://127.0.0.1:"), "{e}");
        assert!(
            !e.contains("hunter2") && !e.contains("user") && !e.contains("sk-"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_redirect_is_named_without_credentials_and_not_followed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            // Answers once: a followed redirect would find nothing there.
            if let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket.read(&mut [0u8; 4096]).await;
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 308 Permanent Redirect\r\n\
                          location: https://bob:pw@elsewhere.example/v1/models\r\n\
                          content-length: 0\r\n\r\n",
                    )
                    .await;
            }
        });
        let client = super::super::http::client(FETCH_TIMEOUT).expect("a client");
        let e = fetch(
            &client,
            &format!("http://user:hunter2@{addr}/v1"),
            Some("k"),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            format!(
                "http://{addr}/v1/models answered with a redirect (308) to \
                 https://elsewhere.example/v1/models, which is not followed"
            )
        );
    }

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
