//! HTTP dates (RFC 9110, section 5.6.7), as a `retry-after` header may carry one (SPEC §17.2):
//! the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms
//! a recipient must still accept, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and C's
//! asctime (`Sun Nov  6 08:49:37 1994`). Anything else, or a date that does not exist
//! (31 April, hour 24), is not a date.
//!
//! Written here rather than taken from a crate: it is a few dozen lines with no state, and
//! no crate for it is in the workspace's lock file.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A date's parts as written: year, month (1–12), day, hour, minute, second.
type Parts = (i64, u32, u32, u32, u32, u32);

/// The instant `text` names, or `None` when it is no HTTP date. `now` resolves the two-digit
/// year of the RFC 850 form (a year more than 50 years ahead means the century before).
pub fn parse(text: &str, now: SystemTime) -> Option<SystemTime> {
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    let (year, month, day, hour, minute, second) = match words.as_slice() {
        [wd, day, month, year, time, "GMT"] if is_day(wd.strip_suffix(',')?, &DAYS) => {
            let (h, m, s) = time_of(time)?;
            (
                four_digits(year)?,
                month_of(month)?,
                two_digits(day)?,
                h,
                m,
                s,
            )
        }
        [wd, date, time, "GMT"] if is_day(wd.strip_suffix(',')?, &LONG_DAYS) => {
            let mut it = date.split('-');
            let (day, month, year) = (it.next()?, it.next()?, it.next()?);
            if it.next().is_some() {
                return None;
            }
            let (h, m, s) = time_of(time)?;
            let year = full_year(two_digits(year)?, now);
            (year, month_of(month)?, two_digits(day)?, h, m, s)
        }
        [wd, month, day, time, year] if is_day(wd, &DAYS) => {
            // The day is one or two digits (space-padded, which splitting removed).
            if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (h, m, s) = time_of(time)?;
            let day = day.parse().ok()?;
            (four_digits(year)?, month_of(month)?, day, h, m, s)
        }
        _ => return None,
    };
    instant((year, month, day, hour, minute, second))
}

fn is_day(word: &str, names: &[&str; 7]) -> bool {
    names.contains(&word)
}

fn month_of(word: &str) -> Option<u32> {
    MONTHS.iter().position(|m| *m == word).map(|i| i as u32 + 1)
}

fn digits(word: &str, n: usize) -> Option<u32> {
    if word.len() != n || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

fn two_digits(word: &str) -> Option<u32> {
    digits(word, 2)
}

fn four_digits(word: &str) -> Option<i64> {
    digits(word, 4).map(i64::from)
}

/// `HH:MM:SS`.
fn time_of(word: &str) -> Option<(u32, u32, u32)> {
    let mut it = word.split(':');
    let t = (
        two_digits(it.next()?)?,
        two_digits(it.next()?)?,
        two_digits(it.next()?)?,
    );
    it.next().is_none().then_some(t)
}

/// The year a two-digit RFC 850 year means at `now` (RFC 9110, section 5.6.7).
fn full_year(yy: u32, now: SystemTime) -> i64 {
    let this_year = civil_year(now);
    let mut year = this_year - this_year.rem_euclid(100) + i64::from(yy);
    if year > this_year + 50 {
        year -= 100;
    }
    year
}

/// The calendar year (UTC) of `t`.
fn civil_year(t: SystemTime) -> i64 {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut year = 1970 + secs / 31_556_952;
    // The estimate is at most one off at either side.
    while days_from_civil(year, 1, 1) * 86_400 > secs {
        year -= 1;
    }
    while days_from_civil(year + 1, 1, 1) * 86_400 <= secs {
        year += 1;
    }
    year
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The instant of checked `parts` (a leap second counts as the second after it); `None`
/// for a date that does not exist or one before 1970.
fn instant((year, month, day, hour, minute, second): Parts) -> Option<SystemTime> {
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400
        + i64::from(hour) * 3600
        + i64::from(minute) * 60
        + i64::from(second);
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 2026-12-06 22:00:00 UTC.
    const NOW: u64 = 1_796_594_400;

    #[test]
    fn the_three_forms_name_the_same_instant() {
        let now = at(NOW);
        let want = Some(at(784_111_777)); // 1994-11-06 08:49:37 UTC
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT", now), want);
        assert_eq!(parse("Sunday, 06-Nov-94 08:49:37 GMT", now), want);
        assert_eq!(parse("Sun Nov  6 08:49:37 1994", now), want);
        assert_eq!(parse("  Sun, 06 Nov 1994 08:49:37 GMT ", now), want);
    }

    #[test]
    fn dates_around_the_calendar_s_edges() {
        let now = at(NOW);
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT", now), Some(at(0)));
        assert_eq!(
            parse("Sun, 06 Dec 2026 22:00:00 GMT", now),
            Some(at(NOW)),
            "now"
        );
        assert_eq!(
            parse("Tue, 29 Feb 2028 12:00:00 GMT", now),
            Some(at(1_835_438_400))
        );
        assert_eq!(
            parse("Wed, 01 Mar 2000 00:00:00 GMT", now),
            Some(at(951_868_800))
        );
        // Two-digit years: at most 50 years ahead, else the century before.
        assert_eq!(
            parse("Saturday, 01-Jan-50 00:00:00 GMT", now),
            Some(at(2_524_608_000))
        );
        assert_eq!(
            parse("Tuesday, 01-Jan-80 00:00:00 GMT", now),
            Some(at(315_532_800))
        );
        assert_eq!(civil_year(at(NOW)), 2026);
        assert_eq!(civil_year(at(1_798_761_599)), 2026); // 2026-12-31 23:59:59
        assert_eq!(civil_year(at(1_798_761_600)), 2027);
    }

    #[test]
    fn what_is_no_date() {
        let now = at(NOW);
        for bad in [
            "",
            "120",
            "Sun, 31 Apr 2026 08:00:00 GMT",
            "Sun, 29 Feb 2027 08:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37 +0000",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 006 08:49:37 1994",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(bad, now), None, "{bad:?}");
        }
    }
}
