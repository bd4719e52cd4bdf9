//! The triggers of `migrations/0001_ledger.sql` against hand-written SQL: all 36 status
//! pairs against `is_legal`, an event for every change (actor `sql`), drafts at birth,
//! permanent `posted_at`, only drafts deleted, an append-only event log; and those of
//! `0006_review.sql`: quarantine, review rounds, append-only verdicts.

use sqlx::Executor;

use airlock_core::status::is_legal;
use airlock_core::{PostId, PostStatus};
use airlock_store::{Posts, Publishing, Reads, StoreError};
use airlock_store_tests::fixture::*;

use crate::fresh;

fn refused(e: &sqlx::Error, marker: &str) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.message().contains(marker))
}

async fn status_by_sql(store: &airlock_store_sqlite::SqliteStore, id: PostId) -> String {
    sqlx::query_scalar("SELECT status FROM posts WHERE id = ?")
        .bind(id.0)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn hand_written_status_updates_follow_is_legal_for_all_36_pairs() {
    let (store, _dir) = fresh().await;
    for from in PostStatus::ALL {
        for to in PostStatus::ALL {
            let post = in_status(&store, from, "threads-main").await;
            let before = events(&store, post.id).await;
            let res = sqlx::query("UPDATE posts SET status = ? WHERE id = ?")
                .bind(to.as_str())
                .bind(post.id.0)
                .execute(store.pool())
                .await;
            let after = events(&store, post.id).await;
            if from == to {
                res.unwrap();
                assert_eq!(after, before, "{from} -> {to}");
            } else if is_legal(from, to) {
                res.unwrap_or_else(|e| panic!("{from} -> {to} is legal: {e}"));
                assert_eq!(status_by_sql(&store, post.id).await, to.as_str());
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
                assert!(
                    refused(&err, "illegal status transition"),
                    "{from} -> {to}: {err}"
                );
                assert_eq!(status_by_sql(&store, post.id).await, from.as_str());
                assert_eq!(after, before, "{from} -> {to}");
            }
        }
    }
}

#[tokio::test]
async fn a_hand_written_update_cannot_publish_a_draft() {
    let (store, _dir) = fresh().await;
    let post = draft(&store, "threads-main", "not yet", t0()).await;
    let err = sqlx::query(
        "UPDATE posts SET status = 'posted', posted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
         WHERE id = ?",
    )
    .bind(post.id.0)
    .execute(store.pool())
    .await
    .unwrap_err();
    assert!(refused(&err, "illegal status transition"), "{err}");
    assert_eq!(store.get_post(post.id).await.unwrap(), post);
}

#[tokio::test]
async fn posts_are_born_drafts_with_a_creation_event() {
    let (store, _dir) = fresh().await;
    let insert = "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, \
                  created_by, edited_by, created_at, updated_at) \
                  VALUES ('alpha', ?, 'x', '2026-03-02T03:00:00.000Z', ?, 'sql', 'sql', \
                  '2026-03-02T03:00:00.000Z', '2026-03-02T03:00:00.000Z') RETURNING id";
    let err = sqlx::query(insert)
        .bind("approved")
        .bind("a".repeat(64))
        .fetch_one(store.pool())
        .await
        .unwrap_err();
    assert!(refused(&err, "created as draft"), "{err}");
    let id: i64 = sqlx::query_scalar(insert)
        .bind("draft")
        .bind("a".repeat(64))
        .fetch_one(store.pool())
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
    let (store, _dir) = fresh().await;
    let post = in_status(&store, PostStatus::Posted, "alpha").await;
    for sql in [
        "UPDATE posts SET posted_at = NULL WHERE id = ?",
        "UPDATE posts SET posted_at = '2030-01-01T00:00:00.000Z' WHERE id = ?",
    ] {
        let err = sqlx::query(sql)
            .bind(post.id.0)
            .execute(store.pool())
            .await
            .unwrap_err();
        assert!(refused(&err, "posted_at is permanent"), "{sql}: {err}");
    }
    assert_eq!(
        store.get_post(post.id).await.unwrap().posted_at,
        post.posted_at
    );
}

#[tokio::test]
async fn only_drafts_can_be_deleted_by_hand() {
    let (store, _dir) = fresh().await;
    let approved = approved(&store, "alpha", "stays", t0()).await;
    let draft = draft(&store, "alpha", "goes", t0()).await;
    let err = sqlx::query("DELETE FROM posts WHERE id = ?")
        .bind(approved.id.0)
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(refused(&err, "only drafts"), "{err}");
    sqlx::query("DELETE FROM posts WHERE id = ?")
        .bind(draft.id.0)
        .execute(store.pool())
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
    let (store, _dir) = fresh().await;
    let post = approved(&store, "alpha", "history", t0()).await;
    let before = events(&store, post.id).await;
    for sql in [
        "UPDATE post_events SET note = 'rewritten'",
        "DELETE FROM post_events",
    ] {
        let err = store.pool().execute(sql).await.unwrap_err();
        assert!(refused(&err, "append-only"), "{sql}: {err}");
    }
    assert_eq!(events(&store, post.id).await, before);
}

/// `0006_review.sql`: a quarantined draft is neither approved nor changed by any SQL,
/// only a draft is quarantined, a hand-written change of text starts a new review round,
/// and verdicts are append-only.
#[tokio::test]
async fn hand_written_sql_cannot_approve_or_change_a_quarantined_draft_and_verdicts_are_append_only()
 {
    let (store, _dir) = fresh().await;
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
    store
        .pool()
        .execute(sqlx::query(
            "UPDATE posts SET quarantined_at = '2026-03-02T03:01:00.000Z' WHERE id = 1",
        ))
        .await
        .unwrap();
    for (statement, marker) in [
        (
            "UPDATE posts SET status = 'approved' WHERE id = 1",
            "illegal status transition",
        ),
        (
            "UPDATE posts SET text = 'changed' WHERE id = 1",
            "quarantined",
        ),
        ("UPDATE verdicts SET verdict = 'pass'", "append-only"),
        ("DELETE FROM verdicts", "append-only"),
    ] {
        let err = store
            .pool()
            .execute(sqlx::query(statement))
            .await
            .unwrap_err();
        assert!(refused(&err, marker), "{statement}: {err}");
    }
    assert_eq!(status_by_sql(&store, post.id).await, "draft");
    assert_eq!(store.verdicts(post.id).await.unwrap().len(), 1);

    let approved = approved(&store, "threads-main", "approved", t0()).await;
    let err =
        sqlx::query("UPDATE posts SET quarantined_at = '2026-03-02T03:01:00.000Z' WHERE id = ?")
            .bind(approved.id.0)
            .execute(store.pool())
            .await
            .unwrap_err();
    assert!(refused(&err, "only a draft is quarantined"), "{err}");

    let plain = draft(&store, "threads-main", "plain", t0()).await;
    sqlx::query("UPDATE posts SET text = 'edited by hand', content_hash = ? WHERE id = ?")
        .bind("cd".repeat(32))
        .bind(plain.id.0)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(store.get_post(plain.id).await.unwrap().review_round, 1);
}

/// A post that ever got a `posted_at` is never claimed again, whatever its status says:
/// a hand-written write (no change airlock makes can do it) that returns a post to the
/// queue while recording a publish time leaves it out of every claim.
#[tokio::test]
async fn a_post_with_posted_at_is_never_claimed_again() {
    let (store, _dir) = fresh().await;
    let post = in_status(&store, PostStatus::NeedsReview, "alpha").await;
    sqlx::query(
        "UPDATE posts SET status = 'approved', posted_at = '2026-03-02T03:01:00.000Z', \
         version = version + 1 WHERE id = ?",
    )
    .bind(post.id.0)
    .execute(store.pool())
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
