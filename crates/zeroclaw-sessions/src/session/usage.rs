//! `usage/summary` (SPEC §24.2): the store's daily totals, every principal's for an admin,
//! the caller's own otherwise.

use zeroclaw_config::policy::Principal;
use zeroclaw_store::UsageDay;

use super::budget::day_of;
use super::error::SessionError;
use super::manager::SessionManager;

/// Most rows one answer holds.
pub const MAX_ROWS: usize = 10_000;
/// Days back the summary starts when `since` is not given.
pub const DEFAULT_DAYS: u64 = 30;

/// Whether `s` is a `YYYY-MM-DD` day.
fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

impl SessionManager {
    /// The daily rows from `since` (default: [`DEFAULT_DAYS`] ago) on, with the day used.
    pub async fn usage_summary(
        &self,
        principal: &Principal,
        since: Option<&str>,
    ) -> Result<(String, Vec<UsageDay>), SessionError> {
        let since = match since {
            Some(s) if is_day(s) => s.to_owned(),
            Some(s) => {
                return Err(SessionError::invalid(format!(
                    "since: expected a day as YYYY-MM-DD, found {:?}",
                    s.chars().take(40).collect::<String>()
                )));
            }
            None => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                day_of(now.saturating_sub(DEFAULT_DAYS * 86_400))
            }
        };
        let own = (!principal.admin).then_some(principal.id.as_str());
        let rows = self.store.usage_summary(&since, own, MAX_ROWS).await?;
        Ok((since, rows))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn days() {
        assert!(super::is_day("2026-12-07"));
        assert!(!super::is_day("2026-12-7"));
        assert!(!super::is_day("2026/12/07"));
        assert!(!super::is_day("x"));
    }
}
