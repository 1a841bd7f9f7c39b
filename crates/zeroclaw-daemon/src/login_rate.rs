//! Failed logins (SPEC §17.2, §20): a failed `initialize` (no token, a bad `authToken` or
//! `authCode`) and a refused `POST /rpc` bearer each count twice — against the credential
//! presented (its first [`PREFIX_CHARS`] characters) from the peer's source, and against the
//! connection. After [`LIMIT`] failures within [`WINDOW`] of the first, an attempt with
//! that prefix from that source, or any attempt on that connection, is refused until the
//! window has passed. A credential that does not share the failed ones' prefix is never
//! refused for them: a good token still logs in while someone else hammers bad ones.
//!
//! A source is an address, except that all of 127.0.0.0/8 and `::1` are one (loopback:
//! every local user shares them), and an IPv6 address counts by its /64 (one host holds a
//! whole /64). The table is bounded: when full, expired windows are dropped first, then the
//! oldest.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Failures allowed per window.
pub const LIMIT: u32 = 10;
/// The window, from a key's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How much of a presented credential names it in the count.
pub const PREFIX_CHARS: usize = 8;
/// Keys tracked at once.
const MAX_KEYS: usize = 4096;

/// Where an attempt comes from, as counted: loopback is one source, IPv6 one per /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    Loopback,
    V4(Ipv4Addr),
    V6Net(u64),
}

impl Source {
    fn of(ip: IpAddr) -> Source {
        let ip = ip.to_canonical();
        if ip.is_loopback() {
            return Source::Loopback;
        }
        match ip {
            IpAddr::V4(v4) => Source::V4(v4),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) >> 64;
                Source::V6Net(u64::try_from(bits).unwrap_or(u64::MAX))
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A credential's prefix from a source (`""` when none was presented).
    Presented { source: Source, prefix: String },
    /// One connection's attempts, whatever they presented.
    Connection(u64),
}

/// One login attempt: who, with what, on which connection.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    pub ip: IpAddr,
    /// The token or code presented, if any.
    pub credential: Option<&'a str>,
    /// The connection it came on, when it can try again on it (a WebSocket).
    pub conn: Option<u64>,
}

impl Attempt<'_> {
    fn keys(&self) -> Vec<Key> {
        let prefix: String = self
            .credential
            .unwrap_or("")
            .chars()
            .take(PREFIX_CHARS)
            .collect();
        let presented = Key::Presented {
            source: Source::of(self.ip),
            prefix,
        };
        std::iter::once(presented)
            .chain(self.conn.map(Key::Connection))
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// Failed login attempts by credential prefix and source, and by connection.
#[derive(Default)]
pub struct FailedLogins {
    table: Mutex<HashMap<Key, Window>>,
}

impl FailedLogins {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Window>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while this attempt's prefix from its source, or its connection, has used
    /// up its failures: how long until it may try again.
    pub fn check(&self, attempt: &Attempt<'_>) -> Result<(), Duration> {
        let now = Instant::now();
        let table = self.table();
        let wait = attempt
            .keys()
            .into_iter()
            .filter_map(|key| match table.get(&key) {
                Some(w) if w.failures >= LIMIT && now < w.start + WINDOW => {
                    Some((w.start + WINDOW).saturating_duration_since(now))
                }
                _ => None,
            })
            .max();
        wait.map_or(Ok(()), Err)
    }

    /// Counts one failed attempt.
    pub fn failed(&self, attempt: &Attempt<'_>) {
        let now = Instant::now();
        let mut table = self.table();
        for key in attempt.keys() {
            if !table.contains_key(&key) && table.len() >= MAX_KEYS {
                table.retain(|_, w| now < w.start + WINDOW);
                if table.len() >= MAX_KEYS
                    && let Some(oldest) = table
                        .iter()
                        .min_by_key(|(_, w)| w.start)
                        .map(|(k, _)| k.clone())
                {
                    table.remove(&oldest);
                }
            }
            let w = table.entry(key).or_insert(Window {
                start: now,
                failures: 0,
            });
            if now >= w.start + WINDOW {
                *w = Window {
                    start: now,
                    failures: 0,
                };
            }
            w.failures = w.failures.saturating_add(1);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from<'a>(ip: &str, credential: Option<&'a str>) -> Attempt<'a> {
        Attempt {
            ip: ip.parse().expect("ip"),
            credential,
            conn: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ten_failures_then_refused_until_the_window_passes() {
        let f = FailedLogins::default();
        let bad = from("192.0.2.1", Some("zct_badbadbad"));
        let other = from("192.0.2.2", Some("zct_badbadbad"));
        for _ in 0..LIMIT {
            assert!(f.check(&bad).is_ok());
            f.failed(&bad);
        }
        let wait = f.check(&bad).expect_err("the 11th is refused");
        assert!(wait <= WINDOW && wait > Duration::from_secs(59));
        assert!(f.check(&other).is_ok(), "other addresses are not affected");
        tokio::time::advance(WINDOW).await;
        assert!(f.check(&bad).is_ok());
        f.failed(&bad);
        assert!(f.check(&bad).is_ok(), "a new window");
    }

    #[tokio::test(start_paused = true)]
    async fn another_credential_is_not_refused_for_the_failures() {
        let f = FailedLogins::default();
        for _ in 0..LIMIT {
            f.failed(&from("127.0.0.1", Some("zct_guessing")));
        }
        assert!(f.check(&from("127.0.0.1", Some("zct_guess-2"))).is_err());
        assert!(f.check(&from("127.0.0.1", Some("zct_0123456789"))).is_ok());
        assert!(f.check(&from("127.0.0.1", None)).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn loopback_is_one_source_and_ipv6_counts_by_its_64() {
        let f = FailedLogins::default();
        for i in 0..LIMIT {
            f.failed(&from(&format!("127.0.0.{}", i + 2), Some("badtoken")));
        }
        for ip in ["127.9.9.9", "::1", "::ffff:127.0.0.1"] {
            assert!(f.check(&from(ip, Some("badtoken"))).is_err(), "{ip}");
        }
        for i in 0..LIMIT {
            f.failed(&from(&format!("2001:db8::{i}"), Some("badtoken")));
        }
        assert!(
            f.check(&from("2001:db8::ffff:1", Some("badtoken")))
                .is_err()
        );
        assert!(f.check(&from("2001:db8:0:1::1", Some("badtoken"))).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_counted_whatever_it_presents() {
        let f = FailedLogins::default();
        for i in 0..LIMIT {
            let token = format!("guess-{i:04}");
            f.failed(&Attempt {
                ip: "192.0.2.1".parse().expect("ip"),
                credential: Some(&token),
                conn: Some(7),
            });
        }
        let next = Attempt {
            ip: "192.0.2.1".parse().expect("ip"),
            credential: Some("fresh-guess"),
            conn: Some(7),
        };
        assert!(f.check(&next).is_err(), "that connection is done");
        assert!(
            f.check(&Attempt {
                conn: Some(8),
                ..next
            })
            .is_ok()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded() {
        let f = FailedLogins::default();
        for i in 0..(MAX_KEYS as u32 + 10) {
            f.failed(&Attempt {
                ip: IpAddr::from(i.to_be_bytes()),
                credential: None,
                conn: None,
            });
        }
        assert_eq!(f.len(), MAX_KEYS);
    }
}
