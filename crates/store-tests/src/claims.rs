//! Cases for claims (docs/guarded-path.md, step 2): which post is due, what a claim
//! writes, which posts are never claimed, and exclusivity under concurrent claimers with
//! separate handles.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use airlock_core::{Post, PostId, PostStatus};
use airlock_store::{
    IntentClaim, NewNotification, PauseScope, PostClaim, PostClaimed, Store, StoreError,
    VerificationRecord,
};

use crate::Ledger;
use crate::fixture::*;

fn claimed_id(claimed: Option<Post>) -> Option<PostId> {
    claimed.map(|post| post.id)
}

/// A claim of `post` as read that allows test posts only with `allow_test`.
fn claim_of(post: &Post, now: DateTime<Utc>, allow_test: bool) -> PostClaim {
    PostClaim {
        allow_test,
        ..post_claim(post, now, None)
    }
}

/// Due posts are claimed most overdue first (by `scheduled_at`); future ones wait.
pub async fn claim_takes_the_most_overdue_post_first(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let recent = approved(s, "alpha", "recent", mins(-10)).await;
    let oldest = approved(s, "alpha", "oldest", mins(-30)).await;
    let future = approved(s, "alpha", "future", mins(10)).await;
    draft(s, "alpha", "a draft is never due", mins(-60)).await;

    assert_eq!(
        claimed_id(claim_due(s, &["alpha"], &[], t0()).await),
        Some(oldest.id)
    );
    assert_eq!(
        claimed_id(claim_due(s, &["alpha"], &[], t0()).await),
        Some(recent.id)
    );
    assert_eq!(claimed_id(claim_due(s, &["alpha"], &[], t0()).await), None);
    assert_eq!(
        claimed_id(claim_due(s, &["alpha"], &[], mins(10)).await),
        Some(future.id)
    );
}

/// A post is not claimed before its `not_before`, and is from then on.
pub async fn claim_waits_for_not_before(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = approved(s, "alpha", "deferred", mins(-10)).await;
    defer(s, &post, mins(5), mins(-1)).await;
    assert_eq!(claimed_id(claim_due(s, &["alpha"], &[], t0()).await), None);
    assert_eq!(
        claimed_id(claim_due(s, &["alpha"], &[], mins(5)).await),
        Some(post.id)
    );
}

/// Only the listed channels are looked at; no channels means nothing is due.
pub async fn claim_looks_only_at_the_listed_channels(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let alpha = approved(s, "alpha", "a", mins(-30)).await;
    let beta = approved(s, "beta", "b", mins(-10)).await;
    assert_eq!(claimed_id(claim_due(s, &[], &[], t0()).await), None);
    assert_eq!(
        claimed_id(claim_due(s, &["beta", "gamma"], &[], t0()).await),
        Some(beta.id)
    );
    assert_eq!(claimed_id(claim_due(s, &["beta"], &[], t0()).await), None);
    assert_eq!(
        claimed_id(claim_due(s, &["alpha", "beta"], &[], t0()).await),
        Some(alpha.id)
    );
}

/// A test post is due only on a channel listed as publishing test posts, and a claim by
/// id refuses it unless test posts are allowed.
pub async fn test_posts_are_claimed_only_on_test_channels(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let mut new = new_post("sandbox", "a drill", mins(-10));
    new.test = true;
    let drill = approve(s, &create(s, new.clone()).await, mins(-5)).await;
    new.content.channel = ch("threads-main");
    let real_channel_drill = approve(s, &create(s, new).await, mins(-5)).await;

    let everything = ["sandbox", "threads-main"];
    assert_eq!(claimed_id(claim_due(s, &everything, &[], t0()).await), None);
    assert_eq!(
        claimed_id(claim_due(s, &everything, &["sandbox"], t0()).await),
        Some(drill.id)
    );
    assert_eq!(
        claimed_id(claim_due(s, &everything, &["sandbox"], t0()).await),
        None
    );

    match s
        .claim_post(&claim_of(&real_channel_drill, t0(), false))
        .await
        .unwrap()
    {
        PostClaimed::Gone(Some(post)) => assert_eq!(*post, real_channel_drill),
        other => panic!("a test post on a real channel must not be claimed: {other:?}"),
    }
}

/// A claim moves `approved -> posting` with this worker's lease and the next generation,
/// records the event, and reads back what it wrote.
pub async fn a_claim_sets_the_lease_and_the_next_generation(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = approved(s, "alpha", "claim me", mins(-1)).await;
    let req = PostClaim {
        worker: "host-1-abc".into(),
        actor: "dispatcher:host-1-abc".into(),
        lease_until: mins(15),
        ..post_claim(&post, t0(), ROOMY)
    };
    let PostClaimed::Claimed { post: claimed, .. } = s.claim_post(&req).await.unwrap() else {
        panic!("the post is claimable");
    };
    assert_eq!(claimed.id, post.id);
    assert_eq!(claimed.status, PostStatus::Posting);
    assert_eq!(claimed.lease_owner.as_deref(), Some("host-1-abc"));
    assert_eq!(claimed.lease_expires_at, Some(mins(15)));
    assert_eq!(claimed.generation, post.generation + 1);
    assert_eq!(claimed.updated_at, t0());
    assert_eq!(s.get_post(post.id).await.unwrap(), *claimed);
    let event = events(s, post.id).await.pop().unwrap();
    assert_eq!(event.kind, "status");
    assert_eq!(
        (event.from, event.to),
        (Some(PostStatus::Approved), PostStatus::Posting)
    );
    assert_eq!(event.actor, "dispatcher:host-1-abc");
    assert_eq!(event.at, t0());

    // Released and claimed again: the generation moves on once more.
    let back = s
        .change_post(outcome(&claimed, PostStatus::Approved, mins(1)))
        .await
        .unwrap();
    assert_eq!(back.lease_owner, None);
    assert_eq!(back.generation, claimed.generation);
    let again = claim(s, &back, mins(2)).await;
    assert_eq!(again.generation, post.generation + 2);
}

/// Claiming a post that is not `approved` answers `Gone` with the post as it is, and
/// changes nothing; a missing post is `Gone` without one.
pub async fn a_post_that_is_not_approved_is_not_claimable(store: Arc<dyn Store>) {
    let s = store.as_ref();
    for status in [
        PostStatus::Draft,
        PostStatus::Posting,
        PostStatus::Posted,
        PostStatus::Failed,
        PostStatus::NeedsReview,
    ] {
        let post = in_status(s, status, "alpha").await;
        match s
            .claim_post(&claim_of(&post, mins(30), true))
            .await
            .unwrap()
        {
            PostClaimed::Gone(Some(found)) => assert_eq!(*found, post, "{status}"),
            other => panic!("a {status} post must not be claimed: {other:?}"),
        }
        assert_eq!(s.get_post(post.id).await.unwrap(), post);
    }
    let draft = draft(s, "alpha", "missing", t0()).await;
    let missing = Post {
        id: PostId(4242),
        ..draft
    };
    assert!(matches!(
        s.claim_post(&claim_of(&missing, t0(), true)).await,
        Ok(PostClaimed::Gone(None))
    ));
}

/// The next due time is the earliest of `max(scheduled_at, not_before)` among approved
/// posts on the channels (test posts only on test channels); `None` when nothing waits.
pub async fn next_due_at_is_the_earliest_time_a_post_may_be_claimed(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let alpha = [ch("alpha")];
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), None);
    draft(s, "alpha", "drafts wait for nobody", mins(1)).await;
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), None);

    let soon = approved(s, "alpha", "soon but deferred", mins(10)).await;
    approved(s, "alpha", "later", mins(20)).await;
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), Some(mins(10)));
    defer(s, &soon, mins(30), t0()).await;
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), Some(mins(20)));

    approved(s, "beta", "elsewhere", mins(5)).await;
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), Some(mins(20)));
    assert_eq!(
        s.next_due_at(&[ch("alpha"), ch("beta")], &[])
            .await
            .unwrap(),
        Some(mins(5))
    );
    assert_eq!(s.next_due_at(&[], &[]).await.unwrap(), None);

    let mut drill = new_post("alpha", "a drill", mins(2));
    drill.test = true;
    approve(s, &create(s, drill).await, t0()).await;
    assert_eq!(s.next_due_at(&alpha, &[]).await.unwrap(), Some(mins(20)));
    assert_eq!(s.next_due_at(&alpha, &alpha).await.unwrap(), Some(mins(2)));
}

/// Many claimers, each with its own handle (a stand-in for a process), racing over many
/// due posts: every post is claimed exactly once, each under generation 1.
pub async fn concurrent_claimers_claim_each_post_exactly_once(ledger: &Ledger) {
    const N_CLAIMERS: usize = 6;
    const N_POSTS: usize = 24;
    let s = ledger.store.as_ref();
    let mut posts = Vec::new();
    for idx in 0..N_POSTS {
        let channel = if idx % 2 == 0 { "alpha" } else { "beta" };
        posts.push(approved(s, channel, &format!("post {idx}"), mins(-(idx as i64))).await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for claimer in 0..N_CLAIMERS {
        let handle = ledger.backend.open().await;
        tasks.spawn(async move {
            let mut won = Vec::new();
            let worker = format!("worker-{claimer}");
            loop {
                let due = handle
                    .due_posts(&[ch("alpha"), ch("beta")], &[], t0(), 16)
                    .await
                    .expect("due posts");
                if due.is_empty() {
                    return won;
                }
                for post in due {
                    let req = PostClaim {
                        worker: worker.clone(),
                        actor: format!("dispatcher:{worker}"),
                        lease_until: mins(15),
                        ..post_claim(&post, t0(), ROOMY)
                    };
                    match handle.claim_post(&req).await.expect("claim") {
                        PostClaimed::Claimed { post, .. } => {
                            assert_eq!(post.lease_owner.as_deref(), Some(worker.as_str()));
                            won.push(post.id);
                        }
                        PostClaimed::Gone(_) => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
        });
    }
    let mut claims: BTreeMap<PostId, usize> = BTreeMap::new();
    while let Some(won) = tasks.join_next().await {
        for id in won.expect("claimer task") {
            *claims.entry(id).or_default() += 1;
        }
    }
    assert_eq!(claims.len(), N_POSTS, "every post is claimed: {claims:?}");
    assert!(
        claims.values().all(|n| *n == 1),
        "a post was claimed twice: {claims:?}"
    );
    for post in posts {
        let now = s.get_post(post.id).await.unwrap();
        assert_eq!(now.status, PostStatus::Posting);
        assert_eq!(now.generation, 1);
        let claims_recorded = events(s, post.id)
            .await
            .iter()
            .filter(|e| e.to == PostStatus::Posting)
            .count();
        assert_eq!(claims_recorded, 1);
    }
    assert_eq!(
        claimed_id(claim_due(s, &["alpha", "beta"], &[], t0() + Duration::hours(1)).await),
        None
    );
}

/// A claim of one post as read: with quota under [`rules`] `(window, daily)` and, with
/// `intent`, the intent in the same transaction.
fn full_claim(
    read: &Post,
    now: DateTime<Utc>,
    quota: Option<(u32, u32)>,
    intent: bool,
) -> PostClaim {
    PostClaim {
        intent: intent.then(|| IntentClaim {
            part: 1,
            idempotency_key: format!("airlock-{}", read.id),
            lease_margin: Duration::seconds(30),
        }),
        ..post_claim(read, now, quota)
    }
}

/// One transaction claims the post as read, reserves its quota and records its intent:
/// the post is `posting` under generation 1, the reservation is live and marked sent, the
/// intent is `sending`.
pub async fn claim_post_claims_reserves_and_records_the_intent_at_once(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let read = approved(s, "alpha", "hello", mins(-1)).await;
    let PostClaimed::Claimed { post, intent } = s
        .claim_post(&full_claim(&read, t0(), Some((10, 10)), true))
        .await
        .unwrap()
    else {
        panic!("the post should be claimed")
    };
    assert_eq!(post.status, PostStatus::Posting);
    assert_eq!(post.generation, 1);
    assert_eq!(post.lease_owner.as_deref(), Some(WORKER));
    assert_eq!(post.lease_expires_at, Some(mins(LEASE_MINUTES)));
    let intent = intent.expect("the intent");
    assert_eq!(intent.generation, 1);
    assert_eq!(intent.phase, "sending");
    let detail = s.post_detail(read.id).await.unwrap();
    assert_eq!(detail.intents.len(), 1);
    assert_eq!(detail.reservations.len(), 1);
    assert_eq!(detail.reservations[0].state, "reserved");
    assert_eq!(detail.reservations[0].generation, 1);
    assert!(detail.reservations[0].sent_at.is_some());
    let claims = detail
        .events
        .iter()
        .filter(|e| e.to == PostStatus::Posting)
        .count();
    assert_eq!(claims, 1);

    // A test post (which never counts) without quota or intent: only the claim.
    let mut bare = new_post("alpha", "bare", mins(-1));
    bare.test = true;
    let read = approve(s, &create(s, bare).await, mins(-2)).await;
    let PostClaimed::Claimed { intent, .. } = s
        .claim_post(&full_claim(&read, t0(), None, false))
        .await
        .unwrap()
    else {
        panic!("the post should be claimed")
    };
    assert_eq!(intent, None);
    let detail = s.post_detail(read.id).await.unwrap();
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());
}

/// A claim made on what was read refuses a post that changed since, or that is not
/// claimable, and writes nothing.
pub async fn claim_post_refuses_a_post_changed_since_it_was_read(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let read = approved(s, "alpha", "hello", mins(-1)).await;
    let changed = defer(s, &read, mins(-2), mins(-1)).await;
    match s
        .claim_post(&full_claim(&read, t0(), Some((10, 10)), true))
        .await
    {
        Ok(PostClaimed::Gone(Some(now))) => assert_eq!(now.version, changed.version),
        other => panic!("a changed post is gone: {other:?}"),
    }
    let detail = s.post_detail(read.id).await.unwrap();
    assert_eq!(detail.post, changed);
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());

    let draft = draft(s, "alpha", "not approved", mins(-1)).await;
    assert!(matches!(
        s.claim_post(&full_claim(&draft, t0(), None, false)).await,
        Ok(PostClaimed::Gone(Some(_)))
    ));
    let mut new = new_post("alpha", "a test post", mins(-1));
    new.test = true;
    let test = approve(s, &create(s, new).await, mins(-1)).await;
    let mut claim = full_claim(&test, t0(), None, false);
    claim.allow_test = false;
    assert!(matches!(
        s.claim_post(&claim).await,
        Ok(PostClaimed::Gone(Some(_)))
    ));
    let missing = Post {
        id: PostId(999_999),
        ..test.clone()
    };
    assert!(matches!(
        s.claim_post(&full_claim(&missing, t0(), None, false)).await,
        Ok(PostClaimed::Gone(None))
    ));
    // Counted hours are read with the post: with some there, a missing post is still
    // gone, not an hour's row read as a post.
    let counted = approved(s, "alpha", "counted", mins(-1)).await;
    assert!(matches!(
        s.claim_post(&full_claim(&counted, t0(), Some((10, 10)), false))
            .await,
        Ok(PostClaimed::Claimed { .. })
    ));
    assert!(matches!(
        s.claim_post(&full_claim(&missing, t0(), Some((10, 10)), false))
            .await,
        Ok(PostClaimed::Gone(None))
    ));
}

/// A paused channel (or everything paused) holds the post: nothing is written.
pub async fn claim_post_holds_a_paused_post_and_writes_nothing(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let read = approved(s, "alpha", "hello", mins(-1)).await;
    for (scope, expected) in [
        (PauseScope::Channel(ch("alpha")), "alpha"),
        (PauseScope::All, "*"),
    ] {
        assert!(
            s.pause(&scope, "holiday", "cli", t0(), Vec::new())
                .await
                .unwrap()
        );
        match s
            .claim_post(&full_claim(&read, t0(), Some((10, 10)), true))
            .await
        {
            Ok(PostClaimed::Paused { scope, reason }) => {
                assert_eq!(scope, expected);
                assert_eq!(reason, "holiday");
            }
            other => panic!("a paused post is held: {other:?}"),
        }
        assert_eq!(s.get_post(read.id).await.unwrap(), read);
        assert!(s.resume(&scope, "cli", t0(), Vec::new()).await.unwrap());
    }
    let detail = s.post_detail(read.id).await.unwrap();
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());
}

/// Over quota, the claim answers the denial and when a slot frees, and writes nothing.
pub async fn claim_post_over_quota_answers_the_next_slot_and_writes_nothing(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = approved(s, "alpha", "first", mins(-2)).await;
    assert!(matches!(
        s.claim_post(&full_claim(&first, t0(), Some((1, 10)), true))
            .await,
        Ok(PostClaimed::Claimed { .. })
    ));
    let second = approved(s, "beta", "second", mins(-1)).await;
    match s
        .claim_post(&full_claim(&second, mins(1), Some((1, 10)), true))
        .await
    {
        Ok(PostClaimed::OverQuota(denial)) => {
            assert_eq!(denial.limit, airlock_core::quota::Limit::Window);
            assert_eq!((denial.used, denial.max), (1, 1));
            assert_eq!(denial.next_free_at, mins(60));
        }
        other => panic!("over the window: {other:?}"),
    }
    assert_eq!(s.get_post(second.id).await.unwrap(), second);
    let detail = s.post_detail(second.id).await.unwrap();
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());
}

/// An intent the lease could not cover is refused, and the whole claim with it.
pub async fn claim_post_with_an_intent_the_lease_cannot_cover_writes_nothing(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let read = approved(s, "alpha", "hello", mins(-1)).await;
    let mut claim = full_claim(&read, t0(), Some((10, 10)), true);
    claim.intent.as_mut().unwrap().lease_margin = Duration::minutes(LEASE_MINUTES);
    assert!(matches!(
        s.claim_post(&claim).await,
        Err(StoreError::Fenced { .. })
    ));
    assert_eq!(s.get_post(read.id).await.unwrap(), read);
    let detail = s.post_detail(read.id).await.unwrap();
    assert!(detail.intents.is_empty() && detail.reservations.is_empty());
}

/// Due posts are listed most overdue first (by the time each became due: a deferred
/// post at its `not_before`), within the listed channels, test posts only on test
/// channels, not before `not_before`, at most `limit`.
pub async fn due_posts_lists_what_may_be_claimed_most_overdue_first(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let recent = approved(s, "alpha", "recent", mins(-10)).await;
    let oldest = approved(s, "alpha", "oldest", mins(-30)).await;
    approved(s, "alpha", "future", mins(10)).await;
    approved(s, "gamma", "elsewhere", mins(-40)).await;
    draft(s, "alpha", "a draft", mins(-50)).await;
    let waiting = approved(s, "alpha", "waiting", mins(-20)).await;
    defer(s, &waiting, mins(5), mins(-1)).await;
    let ids = |posts: Vec<Post>| posts.into_iter().map(|p| p.id).collect::<Vec<_>>();
    let channels = [ch("alpha"), ch("beta")];
    assert_eq!(
        ids(s.due_posts(&channels, &[], t0(), 16).await.unwrap()),
        [oldest.id, recent.id]
    );
    assert_eq!(
        ids(s.due_posts(&channels, &[], t0(), 1).await.unwrap()),
        [oldest.id]
    );
    assert_eq!(
        ids(s.due_posts(&channels, &[], mins(5), 16).await.unwrap()),
        [oldest.id, recent.id, waiting.id]
    );
    assert!(s.due_posts(&[], &[], t0(), 16).await.unwrap().is_empty());
}

/// Read-backs are recorded several at a time: a verified post gets `verified_at` (and the
/// permalink it lacked), a failed one an event and its notifications; a post that is no
/// longer `posted` is left alone.
pub async fn record_verifications_records_read_backs_of_posted_posts(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let verified = in_status(s, PostStatus::Posted, "alpha").await;
    let failed = in_status(s, PostStatus::Posted, "beta").await;
    let draft = draft(s, "alpha", "a draft", mins(-1)).await;
    let note = NewNotification {
        sink: "ops".into(),
        event: "verify_failed".into(),
        post_id: Some(failed.id),
        payload: serde_json::json!({"reason": "gone"}),
    };
    let record = |id, result| VerificationRecord {
        id,
        actor: DISPATCHER.into(),
        at: mins(30),
        result,
        notify: Vec::new(),
    };
    let mut failing = record(failed.id, Err("not found on the platform".into()));
    failing.notify = vec![note];
    s.record_verifications(&[
        record(verified.id, Ok(Some("https://example.com/p/1".into()))),
        failing,
        record(draft.id, Ok(None)),
    ])
    .await
    .unwrap();
    let now = s.get_post(verified.id).await.unwrap();
    assert_eq!(now.verified_at, Some(mins(30)));
    assert_eq!(
        now.permalink.as_deref(),
        verified
            .permalink
            .as_deref()
            .or(Some("https://example.com/p/1"))
    );
    assert!(
        events(s, verified.id)
            .await
            .iter()
            .any(|e| e.kind == "verified")
    );
    let now = s.get_post(failed.id).await.unwrap();
    assert_eq!(now.verified_at, None);
    assert!(events(s, failed.id).await.iter().any(
        |e| e.kind == "verify_failed" && e.note.as_deref() == Some("not found on the platform")
    ));
    assert_eq!(s.outbox_stats().await.unwrap().pending, 1);
    assert_eq!(s.get_post(draft.id).await.unwrap(), draft);
    assert!(
        !events(s, draft.id)
            .await
            .iter()
            .any(|e| e.kind == "verified")
    );
}

/// Claimers on separate handles racing for one post as each read it: exactly one wins.
pub async fn concurrent_claim_posts_of_one_post_claim_it_once(ledger: &Ledger) {
    const N_CLAIMERS: usize = 6;
    let s = ledger.store.as_ref();
    let read = approved(s, "alpha", "contested", mins(-1)).await;
    let mut tasks = tokio::task::JoinSet::new();
    for claimer in 0..N_CLAIMERS {
        let handle = ledger.backend.open().await;
        let mut claim = full_claim(&read, t0(), Some((10, 10)), true);
        claim.worker = format!("worker-{claimer}");
        tasks.spawn(async move { handle.claim_post(&claim).await.expect("claim_post") });
    }
    let mut won = 0;
    while let Some(result) = tasks.join_next().await {
        match result.expect("claimer task") {
            PostClaimed::Claimed { .. } => won += 1,
            PostClaimed::Gone(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(won, 1);
    let detail = s.post_detail(read.id).await.unwrap();
    assert_eq!(detail.post.generation, 1);
    assert_eq!(detail.intents.len(), 1);
    assert_eq!(detail.reservations.len(), 1);
}

/// Any number of channels is looked at, many more than a compound query may name.
pub async fn due_posts_and_next_due_at_take_any_number_of_channels(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let channels: Vec<_> = (0..600).map(|n| ch(&format!("c{n:03}"))).collect();
    let last = approved(s, "c599", "last channel", mins(-10)).await;
    let first = approved(s, "c000", "first channel", mins(-5)).await;
    approved(s, "c300", "later", mins(30)).await;
    let ids = |posts: Vec<Post>| posts.into_iter().map(|p| p.id).collect::<Vec<_>>();
    assert_eq!(
        ids(s.due_posts(&channels, &[], t0(), 4).await.unwrap()),
        [last.id, first.id]
    );
    assert_eq!(
        s.next_due_at(&channels[250..], &[]).await.unwrap(),
        Some(mins(-10))
    );
    assert_eq!(
        s.next_due_at(&channels[1..599], &[]).await.unwrap(),
        Some(mins(30))
    );
}
