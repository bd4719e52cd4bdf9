//! Cases for quota reservations (docs/quotas.md): the rolling window across channels, the
//! daily limit per channel in its time zone, what keeps counting and what frees a slot, the
//! live rows, and exactness under concurrent reservers with separate handles.
//!
//! The arithmetic itself is `airlock_core::quota`'s and has its own unit tests; these
//! cases check that a backend feeds it the right rows inside one serialized transaction.
//! Corrupt rows need hand-written SQL and are checked in each backend's own tests.

use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};

use airlock_core::budget::{BudgetRule, Charge};
use airlock_core::quota::{CLOCK_ALLOWANCE, Limit};
use airlock_core::{Post, PostStatus};
use airlock_store::{Change, PostChange, Store};

use crate::Ledger;
use crate::fixture::*;

fn granted(res: Reserved) -> Post {
    match res {
        Reserved::Granted(post) => *post,
        Reserved::Denied(denial) => panic!("expected a grant, got {denial:?}"),
    }
}

/// A post claimed with a granted reservation and an intent sent at `sent`.
async fn sent(store: &dyn Store, channel: &str, sent: chrono::DateTime<Utc>, limit: u32) -> Post {
    let post = approved(store, channel, &format!("sent at {sent}"), sent).await;
    let post = granted(reserve(store, &post, sent, limit, limit).await);
    intent(store, &post, sent).await;
    post
}

/// The rolling window counts every channel's reservations from their send time: at the
/// limit a reservation is denied until the oldest leaves the window.
pub async fn the_window_limit_holds_across_channels(store: Arc<dyn Store>) {
    let s = store.as_ref();
    sent(s, "alpha", t0(), 100).await;
    sent(s, "beta", mins(1), 100).await;
    sent(s, "gamma", mins(2), 100).await;

    let next = approved(s, "delta", "fourth", mins(3)).await;
    match reserve(s, &next, mins(3), 3, 100).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Window);
            assert_eq!((denial.used, denial.max), (3, 3));
            assert_eq!(denial.next_free_at, mins(60));
        }
        granted => panic!("the window is full: {granted:?}"),
    }
    assert!(
        s.post_detail(next.id)
            .await
            .unwrap()
            .reservations
            .is_empty()
    );
    granted(reserve(s, &next, mins(60), 3, 100).await);
}

/// The daily limit counts one channel's reservations per calendar day in its time zone;
/// other channels are not affected, and a new local day starts afresh.
pub async fn the_daily_limit_holds_per_channel_and_local_day(store: Arc<dyn Store>) {
    let s = store.as_ref();
    // 23:00 in Tokyo on the day before t0's day.
    let yesterday = t0() - Duration::hours(13);
    sent(s, "alpha", yesterday, 100).await;
    sent(s, "alpha", t0(), 100).await;
    sent(s, "alpha", mins(1), 100).await;

    let third = approved(s, "alpha", "third today", mins(2)).await;
    let tokyo_midnight = Utc.with_ymd_and_hms(2026, 3, 2, 15, 0, 0).single().unwrap();
    match reserve(s, &third, mins(2), 100, 2).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Daily);
            assert_eq!((denial.used, denial.max), (2, 2));
            // A decision made at midnight could be by a clock up to the allowance fast.
            assert_eq!(denial.next_free_at, tokyo_midnight + CLOCK_ALLOWANCE);
        }
        granted => panic!("the day is full: {granted:?}"),
    }
    let other = approved(s, "beta", "another channel", mins(2)).await;
    granted(reserve(s, &other, mins(2), 100, 2).await);
    granted(reserve(s, &third, tokyo_midnight + CLOCK_ALLOWANCE, 100, 2).await);
}

/// A reservation whose stamps lie within the clock allowance of local midnight counts on
/// both days (a clock that disagreed by that much could have put it on either), and a
/// new one needs room on every day its own stamp could fall in: no real local day ever
/// holds more than its limit, however the deciders' clocks disagree.
pub async fn a_reservation_near_midnight_counts_on_both_days(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let tokyo_midnight = Utc.with_ymd_and_hms(2026, 3, 2, 15, 0, 0).single().unwrap();
    let late = approved(
        s,
        "alpha",
        "decided at 23:59:59",
        tokyo_midnight - Duration::seconds(1),
    )
    .await;
    let late = granted(reserve(s, &late, tokyo_midnight - Duration::seconds(1), 100, 1).await);
    intent(s, &late, tokyo_midnight + Duration::seconds(1)).await;
    // The new day already holds it: with a limit of one, that day is full until it ends.
    let next = approved(
        s,
        "alpha",
        "decided at 00:10",
        tokyo_midnight + Duration::minutes(10),
    )
    .await;
    let next_day_end = tokyo_midnight + Duration::days(1);
    match reserve(s, &next, tokyo_midnight + Duration::minutes(10), 100, 1).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Daily);
            assert_eq!(denial.next_free_at, next_day_end + CLOCK_ALLOWANCE);
        }
        granted => panic!("the new day holds the late one: {granted:?}"),
    }
    // Away from midnight, a day counts only its own.
    let two = approved(s, "beta", "one", tokyo_midnight + Duration::hours(2)).await;
    granted(reserve(s, &two, tokyo_midnight + Duration::hours(2), 100, 2).await);
    let three = approved(s, "beta", "two", tokyo_midnight + Duration::hours(3)).await;
    granted(reserve(s, &three, tokyo_midnight + Duration::hours(3), 100, 2).await);
    // A decision 2 minutes before the next midnight needs room on both days: the day is full.
    let edge = approved(s, "beta", "edge", next_day_end - Duration::minutes(2)).await;
    match reserve(s, &edge, next_day_end - Duration::minutes(2), 100, 2).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Daily);
            assert_eq!(denial.next_free_at, next_day_end + CLOCK_ALLOWANCE);
        }
        granted => panic!("the day is full: {granted:?}"),
    }
    granted(reserve(s, &edge, next_day_end + CLOCK_ALLOWANCE, 100, 2).await);
}

/// A post whose earlier attempt sent it (a person had settled it "not published", and a
/// retry found the earlier attempt's object and sent nothing) is counted by that
/// attempt's reservation with its own stamps — counted again as a new committed row,
/// since the resolution had released it — and the retry's own is released: one
/// committed row, sent when the platform received the request.
pub async fn a_publish_found_from_an_earlier_attempt_counts_that_attempt(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = reserved(s, "alpha", "sent by the first attempt", t0()).await;
    intent(s, &first, mins(1)).await;
    let first = s
        .change_post(outcome(&first, PostStatus::NeedsReview, mins(2)))
        .await
        .unwrap();
    let resolved = Change::SettledNotPublished {
        version: first.version,
        error: "not published".into(),
        note: "confirmed not published".into(),
    };
    let failed = s
        .change_post(PostChange::new(first.id, CRITIC, mins(10), resolved))
        .await
        .unwrap();
    let requeue = Change::Requeued {
        version: failed.version,
    };
    let approved = s
        .change_post(PostChange::new(first.id, CRITIC, mins(11), requeue))
        .await
        .unwrap();
    let retry = granted(reserve(s, &approved, mins(20), 10, 10).await);
    let found = Change::Published {
        part: 1,
        generation: retry.generation,
        posted_at: mins(1),
        platform_post_id: Some("p-1".into()),
        permalink: None,
        sent_by: Some(first.generation),
        note: "already published by an earlier attempt".into(),
        flag: None,
        pause: None,
    };
    s.change_post(PostChange::new(first.id, DISPATCHER, mins(21), found))
        .await
        .unwrap();

    let detail = s.post_detail(first.id).await.unwrap();
    let states: Vec<(i64, &str)> = detail
        .reservations
        .iter()
        .map(|r| (r.generation, r.state.as_str()))
        .collect();
    assert_eq!(
        states,
        [(1, "released"), (2, "released"), (1, "committed")],
        "{:?}",
        detail.reservations
    );
    let counted = &detail.reservations[2];
    assert_eq!(counted.created_at, t0());
    assert_eq!(counted.sent_at, Some(mins(1)));
    let live = s.quota_rows(mins(-60), mins(30)).await.unwrap();
    assert_eq!(live.0.len(), 1, "{live:?}");
    assert_eq!(live.window_counted(mins(30)), [mins(1)]);
}

/// An unsent reservation counts as "now" for as long as it is unsent.
pub async fn an_unsent_reservation_counts_as_now(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = approved(s, "alpha", "unsent", t0()).await;
    granted(reserve(s, &first, t0(), 1, 100).await);
    let second = approved(s, "beta", "waiting", mins(90)).await;
    match reserve(s, &second, mins(90), 1, 100).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Window);
            assert_eq!(denial.next_free_at, mins(150));
        }
        granted => panic!("an unsent reservation still counts: {granted:?}"),
    }
}

/// Releasing a reservation frees its slot at once.
pub async fn releasing_a_reservation_frees_its_slot(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = approved(s, "alpha", "released", t0()).await;
    let first = granted(reserve(s, &first, t0(), 1, 1).await);
    let second = approved(s, "alpha", "next", mins(1)).await;
    assert!(matches!(
        reserve(s, &second, mins(1), 1, 1).await,
        Reserved::Denied(_)
    ));
    s.change_post(outcome(&first, PostStatus::Approved, mins(2)))
        .await
        .unwrap();
    assert_eq!(
        s.post_detail(first.id).await.unwrap().reservations[0].state,
        "released"
    );
    granted(reserve(s, &second, mins(3), 1, 1).await);
}

/// A committed reservation and one whose post needs review both keep counting.
pub async fn committed_and_needs_review_reservations_keep_counting(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let published = sent(s, "alpha", t0(), 2).await;
    s.change_post(outcome(&published, PostStatus::Posted, mins(1)))
        .await
        .unwrap();

    let unknown = sent(s, "alpha", mins(2), 2).await;
    s.change_post(outcome(&unknown, PostStatus::NeedsReview, mins(3)))
        .await
        .unwrap();
    assert_eq!(
        s.post_detail(unknown.id).await.unwrap().reservations[0].state,
        "reserved"
    );

    let third = approved(s, "beta", "third", mins(4)).await;
    match reserve(s, &third, mins(4), 2, 100).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.used, 2);
            assert_eq!(denial.next_free_at, mins(60));
        }
        granted => panic!("both still count: {granted:?}"),
    }
    let rows = s.quota_rows(mins(-60), mins(5)).await.unwrap();
    assert_eq!(rows.0.len(), 2);
}

/// The live rows are the reserved and committed reservations sent at or after `since`,
/// and every unsent one; released ones never count.
pub async fn quota_rows_are_live_reservations_since_a_time(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert!(s.quota_rows(mins(-60), mins(5)).await.unwrap().0.is_empty());
    let unsent = approved(s, "gamma", "unsent", mins(-300)).await;
    granted(reserve(s, &unsent, mins(-300), 100, 100).await);
    sent(s, "alpha", mins(-180), 100).await;
    sent(s, "beta", mins(-10), 100).await;
    let released = sent(s, "delta", mins(-5), 100).await;
    s.change_post(outcome(&released, PostStatus::Failed, mins(-4)))
        .await
        .unwrap();

    let mut rows: Vec<(String, Option<chrono::DateTime<Utc>>)> = s
        .quota_rows(mins(-60), t0())
        .await
        .unwrap()
        .0
        .into_iter()
        .map(|r| (r.channel.to_string(), r.sent_at))
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        vec![
            ("beta".to_owned(), Some(mins(-10))),
            ("gamma".to_owned(), None)
        ]
    );
}

/// Many reservers, each with its own handle, released at once to race for a daily limit
/// and a window that spans channels: exactly the limit is granted, never more.
pub async fn concurrent_reservers_never_exceed_the_limits(ledger: &Ledger) {
    const N_POSTS: usize = 24;
    const DAILY: u32 = 3;
    const WINDOW: u32 = 5;
    let s = ledger.store.as_ref();
    let mut posts = Vec::new();
    for idx in 0..N_POSTS {
        // Half on alpha (bound by its daily limit), half spread over other channels.
        let channel = if idx % 2 == 0 {
            "alpha".to_owned()
        } else {
            format!("c{idx}")
        };
        posts.push(approved(s, &channel, &format!("post {idx}"), t0()).await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(N_POSTS));
    let mut tasks = tokio::task::JoinSet::new();
    for post in posts {
        let handle = ledger.backend.open().await;
        let start = start.clone();
        tasks.spawn(async move {
            start.wait().await;
            let res = reserve(handle.as_ref(), &post, mins(1), WINDOW, DAILY).await;
            (post.content.channel.to_string(), res)
        });
    }
    let mut granted_alpha = 0;
    let mut granted_all = 0;
    while let Some(done) = tasks.join_next().await {
        let (channel, res) = done.expect("reserver task");
        if matches!(res, Reserved::Granted(_)) {
            granted_all += 1;
            if channel == "alpha" {
                granted_alpha += 1;
            }
        }
    }
    assert!(
        granted_alpha <= DAILY,
        "alpha got {granted_alpha} > {DAILY}"
    );
    assert_eq!(granted_all, WINDOW, "the window grants exactly its limit");
    assert_eq!(
        s.quota_rows(mins(-60), mins(5)).await.unwrap().0.len(),
        WINDOW as usize
    );
}

/// A reservation on `channel` charging `cost` micro-dollars against a `monthly` budget
/// in Tokyo's calendar, with roomy post limits.
async fn reserve_money(
    store: &dyn Store,
    post: &Post,
    now: chrono::DateTime<Utc>,
    monthly: u64,
    cost: u64,
) -> Reserved {
    let mut claim = post_claim(post, now, Some((100, 100)));
    if let Some(quota) = &mut claim.quota {
        quota.budget = Some(Charge {
            rule: BudgetRule {
                monthly,
                tz: "Asia/Tokyo".parse().unwrap(),
            },
            cost,
        });
    }
    reserve_with(store, &claim).await
}

/// A channel's money budget counts its live reservations' costs in its local calendar
/// month: while the month's spending is below the budget a post may go out (three posts
/// of $0.015 under $0.04), then the next is denied until the month turns; other channels
/// and last month's spending do not count, and a released reservation gives its money back.
pub async fn a_money_budget_holds_per_channel_and_local_month(store: Arc<dyn Store>) {
    let s = store.as_ref();
    const BUDGET: u64 = 40_000;
    const POST: u64 = 15_000;
    // 23:00 in Tokyo on February 28: last month's.
    let february = Utc
        .with_ymd_and_hms(2026, 2, 28, 14, 0, 0)
        .single()
        .unwrap();
    let old = approved(s, "x-main", "february", february).await;
    let old = granted(reserve_money(s, &old, february, BUDGET, POST).await);
    intent(s, &old, february).await;

    let mut posts = Vec::new();
    for n in 0..3 {
        let post = approved(s, "x-main", &format!("march {n}"), mins(n * 10)).await;
        let post = granted(reserve_money(s, &post, mins(n * 10), BUDGET, POST).await);
        intent(s, &post, mins(n * 10)).await;
        posts.push(post);
    }
    let fourth = approved(s, "x-main", "march 3", mins(40)).await;
    let tokyo_april = Utc
        .with_ymd_and_hms(2026, 3, 31, 15, 0, 0)
        .single()
        .unwrap();
    match reserve_money(s, &fourth, mins(40), BUDGET, POST).await {
        Reserved::Denied(denial) => {
            assert_eq!(denial.limit, Limit::Budget);
            assert_eq!((denial.used, denial.max), (45_000, BUDGET));
            assert_eq!(denial.next_free_at, tokyo_april + CLOCK_ALLOWANCE);
        }
        granted => panic!("the budget is spent: {granted:?}"),
    }
    assert!(
        s.post_detail(fourth.id)
            .await
            .unwrap()
            .reservations
            .is_empty()
    );
    // Another channel has its own budget.
    let other = approved(s, "x-other", "elsewhere", mins(41)).await;
    granted(reserve_money(s, &other, mins(41), BUDGET, POST).await);
    // The costs are on the rows.
    let rows = s.quota_rows(mins(-60 * 24 * 3), mins(42)).await.unwrap();
    assert_eq!(rows.charges(&ch("x-main")).len(), 4);
    assert!(rows.charges(&ch("x-main")).iter().all(|(_, c)| *c == POST));

    // A post that failed releases its money.
    s.change_post(outcome(&posts[2], PostStatus::Failed, mins(50)))
        .await
        .unwrap();
    granted(reserve_money(s, &fourth, mins(51), BUDGET, POST).await);
    // Committed money keeps counting, and the next month starts afresh.
    s.change_post(outcome(&posts[0], PostStatus::Posted, mins(52)))
        .await
        .unwrap();
    let fifth = approved(s, "x-main", "march 4", mins(53)).await;
    assert!(matches!(
        reserve_money(s, &fifth, mins(53), BUDGET, POST).await,
        Reserved::Denied(_)
    ));
    granted(reserve_money(s, &fifth, tokyo_april + CLOCK_ALLOWANCE, BUDGET, POST).await);
}

/// Reservers with their own handles racing for one channel's budget: exactly the posts
/// that start below it are granted, never more.
pub async fn concurrent_reservers_never_overspend_a_budget(ledger: &Ledger) {
    const N_POSTS: usize = 12;
    let s = ledger.store.as_ref();
    let mut posts = Vec::new();
    for idx in 0..N_POSTS {
        posts.push(approved(s, "x-main", &format!("post {idx}"), t0()).await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(N_POSTS));
    let mut tasks = tokio::task::JoinSet::new();
    for post in posts {
        let handle = ledger.backend.open().await;
        let start = start.clone();
        tasks.spawn(async move {
            start.wait().await;
            reserve_money(handle.as_ref(), &post, mins(1), 40_000, 15_000).await
        });
    }
    let mut granted = 0;
    while let Some(done) = tasks.join_next().await {
        if matches!(done.expect("reserver task"), Reserved::Granted(_)) {
            granted += 1;
        }
    }
    assert_eq!(granted, 3, "three posts start below $0.04");
}
