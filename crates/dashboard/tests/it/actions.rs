//! The pages and the actions, over HTTP with `oneshot`: each action calls the app,
//! redirects back and shows its result or the app's refusal once.

use axum::http::StatusCode;

use airlock_app::Principal;
use airlock_core::PostStatus;

use crate::support::{Browser, Harness, PACE, create, draft};

#[tokio::test]
async fn the_queue_shows_counts_the_inbox_quota_and_todays_schedule() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(body.contains("2 posts need a person"), "inbox");
    assert!(body.contains("Drill: this request times out after sending."));
    for (n, label) in [
        (1, "draft"),
        (1, "approved"),
        (1, "posted"),
        (1, "failed"),
        (2, "needs review"),
    ] {
        let needle =
            format!(r#"<span class="count-n">{n}</span><span class="count-label">{label}</span>"#);
        assert!(body.contains(&needle), "{needle}");
    }
    // cats published one post; drill keeps two unknown outcomes counted; strict's
    // rejection was released.
    assert!(body.contains("1 / 5 today"), "cats gauge");
    assert!(body.contains("2 / 5 today"), "drill gauge");
    assert!(body.contains("3 / 10 in 1h"), "window gauge");
    // cats has a money budget: one post without a link spent $0.015 of it.
    assert!(
        body.contains("$0.015 of $5.00 spent, $4.985 left"),
        "budget gauge"
    );
    assert!(!body.contains("id=\"budget-drill\""), "no budget, no gauge");
    // Today in Tokyo: the approved post at 12:00, the published one at 09:00.
    assert!(body.contains("12:00 JST"), "scheduled later today");
    assert!(body.contains("09:00 JST"), "published this morning");
    assert!(body.contains("scheduled"));
    assert!(body.contains("published"));
    // The unknown outcome paused drill; the seed resumed it, so no banner.
    assert!(!body.contains("paused:"));
}

#[tokio::test]
async fn the_queue_filters_by_status_and_channel() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/?status=needs_review&channel=drill").await;
    assert!(page.body.contains("Posts on drill: needs review"));
    assert!(page.body.contains(&format!(
        r#"href="/posts/{}">#{}</a></td>"#,
        h.seeded.review[0], h.seeded.review[0]
    )));
    assert!(!page.body.contains(&format!(
        r#"href="/posts/{}">#{}</a></td>"#,
        h.seeded.draft, h.seeded.draft
    )));
    let page = browser.get("/?status=draft").await;
    assert!(
        page.body
            .contains("Posts: draft <span class=\"muted\">(1)</span>")
    );
    let page = browser.get("/?channel=nope&status=bogus").await;
    assert!(
        page.body.contains("All posts"),
        "unknown filters are ignored"
    );
}

#[tokio::test]
async fn approving_a_draft_redirects_back_and_shows_the_result_once() {
    let h = Harness::new().await;
    let id = h.seeded.draft;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let path = format!("/posts/{id}");
    let page = browser.submit(&path, &format!("{path}/approve"), &[]).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), path);
    assert_eq!(h.status(id).await, PostStatus::Approved);
    let shown = browser.get(&path).await;
    assert!(shown.body.contains(&format!(
        "Approved post #{id}: it is due now and goes out on the next dispatch pass"
    )));
    assert!(shown.body.contains("flash-done"));
    let again = browser.get(&path).await;
    assert!(!again.body.contains("flash-done"), "a flash shows once");
}

#[tokio::test]
async fn a_refusal_shows_the_apps_message() {
    let h = Harness::new().await;
    let id = h.seeded.draft;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let path = format!("/posts/{id}");
    let page = browser.submit(&path, &format!("{path}/publish"), &[]).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let shown = browser.get(&path).await;
    assert!(
        shown
            .body
            .contains(&format!("Not done: post {id} is draft: approve it first")),
        "{}",
        shown.body
    );
    assert!(shown.body.contains("flash-refused"));
    assert_eq!(h.status(id).await, PostStatus::Draft);
}

#[tokio::test]
async fn separation_of_duties_holds_for_the_dashboard_too() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    // The operator edits the draft, so it may not approve it afterwards.
    let id = h.seeded.draft;
    let path = format!("/posts/{id}");
    let text = format!("Mochi moved to the sofa. {PACE}");
    browser
        .submit(
            &path,
            &format!("{path}/edit"),
            &[("text", &text), ("scheduled_at", "now")],
        )
        .await;
    browser.submit(&path, &format!("{path}/approve"), &[]).await;
    let shown = browser.get(&path).await;
    assert!(
        shown.body.contains("separation of duties"),
        "{}",
        shown.body
    );
    assert_eq!(h.status(id).await, PostStatus::Draft);
}

#[tokio::test]
async fn rejecting_keeps_the_reason_and_unapproving_returns_to_draft() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let id = h.seeded.approved;
    let path = format!("/posts/{id}");
    browser
        .submit(&path, &format!("{path}/unapprove"), &[])
        .await;
    assert_eq!(h.status(id).await, PostStatus::Draft);
    browser
        .submit(
            &path,
            &format!("{path}/reject"),
            &[("reason", "too early in the day")],
        )
        .await;
    let shown = browser.get(&path).await;
    assert!(shown.body.contains("Rejected post"));
    assert!(shown.body.contains("too early in the day"));
    // A rejection without a reason is refused with the app's words.
    browser
        .submit(&path, &format!("{path}/reject"), &[("reason", " ")])
        .await;
    let shown = browser.get(&path).await;
    assert!(shown.body.contains("a rejection needs a reason"));
}

#[tokio::test]
async fn editing_changes_only_what_differs_and_keeps_line_ends() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let id = h.seeded.approved;
    let path = format!("/posts/{id}");
    let page = browser.get(&path).await;
    let scheduled = "2026-12-01T12:00:00+09:00";
    assert!(
        page.body
            .contains(r#"type="date" name="date" value="2026-12-01""#)
            && page
                .body
                .contains(r#"type="time" name="time" value="12:00""#),
        "the form shows the schedule in JST"
    );
    let text = format!("Lunch with Kuro.\r\nAt noon. {PACE}");
    browser
        .submit(
            &path,
            &format!("{path}/edit"),
            &[
                ("text", &text),
                ("title", ""),
                ("link", ""),
                ("scheduled_at", scheduled),
            ],
        )
        .await;
    let detail = h.app.get_post(&Principal::cli(), id).await.unwrap();
    assert_eq!(
        detail.post.content.text,
        format!("Lunch with Kuro.\nAt noon. {PACE}")
    );
    assert_eq!(
        detail.post.status,
        PostStatus::Draft,
        "an edit withdraws the approval"
    );
    let last = detail.events.last().unwrap();
    assert_eq!(
        last.note.as_deref(),
        Some("edited (text): approval withdrawn")
    );
    let shown = browser.get(&path).await;
    assert!(shown.body.contains("its approval was withdrawn"));
    // Saving the form unchanged is refused, and nothing is written.
    let n_events = h.n_events().await;
    let text = format!("Lunch with Kuro.\nAt noon. {PACE}");
    browser
        .submit(
            &path,
            &format!("{path}/edit"),
            &[("text", &text), ("scheduled_at", scheduled)],
        )
        .await;
    assert_eq!(h.n_events().await, n_events);
    assert!(browser.get(&path).await.body.contains("nothing changed"));
}

#[tokio::test]
async fn publishing_now_moves_the_quota_gauge() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    assert!(browser.get("/").await.body.contains("1 / 5 today"));
    let id = h.seeded.approved;
    let path = format!("/posts/{id}");
    browser.submit(&path, &format!("{path}/publish"), &[]).await;
    assert_eq!(h.status(id).await, PostStatus::Posted);
    let shown = browser.get(&path).await;
    assert!(
        shown
            .body
            .contains(&format!("Published post #{id} on cats: sandbox://cats/"))
    );
    let queue = browser.get("/").await;
    assert!(queue.body.contains("2 / 5 today"), "cats gauge");
    assert!(queue.body.contains("4 / 10 in 1h"), "window gauge");
}

#[tokio::test]
async fn resolving_settles_needs_review_posts_both_ways() {
    let h = Harness::new().await;
    let [went_out, did_not] = h.seeded.review;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let inbox = browser.get("/review").await;
    // The evidence comes with each post: its intent and idempotency key, the error.
    assert!(inbox.body.contains("Request sent at"));
    assert!(inbox.body.contains(&format!("airlock-{went_out}-")));
    assert!(inbox.body.contains("simulated timeout after sending"));
    let page = browser
        .submit(
            "/review",
            &format!("/posts/{went_out}/resolve"),
            &[
                ("outcome", "published"),
                ("permalink", "https://drill.example/p/1"),
                ("back", "/review"),
            ],
        )
        .await;
    assert_eq!(page.location(), "/review");
    let inbox = browser.get("/review").await;
    assert!(
        inbox
            .body
            .contains(&format!("Marked post #{went_out} as published"))
    );
    browser
        .submit(
            "/review",
            &format!("/posts/{did_not}/resolve"),
            &[("outcome", "not_published"), ("back", "/review")],
        )
        .await;
    let inbox = browser.get("/review").await;
    assert!(
        inbox
            .body
            .contains(&format!("Marked post #{did_not} as not published"))
    );
    assert!(inbox.body.contains("Inbox empty."));
    assert_eq!(h.status(went_out).await, PostStatus::Posted);
    assert_eq!(h.status(did_not).await, PostStatus::Failed);
    let post = h
        .app
        .get_post(&Principal::cli(), went_out)
        .await
        .unwrap()
        .post;
    assert_eq!(post.permalink.as_deref(), Some("https://drill.example/p/1"));
    // The not-published slot was released, the published one stays counted.
    assert!(browser.get("/").await.body.contains("1 / 5 today"));
}

#[tokio::test]
async fn requeue_returns_a_failed_post_to_the_queue() {
    let h = Harness::new().await;
    let id = h.seeded.failed;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let path = format!("/posts/{id}");
    assert!(browser.get(&path).await.body.contains("Requeue"));
    browser.submit(&path, &format!("{path}/requeue"), &[]).await;
    assert_eq!(h.status(id).await, PostStatus::Approved);
    assert!(
        browser
            .get(&path)
            .await
            .body
            .contains(&format!("Requeued post #{id}"))
    );
}

#[tokio::test]
async fn pausing_and_resuming_a_channel_and_everything() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    browser
        .submit(
            "/",
            "/pause",
            &[("channel", "cats"), ("reason", "vet visit")],
        )
        .await;
    assert_eq!(h.pauses().await, vec!["cats".to_owned()]);
    let queue = browser.get("/").await;
    assert!(queue.body.contains("Paused channel cats: vet visit"));
    assert!(queue.body.contains("Channel cats paused:"));
    assert!(
        queue.body.contains("held: paused"),
        "today's schedule shows the hold"
    );
    // Publishing on a paused channel is refused with the reason.
    let id = h.seeded.approved;
    browser
        .submit("/", &format!("/posts/{id}/publish"), &[])
        .await;
    let shown = browser.get(&format!("/posts/{id}")).await;
    assert!(
        shown.body.contains("Not done: paused: vet visit"),
        "{}",
        shown.body
    );
    browser.submit("/", "/resume", &[("channel", "cats")]).await;
    assert!(h.pauses().await.is_empty());
    assert!(browser.get("/").await.body.contains("Resumed channel cats"));

    browser
        .submit("/", "/pause", &[("channel", ""), ("reason", "incident")])
        .await;
    assert_eq!(h.pauses().await, vec!["*".to_owned()]);
    assert!(
        browser
            .get("/")
            .await
            .body
            .contains("All publishing paused:")
    );
    browser.submit("/", "/resume", &[("channel", "")]).await;
    assert!(h.pauses().await.is_empty());
    // A pause needs a reason.
    browser
        .submit("/", "/pause", &[("channel", "cats"), ("reason", "")])
        .await;
    assert!(h.pauses().await.is_empty());
    assert!(
        browser
            .get("/")
            .await
            .body
            .contains("a pause needs a reason")
    );
}

#[tokio::test]
async fn notes_land_on_the_timeline() {
    let h = Harness::new().await;
    let id = h.seeded.posted;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let path = format!("/posts/{id}");
    browser
        .submit(
            &path,
            &format!("{path}/note"),
            &[("note", "Shared in the newsletter too")],
        )
        .await;
    let page = browser.get(&path).await;
    assert!(page.body.contains("Added a note"));
    assert!(page.body.contains("Shared in the newsletter too"));
    let detail = h.app.get_post(&Principal::cli(), id).await.unwrap();
    assert_eq!(detail.events.last().unwrap().actor, "token:ops");
}

#[tokio::test]
async fn a_post_page_shows_content_hashes_timeline_intents_and_reservation() {
    let h = Harness::new().await;
    let id = h.seeded.posted;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get(&format!("/posts/{id}")).await;
    let detail = h.app.get_post(&Principal::cli(), id).await.unwrap();
    let body = &page.body;
    assert!(body.contains("The garden cats found the sunny spot."));
    assert!(body.contains(
        r#"<a href="https://inn.example/media/garden.jpg" rel="noopener noreferrer nofollow""#
    ));
    assert!(
        !body.contains("<img"),
        "media show as links, never as external images"
    );
    assert!(body.contains("Alt text: Three cats asleep in the sun"));
    assert!(body.contains(detail.post.content_hash.as_str()));
    assert!(body.contains("matches the content"));
    assert!(body.contains("approved → posting"));
    assert!(body.contains("posting → posted"));
    assert!(body.contains(&detail.intents[0].idempotency_key));
    assert!(body.contains("committed"));
    assert!(body.contains(detail.post.permalink.as_deref().unwrap()));
}

#[tokio::test]
async fn a_missing_post_is_a_404_page() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    assert_eq!(
        browser.get("/posts/999").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        browser.get("/posts/abc").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn the_live_fragment_carries_the_refreshable_parts_only() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let id = create(&h.app, draft("cats", &format!("Fresh draft. {PACE}"))).await;
    let live = browser.get("/live?status=draft").await;
    assert_eq!(live.status, StatusCode::OK);
    for part in ["inbox", "counts", "today", "posts"] {
        assert!(
            live.body.contains(&format!(r#"data-live-part="{part}""#)),
            "{part}"
        );
    }
    assert!(live.body.contains(&format!("#{id}")));
    assert!(
        !live.body.contains("<form"),
        "no forms, so no CSRF token, in the fragment"
    );
    let queue = browser.get("/?status=draft").await;
    assert!(queue.body.contains(r#"data-live="/live?status=draft""#));
}
