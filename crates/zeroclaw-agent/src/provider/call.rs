//! The common end of every HTTP provider's `stream`, written once: present the API key
//! the provider's way, send the request within the first-byte timeout ([`http::send`]),
//! turn the response into events with the provider's own reader, and keep the key out of
//! every error those events carry ([`shown::events_without_key`]).
//!
//! What differs between providers stays with them: the URL, their other headers, the body,
//! and the reader of the stream.

use std::time::Duration;

use super::request_body::RequestBody;
use super::{ProviderError, ProviderStream, http, shown};

/// How a provider presents its API key.
#[derive(Debug, Clone, Copy)]
pub enum KeyHeader {
    /// `authorization: Bearer KEY` (OpenAI-compatible APIs, Ollama behind a gateway).
    Bearer,
    /// A header of its own (`x-api-key`, `x-goog-api-key`).
    Named(&'static str),
}

/// A request ready to go: everything but the key is already on `builder`.
pub struct Call<'a> {
    pub builder: reqwest::RequestBuilder,
    pub body: RequestBody,
    /// Names the server in errors (without its credentials).
    pub base_url: &'a str,
    pub api_key: Option<String>,
    pub key_header: KeyHeader,
    pub first_byte_timeout: Duration,
}

impl Call<'_> {
    /// Sends the request and hands a success to `read`, which turns its body into events.
    pub async fn events(
        self,
        read: impl FnOnce(reqwest::Response) -> ProviderStream + Send,
    ) -> Result<ProviderStream, ProviderError> {
        let builder = match (&self.api_key, self.key_header) {
            (None, _) => self.builder,
            (Some(key), KeyHeader::Bearer) => self.builder.bearer_auth(key),
            (Some(key), KeyHeader::Named(name)) => self.builder.header(name, key),
        };
        let resp = http::send(
            builder,
            self.body,
            self.base_url,
            self.api_key.as_deref(),
            self.first_byte_timeout,
        )
        .await?;
        Ok(shown::events_without_key(read(resp), self.api_key))
    }
}
