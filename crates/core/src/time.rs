//! Durations written like `30s`, `15m`, `24h`, `60d`, and the `TIME` argument
//! (RFC 3339 or `now`) that the CLI, HTTP API and MCP tools accept.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::post::InvalidValue;

/// A span of time as configured: a whole number and a unit (`ms`, `s`, `m`, `h`, `d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(Duration);

impl Span {
    /// Wraps a chrono duration.
    pub fn new(duration: Duration) -> Self {
        Span(duration)
    }

    /// Seconds.
    pub const fn seconds(n: i64) -> Self {
        Span(Duration::seconds(n))
    }

    /// Minutes.
    pub fn minutes(n: i64) -> Self {
        Span(Duration::minutes(n))
    }

    /// The chrono duration.
    pub fn as_chrono(self) -> Duration {
        self.0
    }

    /// The std duration (spans are never negative).
    pub fn as_std(self) -> std::time::Duration {
        self.0.to_std().unwrap_or_default()
    }
}

impl FromStr for Span {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const EXPECTED: &str = "write a whole number and a unit, like 500ms, 30s, 15m, 24h or 60d";
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (digits, unit) = s.split_at(split);
        let n: i64 = digits
            .parse()
            .map_err(|_| InvalidValue::new("duration", s, EXPECTED))?;
        let duration = match unit {
            "ms" => Duration::try_milliseconds(n),
            "s" => Duration::try_seconds(n),
            "m" => Duration::try_minutes(n),
            "h" => Duration::try_hours(n),
            "d" => Duration::try_days(n),
            _ => None,
        };
        duration
            .filter(|d| *d > Duration::zero())
            .map(Span)
            .ok_or_else(|| InvalidValue::new("duration", s, EXPECTED))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.num_milliseconds();
        let units = [
            (86_400_000, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1000, "s"),
        ];
        for (size, unit) in units {
            if ms % size == 0 {
                return write!(f, "{}{unit}", ms / size);
            }
        }
        write!(f, "{ms}ms")
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Parses `TIME`: RFC 3339 with an offset (`2026-12-01T08:00:00+09:00`) or `now`, in
/// the years 1970 to 9999 (UTC): the ledger stores times as fixed-width text, which a
/// five-digit or negative year would break.
pub fn parse_time(input: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, InvalidValue> {
    let input = input.trim();
    if input.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    let at = DateTime::parse_from_rfc3339(input)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            InvalidValue::new(
                "time",
                input,
                "use RFC 3339 with an offset, like 2026-12-01T08:00:00+09:00, or `now`",
            )
        })?;
    if !(1970..=9999).contains(&at.year()) {
        return Err(InvalidValue::new(
            "time",
            input,
            "give a time between the years 1970 and 9999 (in UTC)",
        ));
    }
    Ok(at)
}

/// How far in the past a schedule may lie and still be taken as written: the clocks of
/// the writer and the server may differ, and a time typed for "now" is a little late.
pub const PAST_SCHEDULE_GRACE: Duration = Duration::minutes(5);

/// A schedule more than [`PAST_SCHEDULE_GRACE`] in the past, not asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "scheduled_at {at} is {ago} in the past: give a later time, `now`, or allow past times \
     explicitly (--allow-past, \"allow_past\": true) to publish it as soon as it may go out"
)]
pub struct PastSchedule {
    at: String,
    ago: String,
}

/// Refuses a schedule more than [`PAST_SCHEDULE_GRACE`] before `now` unless the writer
/// asked for a past time explicitly (`allow_past`): a typo in the year must not mean
/// "publish now".
pub fn check_schedule(
    at: DateTime<Utc>,
    now: DateTime<Utc>,
    allow_past: bool,
) -> Result<(), PastSchedule> {
    if allow_past || at >= now - PAST_SCHEDULE_GRACE {
        return Ok(());
    }
    Err(PastSchedule {
        at: format_utc(at),
        ago: ago(now - at),
    })
}

/// A past span in words, to the largest whole unit.
fn ago(span: Duration) -> String {
    let units = [
        (span.num_days(), "day"),
        (span.num_hours(), "hour"),
        (span.num_minutes(), "minute"),
    ];
    let (n, unit) = units
        .into_iter()
        .find(|(n, _)| *n > 0)
        .unwrap_or((span.num_seconds(), "second"));
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Formats an instant the way the ledger stores and prints it: UTC, millisecond
/// precision, fixed width (`2026-12-01T08:00:00.000Z`), so text order is time order.
pub fn format_utc(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_past_schedule_is_refused_unless_asked_for() {
        let now = "2026-12-04T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let typo = "2025-12-04T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let err = check_schedule(typo, now, false).unwrap_err().to_string();
        assert!(err.contains("365 days in the past"), "{err}");
        assert!(err.contains("allow_past"), "{err}");
        check_schedule(typo, now, true).unwrap();
        // Within the grace, and in the future, a time is taken as written.
        check_schedule(now - PAST_SCHEDULE_GRACE, now, false).unwrap();
        check_schedule(now + Duration::days(1), now, false).unwrap();
        let late = now - PAST_SCHEDULE_GRACE - Duration::seconds(1);
        let err = check_schedule(late, now, false).unwrap_err().to_string();
        assert!(err.contains("5 minutes in the past"), "{err}");
    }

    #[test]
    fn spans_parse_each_unit() {
        assert_eq!("30s".parse::<Span>().unwrap(), Span::seconds(30));
        assert_eq!("15m".parse::<Span>().unwrap(), Span::minutes(15));
        assert_eq!("24h".parse::<Span>().unwrap(), Span::minutes(24 * 60));
        assert_eq!(
            "60d".parse::<Span>().unwrap().as_chrono(),
            Duration::days(60)
        );
        assert_eq!(
            "250ms".parse::<Span>().unwrap().as_std(),
            std::time::Duration::from_millis(250)
        );
    }

    #[test]
    fn bad_spans_say_what_to_write() {
        for bad in [
            "",
            "15",
            "m",
            "1.5h",
            "-3s",
            "0s",
            "3w",
            "15 m",
            "99999999999999d",
        ] {
            let err = bad.parse::<Span>().unwrap_err();
            assert!(err.to_string().contains("30s"), "{bad}: {err}");
        }
    }

    #[test]
    fn spans_display_in_their_largest_whole_unit() {
        for text in ["30s", "15m", "36h", "60d", "1500ms"] {
            assert_eq!(text.parse::<Span>().unwrap().to_string(), text);
        }
        assert_eq!("24h".parse::<Span>().unwrap().to_string(), "1d");
        assert_eq!("120m".parse::<Span>().unwrap().to_string(), "2h");
    }

    #[test]
    fn times_parse_rfc3339_or_now() {
        let now = Utc::now();
        assert_eq!(parse_time("now", now).unwrap(), now);
        let t = parse_time("2026-12-01T08:00:00+09:00", now).unwrap();
        assert_eq!(format_utc(t), "2026-11-30T23:00:00.000Z");
        assert!(parse_time("tomorrow", now).is_err());
        assert!(parse_time("2026-12-01 08:00", now).is_err());
    }

    #[test]
    fn times_outside_the_ledgers_years_are_refused_as_invalid_input() {
        let now = Utc::now();
        for bad in [
            "9999-12-31T23:59:59-01:00",
            "0000-01-01T00:00:00+00:00",
            "1969-12-31T23:59:59Z",
        ] {
            let err = parse_time(bad, now).unwrap_err();
            assert!(err.to_string().contains("1970 and 9999"), "{bad}: {err}");
        }
        let last = parse_time("9999-12-31T23:59:59Z", now).unwrap();
        assert_eq!(format_utc(last).len(), "2026-11-30T23:00:00.000Z".len());
    }
}
