//! What of a provider's settings an error may show (SPEC §17.1: secrets are masked
//! wherever they are read): its URL without the `user:password@` part, and any text
//! with its key masked. A turn's failure and its `provider_retry` reasons go to every
//! watcher of the session, who need not be allowed to read the configuration.

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

/// `text` with the API key masked (a server's error may quote the key it was sent).
pub fn without_key(text: String, api_key: Option<&str>) -> String {
    match api_key.filter(|k| !k.is_empty()) {
        Some(k) if text.contains(k) => text.replace(k, "***"),
        _ => text,
    }
}

/// `events` with the key masked in any error among them (an error event of the stream
/// may quote it too).
pub fn events_without_key(events: ProviderStream, api_key: Option<String>) -> ProviderStream {
    match api_key.filter(|k| !k.is_empty()) {
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
        assert_eq!(without_key("x".into(), None), "x");
    }
}
