//! One Web Push delivery (RFC 8030): the payload sealed for the subscription
//! ([`crate::ece`]), posted to its endpoint with `TTL`, `Urgency`, `Content-Encoding:
//! aes128gcm` and the VAPID `Authorization` ([`crate::vapid`]). A 404 or 410 means the
//! subscription is gone for good.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use zeroclaw_store::PushSubscription;

use crate::vapid::Vapid;

/// How long a push service keeps an undelivered message, in seconds.
pub const TTL_SECS: u64 = 24 * 3600;

/// What became of one push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    Sent,
    /// 404/410: the subscription no longer exists (drop it).
    Gone,
    Failed(String),
}

/// Decodes base64url with or without padding (browsers give either).
pub fn decode_b64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// Whether `endpoint` may receive pushes: `https://`, or `http://` to a loopback host
/// (a push service on this machine).
pub fn endpoint_allowed(endpoint: &str) -> bool {
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

/// Seals `payload` for `sub` and posts it.
pub async fn send(
    http: &reqwest::Client,
    vapid: &Vapid,
    sub: &PushSubscription,
    payload: &[u8],
    urgency: &str,
    now_secs: u64,
) -> Delivery {
    let (Some(p256dh), Some(auth)) = (decode_b64(&sub.p256dh), decode_b64(&sub.auth)) else {
        return Delivery::Failed("the subscription's keys are not base64url".into());
    };
    let body = match crate::ece::seal(&p256dh, &auth, payload) {
        Ok(body) => body,
        Err(e) => return Delivery::Failed(e.to_string()),
    };
    let Some(authorization) = vapid.authorization(&sub.endpoint, now_secs) else {
        return Delivery::Failed("the endpoint is not a URL".into());
    };
    let sent = http
        .post(&sub.endpoint)
        .header("TTL", TTL_SECS.to_string())
        .header("Urgency", urgency)
        .header("Content-Encoding", "aes128gcm")
        .header("Content-Type", "application/octet-stream")
        .header("Authorization", authorization)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => Delivery::Sent,
        Ok(r) if matches!(r.status().as_u16(), 404 | 410) => Delivery::Gone,
        Ok(r) => Delivery::Failed(format!("the push service answered {}", r.status())),
        Err(e) => Delivery::Failed(format!("cannot reach the push service: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_or_loopback() {
        assert!(endpoint_allowed("https://fcm.googleapis.com/fcm/send/x"));
        assert!(endpoint_allowed("http://127.0.0.1:9/push"));
        assert!(endpoint_allowed("http://localhost/push"));
        assert!(!endpoint_allowed("http://example.com/push"));
        assert!(!endpoint_allowed("ftp://example.com/"));
        assert!(!endpoint_allowed("not a url"));
    }

    #[test]
    fn base64_with_or_without_padding() {
        assert_eq!(decode_b64("AQ=="), Some(vec![1]));
        assert_eq!(decode_b64("AQ"), Some(vec![1]));
        assert_eq!(decode_b64("*"), None);
    }
}
