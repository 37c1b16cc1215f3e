//! RFC 3339 timestamps in UTC, for image.json and run records. Written by
//! hand: a calendar crate for a few timestamps is not worth it.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as RFC 3339 in UTC with milliseconds, e.g. `2026-11-29T21:12:55.042Z`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let (date, secs, millis) = civil_utc(t);
    format!("{date}T{}.{millis:03}Z", clock(secs, ':'))
}

pub fn rfc3339_utc_now() -> String {
    rfc3339_utc(SystemTime::now())
}

/// `t` as it starts a run id: `2026-11-29T21-12-55Z` (no `:`, which some
/// file systems and tools reject in names).
pub fn run_id_stamp(t: SystemTime) -> String {
    let (date, secs, _) = civil_utc(t);
    format!("{date}T{}Z", clock(secs, '-'))
}

/// The date as `YYYY-MM-DD`, the second of the day, and the milliseconds.
fn civil_utc(t: SystemTime) -> (String, i64, u32) {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        // Before 1970 (a broken clock): round down to whole seconds.
        Err(e) => (-(e.duration().as_secs_f64().ceil() as i64), 0),
    };
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    (format!("{y:04}-{m:02}-{d:02}"), secs.rem_euclid(86_400), millis)
}

fn clock(s: i64, sep: char) -> String {
    format!("{:02}{sep}{:02}{sep}{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The proleptic Gregorian date of a count of days since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365], from March 1st
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis)
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(at(0, 0)), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century divisible by 400).
        assert_eq!(rfc3339_utc(at(951_782_400, 7)), "2000-02-29T00:00:00.007Z");
        assert_eq!(rfc3339_utc(at(1_795_986_775, 999)), "2026-11-29T21:12:55.999Z");
        assert_eq!(rfc3339_utc(at(4_107_542_399, 0)), "2100-02-28T23:59:59.000Z");
        assert_eq!(run_id_stamp(at(1_795_986_775, 500)), "2026-11-29T21-12-55Z");
    }

    #[test]
    fn before_the_epoch_rounds_down() {
        let t = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(rfc3339_utc(t), "1969-12-31T23:59:58.000Z");
    }

    #[test]
    fn leap_years_and_far_dates() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(at(1_709_164_799), "2024-02-28T23:59:59.000Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59.000Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59.000Z");
    }
}
