//! When a schedule runs (SPEC §24.1): its `cron`, `every` or `at` parsed, and the next
//! run time after a given instant in the schedule's IANA zone.
//!
//! Cron patterns are croner's, evaluated over jiff's zoned times: a local time the zone
//! skips (a DST gap) runs at the first minute after the gap, one it repeats runs once.
//! `every` counts whole periods from the schedule's anchor (its creation or the last
//! change of its timing), so a restart does not shift it.

use std::str::FromStr;

use croner::Cron;
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// The shortest `every`.
pub const MIN_EVERY_SECS: i64 = 60;
/// The longest `every` (a year).
pub const MAX_EVERY_SECS: i64 = 366 * 86_400;

/// A refused field: its wire name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    pub fn new(field: &'static str, message: impl Into<String>) -> Invalid {
        Invalid {
            field,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A schedule's timing.
#[derive(Debug, Clone)]
pub enum When {
    Cron(Box<Cron>),
    /// A period in seconds.
    Every(i64),
    At(Timestamp),
}

/// The cron nicknames SPEC §24.1 names (and their usual synonyms).
const NICKNAMES: &[&str] = &[
    "@hourly",
    "@daily",
    "@midnight",
    "@weekly",
    "@monthly",
    "@yearly",
    "@annually",
];

impl When {
    /// Exactly one of `cron`, `every` and `at`.
    pub fn parse(
        cron: Option<&str>,
        every: Option<&str>,
        at: Option<&str>,
    ) -> Result<When, Invalid> {
        match (cron, every, at) {
            (Some(c), None, None) => parse_cron(c).map(|c| When::Cron(Box::new(c))),
            (None, Some(e), None) => parse_every(e).map(When::Every),
            (None, None, Some(a)) => parse_at(a).map(When::At),
            (None, None, None) => Err(Invalid::new(
                "cron",
                "one of cron, every and at is required",
            )),
            _ => Err(Invalid::new("cron", "give only one of cron, every and at")),
        }
    }

    /// The first run time strictly after `after`, in `tz`; `anchor` is where `every`
    /// counts from. `None`: it does not run again (an `at` that passed).
    pub fn next_after(
        &self,
        after: Timestamp,
        tz: &TimeZone,
        anchor: Timestamp,
    ) -> Option<Timestamp> {
        match self {
            When::Cron(cron) => {
                let zoned = after.to_zoned(tz.clone());
                cron.find_next_occurrence(&zoned, false)
                    .ok()
                    .map(|z| z.timestamp())
            }
            When::Every(secs) => {
                let period = secs.saturating_mul(1000);
                let (a, t) = (anchor.as_millisecond(), after.as_millisecond());
                if t < a {
                    return Timestamp::from_millisecond(a).ok();
                }
                let k = (t - a) / period + 1;
                Timestamp::from_millisecond(a.saturating_add(k.saturating_mul(period))).ok()
            }
            When::At(at) => (*at > after).then_some(*at),
        }
    }
}

/// Five fields (minute hour day-of-month month day-of-week) with ranges, steps, lists
/// and names, or a nickname.
pub fn parse_cron(text: &str) -> Result<Cron, Invalid> {
    let t = text.trim();
    if t.starts_with('@') {
        if !NICKNAMES.contains(&t.to_ascii_lowercase().as_str()) {
            return Err(Invalid::new(
                "cron",
                format!("unknown nickname {t:?}: expected @hourly, @daily, @weekly or @monthly"),
            ));
        }
    } else {
        let n = t.split_whitespace().count();
        if n != 5 {
            return Err(Invalid::new(
                "cron",
                format!(
                    "{t:?} has {n} fields: expected five (minute hour day-of-month month day-of-week)"
                ),
            ));
        }
    }
    Cron::from_str(t).map_err(|e| Invalid::new("cron", format!("{t:?}: {e}")))
}

/// A duration of at least a minute: a number and a unit (`s`, `m`, `h`, `d`), or several
/// such parts (`1h30m`). Seconds.
pub fn parse_every(text: &str) -> Result<i64, Invalid> {
    let bad = || {
        Invalid::new(
            "every",
            format!("{text:?} is not a duration like \"15m\", \"2h\" or \"1h30m\""),
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: i64 = digits.parse().map_err(|_| bad())?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    if total < MIN_EVERY_SECS {
        return Err(Invalid::new(
            "every",
            format!("{text:?} is shorter than the least, 1 minute"),
        ));
    }
    if total > MAX_EVERY_SECS {
        return Err(Invalid::new(
            "every",
            format!("{text:?} is longer than the most, 366 days"),
        ));
    }
    Ok(total)
}

/// An RFC 3339 time with its offset.
pub fn parse_at(text: &str) -> Result<Timestamp, Invalid> {
    Timestamp::from_str(text.trim())
        .map_err(|e| Invalid::new("at", format!("{text:?} is not an RFC 3339 time: {e}")))
}

/// An IANA zone; `None`: the daemon's local zone.
pub fn zone(name: Option<&str>) -> Result<TimeZone, Invalid> {
    match name {
        None => Ok(TimeZone::system()),
        Some(n) => TimeZone::get(n.trim())
            .map_err(|_| Invalid::new("tz", format!("{n:?} is not an IANA time zone name"))),
    }
}

/// The name a schedule's zone is shown by.
pub fn zone_name(name: Option<&str>) -> String {
    match name {
        Some(n) => n.trim().to_owned(),
        None => TimeZone::system().iana_name().unwrap_or("UTC").to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    /// `(cron, zone, after, next)` with `after` and `next` as RFC 3339 instants.
    const TABLE: &[(&str, &str, &str, &str)] = &[
        // Plain: the next 09:00 local, in winter (EST, -05:00).
        (
            "0 9 * * *",
            "America/New_York",
            "2026-01-15T15:00:00Z",
            "2026-01-16T14:00:00Z",
        ),
        // Ranges, steps and lists.
        (
            "*/15 9-17 * * MON-FRI",
            "UTC",
            "2026-03-06T17:50:00Z",
            "2026-03-09T09:00:00Z",
        ),
        (
            "5,35 * * * *",
            "UTC",
            "2026-03-06T10:06:00Z",
            "2026-03-06T10:35:00Z",
        ),
        // Month and day names.
        (
            "0 12 1 JAN,JUL *",
            "UTC",
            "2026-02-01T00:00:00Z",
            "2026-07-01T12:00:00Z",
        ),
        (
            "30 8 * * sun",
            "Europe/Berlin",
            "2026-03-02T00:00:00Z",
            "2026-03-08T07:30:00Z",
        ),
        // Nicknames.
        (
            "@hourly",
            "UTC",
            "2026-03-06T10:06:00Z",
            "2026-03-06T11:00:00Z",
        ),
        (
            "@daily",
            "Europe/Berlin",
            "2026-06-01T12:00:00Z",
            "2026-06-01T22:00:00Z",
        ),
        (
            "@weekly",
            "UTC",
            "2026-03-04T00:00:00Z",
            "2026-03-08T00:00:00Z",
        ),
        (
            "@monthly",
            "UTC",
            "2026-03-04T00:00:00Z",
            "2026-04-01T00:00:00Z",
        ),
        // DST gap, New York: 2026-03-08 02:00 EST jumps to 03:00 EDT, so 02:30 does not
        // exist; it runs at the first minute after the gap, 03:00 EDT (07:00Z).
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-08T05:00:00Z",
            "2026-03-08T07:00:00Z",
        ),
        // ...and the day after at 02:30 EDT as usual.
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-08T08:00:00Z",
            "2026-03-09T06:30:00Z",
        ),
        // DST repeat, New York: 2026-11-01 01:30 happens twice (EDT, then EST): it runs
        // once, at the first (05:30Z)...
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T04:00:00Z",
            "2026-11-01T05:30:00Z",
        ),
        // ...and not at the second (06:30Z): the next run is the next day's.
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:30:00Z",
        ),
        // Berlin: 2026-03-29 02:00 CET jumps to 03:00 CEST; 02:15 runs at 03:00 CEST.
        (
            "15 2 * * *",
            "Europe/Berlin",
            "2026-03-28T23:00:00Z",
            "2026-03-29T01:00:00Z",
        ),
        // Berlin: 2026-10-25 02:15 happens twice (CEST 00:15Z, CET 01:15Z): once.
        (
            "15 2 * * *",
            "Europe/Berlin",
            "2026-10-24T23:00:00Z",
            "2026-10-25T00:15:00Z",
        ),
        (
            "15 2 * * *",
            "Europe/Berlin",
            "2026-10-25T00:15:00Z",
            "2026-10-26T01:15:00Z",
        ),
    ];

    #[test]
    fn next_run_times_follow_the_table() {
        let mut wrong = Vec::new();
        for (cron, tz, after, want) in TABLE {
            let when = When::parse(Some(cron), None, None).expect("a valid pattern");
            let zone = zone(Some(tz)).expect("a known zone");
            let got = when.next_after(ts(after), &zone, ts(after));
            if got != Some(ts(want)) {
                wrong.push(format!(
                    "{cron} in {tz} after {after}: {got:?}, want {want}"
                ));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn every_counts_whole_periods_from_its_anchor() {
        let when = When::parse(None, Some("15m"), None).expect("valid");
        let anchor = ts("2026-03-06T10:00:00Z");
        let tz = TimeZone::UTC;
        assert_eq!(
            when.next_after(anchor, &tz, anchor),
            Some(ts("2026-03-06T10:15:00Z"))
        );
        assert_eq!(
            when.next_after(ts("2026-03-06T11:07:00Z"), &tz, anchor),
            Some(ts("2026-03-06T11:15:00Z"))
        );
        assert_eq!(parse_every("2h"), Ok(7200));
        assert_eq!(parse_every("1h30m"), Ok(5400));
        assert_eq!(parse_every("1d"), Ok(86_400));
    }

    #[test]
    fn at_runs_once() {
        let when = When::parse(None, None, Some("2026-03-06T10:00:00+01:00")).expect("valid");
        let tz = TimeZone::UTC;
        let before = ts("2026-03-06T08:00:00Z");
        assert_eq!(
            when.next_after(before, &tz, before),
            Some(ts("2026-03-06T09:00:00Z"))
        );
        let after = ts("2026-03-06T09:00:00Z");
        assert_eq!(when.next_after(after, &tz, after), None);
    }

    #[test]
    fn bad_timings_name_their_field() {
        let field = |r: Result<When, Invalid>| r.expect_err("refused").field;
        assert_eq!(field(When::parse(Some("* * * *"), None, None)), "cron");
        assert_eq!(field(When::parse(Some("0 0 * * * *"), None, None)), "cron");
        assert_eq!(field(When::parse(Some("61 * * * *"), None, None)), "cron");
        assert_eq!(field(When::parse(Some("@often"), None, None)), "cron");
        assert_eq!(field(When::parse(None, Some("30s"), None)), "every");
        assert_eq!(field(When::parse(None, Some("5 minutes"), None)), "every");
        assert_eq!(field(When::parse(None, Some("m"), None)), "every");
        assert_eq!(field(When::parse(None, None, Some("tomorrow"))), "at");
        assert_eq!(field(When::parse(None, None, None)), "cron");
        assert_eq!(field(When::parse(Some("@daily"), Some("1h"), None)), "cron");
        assert_eq!(zone(Some("Mars/Olympus")).expect_err("unknown").field, "tz");
    }
}
