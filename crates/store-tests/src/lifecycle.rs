//! Cases for the lifecycle of docs/lifecycle.md as the store enforces it: every named
//! change from every state against `airlock_core::status::is_legal`, one event per status
//! change, fencing by generation, intents, expired leases and the review queue.
//!
//! Hand-written SQL against the triggers is backend-specific and lives in each backend's
//! own tests, not here.

use std::sync::Arc;

use chrono::Duration;

use airlock_core::status::is_legal;
use airlock_core::{Post, PostId, PostStatus};
use airlock_store::{Change, PauseScope, PauseSpec, PostChange, Store, StoreError, VerdictEffect};

use crate::fixture::*;
use crate::posts::notification;

/// Every named change that moves a status, from every state: one by the worker applies
/// only to a `posting` post of its generation (any other is fenced); one by a person or
/// agent applies only from the statuses it starts from (`Change::starts_from`), where the
/// lifecycle allows its move, and appends exactly one `status` event with the writer's
/// actor, note and time; from any other state it is `IllegalTransition` naming both
/// states and changes nothing (settling a post that is `posting` would release the
/// reservation of a send under way); staying where it is appends no status event.
pub async fn every_named_change_follows_the_lifecycle(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let person: [fn(&Post) -> Change; 8] = [
        |p| {
            let mut changed = p.content.clone();
            changed.text = format!("{} (edited)", changed.text);
            let hash = changed.hash();
            Change::Edited {
                version: p.version,
                content: Some((changed, hash)),
                scheduled_at: None,
                fields: "text".into(),
                duplicate_window: None,
            }
        },
        |p| Change::Edited {
            version: p.version,
            content: None,
            scheduled_at: Some(mins(40)),
            fields: "scheduled_at".into(),
            duplicate_window: None,
        },
        |p| Change::Withdrawn {
            version: p.version,
            note: "withdrawn".into(),
            error: None,
        },
        |p| Change::Requeued { version: p.version },
        |p| Change::SettledPublished {
            part: 1,
            version: p.version,
            posted_at: mins(30),
            platform_post_id: None,
            permalink: None,
            note: "confirmed".into(),
        },
        |p| Change::SettledNotPublished {
            version: p.version,
            error: "not published".into(),
            note: "confirmed not".into(),
        },
        |p| Change::CannotLand {
            version: p.version,
            note: "expired".into(),
        },
        |p| Change::Verdict {
            version: p.version,
            verdict: verdict_on(p, airlock_core::VerdictKind::Fail),
            effect: VerdictEffect::Revise {
                counts: false,
                quarantine: false,
                error: "revise".into(),
                note: "revise".into(),
            },
        },
    ];
    for from in PostStatus::ALL {
        for make in person {
            let post = in_status(s, from, "threads-main").await;
            let before = events(s, post.id).await;
            let change = PostChange::new(post.id, "cli", mins(30), make(&post));
            let name = change.change.name();
            let to = change
                .change
                .effects("cli", mins(30))
                .to
                .expect("a change that moves a status");
            let starts_here = change.change.starts_from().contains(&from);
            let res = s.change_post(change).await;
            let after = events(s, post.id).await;
            if starts_here && from == to {
                // No move: the lifecycle has nothing to say (other rules may refuse, such
                // as a publish time that is set once), and no status event is written.
                if let Ok(stayed) = res {
                    assert!(
                        after[before.len()..].iter().all(|e| e.kind != "status"),
                        "{name} from {from}: {after:?}"
                    );
                    assert_eq!(
                        s.get_post(post.id).await.unwrap(),
                        stayed,
                        "{name} from {from}"
                    );
                }
                continue;
            }
            if starts_here && is_legal(from, to) {
                let moved = res.unwrap_or_else(|e| panic!("{name} from {from}: {e}"));
                assert_eq!(moved.status, to, "{name} from {from}");
                // The answer is the post as stored, whatever the triggers wrote after.
                assert_eq!(
                    s.get_post(post.id).await.unwrap(),
                    moved,
                    "{name} from {from}"
                );
                let status_events: Vec<_> = after[before.len()..]
                    .iter()
                    .filter(|e| e.kind == "status")
                    .collect();
                assert_eq!(status_events.len(), 1, "{name} from {from}: {after:?}");
                let event = status_events[0];
                assert_eq!(event.from, Some(from));
                assert_eq!(event.to, to);
                assert_eq!(event.actor, "cli");
                assert_eq!(event.at, mins(30));
                assert!(event.note.is_some());
                if to != PostStatus::Posting {
                    assert_eq!(moved.lease_owner, None, "{name} from {from} keeps a lease");
                    assert_eq!(moved.lease_expires_at, None);
                }
            } else {
                match res {
                    Err(StoreError::IllegalTransition {
                        id,
                        from: refused_from,
                        to: refused_to,
                    }) => {
                        assert_eq!(id, post.id);
                        assert_eq!((refused_from, refused_to), (from, to));
                    }
                    other => panic!("{name} from {from} is illegal, got {other:?}"),
                }
                assert_eq!(s.get_post(post.id).await.unwrap(), post, "{name}");
                assert_eq!(after, before, "{name} from {from}");
            }
        }
        // The worker's outcomes: only a `posting` post of its generation.
        for to in [
            PostStatus::Posted,
            PostStatus::Failed,
            PostStatus::NeedsReview,
            PostStatus::Approved,
        ] {
            let post = in_status(s, from, "threads-main").await;
            let res = s.change_post(outcome(&post, to, mins(30))).await;
            if from == PostStatus::Posting {
                let moved = res.unwrap();
                assert_eq!(moved.status, to, "{from} -> {to}");
                assert_eq!(s.get_post(post.id).await.unwrap(), moved, "{from} -> {to}");
            } else {
                assert!(
                    matches!(res, Err(StoreError::Fenced { .. })),
                    "{from} -> {to}: {res:?}"
                );
            }
        }
    }
}

/// An edit of an approved post withdraws the approval and its status event says what
/// changed; an edit of a draft appends an `edited` event. A new schedule also leaves the
/// store's own `changed` record with both times, whoever wrote it; an edit to the same
/// time changes nothing and records no change.
pub async fn an_edit_says_what_changed_once(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = approved(s, "threads-main", "Edited after approval", t0()).await;
    let edit = |post: &Post| {
        let change = Change::Edited {
            version: post.version,
            content: None,
            scheduled_at: Some(mins(60)),
            fields: "scheduled_at".into(),
            duplicate_window: None,
        };
        PostChange::new(post.id, WRITER, mins(3), change)
    };
    let edited = s.change_post(edit(&post)).await.unwrap();
    assert_eq!(edited.status, PostStatus::Draft);
    assert_eq!(edited.approved_hash, None);
    let timeline = events(s, post.id).await;
    assert_eq!(timeline.len(), 4, "{timeline:?}");
    assert_eq!(timeline[2].kind, "changed");
    assert_eq!(timeline[2].actor, WRITER);
    assert_eq!(
        timeline[2].note.as_deref(),
        Some(
            format!(
                "scheduled_at: {} -> {}",
                airlock_core::time::format_utc(t0()),
                airlock_core::time::format_utc(mins(60))
            )
            .as_str()
        )
    );
    assert_eq!(timeline[3].kind, "status");
    assert_eq!(timeline[3].from, Some(PostStatus::Approved));
    assert_eq!(timeline[3].to, PostStatus::Draft);
    assert_eq!(timeline[3].actor, WRITER);
    assert_eq!(
        timeline[3].note.as_deref(),
        Some("edited (scheduled_at): approval withdrawn")
    );
    s.change_post(edit(&edited)).await.unwrap();
    let timeline = events(s, post.id).await;
    assert_eq!(timeline.len(), 5, "{timeline:?}");
    assert_eq!(timeline[4].kind, "edited");
    assert_eq!(timeline[4].to, PostStatus::Draft);
    assert_eq!(timeline[4].note.as_deref(), Some("edited scheduled_at"));
    assert_eq!(timeline[4].at, mins(3));
}

/// A write fenced by an old generation changes nothing — no status, field, reservation,
/// intent, pause or notification — and leaves a `stale_outcome` event as evidence.
pub async fn a_stale_generation_is_fenced_recorded_and_changes_nothing(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = reserved(s, "threads-main", "Reclaimed", t0()).await;
    // The reaper returns it; another worker claims it again.
    s.change_post(reaped_unsent(&first, mins(20)))
        .await
        .unwrap();
    let Reserved::Granted(second) =
        reserve(s, &s.get_post(first.id).await.unwrap(), mins(21), 10, 10).await
    else {
        panic!("claimed again with a reservation")
    };
    assert_eq!(second.generation, first.generation + 1);
    intent(s, &second, mins(22)).await;
    let before = s.post_detail(first.id).await.unwrap();

    let stale = pausing(
        outcome(&first, PostStatus::Posted, mins(23)),
        PauseSpec {
            scope: PauseScope::Channel(ch("threads-main")),
            reason: "stale".into(),
            after_failures: None,
            notify: vec![notification("paused")],
        },
    )
    .notifying(vec![notification("published")]);
    match s.change_post(stale).await {
        Err(StoreError::Fenced { id, generation }) => {
            assert_eq!(id, first.id);
            assert_eq!(generation, first.generation);
        }
        res => panic!("expected Fenced, got {res:?}"),
    }
    let after = s.post_detail(first.id).await.unwrap();
    // Only the version moves on, so a decision made on an earlier read conflicts.
    let mut expected = before.post.clone();
    expected.version += 1;
    assert_eq!(after.post, expected);
    assert_eq!(after.intents, before.intents);
    assert_eq!(after.reservations, before.reservations);
    assert_eq!(after.events.len(), before.events.len() + 1);
    let evidence = after.events.last().unwrap();
    assert_eq!(evidence.kind, "stale_outcome");
    assert_eq!(evidence.actor, DISPATCHER);
    assert_eq!(evidence.to, PostStatus::Posting);
    assert!(evidence.note.is_some());
    assert!(s.pauses().await.unwrap().is_empty());
    assert_eq!(s.outbox_stats().await.unwrap().pending, 0);
}

/// A generation guard on a post that is no longer `posting` (settled by someone else) is
/// fenced too, even when the generation number matches.
pub async fn a_generation_guard_on_a_settled_post_is_fenced(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = claimed(s, "threads-main", "Settled", t0()).await;
    let posted = s
        .change_post(outcome(&post, PostStatus::Posted, mins(1)))
        .await
        .unwrap();
    let late = outcome(&post, PostStatus::Failed, mins(2));
    assert!(matches!(
        s.change_post(late).await,
        Err(StoreError::Fenced { .. })
    ));
    let mut expected = posted.clone();
    expected.version += 1;
    assert_eq!(s.get_post(post.id).await.unwrap(), expected);
    assert_eq!(
        events(s, post.id).await.last().unwrap().kind,
        "stale_outcome"
    );
    // A person who read the post before the late answer arrived now conflicts.
    let person = Change::ResendClaimed {
        version: posted.version,
        note: "read before the late answer".into(),
    };
    assert!(matches!(
        s.change_post(PostChange::new(post.id, "cli", mins(3), person))
            .await,
        Err(StoreError::Conflict(_))
    ));
}

/// The intent is refused while the post's channel or everything is paused (a pause that
/// landed while the post was being prepared): nothing is recorded, and nothing may be sent.
pub async fn record_intent_is_refused_while_paused(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = reserved(s, "threads-main", "Paused meanwhile", t0()).await;
    for scope in [PauseScope::Channel(ch("threads-main")), PauseScope::All] {
        s.pause(&scope, "stop", "cli", mins(1), Vec::new())
            .await
            .unwrap();
        match s.record_intent(&intent_request(&post, mins(2))).await {
            Err(StoreError::Paused {
                scope: found,
                reason,
            }) => {
                assert_eq!(found, scope.as_key());
                assert_eq!(reason, "stop");
            }
            other => panic!("expected Paused, got {other:?}"),
        }
        s.resume(&scope, "cli", mins(3), Vec::new()).await.unwrap();
    }
    // Another channel's pause does not hold it.
    s.pause(
        &PauseScope::Channel(ch("other")),
        "stop",
        "cli",
        mins(3),
        Vec::new(),
    )
    .await
    .unwrap();
    let detail = s.post_detail(post.id).await.unwrap();
    assert!(detail.intents.is_empty());
    assert!(detail.reservations.iter().all(|r| r.sent_at.is_none()));
    s.record_intent(&intent_request(&post, mins(4)))
        .await
        .unwrap();
}

/// A fenced write that is not an outcome (a second reaper losing the race) records
/// nothing and changes nothing: there is no evidence in it.
pub async fn a_fenced_write_without_evidence_records_nothing(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = claimed(s, "threads-main", "Reaped twice", t0()).await;
    let posted = s
        .change_post(outcome(&post, PostStatus::Posted, mins(1)))
        .await
        .unwrap();
    assert!(matches!(
        s.change_post(reaped_sent(&post, mins(2))).await,
        Err(StoreError::Fenced { .. })
    ));
    assert_eq!(s.get_post(post.id).await.unwrap(), posted);
    assert_ne!(
        events(s, post.id).await.last().unwrap().kind,
        "stale_outcome"
    );
}

/// An intent is recorded only by the current generation under an unexpired lease; the
/// post's reservation gets the intent's time as its send time.
pub async fn record_intent_is_fenced_by_generation_and_lease(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = reserved(s, "threads-main", "Intent", t0()).await;
    let lease_until = post.lease_expires_at.unwrap();
    assert_eq!(lease_until, mins(LEASE_MINUTES));

    let mut old = intent_request(&post, mins(1));
    old.generation = post.generation - 1;
    assert!(matches!(
        s.record_intent(&old).await,
        Err(StoreError::Fenced { .. })
    ));
    for late in [lease_until, lease_until + Duration::seconds(1)] {
        assert!(
            matches!(
                s.record_intent(&intent_request(&post, late)).await,
                Err(StoreError::Fenced { .. })
            ),
            "an intent at {late} after the lease ended must be fenced"
        );
    }
    // The lease must outlast the request it is about to cover.
    let mut tight = intent_request(&post, lease_until - Duration::minutes(1));
    tight.lease_margin = Duration::minutes(2);
    assert!(matches!(
        s.record_intent(&tight).await,
        Err(StoreError::Fenced { .. })
    ));
    assert!(s.post_detail(post.id).await.unwrap().intents.is_empty());

    let mut req = intent_request(&post, mins(2));
    req.platform_ref = Some("container-7".into());
    let recorded = s.record_intent(&req).await.unwrap();
    assert_eq!(recorded.post_id, post.id);
    assert_eq!(recorded.generation, post.generation);
    assert_eq!(recorded.phase, "sending");
    assert_eq!(recorded.platform_ref.as_deref(), Some("container-7"));
    assert_eq!(recorded.created_at, mins(2));
    let detail = s.post_detail(post.id).await.unwrap();
    assert_eq!(detail.intents, vec![recorded]);
    assert_eq!(detail.reservations.len(), 1);
    assert_eq!(detail.reservations[0].sent_at, Some(mins(2)));
    assert_eq!(detail.reservations[0].state, "reserved");

    // One irreversible request per generation: a second intent is refused.
    assert!(matches!(
        s.record_intent(&intent_request(&post, mins(3))).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(s.post_detail(post.id).await.unwrap().intents.len(), 1);
}

/// An intent of a post that is not `posting` is fenced.
pub async fn record_intent_for_a_post_that_is_not_posting_is_fenced(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = approved(s, "threads-main", "Not claimed", t0()).await;
    assert!(matches!(
        s.record_intent(&intent_request(&post, mins(1))).await,
        Err(StoreError::Fenced { .. })
    ));
}

/// Settling an outcome moves the intent of the guarded generation to its final phase and
/// commits or releases the reservation.
pub async fn an_outcome_settles_the_intent_and_the_reservation(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let posted = approved(s, "alpha", "Posted", t0()).await;
    let posted = publish(s, &posted, mins(1), 10, 10).await;
    let detail = s.post_detail(posted.id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Posted);
    assert_eq!(detail.post.posted_at, Some(mins(2)));
    assert_eq!(detail.intents[0].phase, "succeeded");
    assert_eq!(detail.intents[0].settled_at, Some(mins(2)));
    assert_eq!(detail.reservations[0].state, "committed");
    assert_eq!(detail.reservations[0].settled_at, Some(mins(2)));

    let rejected = reserved(s, "alpha", "Rejected", mins(1)).await;
    intent(s, &rejected, mins(1)).await;
    let change = Change::Failed {
        generation: rejected.generation,
        reason: "400 invalid".into(),
        counts_attempt: false,
        settles_intent: true,
        pause: None,
    };
    s.change_post(PostChange::new(rejected.id, DISPATCHER, mins(2), change))
        .await
        .unwrap();
    let detail = s.post_detail(rejected.id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Failed);
    assert_eq!(detail.post.error.as_deref(), Some("400 invalid"));
    assert_eq!(detail.intents[0].phase, "rejected");
    assert_eq!(detail.reservations[0].state, "released");
}

/// `intent_required` is decided inside the transaction: a mismatch is a `Conflict` that
/// changes nothing.
pub async fn intent_required_refuses_a_mismatch_with_conflict(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let unsent = claimed(s, "threads-main", "Unsent", t0()).await;
    assert!(matches!(
        s.change_post(reaped_sent(&unsent, mins(20))).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.get_post(unsent.id).await.unwrap(), unsent);
    let back = s
        .change_post(reaped_unsent(&unsent, mins(20)))
        .await
        .unwrap();
    assert_eq!(back.status, PostStatus::Approved);
    assert_eq!(back.attempts, 1);

    let sent = claimed(s, "threads-main", "Sent", t0()).await;
    intent(s, &sent, mins(1)).await;
    assert!(matches!(
        s.change_post(reaped_unsent(&sent, mins(20))).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.get_post(sent.id).await.unwrap(), sent);
    assert_eq!(
        s.change_post(reaped_sent(&sent, mins(20)))
            .await
            .unwrap()
            .status,
        PostStatus::NeedsReview
    );
}

/// `intent_required` looks at the current generation only: an intent of an earlier claim
/// does not count.
pub async fn intent_required_looks_at_the_current_generation(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = claimed(s, "threads-main", "Twice", t0()).await;
    intent(s, &first, mins(1)).await;
    let back = s
        .change_post(outcome(&first, PostStatus::Approved, mins(2)))
        .await
        .unwrap();
    let second = claim(s, &back, mins(3)).await;
    assert_eq!(
        s.change_post(reaped_unsent(&second, mins(30)))
            .await
            .unwrap()
            .status,
        PostStatus::Approved
    );
}

/// Expired leases are `posting` posts whose lease ended before `now`, each with the intent
/// of its current generation (and only that one).
pub async fn expired_leases_come_with_the_intent_of_their_generation(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let unsent = claimed(s, "threads-main", "No intent", t0()).await;
    let sent = claimed(s, "threads-main", "With intent", t0()).await;
    let sent_intent = intent(s, &sent, mins(1)).await;
    let older = claimed(s, "threads-main", "Older intent", t0()).await;
    intent(s, &older, mins(1)).await;
    let back = s
        .change_post(outcome(&older, PostStatus::Approved, mins(2)))
        .await
        .unwrap();
    let older = claim(s, &back, mins(3)).await;
    approved(s, "threads-main", "Not claimed", t0()).await;

    assert!(
        s.expired_leases(mins(LEASE_MINUTES - 1))
            .await
            .unwrap()
            .is_empty()
    );
    let expired: Vec<_> = s
        .expired_leases(mins(LEASE_MINUTES + 4))
        .await
        .unwrap()
        .into_iter()
        .map(|lease| lease.expect("every row reads"))
        .collect();
    let found: Vec<(PostId, Option<i64>)> = expired
        .iter()
        .map(|e| (e.post.id, e.intent.as_ref().map(|i| i.generation)))
        .collect();
    assert_eq!(
        found,
        vec![
            (unsent.id, None),
            (sent.id, Some(sent.generation)),
            (older.id, None)
        ]
    );
    assert_eq!(expired[1].intent.as_ref(), Some(&sent_intent));
    assert_eq!(expired[1].post, s.get_post(sent.id).await.unwrap());
}

/// The review queue holds `needs_review` posts, oldest first, with their latest intents.
pub async fn review_queue_lists_needs_review_posts_with_their_latest_intent(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let later = claimed(s, "threads-main", "Unknown later", t0()).await;
    let earlier = claimed(s, "threads-main", "Unknown earlier", t0()).await;
    let no_intent = claimed(s, "threads-main", "Unknown without intent", t0()).await;
    let mut req = intent_request(&earlier, mins(1));
    req.platform_ref = Some("container-1".into());
    s.record_intent(&req).await.unwrap();
    intent(s, &later, mins(1)).await;
    for (post, at) in [(&earlier, 2), (&later, 4), (&no_intent, 6)] {
        s.change_post(outcome(post, PostStatus::NeedsReview, mins(at)))
            .await
            .unwrap();
    }
    s.change_post(outcome(
        &claimed(s, "threads-main", "Posted", t0()).await,
        PostStatus::Posted,
        mins(3),
    ))
    .await
    .unwrap();

    let queue: Vec<_> = s
        .review_queue()
        .await
        .unwrap()
        .into_iter()
        .map(|item| item.expect("every row reads"))
        .collect();
    let ids: Vec<PostId> = queue.iter().map(|item| item.post.id).collect();
    assert_eq!(ids, vec![earlier.id, later.id, no_intent.id]);
    let first = queue[0].intent.as_ref().unwrap();
    assert_eq!(first.platform_ref.as_deref(), Some("container-1"));
    assert_eq!(first.phase, "unknown");
    assert!(queue[2].intent.is_none());
}
