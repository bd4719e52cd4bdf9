//! The reaper and reconcile: a worker that died mid-publish never leads to a second send.

use airlock_app::publish::{idempotency_key, publish_request};
use airlock_app::review::Resolution;
use airlock_app::{App, Principal};
use airlock_core::{Post, PostStatus};
use airlock_platforms::Prepared;
use airlock_platforms::sandbox::Simulate;
use airlock_store::{IntentClaim, PostClaim, PostClaimed, QuotaClaim};

use crate::support::*;

/// Claims with its reservation and (optionally) its intent as a worker would, then "dies".
async fn die_after(h: &Harness, app: &App, post: &Post, with_intent: bool) -> Post {
    let now = h.clock.now();
    let channel = &h.settings.channels[&post.content.channel];
    let claim = PostClaim {
        id: post.id,
        version: post.version,
        allow_test: true,
        worker: "doomed".into(),
        actor: "dispatcher:doomed".into(),
        now,
        lease_until: now + h.settings.stale_after,
        quota: Some(QuotaClaim {
            window: h.settings.window,
            daily: channel.daily(),
            budget: None,
        }),
        intent: with_intent.then(|| IntentClaim {
            part: 1,
            idempotency_key: idempotency_key(
                post.id,
                post.approved_hash.as_ref().unwrap().as_str(),
            ),
            lease_margin: chrono::Duration::seconds(35),
        }),
    };
    match app.store().claim_post(&claim).await.unwrap() {
        PostClaimed::Claimed { post, .. } => *post,
        other => panic!("claim failed: {other:?}"),
    }
}

#[tokio::test]
async fn an_expired_lease_after_the_intent_needs_review_and_keeps_its_quota() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let post = approved(&app, "cats", "hello").await;
    die_after(&h, &app, &post, true).await;
    assert!(
        app.reap().await.unwrap().is_empty(),
        "the lease has not expired yet"
    );
    h.clock
        .advance(h.settings.stale_after + chrono::Duration::seconds(1));
    let reaped = app.reap().await.unwrap();
    assert_eq!(reaped.len(), 1);
    assert!(reaped[0].had_intent);
    assert_eq!(reaped[0].post.status, PostStatus::NeedsReview);
    assert_eq!(reaped[0].post.lease_owner, None);
    let detail = app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.reservations[0].state, "reserved");
    assert_eq!(detail.intents[0].phase, "unknown");
    assert_eq!(detail.events.last().unwrap().actor, "reaper");
    let pauses = app.store().pauses().await.unwrap();
    assert_eq!(pauses[0].scope, "cats");
    // Nothing is republished, even after the channel resumes.
    app.resume(&Principal::cli(), Some("cats")).await.unwrap();
    assert!(app.publish_next(None).await.unwrap().is_none());
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 0);
}

#[tokio::test]
async fn an_expired_lease_before_the_intent_returns_to_the_queue() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let post = approved(&app, "cats", "hello").await;
    die_after(&h, &app, &post, false).await;
    h.clock
        .advance(h.settings.stale_after + chrono::Duration::seconds(1));
    let reaped = app.reap().await.unwrap();
    assert_eq!(reaped[0].post.status, PostStatus::Approved);
    assert_eq!(reaped[0].post.attempts, 1);
    let detail = app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.reservations[0].state, "released");
    h.clock.advance(chrono::Duration::minutes(5));
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.status, PostStatus::Posted);
    assert_eq!(report.post.generation, 2);
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 1);
}

#[tokio::test]
async fn repeated_unsent_expiries_fail_at_max_attempts() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let post = approved(&app, "cats", "hello").await;
    for n in 1..=3 {
        let current = app.store().get_post(post.id).await.unwrap();
        die_after(&h, &app, &current, false).await;
        h.clock
            .advance(h.settings.stale_after + chrono::Duration::minutes(10));
        let reaped = app.reap().await.unwrap();
        let expected = if n < 3 {
            PostStatus::Approved
        } else {
            PostStatus::Failed
        };
        assert_eq!(reaped[0].post.status, expected, "after {n} expiries");
    }
}

#[tokio::test]
async fn reconcile_settles_from_evidence_and_never_republishes() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let post = approved(&app, "cats", "hello").await;
    let claimed = die_after(&h, &app, &post, true).await;
    // The request did go out before the worker died.
    let key = idempotency_key(claimed.id, claimed.approved_hash.as_ref().unwrap().as_str());
    let platform = h.platforms.values().next().unwrap();
    platform
        .publish(&publish_request(&claimed, key), &Prepared::default())
        .await;
    h.clock
        .advance(h.settings.stale_after + chrono::Duration::seconds(1));
    app.reap().await.unwrap();
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].post.status, PostStatus::Posted);
    assert!(
        settled[0].evidence.contains("sandbox log"),
        "{}",
        settled[0].evidence
    );
    assert!(
        settled[0]
            .post
            .permalink
            .as_deref()
            .unwrap()
            .starts_with("sandbox://cats/")
    );
    let detail = app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.reservations[0].state, "committed");
    assert_eq!(detail.events.last().unwrap().actor, "reconciler");
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 1);
    // The channel stays paused until an operator resumes it.
    assert_eq!(app.store().pauses().await.unwrap().len(), 1);
}

#[tokio::test]
async fn without_evidence_a_person_decides() {
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Unknown, 10)]).await;
    let app = h.app();
    let post = approved(&app, "drill", "hello").await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.status, PostStatus::NeedsReview);
    assert!(app.reconcile().await.unwrap().is_empty());
    let me = Principal::cli();
    let writer = writer("w");
    assert!(
        app.resolve(&writer, post.id, Resolution::NotPublished)
            .await
            .is_err()
    );
    let post = app
        .resolve(&me, post.id, Resolution::NotPublished)
        .await
        .unwrap();
    assert_eq!(post.status, PostStatus::Failed);
    let post = app.requeue(&me, post.id).await.unwrap();
    assert_eq!(post.status, PostStatus::Approved);
    assert_eq!(post.attempts, 0);
}

/// The finding: after `post resolve`, the channel's pause still said "settle it with
/// `airlock post resolve N`". Read after the post is settled, it says what is left.
#[tokio::test]
async fn a_settled_posts_pause_says_what_is_left() {
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Unknown, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    let post = approved(&app, "drill", "hello").await;
    app.publish_next(None).await.unwrap().unwrap();
    let reason = |pauses: Vec<airlock_store::Pause>| pauses[0].reason.clone();
    let before = reason(app.pauses(&me).await.unwrap());
    assert!(before.contains("airlock post resolve"), "{before}");

    app.resolve(&me, post.id, Resolution::NotPublished)
        .await
        .unwrap();
    let after = reason(app.pauses(&me).await.unwrap());
    assert!(!after.contains("settle it"), "stale: {after}");
    assert!(after.contains("settled since"), "{after}");
    assert!(after.contains("airlock resume drill"), "{after}");
    let listed = app.channel_statuses(&me).await.unwrap();
    let drill = listed.iter().find(|c| c.name.as_str() == "drill").unwrap();
    assert_eq!(drill.pause_reason.as_deref(), Some(after.as_str()));
}

/// The finding: the pause's reason names CLI commands, which the dashboard cannot
/// offer as buttons. Explained, the pause names its post and where it stands, with
/// nothing to parse: in doubt, then settled with nothing else waiting.
#[tokio::test]
async fn an_explained_pause_says_where_its_post_stands() {
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Unknown, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    let post = approved(&app, "drill", "hello").await;
    app.publish_next(None).await.unwrap().unwrap();
    app.pause(&me, None, "maintenance").await.unwrap();
    let explained = app.explained_pauses(&me).await.unwrap();
    assert_eq!(explained.len(), 2, "{explained:?}");
    let global = explained.iter().find(|e| e.pause.scope == "*").unwrap();
    assert_eq!(global.unknown, None, "an operator's pause names no post");
    let drill = explained.iter().find(|e| e.pause.scope == "drill").unwrap();
    let unknown = drill.unknown.clone().expect("the unknown outcome's pause");
    assert_eq!(
        (unknown.post, unknown.settled, unknown.waiting),
        (post.id, None, None)
    );
    assert_eq!(unknown.channel.as_str(), "drill");
    assert!(
        unknown
            .what
            .starts_with(&format!("post {} has an unknown outcome (", post.id))
    );
    assert!(
        !unknown.what.contains("airlock"),
        "no command in it: {}",
        unknown.what
    );

    app.resolve(&me, post.id, Resolution::NotPublished)
        .await
        .unwrap();
    let explained = app.explained_pauses(&me).await.unwrap();
    let drill = explained.iter().find(|e| e.pause.scope == "drill").unwrap();
    let unknown = drill.unknown.clone().unwrap();
    assert_eq!(unknown.settled, Some(PostStatus::Failed));
    assert_eq!(unknown.waiting, None);
    assert!(
        drill.pause.reason.contains("settle it with"),
        "stored as written"
    );
}

/// The finding: an operator's session could revoke the last operator token, and with
/// `[cli] require_token` nobody could make another. A token may not revoke the last
/// active operator token; the local CLI (which can always make one) may.
#[tokio::test]
async fn a_token_cannot_revoke_the_last_operator_token() {
    use airlock_core::{Role, RoleSet};
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Ok, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    let ops = RoleSet::of(&[Role::Operator]);
    app.create_token(&me, "ops", ops.clone()).await.unwrap();
    let ops_session = token("ops", &[Role::Operator]);
    let err = app.revoke_token(&ops_session, "ops").await.unwrap_err();
    assert!(err.to_string().contains("last operator token"), "{err}");
    let active = |tokens: Vec<airlock_store::TokenRecord>| {
        tokens
            .iter()
            .any(|t| t.name == "ops" && t.revoked_at.is_none())
    };
    assert!(active(app.list_tokens(&me).await.unwrap()));

    app.create_token(&me, "ops2", ops).await.unwrap();
    app.revoke_token(&ops_session, "ops").await.unwrap();
    let err = app
        .revoke_token(&token("ops2", &[Role::Operator]), "ops2")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("last operator token"), "{err}");
    app.revoke_token(&me, "ops2").await.unwrap();
}

/// Revoked tokens stay listed; each token counts the drafts it created that are still
/// drafts, in one read for all of them.
#[tokio::test]
async fn tokens_are_listed_with_their_live_drafts() {
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Unknown, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    for name in ["agent", "idle"] {
        app.create_token(
            &me,
            name,
            airlock_core::RoleSet::of(&[airlock_core::Role::Writer]),
        )
        .await
        .unwrap();
    }
    let agent = writer("agent");
    for text in ["one", "two", "three"] {
        app.create_post(
            &agent,
            draft("drill", text),
            None,
            airlock_app::posts::DraftOrigin::default(),
        )
        .await
        .unwrap();
    }
    // The CLI's drafts are not a token's.
    approved(&app, "drill", "by the cli").await;
    app.revoke_token(&me, "idle").await.unwrap();
    let listed = app.token_uses(&me).await.unwrap();
    let found: Vec<(&str, i64, bool)> = listed
        .iter()
        .map(|t| {
            (
                t.record.name.as_str(),
                t.live_drafts,
                t.record.revoked_at.is_some(),
            )
        })
        .collect();
    assert_eq!(found, vec![("agent", 3, false), ("idle", 0, true)]);
    assert!(matches!(
        app.token_uses(&agent).await,
        Err(airlock_app::Error::Forbidden(_))
    ));
}

/// The finding: resolving with "resume" lifted whatever paused the channel, an
/// operator's emergency stop included. It lifts only the pause a post in doubt set, and
/// only once nothing on the channel is in doubt.
#[tokio::test]
async fn resolve_and_resume_lifts_only_a_pause_that_doubt_set() {
    use airlock_app::review::Resumed;
    let h = Harness::new(|dir| vec![sandbox(dir, "drill", Simulate::Unknown, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    let post = approved(&app, "drill", "hello").await;
    app.publish_next(None).await.unwrap().unwrap();
    // An operator stops the channel for another reason meanwhile.
    app.pause(&me, Some("drill"), "account compromised")
        .await
        .unwrap();
    let (settled, resumed) = app
        .resolve_and_resume(&me, post.id, Resolution::NotPublished)
        .await
        .unwrap();
    assert_eq!(settled.status, PostStatus::Failed);
    assert!(
        matches!(&resumed, Resumed::Held(reason) if reason.contains("account compromised")),
        "{resumed:?}"
    );
    let pauses = app.pauses(&me).await.unwrap();
    assert_eq!(pauses.len(), 1, "the operator's pause holds");
    assert_eq!(pauses[0].reason, "account compromised");

    // An operator cannot word a pause as the one doubt sets, to have it lifted with it.
    let mimic = format!("post {} has an unknown outcome (maintenance)", post.id);
    let err = app.pause(&me, Some("drill"), &mimic).await.unwrap_err();
    assert!(matches!(err, airlock_app::Error::Invalid(_)), "{err:?}");

    // With only the doubt's own pause, it is lifted.
    app.resume(&me, Some("drill")).await.unwrap();
    let second = approved(&app, "drill", "second").await;
    app.publish_next(None).await.unwrap().unwrap();
    let (_, resumed) = app
        .resolve_and_resume(&me, second.id, Resolution::NotPublished)
        .await
        .unwrap();
    assert_eq!(resumed, Resumed::Resumed);
    assert!(app.pauses(&me).await.unwrap().is_empty());
}

/// A platform whose publish times out and whose container reads `EXPIRED`: this attempt
/// can never be published.
#[derive(Debug)]
struct SaysItCannotLand;

#[async_trait::async_trait]
impl airlock_platforms::Platform for SaysItCannotLand {
    fn kind(&self) -> airlock_core::ChannelKind {
        airlock_core::ChannelKind::Sandbox
    }
    async fn account(
        &self,
    ) -> Result<Option<airlock_platforms::Account>, airlock_platforms::StepError> {
        Ok(None)
    }
    async fn publish(
        &self,
        _req: &airlock_platforms::PublishRequest,
        _prepared: &Prepared,
    ) -> airlock_core::Outcome {
        airlock_core::Outcome::Unknown {
            reason: "timed out after sending".into(),
        }
    }
    async fn reconcile(
        &self,
        _req: &airlock_platforms::ReconcileRequest,
    ) -> airlock_platforms::Evidence {
        airlock_platforms::Evidence::CannotLand {
            note: "the container reads EXPIRED".into(),
        }
    }
}

fn cannot_land(dir: &std::path::Path) -> Vec<TestChannel> {
    let _ = dir;
    vec![TestChannel {
        settings: airlock_app::ChannelSettings::new(
            name("slow"),
            airlock_core::ChannelKind::Sandbox,
            10,
            tokyo(),
        ),
        platform: std::sync::Arc::new(SaysItCannotLand),
    }]
}

#[tokio::test]
async fn proof_that_an_attempt_cannot_land_returns_the_post_to_the_queue() {
    let h = Harness::new(cannot_land).await;
    let app = h.app();
    let post = approved(&app, "slow", "hello").await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.status, PostStatus::NeedsReview);
    // A guarantee, not an absence: it settles at once, with no lease to wait out.
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].post.status, PostStatus::Approved);
    assert!(settled[0].evidence.contains("EXPIRED"));
    let detail = app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.reservations[0].state, "released");
}

#[tokio::test]
async fn a_late_answer_from_the_sending_worker_keeps_the_post_for_a_person() {
    let h = Harness::new(cannot_land).await;
    let app = h.app();
    let post = approved(&app, "slow", "hello").await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    // The worker's late "it went out" arrives after the post needs review: refused, recorded.
    let late = airlock_store::Change::Published {
        part: 1,
        generation: report.post.generation,
        posted_at: h.clock.now(),
        platform_post_id: Some("late".into()),
        permalink: None,
        sent_by: None,
        note: "published".into(),
        flag: None,
        pause: None,
    };
    let late = airlock_store::PostChange::new(post.id, "dispatcher:late", h.clock.now(), late);
    assert!(app.store().change_post(late).await.is_err());
    h.clock
        .advance(h.settings.stale_after + chrono::Duration::seconds(1));
    assert!(
        app.reconcile().await.unwrap().is_empty(),
        "a person decides"
    );
    assert_eq!(status(&app, post.id).await, PostStatus::NeedsReview);
}

/// One row that cannot be read does not stop the reaper: the other expired leases are
/// still settled, and the bad row is left for `doctor` and a person.
#[tokio::test]
async fn an_unreadable_row_does_not_stop_the_reaper() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let bad = approved(&app, "cats", "bad row").await.id;
    let good = approved(&app, "cats", "good row").await.id;
    h.sql(&format!(
        "UPDATE posts SET status = 'posting', lease_owner = 'gone', \
         lease_expires_at = '2000-01-01T00:00:00.000Z', generation = generation + 1 \
         WHERE id IN ({bad}, {good})"
    ))
    .await
    .unwrap();
    // (Not media: since migration 0005 the store refuses media that is not a JSON list.)
    h.sql(&format!(
        "UPDATE posts SET source = '{{not json' WHERE id = {bad}"
    ))
    .await
    .unwrap();
    let reaped = app.reap().await.unwrap();
    assert_eq!(reaped.iter().map(|r| r.post.id).collect::<Vec<_>>(), [good]);
    assert_eq!(status(&app, good).await, PostStatus::Approved);
}
