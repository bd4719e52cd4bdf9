//! What agents need from drafting and review (issue 27): a draft that breaks the content
//! policy is drafted with its violations told and recorded, a pass the policy refuses is
//! recorded, a critic fails for the policy without a rubric item, a retried pass answers
//! the same, and lists page and show only the caller's posts.

use std::sync::Arc;

use airlock_app::check::Blocks;
use airlock_app::critic::{RubricSource, VerdictEffect, VerdictInput};
use airlock_app::posts::{DraftOrigin, EditInput};
use airlock_app::{Error, Principal};
use airlock_core::review::{Rubric, VerdictKind, rubric_hash};
use airlock_core::{Post, PostId, Role};
use airlock_platforms::sandbox::Simulate;
use airlock_store::PostFilter;

use crate::support::*;

const RUBRIC: &str = "# Cats\n\n- tone: Friendly and calm.\n- claims: Only true claims.\n";

#[derive(Debug)]
struct CatsRubric;

impl RubricSource for CatsRubric {
    fn read(&self) -> Result<Rubric, String> {
        Ok(Rubric::parse(RUBRIC))
    }

    fn origin(&self) -> String {
        "rubrics/cats.md".into()
    }
}

fn critic(name: &str) -> Principal {
    token(name, &[Role::Critic])
}

/// `cats`: a disclosure required, a promise forbidden, `approvals_required` passes.
async fn harness(approvals_required: u32) -> Harness {
    Harness::new(move |dir| {
        let mut cats = sandbox(dir, "cats", Simulate::Ok, 10);
        cats.settings.policy.forbidden = vec!["guaranteed".into()];
        cats.settings.policy.required = vec!["#ad".into()];
        cats.settings.review.rules.approvals_required = approvals_required;
        cats.settings.review.rubric = Arc::new(CatsRubric);
        vec![cats]
    })
    .await
}

fn verdict(post: &Post, kind: VerdictKind, reasons: &[&str]) -> VerdictInput {
    VerdictInput {
        verdict: kind,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        content_hash: Some(post.content_hash.to_string()),
        rubric_hash: Some(rubric_hash(RUBRIC)),
    }
}

async fn events_of(h: &Harness, id: PostId, kind: &str) -> Vec<String> {
    h.app()
        .store()
        .post_detail(id)
        .await
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.note.unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_draft_that_breaks_a_phrase_rule_is_drafted_with_its_violations_told_and_recorded() {
    let h = harness(1).await;
    let app = h.app();
    let input = draft("cats", "A lap cat, guaranteed.");
    let drafted = app
        .create_post(
            &writer("w"),
            input.clone(),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    let kinds: Vec<(&str, Blocks)> = drafted
        .violations
        .iter()
        .map(|v| (v.kind.as_str(), v.blocks))
        .collect();
    assert_eq!(
        kinds,
        [
            ("forbidden_phrase", Blocks::Approval),
            ("missing_required_phrase", Blocks::Approval)
        ]
    );
    let notes = events_of(&h, drafted.post.id, "policy_warning").await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("\"guaranteed\"") && notes[0].contains("\"#ad\""),
        "{}",
        notes[0]
    );
    // The create answer carries them beside the post JSON.
    let json = serde_json::to_value(&drafted).unwrap();
    assert_eq!(json["id"], drafted.post.id.0);
    assert_eq!(json["violations"][0]["kind"], "forbidden_phrase");
    assert!(json.get("existing").is_none());

    // A retry tells them again and records nothing more.
    let again = app
        .create_post(
            &writer("w"),
            input,
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert!(again.existing);
    assert_eq!(again.violations, drafted.violations);
    assert_eq!(
        events_of(&h, drafted.post.id, "policy_warning").await.len(),
        1
    );

    // A draft that keeps the rules records nothing.
    let clean = app
        .create_post(
            &writer("w"),
            draft("cats", "A lap cat. #ad"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert!(clean.violations.is_empty());
    assert!(
        events_of(&h, clean.post.id, "policy_warning")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_pass_the_policy_refuses_is_recorded_on_the_post() {
    let h = harness(1).await;
    let app = h.app();
    let post = app
        .create_post(
            &writer("w"),
            draft("cats", "A lap cat."),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    let refused = app
        .give_verdict(
            &critic("c"),
            post.id,
            verdict(&post, VerdictKind::Pass, &[]),
        )
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Policy(_)), "{refused:?}");
    // A retried pass on the same content is refused again and recorded once.
    let again = app
        .give_verdict(
            &critic("c"),
            post.id,
            verdict(&post, VerdictKind::Pass, &[]),
        )
        .await
        .unwrap_err();
    assert!(matches!(again, Error::Policy(_)), "{again:?}");
    let notes = events_of(&h, post.id, "pass_refused").await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("token:c") && notes[0].contains("\"#ad\""),
        "{}",
        notes[0]
    );
}

#[tokio::test]
async fn a_critic_fails_a_post_for_the_policy_without_naming_a_rubric_item() {
    let h = harness(1).await;
    let app = h.app();
    let post = app
        .create_post(
            &writer("w"),
            draft("cats", "A lap cat."),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    let failed = app
        .give_verdict(
            &critic("c"),
            post.id,
            verdict(
                &post,
                VerdictKind::Fail,
                &["Policy: lacks the #ad disclosure", "tone: fine otherwise"],
            ),
        )
        .await
        .unwrap();
    assert_eq!(failed.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(
        failed.verdict.reasons,
        ["policy: lacks the #ad disclosure", "tone: fine otherwise"]
    );
    // Other reasons must still name an item.
    let err = app
        .give_verdict(
            &critic("d"),
            post.id,
            verdict(&post, VerdictKind::Fail, &["vibes: off"]),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m.contains("policy")),
        "{err}"
    );
}

/// A pass whose answer was lost is given again: the same answer, nothing recorded twice.
#[tokio::test]
async fn a_retried_pass_that_took_effect_answers_the_same_result() {
    for required in [1, 2] {
        let h = harness(required).await;
        let app = h.app();
        let post = app
            .create_post(
                &writer("w"),
                draft("cats", "A lap cat. #ad"),
                None,
                DraftOrigin::default(),
            )
            .await
            .unwrap()
            .post;
        let input = verdict(&post, VerdictKind::Pass, &[]);
        let first = app
            .give_verdict(&critic("c"), post.id, input.clone())
            .await
            .unwrap();
        let again = app
            .give_verdict(&critic("c"), post.id, input.clone())
            .await
            .unwrap_or_else(|e| panic!("approvals_required {required}: {e}"));
        let expected = if required == 1 {
            VerdictEffect::Approved
        } else {
            VerdictEffect::AwaitingApprovals
        };
        assert_eq!(
            (first.effect.clone(), again.effect.clone()),
            (expected.clone(), expected)
        );
        assert_eq!(again.verdict, first.verdict);
        assert_eq!(again.passed_by, first.passed_by);
        assert_eq!(again.post.status, first.post.status);
        assert!(again.message.contains("already"), "{}", again.message);
        assert_eq!(app.store().verdicts(post.id).await.unwrap().len(), 1);

        // Once the content changed, the old hash is a conflict as before.
        if required == 2 {
            app.edit_post(
                &writer("w"),
                post.id,
                EditInput {
                    text: Some("A lap cat, mostly. #ad".into()),
                    ..EditInput::default()
                },
            )
            .await
            .unwrap();
            let stale = app
                .give_verdict(&critic("c"), post.id, input)
                .await
                .unwrap_err();
            assert!(matches!(stale, Error::Conflict(_)), "{stale:?}");
        }
    }
}

#[tokio::test]
async fn a_page_of_the_callers_own_posts_says_where_the_next_starts() {
    let h = harness(1).await;
    let app = h.app();
    let mut mine = Vec::new();
    for n in 0..5 {
        let who = if n % 2 == 0 { writer("w") } else { writer("v") };
        let post = app
            .create_post(
                &who,
                draft("cats", &format!("Cat number {n}. #ad")),
                None,
                DraftOrigin::default(),
            )
            .await
            .unwrap()
            .post;
        if n % 2 == 0 {
            mine.push(post.id);
        }
    }
    mine.reverse();
    let filter = PostFilter {
        created_by: Some("token:w".into()),
        limit: Some(2),
        ..PostFilter::default()
    };
    let first = app.list_post_page(&writer("w"), &filter).await.unwrap();
    let ids: Vec<PostId> = first.posts.iter().map(|p| p.post.id).collect();
    assert_eq!(ids, mine[..2]);
    assert_eq!(first.next, Some(mine[1]));
    let second = app
        .list_post_page(
            &writer("w"),
            &PostFilter {
                before: first.next,
                ..filter.clone()
            },
        )
        .await
        .unwrap();
    let ids: Vec<PostId> = second.posts.iter().map(|p| p.post.id).collect();
    assert_eq!(ids, mine[2..]);
    assert_eq!(second.next, None, "the last page says there is no more");
}

/// The channel list carries what a writer needs before drafting: the content policy, the
/// media rules, the review settings with the rubric as it reads now, and the budget.
#[tokio::test]
async fn each_channel_carries_its_policy_media_rules_review_settings_and_budget() {
    let mut h = harness(2).await;
    let mut x =
        airlock_app::ChannelSettings::new(name("x-main"), airlock_core::ChannelKind::X, 5, tokyo());
    x.budget = Some(airlock_app::Budget {
        monthly: 5_000_000,
        costs: airlock_core::budget::Costs::X_DEFAULT,
    });
    h.settings = h.settings.clone().with_channel(x);
    let app = h.app();
    let channels = app.channel_statuses(&writer("w")).await.unwrap();
    let cats = channels.iter().find(|c| c.name.as_str() == "cats").unwrap();
    assert_eq!(cats.policy.forbidden, ["guaranteed"]);
    assert_eq!(cats.policy.required, ["#ad"]);
    assert_eq!(cats.review.approvals_required, 2);
    assert_eq!(cats.review.rubric_origin, "rubrics/cats.md");
    assert_eq!(
        cats.review.rubric_hash.as_deref(),
        Some(rubric_hash(RUBRIC).as_str())
    );
    assert_eq!(cats.review.rubric_items, ["tone", "claims"]);
    assert_eq!(cats.budget, None);
    let x = channels
        .iter()
        .find(|c| c.name.as_str() == "x-main")
        .unwrap();
    assert_eq!(x.policy.max_chars, Some(280));
    assert!(x.policy.length_unit.contains("weighted"));
    assert_eq!(x.media.video, "none", "X takes images only through airlock");
    assert!(x.media.image_types.contains(&"image/png".to_owned()));
    let budget = x.budget.as_ref().expect("a budget");
    assert_eq!((budget.post_usd, budget.url_post_usd), (0.015, 0.2));
    assert_eq!(budget.spend.remaining_usd, 5.0);

    // As JSON, every earlier field stays where it was.
    let json = serde_json::to_value(cats).unwrap();
    for key in [
        "name",
        "kind",
        "account",
        "paused",
        "pause_reason",
        "daily_used",
        "daily_limit",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert_eq!(json["policy"]["required"][0], "#ad");
    assert_eq!(json["review"]["duplicate_window"], "7d");
    assert!(json.get("budget").is_none());
}
