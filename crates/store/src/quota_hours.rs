//! The quick quota proof (issue 28): whether one more publish is allowed, decided from
//! per-hour counts of the live reservations instead of the rows. Each count may only
//! overcount what [`crate::decide_reservation`] counts: a row stands in the UTC hour it
//! was made, in the hour it was sent when that is another, and, while unsent, in
//! [`HourCount::hour`] `None` (the rolling window counts an unsent row as now). `false`
//! means only that the rows must decide. The SQLite backend keeps the counts by trigger;
//! PostgreSQL's `airlock_quota_far` makes the same proof in PL/pgSQL.

use chrono::{DateTime, Duration, DurationRound, Utc};

use airlock_core::ChannelName;
use airlock_core::quota::CLOCK_ALLOWANCE;

use crate::QuotaClaim;

/// One channel's live reservations with a stamp in one hour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourCount {
    /// The channel.
    pub channel: String,
    /// The hour's start (UTC); `None` for the rows not sent yet.
    pub hour: Option<DateTime<Utc>>,
    /// How many.
    pub live: i64,
    /// The latest stamp counted in the hour (never lowered); `None` for unsent rows.
    pub latest: Option<DateTime<Utc>>,
}

/// The start of the UTC hour of `at`.
pub fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::hours(1)).unwrap_or(at)
}

/// The hours a count must reach back to for a decision at `now`.
pub fn hours_since(now: DateTime<Utc>, req: &QuotaClaim) -> DateTime<Utc> {
    let (first_day, _) = airlock_core::quota::day_bounds(now - Duration::days(1), req.daily.tz);
    hour_of((now - req.window.window).min(first_day - CLOCK_ALLOWANCE))
}

/// Whether `hours` (every count from [`hours_since`] on, and the unsent ones) prove room
/// for one more publish on `channel` at `now`: no stamp past the clock allowance, the
/// window's counts below its limit, and the channel's counts below its daily limit on each
/// local day from the one before `now` to a week after. Never with a money budget.
pub fn room_from_hours(
    now: DateTime<Utc>,
    channel: &ChannelName,
    req: &QuotaClaim,
    hours: &[HourCount],
) -> bool {
    if req.budget.is_some() {
        return false;
    }
    let late = now + CLOCK_ALLOWANCE;
    let future = hours.iter().any(|h| {
        h.live > 0
            && h.hour.is_some_and(|hour| hour > late - Duration::hours(1))
            && h.latest.is_some_and(|at| at > late)
    });
    if future {
        return false;
    }
    let window_start = hour_of(now - req.window.window);
    let window: i64 = hours
        .iter()
        .filter(|h| h.hour.is_none_or(|hour| hour >= window_start))
        .map(|h| h.live)
        .sum();
    if window >= i64::from(req.window.limit) {
        return false;
    }
    let mut start = airlock_core::quota::day_bounds(now - Duration::days(1), req.daily.tz).0;
    for _ in 0..8 {
        let end = airlock_core::quota::day_bounds(start, req.daily.tz).1;
        let (from, to) = (hour_of(start - CLOCK_ALLOWANCE), end + CLOCK_ALLOWANCE);
        let day: i64 = hours
            .iter()
            .filter(|h| h.channel == channel.as_str())
            .filter(|h| h.hour.is_some_and(|hour| hour >= from && hour < to))
            .map(|h| h.live)
            .sum();
        if day >= i64::from(req.daily.limit) {
            return false;
        }
        start = end;
    }
    true
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use airlock_core::quota::{DailyRule, WindowRule};

    use super::*;
    use crate::{QuotaRows, RawReservation, decide_reservation};

    /// A reservation as the tests write it: channel, made, sent.
    type Row = (String, DateTime<Utc>, Option<DateTime<Utc>>);

    /// The counts the backends keep for `rows`, as their triggers do.
    fn counts(rows: &[Row]) -> Vec<HourCount> {
        type Key = (String, Option<DateTime<Utc>>);
        let mut by: BTreeMap<Key, (i64, Option<DateTime<Utc>>)> = BTreeMap::new();
        for (channel, made, sent) in rows {
            let mut add = |hour: Option<DateTime<Utc>>, at: Option<DateTime<Utc>>| {
                let e = by.entry((channel.clone(), hour)).or_insert((0, None));
                e.0 += 1;
                e.1 = e.1.max(at);
            };
            match sent {
                None => {
                    add(Some(hour_of(*made)), Some(*made));
                    add(None, None);
                }
                Some(sent) if hour_of(*sent) == hour_of(*made) => {
                    add(Some(hour_of(*made)), Some((*made).max(*sent)))
                }
                Some(sent) => {
                    add(Some(hour_of(*made)), Some(*made));
                    add(Some(hour_of(*sent)), Some(*sent));
                }
            }
        }
        by.into_iter()
            .map(|((channel, hour), (live, latest))| HourCount {
                channel,
                hour,
                live,
                latest,
            })
            .collect()
    }

    fn claim(window_minutes: i64, window: u32, daily: u32, tz: chrono_tz::Tz) -> QuotaClaim {
        QuotaClaim {
            window: WindowRule {
                window: Duration::minutes(window_minutes),
                limit: window,
            },
            daily: DailyRule { limit: daily, tz },
            budget: None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Whenever the counts prove room, the rows allow the publish.
        #[test]
        fn room_from_hours_never_allows_what_the_rows_refuse(
            rows in prop::collection::vec(
                // Made anywhere in two days, or within ten minutes of the window's start
                // or of a local midnight, where an hour or the allowance decides.
                (prop::bool::ANY, 0u8..3, -3_000i64..6, -600i64..600,
                 prop::option::of(-300i64..7_200)),
                0..12),
            window_minutes in 1i64..3_000,
            // Limits near the number of rows, where an off-by-one shows.
            window_more in -3i64..4,
            daily_more in -3i64..4,
            offset in -720i64..720,
            tz in prop::sample::select(vec![
                chrono_tz::UTC, chrono_tz::Asia::Tokyo, chrono_tz::Asia::Kolkata,
                chrono_tz::America::New_York, chrono_tz::Asia::Kathmandu]),
        ) {
            let now: DateTime<Utc> = "2026-03-08T06:00:00Z".parse::<DateTime<Utc>>().unwrap()
                + Duration::minutes(offset);
            let win = Duration::minutes(window_minutes);
            let midnight = airlock_core::quota::day_bounds(now, tz).0;
            let rows: Vec<Row> = rows
                .into_iter()
                .map(|(own, near, minutes, seconds, sent)| {
                    let made = match near {
                        0 => now + Duration::minutes(minutes),
                        1 => now - win + Duration::seconds(seconds),
                        _ => midnight + Duration::seconds(seconds),
                    }
                    .min(now + CLOCK_ALLOWANCE);
                    let sent = sent.map(|s| (made + Duration::seconds(s)).min(now));
                    (if own { "alpha" } else { "beta" }.to_owned(), made, sent)
                })
                .collect();
            let channel = ChannelName::parse("alpha").unwrap();
            // The channel's rows that could count on today, as the rows' decision sees it.
            let (today, tomorrow) = airlock_core::quota::day_bounds(now, tz);
            let on_today = |at: DateTime<Utc>| {
                at >= today - CLOCK_ALLOWANCE && at < tomorrow + CLOCK_ALLOWANCE
            };
            let own = rows
                .iter()
                .filter(|r| r.0 == "alpha" && (on_today(r.1) || r.2.is_some_and(on_today)))
                .count() as i64;
            let in_window = rows.iter().filter(|r| r.2.unwrap_or(now) > now - win).count() as i64;
            let limit = |n: i64| u32::try_from(n.max(0)).unwrap();
            let req = claim(
                window_minutes,
                limit(in_window + window_more),
                limit(own + daily_more),
                tz,
            );
            let hours: Vec<HourCount> = counts(&rows)
                .into_iter()
                .filter(|h| h.hour.is_none_or(|hour| hour >= hours_since(now, &req)))
                .collect();
            if room_from_hours(now, &channel, &req, &hours) {
                let raw = rows.iter().enumerate().map(|(id, (channel, made, sent))| RawReservation {
                    id: id as i64,
                    channel: channel.clone(),
                    state: "committed".into(),
                    created_at: Ok(*made),
                    sent_at: sent.map(Ok),
                    cost: 0,
                });
                let live = QuotaRows::check(raw, now).unwrap();
                prop_assert!(decide_reservation(now, &channel, &req, &live).is_ok());
            }
        }
    }

    /// A stamp within the clock allowance of a day's edge counts on both days.
    #[test]
    fn a_stamp_near_midnight_counts_on_both_days() {
        let channel = ChannelName::parse("alpha").unwrap();
        let req = claim(60, 100, 2, chrono_tz::UTC);
        let (today, tomorrow) = airlock_core::quota::day_bounds(
            "2026-03-08T06:00:00Z".parse().unwrap(),
            chrono_tz::UTC,
        );
        for (now, edge) in [
            (today + Duration::hours(2), today - Duration::minutes(3)),
            (
                tomorrow - Duration::minutes(1),
                tomorrow + Duration::minutes(3),
            ),
        ] {
            let rows = [
                ("alpha".to_owned(), today + Duration::hours(1), None),
                ("alpha".to_owned(), edge, None),
            ];
            assert!(
                !room_from_hours(now, &channel, &req, &counts(&rows)),
                "{edge}"
            );
        }
    }

    #[test]
    fn counts_far_below_every_limit_prove_room_and_a_full_day_does_not() {
        let now: DateTime<Utc> = "2026-03-08T06:00:00Z".parse().unwrap();
        let channel = ChannelName::parse("alpha").unwrap();
        let rows: Vec<_> = (0..10)
            .map(|i| {
                (
                    "alpha".to_owned(),
                    now - Duration::minutes(i * 30),
                    Some(now),
                )
            })
            .collect();
        let hours = counts(&rows);
        assert!(room_from_hours(
            now,
            &channel,
            &claim(60, 100, 100, chrono_tz::UTC),
            &hours
        ));
        assert!(!room_from_hours(
            now,
            &channel,
            &claim(60, 100, 10, chrono_tz::UTC),
            &hours
        ));
        // A stamp past the clock allowance leaves it to the rows.
        let ahead = counts(&[("beta".into(), now + Duration::minutes(6), None)]);
        assert!(!room_from_hours(
            now,
            &channel,
            &claim(60, 100, 100, chrono_tz::UTC),
            &ahead
        ));
    }
}
