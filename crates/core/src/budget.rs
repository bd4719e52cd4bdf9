//! Money as a quota (X's pay-per-use API): a channel's spending per calendar month in its
//! time zone, as pure functions of `now`.
//!
//! Amounts are whole micro-dollars (`u64`), so sums are exact. A post costs
//! [`Costs::post`], or [`Costs::url_post`] when it carries a link. The budget is a
//! spending stop: a post may be reserved while the month's spending so far — reserved and
//! committed reservations, counted on the local month they were made in — is below the
//! budget; the first post that starts at or above it is held until the month turns. So
//! the month can end above the budget by at most the cost of the last post that started
//! below it (with `monthly_budget_usd = 0.04` and $0.015 posts, three go out and the
//! fourth is held). The stores call [`decide`] in the transaction that inserts the
//! reservation, together with the post quota of [`crate::quota`]. Like a day there, a
//! reservation counts on every month any of its stamps could fall in
//! ([`Stamps::could_fall_in`]), so clocks that disagree near the turn of a month cannot
//! spend a budget twice.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::quota::{Denial, Limit, Stamps, earliest_free, local_day_start};

/// One US dollar in micro-dollars.
pub const MICROS_PER_USD: u64 = 1_000_000;

/// The largest amount a setting may name: a billion dollars.
const MAX_USD: f64 = 1e9;

/// What one post costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Costs {
    /// A post without a link, in micro-dollars.
    pub post: u64,
    /// A post with a link, in micro-dollars.
    pub url_post: u64,
}

/// Micro-dollars of a price written in dollars, as X publishes its prices.
const fn usd(dollars: f64) -> u64 {
    (dollars * 1_000_000.0 + 0.5) as u64
}

impl Costs {
    /// X's published pay-per-use prices.
    pub const X_DEFAULT: Costs = Costs {
        post: usd(0.015),
        url_post: usd(0.20),
    };

    /// What a post with this text and link costs: the URL price when it has a separate
    /// link or X might find one in the text ([`may_carry_url`]). X bills by its own
    /// detection, so in doubt the URL price is charged (reserved, and released or
    /// committed like any other).
    pub fn of(&self, text: &str, link: Option<&str>) -> u64 {
        let has_link = link.is_some_and(|l| !l.trim().is_empty()) || may_carry_url(text);
        if has_link { self.url_post } else { self.post }
    }
}

/// Whether X might count `text` as carrying a URL: any `http://` or `https://`
/// anywhere (in any case, glued to other text or not), or any token that could be a
/// domain — labels of letters (in any script), digits and hyphens joined by dots, the
/// last of 2 to 63 characters with a letter in it (`inn.example.com`, `宿inn-cats.jp`,
/// `café.fr`, `inn.xn--p1ai`, `猫.中国`). Generous on purpose: a sentence like `Mr.Smith` counts too, which
/// costs the URL price rather than a bill over the budget; numbers like `1.2` do not.
pub fn may_carry_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if lower.contains("http://") || lower.contains("https://") {
        return true;
    }
    text.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '-'))
        .map(|word| word.trim_matches(|c| c == '.' || c == '-'))
        .any(|word| {
            let labels: Vec<&str> = word.split('.').collect();
            let tld = labels.last().copied().unwrap_or("");
            labels.len() >= 2
                && labels.iter().all(|l| !l.is_empty())
                && (2..=63).contains(&tld.chars().count())
                && tld.chars().any(char::is_alphabetic)
        })
}

/// A channel's monthly money budget and what its posts cost, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most spending per calendar month in the channel's zone, in micro-dollars.
    pub monthly: u64,
    /// What a post costs.
    pub costs: Costs,
}

/// A channel's monthly budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetRule {
    /// Most spending per month, in micro-dollars.
    pub monthly: u64,
    /// The calendar's time zone.
    pub tz: Tz,
}

/// What a reservation charges against a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// The budget.
    pub rule: BudgetRule,
    /// This post's cost, in micro-dollars.
    pub cost: u64,
}

/// A channel's spending this month.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Spend {
    /// Reserved and committed this month, in US dollars.
    pub used_usd: f64,
    /// The monthly budget, in US dollars.
    pub budget_usd: f64,
    /// What is left (never below zero), in US dollars.
    pub remaining_usd: f64,
    /// The local month's first instant.
    pub month_start: DateTime<Utc>,
    /// When the budget starts again (the next local month): `null` while a post may go out.
    pub next_free_at: Option<DateTime<Utc>>,
}

/// The UTC bounds `[start, end)` of the local calendar month containing `now` in `tz`.
pub fn month_bounds(now: DateTime<Utc>, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let local = now.with_timezone(&tz).date_naive();
    let first = NaiveDate::from_ymd_opt(local.year(), local.month(), 1).unwrap_or(local);
    let next = if local.month() == 12 {
        NaiveDate::from_ymd_opt(local.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(local.year(), local.month() + 1, 1)
    }
    .unwrap_or(first);
    (local_day_start(first, tz), local_day_start(next, tz))
}

/// Micro-dollars spent this month, from the stamps and costs of the channel's live
/// reservations: those that could fall in the local month containing `now`.
pub fn used(now: DateTime<Utc>, tz: Tz, charges: &[(Stamps, u64)]) -> u64 {
    let (start, end) = month_bounds(now, tz);
    used_in(charges, start, end)
}

fn used_in(charges: &[(Stamps, u64)], start: DateTime<Utc>, end: DateTime<Utc>) -> u64 {
    charges
        .iter()
        .filter(|(stamps, _)| stamps.could_fall_in(start, end))
        .map(|(_, cost)| *cost)
        .fold(0u64, u64::saturating_add)
}

/// The month's spending against the budget.
pub fn spend(now: DateTime<Utc>, rule: BudgetRule, charges: &[(Stamps, u64)]) -> Spend {
    let used = used(now, rule.tz, charges);
    let (start, _) = month_bounds(now, rule.tz);
    Spend {
        used_usd: to_usd(used),
        budget_usd: to_usd(rule.monthly),
        remaining_usd: to_usd(rule.monthly.saturating_sub(used)),
        month_start: start,
        next_free_at: decide(now, rule, charges).err().map(|d| d.next_free_at),
    }
}

/// Whether one more post fits the budget at `now`: yes while the spending of every month
/// its stamp could fall in is below it. A refusal names the spending and budget in
/// micro-dollars and when a post may start again (the month's turn, past the clock
/// allowance).
pub fn decide(
    now: DateTime<Utc>,
    rule: BudgetRule,
    charges: &[(Stamps, u64)],
) -> Result<(), Denial> {
    let full = |at: DateTime<Utc>| {
        let (start, end) = month_bounds(at, rule.tz);
        let used = used_in(charges, start, end);
        (used >= rule.monthly).then_some((used, end))
    };
    match earliest_free(now, full) {
        None => Ok(()),
        Some((used, next_free_at)) => Err(Denial {
            limit: Limit::Budget,
            used,
            max: rule.monthly,
            next_free_at,
        }),
    }
}

/// Micro-dollars as dollars.
pub fn to_usd(micros: u64) -> f64 {
    micros as f64 / MICROS_PER_USD as f64
}

/// Micro-dollars written as dollars for people: `$0.045`, `$5.00`, `$0.0035`.
pub fn format_usd(micros: u64) -> String {
    let dollars = micros / MICROS_PER_USD;
    let fraction = micros % MICROS_PER_USD;
    let digits = format!("{fraction:06}");
    let trimmed = digits.trim_end_matches('0');
    let shown = if trimmed.len() < 2 {
        &digits[..2]
    } else {
        trimmed
    };
    format!("${dollars}.{shown}")
}

/// A dollar amount from configuration as micro-dollars; refuses negative, not finite,
/// absurd, or finer than a micro-dollar.
pub fn parse_usd(value: f64) -> Result<u64, String> {
    if !value.is_finite() || value < 0.0 {
        return Err(format!(
            "{value} is not an amount of US dollars (0 or more)"
        ));
    }
    if value > MAX_USD {
        return Err(format!(
            "{value} US dollars is more than any budget airlock takes"
        ));
    }
    let micros = (value * MICROS_PER_USD as f64).round();
    if ((micros / MICROS_PER_USD as f64) - value).abs() > 1e-9 {
        return Err(format!("{value} is finer than a millionth of a dollar"));
    }
    Ok(micros as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::CLOCK_ALLOWANCE;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// X bills a post as a URL post by its own detection: bare domains and a scheme glued
    /// to text count too. When in doubt, the URL price.
    #[test]
    fn the_url_price_is_charged_whenever_x_might_see_a_link() {
        let costs = Costs::X_DEFAULT;
        for text in [
            "Stay at inn.example.com tonight",
            "猫の宿はhttps://inn.example/にあります",
            "Book now:https://inn.example/rooms",
            "宿inn-cats.jp",
            "Read HTTPS://INN.EXAMPLE/A",
            "Мы на inn.xn--p1ai",
            "cats.co2 and more",
            "dîner au café.fr",
            "猫.中国",
            "see inn.example-1",
            "Mochi at https://inn.example/a.",
        ] {
            assert_eq!(costs.of(text, None), costs.url_post, "{text}");
        }
        assert_eq!(
            costs.of("Mochi naps.", Some("https://inn.example/")),
            costs.url_post
        );
        for text in [
            "Mochi naps. Then eats.",
            "Version 1.2 is out",
            "猫の宿",
            "Open 9.30 to 17.00",
            "",
        ] {
            assert_eq!(costs.of(text, None), costs.post, "{text}");
        }
    }

    #[test]
    fn a_budget_of_four_cents_lets_three_posts_of_one_and_a_half_cents_go_out() {
        let tz: Tz = "UTC".parse().unwrap();
        let rule = BudgetRule {
            monthly: parse_usd(0.04).unwrap(),
            tz,
        };
        let now = at("2026-12-10T10:00:00Z");
        let mut charges = Vec::new();
        for n in 1..=3 {
            assert!(decide(now, rule, &charges).is_ok(), "post {n}");
            charges.push((Stamps::made(now), Costs::X_DEFAULT.post));
        }
        let denial = decide(now, rule, &charges).unwrap_err();
        assert_eq!(denial.limit, Limit::Budget);
        assert_eq!((denial.used, denial.max), (45_000, 40_000));
        let turn = at("2027-01-01T00:00:00Z") + CLOCK_ALLOWANCE;
        assert_eq!(denial.next_free_at, turn);
        let spend = spend(now, rule, &charges);
        assert_eq!(spend.remaining_usd, 0.0);
        assert!((spend.used_usd - 0.045).abs() < 1e-12);
        assert_eq!(spend.next_free_at, Some(turn));
    }

    #[test]
    fn a_zero_budget_holds_every_post() {
        let tz: Tz = "UTC".parse().unwrap();
        let rule = BudgetRule { monthly: 0, tz };
        assert!(decide(at("2026-12-10T10:00:00Z"), rule, &[]).is_err());
    }

    #[test]
    fn the_month_is_the_channels_local_calendar_month() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        // 2026-11-30T15:00Z is midnight of December 1 in Tokyo.
        let (start, end) = month_bounds(at("2026-12-10T00:00:00Z"), tz);
        assert_eq!(start, at("2026-11-30T15:00:00Z"));
        assert_eq!(end, at("2026-12-31T15:00:00Z"));
        let rule = BudgetRule {
            monthly: 20_000,
            tz,
        };
        // Spent at 23:30 Tokyo on November 30: last month's, whatever UTC says.
        let november = [(Stamps::made(at("2026-11-30T14:30:00Z")), 15_000)];
        assert!(decide(at("2026-11-30T14:45:00Z"), rule, &november).is_ok());
        let both = [
            november[0],
            (Stamps::made(at("2026-11-30T14:50:00Z")), 15_000),
        ];
        assert!(decide(at("2026-11-30T14:53:00Z"), rule, &both).is_err());
        // Minutes later it is December in Tokyo by any clock: the budget starts again.
        assert!(decide(at("2026-11-30T15:05:00Z"), rule, &both).is_ok());
        // Spent just before the turn by a clock that may be slow: December's too.
        let late = [(Stamps::made(at("2026-11-30T14:57:00Z")), 20_000)];
        assert!(decide(at("2026-11-30T15:30:00Z"), rule, &late).is_err());
        let (start, end) = month_bounds(at("2026-12-31T16:00:00Z"), tz);
        assert_eq!(start, at("2026-12-31T15:00:00Z"));
        assert_eq!(end, at("2027-01-31T15:00:00Z"));
    }

    #[test]
    fn a_post_with_a_link_costs_the_url_price() {
        let costs = Costs::X_DEFAULT;
        assert_eq!(costs.of("Mochi naps.", None), 15_000);
        assert_eq!(
            costs.of("Mochi naps.", Some("https://inn.example/")),
            200_000
        );
        assert_eq!(costs.of("See https://inn.example/a", None), 200_000);
        assert_eq!(costs.of("No link here.", Some(" ")), 15_000);
        // X bills a bare domain as a link.
        assert_eq!(costs.of("A link: inn.example", Some(" ")), 200_000);
    }

    #[test]
    fn amounts_parse_exactly_and_show_as_dollars() {
        assert_eq!(parse_usd(0.015).unwrap(), 15_000);
        assert_eq!(parse_usd(0.2).unwrap(), 200_000);
        assert_eq!(parse_usd(25.0).unwrap(), 25_000_000);
        assert!(parse_usd(-1.0).is_err());
        assert!(parse_usd(f64::NAN).is_err());
        assert!(parse_usd(0.0000001).is_err());
        assert!(parse_usd(1e12).is_err());
        assert_eq!(format_usd(45_000), "$0.045");
        assert_eq!(format_usd(40_000), "$0.04");
        assert_eq!(format_usd(5_000_000), "$5.00");
        assert_eq!(format_usd(3_500), "$0.0035");
        assert_eq!(format_usd(0), "$0.00");
    }
}
