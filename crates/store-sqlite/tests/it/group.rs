//! Group commit (issue 28): claims and changes made at the same time share one
//! transaction and one commit, each deciding and failing as it would alone. The group is
//! formed by holding SQLite's write lock from another connection while the writes queue.

use std::sync::Arc;

use airlock_core::PostStatus;
use airlock_store::{IntentClaim, PostClaim, PostClaimed, Posts, Publishing, Store, StoreError};
use airlock_store_sqlite::SqliteStore;
use airlock_store_tests::fixture::*;
use chrono::Duration;
use sqlx::Connection;

use crate::fresh;

/// The answers of `writes`, and the commits the store made since `before`.
async fn together<T: Send + 'static>(
    store: &SqliteStore,
    before: u64,
    writes: Vec<tokio::task::JoinHandle<T>>,
) -> (Vec<T>, u64) {
    let mut answers = Vec::new();
    for write in writes {
        answers.push(write.await.unwrap());
    }
    (answers, store.commits() - before)
}

/// Holds the file's write lock on a connection of its own while `start` starts writes,
/// so that they queue and go in together once it lets go: what `start` returned, and the
/// store's commits before.
async fn while_held<W>(store: &SqliteStore, start: impl FnOnce() -> W) -> (W, u64) {
    let before = store.commits();
    let mut conn = store.pool().acquire().await.unwrap().detach();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut conn)
        .await
        .unwrap();
    let writes = start();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("COMMIT").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    (writes, before)
}

/// Starts the outcome that `post` was published.
fn spawn_posted(
    store: &Arc<SqliteStore>,
    post: &airlock_core::Post,
) -> tokio::task::JoinHandle<airlock_store::Result<airlock_core::Post>> {
    let store = store.clone();
    let change = outcome(post, PostStatus::Posted, mins(1));
    tokio::spawn(async move { store.change_post(change).await })
}

fn spawn_claim(
    store: &Arc<SqliteStore>,
    claim: PostClaim,
) -> tokio::task::JoinHandle<airlock_store::Result<PostClaimed>> {
    let store = store.clone();
    tokio::spawn(async move { store.claim_post(&claim).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_at_once_share_a_commit_and_each_decides_as_alone() {
    let (store, _dir) = fresh().await;
    let store = Arc::new(store);
    let s = store.as_ref() as &dyn Store;
    let mut posts = Vec::new();
    for n in 0..4 {
        posts.push(approved(s, "alpha", &format!("post {n}"), mins(-10 + n)).await);
    }
    // An intent the lease cannot cover (on a channel of its own, so that it is refused
    // wherever it falls in the group): nothing of that claim is written.
    let doomed = approved(s, "beta", "doomed", mins(-20)).await;
    let mut bad = post_claim(&doomed, t0(), Some((10, 2)));
    bad.intent = Some(IntentClaim {
        part: 1,
        idempotency_key: "airlock-doomed".into(),
        lease_margin: Duration::minutes(LEASE_MINUTES),
    });

    let (writes, before) = while_held(&store, || {
        let mut writes = vec![spawn_claim(&store, bad)];
        for post in &posts {
            writes.push(spawn_claim(&store, post_claim(post, t0(), Some((10, 2)))));
        }
        writes
    })
    .await;
    let (answers, commits) = together(&store, before, writes).await;

    assert!(
        (1..=2).contains(&commits),
        "five claims took {commits} commits"
    );
    assert!(
        matches!(answers[0], Err(StoreError::Fenced { .. })),
        "{:?}",
        answers[0]
    );
    assert_eq!(s.get_post(doomed.id).await.unwrap(), doomed);
    let detail = s.post_detail(doomed.id).await.unwrap();
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());
    // The daily limit of 2 holds inside the group: each claim counts those before it.
    let claimed = answers[1..]
        .iter()
        .filter(|a| matches!(a, Ok(PostClaimed::Claimed { .. })))
        .count();
    let over = answers[1..]
        .iter()
        .filter(|a| matches!(a, Ok(PostClaimed::OverQuota(_))))
        .count();
    assert_eq!((claimed, over), (2, 2), "{answers:?}");
    assert_eq!(quota_drift(s, t0()).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stale_outcome_in_a_group_keeps_its_evidence_and_spoils_no_other() {
    let (store, _dir) = fresh().await;
    let store = Arc::new(store);
    let s = store.as_ref() as &dyn Store;
    let first = claimed(s, "alpha", "first", t0()).await;
    let second = claimed(s, "alpha", "second", t0()).await;
    let mut stale = first.clone();
    stale.generation -= 1;

    let (writes, before) = while_held(&store, || {
        Vec::from([&stale, &second, &first].map(|post| spawn_posted(&store, post)))
    })
    .await;
    let (answers, commits) = together(&store, before, writes).await;

    assert!(
        (1..=2).contains(&commits),
        "three changes took {commits} commits"
    );
    assert!(matches!(answers[0], Err(StoreError::Fenced { .. })));
    for (answer, post) in answers[1..].iter().zip([&second, &first]) {
        let after = answer.as_ref().unwrap();
        assert_eq!((after.id, after.status), (post.id, PostStatus::Posted));
    }
    let events = s.post_detail(first.id).await.unwrap().events;
    assert!(
        events.iter().any(|e| e.kind == "stale_outcome"),
        "the stale write's evidence stays: {events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_writes_than_a_group_takes_all_land_claims_and_changes_mixed() {
    let (store, _dir) = fresh().await;
    let store = Arc::new(store);
    let s = store.as_ref() as &dyn Store;
    let mut due = Vec::new();
    for n in 0..40 {
        due.push(approved(s, "alpha", &format!("due {n}"), mins(-30)).await);
    }
    let mut out = Vec::new();
    for n in 0..5 {
        out.push(claimed(s, "beta", &format!("out {n}"), t0()).await);
    }

    let ((claims, changes), before) = while_held(&store, || {
        let claims: Vec<_> = due
            .iter()
            .map(|post| spawn_claim(&store, post_claim(post, t0(), ROOMY)))
            .collect();
        let changes: Vec<_> = out.iter().map(|post| spawn_posted(&store, post)).collect();
        (claims, changes)
    })
    .await;
    let (claimed_now, _) = together(&store, before, claims).await;
    let (changed, commits) = together(&store, before, changes).await;

    // Groups of at most 32: two at least, and the rest of 45 writes in few more.
    assert!(
        (2..=4).contains(&commits),
        "45 writes took {commits} commits"
    );
    for answer in claimed_now {
        assert!(
            matches!(answer, Ok(PostClaimed::Claimed { .. })),
            "{answer:?}"
        );
    }
    for answer in changed {
        assert_eq!(answer.unwrap().status, PostStatus::Posted);
    }
    assert_eq!(quota_drift(s, t0()).await, Vec::<String>::new());
}

/// A claim and its intent for a generation that already has one (planted by hand): the
/// claim's statements go in one call, and the intent's refusal takes back the claim and
/// the reservation written before it, alone and inside a group, where the others stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_refused_halfway_leaves_nothing_alone_or_in_a_group() {
    let (store, _dir) = fresh().await;
    let store = Arc::new(store);
    let s = store.as_ref() as &dyn Store;
    let plant = |post: &airlock_core::Post| {
        sqlx::query(
            "INSERT INTO intents (post_id, generation, idempotency_key, part, phase, created_at) \
             VALUES (?, 1, 'planted', 1, 'sending', '2020-01-01T00:00:00.000Z')",
        )
        .bind(post.id.0)
        .execute(store.pool())
    };
    let with_intent = |post: &airlock_core::Post| PostClaim {
        intent: Some(IntentClaim {
            part: 1,
            idempotency_key: format!("key-{}", post.id),
            lease_margin: Duration::seconds(30),
        }),
        ..post_claim(post, t0(), Some((10, 10)))
    };
    let untouched = |post: airlock_core::Post| async move {
        let detail = s.post_detail(post.id).await.unwrap();
        assert_eq!(detail.post, post);
        assert!(detail.reservations.is_empty());
        assert_eq!(detail.intents.len(), 1, "only the planted intent");
    };

    let lone = approved(s, "alpha", "lone", mins(-5)).await;
    plant(&lone).await.unwrap();
    let refused = s.claim_post(&with_intent(&lone)).await;
    assert!(
        matches!(refused, Err(StoreError::Duplicate(_))),
        "{refused:?}"
    );
    untouched(lone).await;

    let bad = approved(s, "beta", "bad", mins(-5)).await;
    plant(&bad).await.unwrap();
    let mut good = Vec::new();
    for n in 0..3 {
        good.push(approved(s, "alpha", &format!("good {n}"), mins(-5)).await);
    }
    let (writes, before) = while_held(&store, || {
        vec![
            spawn_claim(&store, post_claim(&good[0], t0(), Some((10, 10)))),
            spawn_claim(&store, with_intent(&bad)),
            spawn_claim(&store, with_intent(&good[1])),
            spawn_claim(&store, post_claim(&good[2], t0(), Some((10, 10)))),
        ]
    })
    .await;
    let (answers, commits) = together(&store, before, writes).await;
    assert_eq!(commits, 1, "{answers:?}");
    assert!(
        matches!(answers[1], Err(StoreError::Duplicate(_))),
        "{:?}",
        answers[1]
    );
    for n in [0, 2, 3] {
        assert!(
            matches!(answers[n], Ok(PostClaimed::Claimed { .. })),
            "{:?}",
            answers[n]
        );
    }
    untouched(bad).await;
    assert_eq!(quota_drift(s, t0()).await, Vec::<String>::new());
}

/// An outcome whose intent refuses its write (the intent ended by hand) after the post
/// row and its event were written in the same call: rolled back to its savepoint, and
/// the outcome beside it in the group stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outcome_refused_halfway_is_rolled_back_in_its_group() {
    let (store, _dir) = fresh().await;
    let store = Arc::new(store);
    let s = store.as_ref() as &dyn Store;
    let bad = claimed(s, "alpha", "bad", t0()).await;
    intent(s, &bad, t0()).await;
    sqlx::query(
        "UPDATE intents SET phase = 'succeeded', settled_at = created_at WHERE post_id = ?",
    )
    .bind(bad.id.0)
    .execute(store.pool())
    .await
    .unwrap();
    let good = claimed(s, "alpha", "good", t0()).await;
    let bad_before = s.post_detail(bad.id).await.unwrap();
    let (writes, before) = while_held(&store, || {
        vec![spawn_posted(&store, &bad), spawn_posted(&store, &good)]
    })
    .await;
    let (answers, commits) = together(&store, before, writes).await;
    assert_eq!(commits, 1, "{answers:?}");
    assert!(answers[0].is_err(), "{:?}", answers[0]);
    assert_eq!(answers[1].as_ref().unwrap().status, PostStatus::Posted);
    let bad_after = s.post_detail(bad.id).await.unwrap();
    assert_eq!(bad_after.post, bad_before.post);
    assert_eq!(bad_after.events, bad_before.events);
    assert_eq!(quota_drift(s, t0()).await, Vec::<String>::new());
}
