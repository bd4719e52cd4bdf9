//! Quota decisions bounded by the limits, not by the day's history (issue 28): with a
//! full day of live reservations behind it, a decision far from every limit reads no
//! reservation row, and `quota_hours` (migration 0013), which lets it, follows every
//! write to the reservations and is checked by doctor.

use chrono::{DateTime, Duration, DurationRound, Utc};
use sqlx::{AssertSqlSafe, PgPool};

use airlock_core::quota::day_bounds;
use airlock_store::PostClaimed;

use airlock_store_tests::fixture::quota_drift;

use crate::support::{TestDb, counted, owner_limits, store};

const ZONE: chrono_tz::Tz = chrono_tz::Asia::Tokyo;

fn now() -> DateTime<Utc> {
    "2026-03-02T03:00:00Z".parse().unwrap()
}

fn days(now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut starts = vec![day_bounds(now - Duration::days(1), ZONE).0];
    for _ in 0..7 {
        let end = day_bounds(*starts.last().unwrap(), ZONE).1;
        starts.push(end);
    }
    starts
}

async fn a_post(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
         edited_by, created_at, updated_at) \
         VALUES ('alpha', 'draft', 'x', now(), repeat('a', 64), 'sql', 'sql', now(), now()) \
         RETURNING id",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// `n` committed reservations on `alpha`, spread over the `hours` before now.
async fn a_busy_day(pool: &PgPool, n: i64, hours: i64) {
    let post = a_post(pool).await;
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         SELECT $1, g, 'alpha', 'committed', t, t + interval '2 seconds' \
         FROM generate_series(1, $2) g, \
              LATERAL (SELECT $3 - (g * $4 / $2) * interval '1 second' AS t) s",
    )
    .bind(post)
    .bind(n)
    .bind(now() - Duration::minutes(1))
    .bind(hours * 3600)
    .execute(pool)
    .await
    .unwrap();
}

/// The decision for one more on `alpha` at `now()` with these limits: whether it was
/// denied, and how many reservation rows it read.
async fn decide(pool: &PgPool, exact: bool, window_limit: i64, daily_limit: i64) -> (bool, i64) {
    let rows = "pg_stat_get_xact_tuples_returned(c.oid) + pg_stat_get_xact_tuples_fetched(c.oid)";
    decide_reading(pool, exact, window_limit, daily_limit, "reservations", rows).await
}

/// [`decide`], counting `what` (an expression of the statistics of relation `c`) over
/// `table` and its indexes.
async fn decide_reading(
    pool: &PgPool,
    exact: bool,
    window_limit: i64,
    daily_limit: i64,
    table: &str,
    what: &str,
) -> (bool, i64) {
    let mut tx = pool.begin().await.unwrap();
    if exact {
        sqlx::query("SET LOCAL airlock.exact_quota = 'on'")
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    // This session's own counts (so other sessions cannot blur them), of the table and
    // of its indexes (an index scan's rows count on the index), taken on either side of
    // the decision: they also hold what earlier statements did until they are flushed.
    let count = format!(
        "SELECT COALESCE(sum({what}), 0)::bigint FROM pg_class c WHERE c.oid = $1::regclass \
            OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass)"
    );
    let before: i64 = sqlx::query_scalar(AssertSqlSafe(count.clone()))
        .bind(table)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let denied: bool = sqlx::query_scalar(
        "SELECT denied FROM airlock_quota_decision('alpha', $1, $2, $3, $4, $5, NULL, NULL, NULL)",
    )
    .bind(now())
    .bind(Duration::hours(1).num_microseconds().unwrap())
    .bind(window_limit)
    .bind(daily_limit)
    .bind(days(now()))
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    let after: i64 = sqlx::query_scalar(AssertSqlSafe(count))
        .bind(table)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    (denied, after - before)
}

#[tokio::test]
async fn a_decision_far_from_its_limits_reads_no_reservation_of_a_full_day() {
    let db = TestDb::create();
    let store = store(&db).await;
    let pool = store.pool();
    a_busy_day(pool, 10_000, 10).await;

    // The rows' path reads every live row of the day; the quick one none.
    let (denied, read) = decide(pool, true, 1_000_000, 1_000_000).await;
    assert!(!denied);
    assert!(read >= 10_000, "the exact path read {read} rows");
    let (denied, read) = decide(pool, false, 1_000_000, 1_000_000).await;
    assert!(!denied);
    assert!(read < 10, "the quick path read {read} reservation rows");

    // Near a limit the rows decide, and both paths deny alike.
    for (window, daily) in [(1_000_000, 10_000), (900, 1_000_000)] {
        assert!(
            decide(pool, true, window, daily).await.0,
            "{window}/{daily}"
        );
        assert!(
            decide(pool, false, window, daily).await.0,
            "{window}/{daily}"
        );
    }
    assert_eq!(quota_drift(&store, now()).await, Vec::<String>::new());

    // With the counting trigger off, the counts cannot be trusted: the rows decide.
    sqlx::query("ALTER TABLE reservations DISABLE TRIGGER reservations_quota_hours")
        .execute(pool)
        .await
        .unwrap();
    let (denied, read) = decide(pool, false, 1_000_000, 1_000_000).await;
    assert!(!denied);
    assert!(
        read >= 10_000,
        "with the trigger off, the quick path read {read} rows"
    );
}

/// Counted hours inserted by `insert` (binding the hour it ends at, `until`), then a
/// decision for `alpha` far from its limits, twelve times on one connection so that
/// PostgreSQL's plan cache settles on its plans (after five calls): each reads fewer than
/// 40 pages of `quota_hours`.
async fn quick_decisions_read_few_pages(insert: &str, until: DateTime<Utc>) {
    let db = TestDb::create();
    let store = crate::support::one_connection(&db).await;
    let pool = store.pool();
    sqlx::query(AssertSqlSafe(insert))
        .bind(until)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("ANALYZE quota_hours")
        .execute(pool)
        .await
        .unwrap();
    for call in 1..=12 {
        let (denied, pages) = decide_reading(
            pool,
            false,
            1_000_000,
            1_000_000,
            "quota_hours",
            "pg_stat_get_xact_blocks_fetched(c.oid)",
        )
        .await;
        assert!(!denied);
        assert!(
            pages < 40,
            "call {call}: the quick path read {pages} pages of quota_hours"
        );
    }
}

/// Fifty channels published for two months up to the days a decision looks at, each hour
/// on four shards. A decision for another channel far from its limits reads only that
/// channel's hours of those days: a generic plan that summed a day by the index on hours
/// alone read every channel's hours of the day and filtered them.
#[tokio::test]
async fn a_quick_decision_reads_no_other_channels_hours() {
    quick_decisions_read_few_pages(
        "INSERT INTO quota_hours (channel, hour, shard, live, latest) \
         SELECT 'channel-' || c, h, s, 1, h FROM generate_series(1, 50) c, \
              generate_series($1 - interval '60 days', $1, interval '1 hour') h, \
              generate_series(1, 4) s",
        now().duration_trunc(Duration::hours(1)).unwrap() - Duration::hours(3),
    )
    .await;
}

/// A long history of counted hours (a year on two channels, each hour on two shards)
/// lies before the days a decision looks at. Once PostgreSQL's plan cache has settled
/// on its plans (after five calls), a decision far from its limits still reads only the
/// pages of the hours near now and of its own days: a generic plan for the test of the
/// recent hours, which names no channel, walked the whole key (its rows filtered inside
/// the index scan, so only the pages read show it).
#[tokio::test]
async fn a_quick_decision_reads_no_counted_hour_of_a_long_history() {
    quick_decisions_read_few_pages(
        "INSERT INTO quota_hours (channel, hour, shard, live, latest) \
         SELECT c, h, s, 1, h FROM unnest(ARRAY['alpha', 'beta']) c, \
              generate_series($1 - interval '365 days', $1, interval '1 hour') h, \
              generate_series(1, 2) s",
        now() - Duration::days(3),
    )
    .await;
}

#[tokio::test]
async fn quota_hours_follow_every_write_and_doctor_names_a_drift() {
    let db = TestDb::create();
    let store = store(&db).await;
    let pool = store.pool();
    let post = a_post(pool).await;
    let hour = now().duration_trunc(Duration::hours(1)).unwrap();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at) \
         VALUES ($1, 1, 'alpha', 'reserved', $2) RETURNING id",
    )
    .bind(post)
    .bind(hour - Duration::minutes(1))
    .fetch_one(pool)
    .await
    .unwrap();
    // Each write, and whether it leaves the row suspect.
    let writes = [
        // Sent in the next hour: counted in both.
        (
            "UPDATE reservations SET sent_at = created_at + interval '2 minutes'",
            false,
        ),
        ("UPDATE reservations SET state = 'committed'", false),
        // Moved by hand to another channel and time, made suspect twice and mended.
        ("UPDATE reservations SET channel = 'beta'", false),
        (
            "UPDATE reservations SET created_at = created_at - interval '3 hours'",
            false,
        ),
        (
            "UPDATE reservations SET sent_at = created_at - interval '6 minutes'",
            true,
        ),
        (
            "UPDATE reservations SET sent_at = created_at + interval '2 minutes'",
            false,
        ),
        ("UPDATE reservations SET channel = 'Not A Channel'", true),
        (
            "UPDATE reservations SET channel = 'alpha', cost_usd_micros = -1",
            true,
        ),
        ("UPDATE reservations SET cost_usd_micros = 0", false),
        ("UPDATE reservations SET channel = 'alpha'", false),
        // Settles: alone they count nothing; with a stamp or the cost they move it.
        ("UPDATE reservations SET state = 'reserved'", false),
        (
            "UPDATE reservations SET state = 'committed', sent_at = created_at + interval '20 minutes'",
            false,
        ),
        (
            "UPDATE reservations SET state = 'reserved', cost_usd_micros = -1",
            true,
        ),
        (
            "UPDATE reservations SET state = 'committed', cost_usd_micros = 0",
            false,
        ),
        // Later stamps in the hours it keeps.
        (
            "UPDATE reservations SET sent_at = created_at + interval '30 minutes'",
            false,
        ),
        (
            "UPDATE reservations SET created_at = created_at + interval '10 minutes'",
            false,
        ),
    ];
    // A trigger on the table keeps settled rows permanent and a CHECK refuses a negative
    // cost; the owner may lift both.
    for lift in [
        "ALTER TABLE reservations DISABLE TRIGGER reservations_settled_permanent",
        "ALTER TABLE reservations DROP CONSTRAINT reservations_cost_usd_micros_check",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(lift))
            .execute(pool)
            .await
            .unwrap();
    }
    for (write, suspect_after) in writes {
        sqlx::query(sqlx::AssertSqlSafe(write))
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{write}: {e}"));
        assert_eq!(
            quota_drift(&store, now()).await,
            Vec::<String>::new(),
            "after {write}"
        );
        let suspect: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM quota_suspects WHERE id = $1)")
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap();
        assert_eq!(suspect, suspect_after, "{write}");
    }
    // Released while suspect: neither counted nor suspect any more.
    sqlx::query("UPDATE reservations SET channel = 'Not A Channel'")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("UPDATE reservations SET state = 'released'")
        .execute(pool)
        .await
        .unwrap();
    let suspects: i64 = sqlx::query_scalar("SELECT count(*) FROM quota_suspects")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(suspects, 0);
    sqlx::query("UPDATE reservations SET channel = 'alpha'")
        .execute(pool)
        .await
        .unwrap();
    let live: i64 = sqlx::query_scalar("SELECT COALESCE(sum(live), 0)::bigint FROM quota_hours")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(live, 0, "a released reservation counts nowhere");

    // A suspect left off the list is named.
    sqlx::query("UPDATE reservations SET state = 'committed', channel = 'Not A Channel'")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM quota_suspects")
        .execute(pool)
        .await
        .unwrap();
    let named = quota_drift(&store, now()).await;
    assert!(
        named.iter().any(|p| p.contains("quota_suspects misfiles")),
        "{named:?}"
    );
    sqlx::query("UPDATE reservations SET channel = 'alpha'")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(quota_drift(&store, now()).await, Vec::<String>::new());
    // A count below the rows' is named.
    sqlx::query("UPDATE reservations SET state = 'committed'")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("UPDATE quota_hours SET live = live - 1 WHERE live > 0")
        .execute(pool)
        .await
        .unwrap();
    let named = quota_drift(&store, now()).await;
    assert!(
        !named.is_empty() && named[0].contains("channel alpha"),
        "{named:?}"
    );
}

/// A claim that cannot prove room for every claim that may be in flight beside it (one
/// per window slot) waits for them, and then decides from the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_near_its_limit_waits_for_the_claims_in_flight() {
    use airlock_store::{PostClaimed, Publishing};
    use airlock_store_tests::fixture::{approved, mins, post_claim, t0};

    const DAILY: i64 = 30;
    let db = TestDb::create();
    let store = std::sync::Arc::new(store(&db).await);
    let pool = store.pool().clone();
    let earlier = a_post(&pool).await;
    // One short of the limit, counted and sent a minute ago.
    counted(&pool, earlier, DAILY - 1).await;
    let post = approved(store.as_ref(), "alpha", "next", t0()).await;

    // A claim in flight: it holds a slot and its reservation is not committed yet.
    let mut in_flight = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM ledger_locks WHERE name = 'window slot 01' FOR UPDATE")
        .execute(&mut *in_flight)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         VALUES ($1, 1000, 'alpha', 'committed', $2, $2)",
    )
    .bind(earlier)
    .bind(mins(-1))
    .execute(&mut *in_flight)
    .await
    .unwrap();

    let claiming = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .claim_post(&post_claim(&post, t0(), Some((1000, DAILY as u32))))
                .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !claiming.is_finished(),
        "the claim decided without waiting for the one in flight"
    );
    in_flight.commit().await.unwrap();
    match claiming.await.unwrap().unwrap() {
        PostClaimed::OverQuota(denial) => assert_eq!(denial.used, DAILY as u64),
        other => panic!("expected over quota, got {other:?}"),
    }
}

/// A claim of `channel` in flight, as the quick proof makes one: it holds `slot` and
/// its channel's limits shared, and its reservation is not committed yet.
async fn in_flight(
    pool: &PgPool,
    slot: &str,
    channel: &str,
    post: i64,
    generation: i64,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM ledger_locks WHERE name = $1 FOR UPDATE")
        .bind(slot)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("SELECT 1 FROM channel_limits WHERE channel = $1 FOR SHARE")
        .bind(channel)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         VALUES ($1, $2, $3, 'committed', $4, $4)",
    )
    .bind(post)
    .bind(generation)
    .bind(channel)
    .bind(airlock_store_tests::fixture::mins(-1))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx
}

/// A claim near its channel's daily limit, with the window far from its own, decides
/// from the rows under its channel's lock: it waits for that channel's claims in
/// flight, and for no other channel's (the daily limit spans no other channel).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_near_its_daily_limit_waits_for_its_channel_only() {
    use airlock_store::{PostClaimed, Publishing};
    use airlock_store_tests::fixture::{approved, post_claim, t0};

    const DAILY: i64 = 30;
    let db = TestDb::create();
    let store = std::sync::Arc::new(store(&db).await);
    let pool = store.pool().clone();
    owner_limits(&pool, &[("alpha", DAILY), ("beta", 1_000_000)]).await;
    let earlier = a_post(&pool).await;
    // Two short of the limit, counted and sent a minute ago.
    counted(&pool, earlier, DAILY - 2).await;
    let first = approved(store.as_ref(), "alpha", "first", t0()).await;
    let second = approved(store.as_ref(), "alpha", "second", t0()).await;
    let quota = Some((1000, DAILY as u32));

    let beta = in_flight(&pool, "window slot 01", "beta", earlier, 1000).await;
    let first = post_claim(&first, t0(), quota);
    match tokio::time::timeout(std::time::Duration::from_secs(3), store.claim_post(&first)).await {
        Ok(Ok(PostClaimed::Claimed { .. })) => {}
        Ok(other) => panic!("expected the claim, got {other:?}"),
        Err(_) => panic!("the claim waited for another channel's claim in flight"),
    }

    let alpha = in_flight(&pool, "window slot 02", "alpha", earlier, 1001).await;
    let claiming = tokio::spawn({
        let store = store.clone();
        async move { store.claim_post(&post_claim(&second, t0(), quota)).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !claiming.is_finished(),
        "the claim decided without waiting for its channel's claim in flight"
    );
    alpha.commit().await.unwrap();
    match claiming.await.unwrap().unwrap() {
        PostClaimed::OverQuota(denial) => assert_eq!(denial.used, DAILY as u64),
        other => panic!("expected over quota, got {other:?}"),
    }
    beta.rollback().await.unwrap();
}

/// A claim whose channel's limits the owner rewrites (`rewrite`, as the owner writes
/// them: with the window and every slot locked) after the claim read them decides
/// nothing by what it read: it is refused, to be made again, and then decides by the
/// limits written.
async fn a_claim_rereads_limits_rewritten_under_it(rewrite: &str, then: fn(&PostClaimed) -> bool) {
    use airlock_store::Publishing;
    use airlock_store_tests::fixture::{approved, post_claim, t0};

    const DAILY: i64 = 30;
    let db = TestDb::create();
    let store = std::sync::Arc::new(store(&db).await);
    let pool = store.pool().clone();
    owner_limits(&pool, &[("alpha", DAILY)]).await;
    let earlier = a_post(&pool).await;
    counted(&pool, earlier, DAILY - 5).await;
    let post = approved(store.as_ref(), "alpha", "next", t0()).await;
    let claim = post_claim(&post, t0(), Some((1000, DAILY as u32)));

    let mut owner = pool.begin().await.unwrap();
    sqlx::query("SELECT airlock_lock_window()")
        .execute(&mut *owner)
        .await
        .unwrap();
    sqlx::query(AssertSqlSafe(rewrite.to_owned()))
        .execute(&mut *owner)
        .await
        .unwrap();
    let claiming = tokio::spawn({
        let (store, claim) = (store.clone(), claim.clone());
        async move { store.claim_post(&claim).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    owner.commit().await.unwrap();
    let refused = claiming
        .await
        .unwrap()
        .expect_err("a claim by limits rewritten since is refused");
    assert!(refused.to_string().contains("changed"), "{refused}");
    let again = store.claim_post(&claim).await.unwrap();
    assert!(then(&again), "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_rereads_a_daily_limit_lowered_under_it() {
    a_claim_rereads_limits_rewritten_under_it(
        "UPDATE channel_limits SET daily_limit = 25, updated_at = now() WHERE channel = 'alpha'",
        |again| matches!(again, PostClaimed::OverQuota(d) if d.max == 25),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_rereads_limits_removed_under_it() {
    // The owner claims on a channel the ledger holds no limits for by its own.
    a_claim_rereads_limits_rewritten_under_it(
        "DELETE FROM channel_limits WHERE channel = 'alpha'",
        |again| matches!(again, PostClaimed::Claimed { .. }),
    )
    .await;
}

/// The claims of one transaction after its first are decided alone, from the rows: the
/// first may hold a slot with a reservation no other claim can see, so a second one's
/// quick proof (which counts one claim per slot) would undercount.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_claim_in_one_transaction_waits_for_every_slot() {
    use airlock_store_tests::fixture::{approved, t0};

    let db = TestDb::create();
    let store = store(&db).await;
    let pool = store.pool().clone();
    let first = approved(&store, "alpha", "first", t0()).await;
    let second = approved(&store, "alpha", "second", t0()).await;

    // Another claim in flight holds a slot.
    let mut other = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM ledger_locks WHERE name = 'window slot 07' FOR UPDATE")
        .execute(&mut *other)
        .await
        .unwrap();

    let claims = tokio::spawn(async move {
        let mut tx = pool.begin().await.unwrap();
        let mut outcomes = Vec::new();
        for post in [&first, &second] {
            let outcome: String = sqlx::query_scalar(
                "SELECT outcome FROM airlock_claim_post($1, $2, true, 'w', 'dispatcher:w', $3, \
                 $4, 'claimed', $5, 1000000, 1000000, $6, NULL, NULL, NULL, NULL, NULL, NULL)",
            )
            .bind(post.id.0)
            .bind(post.version)
            .bind(t0())
            .bind(t0() + Duration::minutes(15))
            .bind(Duration::hours(1).num_microseconds().unwrap())
            .bind(days(t0()))
            .fetch_one(&mut *tx)
            .await
            .unwrap();
            outcomes.push(outcome);
        }
        tx.commit().await.unwrap();
        outcomes
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !claims.is_finished(),
        "the second claim decided without waiting for the slot in flight"
    );
    other.commit().await.unwrap();
    assert_eq!(claims.await.unwrap(), ["claimed", "claimed"]);
}

/// The day starts a claim sends are checked as the ledger's zone's days before any count
/// is read: starts in any other shape than one list of instants from index 1 (a list of
/// lists, a missing start, another first index) are refused, never read as no days, which
/// the quick proof would take for room.
#[tokio::test]
async fn day_starts_of_any_other_shape_are_refused() {
    let db = TestDb::create();
    let store = store(&db).await;
    let pool = store.pool();
    let check = |starts: &str| {
        format!(
            "SELECT airlock_check_periods('day', {starts}, '{}', false, $2)",
            ZONE.name()
        )
    };
    let accepted = |sql: String| async move {
        sqlx::query(AssertSqlSafe(sql))
            .bind(days(now()))
            .bind(now())
            .execute(pool)
            .await
            .is_ok()
    };
    assert!(accepted(check("$1")).await, "the days as Rust sends them");
    for shape in [
        "ARRAY[$1, $1, $1]",
        "array_prepend(NULL::timestamptz, $1[2:])",
        "$1[1:3] || NULL::timestamptz || $1[5:]",
        "$1 || NULL::timestamptz",
        "('[0:7]=' || $1::text)::timestamptz[]",
        "('[2:9]=' || $1::text)::timestamptz[]",
    ] {
        assert!(!accepted(check(shape)).await, "{shape}");
    }
    // The quick proof sends such starts to the rows.
    for shape in [
        "ARRAY[$1, $1, $1]",
        "$1[1:3] || NULL::timestamptz || $1[5:]",
        "('[0:7]=' || $1::text)::timestamptz[]",
    ] {
        let far: bool = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT airlock_quota_far('alpha', $2, interval '1 hour', 1000, 1000, {shape})"
        )))
        .bind(days(now()))
        .bind(now())
        .fetch_one(pool)
        .await
        .unwrap();
        assert!(!far, "{shape}");
    }
}
