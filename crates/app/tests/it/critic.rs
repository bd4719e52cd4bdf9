//! The critic's workflow (issue 16) over a real SQLite store: verdicts bound to the
//! rubric and content hashes, the revision cap and quarantine, more than one approver,
//! duplicates refused at draft time, and approvals bound to the hash the critic read.

use std::sync::{Arc, Mutex};

use airlock_app::critic::{RubricSource, VerdictEffect, VerdictInput};
use airlock_app::posts::{DraftOrigin, EditInput, EditOptions};
use airlock_app::{App, Error, Principal};
use airlock_core::review::{Rubric, VerdictKind, rubric_hash};
use airlock_core::{Post, PostId, PostStatus, Role};
use airlock_platforms::sandbox::Simulate;

use crate::support::*;

const RUBRIC_A: &str = "# Cats rubric\n\n- tone: Friendly and calm.\n- claims: Only true claims.\n";
const RUBRIC_B: &str = "# Cats rubric, second edition\n\n- tone: Friendly and calm.\n- claims: Only true claims.\n- cats: Respect the cats' own pace.\n";

/// A rubric kept in memory that a test can rewrite, as a person edits the file.
#[derive(Debug, Clone)]
struct EditableRubric(Arc<Mutex<String>>);

impl EditableRubric {
    fn new(text: &str) -> Self {
        EditableRubric(Arc::new(Mutex::new(text.to_owned())))
    }

    fn set(&self, text: &str) {
        *self.0.lock().unwrap() = text.to_owned();
    }
}

impl RubricSource for EditableRubric {
    fn read(&self) -> Result<Rubric, String> {
        Ok(Rubric::parse(&self.0.lock().unwrap()))
    }

    fn origin(&self) -> String {
        "rubrics/cats.md (in memory)".into()
    }
}

fn critic(name: &str) -> Principal {
    token(name, &[Role::Critic])
}

/// A sandbox channel `cats` with the given review rules and rubric.
async fn harness(approvals_required: u32, max_revisions: u32, rubric: &EditableRubric) -> Harness {
    let rubric = rubric.clone();
    Harness::new(move |dir| {
        let mut channel = sandbox(dir, "cats", Simulate::Ok, 10);
        channel.settings.review.rules.approvals_required = approvals_required;
        channel.settings.review.rules.max_revisions = max_revisions;
        channel.settings.review.rubric = Arc::new(rubric);
        vec![channel]
    })
    .await
}

async fn drafted(app: &App, who: &Principal, text: &str) -> Post {
    app.create_post(who, draft("cats", text), None, DraftOrigin::default())
        .await
        .unwrap()
        .post
}

fn pass(post: &Post, rubric: &str) -> VerdictInput {
    VerdictInput {
        verdict: VerdictKind::Pass,
        reasons: Vec::new(),
        content_hash: Some(post.content_hash.to_string()),
        rubric_hash: Some(rubric_hash(rubric)),
    }
}

fn fail(post: &Post, rubric: &str, reasons: &[&str]) -> VerdictInput {
    VerdictInput {
        verdict: VerdictKind::Fail,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        content_hash: Some(post.content_hash.to_string()),
        rubric_hash: Some(rubric_hash(rubric)),
    }
}

/// A draft by `w` that critic `a` passed (approved, with one required approval).
async fn passed_by_a(app: &App, text: &str) -> Post {
    let post = drafted(app, &writer("w"), text).await;
    app.give_verdict(&critic("a"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap()
        .post
}

async fn edit(app: &App, who: &Principal, id: PostId, text: &str) -> Post {
    app.edit_post(
        who,
        id,
        EditInput {
            text: Some(text.into()),
            ..EditInput::default()
        },
    )
    .await
    .unwrap()
}

/// A fail with as many reasons as a verdict may carry, each as long as a reason may be
/// (characters of several bytes), is valid: it is recorded whole in the verdicts, and the
/// summaries that go into the post's `error` and the timeline's notes are cut to their
/// caps on a character boundary, ending with an ellipsis, instead of refusing it. This
/// holds for a reject, for the fail that quarantines, and for a fail on an approved post
/// (the status event's note).
#[tokio::test]
async fn a_fail_with_the_most_and_longest_reasons_is_recorded_whole_and_its_summaries_cut() {
    use airlock_core::limits::{MAX_ERROR_CHARS, MAX_EVENT_NOTE_CHARS, MAX_REASON_CHARS};
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let reasons: Vec<String> = (0..20)
        .map(|i| {
            let head = format!("tone: {i:02} ");
            let fill = MAX_REASON_CHARS - head.chars().count();
            format!("{head}{}", "猫".repeat(fill))
        })
        .collect();
    let reason_refs: Vec<&str> = reasons.iter().map(String::as_str).collect();
    let check_cut = |text: &str, max: usize| {
        assert!(
            text.chars().count() <= max,
            "{} > {max}",
            text.chars().count()
        );
        assert!(text.ends_with('…'), "cut with an ellipsis: {text:.40}");
    };

    // An approved post: the fail moves it back to draft, its note on the status event.
    let post = drafted(&app, &writer("w"), "The cats nap in the sun.").await;
    app.approve(&critic("a"), post.id).await.unwrap();
    let post = app.store().get_post(post.id).await.unwrap();
    let first = app
        .give_verdict(&critic("b"), post.id, fail(&post, RUBRIC_A, &reason_refs))
        .await
        .unwrap();
    assert_eq!(first.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(first.post.status, PostStatus::Draft);
    check_cut(first.post.error.as_deref().unwrap(), MAX_ERROR_CHARS);
    // After a revision (one failed review counts per content), the fail that reaches
    // max_revisions quarantines, its note on a quarantined event.
    let revised = edit(&app, &writer("w"), post.id, "The cats nap in the shade.").await;
    let second = app
        .give_verdict(
            &critic("b"),
            post.id,
            fail(&revised, RUBRIC_A, &reason_refs),
        )
        .await
        .unwrap();
    assert_eq!(second.effect, VerdictEffect::Quarantined);
    check_cut(second.post.error.as_deref().unwrap(), MAX_ERROR_CHARS);

    let detail = app.get_post(&critic("b"), post.id).await.unwrap();
    let fails: Vec<_> = detail
        .verdicts
        .iter()
        .filter(|v| v.verdict == VerdictKind::Fail)
        .collect();
    assert_eq!(fails.len(), 2);
    for verdict in fails {
        assert_eq!(verdict.reasons, reasons, "the verdict is recorded whole");
    }
    let notes: Vec<&str> = detail
        .events
        .iter()
        .filter(|e| e.at >= first.verdict.at)
        .filter_map(|e| e.note.as_deref())
        .filter(|n| n.contains("tone: 00"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    for note in notes {
        check_cut(note, MAX_EVENT_NOTE_CHARS);
    }
}

#[tokio::test]
async fn a_verdict_records_the_rubric_hash_it_was_given_under_and_an_edited_rubric_applies_at_once()
{
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(2, 2, &rubric).await;
    let app = h.app();
    let post = drafted(&app, &writer("w"), "The cats nap in the sun.").await;

    let first = app
        .give_verdict(&critic("a"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(first.verdict.rubric_hash, rubric_hash(RUBRIC_A));
    assert_eq!(first.effect, VerdictEffect::AwaitingApprovals);

    // A person edits the rubric file; no restart.
    rubric.set(RUBRIC_B);
    let stale = app
        .give_verdict(&critic("b"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap_err();
    assert!(
        matches!(&stale, Error::Conflict(m) if m.contains("rubric of channel cats changed")),
        "{stale:?}"
    );
    let packet = app.review_packet(&critic("b"), post.id).await.unwrap();
    assert_eq!(packet.rubric.hash, rubric_hash(RUBRIC_B));
    assert!(packet.rubric.items.iter().any(|i| i.id == "cats"));
    let second = app
        .give_verdict(&critic("b"), post.id, pass(&post, RUBRIC_B))
        .await
        .unwrap();
    assert_eq!(second.verdict.rubric_hash, rubric_hash(RUBRIC_B));
    assert_eq!(second.effect, VerdictEffect::Approved);

    let detail = app.get_post(&critic("b"), post.id).await.unwrap();
    let hashes: Vec<&str> = detail
        .verdicts
        .iter()
        .map(|v| v.rubric_hash.as_str())
        .collect();
    assert_eq!(hashes, [rubric_hash(RUBRIC_A), rubric_hash(RUBRIC_B)]);
}

#[tokio::test]
async fn two_fails_quarantine_a_draft_and_every_further_try_is_refused_until_an_operator_releases_it()
 {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let (w, c) = (writer("w"), critic("c"));
    let post = drafted(&app, &w, "Guaranteed: the cats will sit on your lap.").await;

    let first = app
        .give_verdict(
            &c,
            post.id,
            fail(&post, RUBRIC_A, &["claims: nobody can guarantee a cat"]),
        )
        .await
        .unwrap();
    assert_eq!(first.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(first.revisions, 1);
    // The writer reads the reasons back.
    let seen = app.get_post(&w, post.id).await.unwrap();
    assert!(
        seen.post
            .error
            .as_deref()
            .unwrap()
            .contains("claims: nobody can guarantee a cat"),
        "{:?}",
        seen.post.error
    );
    assert_eq!(
        seen.verdicts[0].reasons,
        ["claims: nobody can guarantee a cat"]
    );

    let revised = edit(&app, &w, post.id, "The cats may sit on your lap, or not!").await;
    let packet = app.review_packet(&c, post.id).await.unwrap();
    let change = packet.changes_since_last_verdict.unwrap();
    assert_eq!(change.change.fields, ["text"]);
    assert_eq!(
        change.change.text_diff,
        [
            "- Guaranteed: the cats will sit on your lap.",
            "+ The cats may sit on your lap, or not!"
        ]
    );
    let second = app
        .give_verdict(
            &c,
            post.id,
            fail(
                &revised,
                RUBRIC_A,
                &["tone: the exclamation reads as pushy"],
            ),
        )
        .await
        .unwrap();
    assert_eq!(second.effect, VerdictEffect::Quarantined);
    assert!(
        second.message.contains("airlock post release"),
        "{}",
        second.message
    );
    let quarantined = second.post;
    assert_eq!(quarantined.status, PostStatus::Draft);
    assert!(quarantined.quarantined_at.is_some());

    // The third try, in every shape, is refused and says why.
    let refusals = [
        app.edit_post(
            &w,
            post.id,
            EditInput {
                text: Some("A third try.".into()),
                ..EditInput::default()
            },
        )
        .await
        .map(|_| ()),
        app.give_verdict(&c, post.id, pass(&quarantined, RUBRIC_A))
            .await
            .map(|_| ()),
        app.approve(&c, post.id).await.map(|_| ()),
        // Another critic's fail (the same critic's would repeat its quarantining fail).
        app.reject(&critic("d"), post.id, "tone: still pushy")
            .await
            .map(|_| ()),
        app.approve(&Principal::cli(), post.id).await.map(|_| ()),
        app.publish_now(&Principal::cli(), post.id)
            .await
            .map(|_| ()),
        app.discard(&w, post.id).await,
    ];
    for refusal in refusals {
        let err = refusal.unwrap_err();
        assert!(
            matches!(&err, Error::Quarantined(m) if m.contains("quarantined") && m.contains(&format!("post {}", post.id))),
            "{err:?}"
        );
        assert_eq!(err.code(), "quarantined");
        assert!(err.is_refusal());
    }
    assert!(
        app.review_packet(&c, post.id)
            .await
            .unwrap()
            .verdict_refused
            .unwrap()
            .contains("quarantined")
    );
    // Only an operator releases it.
    assert!(matches!(
        app.release(&c, post.id).await,
        Err(Error::Forbidden(_))
    ));
    let released = app.release(&Principal::cli(), post.id).await.unwrap();
    assert_eq!(released.status, PostStatus::Draft);
    assert_eq!(released.quarantined_at, None);
    assert_eq!(released.revisions, 0);
    assert!(matches!(
        app.release(&Principal::cli(), post.id).await,
        Err(Error::IllegalTransition(_))
    ));
    // A draft again: the writer revises, a critic passes.
    let fixed = edit(&app, &w, post.id, "The cats choose whose lap to sit on.").await;
    let approved = app
        .give_verdict(&c, post.id, pass(&fixed, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(approved.post.status, PostStatus::Approved);
    let kinds: Vec<String> = app
        .get_post(&c, post.id)
        .await
        .unwrap()
        .events
        .iter()
        .map(|e| e.kind.clone())
        .collect();
    for kind in ["rejected", "quarantined", "released"] {
        assert!(kinds.iter().any(|k| k == kind), "{kinds:?}");
    }
}

#[tokio::test]
async fn an_operator_may_discard_a_quarantined_post() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 1, &rubric).await;
    let app = h.app();
    let post = drafted(&app, &writer("w"), "Cats, cats, cats.").await;
    let result = app
        .give_verdict(
            &critic("c"),
            post.id,
            fail(&post, RUBRIC_A, &["tone: flat"]),
        )
        .await
        .unwrap();
    assert_eq!(result.effect, VerdictEffect::Quarantined);
    app.discard(&Principal::cli(), post.id).await.unwrap();
    assert!(matches!(
        app.get_post(&Principal::cli(), post.id).await,
        Err(Error::NotFound(_))
    ));
    // Its verdicts stay in the ledger, like its events.
    assert_eq!(app.store().verdicts(post.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_fail_of_an_approved_post_returns_it_to_draft_and_can_quarantine_it() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 1, &rubric).await;
    let app = h.app();
    let approved = passed_by_a(&app, "The inn opens at eight.").await;
    let post = &approved;
    assert_eq!(approved.status, PostStatus::Approved);
    let failed = app
        .give_verdict(
            &critic("b"),
            post.id,
            fail(&approved, RUBRIC_A, &["claims: it opens at nine"]),
        )
        .await
        .unwrap();
    assert_eq!(failed.effect, VerdictEffect::Quarantined);
    assert_eq!(failed.post.status, PostStatus::Draft);
    assert_eq!(failed.post.approved_hash, None);
    assert!(failed.post.quarantined_at.is_some());
}

#[tokio::test]
async fn a_channel_with_two_required_approvals_publishes_only_after_two_critics_pass_the_same_text()
{
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(2, 2, &rubric).await;
    let app = h.app();
    let w = writer("w");
    let (a, b) = (critic("a"), critic("b"));
    let post = drafted(&app, &w, "Breakfast is served at eight.").await;

    let one = app
        .give_verdict(&a, post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(one.effect, VerdictEffect::AwaitingApprovals);
    assert_eq!(one.post.status, PostStatus::Draft);
    assert_eq!(one.passed_by, ["token:a"]);
    assert!(app.publish_next(None).await.unwrap().is_none());

    // The same critic twice does not count: a pass bound to the hash it read answers as
    // the first did (a retry), one without a hash is refused.
    let again = app
        .give_verdict(&a, post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(again.effect, VerdictEffect::AwaitingApprovals);
    assert_eq!(again.verdict, one.verdict);
    assert!(
        again.message.contains("already recorded"),
        "{}",
        again.message
    );
    assert!(matches!(
        app.approve(&a, post.id).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
    assert_eq!(app.store().verdicts(post.id).await.unwrap().len(), 1);

    // An edit voids the first pass.
    let edited = edit(&app, &w, post.id, "Breakfast is served from eight.").await;
    let after_edit = app
        .give_verdict(&b, post.id, pass(&edited, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(after_edit.effect, VerdictEffect::AwaitingApprovals);
    assert_eq!(after_edit.passed_by, ["token:b"]);
    let packet = app.review_packet(&a, post.id).await.unwrap();
    assert_eq!(packet.approvals.passed_by, ["token:b"]);
    assert_eq!(packet.approvals.needed, 1);
    assert!(packet.verdict_allowed);

    let two = app
        .give_verdict(&a, post.id, pass(&edited, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(two.effect, VerdictEffect::Approved);
    assert_eq!(two.post.approved_hash, Some(edited.content_hash.clone()));
    assert_eq!(two.post.approved_by.as_deref(), Some("token:b, token:a"));
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.id, post.id);
    assert_eq!(status(&app, post.id).await, PostStatus::Posted);
    assert_eq!(sandbox_lines(&h.path("cats.jsonl"), post.id), 1);
}

#[tokio::test]
async fn a_withdrawn_approval_voids_its_passes() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(2, 2, &rubric).await;
    let app = h.app();
    let post = drafted(&app, &writer("w"), "Tea at four.").await;
    app.give_verdict(&critic("a"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    app.give_verdict(&critic("b"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    app.unapprove(&critic("b"), post.id).await.unwrap();
    let again = app
        .give_verdict(&critic("a"), post.id, pass(&post, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(again.effect, VerdictEffect::AwaitingApprovals);
}

#[tokio::test]
async fn an_approval_lands_only_on_the_content_hash_the_critic_read() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let w = writer("w");
    let c = critic("c");
    let read = drafted(&app, &w, "Harmless: the cats nap.").await;
    // The writer edits after the critic read it and before the critic approves.
    edit(&app, &w, read.id, "Not what the critic read.").await;
    for attempt in [
        app.approve_hash(&c, read.id, Some(read.content_hash.to_string()))
            .await
            .map(|_| ()),
        app.give_verdict(&c, read.id, pass(&read, RUBRIC_A))
            .await
            .map(|_| ()),
        app.reject_hash(
            &c,
            read.id,
            "tone: fine",
            Some(read.content_hash.to_string()),
        )
        .await
        .map(|_| ()),
    ] {
        let err = attempt.unwrap_err();
        assert!(
            matches!(&err, Error::Conflict(m) if m.contains("changed since it was reviewed")),
            "{err:?}"
        );
    }
    let post = app.store().get_post(read.id).await.unwrap();
    assert_eq!(post.status, PostStatus::Draft);
    assert!(app.store().verdicts(read.id).await.unwrap().is_empty());
    // A hash that is not one is refused as input.
    assert!(matches!(
        app.approve_hash(&c, read.id, Some("abc".into())).await,
        Err(Error::Invalid(_))
    ));
    // The hash as it is now approves.
    let approved = app
        .approve_hash(
            &c,
            read.id,
            Some(post.content_hash.to_string().to_uppercase()),
        )
        .await
        .unwrap();
    assert_eq!(approved.status, PostStatus::Approved);
}

#[tokio::test]
async fn fail_reasons_name_rubric_items_and_reject_keeps_its_free_text_reason() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 3, &rubric).await;
    let app = h.app();
    let c = critic("c");
    let post = drafted(&app, &writer("w"), "Cats!").await;
    let err = app
        .give_verdict(&c, post.id, fail(&post, RUBRIC_A, &["too short"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m.contains("names no rubric item") && m.contains("tone, claims")),
        "{err:?}"
    );
    assert!(matches!(
        app.give_verdict(&c, post.id, fail(&post, RUBRIC_A, &[]))
            .await,
        Err(Error::Invalid(_))
    ));
    let rejected = app.reject(&c, post.id, "too short").await.unwrap();
    assert!(rejected.error.unwrap().contains("too short"));
    let verdicts = app.store().verdicts(post.id).await.unwrap();
    assert_eq!(verdicts[0].reasons, ["too short"]);
    assert_eq!(verdicts[0].verdict, VerdictKind::Fail);
}

#[tokio::test]
async fn the_review_packet_gives_a_critic_everything_in_one_read() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = Harness::new(|dir| {
        let mut channel = sandbox(dir, "cats", Simulate::Ok, 7);
        channel.settings.policy.max_chars = Some(200);
        channel.settings.policy.required = vec!["Please respect the cats' own pace.".into()];
        channel.settings.review.rules.approvals_required = 2;
        channel.settings.review.rubric = Arc::new(rubric.clone());
        vec![channel]
    })
    .await;
    let app = h.app();
    let w = token("w", &[Role::Writer, Role::Critic]);
    let post = drafted(&app, &w, "The cats nap.").await;
    let packet = app.review_packet(&critic("c"), post.id).await.unwrap();
    assert_eq!(packet.content_hash, post.content_hash);
    assert_eq!(packet.post.id, post.id);
    assert_eq!(packet.channel.name, "cats");
    assert_eq!(packet.channel.daily_limit, 7);
    assert_eq!(packet.channel.policy.rules.max_chars, Some(200));
    assert_eq!(packet.channel.approvals_required, 2);
    assert_eq!(packet.channel.max_revisions, 2);
    assert_eq!(
        packet.channel.policy.violations.len(),
        1,
        "{:?}",
        packet.channel.policy.violations
    );
    assert_eq!(packet.rubric.text, RUBRIC_A);
    assert_eq!(packet.rubric.hash, rubric_hash(RUBRIC_A));
    assert_eq!(packet.rubric.origin, "rubrics/cats.md (in memory)");
    assert_eq!(packet.approvals.needed, 2);
    assert_eq!(packet.revisions.left, 2);
    assert!(packet.verdicts.is_empty());
    assert!(packet.changes_since_last_verdict.is_none());
    assert!(packet.verdict_allowed);
    assert!(packet.instructions.contains("submit_verdict"));
    // Its author may not pass it, and is told so before trying.
    let own = app.review_packet(&w, post.id).await.unwrap();
    assert!(!own.verdict_allowed);
    assert!(
        own.verdict_refused
            .unwrap()
            .contains("separation of duties")
    );
    // A writer reads it too, but may not give a verdict.
    let writer_view = app.review_packet(&writer("x"), post.id).await.unwrap();
    assert!(writer_view.verdict_refused.unwrap().contains("critic role"));
    // JSON, as every front end sends it.
    let json = serde_json::to_value(&packet).unwrap();
    for key in [
        "instructions",
        "post",
        "content_hash",
        "channel",
        "rubric",
        "verdicts",
        "approvals",
        "revisions",
        "changes_since_last_verdict",
        "verdict_allowed",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
}

#[tokio::test]
async fn a_duplicate_draft_is_refused_naming_the_earlier_post() {
    let h = Harness::new(|dir| {
        vec![
            sandbox(dir, "cats", Simulate::Ok, 10),
            sandbox(dir, "dogs", Simulate::Ok, 10),
        ]
    })
    .await;
    let app = h.app();
    let w = writer("w");
    let first = approved(&app, "cats", "Tea is served at four.").await;

    let err = app
        .create_post(
            &w,
            draft("cats", "  tea IS served\nat four. "),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate(m) if m.contains(&format!("post {}", first.id)) && m.contains("approved")),
        "{err:?}"
    );
    assert_eq!(err.code(), "duplicate");
    assert!(err.is_refusal());

    // Another channel, another text, or a plain draft (not yet queued) is no duplicate.
    for (channel, text) in [("dogs", "Tea is served at four."), ("cats", "Tea at five.")] {
        app.create_post(&w, draft(channel, text), None, DraftOrigin::default())
            .await
            .unwrap();
    }
    app.create_post(
        &w,
        draft("cats", "Tea at five."),
        None,
        DraftOrigin::default(),
    )
    .await
    .unwrap();

    // Outside the window it is no duplicate: a week later, the same text may go out again.
    let later = airlock_app::posts::DraftInput {
        scheduled_at: Some(airlock_core::time::format_utc(
            h.clock.now() + chrono::Duration::days(8),
        )),
        ..draft("cats", "Tea is served at four.")
    };
    app.create_post(&w, later, None, DraftOrigin::default())
        .await
        .unwrap();

    // Only an operator drafts a duplicate on purpose.
    let on_purpose = DraftOrigin {
        allow_duplicate: true,
        ..DraftOrigin::default()
    };
    assert!(matches!(
        app.create_post(
            &w,
            draft("cats", "Tea is served at four."),
            None,
            on_purpose.clone()
        )
        .await,
        Err(Error::Forbidden(_))
    ));
    app.create_post(
        &Principal::cli(),
        draft("cats", "Tea is served at four."),
        None,
        on_purpose,
    )
    .await
    .unwrap();
}

/// Editing a draft so that its text becomes that of a queued post on its channel is
/// refused as drafting it would be, naming the earlier post, and changes nothing; only an
/// operator may do it on purpose.
#[tokio::test]
async fn an_edit_into_a_queued_text_is_refused_naming_the_earlier_post() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let w = writer("w");
    let first = approved(&app, "cats", "Tea is served at four.").await;
    let other = drafted(&app, &w, "Coffee at five.").await;
    let into_duplicate = || EditInput {
        text: Some("tea is served  AT four.".into()),
        ..EditInput::default()
    };

    let err = app
        .edit_post(&w, other.id, into_duplicate())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate(m) if m.contains(&format!("post {}", first.id)) && m.contains("approved")),
        "{err:?}"
    );
    assert_eq!(err.code(), "duplicate");
    assert!(err.is_refusal());
    let unchanged = app.get_post(&w, other.id).await.unwrap().post;
    assert_eq!(unchanged, other, "a refused edit changes nothing");

    // Only an operator edits into a duplicate on purpose.
    let on_purpose = EditOptions {
        allow_duplicate: true,
    };
    assert!(matches!(
        app.edit_post_with(&w, other.id, into_duplicate(), on_purpose.clone())
            .await,
        Err(Error::Forbidden(_))
    ));
    let edited = app
        .edit_post_with(&Principal::cli(), other.id, into_duplicate(), on_purpose)
        .await
        .unwrap();
    assert_eq!(edited.content.text, "tea is served  AT four.");
}

#[tokio::test]
async fn a_retried_draft_with_its_idempotency_key_returns_the_first_post_not_a_duplicate() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let w = writer("w");
    let first = app
        .create_post(
            &w,
            draft("cats", "Dinner at seven."),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    app.approve(&critic("c"), first.id).await.unwrap();
    let again = app
        .create_post(
            &w,
            draft("cats", "Dinner at seven."),
            Some("k1".into()),
            DraftOrigin::default(),
        )
        .await
        .unwrap();
    assert!(again.existing);
    assert_eq!(again.post.id, first.id);
}

#[tokio::test]
async fn a_quarantined_post_counts_as_a_duplicate_so_redrafting_it_does_not_escape_review() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 1, &rubric).await;
    let app = h.app();
    let w = writer("w");
    let post = drafted(&app, &w, "Cats love baths.").await;
    app.give_verdict(
        &critic("c"),
        post.id,
        fail(&post, RUBRIC_A, &["claims: they do not"]),
    )
    .await
    .unwrap();
    let err = app
        .create_post(
            &w,
            draft("cats", "Cats love baths."),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate(m) if m.contains("quarantined")),
        "{err:?}"
    );
    // Whatever the duplicate window: a week later, or a year, it is still the same text.
    for days in [8, 400] {
        let later = airlock_app::posts::DraftInput {
            scheduled_at: Some(airlock_core::time::format_utc(
                h.clock.now() + chrono::Duration::days(days),
            )),
            ..draft("cats", "Cats love baths.")
        };
        let err = app
            .create_post(&w, later, None, DraftOrigin::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Duplicate(m) if m.contains(&format!("post {}", post.id))),
            "{days} days: {err:?}"
        );
    }
}

#[tokio::test]
async fn the_store_itself_refuses_approving_or_changing_a_quarantined_post() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 1, &rubric).await;
    let app = h.app();
    let post = drafted(&app, &writer("w"), "Cats fly.").await;
    app.give_verdict(
        &critic("c"),
        post.id,
        fail(&post, RUBRIC_A, &["claims: no"]),
    )
    .await
    .unwrap();
    let id = post.id.0;
    for statement in [
        format!("UPDATE posts SET status = 'approved' WHERE id = {id}"),
        format!("UPDATE posts SET text = 'Cats swim.' WHERE id = {id}"),
    ] {
        let err = h.sql(&statement).await.unwrap_err();
        assert!(err.to_string().contains("quarantine"), "{statement}: {err}");
    }
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
}

#[tokio::test]
async fn a_retried_fail_changes_nothing_and_another_critics_fail_on_unchanged_content_counts_no_revision()
 {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let (w, c, d) = (writer("w"), critic("c"), critic("d"));
    let post = drafted(&app, &w, "Guaranteed: every cat purrs.").await;
    let reasons = ["claims: not every cat purrs"];

    let first = app
        .give_verdict(&c, post.id, fail(&post, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(first.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(first.revisions, 1);
    let events = app.get_post(&w, post.id).await.unwrap().events.len();

    // The critic's reply was lost and it retries the identical fail: the earlier answer,
    // and nothing changes.
    let retry = app
        .give_verdict(&c, post.id, fail(&post, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(retry.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(retry.verdict.id, first.verdict.id);
    assert_eq!(retry.revisions, 1);
    assert_eq!(retry.post.version, first.post.version);
    assert!(retry.post.quarantined_at.is_none());
    let detail = app.get_post(&w, post.id).await.unwrap();
    assert_eq!(detail.verdicts.len(), 1);
    assert_eq!(detail.events.len(), events);
    // The same through reject (the legacy shape).
    let again = app
        .reject_hash(&c, post.id, "claims: not every cat purrs", None)
        .await
        .unwrap();
    assert_eq!(again.version, first.post.version);
    assert_eq!(again.revisions, 1);

    // A second critic fails the same content: its verdict is recorded, but the writer
    // has not revised yet, so no second revision counts.
    let second = app
        .give_verdict(&d, post.id, fail(&post, RUBRIC_A, &["tone: too sure"]))
        .await
        .unwrap();
    assert_eq!(second.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(second.revisions, 1);
    assert_ne!(second.verdict.id, first.verdict.id);
    assert_eq!(app.store().verdicts(post.id).await.unwrap().len(), 2);

    // The writer revises; the next fail counts and quarantines.
    let revised = edit(&app, &w, post.id, "Guaranteed: most cats purr.").await;
    let third = app
        .give_verdict(&c, post.id, fail(&revised, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(third.effect, VerdictEffect::Quarantined);
    assert_eq!(third.revisions, 2);
    // Its retry answers the same, rather than a refusal.
    let retried = app
        .give_verdict(&c, post.id, fail(&revised, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(retried.effect, VerdictEffect::Quarantined);
    assert_eq!(retried.verdict.id, third.verdict.id);
    assert_eq!(retried.post.version, third.post.version);
    assert_eq!(app.store().verdicts(post.id).await.unwrap().len(), 3);
}

#[tokio::test]
async fn only_an_operator_discards_a_draft_that_failed_review_so_the_cap_is_not_escaped() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let w = writer("w");
    let fresh = drafted(&app, &w, "The cats nap at noon.").await;
    app.discard(&w, fresh.id).await.unwrap();

    let post = drafted(&app, &w, "Cats love baths.").await;
    app.give_verdict(
        &critic("c"),
        post.id,
        fail(&post, RUBRIC_A, &["claims: they do not"]),
    )
    .await
    .unwrap();
    let err = app.discard(&w, post.id).await.unwrap_err();
    assert!(
        matches!(&err, Error::Forbidden(m) if m.contains("operator") && m.contains("failed review")),
        "{err:?}"
    );
    assert_eq!(err.code(), "forbidden");
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
    app.discard(&Principal::cli(), post.id).await.unwrap();
}

#[tokio::test]
async fn the_same_text_is_not_approved_twice_nor_moved_into_the_duplicate_window() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let (w, c) = (writer("w"), critic("c"));
    // Two plain drafts of one text: neither is compared when drafted.
    let first = drafted(&app, &w, "Tea is served at four.").await;
    let second = drafted(&app, &w, "tea is served  at FOUR.").await;
    app.give_verdict(&c, first.id, pass(&first, RUBRIC_A))
        .await
        .unwrap();
    let refusals = [
        app.give_verdict(&c, second.id, pass(&second, RUBRIC_A))
            .await
            .map(|_| ()),
        app.approve(&c, second.id).await.map(|_| ()),
    ];
    for refusal in refusals {
        let err = refusal.unwrap_err();
        assert!(
            matches!(&err, Error::Duplicate(m) if m.contains(&format!("post {}", first.id))),
            "{err:?}"
        );
        assert_eq!(err.code(), "duplicate");
    }
    assert_eq!(status(&app, second.id).await, PostStatus::Draft);
    assert!(app.store().verdicts(second.id).await.unwrap().is_empty());

    // Drafted a week and a day out (outside the window), then moved to now.
    let later = airlock_app::posts::DraftInput {
        scheduled_at: Some(airlock_core::time::format_utc(
            h.clock.now() + chrono::Duration::days(8),
        )),
        ..draft("cats", "Tea is served at four.")
    };
    let later = app
        .create_post(&w, later, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let err = app
        .edit_post(
            &w,
            later.id,
            EditInput {
                scheduled_at: Some("now".into()),
                ..EditInput::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Duplicate(m) if m.contains(&format!("post {}", first.id))),
        "{err:?}"
    );
    assert_eq!(
        app.store().get_post(later.id).await.unwrap().scheduled_at,
        later.scheduled_at
    );

    // An operator's duplicate on purpose is still approved.
    let on_purpose = app
        .create_post(
            &Principal::cli(),
            draft("cats", "Tea is served at four."),
            None,
            DraftOrigin {
                allow_duplicate: true,
                ..DraftOrigin::default()
            },
        )
        .await
        .unwrap()
        .post;
    let approved = app
        .give_verdict(&c, on_purpose.id, pass(&on_purpose, RUBRIC_A))
        .await
        .unwrap();
    assert_eq!(approved.effect, VerdictEffect::Approved);
}

#[tokio::test]
async fn a_retried_fail_of_an_approved_post_is_a_repeat_too() {
    let rubric = EditableRubric::new(RUBRIC_A);
    let h = harness(1, 2, &rubric).await;
    let app = h.app();
    let approved = passed_by_a(&app, "The inn opens at eight.").await;
    let post = &approved;
    let reasons = ["claims: it opens at nine"];
    // The fail withdraws the approval, which starts a new review round.
    let first = app
        .give_verdict(&critic("c"), post.id, fail(&approved, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(first.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(first.revisions, 1);
    let retry = app
        .give_verdict(&critic("c"), post.id, fail(&approved, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(retry.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(retry.verdict.id, first.verdict.id);
    assert_eq!(retry.post.version, first.post.version);
    let other = app
        .give_verdict(&critic("d"), post.id, fail(&approved, RUBRIC_A, &reasons))
        .await
        .unwrap();
    assert_eq!(other.effect, VerdictEffect::ReturnedToWriter);
    assert_eq!(other.revisions, 1);
}
