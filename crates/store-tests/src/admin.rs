//! Cases for everything around posts: pauses (set alone or with a change, after a number
//! of consecutive failures), the transactional outbox, API tokens, counts, ledger
//! invariants, and the wake-up hint.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Duration;

use airlock_core::{PostStatus, Role, RoleSet};
use airlock_store::{Change, NewToken, PauseScope, PauseSpec, PostChange, Store, StoreError};

use crate::Ledger;
use crate::fixture::*;
use crate::posts::notification;

fn channel_scope(name: &str) -> PauseScope {
    PauseScope::Channel(ch(name))
}

/// Pausing a paused scope reports `false` and queues nothing; resuming lifts exactly
/// that scope; the global pause is its own scope.
pub async fn pausing_twice_keeps_the_first_pause_and_resume_lifts_it(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let alpha = channel_scope("alpha");
    assert!(
        s.pause(
            &alpha,
            "account mismatch",
            "cli",
            t0(),
            vec![notification("paused")]
        )
        .await
        .unwrap()
    );
    assert!(
        !s.pause(
            &alpha,
            "again",
            "token:ops",
            mins(1),
            vec![notification("paused")]
        )
        .await
        .unwrap()
    );
    assert!(
        s.pause(&PauseScope::All, "maintenance", "cli", mins(2), Vec::new())
            .await
            .unwrap()
    );
    let pauses = s.pauses().await.unwrap();
    assert_eq!(pauses.len(), 2, "{pauses:?}");
    let first = pauses.iter().find(|p| p.scope == "alpha").unwrap();
    assert_eq!(first.reason, "account mismatch");
    assert_eq!(first.actor, "cli");
    assert_eq!(first.at, t0());
    assert!(
        pauses
            .iter()
            .any(|p| p.scope == "*" && p.reason == "maintenance")
    );
    assert_eq!(s.outbox_stats().await.unwrap().pending, 1);

    assert!(
        s.resume(&alpha, "cli", mins(3), vec![notification("resumed")])
            .await
            .unwrap()
    );
    assert!(
        !s.resume(&alpha, "cli", mins(4), vec![notification("resumed")])
            .await
            .unwrap()
    );
    assert!(
        !s.resume(&channel_scope("beta"), "cli", mins(4), Vec::new())
            .await
            .unwrap()
    );
    let pauses = s.pauses().await.unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].scope, "*");
    assert_eq!(s.outbox_stats().await.unwrap().pending, 2);

    // A lifted pause can be set again.
    assert!(
        s.pause(&alpha, "again", "cli", mins(5), Vec::new())
            .await
            .unwrap()
    );
    assert!(
        s.resume(&PauseScope::All, "cli", mins(6), Vec::new())
            .await
            .unwrap()
    );
    let pauses = s.pauses().await.unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].reason, "again");
}

/// A definite failure of a claimed post, counted for the channel, with a pause that waits
/// for `after` consecutive failures.
async fn fail(store: &dyn Store, channel: &str, after: Option<u32>, at: i64) {
    let post = claimed(store, channel, &format!("fails at {at}"), mins(at)).await;
    let change = pausing(
        outcome(&post, PostStatus::Failed, mins(at)),
        PauseSpec {
            scope: channel_scope(channel),
            reason: "too many failures".into(),
            after_failures: after,
            notify: vec![notification("paused")],
        },
    );
    store.change_post(change).await.unwrap();
}

async fn succeed(store: &dyn Store, channel: &str, at: i64) {
    let post = claimed(store, channel, &format!("succeeds at {at}"), mins(at)).await;
    store
        .change_post(outcome(&post, PostStatus::Posted, mins(at)))
        .await
        .unwrap();
}

fn paused(pauses: &[airlock_store::Pause], scope: &str) -> bool {
    pauses.iter().any(|p| p.scope == scope)
}

/// A pause with `after_failures` is set only when the channel's consecutive definite
/// failures reach that many; a success starts the count again; counts are per channel.
pub async fn a_pause_after_failures_waits_for_consecutive_failures(store: Arc<dyn Store>) {
    let s = store.as_ref();
    fail(s, "alpha", Some(2), 1).await;
    fail(s, "beta", Some(2), 2).await;
    assert!(s.pauses().await.unwrap().is_empty());
    assert_eq!(s.outbox_stats().await.unwrap().pending, 0);
    fail(s, "alpha", Some(2), 3).await;
    let pauses = s.pauses().await.unwrap();
    assert!(paused(&pauses, "alpha"));
    assert!(!paused(&pauses, "beta"));
    let pause = pauses.iter().find(|p| p.scope == "alpha").unwrap();
    assert_eq!(pause.reason, "too many failures");
    assert_eq!(pause.actor, DISPATCHER);
    assert_eq!(pause.at, mins(3));
    assert_eq!(s.outbox_stats().await.unwrap().pending, 1);

    succeed(s, "beta", 4).await;
    fail(s, "beta", Some(2), 5).await;
    assert!(!paused(&s.pauses().await.unwrap(), "beta"));
    fail(s, "beta", Some(2), 6).await;
    assert!(paused(&s.pauses().await.unwrap(), "beta"));
}

/// Resuming a channel starts its failure count again.
pub async fn resume_resets_the_failure_count(store: Arc<dyn Store>) {
    let s = store.as_ref();
    fail(s, "alpha", Some(3), 1).await;
    fail(s, "alpha", Some(3), 2).await;
    assert!(
        s.pause(
            &channel_scope("alpha"),
            "by hand",
            "cli",
            mins(3),
            Vec::new()
        )
        .await
        .unwrap()
    );
    assert!(
        s.resume(&channel_scope("alpha"), "cli", mins(4), Vec::new())
            .await
            .unwrap()
    );
    fail(s, "alpha", Some(3), 5).await;
    assert!(
        s.pauses().await.unwrap().is_empty(),
        "the count restarted at the resume"
    );
    fail(s, "alpha", Some(3), 6).await;
    fail(s, "alpha", Some(3), 7).await;
    assert!(paused(&s.pauses().await.unwrap(), "alpha"));
}

/// A pause without a failure threshold is set in the same transaction as the change, by
/// its actor, with its notifications; an existing pause is kept and notifies nobody.
pub async fn a_pause_with_a_change_is_set_in_its_transaction(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = claimed(s, "alpha", "unknown", t0()).await;
    // Claimed before the pause: a paused channel's posts are not claimed.
    let other = claimed(s, "alpha", "unknown too", t0()).await;
    let change = pausing(
        outcome(&post, PostStatus::NeedsReview, mins(1)),
        PauseSpec {
            scope: channel_scope("alpha"),
            reason: "post has an unknown outcome".into(),
            after_failures: None,
            notify: vec![notification("paused")],
        },
    );
    s.change_post(change.notifying(vec![notification("needs_review")]))
        .await
        .unwrap();
    let pauses = s.pauses().await.unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].scope, "alpha");
    assert_eq!(pauses[0].reason, "post has an unknown outcome");
    assert_eq!(pauses[0].actor, DISPATCHER);
    assert_eq!(s.outbox_stats().await.unwrap().pending, 2);

    let change = pausing(
        outcome(&other, PostStatus::NeedsReview, mins(3)),
        PauseSpec {
            scope: channel_scope("alpha"),
            reason: "second".into(),
            after_failures: None,
            notify: vec![notification("paused")],
        },
    );
    s.change_post(change).await.unwrap();
    let pauses = s.pauses().await.unwrap();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].reason, "post has an unknown outcome");
    assert_eq!(s.outbox_stats().await.unwrap().pending, 2);
}

/// A notification is queued with the change that reports it, and is claimed with its
/// sink, event, post and payload; a refused change queues nothing.
pub async fn notifications_are_queued_with_their_change(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = claimed(s, "alpha", "published", t0()).await;
    let mut published = notification("published");
    published.post_id = Some(post.id);
    published.payload = serde_json::json!({"message": "post published", "n": [1, 2]});
    let change = outcome(&post, PostStatus::Posted, mins(1)).notifying(vec![published.clone()]);
    s.change_post(change).await.unwrap();

    let refused =
        outcome(&post, PostStatus::Failed, mins(2)).notifying(vec![notification("failed")]);
    assert!(matches!(
        s.change_post(refused).await,
        Err(StoreError::Fenced { .. })
    ));

    assert_eq!(s.outbox_stats().await.unwrap().pending, 1);
    let claimed = s
        .claim_notifications(mins(1), "deliverer-1", mins(2), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let note = &claimed[0];
    assert_eq!(note.sink, published.sink);
    assert_eq!(note.event, "published");
    assert_eq!(note.post_id, Some(post.id));
    assert_eq!(note.payload, published.payload);
    assert_eq!(note.attempts, 0);
    assert_eq!(note.created_at, mins(1));
}

async fn queue(store: &dyn Store, n: usize) {
    for idx in 0..n {
        store
            .pause(
                &channel_scope(&format!("c{idx}")),
                "queue a notification",
                "cli",
                t0(),
                vec![notification(&format!("paused-{idx}"))],
            )
            .await
            .unwrap();
    }
}

/// Claiming leases notifications in id order: a leased row is not handed out again until
/// its lease ends.
pub async fn claimed_notifications_are_leased(store: Arc<dyn Store>) {
    let s = store.as_ref();
    queue(s, 5).await;
    let first = s.claim_notifications(t0(), "a", mins(5), 3).await.unwrap();
    assert_eq!(first.len(), 3);
    assert!(first.windows(2).all(|w| w[0].id < w[1].id));
    let second = s.claim_notifications(t0(), "b", mins(5), 10).await.unwrap();
    assert_eq!(second.len(), 2);
    assert!(first.iter().all(|n| second.iter().all(|m| m.id != n.id)));
    assert!(
        s.claim_notifications(mins(1), "c", mins(6), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let again = s
        .claim_notifications(mins(6), "c", mins(10), 10)
        .await
        .unwrap();
    assert_eq!(again.len(), 5, "leases ended at 5");
}

/// A deliverer whose lease passed to another cannot complete the notification: the
/// other one's delivery is what counts.
pub async fn notification_completion_is_fenced_by_the_deliverers_lease(store: Arc<dyn Store>) {
    let s = store.as_ref();
    queue(s, 1).await;
    let first = s.claim_notifications(t0(), "a", mins(1), 10).await.unwrap();
    let id = first[0].id;
    let second = s
        .claim_notifications(mins(2), "b", mins(3), 10)
        .await
        .unwrap();
    assert_eq!(second[0].id, id, "the lease ended and b took the row");
    assert!(!s.notification_delivered(id, "a", mins(2)).await.unwrap());
    assert!(
        !s.notification_failed(id, "a", "late", None, mins(2))
            .await
            .unwrap()
    );
    assert_eq!(s.outbox_stats().await.unwrap().pending, 1);
    assert!(s.notification_delivered(id, "b", mins(2)).await.unwrap());
    assert!(
        !s.notification_delivered(id, "b", mins(2)).await.unwrap(),
        "once"
    );
    assert_eq!(s.outbox_stats().await.unwrap().delivered, 1);
}

/// A fresh ledger is opened with commits that survive a crash.
pub async fn a_fresh_ledger_has_durable_commits(store: Arc<dyn Store>) {
    assert_eq!(
        store.durability_warnings().await.unwrap(),
        Vec::<String>::new()
    );
}

/// Delivered notifications are done; a failed one waits for its retry time with one more
/// attempt; one given up (`None`) is abandoned; the counts say so.
pub async fn delivery_outcomes_are_recorded_and_counted(store: Arc<dyn Store>) {
    let s = store.as_ref();
    queue(s, 3).await;
    let claimed = s.claim_notifications(t0(), "d", mins(1), 10).await.unwrap();
    let (delivered, retried, abandoned) = (claimed[0].id, claimed[1].id, claimed[2].id);
    assert!(
        s.notification_delivered(delivered, "d", mins(1))
            .await
            .unwrap()
    );
    assert!(
        s.notification_failed(retried, "d", "502 from the sink", Some(mins(10)), mins(1))
            .await
            .unwrap()
    );
    assert!(
        s.notification_failed(abandoned, "d", "410 gone", None, mins(1))
            .await
            .unwrap()
    );
    let stats = s.outbox_stats().await.unwrap();
    assert_eq!(
        (stats.pending, stats.abandoned, stats.delivered),
        (1, 1, 1),
        "{stats:?}"
    );
    assert!(stats.oldest_pending_at.is_some(), "{stats:?}");
    assert!(
        s.claim_notifications(mins(9), "d", mins(20), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let retry = s
        .claim_notifications(mins(10), "d", mins(20), 10)
        .await
        .unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].id, retried);
    assert_eq!(retry[0].attempts, 1);
    assert!(
        s.claim_notifications(mins(60), "d", mins(70), 10)
            .await
            .unwrap()
            .len()
            == 1
    );
}

/// Deliverers with their own handles claiming at once never get the same notification.
pub async fn concurrent_deliverers_never_share_a_notification(ledger: &Ledger) {
    const N_NOTES: usize = 30;
    const N_DELIVERERS: usize = 5;
    queue(ledger.store.as_ref(), N_NOTES).await;
    let mut tasks = tokio::task::JoinSet::new();
    for idx in 0..N_DELIVERERS {
        let handle = ledger.backend.open().await;
        tasks.spawn(async move {
            let mut got = Vec::new();
            loop {
                let batch = handle
                    .claim_notifications(mins(1), &format!("d{idx}"), mins(30), 2)
                    .await
                    .expect("claim notifications");
                if batch.is_empty() {
                    return got;
                }
                got.extend(batch.into_iter().map(|n| n.id));
            }
        });
    }
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    while let Some(got) = tasks.join_next().await {
        for id in got.expect("deliverer task") {
            *seen.entry(id).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), N_NOTES);
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
}

/// Revokes that keep an operator: the last active operator token stays, decided in the
/// revoking transaction, so two operators revoking each other at once leave one.
pub async fn the_last_operator_token_is_kept_when_asked(store: Arc<dyn Store>) {
    let token = |name: &str, roles: &[Role], secret: &str| NewToken {
        name: name.into(),
        roles: RoleSet::of(roles),
        secret_sha256: secret.repeat(64),
        now: t0(),
    };
    let s = store.as_ref();
    s.create_token(token("a", &[Role::Operator], "a"))
        .await
        .unwrap();
    s.create_token(token("b", &[Role::Writer, Role::Operator], "b"))
        .await
        .unwrap();
    s.create_token(token("w", &[Role::Writer], "c"))
        .await
        .unwrap();
    // Each revokes the other at once: one wins, the other is refused.
    let (first, second) = tokio::join!(
        store.revoke_token("a", mins(1), true),
        store.revoke_token("b", mins(1), true)
    );
    let results = [first, second];
    let revoked = results.iter().filter(|r| matches!(r, Ok(true))).count();
    let kept = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::LastOperator(_))))
        .count();
    assert_eq!((revoked, kept), (1, 1), "{results:?}");
    // A writer goes whatever; the last operator goes only when not kept.
    assert!(s.revoke_token("w", mins(2), true).await.unwrap());
    let last = s
        .tokens()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.revoked_at.is_none())
        .expect("one operator left");
    assert!(s.revoke_token(&last.name, mins(3), false).await.unwrap());
}

/// Tokens: a taken name is `Duplicate`; the secret hash authenticates the active token and
/// notes its use; a revoked one no longer authenticates but stays listed.
pub async fn tokens_authenticate_by_hash_until_revoked(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let roles = RoleSet::of(&[Role::Writer, Role::Critic]);
    let token = |name: &str, secret: &str| NewToken {
        name: name.into(),
        roles: roles.clone(),
        secret_sha256: secret.repeat(64),
        now: t0(),
    };
    s.create_token(token("agent", "a")).await.unwrap();
    s.create_token(token("ops", "b")).await.unwrap();
    assert!(matches!(
        s.create_token(token("agent", "c")).await,
        Err(StoreError::Duplicate(_))
    ));

    let found = s
        .authenticate(&"a".repeat(64), mins(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.name, "agent");
    assert_eq!(found.roles, roles);
    assert_eq!(found.created_at, t0());
    assert_eq!(found.revoked_at, None);
    assert!(
        s.authenticate(&"f".repeat(64), mins(1))
            .await
            .unwrap()
            .is_none()
    );

    let listed = s.tokens().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["agent", "ops"]);
    assert_eq!(listed[0].last_used_at, Some(mins(1)));
    assert_eq!(listed[1].last_used_at, None);

    assert!(s.revoke_token("agent", mins(2), false).await.unwrap());
    assert!(!s.revoke_token("agent", mins(3), false).await.unwrap());
    assert!(!s.revoke_token("nobody", mins(3), false).await.unwrap());
    assert!(
        s.authenticate(&"a".repeat(64), mins(4))
            .await
            .unwrap()
            .is_none()
    );
    let revoked = s.tokens().await.unwrap();
    assert_eq!(revoked[0].revoked_at, Some(mins(2)));
    assert_eq!(revoked.len(), 2);
}

/// Counts per status cover every post, and only states that have posts.
pub async fn status_counts_count_posts_per_status(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert!(s.status_counts().await.unwrap().is_empty());
    in_status(s, PostStatus::Draft, "alpha").await;
    in_status(s, PostStatus::Draft, "beta").await;
    in_status(s, PostStatus::Approved, "alpha").await;
    in_status(s, PostStatus::Posted, "alpha").await;
    in_status(s, PostStatus::NeedsReview, "alpha").await;
    let counts: BTreeMap<PostStatus, i64> = s.status_counts().await.unwrap().into_iter().collect();
    let expected: BTreeMap<PostStatus, i64> = [
        (PostStatus::Draft, 2),
        (PostStatus::Approved, 1),
        (PostStatus::Posted, 1),
        (PostStatus::NeedsReview, 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, expected);
}

/// A ledger that went through every normal path reports no broken invariant.
pub async fn a_healthy_ledger_breaks_no_invariant(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert!(s.check_invariants(t0()).await.unwrap().is_empty());
    draft(s, "alpha", "draft", t0()).await;
    approved(s, "alpha", "approved", mins(60)).await;

    let posted = approved(s, "alpha", "posted", t0()).await;
    publish(s, &posted, mins(1), 10, 10).await;

    let failed = reserved(s, "alpha", "failed", mins(2)).await;
    intent(s, &failed, mins(2)).await;
    s.change_post(outcome(&failed, PostStatus::Failed, mins(3)))
        .await
        .unwrap();

    let unknown = reserved(s, "beta", "unknown", mins(4)).await;
    intent(s, &unknown, mins(4)).await;
    s.change_post(outcome(&unknown, PostStatus::NeedsReview, mins(5)))
        .await
        .unwrap();

    let retried = reserved(s, "beta", "retried", mins(6)).await;
    let change = Change::NotSent {
        generation: retried.generation,
        reason: "not sent".into(),
        note: "not sent (attempt 1)".into(),
        not_before: mins(8),
        counts_attempt: true,
        counts_wait: false,
        settles_intent: false,
    };
    s.change_post(PostChange::new(retried.id, DISPATCHER, mins(7), change))
        .await
        .unwrap();

    let in_flight = reserved(s, "beta", "in flight", mins(9)).await;
    intent(s, &in_flight, mins(9)).await;

    let problems = s.check_invariants(mins(10)).await.unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let statuses: BTreeSet<PostStatus> = s
        .status_counts()
        .await
        .unwrap()
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    assert_eq!(
        statuses.len(),
        6,
        "every state is represented: {statuses:?}"
    );
}

/// Waiting for due work returns by its timeout when nothing happens (a hint, never the record).
pub async fn wait_for_due_returns_by_its_timeout(store: Arc<dyn Store>) {
    let seen = store.due_signals().await;
    store
        .wait_for_due(seen, Duration::milliseconds(20).to_std().unwrap())
        .await;
}

/// A pause a post's unknown outcome set yields to a later one, and lifting it "as its
/// own" does nothing once taken over.
pub async fn a_later_pause_takes_over_an_unknown_outcomes_pause(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let own = format!("post 7{}timed out)", airlock_store::UNKNOWN_PAUSE_MARK);
    let scope = channel_scope("alpha");
    assert!(
        s.pause(&scope, &own, "dispatcher:w", mins(1), Vec::new())
            .await
            .unwrap()
    );
    // An operator's pause takes it over; the post's proof no longer lifts it.
    assert!(
        s.pause(&scope, "maintenance", "cli", mins(2), Vec::new())
            .await
            .unwrap()
    );
    let prefix = format!("post 7{}", airlock_store::UNKNOWN_PAUSE_MARK);
    assert!(
        !s.resume_own(&scope, &prefix, "reconciler", mins(3), Vec::new())
            .await
            .unwrap()
    );
    assert_eq!(s.pauses().await.unwrap()[0].reason, "maintenance");
    // An unknown outcome's pause never takes over an operator's.
    assert!(
        !s.pause(&scope, &own, "dispatcher:w", mins(4), Vec::new())
            .await
            .unwrap()
    );
    assert_eq!(s.pauses().await.unwrap()[0].actor, "cli");
    s.resume(&scope, "cli", mins(5), Vec::new()).await.unwrap();
    // Untouched, the post's own pause is lifted by its proof.
    assert!(
        s.pause(&scope, &own, "dispatcher:w", mins(6), Vec::new())
            .await
            .unwrap()
    );
    assert!(
        s.resume_own(&scope, &prefix, "reconciler", mins(7), Vec::new())
            .await
            .unwrap()
    );
    assert!(s.pauses().await.unwrap().is_empty());
}
