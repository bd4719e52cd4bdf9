//! The critic's workflow in the dashboard: a post's verdicts with their reasons against
//! the rubric, quarantined drafts in the inbox beside `needs_review` posts with release
//! and discard, and approvals bound to the content hash the page showed.

use axum::http::StatusCode;

use airlock_app::posts::EditInput;
use airlock_app::{App, Principal};
use airlock_core::{PostId, PostStatus, Role, RoleSet};

use crate::support::*;

fn critic(name: &str) -> Principal {
    Principal {
        actor: airlock_core::Actor::Token(name.into()),
        roles: RoleSet::of(&[Role::Critic]),
        sod_exempt: false,
    }
}

/// A draft on `cats` failed by critics before and after a revision: quarantined (the
/// default `max_revisions`; one failed review counts per content).
async fn quarantined(app: &App, text: &str) -> PostId {
    let id = create(app, draft("cats", &format!("{text} {PACE}"))).await;
    app.reject(&critic("c1"), id, "tone: reads as pushy")
        .await
        .unwrap();
    let revision = airlock_app::posts::EditInput {
        text: Some(format!("{text} Really. {PACE}")),
        ..airlock_app::posts::EditInput::default()
    };
    app.edit_post(&Principal::cli(), id, revision)
        .await
        .unwrap();
    app.reject(&critic("c2"), id, "claims: cats do not promise anything")
        .await
        .unwrap();
    assert!(
        app.store()
            .get_post(id)
            .await
            .unwrap()
            .quarantined_at
            .is_some()
    );
    id
}

#[tokio::test]
async fn the_post_page_shows_each_verdict_with_its_reasons_against_the_rubric() {
    let h = Harness::new().await;
    let id = h.seeded.draft;
    h.app
        .reject(
            &critic("reviewer"),
            id,
            "tone: the window seat joke is unkind",
        )
        .await
        .unwrap();
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get(&format!("/posts/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    for needle in [
        "id=\"verdicts-title\">Review</h2>",
        "verdict-badge-fail",
        "token:reviewer",
        "<strong class=\"rubric-item\"",
        ">tone</strong>",
        // The default rubric's words for the item the reason names.
        "The voice is friendly and respectful",
        "the window seat joke is unkind",
        "failed reviews: 1 of 2 before quarantine",
        "built-in default rubric",
    ] {
        assert!(
            page.body.contains(needle),
            "{needle} missing:\n{}",
            page.body
        );
    }
    // The approve and reject forms carry the hash of the content the page shows.
    let post = h.app.store().get_post(id).await.unwrap();
    let hidden = format!(
        "<input type=\"hidden\" name=\"content_hash\" value=\"{}\">",
        post.content_hash
    );
    assert_eq!(page.body.matches(&hidden).count(), 2, "{}", page.body);
}

#[tokio::test]
async fn approving_content_changed_since_the_page_was_shown_approves_nothing() {
    let h = Harness::new().await;
    let id = h.seeded.draft;
    let path = format!("/posts/{id}");
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let shown = h.app.store().get_post(id).await.unwrap().content_hash;
    // A writer edits after the operator opened the page.
    let writer = Principal {
        actor: airlock_core::Actor::Token("writer".into()),
        roles: RoleSet::of(&[Role::Writer]),
        sod_exempt: false,
    };
    h.app
        .edit_post(
            &writer,
            id,
            EditInput {
                text: Some(format!("Text the operator never saw. {PACE}")),
                ..EditInput::default()
            },
        )
        .await
        .unwrap();
    let page = browser
        .submit(
            &path,
            &format!("{path}/approve"),
            &[("content_hash", shown.as_str())],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let after = browser.get(&path).await;
    assert!(
        after.body.contains("changed since it was reviewed"),
        "{}",
        after.body
    );
    assert_eq!(h.status(id).await, PostStatus::Draft);
    // The page as it reads now approves.
    let now = h.app.store().get_post(id).await.unwrap().content_hash;
    browser
        .submit(
            &path,
            &format!("{path}/approve"),
            &[("content_hash", now.as_str())],
        )
        .await;
    assert_eq!(h.status(id).await, PostStatus::Approved);
}

#[tokio::test]
async fn the_inbox_lists_quarantined_drafts_and_an_operator_releases_one() {
    let h = Harness::new().await;
    let id = quarantined(&h.app, "Every guest gets a cat, guaranteed.").await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;

    // Beside the two needs_review posts of the seeded ledger.
    let queue = browser.get("/").await;
    assert!(
        queue.body.contains("3 posts need a person"),
        "{}",
        queue.body
    );
    assert!(queue.body.contains("badge-quarantined"));
    let inbox = browser.get("/review").await;
    assert!(inbox.body.contains("Quarantined</h1>"), "{}", inbox.body);
    assert!(inbox.body.contains(&format!("id=\"quarantined-{id}\"")));
    assert!(inbox.body.contains("cats do not promise anything"));
    assert!(
        inbox
            .body
            .contains("Needs review <span class=\"pill\">3</span>")
    );

    // The post page says why and offers no edit, approve or reject.
    let page = browser.get(&format!("/posts/{id}")).await;
    assert!(page.body.contains("Quarantined after 2 failed reviews"));
    assert!(!page.body.contains(&format!("/posts/{id}/approve")));
    assert!(!page.body.contains(&format!("/posts/{id}/edit")));

    let released = browser
        .submit(
            "/review",
            &format!("/posts/{id}/release"),
            &[("back", "/review")],
        )
        .await;
    assert_eq!(released.status, StatusCode::SEE_OTHER);
    assert_eq!(released.location(), "/review");
    let after = browser.get("/review").await;
    assert!(after.body.contains(&format!("Released post #{id}")));
    assert!(!after.body.contains(&format!("id=\"quarantined-{id}\"")));
    let post = h.app.store().get_post(id).await.unwrap();
    assert_eq!(
        (post.status, post.quarantined_at, post.revisions),
        (PostStatus::Draft, None, 0)
    );
}

#[tokio::test]
async fn an_operator_discards_a_quarantined_draft_from_the_inbox() {
    let h = Harness::new().await;
    let id = quarantined(&h.app, "Cats adore baths.").await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit(
            "/review",
            &format!("/posts/{id}/discard"),
            &[("back", "/review")],
        )
        .await;
    assert_eq!(page.location(), "/review");
    let after = browser.get("/review").await;
    assert!(
        after.body.contains(&format!("Discarded post #{id}")),
        "{}",
        after.body
    );
    assert!(h.app.store().get_post(id).await.is_err());
    assert_eq!(h.app.store().verdicts(id).await.unwrap().len(), 2);
}
