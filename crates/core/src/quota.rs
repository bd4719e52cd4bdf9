//! Quota arithmetic (docs/quotas.md) as pure functions of `now`.
//!
//! Two limits hold together: a rolling window across all channels and a calendar-day
//! limit per channel in an IANA time zone. In the window a live (reserved or committed)
//! reservation counts at its send time, or at `now` while it has not been sent, so the
//! window holds as the platform sees it. Against the daily limit it counts on every local
//! day that any of its [`Stamps`] could fall in, each widened by [`CLOCK_ALLOWANCE`]:
//! clocks that disagree by less than that can under-use a day near midnight but never
//! let it exceed its limit. The stores call [`decide`] inside the transaction that
//! inserts a reservation, so the arithmetic is the same on every backend.

use chrono::{DateTime, Duration, LocalResult, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

/// How far the clocks that stamp reservations may disagree with each other (and with the
/// database's): a stamp `t` may stand for any instant in `[t - CLOCK_ALLOWANCE,
/// t + CLOCK_ALLOWANCE]`. A stamp further in the future than this is impossible and stops
/// publishing (docs/quotas.md#fail-closed); a PostgreSQL ledger refuses to decide for a
/// process whose clock is further than this from its own.
pub const CLOCK_ALLOWANCE: Duration = Duration::minutes(5);

/// When a reservation was stamped: decided, and sent once its request left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps {
    /// When it was decided (`created_at`).
    pub made: DateTime<Utc>,
    /// When its request was sent (`sent_at`), if it was.
    pub sent: Option<DateTime<Utc>>,
}

impl Stamps {
    /// A reservation decided at `made` and not sent yet.
    pub fn made(made: DateTime<Utc>) -> Self {
        Stamps { made, sent: None }
    }

    /// Whether the reservation could belong to `[start, end)`: one of its stamps, widened
    /// by [`CLOCK_ALLOWANCE`] either way, meets it.
    pub fn could_fall_in(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> bool {
        let meets = |t: DateTime<Utc>| t - CLOCK_ALLOWANCE < end && t + CLOCK_ALLOWANCE >= start;
        meets(self.made) || self.sent.is_some_and(meets)
    }
}

/// The rolling window across all channels: at most `limit` publishes in any `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRule {
    /// Length of the window.
    pub window: Duration,
    /// Most publishes inside any window of that length.
    pub limit: u32,
}

/// The per-channel calendar-day limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailyRule {
    /// Most publishes per local calendar day.
    pub limit: u32,
    /// The calendar's time zone.
    pub tz: Tz,
}

/// Which limit refused a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Limit {
    /// The rolling window across channels.
    Window,
    /// The channel's daily limit.
    Daily,
    /// The channel's monthly money budget (`used` and `max` in micro-dollars).
    Budget,
}

/// A refused reservation and when a slot frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// The limit that binds last.
    pub limit: Limit,
    /// Publishes counted against it now (micro-dollars for [`Limit::Budget`]).
    pub used: u64,
    /// Its maximum (micro-dollars for [`Limit::Budget`]).
    pub max: u64,
    /// The earliest time both limits can allow one more.
    pub next_free_at: DateTime<Utc>,
}

/// Usage of one limit at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Publishes counted now.
    pub used: u32,
    /// The maximum.
    pub limit: u32,
    /// `limit - used`, never below zero.
    pub remaining: u32,
    /// When the next slot frees: `null` while one is free now.
    pub next_free_at: Option<DateTime<Utc>>,
}

/// When a live reservation counts: its send time, or `now` while unsent.
pub fn counted_at(sent_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> DateTime<Utc> {
    sent_at.unwrap_or(now)
}

/// Usage of the rolling window at `now`, given when each live reservation counts.
pub fn window_usage(now: DateTime<Utc>, rule: WindowRule, counted: &[DateTime<Utc>]) -> Usage {
    let mut inside: Vec<DateTime<Utc>> = counted
        .iter()
        .copied()
        .filter(|at| *at > now - rule.window)
        .collect();
    inside.sort_unstable();
    let used = inside.len() as u32;
    let next_free_at = (used >= rule.limit).then(|| {
        // When the oldest entries drop out until one fewer than the limit remain.
        let drop_idx = (used - rule.limit) as usize;
        // A zero limit never frees a slot; say "one window from now" rather than "now",
        // so a caller waiting for it does not spin.
        inside
            .get(drop_idx)
            .map(|at| *at + rule.window)
            .unwrap_or(now + rule.window)
    });
    Usage {
        used,
        limit: rule.limit,
        remaining: rule.limit.saturating_sub(used),
        next_free_at,
    }
}

/// Usage of a channel's daily limit at `now`, given the stamps of its live reservations:
/// each counts on every local day it could fall in ([`Stamps::could_fall_in`]).
/// `next_free_at` is when [`decide`] can next allow one more on the channel: a new
/// reservation counts on every day its own stamp could fall in too, so near midnight
/// both days must have room.
pub fn daily_usage(now: DateTime<Utc>, rule: DailyRule, counted: &[Stamps]) -> Usage {
    let (start, end) = day_bounds(now, rule.tz);
    let used = count_in(counted, start, end);
    Usage {
        used,
        limit: rule.limit,
        remaining: rule.limit.saturating_sub(used),
        next_free_at: daily_denial(now, rule, counted).map(|d| d.next_free_at),
    }
}

fn count_in(counted: &[Stamps], start: DateTime<Utc>, end: DateTime<Utc>) -> u32 {
    counted
        .iter()
        .filter(|stamps| stamps.could_fall_in(start, end))
        .count() as u32
}

/// The daily limit's refusal of one more reservation at `now`, if it refuses: the full day
/// among those the new stamp could fall in, and the first instant whose own days all have
/// room.
fn daily_denial(now: DateTime<Utc>, rule: DailyRule, counted: &[Stamps]) -> Option<Denial> {
    let full = |at: DateTime<Utc>| {
        let (start, end) = day_bounds(at, rule.tz);
        let used = count_in(counted, start, end);
        (used >= rule.limit).then_some((used, end))
    };
    earliest_free(now, full).map(|(used, next_free_at)| Denial {
        limit: Limit::Daily,
        used: used.into(),
        max: rule.limit.into(),
        next_free_at,
    })
}

/// The first instant from `now` at which no calendar period (day or month) that a stamp
/// made then could fall in is full, as `full` judges the period containing an instant
/// (`Some((used, its end))` when full); `None` when that is `now`. Stamps exist at most
/// [`CLOCK_ALLOWANCE`] ahead of `now`, so a few periods on the search ends.
pub(crate) fn earliest_free<U: Copy>(
    now: DateTime<Utc>,
    full: impl Fn(DateTime<Utc>) -> Option<(U, DateTime<Utc>)>,
) -> Option<(U, DateTime<Utc>)> {
    let mut at = now;
    let mut refused = None;
    for _ in 0..4 {
        // The later period first: when it is full, waiting for the earlier one is moot.
        match full(at + CLOCK_ALLOWANCE).or_else(|| full(at - CLOCK_ALLOWANCE)) {
            Some((used, end)) => {
                refused.get_or_insert((used, end));
                at = end + CLOCK_ALLOWANCE;
            }
            None => break,
        }
    }
    refused.map(|(used, _)| (used, at))
}

/// Whether one more publish on a channel fits both limits at `now`.
///
/// `window_counted` holds the counted time of every live reservation on every channel;
/// `channel_counted` the stamps of the asking channel's live reservations.
pub fn decide(
    now: DateTime<Utc>,
    window: WindowRule,
    daily: DailyRule,
    window_counted: &[DateTime<Utc>],
    channel_counted: &[Stamps],
) -> Result<(), Denial> {
    let window_use = window_usage(now, window, window_counted);
    let denials = [
        window_use.next_free_at.map(|at| Denial {
            limit: Limit::Window,
            used: window_use.used.into(),
            max: window_use.limit.into(),
            next_free_at: at,
        }),
        daily_denial(now, daily, channel_counted),
    ];
    match denials.into_iter().flatten().max_by_key(|d| d.next_free_at) {
        Some(denial) => Err(denial),
        None => Ok(()),
    }
}

/// The UTC bounds `[start, end)` of the local calendar day containing `now` in `tz`.
pub fn day_bounds(now: DateTime<Utc>, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let today = now.with_timezone(&tz).date_naive();
    let tomorrow = today.succ_opt().unwrap_or(today);
    (local_day_start(today, tz), local_day_start(tomorrow, tz))
}

/// The first instant of a local calendar day. Where a DST change skips midnight, the day
/// starts at the first local time that exists.
pub fn local_day_start(date: NaiveDate, tz: Tz) -> DateTime<Utc> {
    local_instant(date, NaiveTime::MIN, tz)
}

/// The instant of a local wall-clock time. An ambiguous time (clocks going back) takes its
/// earlier instant; a time that does not exist (clocks going forward) moves forward past the gap.
pub fn local_instant(date: NaiveDate, time: NaiveTime, tz: Tz) -> DateTime<Utc> {
    let mut naive = date.and_time(time);
    // DST gaps are at most a few hours; step forward a minute at a time until the clock exists.
    for _ in 0..=(24 * 60) {
        match tz.from_local_datetime(&naive) {
            LocalResult::Single(at) => return at.with_timezone(&Utc),
            LocalResult::Ambiguous(earlier, _) => return earlier.with_timezone(&Utc),
            LocalResult::None => naive += Duration::minutes(1),
        }
    }
    Utc.from_utc_datetime(&date.and_time(time))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    const HOUR3: WindowRule = WindowRule {
        window: Duration::minutes(60),
        limit: 3,
    };

    #[test]
    fn window_is_rolling_not_calendar_aligned() {
        let sent = [
            at("2026-12-01T10:10:00Z"),
            at("2026-12-01T10:20:00Z"),
            at("2026-12-01T10:50:00Z"),
        ];
        let now = at("2026-12-01T11:05:00Z");
        let usage = window_usage(now, HOUR3, &sent);
        assert_eq!(usage.used, 3);
        assert_eq!(usage.remaining, 0);
        assert_eq!(usage.next_free_at, Some(at("2026-12-01T11:10:00Z")));
        // Exactly one window after the first, that one no longer counts.
        let later = window_usage(at("2026-12-01T11:10:00Z"), HOUR3, &sent);
        assert_eq!(later.used, 2);
        assert_eq!(later.next_free_at, None);
    }

    #[test]
    fn next_free_skips_enough_entries_when_over_the_limit() {
        // Four counted (one more than the limit, e.g. after the limit was lowered).
        let sent = [
            at("2026-12-01T10:00:00Z"),
            at("2026-12-01T10:10:00Z"),
            at("2026-12-01T10:20:00Z"),
            at("2026-12-01T10:30:00Z"),
        ];
        let usage = window_usage(at("2026-12-01T10:40:00Z"), HOUR3, &sent);
        assert_eq!(usage.used, 4);
        assert_eq!(usage.next_free_at, Some(at("2026-12-01T11:10:00Z")));
    }

    #[test]
    fn tokyo_day_starts_at_1500_utc() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let (start, end) = day_bounds(at("2026-12-01T14:59:59Z"), tz);
        assert_eq!(start, at("2026-11-30T15:00:00Z"));
        assert_eq!(end, at("2026-12-01T15:00:00Z"));
        let (start, _) = day_bounds(at("2026-12-01T15:00:00Z"), tz);
        assert_eq!(start, at("2026-12-01T15:00:00Z"));
    }

    #[test]
    fn daily_limit_counts_the_local_calendar_day() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let rule = DailyRule { limit: 2, tz };
        // 23:30 and 23:50 Tokyo on Dec 1, then 00:10 Tokyo on Dec 2.
        let sent = [
            Stamps::made(at("2026-12-01T14:30:00Z")),
            Stamps::made(at("2026-12-01T14:50:00Z")),
        ];
        let before_midnight = daily_usage(at("2026-12-01T14:55:00Z"), rule, &sent);
        assert_eq!(before_midnight.used, 2);
        // A decision made then could be by a clock up to the allowance fast.
        assert_eq!(
            before_midnight.next_free_at,
            Some(at("2026-12-01T15:00:00Z") + CLOCK_ALLOWANCE)
        );
        let after_midnight = daily_usage(at("2026-12-01T15:10:00Z"), rule, &sent);
        assert_eq!(after_midnight.used, 0);
    }

    /// A clock a few minutes off puts a stamp on the wrong side of midnight: a reservation
    /// stamped within the allowance of midnight counts on both days, by either stamp.
    #[test]
    fn a_reservation_near_midnight_counts_on_both_days() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let rule = DailyRule { limit: 2, tz };
        let midnight = at("2026-12-01T15:00:00Z");
        let made_before = Stamps::made(midnight - Duration::minutes(4));
        let sent_after = Stamps {
            made: midnight - Duration::minutes(20),
            sent: Some(midnight + Duration::minutes(3)),
        };
        let far = Stamps::made(midnight - Duration::minutes(6));
        let counted = [made_before, sent_after, far];
        assert_eq!(
            daily_usage(midnight - Duration::hours(1), rule, &counted).used,
            3
        );
        let next_day = daily_usage(midnight + Duration::hours(1), rule, &counted);
        assert_eq!(next_day.used, 2, "the two stamped within the allowance");
        // Full from its start, the next day frees only when it ends.
        let full = daily_usage(midnight - Duration::hours(1), rule, &counted);
        assert_eq!(
            full.next_free_at,
            Some(at("2026-12-02T15:00:00Z") + CLOCK_ALLOWANCE)
        );
        let one_spill = daily_usage(midnight - Duration::hours(1), rule, &[made_before, far]);
        assert_eq!(one_spill.next_free_at, Some(midnight + CLOCK_ALLOWANCE));
        // Just after midnight by a fast clock, the day before is still full.
        let early = decide(
            midnight + Duration::minutes(2),
            HOUR3,
            rule,
            &[],
            &[made_before, far],
        );
        assert_eq!(early.unwrap_err().next_free_at, midnight + CLOCK_ALLOWANCE);
    }

    #[test]
    fn dst_days_are_23_and_25_hours_long() {
        let tz: Tz = "America/New_York".parse().unwrap();
        let (start, end) = day_bounds(at("2026-03-08T12:00:00Z"), tz);
        assert_eq!(start, at("2026-03-08T05:00:00Z"));
        assert_eq!(end, at("2026-03-09T04:00:00Z"));
        assert_eq!(end - start, Duration::hours(23));
        let (start, end) = day_bounds(at("2026-11-01T12:00:00Z"), tz);
        assert_eq!(end - start, Duration::hours(25));
    }

    #[test]
    fn a_day_whose_midnight_does_not_exist_starts_at_the_first_real_minute() {
        // Santiago skipped 2022-09-11 00:00 (clocks jumped to 01:00).
        let tz: Tz = "America/Santiago".parse().unwrap();
        let start = local_day_start(NaiveDate::from_ymd_opt(2022, 9, 11).unwrap(), tz);
        assert_eq!(start, at("2022-09-11T04:00:00Z"));
    }

    #[test]
    fn decide_reports_the_limit_that_frees_last() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let daily = DailyRule { limit: 1, tz };
        let now = at("2026-12-01T10:30:00Z");
        let sent = [at("2026-12-01T10:00:00Z")];
        let mine = [Stamps::made(sent[0])];
        let denial = decide(now, HOUR3, daily, &sent, &mine).unwrap_err();
        assert_eq!(denial.limit, Limit::Daily);
        assert_eq!(
            denial.next_free_at,
            at("2026-12-01T15:00:00Z") + CLOCK_ALLOWANCE
        );
        assert!(decide(now, HOUR3, DailyRule { limit: 2, tz }, &sent, &mine).is_ok());
    }

    #[test]
    fn unsent_reservations_count_as_now() {
        let now = at("2026-12-01T10:00:00Z");
        assert_eq!(counted_at(None, now), now);
        let sent = at("2026-12-01T09:00:00Z");
        assert_eq!(counted_at(Some(sent), now), sent);
    }

    /// Brute-force model: every request, in time order, is granted by [`decide`] against
    /// the grants so far. Then every rolling window and every local day is checked by
    /// enumeration, independently of the code under test.
    fn run_model(
        requests: &[(i64, usize)],
        rule: WindowRule,
        daily_limit: u32,
        tz: Tz,
    ) -> Vec<(DateTime<Utc>, usize)> {
        let base = at("2026-03-07T00:00:00Z");
        let mut granted: Vec<(DateTime<Utc>, usize)> = Vec::new();
        let mut sorted = requests.to_vec();
        sorted.sort();
        for (offset, channel) in sorted {
            let now = base + Duration::minutes(offset);
            let all: Vec<_> = granted.iter().map(|g| g.0).collect();
            let mine: Vec<_> = granted
                .iter()
                .filter(|g| g.1 == channel)
                .map(|g| Stamps::made(g.0))
                .collect();
            let daily = DailyRule {
                limit: daily_limit,
                tz,
            };
            if decide(now, rule, daily, &all, &mine).is_ok() {
                granted.push((now, channel));
            }
        }
        granted
    }

    proptest! {
        #[test]
        fn limits_hold_in_every_window_and_every_day(
            requests in prop::collection::vec((0i64..(4 * 24 * 60), 0usize..3), 0..120),
            window_minutes in 1i64..180,
            window_limit in 1u32..6,
            daily_limit in 1u32..8,
            zone in prop::sample::select(vec!["Asia/Tokyo", "America/New_York", "Europe/London", "UTC"]),
        ) {
            let tz: Tz = zone.parse().unwrap();
            let rule = WindowRule { window: Duration::minutes(window_minutes), limit: window_limit };
            let granted = run_model(&requests, rule, daily_limit, tz);
            // Any window [s, s + W) holds at most the limit; it suffices to start s at each grant.
            for (start, _) in &granted {
                let inside = granted.iter().filter(|(t, _)| t >= start && *t < *start + rule.window).count();
                prop_assert!(inside as u32 <= window_limit, "window from {start} holds {inside}");
            }
            // Each channel's local days hold at most the daily limit.
            for channel in 0..3 {
                let mut per_day = std::collections::BTreeMap::new();
                for (t, c) in &granted {
                    if *c == channel {
                        *per_day.entry(t.with_timezone(&tz).date_naive()).or_insert(0u32) += 1;
                    }
                }
                for (day, n) in per_day {
                    prop_assert!(n <= daily_limit, "channel {channel} day {day}: {n}");
                }
            }
        }

        /// Several processes decide one after another (serialized, as in the stores), each
        /// by its own clock, up to a few minutes off: however the requests fall around
        /// midnight, no real local day takes more than its limit.
        #[test]
        fn deciders_whose_clocks_disagree_never_exceed_a_day(
            requests in prop::collection::vec((0i64..(3 * 60), 0usize..3), 0..60),
            offsets in prop::collection::vec(-240i64..=240, 3),
            daily_limit in 1u32..4,
        ) {
            let tz: Tz = "Asia/Tokyo".parse().unwrap();
            // Around midnight in Tokyo, in real time.
            let base = at("2026-12-01T13:30:00Z");
            let daily = DailyRule { limit: daily_limit, tz };
            let wide = WindowRule { window: Duration::minutes(1), limit: 1000 };
            let mut sorted = requests.clone();
            sorted.sort();
            // (real time, the stamp its decider wrote)
            let mut granted: Vec<(DateTime<Utc>, Stamps)> = Vec::new();
            for (minute, process) in sorted {
                let real = base + Duration::minutes(minute);
                let clock = real + Duration::seconds(offsets[process]);
                let mine: Vec<_> = granted.iter().map(|g| g.1).collect();
                if decide(clock, wide, daily, &[], &mine).is_ok() {
                    granted.push((real, Stamps::made(clock)));
                }
            }
            let mut per_day = std::collections::BTreeMap::new();
            for (real, _) in &granted {
                *per_day.entry(real.with_timezone(&tz).date_naive()).or_insert(0u32) += 1;
            }
            for (day, n) in per_day {
                prop_assert!(n <= daily_limit, "day {day}: {n} > {daily_limit}");
            }
        }

        #[test]
        fn a_refused_request_is_granted_at_next_free_at(
            requests in prop::collection::vec((0i64..(2 * 24 * 60), 0usize..2), 1..60),
            window_limit in 1u32..4,
            daily_limit in 1u32..5,
        ) {
            let tz: Tz = "Asia/Tokyo".parse().unwrap();
            let rule = WindowRule { window: Duration::minutes(60), limit: window_limit };
            let granted = run_model(&requests, rule, daily_limit, tz);
            let base = at("2026-03-07T00:00:00Z");
            let now = base + Duration::minutes(3 * 24 * 60);
            let all: Vec<_> = granted.iter().map(|g| g.0).chain(std::iter::repeat_n(now, window_limit as usize)).collect();
            let mine: Vec<_> = all.iter().copied().map(Stamps::made).collect();
            let daily = DailyRule { limit: daily_limit, tz };
            // Saturate the limits at `now`, then the promised time must admit one more.
            if let Err(denial) = decide(now, rule, daily, &all, &mine) {
                prop_assert!(denial.next_free_at > now);
                prop_assert!(decide(denial.next_free_at, rule, daily, &all, &mine).is_ok());
            }
        }
    }
}
