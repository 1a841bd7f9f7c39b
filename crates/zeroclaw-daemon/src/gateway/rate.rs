//! Failed logins per remote address (SPEC §20): a failed `initialize` (bad `authToken` or
//! `authCode`) and a refused `POST /rpc` bearer each count against the peer's address; after
//! [`LIMIT`] failures within [`WINDOW`] of the first, every attempt from that address is
//! refused — even one with a good credential — until the window has passed. The table is
//! bounded: when full, expired windows are dropped first, then the oldest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Failures allowed per window.
pub const LIMIT: u32 = 10;
/// The window, from an address's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at once.
const MAX_ADDRESSES: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// Failed login attempts by address.
#[derive(Default)]
pub struct FailedLogins {
    table: Mutex<HashMap<IpAddr, Window>>,
}

impl FailedLogins {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Window>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while `ip` has used up its failures: how long until it may try again.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let table = self.table();
        match table.get(&ip) {
            Some(w) if w.failures >= LIMIT && now < w.start + WINDOW => {
                Err((w.start + WINDOW).saturating_duration_since(now))
            }
            _ => Ok(()),
        }
    }

    /// Counts one failed attempt from `ip`.
    pub fn failed(&self, ip: IpAddr) {
        let now = Instant::now();
        let mut table = self.table();
        if !table.contains_key(&ip) && table.len() >= MAX_ADDRESSES {
            table.retain(|_, w| now < w.start + WINDOW);
            if table.len() >= MAX_ADDRESSES
                && let Some(oldest) = table.iter().min_by_key(|(_, w)| w.start).map(|(ip, _)| *ip)
            {
                table.remove(&oldest);
            }
        }
        let w = table.entry(ip).or_insert(Window {
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

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn ten_failures_then_refused_until_the_window_passes() {
        let f = FailedLogins::default();
        let ip: IpAddr = "192.0.2.1".parse().expect("ip");
        let other: IpAddr = "192.0.2.2".parse().expect("ip");
        for _ in 0..LIMIT {
            assert!(f.check(ip).is_ok());
            f.failed(ip);
        }
        let wait = f.check(ip).expect_err("the 11th is refused");
        assert!(wait <= WINDOW && wait > Duration::from_secs(59));
        assert!(f.check(other).is_ok(), "other addresses are not affected");
        tokio::time::advance(WINDOW).await;
        assert!(f.check(ip).is_ok());
        f.failed(ip);
        assert!(f.check(ip).is_ok(), "a new window");
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded() {
        let f = FailedLogins::default();
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            f.failed(IpAddr::from(i.to_be_bytes()));
        }
        assert_eq!(f.len(), MAX_ADDRESSES);
    }
}
