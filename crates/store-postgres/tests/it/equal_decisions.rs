//! One decision, two languages, held equal (issue 26): where a rule is written both in
//! Rust (what the SQLite backend runs) and in SQL (PL/pgSQL functions and triggers, and
//! SQLite's triggers), generated inputs are fed to every copy and the answers must agree.
//!
//! - the quota and budget decision: `airlock_store::decide_reservation` over
//!   `QuotaRows::check` vs `airlock_quota_decision` (which runs `airlock_could_fall_in`
//!   and `airlock_earliest_free`), stamps around local midnights, month turns and DST
//!   changes;
//! - status walks (with quarantine, content edits and `posted_at`): PostgreSQL's and
//!   SQLite's triggers vs `airlock_core::status::is_legal` and the quarantine rules;
//! - write refusals: both stores' size triggers vs `airlock_core::limits`;
//! - duplicate intents: `airlock_insert_intent` and SQLite's unique key vs a set;
//! - the helpers written twice: `airlock_fit` vs `limits::fit_chars`,
//!   `airlock_could_fall_in` vs `Stamps::could_fall_in`, `airlock_show_time` vs chrono's
//!   display of a `DateTime<Utc>`.
//!
//! Each test creates its PostgreSQL database (and SQLite file) once and runs every case
//! against it; a case's rows are rolled back or left behind where they cannot matter.

use std::collections::HashSet;
use std::future::Future;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, SqlitePool};

use airlock_core::budget::{BudgetRule, Charge, month_bounds};
use airlock_core::limits::{
    MAX_ALT_CHARS, MAX_ERROR_CHARS, MAX_EVENT_NOTE_CHARS, MAX_MEDIA, MAX_PARTS, MAX_TEXT_CHARS,
    MAX_TITLE_CHARS, MAX_URL_CHARS, check_chars, check_content, fit_chars,
};
use airlock_core::post::{Media, Part};
use airlock_core::quota::{DailyRule, Limit, Stamps, WindowRule, day_bounds};
use airlock_core::status::{is_legal, quarantine_allows};
use airlock_core::{Action, ChannelName, ContentPolicy, PostContent, PostStatus};
use airlock_store::{QuotaClaim, QuotaRows, RawReservation, StoreError, decide_reservation};
use airlock_store_sqlite::SqliteStore;

use crate::support::{TestDb, store};

/// Runs `cases` generated inputs (`PROPTEST_CASES` when set, for a longer run by hand)
/// through `check`, on a runtime of the test's own (the runner is synchronous). No
/// regression files: a case a property finds is kept as a plain test below.
fn check_all<S, F, Fut>(rt: &tokio::runtime::Runtime, cases: u32, strategy: S, check: F)
where
    S: Strategy,
    S::Value: Clone,
    F: Fn(S::Value) -> Fut,
    Fut: Future<Output = Result<(), TestCaseError>>,
{
    let config = Config::default();
    let mut runner = TestRunner::new(Config {
        cases: match std::env::var_os("PROPTEST_CASES") {
            Some(_) => config.cases,
            None => cases,
        },
        failure_persistence: None,
        ..config
    });
    if let Err(e) = runner.run(&strategy, |value| rt.block_on(check(value))) {
        panic!("{e}");
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A migrated test database and a one-connection pool on it, as the owner, whose
/// commits do not wait for the disk.
fn postgres(rt: &tokio::runtime::Runtime) -> (TestDb, PgPool) {
    let db = TestDb::create();
    let pool = rt.block_on(async {
        store(&db).await.close().await;
        let options: sqlx::postgres::PgConnectOptions = db.url.parse().expect("a URL");
        PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.options([("synchronous_commit", "off")]))
            .await
            .expect("connect to the test database")
    });
    (db, pool)
}

/// A SQLite ledger in `dir`, migrated by the store, on one connection that does not
/// wait for the disk (the triggers are what is compared, not durability).
fn sqlite(rt: &tokio::runtime::Runtime, dir: &tempfile::TempDir) -> SqlitePool {
    let path = dir.path().join("ledger.db");
    rt.block_on(async {
        SqliteStore::open(&path).await.expect("open SQLite");
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .foreign_keys(true)
            .synchronous(sqlx::sqlite::SqliteSynchronous::Off);
        sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("connect to SQLite")
    })
}

fn sqlstate(e: &sqlx::Error) -> Option<String> {
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// A sub-second part as PostgreSQL keeps it (microseconds): none, whole milliseconds,
/// or any microseconds.
fn subsec() -> impl Strategy<Value = Duration> {
    prop_oneof![
        2 => Just(Duration::zero()),
        1 => (1i64..1000).prop_map(Duration::milliseconds),
        1 => (1i64..1_000_000).prop_map(Duration::microseconds),
    ]
}

/// A post as hand-written SQL inserts it on PostgreSQL: a draft on `alpha`.
async fn pg_draft(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
         edited_by, created_at, updated_at) \
         VALUES ('alpha', 'draft', 'x', now(), repeat('a', 64), 'sql', 'sql', now(), now()) \
         RETURNING id",
    )
    .fetch_one(pool)
    .await
    .expect("insert a draft")
}

/// The same draft on SQLite.
async fn lite_draft(pool: &SqlitePool) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
         edited_by, created_at, updated_at) \
         VALUES ('alpha', 'draft', 'x', ?1, ?2, 'sql', 'sql', ?1, ?1) RETURNING id",
    )
    .bind(lite_ts(at("2026-12-01T00:00:00Z")))
    .bind("a".repeat(64))
    .fetch_one(pool)
    .await
    .expect("insert a draft")
}

fn lite_ts(t: DateTime<Utc>) -> String {
    airlock_core::time::format_utc(t)
}

// --- 1. The quota and budget decision ------------------------------------------------

/// Zones with and without DST, at whole, half and quarter hours; Havana's clocks change
/// at midnight (a day that starts at 01:00, and one whose midnight comes twice).
const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "America/Havana",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kolkata",
];

/// Days whose local midnight the cases gather around: DST changes (American, European,
/// Lord Howe, Chatham) and their next days, and month (and year) turns.
const DATES: &[&str] = &[
    "2026-03-08",
    "2026-03-09",
    "2026-03-29",
    "2026-03-30",
    "2026-04-05",
    "2026-04-06",
    "2026-09-27",
    "2026-10-04",
    "2026-10-25",
    "2026-11-01",
    "2026-11-02",
    "2026-02-01",
    "2026-03-01",
    "2026-04-01",
    "2026-12-01",
    "2027-01-01",
];

/// A reservation row as generated: times relative to the case's local midnight.
#[derive(Debug, Clone)]
struct RowSpec {
    own: bool,
    state: &'static str,
    made: Duration,
    sent_after: Option<Duration>,
    cost: i64,
}

/// One row the fail-closed check must refuse (or, for a channel name that happens to be
/// valid, accept).
#[derive(Debug, Clone)]
enum Corrupt {
    MadeInFuture(Duration),
    SentInFuture(Duration),
    Channel(String),
}

#[derive(Debug, Clone)]
struct QuotaInput {
    zone: &'static str,
    date: &'static str,
    now_offset: Duration,
    window: Duration,
    window_limit: u32,
    daily_limit: u32,
    budget: Option<u64>,
    rows: Vec<RowSpec>,
    corrupt: Option<Corrupt>,
}

/// A row as both sides see it.
#[derive(Debug, Clone)]
struct Row {
    channel: String,
    state: &'static str,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
    cost: i64,
}

#[derive(Debug, Clone)]
struct QuotaCase {
    tz: Tz,
    now: DateTime<Utc>,
    claim: QuotaClaim,
    rows: Vec<Row>,
}

fn seconds(range: std::ops::RangeInclusive<i64>) -> impl Strategy<Value = Duration> {
    (range, subsec()).prop_map(|(s, sub)| Duration::seconds(s) + sub)
}

fn row_spec() -> impl Strategy<Value = RowSpec> {
    let made = prop_oneof![
        4 => seconds(-900..=900),
        2 => seconds(-2 * 86_400..=7_200),
        1 => seconds(-40 * 86_400..=0),
    ];
    let sent_after = prop_oneof![
        2 => Just(None),
        2 => seconds(-300..=1_800).prop_map(Some),
        1 => seconds(0..=4 * 3_600).prop_map(Some),
    ];
    let cost = prop_oneof![
        2 => Just(0i64),
        2 => Just(15_000i64),
        1 => Just(200_000i64),
        2 => 0i64..1_000_000,
        1 => Just(i64::MAX),
    ];
    (
        prop::bool::weighted(0.75),
        select(&["reserved", "reserved", "committed", "released"][..]),
        made,
        sent_after,
        cost,
    )
        .prop_map(|(own, state, made, sent_after, cost)| RowSpec {
            own,
            state,
            made,
            sent_after,
            cost,
        })
}

/// A limit of a few: now and then none at all.
fn limit(most: u32) -> impl Strategy<Value = u32> {
    prop_oneof![1 => Just(0u32), 6 => 1..=most]
}

fn quota_input() -> impl Strategy<Value = QuotaInput> {
    quota_input_up_to(8, 6)
}

/// Cases whose window and daily limits go up to these.
fn quota_input_up_to(window_most: u32, daily_most: u32) -> impl Strategy<Value = QuotaInput> {
    let now_offset = prop_oneof![
        1 => select(&[-300i64, 0, 300][..]).prop_map(Duration::seconds),
        3 => seconds(-600..=600),
        2 => seconds(-3 * 3_600..=3 * 3_600),
    ];
    let window = prop_oneof![
        select(&[60i64, 300, 1_800, 3_600, 10_800, 86_400][..]).prop_map(Duration::seconds),
        (1i64..=172_800).prop_map(Duration::seconds),
    ];
    let budget = prop_oneof![
        4 => Just(None),
        1 => Just(Some(0u64)),
        1 => select(&[15_000u64, 30_000, 45_000, 1_000_000][..]).prop_map(Some),
        2 => (0u64..600_000).prop_map(Some),
        1 => Just(Some(1_000_000_000_000_000u64)),
    ];
    let corrupt = prop_oneof![
        24 => Just(None),
        1 => seconds(1..=7_200).prop_map(|d| Some(Corrupt::MadeInFuture(d))),
        1 => seconds(1..=7_200).prop_map(|d| Some(Corrupt::SentInFuture(d))),
        1 => "[a-z0-9._A é\"-]{0,66}".prop_map(|c| Some(Corrupt::Channel(c))),
    ];
    (
        (select(ZONES), select(DATES), now_offset, window),
        (limit(window_most), limit(daily_most), budget),
        prop::collection::vec(row_spec(), 0..14),
        corrupt,
    )
        .prop_map(
            |(
                (zone, date, now_offset, window),
                (window_limit, daily_limit, budget),
                rows,
                corrupt,
            )| QuotaInput {
                zone,
                date,
                now_offset,
                window,
                window_limit,
                daily_limit,
                budget,
                rows,
                corrupt,
            },
        )
}

impl QuotaInput {
    /// The case: `now` near the date's local midnight, every row made no later than the
    /// clock allowance after `now` and sent no earlier than the allowance before it was
    /// made (so only `corrupt` is corrupt).
    fn case(&self) -> QuotaCase {
        let tz: Tz = self.zone.parse().expect("a zone");
        let date = NaiveDate::parse_from_str(self.date, "%Y-%m-%d").expect("a date");
        let midnight = airlock_core::quota::local_day_start(date, tz);
        let now = midnight + self.now_offset;
        let latest = now + airlock_core::quota::CLOCK_ALLOWANCE;
        let mut rows: Vec<Row> = self
            .rows
            .iter()
            .map(|spec| {
                let created_at = (midnight + spec.made).min(latest);
                Row {
                    channel: if spec.own { "alpha" } else { "beta" }.to_owned(),
                    state: spec.state,
                    created_at,
                    sent_at: spec.sent_after.map(|d| (created_at + d).min(latest)),
                    cost: spec.cost,
                }
            })
            .collect();
        let bad = |channel: &str, created_at, sent_at| Row {
            channel: channel.to_owned(),
            state: "reserved",
            created_at,
            sent_at,
            cost: 0,
        };
        match &self.corrupt {
            None => {}
            Some(Corrupt::MadeInFuture(d)) => rows.push(bad("alpha", latest + *d, None)),
            Some(Corrupt::SentInFuture(d)) => {
                rows.push(bad("alpha", now - Duration::minutes(1), Some(latest + *d)))
            }
            Some(Corrupt::Channel(c)) => rows.push(bad(c, now - Duration::hours(1), None)),
        }
        QuotaCase {
            tz,
            now,
            claim: QuotaClaim {
                window: WindowRule {
                    window: self.window,
                    limit: self.window_limit,
                },
                daily: DailyRule {
                    limit: self.daily_limit,
                    tz,
                },
                budget: self.budget.map(|monthly| Charge {
                    rule: BudgetRule { monthly, tz },
                    cost: 15_000,
                }),
            },
            rows,
        }
    }
}

/// A decision as both sides can say it: allowed, denied (limit, used, max, next free),
/// or refused as corrupt (the message).
type Decision = Result<Option<(String, u64, u64, DateTime<Utc>)>, String>;

fn limit_name(limit: Limit) -> &'static str {
    match limit {
        Limit::Window => "window",
        Limit::Daily => "daily",
        Limit::Budget => "budget",
    }
}

/// What the SQLite backend decides (crates/store-sqlite/src/publish.rs): the live rows
/// from `quota_since`'s UTC date on (and every unsent one), checked fail-closed, those
/// sent before `quota_since` dropped, then `decide_reservation`.
fn rust_decision(case: &QuotaCase, ids: &[i64]) -> Decision {
    let since = airlock_store::quota_since(case.now, &case.claim);
    let since_date = since
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    let raw = case
        .rows
        .iter()
        .zip(ids)
        .filter(|(r, _)| r.state != "released" && r.sent_at.is_none_or(|s| s >= since_date))
        .map(|(r, id)| RawReservation {
            id: *id,
            channel: r.channel.clone(),
            state: r.state.to_owned(),
            created_at: Ok(r.created_at),
            sent_at: r.sent_at.map(Ok),
            cost: r.cost,
        });
    let mut live = match QuotaRows::check(raw, case.now) {
        Ok(live) => live,
        Err(StoreError::CorruptQuota(reason)) => return Err(reason),
        Err(e) => panic!("unexpected {e}"),
    };
    live.0.retain(|r| r.sent_at.is_none_or(|s| s >= since));
    let alpha = ChannelName::parse("alpha").unwrap();
    Ok(decide_reservation(case.now, &alpha, &case.claim, &live)
        .err()
        .map(|d| {
            (
                limit_name(d.limit).to_owned(),
                d.used,
                d.max,
                d.next_free_at,
            )
        }))
}

/// Period starts as `PgStore::claim_post` passes them (crates/store-postgres/src/publish.rs
/// `bounds`): the period a day before `now`, and the 7 after it.
fn bounds(
    now: DateTime<Utc>,
    of: impl Fn(DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>),
) -> Vec<DateTime<Utc>> {
    let mut starts = vec![of(now - Duration::days(1)).0];
    for _ in 0..7 {
        let (_, end) = of(*starts.last().unwrap());
        starts.push(end);
    }
    starts
}

/// What `airlock_quota_decision` decides over the same rows, inserted (and rolled back)
/// for `post`; also the ids the rows got, and whether it decided from `quota_hours`
/// alone. `exact` turns that quick path off.
async fn pg_decision(
    pool: &PgPool,
    post: i64,
    case: &QuotaCase,
    exact: bool,
) -> (Decision, Vec<i64>, bool) {
    let mut tx = pool.begin().await.unwrap();
    if exact {
        sqlx::query("SET LOCAL airlock.exact_quota = 'on'")
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    let mut ids = Vec::with_capacity(case.rows.len());
    for (generation, r) in case.rows.iter().enumerate() {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO reservations (post_id, generation, channel, state, created_at, \
             sent_at, cost_usd_micros) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(post)
        .bind(generation as i64)
        .bind(&r.channel)
        .bind(r.state)
        .bind(r.created_at)
        .bind(r.sent_at)
        .bind(r.cost)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        ids.push(id);
    }
    let tz = case.tz;
    let budget = case.claim.budget;
    let row = sqlx::query_as::<
        _,
        (
            bool,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<DateTime<Utc>>,
        ),
    >(
        "SELECT denied, limit_kind, used::text, max_value::text, next_free_at \
         FROM airlock_quota_decision($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind("alpha")
    .bind(case.now)
    .bind(case.claim.window.window.num_microseconds().unwrap())
    .bind(i64::from(case.claim.window.limit))
    .bind(i64::from(case.claim.daily.limit))
    .bind(bounds(case.now, |t| day_bounds(t, tz)))
    .bind(budget.map(|b| i64::try_from(b.rule.monthly).unwrap()))
    .bind(budget.map(|b| i64::try_from(b.cost).unwrap()))
    .bind(budget.map(|_| bounds(case.now, |t| month_bounds(t, tz))))
    .fetch_one(&mut *tx)
    .await;
    let quick = row.is_ok()
        && budget.is_none()
        && sqlx::query_scalar(
            "SELECT airlock_quota_far($1, $2, $3 * interval '1 microsecond', $4, $5, $6)",
        )
        .bind("alpha")
        .bind(case.now)
        .bind(case.claim.window.window.num_microseconds().unwrap())
        .bind(i64::from(case.claim.window.limit))
        .bind(i64::from(case.claim.daily.limit))
        .bind(bounds(case.now, |t| day_bounds(t, tz)))
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let decision = match row {
        Ok((false, ..)) => Ok(None),
        Ok((true, Some(limit), Some(used), Some(max), Some(next))) => Ok(Some((
            limit,
            used.parse().unwrap(),
            max.parse().unwrap(),
            next,
        ))),
        Ok(other) => panic!("a denial without its values: {other:?}"),
        Err(e) if sqlstate(&e).as_deref() == Some("AL018") => {
            Err(e.as_database_error().unwrap().message().to_owned())
        }
        Err(e) => panic!("airlock_quota_decision failed: {e}"),
    };
    (decision, ids, quick)
}

/// Rust's decision, PL/pgSQL's from the rows, and PL/pgSQL's with the quick proof
/// allowed agree; the count of cases the quick proof decided goes up by one when it did.
async fn quota_case_agrees(
    pool: &PgPool,
    post: i64,
    case: &QuotaCase,
    quick_cases: &std::sync::atomic::AtomicU32,
) -> Result<(), TestCaseError> {
    let (exact, ids, _) = pg_decision(pool, post, case, true).await;
    let rust = rust_decision(case, &ids);
    prop_assert_eq!(&rust, &exact, "now {}, rows {:#?}", case.now, case.rows);
    let (quick, ids, far) = pg_decision(pool, post, case, false).await;
    prop_assert_eq!(
        rust_decision(case, &ids),
        quick,
        "quick path, now {}",
        case.now
    );
    if far {
        quick_cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(())
}

#[test]
fn the_quota_and_budget_decision_is_the_same_in_rust_and_plpgsql() {
    let rt = runtime();
    let (_db, pool) = postgres(&rt);
    let post = rt.block_on(pg_draft(&pool));
    let quick_cases = std::sync::atomic::AtomicU32::new(0);
    check_all(&rt, 128, quota_input(), |input| {
        let (pool, quick_cases) = (&pool, &quick_cases);
        async move { quota_case_agrees(pool, post, &input.case(), quick_cases).await }
    });
    // Limits about as large as the rows are many: the quick proof is near its edge.
    check_all(&rt, 128, quota_input_up_to(40, 30), |input| {
        let (pool, quick_cases) = (&pool, &quick_cases);
        async move { quota_case_agrees(pool, post, &input.case(), quick_cases).await }
    });
    // Limits well above the rows: mostly decided by the quick proof, so the floor below
    // does not hang on how many edge cases the two batches above happened to draw.
    check_all(&rt, 64, quota_input_up_to(400, 300), |input| {
        let (pool, quick_cases) = (&pool, &quick_cases);
        async move { quota_case_agrees(pool, post, &input.case(), quick_cases).await }
    });
    // The quick proof is exercised, not only the rows' path it stands in for.
    let quick = quick_cases.into_inner();
    assert!(
        quick >= 32,
        "the quick path decided only {quick} of 320 cases"
    );
}

// --- 2. Status walks --------------------------------------------------------------------

/// One hand-written write to a post.
#[derive(Debug, Clone, Copy)]
enum Step {
    Status(PostStatus),
    /// Quarantine (`true`) or release it.
    Quarantine(bool),
    /// A change of text and content hash.
    Edit,
    /// `posted_at` set to one of two times, or cleared.
    PostedAt(Option<u8>),
}

/// How a write was refused, by either store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// AL001, "illegal status transition".
    Illegal,
    /// AL006, "quarantined".
    Quarantined,
    /// AL002, "posted_at is permanent".
    PostedAt,
}

#[derive(Debug, Clone, Copy)]
struct Walk {
    status: PostStatus,
    quarantined: bool,
    posted_at: Option<u8>,
}

impl Walk {
    /// What the Rust rules say about `step`: the lifecycle's edges (`is_legal`), a
    /// quarantined post stays a draft (`decide::leaves_quarantine`) and only a draft is
    /// quarantined, its content is not edited (`quarantine_allows`), and `posted_at`
    /// once set stays.
    fn step(&mut self, step: Step) -> Result<(), Refusal> {
        match step {
            Step::Status(to) if to == self.status => {}
            Step::Status(to) => {
                if !is_legal(self.status, to) || (self.quarantined && to != PostStatus::Draft) {
                    return Err(Refusal::Illegal);
                }
                self.status = to;
            }
            Step::Quarantine(on) => {
                if on && self.status != PostStatus::Draft {
                    return Err(Refusal::Illegal);
                }
                self.quarantined = on;
            }
            Step::Edit => {
                if self.quarantined && !quarantine_allows(Action::Edit) {
                    return Err(Refusal::Quarantined);
                }
            }
            Step::PostedAt(to) => {
                if self.posted_at.is_some() && to != self.posted_at {
                    return Err(Refusal::PostedAt);
                }
                self.posted_at = to;
            }
        }
        Ok(())
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => select(PostStatus::ALL.to_vec()).prop_map(Step::Status),
        1 => any::<bool>().prop_map(Step::Quarantine),
        1 => Just(Step::Edit),
        1 => prop::option::of(0u8..2).prop_map(Step::PostedAt),
    ]
}

fn posted_time(k: Option<u8>) -> Option<DateTime<Utc>> {
    k.map(|k| at("2026-12-01T09:00:00Z") + Duration::minutes(i64::from(k)))
}

async fn pg_step(pool: &PgPool, id: i64, step: Step, n: usize) -> Result<(), Refusal> {
    let t = at("2026-12-01T08:00:00Z");
    let done = match step {
        Step::Status(to) => {
            sqlx::query("UPDATE posts SET status = $1 WHERE id = $2")
                .bind(to.as_str())
                .bind(id)
                .execute(pool)
                .await
        }
        Step::Quarantine(on) => {
            sqlx::query("UPDATE posts SET quarantined_at = $1 WHERE id = $2")
                .bind(on.then_some(t))
                .bind(id)
                .execute(pool)
                .await
        }
        Step::Edit => {
            sqlx::query("UPDATE posts SET text = $1, content_hash = $2 WHERE id = $3")
                .bind(format!("edit {n}"))
                .bind(format!("{n:064x}"))
                .bind(id)
                .execute(pool)
                .await
        }
        Step::PostedAt(k) => {
            sqlx::query("UPDATE posts SET posted_at = $1 WHERE id = $2")
                .bind(posted_time(k))
                .bind(id)
                .execute(pool)
                .await
        }
    };
    match done {
        Ok(_) => Ok(()),
        Err(e) => match sqlstate(&e).as_deref() {
            Some("AL001") => Err(Refusal::Illegal),
            Some("AL006") => Err(Refusal::Quarantined),
            Some("AL002") => Err(Refusal::PostedAt),
            _ => panic!("{step:?}: {e}"),
        },
    }
}

async fn lite_step(pool: &SqlitePool, id: i64, step: Step, n: usize) -> Result<(), Refusal> {
    let t = at("2026-12-01T08:00:00Z");
    let done = match step {
        Step::Status(to) => {
            sqlx::query("UPDATE posts SET status = ? WHERE id = ?")
                .bind(to.as_str())
                .bind(id)
                .execute(pool)
                .await
        }
        Step::Quarantine(on) => {
            sqlx::query("UPDATE posts SET quarantined_at = ? WHERE id = ?")
                .bind(on.then(|| lite_ts(t)))
                .bind(id)
                .execute(pool)
                .await
        }
        Step::Edit => {
            sqlx::query("UPDATE posts SET text = ?, content_hash = ? WHERE id = ?")
                .bind(format!("edit {n}"))
                .bind(format!("{n:064x}"))
                .bind(id)
                .execute(pool)
                .await
        }
        Step::PostedAt(k) => {
            sqlx::query("UPDATE posts SET posted_at = ? WHERE id = ?")
                .bind(posted_time(k).map(lite_ts))
                .bind(id)
                .execute(pool)
                .await
        }
    };
    match done {
        Ok(_) => Ok(()),
        Err(e) => {
            let message = e.to_string();
            if message.contains("airlock: illegal status transition") {
                Err(Refusal::Illegal)
            } else if message.contains("airlock: quarantined") {
                Err(Refusal::Quarantined)
            } else if message.contains("airlock: posted_at is permanent") {
                Err(Refusal::PostedAt)
            } else {
                panic!("{step:?}: {e}")
            }
        }
    }
}

async fn walk_agrees(pg: &PgPool, lite: &SqlitePool, steps: &[Step]) -> Result<(), TestCaseError> {
    let (pg_id, lite_id) = (pg_draft(pg).await, lite_draft(lite).await);
    let mut walk = Walk {
        status: PostStatus::Draft,
        quarantined: false,
        posted_at: None,
    };
    for (n, step) in steps.iter().enumerate() {
        let before = walk;
        let rust = walk.step(*step);
        let on_pg = pg_step(pg, pg_id, *step, n).await;
        let on_lite = lite_step(lite, lite_id, *step, n).await;
        prop_assert_eq!(rust, on_pg, "step {} {:?} from {:?}", n, step, before);
        prop_assert_eq!(rust, on_lite, "step {} {:?} from {:?}", n, step, before);
    }
    let pg_status: String = sqlx::query_scalar("SELECT status FROM posts WHERE id = $1")
        .bind(pg_id)
        .fetch_one(pg)
        .await
        .unwrap();
    let lite_status: String = sqlx::query_scalar("SELECT status FROM posts WHERE id = ?")
        .bind(lite_id)
        .fetch_one(lite)
        .await
        .unwrap();
    prop_assert_eq!(pg_status.as_str(), walk.status.as_str());
    prop_assert_eq!(lite_status.as_str(), walk.status.as_str());
    Ok(())
}

#[test]
fn status_walks_are_refused_alike_by_rust_postgres_and_sqlite() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let dir = tempfile::tempdir().unwrap();
    let lite = sqlite(&rt, &dir);
    check_all(&rt, 128, prop::collection::vec(step(), 1..24), |steps| {
        let (pg, lite) = (&pg, &lite);
        async move { walk_agrees(pg, lite, &steps).await }
    });
}

// --- 3. Write refusals ---------------------------------------------------------------

/// A length near `max`: often at or just past it, sometimes anywhere up to it.
fn near(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..=8,
        1 => select(vec![max - 1, max, max + 1]),
        1 => max - 3..=max + 3,
        1 => 0..=max,
    ]
}

/// Mostly a short length, sometimes one [`near`] `max`.
fn small_or_near(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![5 => 0usize..=8, 1 => near(max)]
}

/// The sizes of a post's fields (in characters of `ch`), an error summary and an event
/// note.
#[derive(Debug, Clone)]
struct Sizes {
    ch: char,
    text: usize,
    title: Option<usize>,
    link: Option<usize>,
    media: Vec<(usize, Option<usize>)>,
    more_parts: usize,
    first_comment: Option<usize>,
    error: Option<usize>,
    note: usize,
}

fn sizes() -> impl Strategy<Value = Sizes> {
    let media_count = prop_oneof![3 => 0usize..=3, 1 => MAX_MEDIA - 1..=MAX_MEDIA + 2];
    (
        (
            select(vec!['a', 'é', '猫', '🦀']),
            small_or_near(MAX_TEXT_CHARS),
            prop::option::of(small_or_near(MAX_TITLE_CHARS)),
            prop::option::of(small_or_near(MAX_URL_CHARS)),
        ),
        media_count.prop_flat_map(|n| {
            prop::collection::vec(
                (
                    small_or_near(MAX_URL_CHARS),
                    prop::option::of(small_or_near(MAX_ALT_CHARS)),
                ),
                n,
            )
        }),
        (
            prop_oneof![3 => 0usize..=3, 1 => MAX_PARTS - 3..=MAX_PARTS + 1],
            prop::option::of(small_or_near(MAX_TEXT_CHARS)),
            prop::option::of(small_or_near(MAX_ERROR_CHARS)),
            near(MAX_EVENT_NOTE_CHARS),
        ),
    )
        .prop_map(
            |((ch, text, title, link), media, (more_parts, first_comment, error, note))| Sizes {
                ch,
                text,
                title,
                link,
                media,
                more_parts,
                first_comment,
                error,
                note,
            },
        )
}

/// The columns a post is written with.
struct PostRow {
    text: String,
    title: Option<String>,
    link: Option<String>,
    media: String,
    more_parts: String,
    first_comment: Option<String>,
    error: Option<String>,
}

impl Sizes {
    fn string(&self, n: usize) -> String {
        std::iter::repeat_n(self.ch, n).collect()
    }

    /// The content, and whether `airlock_core::limits` refuses the post (its content, or
    /// its error summary) and the event note.
    fn rust(&self) -> (PostRow, bool, bool) {
        let content = PostContent {
            channel: ChannelName::parse("alpha").unwrap(),
            title: self.title.map(|n| self.string(n)),
            text: self.string(self.text),
            media: self
                .media
                .iter()
                .map(|(url, alt)| Media::new(self.string(*url), alt.map(|n| self.string(n))))
                .collect(),
            more: (0..self.more_parts)
                .map(|_| Part {
                    text: "p".into(),
                    media: Vec::new(),
                })
                .collect(),
            first_comment: self.first_comment.map(|n| self.string(n)),
            link: self.link.map(|n| self.string(n)),
            source: None,
        };
        let error = self.error.map(|n| self.string(n));
        let post_refused = check_content(&content, &ContentPolicy::default(), "channel alpha")
            .is_err()
            || error
                .as_deref()
                .is_some_and(|e| check_chars("error", e, MAX_ERROR_CHARS).is_err());
        let note_refused =
            check_chars("note", &self.string(self.note), MAX_EVENT_NOTE_CHARS).is_err();
        let row = PostRow {
            media: serde_json::to_string(&content.media).unwrap(),
            more_parts: serde_json::to_string(&content.more).unwrap(),
            text: content.text,
            title: content.title,
            link: content.link,
            first_comment: content.first_comment,
            error,
        };
        (row, post_refused, note_refused)
    }
}

/// Whether PostgreSQL refused a write as too large (AL005); any other error fails.
fn pg_too_large(done: Result<sqlx::postgres::PgQueryResult, sqlx::Error>) -> bool {
    match done {
        Ok(_) => false,
        Err(e) if sqlstate(&e).as_deref() == Some("AL005") => true,
        Err(e) => panic!("{e}"),
    }
}

fn lite_too_large(done: Result<sqlx::sqlite::SqliteQueryResult, sqlx::Error>) -> bool {
    match done {
        Ok(_) => false,
        Err(e) if e.to_string().contains("airlock: value too large") => true,
        Err(e) => panic!("{e}"),
    }
}

/// The post inserted whole, then written over a small draft; the note as an event.
async fn pg_refusals(pool: &PgPool, row: &PostRow, note: &str) -> (bool, bool, bool) {
    let insert = sqlx::query(
        "INSERT INTO posts (channel, status, text, title, link, media, more_parts, \
         first_comment, error, scheduled_at, content_hash, created_by, edited_by, created_at, \
         updated_at) VALUES ('alpha', 'draft', $1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, now(), \
         repeat('a', 64), 'sql', 'sql', now(), now())",
    )
    .bind(&row.text)
    .bind(&row.title)
    .bind(&row.link)
    .bind(&row.media)
    .bind(&row.more_parts)
    .bind(&row.first_comment)
    .bind(&row.error)
    .execute(pool)
    .await;
    let id = pg_draft(pool).await;
    let update = sqlx::query(
        "UPDATE posts SET text = $1, title = $2, link = $3, media = $4::jsonb, \
         more_parts = $5::jsonb, first_comment = $6, error = $7 WHERE id = $8",
    )
    .bind(&row.text)
    .bind(&row.title)
    .bind(&row.link)
    .bind(&row.media)
    .bind(&row.more_parts)
    .bind(&row.first_comment)
    .bind(&row.error)
    .bind(id)
    .execute(pool)
    .await;
    let event = sqlx::query(
        "INSERT INTO post_events (post_id, at, kind, to_status, actor, note) \
         VALUES ($1, now(), 'note', 'draft', 'sql', $2)",
    )
    .bind(id)
    .bind(note)
    .execute(pool)
    .await;
    (
        pg_too_large(insert),
        pg_too_large(update),
        pg_too_large(event),
    )
}

async fn lite_refusals(pool: &SqlitePool, row: &PostRow, note: &str) -> (bool, bool, bool) {
    let now = lite_ts(at("2026-12-01T00:00:00Z"));
    let insert = sqlx::query(
        "INSERT INTO posts (channel, status, text, title, link, media, more_parts, \
         first_comment, error, scheduled_at, content_hash, created_by, edited_by, created_at, \
         updated_at) VALUES ('alpha', 'draft', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'sql', \
         'sql', ?8, ?8)",
    )
    .bind(&row.text)
    .bind(&row.title)
    .bind(&row.link)
    .bind(&row.media)
    .bind(&row.more_parts)
    .bind(&row.first_comment)
    .bind(&row.error)
    .bind(&now)
    .bind("a".repeat(64))
    .execute(pool)
    .await;
    let id = lite_draft(pool).await;
    let update = sqlx::query(
        "UPDATE posts SET text = ?, title = ?, link = ?, media = ?, more_parts = ?, \
         first_comment = ?, error = ? WHERE id = ?",
    )
    .bind(&row.text)
    .bind(&row.title)
    .bind(&row.link)
    .bind(&row.media)
    .bind(&row.more_parts)
    .bind(&row.first_comment)
    .bind(&row.error)
    .bind(id)
    .execute(pool)
    .await;
    let event = sqlx::query(
        "INSERT INTO post_events (post_id, at, kind, to_status, actor, note) \
         VALUES (?, ?, 'note', 'draft', 'sql', ?)",
    )
    .bind(id)
    .bind(&now)
    .bind(note)
    .execute(pool)
    .await;
    (
        lite_too_large(insert),
        lite_too_large(update),
        lite_too_large(event),
    )
}

/// Every bound the size triggers check, against the same bound in `airlock_core::limits`.
/// Later parts stay short and the media's JSON far below its bound: the triggers bound
/// those only as a whole (the serialized parts list, the serialized media), looser than
/// airlock's checks of each part and of the media's JSON, on purpose.
#[test]
fn both_stores_refuse_exactly_the_sizes_airlock_core_limits_refuse() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let dir = tempfile::tempdir().unwrap();
    let lite = sqlite(&rt, &dir);
    check_all(&rt, 96, sizes(), |sizes| {
        let (pg, lite) = (&pg, &lite);
        async move {
            let (row, post_refused, note_refused) = sizes.rust();
            let note = sizes.string(sizes.note);
            let expected = (post_refused, post_refused, note_refused);
            prop_assert_eq!(pg_refusals(pg, &row, &note).await, expected, "PostgreSQL");
            prop_assert_eq!(lite_refusals(lite, &row, &note).await, expected, "SQLite");
            Ok(())
        }
    });
}

// --- 4. Duplicate intents --------------------------------------------------------------

/// One intent per post and generation: `airlock_insert_intent` refuses a second
/// (AL014), SQLite's unique key too (the backend maps it to `StoreError::Duplicate`).
#[test]
fn a_second_intent_for_a_generation_is_refused_by_both_stores() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let dir = tempfile::tempdir().unwrap();
    let lite = sqlite(&rt, &dir);
    // Part 1 each time: later parts go out only after the earlier ones succeeded.
    let intents = prop::collection::vec((0i64..4, Just(1i64)), 1..10);
    check_all(&rt, 64, intents, |intents| {
        let (pg, lite) = (&pg, &lite);
        async move {
            let (pg_id, lite_id) = (pg_draft(pg).await, lite_draft(lite).await);
            let mut seen = HashSet::new();
            for (n, (generation, part)) in intents.iter().enumerate() {
                let duplicate = !seen.insert(*generation);
                let key = format!("key-{n}");
                let on_pg = sqlx::query("SELECT airlock_insert_intent($1, $2, $3, $4, NULL, $5)")
                    .bind(pg_id)
                    .bind(generation)
                    .bind(&key)
                    .bind(part)
                    .bind(at("2026-12-01T00:00:00Z"))
                    .execute(pg)
                    .await;
                let on_pg = match on_pg {
                    Ok(_) => false,
                    Err(e) if sqlstate(&e).as_deref() == Some("AL014") => true,
                    Err(e) => panic!("{e}"),
                };
                let on_lite = sqlx::query(
                    "INSERT INTO intents (post_id, generation, idempotency_key, part, phase, \
                     created_at) VALUES (?, ?, ?, ?, 'sending', ?)",
                )
                .bind(lite_id)
                .bind(generation)
                .bind(&key)
                .bind(part)
                .bind(lite_ts(at("2026-12-01T00:00:00Z")))
                .execute(lite)
                .await;
                let on_lite = match on_lite {
                    Ok(_) => false,
                    Err(sqlx::Error::Database(d)) if d.is_unique_violation() => true,
                    Err(e) => panic!("{e}"),
                };
                prop_assert_eq!(on_pg, duplicate, "PostgreSQL, intent {}", n);
                prop_assert_eq!(on_lite, duplicate, "SQLite, intent {}", n);
            }
            Ok(())
        }
    });
}

// --- 5. Helpers written twice ----------------------------------------------------------

#[test]
fn airlock_fit_cuts_as_fit_chars_does() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let text = prop::collection::vec(select(vec!['a', 'é', '猫', '🦀', ' ']), 0..12)
        .prop_map(String::from_iter);
    check_all(&rt, 128, (text, 0usize..=12), |(text, max)| {
        let pg = &pg;
        async move {
            let cut: String = sqlx::query_scalar("SELECT airlock_fit($1, $2)")
                .bind(&text)
                .bind(max as i32)
                .fetch_one(pg)
                .await
                .unwrap();
            prop_assert_eq!(cut, fit_chars(&text, max), "{:?} to {}", text, max);
            Ok(())
        }
    });
}

#[test]
fn airlock_could_fall_in_is_stamps_could_fall_in() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let base = at("2026-12-01T00:00:00Z");
    let time = move || {
        prop_oneof![
            select(&[-300i64, 0, 300, 600][..]).prop_map(Duration::seconds),
            seconds(-900..=900),
        ]
        .prop_map(move |d| base + d)
    };
    let input = (
        time(),
        prop::option::of(time()),
        time(),
        seconds(-60..=1_800),
    );
    check_all(&rt, 128, input, |(made, sent, start, length)| {
        let pg = &pg;
        async move {
            let end = start + length;
            let on_pg: bool = sqlx::query_scalar("SELECT airlock_could_fall_in($1, $2, $3, $4)")
                .bind(made)
                .bind(sent)
                .bind(start)
                .bind(end)
                .fetch_one(pg)
                .await
                .unwrap();
            let stamps = Stamps { made, sent };
            prop_assert_eq!(
                on_pg,
                stamps.could_fall_in(start, end),
                "{:?} in [{}, {})",
                stamps,
                start,
                end
            );
            Ok(())
        }
    });
}

#[test]
fn airlock_show_time_shows_a_time_as_chrono_does() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let base = at("2026-12-01T00:00:00Z");
    let input = (-2_000_000_000i64..=2_000_000_000, subsec());
    check_all(&rt, 128, input, |(secs, sub)| {
        let pg = &pg;
        async move {
            let t = base + Duration::seconds(secs) + sub;
            let shown: String = sqlx::query_scalar("SELECT airlock_show_time($1)")
                .bind(t)
                .fetch_one(pg)
                .await
                .unwrap();
            prop_assert_eq!(shown, t.to_string());
            Ok(())
        }
    });
}

// --- Cases the properties found --------------------------------------------------------

/// `airlock_fit(text, 0)` kept all but the last character and added `…`; `fit_chars`
/// keeps nothing.
#[tokio::test]
async fn fitting_into_nothing_leaves_nothing() {
    let db = TestDb::create();
    store(&db).await.close().await;
    let mut conn = db.conn().await;
    for (text, max) in [("a", 0), ("abc", 0), ("", 0), ("ab", 1), ("abc", 2)] {
        let cut: String = sqlx::query_scalar("SELECT airlock_fit($1, $2)")
            .bind(text)
            .bind(max as i32)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(cut, fit_chars(text, max), "{text:?} to {max}");
    }
}

/// A reservation stamped on a whole millisecond was named `00:05:01.001000` by
/// PostgreSQL and `00:05:01.001` by the SQLite backend (chrono).
#[test]
fn a_corrupt_reservation_is_named_alike_whatever_its_fraction_of_a_second() {
    let rt = runtime();
    let (_db, pool) = postgres(&rt);
    let post = rt.block_on(pg_draft(&pool));
    for sub in [
        Duration::zero(),
        Duration::milliseconds(1),
        Duration::milliseconds(120),
        Duration::microseconds(1),
        Duration::microseconds(123_456),
    ] {
        let input = QuotaInput {
            zone: "UTC",
            date: "2026-03-08",
            now_offset: sub,
            window: Duration::minutes(1),
            window_limit: 0,
            daily_limit: 0,
            budget: None,
            rows: Vec::new(),
            corrupt: Some(Corrupt::MadeInFuture(Duration::seconds(1))),
        };
        rt.block_on(quota_case_agrees(
            &pool,
            post,
            &input.case(),
            &Default::default(),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let t = at("2026-03-08T00:05:01Z") + sub;
        let shown: String = rt
            .block_on(
                sqlx::query_scalar("SELECT airlock_show_time($1)")
                    .bind(t)
                    .fetch_one(&pool),
            )
            .unwrap();
        assert_eq!(shown, t.to_string());
    }
}

// --- 5. Period starts checked against the ledger's zone -------------------------------

/// Whether `airlock_check_periods` accepts `starts` as the days (months) of `zone` around
/// `now`.
async fn periods_accepted(
    pg: &PgPool,
    starts: &[DateTime<Utc>],
    zone: &str,
    months: bool,
    now: DateTime<Utc>,
) -> bool {
    sqlx::query("SELECT airlock_check_periods('day', $1, $2, $3, $4)")
        .bind(starts)
        .bind(zone)
        .bind(months)
        .bind(now)
        .execute(pg)
        .await
        .is_ok()
}

/// The day and month starts Rust computes for a claim are what PostgreSQL takes as the
/// zone's (so a hardened ledger never stops an honest claim), and starts moved by any
/// amount, or of another zone, are refused.
#[test]
fn the_period_starts_rust_sends_are_the_ones_postgresql_accepts() {
    let rt = runtime();
    let (_db, pg) = postgres(&rt);
    let input = (
        select(ZONES),
        select(DATES),
        seconds(-2 * 86_400..=2 * 86_400),
        select(&[-3_600i64, -60, 1, 1_800, 43_200][..]),
        select(ZONES),
    );
    check_all(&rt, 96, input, |(zone, date, offset, shift, other)| {
        let pg = &pg;
        async move {
            let tz: Tz = zone.parse().unwrap();
            let now = at(&format!("{date}T12:00:00Z")) + offset;
            let days = bounds(now, |t| airlock_core::quota::day_bounds(t, tz));
            let months = bounds(now, |t| airlock_core::budget::month_bounds(t, tz));
            prop_assert!(
                periods_accepted(pg, &days, zone, false, now).await,
                "{zone} days {days:?}"
            );
            prop_assert!(
                periods_accepted(pg, &months, zone, true, now).await,
                "{zone} months {months:?}"
            );
            let moved: Vec<_> = days.iter().map(|d| *d + Duration::seconds(shift)).collect();
            prop_assert!(
                !periods_accepted(pg, &moved, zone, false, now).await,
                "{zone} moved {moved:?}"
            );
            let other_tz: Tz = other.parse().unwrap();
            let theirs = bounds(now, |t| airlock_core::quota::day_bounds(t, other_tz));
            if theirs != days {
                prop_assert!(
                    !periods_accepted(pg, &theirs, zone, false, now).await,
                    "{other} days in {zone}"
                );
            }
            Ok(())
        }
    });
}
