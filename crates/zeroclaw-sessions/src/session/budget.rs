//! Budgets of a running turn (SPEC §24.2): the limits in force (the agent's per-turn and
//! per-session tokens and turn cost, the owner's profiles' daily tokens and cost), the cost
//! of each provider call from `[pricing]`, the daily totals in the store, and the pause
//! before a provider call that would pass a budget.
//!
//! "Would pass" is estimated from what is known before the call: a budget is passed when
//! what was used so far, plus what the turn's previous provider call used (the next call is
//! assumed to cost as much; 0 before the turn's first call), is over the limit — or when
//! the limit is reached already. The turn then waits for `raise` (the limit grows by
//! `raiseBy` for the rest of the turn, and the check runs again) or `stop` (the turn ends
//! `cancelled`, reason `budget`); unanswered it stops after `budget_wait_secs`.
//!
//! Layers: used by the turn's host ([`host`](super::host)) and runner; reads the live
//! session's usage and emits on its stream.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use zeroclaw_config::Config;
use zeroclaw_config::schema::Price;
use zeroclaw_protocol::{DecidedBy, Decision, ResolvedReason, UpdateKind};
use zeroclaw_store::{Store, UsageDay};

use super::live::LiveSession;

/// Wait for an answer when `budget_wait_secs` is 0: interactive turns.
pub const INTERACTIVE_WAIT: Duration = Duration::from_secs(120);
/// Wait for an answer when `budget_wait_secs` is 0: turns prompted by a schedule or a
/// webhook (nobody is at the keyboard).
pub const UNATTENDED_WAIT: Duration = Duration::from_secs(3600);

/// Whether a turn prompted by `prompted_by` runs unattended (`schedule:NAME`,
/// `webhook:NAME`).
pub fn unattended(prompted_by: &str) -> bool {
    prompted_by.starts_with("schedule:") || prompted_by.starts_with("webhook:")
}

/// The limits in force; 0 = none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub turn_tokens: f64,
    pub session_tokens: f64,
    pub daily_tokens: f64,
    pub turn_usd: f64,
    pub daily_usd: f64,
}

impl Limits {
    /// The agent's limits and the smallest non-zero daily limits of the owner's
    /// profiles (`user:NAME` → `users.NAME.permission_profiles`).
    pub fn of(config: &Config, agent: &str, owner: &str) -> Limits {
        let mut l = Limits::default();
        if let Some(a) = config.agents.get(agent) {
            l.turn_tokens = a.max_turn_tokens as f64;
            l.session_tokens = a.max_session_tokens as f64;
            l.turn_usd = a.max_turn_usd;
        }
        let user = owner.strip_prefix("user:").unwrap_or(owner);
        if let Some(u) = config.users.get(user) {
            for name in &u.permission_profiles {
                if let Some(p) = config.permission_profiles.get(name) {
                    l.daily_tokens = smallest(l.daily_tokens, p.max_daily_tokens as f64);
                    l.daily_usd = smallest(l.daily_usd, p.max_daily_usd);
                }
            }
        }
        l
    }

    fn any(&self) -> bool {
        self.turn_tokens > 0.0
            || self.session_tokens > 0.0
            || self.daily_tokens > 0.0
            || self.turn_usd > 0.0
            || self.daily_usd > 0.0
    }
}

/// The smaller of two limits where 0 means none.
fn smallest(a: f64, b: f64) -> f64 {
    match (a > 0.0, b > 0.0) {
        (true, true) => a.min(b),
        (true, false) => a,
        _ => b,
    }
}

/// A call's cost in US dollars at `price`: input not read from the cache at
/// `input_per_mtok`, cached input at `cached_input_per_mtok` (or the input price when 0),
/// output at `output_per_mtok`. One division at the end, so round prices give exact
/// figures.
pub fn cost_of(price: &Price, input: u64, output: u64, cached: u64) -> f64 {
    let cached = cached.min(input);
    let cached_price = if price.cached_input_per_mtok > 0.0 {
        price.cached_input_per_mtok
    } else {
        price.input_per_mtok
    };
    let micro = (input - cached) as f64 * price.input_per_mtok
        + cached as f64 * cached_price
        + output as f64 * price.output_per_mtok;
    micro / 1_000_000.0
}

/// Today, UTC, as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    day_of(secs)
}

/// The UTC day of `secs` since the Unix epoch, as `YYYY-MM-DD` (days to civil date,
/// proleptic Gregorian).
pub fn day_of(secs: u64) -> String {
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// What the turn spent so far.
#[derive(Debug, Default)]
struct Spent {
    turn_tokens: f64,
    turn_usd: f64,
    last_tokens: f64,
    last_usd: f64,
}

/// One turn's budgets.
pub struct Gate {
    limits: Mutex<Limits>,
    price: Option<Price>,
    wait: Duration,
    store: Store,
    owner: String,
    agent: String,
    spent: Mutex<Spent>,
    cancel: CancellationToken,
    stopped: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Announces `budget_resolved` when dropped: with the answer once known, else as
/// cancelled (the turn went away while it waited).
struct Resolution<'a> {
    session: &'a LiveSession,
    request_id: String,
    outcome: Option<(Decision, ResolvedReason, Option<f64>, Option<DecidedBy>)>,
}

impl Drop for Resolution<'_> {
    fn drop(&mut self) {
        let (decision, reason, raised_by, decided_by) =
            self.outcome
                .take()
                .unwrap_or((Decision::Stop, ResolvedReason::Cancelled, None, None));
        self.session
            .stream
            .emit_update(&UpdateKind::BudgetResolved {
                request_id: std::mem::take(&mut self.request_id),
                decision,
                reason,
                raised_by,
                decided_by,
            });
    }
}

impl Gate {
    /// The gate of a turn of `session` on `model`, prompted by `prompted_by`.
    pub fn new(
        config: &Config,
        session: &LiveSession,
        model: &str,
        prompted_by: &str,
        store: Store,
        cancel: CancellationToken,
    ) -> Gate {
        let wait_secs = config
            .agents
            .get(&session.agent_alias)
            .map_or(0, |a| a.budget_wait_secs);
        let wait = match (wait_secs, unattended(prompted_by)) {
            (0, true) => UNATTENDED_WAIT,
            (0, false) => INTERACTIVE_WAIT,
            (s, _) => Duration::from_secs(u64::from(s)),
        };
        Gate {
            limits: Mutex::new(Limits::of(config, &session.agent_alias, &session.owner)),
            price: config.pricing.get(model).cloned(),
            wait,
            store,
            owner: session.owner.clone(),
            agent: session.agent_alias.clone(),
            spent: Mutex::new(Spent::default()),
            cancel,
            stopped: AtomicBool::new(false),
        }
    }

    /// Whether a budget stopped the turn.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Counts one provider call: for the turn's budgets, and in the store's daily totals.
    /// Returns its cost when the model has a price.
    pub async fn record(&self, input: u64, output: u64, cached: Option<u64>) -> Option<f64> {
        let cost = self
            .price
            .as_ref()
            .map(|p| cost_of(p, input, output, cached.unwrap_or(0)));
        {
            let mut s = lock(&self.spent);
            let tokens = (input + output) as f64;
            s.turn_tokens += tokens;
            s.last_tokens = tokens;
            s.turn_usd += cost.unwrap_or(0.0);
            s.last_usd = cost.unwrap_or(0.0);
        }
        let row = UsageDay {
            day: today(),
            principal: self.owner.clone(),
            agent: self.agent.clone(),
            input_tokens: input,
            output_tokens: output,
            cost_usd: cost.unwrap_or(0.0),
        };
        if let Err(e) = self.store.add_daily_usage(row).await {
            tracing::warn!(owner = %self.owner, "daily usage not saved: {e}");
        }
        cost
    }

    /// The first budget the next call would pass: `(name, used, limit)`.
    async fn passed(&self, session: &LiveSession) -> Option<(&'static str, f64, f64)> {
        let limits = *lock(&self.limits);
        if !limits.any() {
            return None;
        }
        let (turn_tokens, turn_usd, last_tokens, last_usd) = {
            let s = lock(&self.spent);
            (s.turn_tokens, s.turn_usd, s.last_tokens, s.last_usd)
        };
        let over = |used: f64, next: f64, limit: f64| {
            limit > 0.0 && (used >= limit || used + next > limit)
        };
        if over(turn_tokens, last_tokens, limits.turn_tokens) {
            return Some(("turn_tokens", turn_tokens, limits.turn_tokens));
        }
        let session_tokens = session.usage().session_total as f64;
        if over(session_tokens, last_tokens, limits.session_tokens) {
            return Some(("session_tokens", session_tokens, limits.session_tokens));
        }
        if self.price.is_some() && over(turn_usd, last_usd, limits.turn_usd) {
            return Some(("turn_usd", turn_usd, limits.turn_usd));
        }
        if limits.daily_tokens > 0.0 || limits.daily_usd > 0.0 {
            let (tokens, usd) = match self.store.daily_usage(&today(), &self.owner).await {
                Ok((t, u)) => (t as f64, u),
                Err(e) => {
                    tracing::warn!(owner = %self.owner, "daily usage not read: {e}");
                    (0.0, 0.0)
                }
            };
            if over(tokens, last_tokens, limits.daily_tokens) {
                return Some(("daily_tokens", tokens, limits.daily_tokens));
            }
            if self.price.is_some() && over(usd, last_usd, limits.daily_usd) {
                return Some(("daily_usd", usd, limits.daily_usd));
            }
        }
        None
    }

    /// Before a provider call: `true` to make it, `false` when the turn stops (a `stop`,
    /// no answer in time, or the turn cancelled while it waited).
    pub async fn allows(&self, session: &Arc<LiveSession>) -> bool {
        while let Some((budget, used, limit)) = self.passed(session).await {
            let (guard, rx) = session.budgets.register();
            let _asking = session.rest.ask();
            session.stream.emit_update(&UpdateKind::BudgetRequest {
                request_id: guard.id.clone(),
                budget: budget.to_owned(),
                used,
                limit,
                timeout_secs: self.wait.as_millis().div_ceil(1000) as u64,
            });
            let mut resolution = Resolution {
                session,
                request_id: guard.id.clone(),
                outcome: None,
            };
            let answer = tokio::select! {
                a = tokio::time::timeout(self.wait, rx) => a,
                () = self.cancel.cancelled() => return false,
            };
            match answer {
                Ok(Ok((Some(by), who))) => {
                    resolution.outcome = Some((
                        Decision::Raise,
                        ResolvedReason::Answered,
                        Some(by),
                        Some(who),
                    ));
                    self.raise(budget, by);
                }
                Ok(Ok((None, who))) => {
                    resolution.outcome =
                        Some((Decision::Stop, ResolvedReason::Answered, None, Some(who)));
                    self.stopped.store(true, Ordering::Relaxed);
                    return false;
                }
                _ => {
                    tracing::info!(session = %session.key.session_id, request = %guard.id, budget, "budget request unanswered; the turn stops");
                    resolution.outcome =
                        Some((Decision::Stop, ResolvedReason::Timeout, None, None));
                    self.stopped.store(true, Ordering::Relaxed);
                    return false;
                }
            }
        }
        true
    }

    /// Raises one budget by `by` for the rest of the turn.
    fn raise(&self, budget: &str, by: f64) {
        let mut l = lock(&self.limits);
        let limit = match budget {
            "turn_tokens" => &mut l.turn_tokens,
            "session_tokens" => &mut l.session_tokens,
            "daily_tokens" => &mut l.daily_tokens,
            "turn_usd" => &mut l.turn_usd,
            _ => &mut l.daily_usd,
        };
        *limit += by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_civil_dates() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(951_782_400), "2000-02-29");
        assert_eq!(day_of(1_796_083_199), "2026-11-30");
        assert_eq!(day_of(1_796_083_200), "2026-12-01");
    }

    #[test]
    fn costs_use_one_division() {
        let p = Price {
            input_per_mtok: 2.0,
            output_per_mtok: 8.0,
            cached_input_per_mtok: 0.5,
        };
        assert_eq!(cost_of(&p, 1000, 500, 0), 0.006);
        assert_eq!(cost_of(&p, 1000, 0, 400), (600.0 * 2.0 + 400.0 * 0.5) / 1e6);
        let no_cache_price = Price {
            cached_input_per_mtok: 0.0,
            ..p
        };
        assert_eq!(cost_of(&no_cache_price, 1000, 0, 400), 0.002);
    }

    #[test]
    fn the_smallest_daily_limit_holds() {
        assert_eq!(smallest(0.0, 5.0), 5.0);
        assert_eq!(smallest(7.0, 0.0), 7.0);
        assert_eq!(smallest(7.0, 5.0), 5.0);
        assert!(unattended("schedule:nightly") && unattended("webhook:ci"));
        assert!(!unattended("operator") && !unattended("user:ann"));
    }
}
