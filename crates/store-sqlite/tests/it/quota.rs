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

/// The counts the quick quota proof reads (migration 0013) follow every write to a
/// reservation, hand-written ones included, and a row no count may stand for is listed.
#[tokio::test]
async fn quota_hours_follow_every_write_and_doctor_names_a_drift() {
    let (store, _dir) = fresh().await;
    reserved(&store, "alpha", "counted", mins(-1)).await;
    assert_eq!(quota_drift(&store, t0()).await, Vec::<String>::new());
    sqlx::query("DROP TRIGGER reservations_settled_permanent")
        .execute(store.pool())
        .await
        .unwrap();
    // Each write, and whether it leaves the row suspect.
    let writes = [
        (
            "UPDATE reservations SET sent_at = '2026-03-02T04:01:00.000Z'",
            false,
        ),
        ("UPDATE reservations SET state = 'committed'", false),
        ("UPDATE reservations SET channel = 'beta'", false),
        (
            "UPDATE reservations SET created_at = '2026-03-02T00:10:00.000Z'",
            false,
        ),
        (
            "UPDATE reservations SET sent_at = '2026-03-02 04:01:00'",
            true,
        ),
        (
            "UPDATE reservations SET sent_at = '2026-03-02T00:30:00.000Z'",
            false,
        ),
        (
            "UPDATE reservations SET sent_at = '2026-03-02T00:01:00.000Z'",
            true,
        ),
        ("UPDATE reservations SET sent_at = NULL", false),
        ("UPDATE reservations SET channel = 'Not A Channel'", true),
        ("UPDATE reservations SET channel = 'alpha'", false),
        (
            "UPDATE reservations SET channel = 'alpha' || char(0) || 'x'",
            true,
        ),
        ("UPDATE reservations SET channel = 'alpha'", false),
        (
            "UPDATE reservations SET id = id + 100, channel = 'Not A Channel'",
            true,
        ),
        ("UPDATE reservations SET id = id - 100", true),
        ("UPDATE reservations SET state = 'released'", false),
        (
            "UPDATE reservations SET state = 'reserved', channel = 'alpha'",
            false,
        ),
        // Settles: alone they count nothing; with a stamp or the cost they move it.
        ("UPDATE reservations SET state = 'committed'", false),
        (
            "UPDATE reservations SET state = 'reserved', sent_at = '2026-03-02T00:40:00.000Z'",
            false,
        ),
        (
            "UPDATE reservations SET state = 'committed', channel = 'alpha' || char(0)",
            true,
        ),
        ("UPDATE reservations SET channel = 'alpha'", false),
    ];
    for (write, suspect_after) in writes {
        sqlx::query(sqlx::AssertSqlSafe(write))
            .execute(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{write}: {e}"));
        assert_eq!(
            quota_drift(&store, t0()).await,
            Vec::<String>::new(),
            "after {write}"
        );
        let suspect: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM quota_suspects)")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(suspect, suspect_after, "{write}");
    }
    // A misfiled suspect is named.
    sqlx::query("INSERT INTO quota_suspects (id) SELECT id FROM reservations")
        .execute(store.pool())
        .await
        .unwrap();
    let named = quota_drift(&store, t0()).await;
    assert!(
        named.iter().any(|p| p.contains("quota_suspects misfiles")),
        "{named:?}"
    );
    sqlx::query("DELETE FROM quota_suspects")
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(quota_drift(&store, t0()).await, Vec::<String>::new());
    // A count below the rows' is named.
    sqlx::query("UPDATE quota_hours SET live = live - 1 WHERE live > 0")
        .execute(store.pool())
        .await
        .unwrap();
    let named = quota_drift(&store, t0()).await;
    assert!(
        !named.is_empty() && named[0].contains("channel alpha"),
        "{named:?}"
    );
}

/// A claim far from its limits is decided by the counts alone: with the day's count
/// lowered by hand below the rows', the claim goes through where the rows would refuse
/// it (which is why doctor recounts them).
#[tokio::test]
async fn a_claim_far_from_its_limits_is_decided_by_the_counts() {
    let (store, _dir) = fresh().await;
    reserved(&store, "alpha", "earlier", mins(-30)).await;
    let post = approved(&store, "alpha", "next", t0()).await;
    let over = store
        .claim_post(&post_claim(&post, t0(), Some((10, 1))))
        .await
        .unwrap();
    assert!(
        matches!(over, airlock_store::PostClaimed::OverQuota(_)),
        "{over:?}"
    );
    sqlx::query("UPDATE quota_hours SET live = 0")
        .execute(store.pool())
        .await
        .unwrap();
    let post = store.get_post(post.id).await.unwrap();
    let claimed = store
        .claim_post(&post_claim(&post, t0(), Some((10, 1))))
        .await
        .unwrap();
    assert!(
        matches!(claimed, airlock_store::PostClaimed::Claimed { .. }),
        "{claimed:?}"
    );
}
