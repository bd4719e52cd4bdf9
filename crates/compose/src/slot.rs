//! Slots: local times of day (`"08:00"`) in a channel's time zone, each filled at most
//! once per day.
//!
//! A slot on a local date has an instant, computed with
//! [`airlock_core::quota::local_instant`]: an ambiguous time (clocks going back) takes its
//! earlier instant, a time inside a gap (clocks going forward) moves past the gap. Its
//! key, stored as the post's `slot` and unique per channel in the store, is the local
//! date, the slot as written and the UTC offset of that instant:
//! `2026-12-01T08:00+09:00`. The key is what makes filling a slot idempotent across runs
//! and processes.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use chrono_tz::Tz;

/// A local time of day, `HH:MM` (24-hour, two digits each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot(NaiveTime);

/// A slot that is not `HH:MM`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("slot {0:?} is not a local time HH:MM (like \"08:00\" or \"19:30\")")]
pub struct BadSlot(pub String);

/// One slot on one local day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotInstance {
    /// The slot.
    pub slot: Slot,
    /// The local date.
    pub date: NaiveDate,
    /// When it is (the post's `scheduled_at`).
    pub at: DateTime<Utc>,
    /// The store key (`2026-12-01T08:00+09:00`).
    pub key: String,
}

impl Slot {
    /// Parses `HH:MM`.
    pub fn parse(text: &str) -> Result<Slot, BadSlot> {
        let bad = || BadSlot(text.to_owned());
        let (hours, minutes) = text.trim().split_once(':').ok_or_else(bad)?;
        let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
        if !two_digits(hours) || !two_digits(minutes) {
            return Err(bad());
        }
        let hours: u32 = hours.parse().map_err(|_| bad())?;
        let minutes: u32 = minutes.parse().map_err(|_| bad())?;
        NaiveTime::from_hms_opt(hours, minutes, 0)
            .map(Slot)
            .ok_or_else(bad)
    }

    /// The time of day.
    pub fn time(self) -> NaiveTime {
        self.0
    }

    /// This slot on a local date in `tz`.
    pub fn on(self, date: NaiveDate, tz: Tz) -> SlotInstance {
        let at = airlock_core::quota::local_instant(date, self.0, tz);
        let offset = at.with_timezone(&tz).format("%:z");
        SlotInstance {
            slot: self,
            date,
            at,
            key: format!("{}T{self}{offset}", date.format("%Y-%m-%d")),
        }
    }

    /// This slot on the local day of `now` in `tz`.
    pub fn today(self, now: DateTime<Utc>, tz: Tz) -> SlotInstance {
        self.on(now.with_timezone(&tz).date_naive(), tz)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%H:%M"))
    }
}

impl FromStr for Slot {
    type Err = BadSlot;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Slot::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn slots_parse_as_two_digit_hours_and_minutes() {
        assert_eq!(Slot::parse("08:00").unwrap().to_string(), "08:00");
        assert_eq!(Slot::parse("23:59").unwrap().to_string(), "23:59");
        for bad in [
            "8:00", "24:00", "08:60", "0800", "08:00:00", "", "aa:bb", "+1:00",
        ] {
            assert!(Slot::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn eight_in_tokyo_is_twenty_three_utc_the_day_before() {
        let tokyo: Tz = "Asia/Tokyo".parse().unwrap();
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 20, 0, 0).unwrap(); // 05:00 Dec 1 in Tokyo
        let slot = Slot::parse("08:00").unwrap().today(now, tokyo);
        assert_eq!(
            slot.at,
            Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0).unwrap()
        );
        assert_eq!(slot.key, "2026-12-01T08:00+09:00");
    }

    #[test]
    fn slots_in_a_dst_gap_or_overlap_have_one_instant_and_distinct_keys() {
        let new_york: Tz = "America/New_York".parse().unwrap();
        // 2026-03-08 02:30 does not exist in New York: it moves past the gap.
        let date = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        let gap = Slot::parse("02:30").unwrap().on(date, new_york);
        assert_eq!(gap.at, Utc.with_ymd_and_hms(2026, 3, 8, 7, 0, 0).unwrap());
        let three = Slot::parse("03:00").unwrap().on(date, new_york);
        assert_eq!(three.at, gap.at);
        assert_ne!(three.key, gap.key);
        // 2026-11-01 01:30 happens twice: the earlier one counts.
        let date = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
        let twice = Slot::parse("01:30").unwrap().on(date, new_york);
        assert_eq!(
            twice.at,
            Utc.with_ymd_and_hms(2026, 11, 1, 5, 30, 0).unwrap()
        );
        assert_eq!(twice.key, "2026-11-01T01:30-04:00");
    }
}
