//! Reading the quota ledger fail-closed (docs/quotas.md#fail-closed): every live
//! reservation row is checked before it is counted, and one that cannot be read as expected
//! stops publishing instead of being skipped.

use chrono::{DateTime, Duration, Utc};

use airlock_core::ChannelName;
use airlock_core::quota::{CLOCK_ALLOWANCE, Stamps, counted_at};

use crate::{Result, StoreError};

/// How far in the future a stored time may lie before it is impossible.
const SKEW: Duration = CLOCK_ALLOWANCE;

/// A reservation that counts: reserved or committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveReservation {
    /// Its channel.
    pub channel: ChannelName,
    /// When it was made (the decision).
    pub created_at: DateTime<Utc>,
    /// When its request was sent, if it was.
    pub sent_at: Option<DateTime<Utc>>,
    /// What it costs, in micro-dollars (0 on channels without a money budget).
    pub cost: u64,
}

/// The live reservations a quota decision needs, all checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaRows(pub Vec<LiveReservation>);

impl QuotaRows {
    /// Checks raw rows `(id, channel, state, created_at, sent_at)` as read from a backend.
    /// Timestamps the backend could not parse arrive as `Err(text)`.
    pub fn check<I>(rows: I, now: DateTime<Utc>) -> Result<QuotaRows>
    where
        I: IntoIterator<Item = RawReservation>,
    {
        let mut live = Vec::new();
        for row in rows {
            let bad = |what: String| {
                StoreError::CorruptQuota(format!(
                    "reservation {} {what}; inspect the reservations table, fix or release the row, then resume",
                    row.id
                ))
            };
            match row.state.as_str() {
                "reserved" | "committed" => {}
                other => return Err(bad(format!("has unknown state {other:?}"))),
            }
            let created_at = row
                .created_at
                .clone()
                .map_err(|text| bad(format!("has unreadable created_at {text:?}")))?;
            let sent_at = row
                .sent_at
                .clone()
                .transpose()
                .map_err(|text| bad(format!("has unreadable sent_at {text:?}")))?;
            if created_at > now + SKEW {
                return Err(bad(format!("was created in the future ({created_at})")));
            }
            if let Some(sent) = sent_at {
                if sent > now + SKEW {
                    return Err(bad(format!("was sent in the future ({sent})")));
                }
                if sent + SKEW < created_at {
                    return Err(bad(format!(
                        "was sent ({sent}) before it was created ({created_at})"
                    )));
                }
            }
            let channel = ChannelName::parse(&row.channel)
                .map_err(|_| bad(format!("names no valid channel ({:?})", row.channel)))?;
            let cost = u64::try_from(row.cost)
                .map_err(|_| bad(format!("has a negative cost ({})", row.cost)))?;
            live.push(LiveReservation {
                channel,
                created_at,
                sent_at,
                cost,
            });
        }
        Ok(QuotaRows(live))
    }

    /// When each live reservation counts, across channels.
    pub fn window_counted(&self, now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        self.0.iter().map(|r| counted_at(r.sent_at, now)).collect()
    }

    /// The stamps of each live reservation of one channel, which decide the days it counts
    /// on ([`Stamps::could_fall_in`]).
    pub fn daily_counted(&self, channel: &ChannelName) -> Vec<Stamps> {
        self.0
            .iter()
            .filter(|r| &r.channel == channel)
            .map(LiveReservation::stamps)
            .collect()
    }

    /// What each live reservation of one channel charged its money budget, with its stamps
    /// (which decide the calendar months it counts in).
    pub fn charges(&self, channel: &ChannelName) -> Vec<(Stamps, u64)> {
        self.0
            .iter()
            .filter(|r| &r.channel == channel && r.cost > 0)
            .map(|r| (r.stamps(), r.cost))
            .collect()
    }
}

impl LiveReservation {
    /// When it was decided and sent.
    pub fn stamps(&self) -> Stamps {
        Stamps {
            made: self.created_at,
            sent: self.sent_at,
        }
    }
}

/// The earliest send time a quota decision at `now` must read: the start of the rolling
/// window, and of the channel's local day (and, with a money budget, month) the decision
/// could fall in, widened by the clock allowance twice (a stamp counts that far beyond its
/// period, and a reservation may be sent up to that much before it was made).
pub fn quota_since(now: DateTime<Utc>, req: &crate::QuotaClaim) -> DateTime<Utc> {
    let earliest = now - CLOCK_ALLOWANCE;
    let (day_start, _) = airlock_core::quota::day_bounds(earliest, req.daily.tz);
    let mut since = day_start.min(now - req.window.window);
    if let Some(charge) = &req.budget {
        let (month_start, _) = airlock_core::budget::month_bounds(earliest, charge.rule.tz);
        since = since.min(month_start);
    }
    since - CLOCK_ALLOWANCE * 2
}

/// The decision on a reservation on `channel` at `now` from the checked live rows: the
/// post quota (window and day) and, with a budget, the channel's spending this month.
/// When more than one refuses, the one that frees last is named.
pub fn decide_reservation(
    now: DateTime<Utc>,
    channel: &ChannelName,
    req: &crate::QuotaClaim,
    live: &QuotaRows,
) -> std::result::Result<(), airlock_core::quota::Denial> {
    let posts = airlock_core::quota::decide(
        now,
        req.window,
        req.daily,
        &live.window_counted(now),
        &live.daily_counted(channel),
    );
    let money = match &req.budget {
        Some(charge) => airlock_core::budget::decide(now, charge.rule, &live.charges(channel)),
        None => Ok(()),
    };
    match (posts, money) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(denial), Ok(())) | (Ok(()), Err(denial)) => Err(denial),
        (Err(a), Err(b)) => Err(if b.next_free_at > a.next_free_at {
            b
        } else {
            a
        }),
    }
}

/// A reservation row as a backend read it, before checking.
#[derive(Debug, Clone)]
pub struct RawReservation {
    /// Row id.
    pub id: i64,
    /// Channel column.
    pub channel: String,
    /// State column.
    pub state: String,
    /// Parsed `created_at`, or its text when unreadable.
    pub created_at: std::result::Result<DateTime<Utc>, String>,
    /// Parsed `sent_at`, or its text when unreadable.
    pub sent_at: Option<std::result::Result<DateTime<Utc>, String>>,
    /// `cost_usd_micros` (a negative value is refused by the check).
    pub cost: i64,
}
