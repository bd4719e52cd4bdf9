//! Waiting costs nothing (issue 28): a look at the queue reads the posts it returns, not
//! the posts waiting behind them — a paused channel's, those deferred by quota and those
//! scheduled later (`posts_due_at`, migration 0014).

use chrono::{DateTime, Duration};
use sqlx::PgPool;

use airlock_store::{Admin, PauseScope, Reads};
use airlock_store_tests::fixture::{ch, t0};

use crate::support::TestDb;

/// `n` approved posts on `channel`, scheduled at `at`, held until `not_before`.
pub async fn queue(
    pool: &PgPool,
    channel: &str,
    n: i64,
    at: DateTime<chrono::Utc>,
    not_before: Option<DateTime<chrono::Utc>>,
) {
    let mut tx = pool.begin().await.unwrap();
    let ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
           edited_by, created_at, updated_at) \
         SELECT $1, 'draft', 'waiting ' || g, $3, repeat('a', 64), 'sql', 'sql', $3, $3 \
         FROM generate_series(1, $2) g RETURNING id",
    )
    .bind(channel)
    .bind(n)
    .bind(at)
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE posts SET status = 'approved', approved_hash = content_hash, \
           approved_by = 'sql', not_before = $2, version = version + 1, event_actor = 'sql' \
         WHERE id = ANY($1)",
    )
    .bind(&ids)
    .bind(not_before)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// Rows of `posts` and its indexes read on this store's one connection so far. Its
/// pending statistics are flushed first: after the statement asking for it, before the
/// next one.
async fn posts_read(pool: &PgPool) -> i64 {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query_scalar(
        "SELECT sum(pg_stat_get_tuples_returned(c.oid) + pg_stat_get_tuples_fetched(c.oid))::bigint \
         FROM pg_class c WHERE c.oid = 'posts'::regclass \
            OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'posts'::regclass)",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_look_at_the_queue_reads_only_what_it_returns() {
    let db = TestDb::create();
    // One connection, so that the statistics read are the look's own.
    let store = crate::support::one_connection(&db).await;
    let pool = store.pool();
    let now = t0();
    queue(pool, "alpha", 2_000, now - Duration::hours(1), None).await;
    queue(pool, "beta", 2_000, now + Duration::days(1), None).await;
    let deferred = Some(now + Duration::hours(1));
    queue(pool, "beta", 2_000, now - Duration::hours(2), deferred).await;
    queue(pool, "beta", 1, now - Duration::minutes(1), None).await;
    store
        .pause(
            &PauseScope::Channel(ch("alpha")),
            "held",
            "cli",
            now,
            Vec::new(),
        )
        .await
        .unwrap();

    let channels = [ch("alpha"), ch("beta")];
    let before = posts_read(pool).await;
    let due = store.due_posts(&channels, &[], now, 4).await.unwrap();
    let read = posts_read(pool).await - before;
    assert_eq!(due.len(), 1, "only beta's due post: {due:?}");
    assert_eq!(due[0].content.text, "waiting 1");
    assert!(read <= 4, "a look read {read} rows of posts");

    let before = posts_read(pool).await;
    let next = store.next_due_at(&[ch("beta")], &[]).await.unwrap();
    let read = posts_read(pool).await - before;
    assert_eq!(next, Some(now - Duration::minutes(1)));
    assert!(read <= 4, "the next due time read {read} rows of posts");

    // Everything paused: nothing is read at all.
    store
        .pause(&PauseScope::All, "held", "cli", now, Vec::new())
        .await
        .unwrap();
    let before = posts_read(pool).await;
    let due = store.due_posts(&channels, &[], now, 4).await.unwrap();
    assert!(due.is_empty());
    assert_eq!(posts_read(pool).await - before, 0);
}
