//! The retry policy every provider shares (SPEC §19): which failures are retried, how
//! long to wait before each retry, and what the server's `retry-after` means.
//!
//! Only failures before the first streamed byte reach this module: a provider's
//! `stream()` returns once the response headers are in, so an error it returns is an HTTP
//! status or a connection that failed before any of the body arrived. Failures of an open
//! stream are never retried (the turn already showed part of the answer).
//!
//! HTTP 408, 429, 500, 502, 503, 504, 529 and a connection failure are retried up to
//! [`MAX_RETRIES`] times. Retry n waits `min(30, 2^(n-1))` s times a random factor in
//! [0.8, 1.2], or the server's `retry-after`; a `retry-after` over [`MAX_RETRY_AFTER`]
//! fails the turn at once. `retry-after` is a number of seconds or an HTTP date
//! ([`super::http_date`]), the time from now until it (none for a date already past), SPEC
//! §17.2. The wait itself (announced, cancellable) belongs to the turn loop.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use super::ProviderError;

/// Retries after the first attempt.
pub const MAX_RETRIES: u32 = 3;
/// HTTP statuses that are retried.
pub const RETRIED_STATUSES: &[u16] = &[408, 429, 500, 502, 503, 504, 529];
/// Longest `retry-after` waited for; a longer one fails the turn at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Longest back-off of the policy's own (before jitter).
const MAX_BACKOFF_SECS: u64 = 30;

/// What to do after a failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryDecision {
    /// Wait this long, then try again; `reason` says why (shown in `provider_retry`).
    Retry { delay: Duration, reason: String },
    /// Give up: the turn fails with the error.
    GiveUp,
}

/// The decision after attempt number `retry` failed with `error` (`retry` = how many
/// retries were made already, so 0 after the first attempt).
pub fn decide(error: &ProviderError, retries_made: u32) -> RetryDecision {
    if retries_made >= MAX_RETRIES {
        return RetryDecision::GiveUp;
    }
    let (reason, server_delay) = match error {
        ProviderError::Http {
            status,
            message,
            retry_after,
        } if RETRIED_STATUSES.contains(status) => {
            (format!("HTTP {status}: {}", clip(message)), *retry_after)
        }
        ProviderError::Request(message) => (format!("connection failed: {}", clip(message)), None),
        _ => return RetryDecision::GiveUp,
    };
    let delay = match server_delay {
        Some(d) if d > MAX_RETRY_AFTER => return RetryDecision::GiveUp,
        Some(d) => d,
        None => backoff(retries_made + 1, jitter()),
    };
    RetryDecision::Retry { delay, reason }
}

/// The policy's wait before retry `n` (1-based) with the random `factor`.
pub fn backoff(n: u32, factor: f64) -> Duration {
    let base = 1u64
        .checked_shl(n.saturating_sub(1))
        .unwrap_or(u64::MAX)
        .min(MAX_BACKOFF_SECS);
    Duration::from_secs_f64(base as f64 * factor)
}

/// A random factor in [0.8, 1.2] (the jitter). The standard library's randomly keyed
/// hasher is the random source: a jitter needs no more than that.
pub fn jitter() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    let unit = (h.finish() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    0.8 + 0.4 * unit
}

/// A `retry-after` header (seconds, possibly fractional, or an HTTP date, read at `now`) or
/// `retry-after-ms`, as a duration. A date already past is no wait. Anything unreadable
/// counts as absent (the policy's own back-off applies).
pub fn parse_retry_after(
    seconds: Option<&str>,
    millis: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = millis.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let seconds = seconds?.trim();
    let Ok(secs) = seconds.parse::<f64>() else {
        let date = super::http_date::parse(seconds, now)?;
        return Some(date.duration_since(now).unwrap_or(Duration::ZERO));
    };
    if secs.is_finite() && secs >= 0.0 {
        // Capped only to stay representable; over 60 s fails the turn anyway.
        Some(Duration::from_secs_f64(secs.min(1e9)))
    } else {
        None
    }
}

/// The `retry-after` of a response's headers, read now.
pub fn retry_after_of(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    parse_retry_after(get("retry-after"), get("retry-after-ms"), SystemTime::now())
}

fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.chars().count() > MAX {
        let mut t: String = s.chars().take(MAX).collect();
        t.push('…');
        t
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            status,
            message: "slow down".into(),
            retry_after,
        }
    }

    #[test]
    fn back_off_doubles_up_to_thirty_seconds() {
        assert_eq!(backoff(1, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(2, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(3, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(6, 1.0), Duration::from_secs(30));
        assert_eq!(backoff(200, 1.0), Duration::from_secs(30));
        assert_eq!(backoff(1, 0.8), Duration::from_millis(800));
        for _ in 0..1000 {
            let j = jitter();
            assert!((0.8..=1.2).contains(&j), "{j}");
        }
    }

    #[test]
    fn which_failures_are_retried() {
        for s in RETRIED_STATUSES {
            assert!(matches!(
                decide(&http(*s, None), 0),
                RetryDecision::Retry { .. }
            ));
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert_eq!(decide(&http(s, None), 0), RetryDecision::GiveUp, "{s}");
        }
        assert!(matches!(
            decide(&ProviderError::Request("refused".into()), 2),
            RetryDecision::Retry { .. }
        ));
        assert_eq!(decide(&http(429, None), 3), RetryDecision::GiveUp);
        assert_eq!(
            decide(&ProviderError::Stream("x".into()), 0),
            RetryDecision::GiveUp
        );
        assert_eq!(
            decide(&ProviderError::Timeout("x".into()), 0),
            RetryDecision::GiveUp
        );
    }

    #[test]
    fn retry_after_is_honoured_up_to_sixty_seconds() {
        let RetryDecision::Retry { delay, reason } =
            decide(&http(529, Some(Duration::from_secs(7))), 1)
        else {
            panic!("not retried")
        };
        assert_eq!(delay, Duration::from_secs(7));
        assert_eq!(reason, "HTTP 529: slow down");
        assert_eq!(
            decide(&http(429, Some(Duration::from_secs(61))), 0),
            RetryDecision::GiveUp
        );
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after(Some("2"), None, now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("0.5"), None, now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after(Some("9"), Some("250"), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after(Some("-1"), None, now), None);
        assert_eq!(parse_retry_after(Some("soon"), None, now), None);
        assert_eq!(parse_retry_after(None, None, now), None);
    }

    #[test]
    fn retry_after_as_an_http_date_is_the_time_until_it() {
        // 2015-10-21 07:28:00 UTC, and 0.25 s before it.
        let date = std::time::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let now = date - Duration::from_millis(250);
        let at = |text: &str, now| parse_retry_after(Some(text), None, now);
        assert_eq!(
            at("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            at("Wed, 21 Oct 2015 07:28:02 GMT", now),
            Some(Duration::from_millis(2250))
        );
        // The obsolete forms too.
        assert_eq!(
            at("Wednesday, 21-Oct-15 07:28:00 GMT", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            at("Wed Oct 21 07:28:00 2015", now),
            Some(Duration::from_millis(250))
        );
        // A date already past: no wait.
        assert_eq!(
            at("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        // Like a number of seconds: up to 60 s waited, beyond that the turn fails.
        let in_60 = at("Wed, 21 Oct 2015 07:29:00 GMT", date).expect("a date");
        assert_eq!(in_60, Duration::from_secs(60));
        assert!(matches!(
            decide(&http(429, Some(in_60)), 0),
            RetryDecision::Retry { delay, .. } if delay == in_60
        ));
        let in_120 = at("Wed, 21 Oct 2015 07:30:00 GMT", date).expect("a date");
        assert_eq!(decide(&http(503, Some(in_120)), 0), RetryDecision::GiveUp);
        // `retry-after-ms` still comes first.
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:30:00 GMT"), Some("5"), date),
            Some(Duration::from_millis(5))
        );
    }
}
