//! The calendar (`/calendar`): weeks and months in a channel's zone or the ledger's,
//! every post on the day it goes out, and moving a draft or an approved post from it
//! (`POST /posts/{id}/move`) with date and time pickers in the channel's zone.

use airlock_app::{ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, PostStatus};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use crate::support::{Browser, Harness, PACE, create, draft};

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// The seeded ledger plus `inn`, a channel in New York's zone (which keeps summer time).
async fn with_new_york() -> Harness {
    Harness::with(|settings| {
        let ny = "America/New_York".parse().unwrap();
        let inn = ChannelName::parse("inn").unwrap();
        *settings =
            settings
                .clone()
                .with_channel(ChannelSettings::new(inn, ChannelKind::Sandbox, 5, ny));
    })
    .await
}

async fn scheduled(h: &Harness, id: airlock_core::PostId) -> DateTime<Utc> {
    h.app
        .get_post(&Principal::cli(), id)
        .await
        .unwrap()
        .post
        .scheduled_at
}

/// The HTML of one day's cell.
fn day<'a>(body: &'a str, date: &str) -> &'a str {
    let id = body
        .find(&format!(r#"id="day-{date}""#))
        .unwrap_or_else(|| panic!("no day {date} on the page:\n{body}"));
    let start = body[..id].rfind("<section").unwrap();
    let end = body[start..].find("</section>").unwrap() + start;
    &body[start..end]
}

#[tokio::test]
async fn the_week_shows_every_post_on_its_day_with_its_state() {
    let h = Harness::new().await;
    let s = h.seeded;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/calendar").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    // Today is Tuesday 1 December 2026 in Tokyo, the ledger's zone.
    assert!(body.contains("Week of 30 Nov 2026 to 6 Dec 2026"), "{body}");
    assert!(body.contains("every channel"));
    assert!(body.contains("Asia/Tokyo"));
    assert!(body.contains(r#"href="/calendar?view=week&#38;start=2026-11-23" rel="prev""#));
    assert!(body.contains(r#"href="/calendar?view=week&#38;start=2026-12-07" rel="next""#));
    // The month of today, which is in view.
    assert!(body.contains(r#"href="/calendar?view=month&#38;start=2026-12-01""#));
    // A week away, the month holding most of the week.
    let page = browser.get("/calendar?start=2026-12-28").await;
    assert!(
        page.body
            .contains(r#"href="/calendar?view=month&#38;start=2026-12-31""#)
    );
    for date in [
        "2026-11-30",
        "2026-12-02",
        "2026-12-03",
        "2026-12-04",
        "2026-12-05",
        "2026-12-06",
    ] {
        assert!(!day(body, date).contains("cal-entry"), "{date} is empty");
    }
    let today = day(body, "2026-12-01");
    assert!(today.contains("is-today"));
    for (id, state) in [
        (s.draft, "draft"),
        (s.approved, "approved"),
        (s.posted, "posted"),
        (s.review[0], "needs review"),
        (s.failed, "failed"),
    ] {
        let at = today
            .find(&format!(r#"id="entry-{id}""#))
            .unwrap_or_else(|| panic!("post {id} is not on its day:\n{today}"));
        assert!(today[at..].contains(state), "post {id} shows {state}");
    }
    // In the order they go out: the approved post at noon comes after the 09:00 ones.
    let at = |id| today.find(&format!(r#"id="entry-{id}""#)).unwrap();
    assert!(at(s.draft) < at(s.approved));
    assert!(today.contains("12:00 JST"));
    // Drafts and approved posts can be moved; what is out or in doubt cannot.
    for id in [s.draft, s.approved] {
        assert!(today.contains(&format!(r#"action="/posts/{id}/move""#)));
    }
    for id in [s.posted, s.review[0], s.failed] {
        assert!(!today.contains(&format!(r#"action="/posts/{id}/move""#)));
    }
    assert!(today.contains(r#"type="date" name="date" value="2026-12-01""#));
    assert!(today.contains(r#"type="time" name="time" value="12:00""#));
    assert!(today.contains("Moving withdraws its approval"));
}

#[tokio::test]
async fn the_month_fills_whole_weeks_and_pages_by_month() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/calendar?view=month&start=2026-12-15").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(body.contains("<h1>December 2026</h1>"), "{body}");
    assert!(body.contains(r#"id="day-2026-11-30""#));
    assert!(body.contains(r#"id="day-2027-01-03""#));
    assert!(!body.contains(r#"id="day-2027-01-04""#));
    assert!(day(body, "2026-11-30").contains("is-outside"));
    assert!(day(body, "2026-12-01").contains(&format!("entry-{}", h.seeded.approved)));
    assert!(body.contains(r#"start=2026-11-01" rel="prev""#));
    assert!(body.contains(r#"start=2027-01-01" rel="next""#));
    // Next month: nothing scheduled there.
    let page = browser.get("/calendar?view=month&start=2027-01-01").await;
    assert!(page.body.contains("0 posts in view"), "{}", page.body);
}

#[tokio::test]
async fn a_channels_calendar_is_in_its_zone_and_shows_only_its_posts() {
    let h = with_new_york().await;
    // 09:30 on 1 December in Tokyo is 19:30 on 30 November in New York.
    let mut input = draft("inn", &format!("Late check-in tonight. {PACE}"));
    input.scheduled_at = Some("2026-12-01T00:30:00Z".into());
    let inn = create(&h.app, input).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;

    let page = browser.get("/calendar?channel=inn").await;
    let body = &page.body;
    assert!(body.contains("America/New_York"), "{body}");
    assert!(body.contains("Week of 30 Nov 2026 to 6 Dec 2026"));
    let monday = day(body, "2026-11-30");
    assert!(monday.contains(&format!("entry-{inn}")), "{body}");
    assert!(monday.contains("19:30 EST"));
    assert!(
        !body.contains(&format!("entry-{}", h.seeded.draft)),
        "cats not shown"
    );
    assert!(body.contains(r#"<option value="inn" selected>"#));
    // The move form is in the channel's zone, and so are the navigation links.
    assert!(monday.contains(r#"value="2026-11-30""#));
    assert!(monday.contains(r#"value="19:30""#));
    assert!(body.contains("start=2026-11-23&#38;channel=inn"));

    // Every channel: the ledger's zone (Tokyo), where the same post sits on Tuesday.
    let all = browser.get("/calendar").await;
    assert!(day(&all.body, "2026-12-01").contains(&format!("entry-{inn}")));
    assert!(day(&all.body, "2026-12-01").contains("09:30 JST"));
    // But its move form stays in New York's zone, and says so.
    assert!(day(&all.body, "2026-12-01").contains("(America/New_York)"));
}

#[tokio::test]
async fn a_query_that_is_not_understood_says_why() {
    let h = Harness::new().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    for (path, says) in [
        ("/calendar?view=year", "is not a view: use week or month"),
        ("/calendar?start=2026-02-30", "is not a date"),
        ("/calendar?channel=nope", "nope"),
    ] {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(page.body.contains(says), "{path}: {}", page.body);
    }
}

#[tokio::test]
async fn moving_a_draft_converts_the_channels_wall_clock() {
    let h = with_new_york().await;
    let inn = create(&h.app, draft("inn", &format!("Breakfast moves. {PACE}"))).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let back = "/calendar?view=week&start=2026-11-30&channel=inn";
    let page = browser
        .submit(
            back,
            &format!("/posts/{inn}/move"),
            &[("date", "2026-12-05"), ("time", "09:30"), ("back", back)],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.location(), back);
    // 09:30 in New York in winter is 14:30 UTC.
    assert_eq!(scheduled(&h, inn).await, utc("2026-12-05T14:30:00Z"));
    let shown = browser.get(back).await;
    assert!(
        shown
            .body
            .contains(&format!("Moved post #{inn} to 2026-12-05 09:30 EST")),
        "{}",
        shown.body
    );
    assert!(day(&shown.body, "2026-12-05").contains(&format!("entry-{inn}")));

    // In summer time the same wall clock is an hour earlier in UTC.
    browser
        .submit(
            back,
            &format!("/posts/{inn}/move"),
            &[("date", "2027-07-01"), ("time", "09:30"), ("back", back)],
        )
        .await;
    assert_eq!(scheduled(&h, inn).await, utc("2027-07-01T13:30:00Z"));
}

#[tokio::test]
async fn a_time_the_clocks_skip_or_repeat_is_refused_and_nothing_moves() {
    let h = with_new_york().await;
    let inn = create(&h.app, draft("inn", &format!("Spring forward. {PACE}"))).await;
    let before = scheduled(&h, inn).await;
    let n_events = h.n_events().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let back = "/calendar?channel=inn";
    for (date, time, says) in [
        (
            "2027-03-14",
            "02:30",
            "2027-03-14 02:30 does not exist in America/New_York: the clocks skip from 02:00 to 03:00",
        ),
        (
            "2027-11-07",
            "01:30",
            "2027-11-07 01:30 happens twice in America/New_York",
        ),
        ("2027-11-07", "", "give a time with the date"),
    ] {
        browser
            .submit(
                back,
                &format!("/posts/{inn}/move"),
                &[("date", date), ("time", time), ("back", back)],
            )
            .await;
        let shown = browser.get(back).await;
        assert!(shown.body.contains(says), "{says}:\n{}", shown.body);
        assert!(shown.body.contains("flash-refused"));
    }
    assert_eq!(scheduled(&h, inn).await, before);
    assert_eq!(h.n_events().await, n_events, "nothing written");
}

#[tokio::test]
async fn moving_an_approved_post_sends_it_back_to_review_and_says_so() {
    let h = Harness::new().await;
    let id = h.seeded.approved;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let back = "/calendar";
    browser
        .submit(
            back,
            &format!("/posts/{id}/move"),
            &[("date", "2026-12-02"), ("time", "08:15"), ("back", back)],
        )
        .await;
    assert_eq!(scheduled(&h, id).await, utc("2026-12-01T23:15:00Z"));
    assert_eq!(h.status(id).await, PostStatus::Draft);
    let shown = browser.get(back).await;
    assert!(
        shown.body.contains(&format!(
            "Moved post #{id} to 2026-12-02 08:15 JST; its approval was withdrawn, so it goes back to review"
        )),
        "{}",
        shown.body
    );
    // Moving it to where it is already is refused, and says where that is.
    browser
        .submit(
            back,
            &format!("/posts/{id}/move"),
            &[("date", "2026-12-02"), ("time", "08:15"), ("back", back)],
        )
        .await;
    let shown = browser.get(back).await;
    assert!(
        shown.body.contains(&format!(
            "post #{id} is already scheduled at 2026-12-02 08:15 JST"
        )),
        "{}",
        shown.body
    );
    // A post that is out does not move.
    let posted = h.seeded.posted;
    browser
        .submit(
            back,
            &format!("/posts/{posted}/move"),
            &[("date", "2026-12-03"), ("time", "10:00"), ("back", back)],
        )
        .await;
    let shown = browser.get(back).await;
    assert!(shown.body.contains("Not done:"), "{}", shown.body);
    assert_eq!(h.status(posted).await, PostStatus::Posted);
}

#[tokio::test]
async fn the_calendar_escapes_what_agents_wrote_and_is_linked() {
    let h = Harness::new().await;
    let id = create(
        &h.app,
        draft("cats", &format!("<script>alert(1)</script> {PACE}")),
    )
    .await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/calendar").await;
    assert!(page.body.contains(&format!("entry-{id}")));
    assert!(!page.body.contains("<script>alert"));
    assert!(page.body.contains("&#60;script&#62;alert(1)"));
    assert!(
        page.body
            .contains(r#"<a href="/calendar" aria-current="page">Calendar</a>"#)
    );
    let queue = browser.get("/").await;
    assert!(queue.body.contains(r#"<a href="/calendar">calendar</a>"#));
}
