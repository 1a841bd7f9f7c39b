//! A delivery's signature (SPEC §23.1): HMAC-SHA256 of the raw body under the webhook's
//! secret, in one of three header forms —
//!
//! - GitHub: `X-Hub-Signature-256: sha256=HEX` over the body;
//! - Standard Webhooks: `webhook-signature: v1,BASE64` (several, space-separated, any may
//!   match) over `ID.TIMESTAMP.BODY`, with `webhook-id` and `webhook-timestamp` (Unix
//!   seconds, within 5 minutes of now); a secret written `whsec_BASE64` is the decoded key;
//! - zeroclaw: `X-Zeroclaw-Signature: sha256=HEX` over the body.
//!
//! Every comparison is constant-time (`hmac`'s `verify_slice`). [`verify`] does the same work
//! whatever it is given — a caller checks an unknown webhook under a stand-in secret — so
//! an unknown name and a bad signature cannot be told apart by what they cost.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How far a Standard Webhooks timestamp may be from now, in seconds.
pub const TIMESTAMP_TOLERANCE_SECS: i64 = 5 * 60;

/// Why a delivery's signature was not accepted (all of them answer 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadSignature {
    /// None of the three header forms was present.
    Absent,
    /// A signature header was present and did not match.
    Mismatch,
    /// `webhook-timestamp` is missing, unreadable or more than 5 minutes from now.
    Stale,
}

impl std::fmt::Display for BadSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadSignature::Absent => "no signature header",
            BadSignature::Mismatch => "the signature does not match",
            BadSignature::Stale => "webhook-timestamp is missing or more than 5 minutes off",
        })
    }
}

/// The key bytes of a secret: `whsec_BASE64` decoded (Standard Webhooks), else the
/// secret's own bytes.
pub fn key_bytes(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix("whsec_")
        .and_then(|b| STANDARD.decode(b).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

fn mac(key: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length: this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC keys of any length"))
}

/// `sha256=HEX` over `body` under `key`, as GitHub and zeroclaw send it.
pub fn sign_hex(key: &[u8], body: &[u8]) -> String {
    let mut m = mac(key);
    m.update(body);
    format!("sha256={}", hex::encode(m.finalize().into_bytes()))
}

/// `v1,BASE64` over `ID.TIMESTAMP.BODY` under `key` (Standard Webhooks).
pub fn sign_standard(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut m = mac(key);
    m.update(format!("{id}.{timestamp}.").as_bytes());
    m.update(body);
    format!("v1,{}", STANDARD.encode(m.finalize().into_bytes()))
}

/// Checks `sha256=HEX` in constant time.
fn hex_matches(key: &[u8], body: &[u8], header: &str) -> bool {
    let Some(digest) = header
        .trim()
        .strip_prefix("sha256=")
        .and_then(|h| hex::decode(h).ok())
    else {
        return false;
    };
    let mut m = mac(key);
    m.update(body);
    m.verify_slice(&digest).is_ok()
}

/// Checks a Standard Webhooks signature list (`v1,SIG v1,SIG …`) in constant time.
fn standard_matches(key: &[u8], id: &str, timestamp: &str, body: &[u8], header: &str) -> bool {
    let mut m = mac(key);
    m.update(id.as_bytes());
    m.update(b".");
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    let mut found = false;
    // Every listed signature is checked (bounded: at most 8), not only up to a match.
    for candidate in header.split(' ').take(8) {
        let Some(sig) = candidate
            .strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
        else {
            continue;
        };
        found |= m.clone().verify_slice(&sig).is_ok();
    }
    found
}

/// Checks the delivery's signature under `secret`. `header` gives a request header by
/// its lowercase name; `now` is the current Unix time in seconds.
pub fn verify<'a>(
    secret: &str,
    header: impl Fn(&str) -> Option<&'a str>,
    body: &[u8],
    now: i64,
) -> Result<(), BadSignature> {
    let key = key_bytes(secret);
    if let Some(sig) = header("webhook-signature") {
        let id = header("webhook-id").unwrap_or("");
        let stamp = header("webhook-timestamp").unwrap_or("");
        let matches = standard_matches(&key, id, stamp, body, sig);
        let fresh = stamp
            .parse::<i64>()
            .is_ok_and(|t| (now - t).abs() <= TIMESTAMP_TOLERANCE_SECS);
        return match (matches, fresh) {
            (true, true) => Ok(()),
            (true, false) => Err(BadSignature::Stale),
            (false, _) => Err(BadSignature::Mismatch),
        };
    }
    let sig = header("x-hub-signature-256").or_else(|| header("x-zeroclaw-signature"));
    match sig {
        Some(sig) if hex_matches(&key, body, sig) => Ok(()),
        Some(_) => Err(BadSignature::Mismatch),
        None => {
            // The same HMAC as a present signature costs, so absence is not cheaper.
            let _ = hex_matches(&key, body, "sha256=00");
            Err(BadSignature::Absent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_documented_example() {
        // docs.github.com, "Validating webhook deliveries": secret, payload and signature.
        let key = b"It's a Secret to Everybody";
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign_hex(key, b"Hello, World!"), sig);
        let h = |n: &str| (n == "x-hub-signature-256").then_some(sig);
        assert_eq!(
            verify("It's a Secret to Everybody", h, b"Hello, World!", 0),
            Ok(())
        );
        assert_eq!(
            verify("It's a Secret to Everybody", h, b"Hello, World?", 0),
            Err(BadSignature::Mismatch)
        );
    }

    #[test]
    fn standard_webhooks_example() {
        // The Standard Webhooks reference libraries' test vector.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let stamp = 1614265330;
        let body = br#"{"test": 2432232314}"#;
        let sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
        assert_eq!(sign_standard(&key_bytes(secret), id, stamp, body), sig);
        let stamp_s = stamp.to_string();
        let h = |n: &str| match n {
            "webhook-id" => Some(id),
            "webhook-timestamp" => Some(stamp_s.as_str()),
            "webhook-signature" => Some(sig),
            _ => None,
        };
        assert_eq!(verify(secret, h, body, stamp + 10), Ok(()));
        assert_eq!(
            verify(secret, h, body, stamp + 301),
            Err(BadSignature::Stale)
        );
        assert_eq!(
            verify("whsec_AAAA", h, body, stamp),
            Err(BadSignature::Mismatch)
        );
    }

    #[test]
    fn no_header_is_absent() {
        assert_eq!(verify("s", |_| None, b"x", 0), Err(BadSignature::Absent));
    }
}
