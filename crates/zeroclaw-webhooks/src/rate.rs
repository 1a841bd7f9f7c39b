//! Each webhook's rate (SPEC §23.1 `rate_per_minute`): a token bucket per webhook name
//! holding at most a minute's deliveries and refilled evenly over the minute. Only names
//! of configured webhooks reach it (an unknown name is refused before), and the map is
//! cleared should it ever hold more than [`MAX_WEBHOOKS`] names.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most webhook names whose buckets are kept.
const MAX_WEBHOOKS: usize = 4096;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of every webhook.
#[derive(Default)]
pub struct Rates {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Rates {
    /// Takes one delivery of `name` at `per_minute`, or says how long until one is free.
    pub fn take(&self, name: &str, per_minute: u32, now: Instant) -> Result<(), Duration> {
        let capacity = f64::from(per_minute.max(1));
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_WEBHOOKS && !buckets.contains_key(name) {
            buckets.clear();
        }
        let bucket = buckets.entry(name.to_owned()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let per_sec = capacity / 60.0;
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_of_deliveries_then_refills() {
        let rates = Rates::default();
        let t = Instant::now();
        for _ in 0..3 {
            assert!(rates.take("w", 3, t).is_ok());
        }
        let wait = rates.take("w", 3, t).expect_err("over the rate");
        assert!(wait <= Duration::from_secs(20), "{wait:?}");
        assert!(rates.take("other", 3, t).is_ok());
        assert!(rates.take("w", 3, t + Duration::from_secs(20)).is_ok());
    }
}
