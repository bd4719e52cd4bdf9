//! Wall-clock times in a channel's zone, as the forms' date and time pickers send them
//! (`<input type=date>`: `2026-12-01`, `<input type=time>`: `09:30`), to instants and
//! back.
//!
//! The dashboard converts on the server, with the zone database compiled into
//! `chrono-tz`, so the browser's own zone never matters. A local time that does not exist
//! (the clocks skip it when summer time starts) or happens twice (when it ends) is
//! refused with a message that says so and names the instants it could be: the
//! dashboard never guesses which hour someone meant.

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// The date and time fields of an instant in `tz`: `("2026-12-01", "09:30")`, what the
/// pickers show. Seconds are dropped: the pickers take minutes.
pub fn inputs(at: DateTime<Utc>, tz: Tz) -> (String, String) {
    let local = at.with_timezone(&tz);
    (
        local.format("%Y-%m-%d").to_string(),
        local.format("%H:%M").to_string(),
    )
}

/// Parses a date field (`YYYY-MM-DD`).
pub fn parse_date(date: &str) -> Result<NaiveDate, String> {
    let parsed = NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d")
        .map_err(|_| format!("{:?} is not a date: pick one, like 2026-12-01", date.trim()))?;
    // The ledger's years (`airlock_core::time::parse_time`); a calendar a step past
    // chrono's last year would panic.
    if !(1970..=9999).contains(&parsed.year()) {
        return Err(format!(
            "{:?} is outside the years 1970 to 9999: pick a date in them",
            date.trim()
        ));
    }
    Ok(parsed)
}

/// Parses a time field (`HH:MM`, or `HH:MM:SS` as some browsers send it).
pub fn parse_time(time: &str) -> Result<NaiveTime, String> {
    let time = time.trim();
    NaiveTime::parse_from_str(time, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(time, "%H:%M:%S"))
        .map_err(|_| format!("{time:?} is not a time of day: pick one, like 09:30"))
}

/// The instant a date and time fields name in `tz`.
///
/// Both empty is `Ok(None)`: no schedule, so `now`. One without the other is refused,
/// and so is a local time that does not exist or is ambiguous in `tz`.
pub fn parse_local(date: &str, time: &str, tz: Tz) -> Result<Option<DateTime<Utc>>, String> {
    match (date.trim().is_empty(), time.trim().is_empty()) {
        (true, true) => return Ok(None),
        (true, false) => return Err("give a date with the time, or neither for now".into()),
        (false, true) => return Err("give a time with the date, or neither for now".into()),
        (false, false) => {}
    }
    let naive = parse_date(date)?.and_time(parse_time(time)?);
    to_utc(naive, tz).map(Some)
}

/// A wall-clock time in `tz` as an instant, refusing one that does not exist or happens
/// twice.
pub fn to_utc(naive: NaiveDateTime, tz: Tz) -> Result<DateTime<Utc>, String> {
    let shown = naive.format("%Y-%m-%d %H:%M");
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(at) => Ok(at.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, second) => Err(format!(
            "{shown} happens twice in {tz}: the clocks go back that night, so it is first \
             {} ({} UTC) and an hour later {} ({} UTC); pick a time outside that hour",
            first.format("%H:%M %Z"),
            first.with_timezone(&Utc).format("%H:%M"),
            second.format("%H:%M %Z"),
            second.with_timezone(&Utc).format("%H:%M"),
        )),
        LocalResult::None => {
            let (before, after) = gap_around(naive, tz);
            Err(format!(
                "{shown} does not exist in {tz}: the clocks skip from {before} to {after} \
                 that night; pick a time before or after"
            ))
        }
    }
}

/// The wall-clock times on either side of the gap `naive` falls in (`02:00`, `03:00`).
fn gap_around(naive: NaiveDateTime, tz: Tz) -> (String, String) {
    let minute = chrono::Duration::minutes(1);
    let exists = |t: NaiveDateTime| !matches!(tz.from_local_datetime(&t), LocalResult::None);
    // Gaps are at most a few hours; look a day either way at most.
    let mut start = naive;
    for _ in 0..(24 * 60) {
        if exists(start - minute) {
            break;
        }
        start -= minute;
    }
    let mut end = naive;
    for _ in 0..(24 * 60) {
        if exists(end) {
            break;
        }
        end += minute;
    }
    (
        start.format("%H:%M").to_string(),
        end.format("%H:%M").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finding: `/calendar?start=+262142-12-01` panicked a step past chrono's last
    /// year. Dates outside the ledger's years are refused.
    #[test]
    fn dates_outside_the_ledgers_years_are_refused() {
        for far in ["+262142-12-01", "1969-12-31", "10000-01-01"] {
            let err = parse_date(far).unwrap_err();
            assert!(
                err.contains(far.trim_start_matches('+')) || err.contains("not a date"),
                "{err}"
            );
        }
        assert!(parse_date("9999-12-31").is_ok());
    }

    fn tz(name: &str) -> Tz {
        name.parse().unwrap()
    }

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_picked_time_is_the_channels_wall_clock() {
        let at = parse_local("2026-12-01", "09:30", tz("Asia/Tokyo")).unwrap();
        assert_eq!(at, Some(utc("2026-12-01T00:30:00Z")));
        let at = parse_local("2026-07-01", "09:30", tz("Europe/Berlin")).unwrap();
        assert_eq!(at, Some(utc("2026-07-01T07:30:00Z")), "summer time");
        let at = parse_local("2026-12-01", "09:30:00", tz("Europe/Berlin")).unwrap();
        assert_eq!(
            at,
            Some(utc("2026-12-01T08:30:00Z")),
            "winter time, seconds"
        );
    }

    #[test]
    fn fields_show_the_instant_in_the_zone_and_read_back() {
        let at = utc("2026-12-01T00:30:00Z");
        assert_eq!(
            inputs(at, tz("Asia/Tokyo")),
            ("2026-12-01".to_owned(), "09:30".to_owned())
        );
        assert_eq!(
            inputs(at, tz("America/New_York")),
            ("2026-11-30".to_owned(), "19:30".to_owned())
        );
        let (d, t) = inputs(at, tz("America/New_York"));
        assert_eq!(
            parse_local(&d, &t, tz("America/New_York")).unwrap(),
            Some(at)
        );
    }

    #[test]
    fn no_date_and_no_time_is_now_but_half_is_refused() {
        assert_eq!(parse_local(" ", "", tz("Asia/Tokyo")).unwrap(), None);
        let err = parse_local("2026-12-01", "", tz("Asia/Tokyo")).unwrap_err();
        assert!(err.contains("give a time with the date"), "{err}");
        let err = parse_local("", "09:00", tz("Asia/Tokyo")).unwrap_err();
        assert!(err.contains("give a date with the time"), "{err}");
        let err = parse_local("2026-13-01", "09:00", tz("Asia/Tokyo")).unwrap_err();
        assert!(err.contains("is not a date"), "{err}");
        let err = parse_local("2026-12-01", "25:00", tz("Asia/Tokyo")).unwrap_err();
        assert!(err.contains("is not a time of day"), "{err}");
    }

    #[test]
    fn a_time_the_clocks_skip_is_refused_naming_the_gap() {
        // New York springs forward at 02:00 on 8 March 2026.
        let err = parse_local("2026-03-08", "02:30", tz("America/New_York")).unwrap_err();
        assert_eq!(
            err,
            "2026-03-08 02:30 does not exist in America/New_York: the clocks skip from 02:00 \
             to 03:00 that night; pick a time before or after"
        );
        assert_eq!(
            parse_local("2026-03-08", "03:00", tz("America/New_York")).unwrap(),
            Some(utc("2026-03-08T07:00:00Z"))
        );
    }

    #[test]
    fn a_time_that_happens_twice_is_refused_naming_both() {
        // New York falls back at 02:00 on 1 November 2026: 01:30 happens twice.
        let err = parse_local("2026-11-01", "01:30", tz("America/New_York")).unwrap_err();
        assert_eq!(
            err,
            "2026-11-01 01:30 happens twice in America/New_York: the clocks go back that \
             night, so it is first 01:30 EDT (05:30 UTC) and an hour later 01:30 EST \
             (06:30 UTC); pick a time outside that hour"
        );
        assert!(parse_local("2026-11-01", "02:30", tz("America/New_York")).is_ok());
    }
}
