//! The security rules `app` enforces for every front end: separation of duties by
//! authorship (the laundering sequence is refused), size limits at draft time with the
//! limit named, and approvals bound to the version that was looked at.

use airlock_app::posts::{DraftOrigin, EditInput};
use airlock_app::{Error, Principal};
use airlock_core::limits::MAX_TEXT_CHARS;
use airlock_core::{ChannelKind, PostStatus, Role};
use airlock_platforms::sandbox::Simulate;
use airlock_store::{PostFilter, Reads};

use crate::support::*;

fn writer_critic(name: &str) -> Principal {
    token(name, &[Role::Writer, Role::Critic])
}

fn edit_text(text: &str) -> EditInput {
    EditInput {
        text: Some(text.into()),
        ..EditInput::default()
    }
}

fn edit_schedule(at: &str) -> EditInput {
    EditInput {
        scheduled_at: Some(at.into()),
        ..EditInput::default()
    }
}

/// The finding: B (writer + critic) rewrites A's draft, A only moves the schedule (so
/// A was the last editor), and B approves its own text. Refused: B changed the content
/// since the last approval.
#[tokio::test]
async fn a_rewrite_laundered_through_a_schedule_edit_cannot_be_approved_by_its_writer() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let (a, b) = (writer_critic("a"), writer_critic("b"));
    let post = app
        .create_post(
            &a,
            draft("cats", "A's careful words"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    app.edit_post(&b, post.id, edit_text("B's words, buy now"))
        .await
        .unwrap();
    let moved = app
        .edit_post(&a, post.id, edit_schedule("2026-12-02T09:00:00+09:00"))
        .await
        .unwrap();
    assert_eq!(
        moved.edited_by, "token:b",
        "a schedule edit is not a content edit"
    );

    let err = app.approve(&b, post.id).await.unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    assert!(err.to_string().contains("separation of duties"), "{err}");
    // A created it and may not approve it either; a third critic may.
    assert!(matches!(
        app.approve(&a, post.id).await,
        Err(Error::Forbidden(_))
    ));
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
    let approved = app
        .approve(&token("c", &[Role::Critic]), post.id)
        .await
        .unwrap();
    assert_eq!(approved.status, PostStatus::Approved);
}

/// Two principals taking turns: B rewrites, A writes it back, and B — no longer the last
/// editor — still may not approve, because B wrote content since the last approval.
#[tokio::test]
async fn every_content_author_since_the_last_approval_is_barred_not_only_the_last() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let (a, b) = (writer_critic("a"), writer_critic("b"));
    let post = app
        .create_post(
            &writer("w"),
            draft("cats", "W's words"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    app.edit_post(&b, post.id, edit_text("B's words"))
        .await
        .unwrap();
    let last = app
        .edit_post(&a, post.id, edit_text("A's words"))
        .await
        .unwrap();
    assert_eq!(last.edited_by, "token:a");
    assert!(matches!(
        app.approve(&b, post.id).await,
        Err(Error::Forbidden(_))
    ));
    // A schedule move by a critic who wrote nothing makes it no author.
    let c = writer_critic("c");
    app.edit_post(&c, post.id, edit_schedule("now"))
        .await
        .unwrap();
    let approved = app.approve(&c, post.id).await.unwrap();
    assert_eq!(approved.approved_by.as_deref(), Some("token:c"));
}

/// A 1 MB draft is refused before anything is stored, naming the limit; a text longer
/// than its channel allows is refused at draft time, naming the channel's limit.
#[tokio::test]
async fn oversized_drafts_are_refused_at_the_door_naming_the_limit() {
    let h = Harness::new(|dir| {
        let mut threads = sandbox(dir, "threads-like", Simulate::Ok, 10);
        threads.settings.policy = ChannelKind::Threads.policy_with(None, vec![], vec![]);
        vec![sandbox(dir, "cats", Simulate::Ok, 10), threads]
    })
    .await;
    let app = h.app();
    let me = Principal::cli();
    let err = app
        .create_post(
            &me,
            draft("cats", &"x".repeat(1_000_000)),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("1000000") && msg.contains(&MAX_TEXT_CHARS.to_string()),
        "{msg}"
    );

    let err = app
        .create_post(
            &me,
            draft("threads-like", &"y".repeat(501)),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("501") && msg.contains("500") && msg.contains("threads-like"),
        "{msg}"
    );
    assert!(
        app.list_posts(&me, &PostFilter::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing half-written"
    );

    // An edit is held to the same limits and leaves the draft as it was.
    let post = app
        .create_post(
            &me,
            draft("threads-like", "short"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    let err = app
        .edit_post(&me, post.id, edit_text(&"z".repeat(501)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert_eq!(h.store.as_ref().get_post(post.id).await.unwrap(), post);
}

/// Notes and reasons have limits too.
#[tokio::test]
async fn notes_and_reasons_over_their_limits_are_refused() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let me = Principal::cli();
    let post = app
        .create_post(&me, draft("cats", "hello"), None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let err = app
        .add_note(&me, post.id, &"n".repeat(2001))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("2000"), "{err}");
    let err = app
        .reject(&me, post.id, &"r".repeat(1001))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("1000"), "{err}");
    let err = app.pause(&me, None, &"p".repeat(1001)).await.unwrap_err();
    assert!(err.to_string().contains("1000"), "{err}");
    assert!(app.pauses(&me).await.unwrap().is_empty());
}

/// An approval bound to a version approves nothing once the post changed after that
/// version was looked at (the auto-approver's "untouched draft" check).
#[tokio::test]
async fn an_approval_bound_to_a_version_refuses_a_post_changed_since() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let post = app
        .create_post(
            &Principal::scheduler(),
            draft("cats", "from the site"),
            None,
            DraftOrigin::default(),
        )
        .await
        .unwrap()
        .post;
    let looked_at = post.version;
    app.edit_post(&writer("w"), post.id, edit_text("slipped in"))
        .await
        .unwrap();
    let err = app
        .approve_version(&Principal::auto_approver("auto"), post.id, looked_at)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert_eq!(status(&app, post.id).await, PostStatus::Draft);
}

/// The finding: a typo in the year (`2025` for `2026`) silently meant "publish now".
/// A past schedule is refused, naming how far back it is, unless asked for explicitly;
/// the same holds when an edit moves a draft.
#[tokio::test]
async fn a_past_schedule_is_refused_unless_asked_for() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let a = writer_critic("a");
    let year_ago = airlock_core::time::format_utc(h.clock.now() - chrono::Duration::days(365));
    let typo = airlock_app::posts::DraftInput {
        scheduled_at: Some(year_ago.clone()),
        ..draft("cats", "A year too early")
    };
    let err = app
        .create_post(&a, typo.clone(), None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("365 days in the past"), "{err}");
    let listed = app.list_posts(&a, &PostFilter::default()).await.unwrap();
    assert!(listed.is_empty(), "nothing is drafted: {listed:?}");

    let asked = airlock_app::posts::DraftInput {
        allow_past: true,
        ..typo
    };
    let post = app
        .create_post(&a, asked, None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let err = app
        .edit_post(&a, post.id, edit_schedule(&year_ago))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("in the past"), "{err}");
    app.edit_post(
        &a,
        post.id,
        EditInput {
            allow_past: true,
            ..edit_schedule(&year_ago)
        },
    )
    .await
    .unwrap();
}

/// The finding: any writer could discard any draft, another agent's or an operator's
/// included. Only its writer or an operator may.
#[tokio::test]
async fn only_its_writer_or_an_operator_discards_a_draft() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let (a, b) = (writer_critic("a"), writer_critic("b"));
    let mine = |text: &str| draft("cats", text);
    let post = app
        .create_post(&a, mine("A's draft"), None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    let err = app.discard(&b, post.id).await.unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    assert!(err.to_string().contains("drafted by token:a"), "{err}");
    app.discard(&a, post.id).await.unwrap();
    let other = app
        .create_post(&a, mine("another"), None, DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.discard(&Principal::cli(), other.id).await.unwrap();
}

/// The finding: a draft scheduled a minute ahead, whose answer was lost, was refused on
/// its retry ten minutes later as "in the past", inviting a second draft under a new key.
/// A retry with the same key is answered with the first post before anything is checked.
#[tokio::test]
async fn a_retry_with_its_key_is_answered_after_its_schedule_passed() {
    let h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    let app = h.app();
    let a = writer_critic("a");
    let soon = airlock_core::time::format_utc(h.clock.now() + chrono::Duration::minutes(1));
    let input = airlock_app::posts::DraftInput {
        scheduled_at: Some(soon),
        ..draft("cats", "A minute from now")
    };
    let key = || Some("k-1".to_owned());
    let first = app
        .create_post(&a, input.clone(), key(), DraftOrigin::default())
        .await
        .unwrap();
    h.clock.advance(chrono::Duration::minutes(10));
    let again = app
        .create_post(&a, input, key(), DraftOrigin::default())
        .await
        .unwrap();
    assert!(again.existing);
    assert_eq!(again.post.id, first.post.id);
}

/// The finding: a draft refused anyway (a past schedule, the drafts limit) had its media
/// downloaded first, so a writer could make airlock fetch without limit or trace. Every
/// cheap refusal comes before the fetch.
#[tokio::test]
async fn a_draft_refused_anyway_fetches_no_media() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let images = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![0u8; 16]))
        .expect(0)
        .mount(&images)
        .await;
    let mut h = Harness::new(|dir| vec![sandbox(dir, "cats", Simulate::Ok, 10)]).await;
    h.settings.media_fetch_timeout = Some(chrono::Duration::seconds(5));
    h.settings.max_drafts_per_token = 1;
    let app = h.app();
    let a = writer_critic("a");
    let with_media = |text: &str| airlock_app::posts::DraftInput {
        media: vec![airlock_core::Media::new(
            format!("{}/cat.png", images.uri()),
            Some("a cat".into()),
        )],
        ..draft("cats", text)
    };
    let year_ago = airlock_core::time::format_utc(h.clock.now() - chrono::Duration::days(365));
    let past = airlock_app::posts::DraftInput {
        scheduled_at: Some(year_ago),
        ..with_media("A year ago")
    };
    let err = app
        .create_post(&a, past, None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("in the past"), "{err}");
    app.create_post(
        &a,
        draft("cats", "the one draft"),
        None,
        DraftOrigin::default(),
    )
    .await
    .unwrap();
    let err = app
        .create_post(&a, with_media("one too many"), None, DraftOrigin::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("max_drafts_per_token"), "{err}");
    images.verify().await;
}
