//! Sessions rest (SPEC §22): the daemon's one timer task that unloads live sessions idle
//! for `limits.session_idle_secs` (read at every tick), and
//! the check that tells the sessions service an upload holds a session.
//!
//! The task also looks at once when the configuration is written, so a smaller setting
//! applies without waiting out the tick of the old one. The work of a tick is bounded: one pass over the live sessions (at most 64), each idle
//! one unloaded as `session/close` would (the sessions service's `rest_idle`). No lock is
//! held across an await here; the task ends when the daemon starts to stop.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::state::Daemon;

/// The shortest and longest time between two looks.
const MIN_TICK: Duration = Duration::from_millis(100);
const MAX_TICK: Duration = Duration::from_secs(15);

/// How often to look for sessions idle for `idle`: a quarter of it, within the bounds, so
/// a session rests at most a quarter (or 15 s) late.
fn tick(idle: Duration) -> Duration {
    (idle / 4).clamp(MIN_TICK, MAX_TICK)
}

/// Lets the sessions service see the daemon's open uploads, then runs the timer until
/// the daemon stops.
pub(crate) fn start(daemon: &Arc<Daemon>) {
    let weak: Weak<Daemon> = Arc::downgrade(daemon);
    daemon.sessions.set_held_check(Box::new(move |live| {
        weak.upgrade()
            .is_some_and(|d| d.uploads.holds(&live.key, live.generation))
    }));
    let weak = Arc::downgrade(daemon);
    let stop = daemon.shutdown.clone();
    // A new setting is looked at when it is written, not a tick later.
    let mut changes = Some(daemon.config.subscribe());
    tokio::spawn(async move {
        loop {
            let Some(idle) = weak.upgrade().map(|d| idle_setting(&d)) else {
                return;
            };
            let changed = async {
                match changes.as_mut() {
                    Some(rx) => {
                        if rx.changed().await.is_err() {
                            // The configuration store is gone: ticks only.
                            changes = None;
                        }
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = tokio::time::sleep(tick(idle)) => {}
                () = changed => {}
            }
            let Some(daemon) = weak.upgrade() else { return };
            let unloaded = daemon.sessions.rest_idle(idle).await;
            if unloaded > 0 {
                tracing::debug!(unloaded, "idle sessions unloaded");
            }
        }
    });
}

fn idle_setting(daemon: &Daemon) -> Duration {
    Duration::from_secs(u64::from(
        daemon.config.current().limits.session_idle_secs.max(1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_four_times_per_idle_period_within_bounds() {
        assert_eq!(tick(Duration::from_secs(1)), Duration::from_millis(250));
        assert_eq!(tick(Duration::from_millis(10)), MIN_TICK);
        assert_eq!(tick(Duration::from_secs(900)), MAX_TICK);
    }
}
