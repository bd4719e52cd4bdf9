//! The post page's edit form: part 1's media as URL and alt rows, and the schedule as a
//! date and a time in the channel's zone.

use airlock_app::{ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, Media, PostId};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use crate::support::{Browser, Harness, PACE, create, draft};

async fn post(h: &Harness, id: PostId) -> airlock_core::Post {
    h.app.get_post(&Principal::cli(), id).await.unwrap().post
}

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// Owned form fields as the pairs `Browser::submit` takes.
fn refs<'a>(fields: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    fields.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A draft on `cats` with one image whose bytes were checked (its SHA-256 known).
async fn with_image(h: &Harness) -> PostId {
    let mut input = draft("cats", &format!("The garden at dawn. {PACE}"));
    input.media = vec![Media {
        sha256: Some("ab".repeat(32)),
        content_type: Some("image/jpeg".into()),
        bytes: Some(48_213),
        ..Media::new(
            "https://inn.example/garden.jpg".into(),
            Some("The garden".into()),
        )
    }];
    create(&h.app, input).await
}

#[tokio::test]
async fn the_form_shows_media_rows_and_the_schedule_in_the_channels_zone() {
    let h = Harness::new().await;
    let id = with_image(&h).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get(&format!("/posts/{id}")).await;
    let body = &page.body;
    assert!(body.contains(
        r#"<input id="edit-url-1" type="url" name="p1_url" value="https://inn.example/garden.jpg""#
    ));
    assert!(body.contains(r#"name="p1_alt" value="The garden""#));
    assert!(
        body.contains(r#"<input id="edit-url-3" type="url" name="p1_url" value="""#),
        "two blank rows to add more"
    );
    assert!(body.contains(r#"<input id="edit-date" type="date" name="date" value="2026-12-01">"#));
    assert!(body.contains(r#"<input id="edit-time" type="time" name="time" value="09:00">"#));
    assert!(body.contains("in Asia/Tokyo; both empty for now"));
    assert!(
        !body.contains(r#"name="scheduled_at""#),
        "no raw RFC 3339 field"
    );
}

#[tokio::test]
async fn media_rows_add_change_and_remove_items_and_untouched_rows_keep_their_facts() {
    let h = Harness::new().await;
    let id = with_image(&h).await;
    let path = format!("/posts/{id}");
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let text = format!("The garden at noon. {PACE}");
    let form = |rows: &[(&'static str, &'static str)]| {
        let mut fields = vec![
            ("text", text.clone()),
            ("date", "2026-12-01".to_owned()),
            ("time", "09:00".to_owned()),
        ];
        for (url, alt) in rows {
            fields.push(("p1_url", (*url).to_owned()));
            fields.push(("p1_alt", (*alt).to_owned()));
        }
        fields
    };

    // The text changes; the image's row comes back as it was: its facts stay bound.
    let fields = form(&[("https://inn.example/garden.jpg", "The garden"), ("", "")]);
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    let saved = post(&h, id).await;
    assert_eq!(saved.content.text, text);
    assert_eq!(saved.content.media.len(), 1);
    assert_eq!(saved.content.media[0].sha256, Some("ab".repeat(32)));

    // A second image, and a new alt text on the first.
    let fields = form(&[
        ("https://inn.example/garden.jpg", "The garden at noon"),
        ("https://inn.example/pond.jpg", "The pond"),
    ]);
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    let saved = post(&h, id).await;
    let media: Vec<(&str, Option<&str>)> = saved
        .content
        .media
        .iter()
        .map(|m| (m.url.as_str(), m.alt.as_deref()))
        .collect();
    assert_eq!(
        media,
        [
            ("https://inn.example/garden.jpg", Some("The garden at noon")),
            ("https://inn.example/pond.jpg", Some("The pond")),
        ]
    );
    let shown = browser.get(&path).await;
    assert!(shown.body.contains(&format!("Saved post #{id}")));
    assert!(
        shown
            .body
            .contains(r#"name="p1_url" value="https://inn.example/pond.jpg""#)
    );

    // Clearing both fields of a row removes its item.
    let fields = form(&[("https://inn.example/pond.jpg", "The pond"), ("", "")]);
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    let saved = post(&h, id).await;
    assert_eq!(saved.content.media.len(), 1);
    assert_eq!(saved.content.media[0].url, "https://inn.example/pond.jpg");

    // An alt text without its URL is refused, naming the row; nothing changes.
    let n_events = h.n_events().await;
    let fields = form(&[("https://inn.example/pond.jpg", "The pond"), ("", "A cat")]);
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    let shown = browser.get(&path).await;
    assert!(
        shown
            .body
            .contains("media item 2 of part 1 has alt text but no URL"),
        "{}",
        shown.body
    );
    assert_eq!(h.n_events().await, n_events);
}

#[tokio::test]
async fn the_date_and_time_are_the_channels_wall_clock() {
    let h = Harness::with(|settings| {
        let inn = ChannelName::parse("inn").unwrap();
        let berlin = "Europe/Berlin".parse().unwrap();
        *settings = settings.clone().with_channel(ChannelSettings::new(
            inn,
            ChannelKind::Sandbox,
            5,
            berlin,
        ));
    })
    .await;
    let id = create(&h.app, draft("inn", &format!("Frühstück. {PACE}"))).await;
    let path = format!("/posts/{id}");
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get(&path).await;
    // Now is 01:00 on 1 December in Berlin.
    assert!(
        page.body.contains(r#"name="time" value="01:00""#),
        "{}",
        page.body
    );
    let text = format!("Frühstück. {PACE}");
    let edit = |date: &'static str, time: &'static str| {
        [
            ("text", text.clone()),
            ("date", date.to_owned()),
            ("time", time.to_owned()),
        ]
    };
    let fields = edit("2027-06-01", "08:00");
    let done = browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_eq!(
        post(&h, id).await.scheduled_at,
        utc("2027-06-01T06:00:00Z"),
        "08:00 in Berlin's summer time"
    );
    // Berlin's clocks go forward at 02:00 on 28 March 2027.
    let fields = edit("2027-03-28", "02:15");
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    let shown = browser.get(&path).await;
    assert!(
        shown.body.contains(
            "2027-03-28 02:15 does not exist in Europe/Berlin: the clocks skip from 02:00 to 03:00"
        ),
        "{}",
        shown.body
    );
    assert_eq!(post(&h, id).await.scheduled_at, utc("2027-06-01T06:00:00Z"));
    // Both fields empty: now.
    let fields = edit("", "");
    browser
        .submit(&path, &format!("{path}/edit"), &refs(&fields))
        .await;
    assert_eq!(post(&h, id).await.scheduled_at, h.app.now());
}
