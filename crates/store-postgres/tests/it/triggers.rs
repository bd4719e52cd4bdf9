//! What the schema itself guarantees against hand-written SQL: the lifecycle edges
//! (all 36 pairs against `is_legal`), events for every status change, drafts at birth,
//! permanent `posted_at`, an append-only event log; the quarantine, review rounds and
//! append-only verdicts of `0006_review.sql`; plus corrupt quota rows, the claim index,
//! and an event feed that never skips a late commit.

use sqlx::{Executor, PgConnection, Row};

use airlock_core::status::is_legal;
use airlock_core::{PostId, PostStatus};
use airlock_store::{Posts, Publishing, Reads, Store, StoreError};
use airlock_store_tests::fixture::*;

use crate::support::{TestDb, store};

fn sqlstate(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(d) => d.code().map(|c| c.into_owned()),
        _ => None,
    }
}

async fn status_by_sql(conn: &mut PgConnection, id: PostId) -> String {
    sqlx::query_scalar("SELECT status FROM posts WHERE id = $1")
        .bind(id.0)
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn hand_written_status_updates_follow_is_legal_for_all_36_pairs() {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut conn = db.conn().await;
    for from in PostStatus::ALL {
        for to in PostStatus::ALL {
            let post = in_status(&store, from, "threads-main").await;
            let before = events(&store, post.id).await;
            let res = sqlx::query("UPDATE posts SET status = $1 WHERE id = $2")
                .bind(to.as_str())
                .bind(post.id.0)
                .execute(&mut conn)
                .await;
            let after = events(&store, post.id).await;
            if from == to {
                res.unwrap();
                assert_eq!(after, before, "{from} -> {to}");
            } else if is_legal(from, to) {
                res.unwrap_or_else(|e| panic!("{from} -> {to} is legal: {e}"));
                assert_eq!(status_by_sql(&mut conn, post.id).await, to.as_str());
                assert_eq!(after.len(), before.len() + 1, "{from} -> {to}");
                let event = after.last().unwrap();
                assert_eq!((event.from, event.to), (Some(from), to));
                assert_eq!(event.kind, "status");
                assert_eq!(
                    event.actor, "sql",
                    "a hand-written change is recorded as such"
                );
                assert_eq!(
                    event.note.as_deref(),
                    Some("status changed by a hand-written SQL statement")
                );
            } else {
                let err = res.expect_err(&format!("{from} -> {to} is illegal"));
                assert_eq!(
                    sqlstate(&err).as_deref(),
                    Some("AL001"),
                    "{from} -> {to}: {err}"
                );
                assert_eq!(status_by_sql(&mut conn, post.id).await, from.as_str());
                assert_eq!(after, before, "{from} -> {to}");
            }
        }
    }
}

#[tokio::test]
async fn a_hand_written_update_cannot_publish_a_draft() {
    let db = TestDb::create();
    let store = store(&db).await;
    let post = draft(&store, "threads-main", "not yet", t0()).await;
    let mut conn = db.conn().await;
    let err = sqlx::query("UPDATE posts SET status = 'posted', posted_at = now() WHERE id = $1")
        .bind(post.id.0)
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("AL001"), "{err}");
    assert_eq!(store.get_post(post.id).await.unwrap(), post);
}

#[tokio::test]
async fn posts_are_born_drafts_with_a_creation_event() {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut conn = db.conn().await;
    let insert = "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, \
                  created_by, edited_by, created_at, updated_at) \
                  VALUES ('alpha', $1, 'x', now(), repeat('a', 64), 'sql', 'sql', now(), now()) \
                  RETURNING id";
    let err = sqlx::query(insert)
        .bind("approved")
        .fetch_one(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("AL001"), "{err}");
    let id: i64 = sqlx::query_scalar(insert)
        .bind("draft")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let events = events(&store, PostId(id)).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].from, None);
    assert_eq!(events[0].to, PostStatus::Draft);
    assert_eq!(events[0].actor, "sql");
}

#[tokio::test]
async fn posted_at_is_permanent_once_set() {
    let db = TestDb::create();
    let store = store(&db).await;
    let post = in_status(&store, PostStatus::Posted, "alpha").await;
    let mut conn = db.conn().await;
    for sql in [
        "UPDATE posts SET posted_at = NULL WHERE id = $1",
        "UPDATE posts SET posted_at = posted_at + interval '1 second' WHERE id = $1",
    ] {
        let err = sqlx::query(sql)
            .bind(post.id.0)
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("AL002"), "{sql}: {err}");
    }
    sqlx::query("UPDATE posts SET verified_at = now() WHERE id = $1")
        .bind(post.id.0)
        .execute(&mut conn)
        .await
        .expect("other columns of a posted post can change");
    assert_eq!(
        store.get_post(post.id).await.unwrap().posted_at,
        post.posted_at
    );
}

#[tokio::test]
async fn only_drafts_can_be_deleted_by_hand() {
    let db = TestDb::create();
    let store = store(&db).await;
    let approved = approved(&store, "alpha", "stays", t0()).await;
    let draft = draft(&store, "alpha", "goes", t0()).await;
    let mut conn = db.conn().await;
    let err = sqlx::query("DELETE FROM posts WHERE id = $1")
        .bind(approved.id.0)
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("AL003"), "{err}");
    sqlx::query("DELETE FROM posts WHERE id = $1")
        .bind(draft.id.0)
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(store.get_post(approved.id).await.is_ok());
    assert!(matches!(
        store.get_post(draft.id).await,
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn post_events_are_append_only() {
    let db = TestDb::create();
    let store = store(&db).await;
    let post = approved(&store, "alpha", "history", t0()).await;
    let before = events(&store, post.id).await;
    let mut conn = db.conn().await;
    for sql in [
        "UPDATE post_events SET note = 'rewritten'",
        "DELETE FROM post_events",
        "TRUNCATE post_events",
    ] {
        let err = conn.execute(sql).await.unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("AL004"), "{sql}: {err}");
    }
    assert_eq!(events(&store, post.id).await, before);
}

#[tokio::test]
async fn corrupt_reservation_rows_stop_a_claim_with_corrupt_quota() {
    let db = TestDb::create();
    let store = store(&db).await;
    reserved(&store, "alpha", "earlier", mins(-30)).await;
    let mut conn = db.conn().await;
    let corruptions = [
        "UPDATE reservations SET created_at = $1::timestamptz + interval '1 day'",
        "UPDATE reservations SET sent_at = $1::timestamptz + interval '1 day'",
        "UPDATE reservations SET sent_at = created_at - interval '10 minutes'",
        "UPDATE reservations SET sent_at = 'infinity'",
        "UPDATE reservations SET sent_at = '-infinity'",
        "UPDATE reservations SET created_at = '-infinity'",
        "UPDATE reservations SET channel = 'Not A Channel'",
    ];
    let post = approved(&store, "beta", "next", t0()).await;
    for corruption in corruptions {
        sqlx::query("UPDATE reservations SET created_at = $1, sent_at = NULL, channel = 'alpha'")
            .bind(mins(-30))
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query(sqlx::AssertSqlSafe(corruption))
            .bind(t0())
            .execute(&mut conn)
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
        assert!(matches!(
            store.quota_rows(mins(-60), t0()).await,
            Err(StoreError::CorruptQuota(_))
        ));
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
async fn claims_read_the_partial_index_of_the_backlog() {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut conn = db.conn().await;
    let indexdef: String =
        sqlx::query_scalar("SELECT indexdef FROM pg_indexes WHERE indexname = 'posts_due'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert!(
        indexdef.contains("WHERE ((status = 'approved'::text) AND (posted_at IS NULL))"),
        "{indexdef}"
    );
    // History: many published posts, and a small backlog.
    conn.execute(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
         edited_by, created_at, updated_at, approved_hash) \
         SELECT 'alpha', 'draft', 'old ' || g, now() - interval '1 day', repeat('a', 64), 'sql', \
         'sql', now(), now(), repeat('a', 64) FROM generate_series(1, 20000) AS g",
    )
    .await
    .unwrap();
    for status in ["approved", "posting", "posted"] {
        sqlx::query("UPDATE posts SET status = $1")
            .bind(status)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    conn.execute("UPDATE posts SET posted_at = now() WHERE status = 'posted'")
        .await
        .unwrap();
    for idx in 0..5 {
        approved(&store, "alpha", &format!("due {idx}"), mins(-idx)).await;
    }
    conn.execute("ANALYZE posts").await.unwrap();
    let plan: Vec<String> = sqlx::query(
        "EXPLAIN SELECT id FROM posts \
         WHERE status = 'approved' AND posted_at IS NULL AND scheduled_at <= now() \
           AND (not_before IS NULL OR not_before <= now()) \
           AND channel = ANY('{alpha}') AND (NOT test OR channel = ANY('{}')) \
         ORDER BY scheduled_at, id LIMIT 16",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .iter()
    .map(|row| row.get::<String, _>(0))
    .collect();
    assert!(
        plan.iter().any(|line| line.contains("posts_due")),
        "{plan:#?}"
    );
    let claimed = claim_due(&store, &["alpha"], &[], t0()).await;
    assert!(claimed.is_some_and(|p| p.content.text == "due 4"));
}

#[tokio::test]
async fn the_event_feed_waits_for_an_event_that_commits_late() {
    let db = TestDb::create();
    let store = store(&db).await;
    let late = draft(&store, "alpha", "late", t0()).await;
    let start = store.events_after(0, 100).await.unwrap().last().unwrap().id;

    // A transaction inserts an event (taking its id) and stays open.
    let mut slow = db.conn().await;
    slow.execute("BEGIN").await.unwrap();
    sqlx::query("UPDATE posts SET status = 'approved', approved_hash = content_hash WHERE id = $1")
        .bind(late.id.0)
        .execute(&mut slow)
        .await
        .unwrap();
    // Meanwhile another event with a higher id commits.
    let quick = draft(&store, "alpha", "quick", t0()).await;

    let reader = store.clone();
    let feed = tokio::spawn(async move { reader.events_after(start, 100).await.unwrap() });
    // The reader must wait for the open transaction rather than read past its event.
    let mut observer = db.conn().await;
    let mut waited = false;
    for _ in 0..1000 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&mut observer)
        .await
        .unwrap();
        if waiting > 0 {
            waited = true;
            break;
        }
        assert!(
            !feed.is_finished(),
            "the feed read past an uncommitted event"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(waited, "the feed never waited for the open transaction");
    slow.execute("COMMIT").await.unwrap();
    let feed = feed.await.unwrap();
    let posts: Vec<PostId> = feed.iter().map(|e| e.post_id).collect();
    assert!(
        posts.contains(&late.id),
        "the late event is in the feed: {feed:?}"
    );
    assert!(posts.contains(&quick.id));
    assert!(feed.windows(2).all(|w| w[0].id < w[1].id));
}

/// `0006_review.sql`: a quarantined draft is neither approved (AL001) nor changed (AL006)
/// by any SQL, only a draft is quarantined, a hand-written change of text starts a new
/// review round, and verdicts are append-only (AL004).
#[tokio::test]
async fn hand_written_sql_cannot_approve_or_change_a_quarantined_draft_and_verdicts_are_append_only()
 {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut conn = db.conn().await;
    let post = draft(&store, "threads-main", "quarantine me", t0()).await;
    let fail = airlock_store::Change::Verdict {
        version: post.version,
        verdict: verdict_on(&post, airlock_core::VerdictKind::Fail),
        effect: airlock_store::VerdictEffect::Revise {
            counts: true,
            quarantine: false,
            error: "rejected: tone: no".into(),
            note: "tone: no".into(),
        },
    };
    store
        .change_post(airlock_store::PostChange::new(
            post.id,
            CRITIC,
            mins(1),
            fail,
        ))
        .await
        .unwrap();
    sqlx::query("UPDATE posts SET quarantined_at = now() WHERE id = $1")
        .bind(post.id.0)
        .execute(&mut conn)
        .await
        .unwrap();
    for (statement, code) in [
        (
            "UPDATE posts SET status = 'approved' WHERE id = $1",
            "AL001",
        ),
        ("UPDATE posts SET text = 'changed' WHERE id = $1", "AL006"),
        (
            "UPDATE verdicts SET verdict = 'pass' WHERE post_id = $1",
            "AL004",
        ),
        ("DELETE FROM verdicts WHERE post_id = $1", "AL004"),
    ] {
        let err = sqlx::query(statement)
            .bind(post.id.0)
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some(code), "{statement}: {err}");
    }
    assert_eq!(status_by_sql(&mut conn, post.id).await, "draft");
    assert_eq!(store.verdicts(post.id).await.unwrap().len(), 1);

    let approved = approved(&store, "threads-main", "approved", t0()).await;
    let err = sqlx::query("UPDATE posts SET quarantined_at = now() WHERE id = $1")
        .bind(approved.id.0)
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("AL001"), "{err}");

    let plain = draft(&store, "threads-main", "plain", t0()).await;
    sqlx::query("UPDATE posts SET text = 'edited by hand', content_hash = $1 WHERE id = $2")
        .bind("cd".repeat(32))
        .bind(plain.id.0)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(store.get_post(plain.id).await.unwrap().review_round, 1);
}

/// A post that ever got a `posted_at` is never claimed again, whatever its status says
/// (see the SQLite backend's test of the same name).
#[tokio::test]
async fn a_post_with_posted_at_is_never_claimed_again() {
    let db = TestDb::create();
    let store = store(&db).await;
    let mut conn = db.conn().await;
    let post = in_status(&store, PostStatus::NeedsReview, "alpha").await;
    sqlx::query(
        "UPDATE posts SET status = 'approved', posted_at = '2026-03-02T03:01:00Z', \
         version = version + 1 WHERE id = $1",
    )
    .bind(post.id.0)
    .execute(&mut conn)
    .await
    .unwrap();
    let odd = store.get_post(post.id).await.unwrap();
    assert_eq!(odd.status, PostStatus::Approved);
    assert_eq!(
        claim_due(&store, &["alpha"], &[], mins(10))
            .await
            .map(|p| p.id),
        None
    );
    assert!(matches!(
        store.claim_post(&post_claim(&odd, mins(10), None)).await,
        Ok(airlock_store::PostClaimed::Gone(Some(_)))
    ));
    assert_eq!(store.next_due_at(&[ch("alpha")], &[]).await.unwrap(), None);
}
