//! Compose: drafting with a source, slots in the channel's time zone, dry runs, policy
//! failures, auto-approval, one post per slot under concurrency, and an article edited
//! after approval stopping its post on the guarded path.

use chrono::{Duration, TimeZone, Utc};

use airlock_app::Principal;
use airlock_app::publish::PublishResult;
use airlock_compose::{ComposeRequest, Composed, SkipReason, Slot, compose};
use airlock_core::hash::sha256_hex;
use airlock_core::policy::Violation;
use airlock_core::{ChannelKind, PostStatus, Source};
use airlock_store::{PostFilter, Reads};

use crate::support::*;

fn now() -> ComposeRequest {
    ComposeRequest::default()
}

fn slot(at: &str) -> ComposeRequest {
    ComposeRequest {
        slot: Some(Slot::parse(at).unwrap()),
        dry_run: false,
    }
}

async fn all_posts(h: &Harness) -> Vec<airlock_core::Post> {
    h.store.list_posts(&PostFilter::default()).await.unwrap()
}

#[tokio::test]
async fn compose_drafts_the_next_article_with_its_source() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    let app = h.app();
    h.article("posts/older.md", "older", "2026-11-01").await;
    h.article("posts/newer.md", "newer", "2026-11-20").await;

    let Composed::Drafted { post, article } = compose(&app, h.target("cats"), &h.checker(), now())
        .await
        .unwrap()
    else {
        panic!("expected a draft")
    };
    assert_eq!(article.path, "posts/newer.md");
    assert_eq!(post.status, PostStatus::Draft);
    assert_eq!(post.created_by, "scheduler");
    assert_eq!(post.scheduled_at, h.clock.now());
    assert_eq!(post.slot, None);
    assert_eq!(
        post.content.text,
        format!("Title of newer\nAbout newer.\n{}", h.url("newer"))
    );
    let bytes = std::fs::read(h.site_dir().join("posts/newer.md")).unwrap();
    assert_eq!(
        post.content.source,
        Some(Source {
            path: "posts/newer.md".into(),
            sha256: sha256_hex(&bytes),
            updated: Some("2026-11-20".into()),
        })
    );

    // The next run takes the other article; then nothing is left inside the reuse window.
    let Composed::Drafted { article, .. } = compose(&app, h.target("cats"), &h.checker(), now())
        .await
        .unwrap()
    else {
        panic!("expected a second draft")
    };
    assert_eq!(article.path, "posts/older.md");
    let Composed::NothingEligible { skipped } =
        compose(&app, h.target("cats"), &h.checker(), now())
            .await
            .unwrap()
    else {
        panic!("expected nothing eligible")
    };
    assert_eq!(skipped.len(), 2);
    assert!(
        skipped
            .iter()
            .all(|s| matches!(s.reason, SkipReason::RecentlyUsed { .. }))
    );
    assert_eq!(all_posts(&h).await.len(), 2);
}

#[tokio::test]
async fn a_slot_at_eight_in_tokyo_is_twenty_three_utc_the_day_before() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    h.article("a.md", "a", "2026-11-01").await;
    // 05:00 on 1 December in Tokyo.
    h.clock
        .set(Utc.with_ymd_and_hms(2026, 11, 30, 20, 0, 0).unwrap());
    let Composed::Drafted { post, .. } =
        compose(&h.app(), h.target("cats"), &h.checker(), slot("08:00"))
            .await
            .unwrap()
    else {
        panic!("expected a draft")
    };
    assert_eq!(
        post.scheduled_at,
        Utc.with_ymd_and_hms(2026, 11, 30, 23, 0, 0).unwrap()
    );
    assert_eq!(post.slot.as_deref(), Some("2026-12-01T08:00+09:00"));
}

#[tokio::test]
async fn a_dry_run_shows_the_draft_and_writes_nothing() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[])
        .auto_approve = Some("critic-bot".into());
    h.article("a.md", "a", "2026-11-01").await;
    let request = ComposeRequest {
        dry_run: true,
        ..slot("19:00")
    };
    let Composed::WouldDraft(plan) = compose(&h.app(), h.target("cats"), &h.checker(), request)
        .await
        .unwrap()
    else {
        panic!("expected a plan")
    };
    assert_eq!(plan.article.path, "a.md");
    assert_eq!(plan.slot.as_deref(), Some("2026-12-01T19:00+09:00"));
    assert_eq!(
        plan.scheduled_at,
        Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap()
    );
    assert_eq!(plan.auto_approve.as_deref(), Some("critic-bot"));
    assert!(plan.content.text.contains(&h.url("a")));
    assert!(all_posts(&h).await.is_empty());
}

#[tokio::test]
async fn a_post_that_breaks_the_policy_is_reported_and_not_drafted() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Threads, Some(50), &["guaranteed"], &[]);
    h.write(
        "a.md",
        &article("a", "2026-11-01", "").replace("About a.", "Guaranteed to meet the cat."),
    );
    h.page("a").await;
    let Composed::NothingEligible { skipped } =
        compose(&h.app(), h.target("cats"), &h.checker(), slot("08:00"))
            .await
            .unwrap()
    else {
        panic!("expected nothing drafted")
    };
    match &skipped[0].reason {
        SkipReason::Policy(violations) => {
            assert!(violations.contains(&Violation::Forbidden("guaranteed".into())));
            assert!(
                violations
                    .iter()
                    .any(|v| matches!(v, Violation::TooLong { .. }))
            );
        }
        other => panic!("expected a policy reason, got {other}"),
    }
    assert!(skipped[0].reason.to_string().contains("forbidden phrase"));
    assert!(all_posts(&h).await.is_empty());
}

#[tokio::test]
async fn auto_approve_approves_the_draft_as_its_principal() {
    let mut h = Harness::new().await;
    h.channel(
        "cats",
        ChannelKind::Threads,
        None,
        &[],
        &["猫のペースを尊重してください。"],
    )
    .auto_approve = Some("critic-bot".into());
    h.article("a.md", "a", "2026-11-01").await;
    let Composed::Drafted { post, .. } =
        compose(&h.app(), h.target("cats"), &h.checker(), slot("08:00"))
            .await
            .unwrap()
    else {
        panic!("expected a draft")
    };
    assert_eq!(post.status, PostStatus::Approved);
    assert_eq!(post.approved_by.as_deref(), Some("critic-bot"));
    assert_eq!(post.approved_hash.as_ref(), Some(&post.content_hash));
    assert!(
        post.content
            .text
            .ends_with("\n猫のペースを尊重してください。")
    );
}

#[tokio::test]
async fn a_slot_draft_nobody_touched_is_approved_by_the_next_run_but_a_rejected_one_is_not() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    h.channel("dogs", ChannelKind::Sandbox, None, &[], &[]);
    h.article("a.md", "a", "2026-11-01").await;
    let app = h.app();
    // Drafted by a run that stopped before approving (auto_approve configured only afterwards).
    let Composed::Drafted {
        post: cats_post, ..
    } = compose(&app, h.target("cats"), &h.checker(), slot("08:00"))
        .await
        .unwrap()
    else {
        panic!("expected a draft")
    };
    let Composed::Drafted {
        post: dogs_post, ..
    } = compose(&app, h.target("dogs"), &h.checker(), slot("08:00"))
        .await
        .unwrap()
    else {
        panic!("expected a draft")
    };
    app.reject(&Principal::cli(), dogs_post.id, "not this one")
        .await
        .unwrap();
    for channel in ["cats", "dogs"] {
        h.settings
            .channels
            .get_mut(&name(channel))
            .unwrap()
            .auto_approve = Some("critic-bot".into());
    }

    let Composed::SlotFilled { post } =
        compose(&app, h.target("cats"), &h.checker(), slot("08:00"))
            .await
            .unwrap()
    else {
        panic!("expected the slot filled")
    };
    assert_eq!(post.id, cats_post.id);
    assert_eq!(post.status, PostStatus::Approved);
    let Composed::SlotFilled { post } =
        compose(&app, h.target("dogs"), &h.checker(), slot("08:00"))
            .await
            .unwrap()
    else {
        panic!("expected the slot filled")
    };
    assert_eq!(post.id, dogs_post.id);
    assert_eq!(post.status, PostStatus::Draft, "a person rejected it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn filling_a_slot_from_many_processes_at_once_drafts_one_post() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[])
        .auto_approve = Some("critic-bot".into());
    for i in 0..4 {
        h.article(&format!("a{i}.md"), &format!("a{i}"), "2026-11-01")
            .await;
    }
    let mut apps = Vec::new();
    for _ in 0..6 {
        apps.push(h.app_with_own_pool().await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for app in apps {
        let settings = h.settings.clone();
        let checker = h.checker();
        tasks.spawn(async move {
            let target = settings.target("inn", "cats").unwrap();
            compose(&app, target, &checker, slot("08:00"))
                .await
                .unwrap()
        });
    }
    let mut drafted = Vec::new();
    let mut filled = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done.unwrap() {
            Composed::Drafted { post, .. } => drafted.push(post.id),
            Composed::SlotFilled { post } => filled.push(post.id),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(drafted.len(), 1, "drafted {drafted:?}, filled {filled:?}");
    assert!(filled.iter().all(|id| *id == drafted[0]));
    let posts = all_posts(&h).await;
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].status, PostStatus::Approved);
    assert_eq!(posts[0].slot.as_deref(), Some("2026-12-01T08:00+09:00"));

    // Running it again later the same day drafts nothing either.
    h.clock.advance(Duration::hours(3));
    assert!(matches!(
        compose(&h.app(), h.target("cats"), &h.checker(), slot("08:00"))
            .await
            .unwrap(),
        Composed::SlotFilled { .. }
    ));
    assert_eq!(all_posts(&h).await.len(), 1);
}

#[tokio::test]
async fn an_article_edited_after_approval_is_not_published() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[])
        .auto_approve = Some("critic-bot".into());
    h.article("a.md", "a", "2026-11-01").await;
    let app = h.app();
    let Composed::Drafted { post, .. } = compose(&app, h.target("cats"), &h.checker(), now())
        .await
        .unwrap()
    else {
        panic!("expected a draft")
    };
    assert_eq!(post.status, PostStatus::Approved);

    // Someone corrects the article after the post was approved.
    let path = h.site_dir().join("a.md");
    let edited = std::fs::read_to_string(&path)
        .unwrap()
        .replace("Body of a.", "Body of a, corrected.");
    std::fs::write(&path, edited).unwrap();

    let report = app
        .publish_next(None)
        .await
        .unwrap()
        .expect("the post is due");
    assert_eq!(report.post.id, post.id);
    match &report.result {
        PublishResult::ContentChanged { reason } => {
            assert!(reason.contains("a.md"), "{reason}");
        }
        other => panic!("expected the post stopped, got {other:?}"),
    }
    assert_eq!(
        h.store.get_post(post.id).await.unwrap().status,
        PostStatus::Draft
    );
    assert!(
        std::fs::read_to_string(h.sandbox_log("cats"))
            .unwrap_or_default()
            .is_empty(),
        "nothing was sent"
    );
    assert!(app.publish_next(None).await.unwrap().is_none());
}
