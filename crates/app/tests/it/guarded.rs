//! The guarded path's checks and the review rules around it.

use airlock_app::posts::{DraftOrigin, EditInput};
use airlock_app::publish::PublishResult;
use airlock_app::{Error, Principal};
use airlock_core::{PostStatus, Role};
use airlock_platforms::sandbox::Simulate;
use airlock_store::{PostChange, PostClaim, PostClaimed};

use crate::support::*;

async fn sandbox_harness() -> Harness {
    Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await
}

#[tokio::test]
async fn a_writer_drafts_a_critic_approves_and_a_publisher_publishes() {
    let h = sandbox_harness().await;
    let app = h.app();
    let (writer, critic, publisher) = (
        writer("agent"),
        token("critic", &[Role::Critic]),
        token("pub", &[Role::Publisher]),
    );
    let post = app
        .create_post(
            &writer,
            draft("cats", "hello"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    assert_eq!(post.created_by, "token:agent");
    assert!(matches!(
        app.approve(&writer, post.id).await,
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        app.publish_now(&critic, post.id).await,
        Err(Error::Forbidden(_))
    ));
    let approved = app.approve(&critic, post.id).await.unwrap();
    assert_eq!(
        approved.approved_hash.as_ref(),
        Some(&approved.content_hash)
    );
    assert_eq!(approved.approved_by.as_deref(), Some("token:critic"));
    assert!(matches!(
        app.pause(&publisher, None, "x").await,
        Err(Error::Forbidden(_))
    ));
    let posted = app.publish_now(&publisher, post.id).await.unwrap();
    assert_eq!(posted.status, PostStatus::Posted);
    assert!(posted.verified_at.is_some());
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 1);
}

#[tokio::test]
async fn a_token_never_approves_what_it_created_or_last_edited() {
    let h = sandbox_harness().await;
    let app = h.app();
    let both = token("both", &[Role::Writer, Role::Critic]);
    let other = token("other", &[Role::Writer, Role::Critic]);
    let post = app
        .create_post(&both, draft("cats", "mine"), None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let err = app.approve(&both, post.id).await.unwrap_err();
    assert!(err.to_string().contains("separation of duties"), "{err}");
    // Another token edits it; now the first may approve, the editor may not.
    let edit = EditInput {
        text: Some("edited by other".into()),
        ..EditInput::default()
    };
    app.edit_post(&other, post.id, edit).await.unwrap();
    assert!(app.approve(&other, post.id).await.is_err());
    // The creator is still the creator.
    assert!(app.approve(&both, post.id).await.is_err());
    // The local CLI is exempt.
    assert!(app.approve(&Principal::cli(), post.id).await.is_ok());
}

#[tokio::test]
async fn policy_violations_are_refused_at_approval() {
    let strict = || {
        airlock_core::ChannelKind::Sandbox.policy_with(
            Some(20),
            vec!["guaranteed".into()],
            vec!["pace.".into()],
        )
    };
    let mut h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let me = Principal::cli();
    // Drafted before the channel's limit was lowered (a text over the limit is refused
    // when drafted): the approval checks the policy as it is now.
    let post = h
        .app()
        .create_post(
            &me,
            draft("cats", "Guaranteed cats, every day of the week"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    let cats = name("cats");
    h.settings.channels.get_mut(&cats).unwrap().policy = strict();
    let app = h.app();
    let Err(Error::Policy(violations)) = app.approve(&me, post.id).await else {
        panic!("policy was not enforced");
    };
    assert_eq!(violations.len(), 3, "{violations:?}");
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
}

#[tokio::test]
async fn editing_an_approved_post_withdraws_the_approval() {
    let h = sandbox_harness().await;
    let app = h.app();
    let post = approved(&app, "cats", "first").await;
    let edited = app
        .edit_post(
            &writer("w"),
            post.id,
            EditInput {
                text: Some("second".into()),
                ..EditInput::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(edited.status, PostStatus::Draft);
    assert_eq!(edited.approved_hash, None);
    assert_ne!(edited.content_hash, post.content_hash);
    let detail = app.store().post_detail(post.id).await.unwrap();
    let last = detail.events.last().unwrap();
    assert_eq!(
        (last.from, last.to),
        (Some(PostStatus::Approved), PostStatus::Draft)
    );
    assert_eq!(last.actor, "token:w");
}

#[tokio::test]
async fn content_changed_in_the_database_after_approval_is_not_published() {
    let h = sandbox_harness().await;
    let app = h.app();
    let post = approved(&app, "cats", "approved words").await;
    // Someone edits the row behind airlock's back.
    h.sql(&format!(
        "UPDATE posts SET text = 'other words' WHERE id = {}",
        post.id
    ))
    .await
    .unwrap();
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(
        matches!(report.result, PublishResult::ContentChanged { .. }),
        "{:?}",
        report.result
    );
    assert_eq!(report.post.status, PostStatus::Draft);
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 0);
    let detail = app.store().post_detail(post.id).await.unwrap();
    let notes: Vec<_> = detail
        .events
        .iter()
        .filter_map(|e| e.note.clone())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("changed after approval")),
        "{notes:?}"
    );
    assert_eq!(
        detail.reservations.len(),
        0,
        "checks run before any quota is reserved"
    );
}

#[tokio::test]
async fn an_edited_source_article_stops_its_post() {
    let h = Harness::new(|dir| {
        let mut channel = sandbox(dir, "cats", Simulate::Ok, 10);
        channel.settings.source_dir = Some(dir.join("site"));
        vec![channel]
    })
    .await;
    std::fs::create_dir_all(h.path("site")).unwrap();
    std::fs::write(h.path("site/a.md"), "---\ntitle: A\n---\nbody").unwrap();
    let app = h.app();
    let me = Principal::cli();
    let origin = DraftOrigin {
        source: Some(airlock_core::Source {
            path: "a.md".into(),
            sha256: airlock_core::hash::sha256_hex(b"---\ntitle: A\n---\nbody"),
            updated: None,
        }),
        slot: None,
        allow_duplicate: false,
    };
    let post = app
        .create_post(&me, draft("cats", "about A"), None, origin)
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap();
    std::fs::write(h.path("site/a.md"), "---\ntitle: A\n---\nbody, edited").unwrap();
    let report = app.publish_next(None).await.unwrap().unwrap();
    let PublishResult::ContentChanged { reason } = report.result else {
        panic!("{:?}", report.result)
    };
    assert!(reason.contains("a.md"), "{reason}");
    assert_eq!(report.post.status, PostStatus::Draft);
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 0);
}

#[tokio::test]
async fn a_stale_workers_outcome_is_refused_and_recorded() {
    let h = sandbox_harness().await;
    let app = h.app();
    let post = approved(&app, "cats", "hello").await;
    let claim = |read: &airlock_core::Post, worker: &str| PostClaim {
        id: read.id,
        version: read.version,
        allow_test: true,
        worker: worker.into(),
        actor: format!("dispatcher:{worker}"),
        now: h.clock.now(),
        lease_until: h.clock.now() + chrono::Duration::minutes(15),
        quota: None,
        intent: None,
    };
    let PostClaimed::Claimed { post: first, .. } =
        app.store().claim_post(&claim(&post, "old")).await.unwrap()
    else {
        panic!()
    };
    // The old worker's lease is reaped and another worker claims the post.
    h.clock.advance(chrono::Duration::minutes(16));
    let reaped = app.reap().await.unwrap();
    assert_eq!(reaped.len(), 1);
    assert_eq!(reaped[0].post.status, PostStatus::Approved);
    h.clock.advance(chrono::Duration::minutes(5));
    let read = app.store().get_post(post.id).await.unwrap();
    let PostClaimed::Claimed { post: second, .. } =
        app.store().claim_post(&claim(&read, "new")).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(second.generation, first.generation + 1);
    // The old worker now tries to write its outcome.
    let late = airlock_store::Change::Published {
        part: 1,
        generation: first.generation,
        posted_at: h.clock.now(),
        platform_post_id: Some("late".into()),
        permalink: None,
        sent_by: None,
        note: "published".into(),
        flag: None,
        pause: None,
    };
    let late = PostChange::new(post.id, "dispatcher:old", h.clock.now(), late);
    let err = app.store().change_post(late).await.unwrap_err();
    assert!(
        matches!(err, airlock_store::StoreError::Fenced { .. }),
        "{err}"
    );
    let detail = app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Posting);
    assert_eq!(detail.post.lease_owner.as_deref(), Some("new"));
    let stale = detail
        .events
        .iter()
        .find(|e| e.kind == "stale_outcome")
        .expect("recorded");
    assert_eq!(stale.actor, "dispatcher:old");
    assert!(stale.note.as_deref().unwrap().contains("posted"));
}

#[tokio::test]
async fn pause_holds_and_resume_releases() {
    let h = sandbox_harness().await;
    let app = h.app();
    let me = Principal::cli();
    let post = approved(&app, "cats", "hello").await;
    assert!(app.pause(&me, Some("cats"), "holiday").await.unwrap());
    assert!(!app.pause(&me, Some("cats"), "again").await.unwrap());
    assert!(app.publish_next(None).await.unwrap().is_none());
    let err = app.publish_now(&me, post.id).await.unwrap_err();
    assert!(matches!(err, Error::Paused { .. }), "{err}");
    assert!(err.to_string().contains("holiday"));
    assert!(app.pause(&me, None, "incident").await.unwrap());
    assert!(app.resume(&me, Some("cats")).await.unwrap());
    assert!(
        app.publish_next(None).await.unwrap().is_none(),
        "the global pause still holds"
    );
    assert!(app.resume(&me, None).await.unwrap());
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.status, PostStatus::Posted);
}

#[tokio::test]
async fn over_quota_defers_until_the_next_slot_without_counting_an_attempt() {
    let mut h = sandbox_harness().await;
    h.settings.window.limit = 2;
    let app = h.app();
    let a = approved(&app, "cats", "one").await;
    let b = approved(&app, "cats", "two").await;
    let c = approved(&app, "cats", "three").await;
    let first = h.clock.now();
    assert_eq!(app.publish_next(None).await.unwrap().unwrap().post.id, a.id);
    h.clock.advance(chrono::Duration::minutes(10));
    assert_eq!(app.publish_next(None).await.unwrap().unwrap().post.id, b.id);
    h.clock.advance(chrono::Duration::minutes(10));
    let report = app.publish_next(None).await.unwrap().unwrap();
    let PublishResult::Deferred { next_free_at, .. } = report.result else {
        panic!("{:?}", report.result)
    };
    assert_eq!(next_free_at, first + chrono::Duration::minutes(60));
    assert_eq!(report.post.id, c.id);
    assert_eq!(report.post.status, PostStatus::Approved);
    assert_eq!(report.post.attempts, 0);
    assert_eq!(report.post.not_before, Some(next_free_at));
    let err = app.publish_now(&Principal::cli(), c.id).await.unwrap_err();
    assert!(matches!(err, Error::OverQuota { .. }), "{err}");
    assert!(app.publish_next(None).await.unwrap().is_none());
    h.clock.advance(chrono::Duration::minutes(40));
    assert_eq!(
        app.publish_next(None).await.unwrap().unwrap().result,
        PublishResult::Posted
    );
    let quota = app.quota_status(&Principal::cli()).await.unwrap();
    assert_eq!(quota.window.usage.used, 2);
}

/// A deferral is decided again at every pass: asking to publish a deferred post again
/// adds no second notice for the same slot, and once the limit is raised (a new process
/// with the new configuration) or a slot frees, the post is due at once instead of
/// waiting for the slot decided under the old figures.
#[tokio::test]
async fn a_deferral_is_noticed_once_per_slot_and_lifted_when_a_slot_frees() {
    let mut h = sandbox_harness().await;
    h.settings.window.limit = 1;
    let app = h.app();
    let me = Principal::cli();
    approved(&app, "cats", "one").await;
    let waiting = approved(&app, "cats", "two").await;
    assert_eq!(
        app.publish_next(None).await.unwrap().unwrap().result,
        PublishResult::Posted
    );
    h.clock.advance(chrono::Duration::minutes(5));
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(matches!(report.result, PublishResult::Deferred { .. }));
    for _ in 0..3 {
        let err = app.publish_now(&me, waiting.id).await.unwrap_err();
        assert!(matches!(err, Error::OverQuota { .. }), "{err}");
    }
    let detail = app.store().post_detail(waiting.id).await.unwrap();
    let notices = detail
        .events
        .iter()
        .filter(|e| e.kind == "quota_deferred")
        .count();
    assert_eq!(notices, 1, "{:?}", detail.events);
    assert_eq!(
        app.waiting_on_quota().await.unwrap().map(|(n, _)| n),
        Some(1)
    );

    // Still full under the old limit: nothing changes.
    assert_eq!(app.recheck_deferrals().await.unwrap(), 0);
    // The operator raises the window limit and restarts.
    h.settings.window.limit = 2;
    let app = h.app();
    assert_eq!(app.recheck_deferrals().await.unwrap(), 1);
    assert_eq!(app.waiting_on_quota().await.unwrap(), None);
    let lifted = app.store().get_post(waiting.id).await.unwrap();
    assert_eq!((lifted.not_before, lifted.deferred_until), (None, None));
    assert_eq!(
        app.publish_next(None).await.unwrap().unwrap().result,
        PublishResult::Posted
    );
}

#[tokio::test]
async fn test_posts_go_out_only_on_sandboxes_and_never_count() {
    let h = sandbox_harness().await;
    let app = h.app();
    let me = Principal::cli();
    let mut input = draft("cats", "just testing");
    input.test = true;
    let post = app
        .create_post(&me, input, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap();
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.status, PostStatus::Posted);
    let quota = app.quota_status(&me).await.unwrap();
    assert_eq!(quota.window.usage.used, 0);
    assert!(
        app.store()
            .post_detail(post.id)
            .await
            .unwrap()
            .reservations
            .is_empty()
    );
}

#[tokio::test]
async fn rejecting_and_discarding_drafts() {
    let h = sandbox_harness().await;
    let app = h.app();
    let me = Principal::cli();
    let critic = token("critic", &[Role::Critic]);
    let post = approved(&app, "cats", "hello").await;
    let rejected = app.reject(&critic, post.id, "off-brand").await.unwrap();
    assert_eq!(rejected.status, PostStatus::Draft);
    assert!(rejected.error.as_deref().unwrap().contains("off-brand"));
    assert!(matches!(
        app.reject(&critic, post.id, " ").await,
        Err(Error::Invalid(_))
    ));
    app.discard(&me, post.id).await.unwrap();
    assert!(matches!(
        app.get_post(&me, post.id).await,
        Err(Error::NotFound(_))
    ));
    // Its events stay in the ledger.
    let events = app.events_after(&me, 0, 100).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.post_id == post.id && e.kind == "discarded")
    );
    // Only drafts can be discarded.
    let posted = approved(&app, "cats", "out").await;
    app.publish_now(&me, posted.id).await.unwrap();
    assert!(matches!(
        app.discard(&me, posted.id).await,
        Err(Error::IllegalTransition(_))
    ));
}

#[tokio::test]
async fn idempotent_create_returns_the_first_post() {
    let h = sandbox_harness().await;
    let app = h.app();
    let agent = writer("agent");
    let first = app
        .create_post(
            &agent,
            draft("cats", "once"),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert!(!first.existing);
    let again = app
        .create_post(
            &agent,
            draft("cats", "once"),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert!(again.existing);
    assert_eq!(again.post.id, first.post.id);
    let err = app
        .create_post(
            &agent,
            draft("cats", "different"),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    // Keys are per token.
    let other = app
        .create_post(
            &writer("other"),
            draft("cats", "once"),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert_ne!(other.post.id, first.post.id);
}

#[tokio::test]
async fn an_unknown_channel_is_refused_by_name() {
    let h = sandbox_harness().await;
    let err = h
        .app()
        .create_post(
            &Principal::cli(),
            draft("dogs", "woof"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)));
    assert!(
        err.to_string().contains("\"dogs\"") && err.to_string().contains("cats"),
        "{err}"
    );
}

#[tokio::test]
async fn consecutive_failures_pause_the_channel() {
    let h = Harness::new(|dir| vec![sandbox(dir, "strict", Simulate::Reject, 10)]).await;
    let app = h.app();
    for n in 1..=3 {
        let post = approved(&app, "strict", &format!("attempt {n}")).await;
        let report = app.publish_next(None).await.unwrap().unwrap();
        assert_eq!(report.post.id, post.id);
        assert_eq!(report.post.status, PostStatus::Failed);
        let paused = !app.store().pauses().await.unwrap().is_empty();
        assert_eq!(paused, n == 3, "after {n} failures");
    }
}

/// The guarded path's module doc numbers its steps 1–6; the step comments in the code
/// carry the same numbers, once each, in the order the code runs them.
#[test]
fn the_publish_paths_step_comments_follow_its_module_doc() {
    let source = include_str!("../../src/publish/mod.rs");
    let number = |rest: &str| -> Option<u32> {
        let (n, after) = rest.split_once(". ")?;
        (!after.is_empty()).then_some(())?;
        n.parse().ok()
    };
    let documented: Vec<u32> = source
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .filter_map(number)
        .collect();
    let in_code: Vec<u32> = source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("// "))
        .filter_map(number)
        .collect();
    assert_eq!(documented, (1..=6).collect::<Vec<_>>(), "the module doc");
    assert_eq!(in_code, documented, "the step comments in the code");
}
