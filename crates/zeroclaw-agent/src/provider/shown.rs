//! What of a provider's (or an MCP server's) settings an error may show (SPEC §17.1:
//! secrets are masked wherever they are read): its URL without the `user:password@` part,
//! and any text with its key (or `env` values) masked. A turn's failure and its
//! `provider_retry` reasons go to every watcher of the session, and an MCP server's error
//! to whoever reads the session's status: none of them need be allowed to read the
//! configuration.

use futures_util::StreamExt;

use super::ProviderStream;

/// `url` as it may be shown: as given, without the `user:password@` part of its
/// authority (what lies between `://` and the path).
pub fn url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => format!("{}{}", &url[..scheme_end], &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Secrets shorter than this are not masked in a text: they would mask its ordinary
/// words and numbers (an MCP server's `DEBUG = "1"`), and hold little of a secret.
pub const MIN_MASKED: usize = 4;

/// `text` with each of `secrets` (of at least [`MIN_MASKED`] bytes) replaced by `***`,
/// longer ones first, so that a secret containing another is masked whole.
pub fn without_secrets<'a>(text: String, secrets: impl IntoIterator<Item = &'a str>) -> String {
    let mut secrets: Vec<&str> = secrets
        .into_iter()
        .filter(|s| s.len() >= MIN_MASKED)
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
        .into_iter()
        .fold(text, |text, secret| match text.contains(secret) {
            true => text.replace(secret, "***"),
            false => text,
        })
}

/// `text` with the API key masked (a server's error may quote the key it was sent).
pub fn without_key(text: String, api_key: Option<&str>) -> String {
    without_secrets(text, api_key)
}

/// `events` with the key masked in any error among them (an error event of the stream
/// may quote it too).
pub fn events_without_key(events: ProviderStream, api_key: Option<String>) -> ProviderStream {
    match api_key.filter(|k| k.len() >= MIN_MASKED) {
        None => events,
        Some(key) => Box::pin(
            events.map(move |item| item.map_err(|e| e.map_text(|t| without_key(t, Some(&key))))),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            url("http://user:pw@127.0.0.1:9/v1/models"),
            "http://127.0.0.1:9/v1/models"
        );
        assert_eq!(url("https://tok@h/models"), "https://h/models");
        assert_eq!(url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        assert_eq!(url("http://h:9"), "http://h:9", "shown as given");
        assert_eq!(url("weird://u:p@[bad/models"), "weird://[bad/models");
        assert_eq!(url("http://u:p@h:9"), "http://h:9", "nothing added");
        assert_eq!(
            url("http://h/a@b?c@d"),
            "http://h/a@b?c@d",
            "a path's @ is kept"
        );
        assert_eq!(url("http://u@x:p@h/v1"), "http://h/v1");
        assert_eq!(url("not a url @ all"), "not a url @ all");
    }

    #[tokio::test]
    async fn errors_among_events_have_the_key_masked() {
        use super::super::{ProviderError, ProviderEvent};
        let events: ProviderStream = Box::pin(futures_util::stream::iter([
            Ok(ProviderEvent::TextDelta("sk-1 is text, kept".into())),
            Err(ProviderError::Api("key sk-1 revoked".into())),
        ]));
        let seen: Vec<_> = events_without_key(events, Some("sk-1".into()))
            .collect()
            .await;
        assert_eq!(
            seen,
            [
                Ok(ProviderEvent::TextDelta("sk-1 is text, kept".into())),
                Err(ProviderError::Api("key *** revoked".into())),
            ]
        );
    }

    #[test]
    fn keys_are_masked() {
        assert_eq!(
            without_key("bad key sk-1 given, sk-1".into(), Some("sk-1")),
            "bad key *** given, ***"
        );
        assert_eq!(without_key("x".into(), Some("")), "x");
        assert_eq!(
            without_key("a key: k".into(), Some("k")),
            "a key: k",
            "too short"
        );
        assert_eq!(
            without_secrets(
                "ghp_TOPSECRET, ghp_x, 1".into(),
                ["1", "ghp_", "ghp_TOPSECRET"]
            ),
            "***, ***x, 1"
        );
        assert_eq!(without_key("x".into(), None), "x");
    }
}
