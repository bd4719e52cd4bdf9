//! `App::check_draft`: what the channel would make of a draft, without drafting it.

use airlock_app::check::Blocks;
use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{Budget, ChannelSettings, Error, Principal};
use airlock_core::budget::Costs;
use airlock_core::{ChannelKind, Part, Role};
use airlock_platforms::sandbox::Simulate;
use airlock_store::PostFilter;

use crate::support::*;

async fn harness() -> Harness {
    let mut h = Harness::new(|dir| {
        let mut cats = sandbox(dir, "cats", Simulate::Ok, 1);
        cats.settings.policy.forbidden = vec!["guaranteed".into()];
        cats.settings.policy.required = vec!["#ad".into()];
        cats.settings.policy.max_chars = Some(40);
        vec![cats]
    })
    .await;
    // An X channel with a money budget; checking a draft never reaches its platform.
    let mut x = ChannelSettings::new(name("x-main"), ChannelKind::X, 5, tokyo());
    x.budget = Some(Budget {
        monthly: 40_000,
        costs: Costs::X_DEFAULT,
    });
    h.settings = h.settings.clone().with_channel(x);
    h
}

fn kinds(check: &airlock_app::check::DraftCheck) -> Vec<(&str, Blocks, Option<usize>)> {
    check
        .violations
        .iter()
        .map(|v| (v.kind.as_str(), v.blocks, v.part))
        .collect()
}

#[tokio::test]
async fn a_clean_draft_is_accepted_and_approvable_and_nothing_is_written() {
    let h = harness().await;
    let app = h.app();
    let check = app
        .check_draft(&writer("w"), draft("cats", "Cats nap here. #ad"))
        .await
        .unwrap();
    assert!(check.accepted && check.approvable, "{check:?}");
    assert!(check.violations.is_empty());
    assert_eq!(check.lengths.len(), 1);
    assert_eq!(
        (check.lengths[0].length, check.lengths[0].max_chars),
        (18, Some(40))
    );
    assert!(check.lengths[0].fits);
    assert_eq!(check.scheduled_at, Some(h.clock.now()));
    assert_eq!(check.cost, None, "the sandbox has no money budget");
    assert_eq!(check.quota.next_slot_at, None, "a slot is free now");
    assert_eq!((check.quota.daily.used, check.quota.daily.limit), (0, 1));
    assert_eq!(check.pause_reason, None);
    let posts = app
        .list_posts(&Principal::cli(), &PostFilter::default())
        .await
        .unwrap();
    assert!(posts.is_empty(), "a check drafts nothing");
}

/// Phrase rules stop the approval, not the draft: the check says so, and drafting it is
/// accepted.
#[tokio::test]
async fn phrase_rules_stop_approval_not_the_draft() {
    let h = harness().await;
    let app = h.app();
    let input = draft("cats", "A cat is guaranteed!");
    let check = app.check_draft(&writer("w"), input.clone()).await.unwrap();
    assert!(check.accepted, "{check:?}");
    assert!(!check.approvable);
    assert_eq!(
        kinds(&check),
        [
            ("forbidden_phrase", Blocks::Approval, None),
            ("missing_required_phrase", Blocks::Approval, None)
        ]
    );
    assert!(check.violations[1].message.contains("#ad"));
    app.create_post(&writer("w"), input, None, DraftOrigin::default())
        .await
        .expect("drafted all the same");
}

/// Every problem at once, each as drafting would name it: drafting refuses with the
/// first of those that stop the draft.
#[tokio::test]
async fn every_problem_is_listed_and_drafting_refuses_with_the_first() {
    let h = harness().await;
    let app = h.app();
    let input = DraftInput {
        link: Some("ftp://inn.example".into()),
        scheduled_at: Some("next tuesday".into()),
        ..draft("cats", &"guaranteed cats ".repeat(4))
    };
    let check = app.check_draft(&writer("w"), input.clone()).await.unwrap();
    assert!(!check.accepted && !check.approvable);
    assert_eq!(
        kinds(&check),
        [
            ("too_long", Blocks::Draft, None),
            ("invalid_url", Blocks::Draft, None),
            ("forbidden_phrase", Blocks::Approval, None),
            ("missing_required_phrase", Blocks::Approval, None),
            ("invalid_schedule", Blocks::Draft, None),
        ]
    );
    assert_eq!(check.scheduled_at, None);
    assert_eq!(
        (check.lengths[0].length, check.lengths[0].fits),
        (64, false)
    );
    let refused = app
        .create_post(&writer("w"), input, None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert_eq!(refused.to_string(), check.violations[0].message);
}

/// A thread names the part at fault, and the channel counts a part as its platform does.
#[tokio::test]
async fn a_thread_names_the_part_and_x_counts_the_link_it_appends_and_the_cost() {
    let h = harness().await;
    let app = h.app();
    let input = DraftInput {
        text: "Rooms open".into(),
        parts: Some(vec![
            Part {
                text: "Rooms open".into(),
                media: vec![],
            },
            Part {
                text: "猫".repeat(141),
                media: vec![],
            },
        ]),
        link: Some("https://inn.example/rooms".into()),
        ..draft("x-main", "")
    };
    let check = app.check_draft(&writer("w"), input).await.unwrap();
    assert_eq!(kinds(&check), [("too_long", Blocks::Draft, Some(2))]);
    let lengths: Vec<(usize, usize, bool)> = check
        .lengths
        .iter()
        .map(|l| (l.part, l.length, l.fits))
        .collect();
    // Part 1 as X sends it: the text, a line break and the link (23).
    assert_eq!(lengths, [(1, 10 + 1 + 23, true), (2, 282, false)]);
    assert!(check.length_unit.contains("weighted"));
    let cost = check.cost.expect("the X channel has a budget");
    // Part 1 carries a link ($0.20), part 2 does not ($0.015).
    assert!((cost.usd - 0.215).abs() < 1e-9, "{cost:?}");
    assert!((cost.budget.budget_usd - 0.04).abs() < 1e-9);
    assert_eq!(cost.budget.next_free_at, None);
}

/// The next quota slot, a pause, a test post that would never go out, and the caller's
/// drafts limit.
#[tokio::test]
async fn quota_pause_test_posts_and_the_drafts_limit_are_told() {
    let mut h = harness().await;
    h.settings.max_drafts_per_token = 1;
    let app = h.app();
    let post = approved(&app, "cats", "First. #ad").await;
    app.publish_now(&Principal::cli(), post.id).await.unwrap();
    app.pause(&Principal::cli(), Some("cats"), "checking the sandbox")
        .await
        .unwrap();
    app.create_post(
        &writer("w"),
        draft("cats", "A draft. #ad"),
        None,
        DraftOrigin::default(),
    )
    .await
    .unwrap();

    let input = DraftInput {
        test: true,
        ..draft("x-main", "A test.")
    };
    let check = app.check_draft(&writer("w"), input).await.unwrap();
    assert_eq!(
        kinds(&check),
        [
            ("test_post_never_published", Blocks::Publish, None),
            ("draft_limit", Blocks::Draft, None),
        ]
    );
    assert!(check.violations[1].message.contains("max_drafts_per_token"));
    assert!(!check.accepted);

    let check = app
        .check_draft(&Principal::cli(), draft("cats", "Second. #ad"))
        .await
        .unwrap();
    assert!(check.accepted, "the CLI holds no drafts limit: {check:?}");
    assert_eq!(
        (check.quota.daily.used, check.quota.daily.remaining),
        (1, 0)
    );
    let next = check.quota.next_slot_at.expect("the day is used up");
    assert!(next > h.clock.now());
    assert_eq!(check.pause_reason.as_deref(), Some("checking the sandbox"));
}

#[tokio::test]
async fn an_unknown_channel_or_a_caller_who_may_not_draft_is_an_error() {
    let h = harness().await;
    let app = h.app();
    let err = app
        .check_draft(&writer("w"), draft("dogs", "Woof"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m.contains("unknown channel")),
        "{err}"
    );
    let err = app
        .check_draft(&token("c", &[Role::Critic]), draft("cats", "Hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
}

/// A schedule in the past stops the draft, as drafting refuses it, unless asked for.
#[tokio::test]
async fn a_past_schedule_stops_the_draft_unless_asked_for() {
    let h = harness().await;
    let app = h.app();
    let yesterday = airlock_core::time::format_utc(h.clock.now() - chrono::Duration::days(1));
    let input = DraftInput {
        scheduled_at: Some(yesterday),
        ..draft("cats", "Cats nap here. #ad")
    };
    let check = app.check_draft(&writer("w"), input.clone()).await.unwrap();
    assert_eq!(kinds(&check), [("past_schedule", Blocks::Draft, None)]);
    assert!(!check.accepted);
    let refused = app
        .create_post(&writer("w"), input.clone(), None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert_eq!(refused.to_string(), check.violations[0].message);
    let asked = DraftInput {
        allow_past: true,
        ..input
    };
    let check = app.check_draft(&writer("w"), asked).await.unwrap();
    assert!(check.accepted && check.violations.is_empty(), "{check:?}");
}

/// The finding: each check downloaded every media item (up to 200 MB each), writing
/// nothing, so any writer could make airlock fetch without limit or trace, and the
/// compose page re-checked as the operator typed. A check fetches nothing.
#[tokio::test]
async fn a_check_fetches_no_media() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let images = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![0u8; 16]))
        .expect(0)
        .mount(&images)
        .await;
    let mut h = harness().await;
    h.settings.media_fetch_timeout = Some(chrono::Duration::seconds(5));
    let app = h.app();
    let input = DraftInput {
        media: vec![airlock_core::Media::new(
            format!("{}/cat.png", images.uri()),
            Some("a cat".into()),
        )],
        ..draft("cats", "A cat #ad")
    };
    let check = app
        .check_draft(&token("w", &[Role::Writer]), input)
        .await
        .unwrap();
    assert!(check.accepted, "{:?}", check.violations);
    images.verify().await;
}
