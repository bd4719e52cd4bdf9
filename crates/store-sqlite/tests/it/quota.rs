//! Fail-closed quota reads: a live reservation row that cannot be read as expected stops
//! a claim with quota with `CorruptQuota` (and shows in `check_invariants`), whatever its shape,
//! instead of being skipped or reset.

use airlock_store::{Publishing, Reads, StoreError};
use airlock_store_tests::fixture::*;

use crate::fresh;

#[tokio::test]
async fn corrupt_reservation_rows_stop_a_claim_with_corrupt_quota() {
    let (store, _dir) = fresh().await;
    reserved(&store, "alpha", "earlier", mins(-30)).await;
    // t0 is 2026-03-02T03:00Z; the day (Tokyo) began 2026-03-01T15:00Z.
    let corruptions = [
        // Times that cannot be read.
        "UPDATE reservations SET created_at = 'yesterday'",
        "UPDATE reservations SET sent_at = 'soon'",
        // SQLite's own datetime('now') format, typed by hand, inside the day.
        "UPDATE reservations SET sent_at = '2026-03-01 16:00:00'",
        "UPDATE reservations SET sent_at = '2026-03-02 02:40:00'",
        // Impossible times.
        "UPDATE reservations SET created_at = '2026-03-03T03:00:00.000Z'",
        "UPDATE reservations SET sent_at = '2026-03-03T03:00:00.000Z'",
        "UPDATE reservations SET sent_at = '2026-03-02T02:00:00.000Z'",
        // A channel no configuration can name.
        "UPDATE reservations SET channel = 'Not A Channel'",
    ];
    let post = approved(&store, "beta", "next", t0()).await;
    for corruption in corruptions {
        sqlx::query(
            "UPDATE reservations SET created_at = '2026-03-02T02:30:00.000Z', sent_at = NULL, \
             channel = 'alpha'",
        )
        .execute(store.pool())
        .await
        .unwrap();
        sqlx::query(sqlx::AssertSqlSafe(corruption))
            .execute(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{corruption}: {e}"));
        match store
            .claim_post(&post_claim(&post, t0(), Some((10, 10))))
            .await
        {
            Err(StoreError::CorruptQuota(reason)) => {
                assert!(reason.contains("reservation"), "{reason}")
            }
            other => panic!("{corruption}: expected CorruptQuota, got {other:?}"),
        }
        let problems = store.check_invariants(t0()).await.unwrap();
        assert!(
            problems.iter().any(|p| p.contains("reservation")),
            "{corruption}: {problems:?}"
        );
    }
    assert!(
        store
            .post_detail(post.id)
            .await
            .unwrap()
            .reservations
            .is_empty(),
        "nothing was reserved on corrupt state"
    );
}

#[tokio::test]
async fn an_unknown_reservation_state_stops_a_claim() {
    let (store, _dir) = fresh().await;
    reserved(&store, "alpha", "earlier", mins(-30)).await;
    // The CHECK constraint refuses unknown states; a database edited with checks off
    // must still not be counted as if the row were not there.
    let mut conn = store.pool().acquire().await.unwrap();
    sqlx::query("PRAGMA ignore_check_constraints = ON")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("UPDATE reservations SET state = 'held'")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("PRAGMA ignore_check_constraints = OFF")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    let post = approved(&store, "beta", "next", t0()).await;
    assert!(matches!(
        store
            .claim_post(&post_claim(&post, t0(), Some((10, 10))))
            .await,
        Err(StoreError::CorruptQuota(_))
    ));
}
