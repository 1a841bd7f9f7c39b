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

/// Whether `endpoint` may receive pushes: an `https://` URL whose host is a name or a public
/// address. A subscriber is any user with `system:read`, and the daemon posts to what it
/// gives: an address on this machine or a private network (`https://10.0.0.1/…`,
/// `https://[::1]/…`) or `localhost` would have the daemon knock on doors its users cannot.
/// `local` (a push service on this machine, for tests) also admits this machine, over
/// `http://` too. A name that resolves to a private address is not caught here.
pub fn endpoint_allowed(endpoint: &str, local: bool) -> bool {
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    let (public, loopback) = match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            let loopback = d == "localhost" || d.ends_with(".localhost");
            (!loopback, loopback)
        }
        Some(url::Host::Ipv4(ip)) => {
            let [a, b, ..] = ip.octets();
            let inner = ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.is_multicast()
                || a == 0
                || (a == 100 && (b & 0xc0) == 64);
            (!inner, ip.is_loopback())
        }
        Some(url::Host::Ipv6(ip)) => {
            let first = ip.segments()[0];
            let inner = ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip.to_ipv4_mapped().is_some();
            (!inner, ip.is_loopback())
        }
        None => return false,
    };
    match url.scheme() {
        "https" => public || (local && loopback),
        "http" => local && loopback,
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
    fn endpoints_are_public_https_or_local_for_tests() {
        assert!(endpoint_allowed(
            "https://fcm.googleapis.com/fcm/send/x",
            false
        ));
        assert!(endpoint_allowed("https://203.0.113.7/push", false));
        for inner in [
            "https://localhost/push",
            "https://127.0.0.1/push",
            "https://10.1.2.3/push",
            "https://192.168.0.9/push",
            "https://172.16.0.1/push",
            "https://169.254.169.254/latest",
            "https://100.64.0.1/push",
            "https://0.0.0.0/push",
            "https://[::1]/push",
            "https://[fd00::1]/push",
            "https://[fe80::1]/push",
            "https://[::ffff:127.0.0.1]/push",
            "http://127.0.0.1:9/push",
            "http://example.com/push",
            "ftp://example.com/push",
            "not a url",
        ] {
            assert!(!endpoint_allowed(inner, false), "{inner}");
        }
        // A push service on this machine, for tests only.
        assert!(endpoint_allowed("http://127.0.0.1:9/push", true));
        assert!(endpoint_allowed("http://localhost/push", true));
        assert!(!endpoint_allowed("http://example.com/push", true));
        assert!(!endpoint_allowed("https://10.1.2.3/push", true));
    }

    #[test]
    fn base64_with_or_without_padding() {
        assert_eq!(decode_b64("AQ=="), Some(vec![1]));
        assert_eq!(decode_b64("AQ"), Some(vec![1]));
        assert_eq!(decode_b64("*"), None);
    }
}
