//! Every hint one step from done: what a banner or a message tells the operator to do is
//! something the dashboard offers, and it stops saying it once the state it describes
//! has ended.

use axum::http::StatusCode;

use airlock_app::review::Resolution;
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

/// A draft on `cats` failed twice: quarantined.
async fn quarantined(app: &App) -> PostId {
    let id = create(app, draft("cats", &format!("Pushy words. {PACE}"))).await;
    app.reject(&critic("c1"), id, "tone: pushy").await.unwrap();
    let revision = airlock_app::posts::EditInput {
        text: Some(format!("Pushy words, again. {PACE}")),
        ..airlock_app::posts::EditInput::default()
    };
    app.edit_post(&Principal::cli(), id, revision)
        .await
        .unwrap();
    app.reject(&critic("c2"), id, "tone: still pushy")
        .await
        .unwrap();
    id
}

/// One more post on `drill` whose outcome is unknown: it pauses `drill` (the seeded ones
/// did too, and were resumed), with the two seeded ones still in doubt beside it.
async fn paused_by_doubt(h: &Harness) -> PostId {
    let me = Principal::cli();
    let id = create(&h.app, draft("drill", "Drill: a third one, in doubt.")).await;
    h.app.approve(&me, id).await.unwrap();
    let outcome = h.app.publish_now(&me, id).await;
    assert!(
        matches!(outcome, Err(airlock_app::Error::OutcomeUnknown(_))),
        "{outcome:?}"
    );
    assert_eq!(h.pauses().await, vec!["drill".to_owned()]);
    id
}

/// The part of the queue page that shows pauses (the banners).
fn banners(body: &str) -> String {
    body.split("<section class=\"banner\"")
        .skip(1)
        .map(|b| b.split("</section>").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The finding: the pause banner said "settle it with `airlock post resolve N`", sending
/// the operator to a terminal, while the review inbox has the buttons.
#[tokio::test]
async fn the_pause_banner_points_to_the_inbox_not_the_cli() {
    let h = Harness::new().await;
    let [_, second] = h.seeded.review;
    let third = paused_by_doubt(&h).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let queue = browser.get("/").await;
    let shown = banners(&queue.body);
    assert!(shown.contains("Channel drill paused"), "{shown}");
    assert!(
        !shown.contains("airlock post resolve"),
        "a CLI step: {shown}"
    );
    assert!(!shown.contains("airlock resume"), "a CLI step: {shown}");
    // The post that set the pause and another one waiting on drill, as links.
    assert!(
        shown.contains(&format!("href=\"/review#review-{third}\"")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("href=\"/review#review-{second}\"")),
        "{shown}"
    );
    // The channel list says the same, not the stored reason's command.
    assert!(
        !queue.body.contains("settle it with `airlock"),
        "{}",
        queue.body
    );
}

/// The finding: once the post that set a pause was settled, the banner still said to
/// settle it. It now says the one step left: resume, with the button beside it.
#[tokio::test]
async fn a_settled_posts_pause_says_resume_and_offers_it() {
    let h = Harness::new().await;
    let [first, second] = h.seeded.review;
    let third = paused_by_doubt(&h).await;
    let me = Principal::cli();
    h.app
        .resolve(&me, third, Resolution::NotPublished)
        .await
        .unwrap();
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let shown = banners(&browser.get("/").await.body);
    assert!(
        shown.contains(&format!("post #{third} is settled")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("href=\"/review#review-{second}\"")),
        "a post still in doubt: {shown}"
    );
    assert!(!shown.contains("settle it with"), "stale: {shown}");

    for id in [first, second] {
        h.app
            .resolve(&me, id, Resolution::NotPublished)
            .await
            .unwrap();
    }
    let queue = browser.get("/").await;
    let shown = banners(&queue.body);
    assert!(shown.contains("nothing on drill is in doubt"), "{shown}");
    assert!(shown.contains(">Resume drill</button>"), "{shown}");
    assert!(!shown.contains("airlock"), "no CLI step: {shown}");
    assert!(!queue.body.contains("`airlock resume"), "{}", queue.body);
}

/// The finding: the queue's inbox said "Nobody knows whether these went out" over a
/// quarantined draft, which never went anywhere.
#[tokio::test]
async fn the_inbox_says_nobody_knows_only_over_posts_in_doubt() {
    let h = Harness::new().await;
    let me = Principal::cli();
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let queue = browser.get("/").await;
    assert!(queue.body.contains("Nobody knows whether"), "two in doubt");
    assert!(!queue.body.contains("quarantined draft failed review"));

    for id in h.seeded.review {
        h.app
            .resolve(&me, id, Resolution::NotPublished)
            .await
            .unwrap();
    }
    quarantined(&h.app).await;
    let queue = browser.get("/").await;
    assert!(
        queue.body.contains("1 post needs a person"),
        "{}",
        queue.body
    );
    assert!(
        !queue.body.contains("Nobody knows whether"),
        "over a quarantined draft:\n{}",
        queue.body
    );
    assert!(queue.body.contains("A quarantined draft failed review"));
}

/// The finding: the review page said "Inbox empty" above a quarantined draft.
#[tokio::test]
async fn the_review_page_says_empty_only_when_it_is() {
    let h = Harness::new().await;
    let me = Principal::cli();
    for id in h.seeded.review {
        h.app
            .resolve(&me, id, Resolution::NotPublished)
            .await
            .unwrap();
    }
    let id = quarantined(&h.app).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/review").await;
    assert!(page.body.contains(&format!("id=\"quarantined-{id}\"")));
    assert!(!page.body.contains("Inbox empty"), "{}", page.body);
    assert!(page.body.contains("Nothing in doubt"), "{}", page.body);

    browser
        .submit(
            "/review",
            &format!("/posts/{id}/discard"),
            &[("back", "/review")],
        )
        .await;
    let page = browser.get("/review").await;
    assert!(page.body.contains("Inbox empty"), "{}", page.body);
}

/// The finding: resolving in the dashboard left the channel paused with no way on but
/// the queue's Resume; the CLI's `post resolve --resume` does both. The last post in
/// doubt on a channel its pause holds offers both in one action; one with another post
/// still in doubt on its channel does not.
#[tokio::test]
async fn the_last_post_in_doubt_resolves_and_resumes_in_one_action() {
    let h = Harness::new().await;
    let [first, second] = h.seeded.review;
    let third = paused_by_doubt(&h).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let resume_button = "name=\"resume\"";
    let inbox = browser.get("/review").await;
    assert!(
        !inbox.body.contains(resume_button),
        "three in doubt on drill: resuming now would be early\n{}",
        inbox.body
    );

    let page = browser
        .submit(
            "/review",
            &format!("/posts/{first}/resolve"),
            &[("outcome", "not_published"), ("back", "/review")],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let inbox = browser.get("/review").await;
    // Still paused, and the message says what is left, in the dashboard's terms.
    assert!(
        inbox.body.contains(&format!(
            "drill stays paused: post #{third} on it still needs review"
        )),
        "{}",
        inbox.body
    );
    assert!(!inbox.body.contains(resume_button), "{}", inbox.body);

    h.app
        .resolve(&Principal::cli(), second, Resolution::NotPublished)
        .await
        .unwrap();
    let inbox = browser.get("/review").await;
    assert!(inbox.body.contains(resume_button), "{}", inbox.body);
    assert!(inbox.body.contains("It did not go out, resume drill"));
    let post_page = browser.get(&format!("/posts/{third}")).await;
    assert!(post_page.body.contains("It went out, resume drill"));

    browser
        .submit(
            "/review",
            &format!("/posts/{third}/resolve"),
            &[
                ("outcome", "published"),
                ("resume", "1"),
                ("back", "/review"),
            ],
        )
        .await;
    assert_eq!(h.status(third).await, PostStatus::Posted);
    assert!(h.pauses().await.is_empty(), "drill resumed");
    let inbox = browser.get("/review").await;
    assert!(
        inbox
            .body
            .contains(&format!("Marked post #{third} as published")),
        "{}",
        inbox.body
    );
    assert!(inbox.body.contains("Resumed drill"), "{}", inbox.body);
}

/// The attack: a resolve form posted with `resume=1` while other posts are in doubt, or
/// after an operator paused the channel for another reason (a stale page), lifted the
/// pause. It lifts only a pause a post in doubt set, once nothing else is in doubt.
#[tokio::test]
async fn a_forged_or_stale_resume_never_lifts_a_pause_it_should_not() {
    let h = Harness::new().await;
    let [first, second] = h.seeded.review;
    let third = paused_by_doubt(&h).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let resolve = |id: PostId| format!("/posts/{id}/resolve");
    let forged = [
        ("outcome", "not_published"),
        ("resume", "1"),
        ("back", "/review"),
    ];
    browser.submit("/review", &resolve(first), &forged).await;
    assert_eq!(h.status(first).await, PostStatus::Failed);
    assert_eq!(
        h.pauses().await,
        ["drill"],
        "two more in doubt: still paused"
    );

    h.app
        .resolve(&Principal::cli(), second, Resolution::NotPublished)
        .await
        .unwrap();
    h.app
        .pause(&Principal::cli(), Some("drill"), "account compromised")
        .await
        .unwrap();
    browser.submit("/review", &resolve(third), &forged).await;
    assert_eq!(h.status(third).await, PostStatus::Failed);
    assert_eq!(h.pauses().await, ["drill"], "the operator's pause holds");
    let inbox = browser.get("/review").await;
    assert!(
        inbox.body.contains("drill was not resumed"),
        "{}",
        inbox.body
    );
}

/// Resolving the last post in doubt without resuming says the one step left: resume,
/// on the queue.
#[tokio::test]
async fn resolving_without_resuming_says_resume_is_left() {
    let h = Harness::new().await;
    let third = paused_by_doubt(&h).await;
    for id in h.seeded.review {
        h.app
            .resolve(&Principal::cli(), id, Resolution::NotPublished)
            .await
            .unwrap();
    }
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    browser
        .submit(
            "/review",
            &format!("/posts/{third}/resolve"),
            &[("outcome", "not_published"), ("back", "/review")],
        )
        .await;
    let inbox = browser.get("/review").await;
    assert!(
        inbox
            .body
            .contains("drill stays paused: nothing on it is in doubt now, resume it on the queue"),
        "{}",
        inbox.body
    );
    assert_eq!(h.pauses().await, vec!["drill".to_owned()]);
}

/// The finding: the pause banner was not part of the queue's live fragment, so an open
/// queue kept saying "paused" after the pause ended (resumed in another tab, on the
/// CLI). The fragment carries the banners now, with the step left.
#[tokio::test]
async fn an_open_queue_drops_a_pause_banner_once_it_ended() {
    let h = Harness::new().await;
    let third = paused_by_doubt(&h).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let live = browser.get("/live").await;
    let shown = banners(&live.body);
    assert!(shown.contains("Channel drill paused"), "{}", live.body);
    assert!(
        shown.contains(&format!("href=\"/review#review-{third}\"")),
        "{shown}"
    );
    assert!(shown.contains(">Resume drill</button>"), "{shown}");
    assert!(live.body.contains("data-live-part=\"pauses\""));

    h.app
        .resume(&Principal::cli(), Some("drill"))
        .await
        .unwrap();
    let live = browser.get("/live").await;
    assert!(live.body.contains("data-live-part=\"pauses\""));
    assert!(banners(&live.body).is_empty(), "{}", live.body);
}
