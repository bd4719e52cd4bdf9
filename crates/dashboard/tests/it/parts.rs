//! Posts of several parts on the post page: every part, its media and the facts the
//! approval binds, each part's intent, and a part in doubt settled with its platform id.

use airlock_app::Principal;
use airlock_app::posts::DraftInput;
use airlock_core::{Media, Part, PostId, PostStatus};

use crate::support::{Browser, Harness, PACE, create};

/// The image's bytes: a PNG header of 1200 x 800.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x04\xb0\0\0\x03\x20\x08\x02\0\0\0";

/// Serves the image where the thread names it: media bound by their digest are fetched
/// again before they go out.
async fn garden() -> (wiremock::MockServer, String) {
    use wiremock::matchers::method;
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("GET"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_bytes(PNG))
        .mount(&server)
        .await;
    let url = format!("{}/media/garden.png", server.uri());
    (server, url)
}

fn sha() -> String {
    airlock_core::hash::sha256_hex(PNG)
}
const XSS: &str = "<script>alert(1)</script>";
const ESCAPED: &str = "&#60;script&#62;alert(1)&#60;/script&#62;";

/// A thread of three parts with an image (its facts given) in part 2 and a first comment.
fn thread(channel: &str, url: &str) -> DraftInput {
    let image = Media {
        sha256: Some(sha()),
        content_type: Some("image/jpeg".into()),
        bytes: Some(48_213),
        width: Some(1200),
        height: Some(800),
        ..Media::new(url.to_owned(), Some("The garden at dawn".into()))
    };
    DraftInput {
        channel: channel.into(),
        parts: Some(vec![
            Part {
                text: format!("1/3 Our inn reopens. {PACE}"),
                media: Vec::new(),
            },
            Part {
                text: "2/3 The garden:".into(),
                media: vec![image],
            },
            Part {
                text: format!("3/3 Book at https://inn.example/ {XSS}"),
                media: Vec::new(),
            },
        ]),
        first_comment: Some(format!("Questions? Reply here. {XSS}")),
        ..DraftInput::default()
    }
}

async fn approved_thread(h: &Harness, channel: &str, url: &str) -> PostId {
    let id = create(&h.app, thread(channel, url)).await;
    h.app.approve(&Principal::cli(), id).await.unwrap();
    id
}

#[tokio::test]
async fn a_thread_shows_every_part_its_media_facts_and_each_parts_intent() {
    let h = Harness::new().await;
    let (_images, url) = garden().await;
    let id = approved_thread(&h, "cats", &url).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;

    // Before publishing: every part in order, the image's facts, the comment.
    let page = browser.get(&format!("/posts/{id}")).await;
    let body = &page.body;
    let at = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle} is not on the page:\n{body}"))
    };
    assert!(at("Part 1 of 3") < at("1/3 Our inn reopens."));
    assert!(at("1/3 Our inn reopens.") < at("Part 2 of 3"));
    assert!(at("Part 2 of 3") < at("2/3 The garden:"));
    assert!(at("2/3 The garden:") < at(&url));
    assert!(at(&url) < at("Part 3 of 3"));
    assert!(at("Part 3 of 3") < at("3/3 Book at https://inn.example/"));
    assert!(at("3/3 Book at") < at("First comment"));
    assert!(at("First comment") < at("Questions? Reply here."));
    assert!(body.contains("Alt text: The garden at dawn"));
    assert!(body.contains(&format!(r#"SHA-256 <code class="hash">{}</code>"#, sha())));
    assert!(body.contains("image/jpeg"));
    assert!(body.contains("48213 bytes (47.1 KiB)"));
    assert!(body.contains("1200 × 800 px"));
    assert!(
        !body.contains("<img"),
        "media show as links, never as images"
    );
    // What the agent wrote is escaped in the parts and the comment alike.
    assert!(body.contains(&format!("3/3 Book at https://inn.example/ {ESCAPED}")));
    assert!(body.contains(&format!("Questions? Reply here. {ESCAPED}")));
    assert!(!body.contains(XSS));
    assert!(!body.contains("<script>"));

    // Published: one intent per part and one for the comment, each with its id.
    h.app.publish_now(&Principal::cli(), id).await.unwrap();
    let detail = h.app.get_post(&Principal::cli(), id).await.unwrap();
    assert_eq!(detail.intents.len(), 4);
    let page = browser.get(&format!("/posts/{id}")).await;
    let body = &page.body;
    assert!(body.contains(r#"<th scope="col">Part</th>"#));
    for label in [
        "part 1 of 3",
        "part 2 of 3",
        "part 3 of 3",
        "the first comment",
    ] {
        assert!(
            body.contains(&format!(r#"<td class="nowrap">{label}</td>"#)),
            "{label} in the intents table"
        );
    }
    for intent in &detail.intents {
        assert!(body.contains(&intent.idempotency_key));
        let id = intent.platform_post_id.as_deref().expect("the part's id");
        assert!(body.contains(&format!("<code>{id}</code>")), "{id}");
        // The sandbox's permalinks are not web links: shown as text, never clickable.
        let link = intent.permalink.as_deref().expect("the part's permalink");
        assert!(body.contains(&format!("<code>{link}</code>")), "{link}");
        assert!(!body.contains(&format!(r#"href="{link}""#)));
    }
}

#[tokio::test]
async fn a_single_post_looks_as_before() {
    let h = Harness::new().await;
    let page = Browser::signed_in(h.router(), &h.operator)
        .await
        .get(&format!("/posts/{}", h.seeded.posted))
        .await;
    assert!(!page.body.contains("Part 1 of"));
    assert!(!page.body.contains("First comment"));
    // Its media were drafted without a byte check: the page says what that means.
    assert!(page.body.contains("Bytes not checked"));
    // Its one intent is part 1.
    assert!(page.body.contains(r#"<td class="nowrap">1</td>"#));
}

#[tokio::test]
async fn a_part_in_doubt_is_settled_with_its_platform_id() {
    let h = Harness::new().await;
    let (_images, url) = garden().await;
    let id = approved_thread(&h, "drill", &url).await;
    let outcome = h.app.publish_now(&Principal::cli(), id).await;
    assert!(
        matches!(outcome, Err(airlock_app::Error::OutcomeUnknown(_))),
        "{outcome:?}"
    );
    assert_eq!(h.status(id).await, PostStatus::NeedsReview);

    let path = format!("/posts/{id}");
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get(&path).await;
    assert!(page.body.contains("<dt>In doubt</dt><dd>part 1 of 3"));
    assert!(page.body.contains(&format!(
        r#"<label for="platform-id-{id}">Platform id <span class="small">(needed)</span></label>"#
    )));
    assert!(page.body.contains(r#"name="platform_post_id""#));
    assert!(page.body.contains("the next part replies to it"));
    // The inbox offers the same field, and says which part is in doubt.
    let inbox = browser.get("/review").await;
    assert!(inbox.body.contains(&format!(r#"id="platform-id-{id}""#)));
    assert!(inbox.body.contains("<dt>In doubt</dt><dd>part 1 of 3"));

    // Without the id the app refuses: the next part would have nothing to reply to.
    let refused = browser
        .submit(
            &path,
            &format!("{path}/resolve"),
            &[("outcome", "published"), ("back", &path)],
        )
        .await;
    assert_eq!(refused.location(), path);
    let page = browser.get(&path).await;
    assert!(page.body.contains("platform_post_id"), "{}", page.body);
    assert_eq!(h.status(id).await, PostStatus::NeedsReview);

    let page = browser
        .submit(
            &path,
            &format!("{path}/resolve"),
            &[
                ("outcome", "published"),
                ("permalink", "https://drill.example/p/1"),
                ("platform_post_id", " drill-part-1 "),
                ("back", &path),
            ],
        )
        .await;
    assert_eq!(page.location(), path);
    let page = browser.get(&path).await;
    assert!(
        page.body.contains(&format!(
            "Marked the part of post #{id} in doubt as published"
        )),
        "{}",
        page.body
    );
    // Part 1 is out under the id the person gave; the post waits for part 2.
    assert_eq!(h.status(id).await, PostStatus::Approved);
    let detail = h.app.get_post(&Principal::cli(), id).await.unwrap();
    let first = &detail.intents[0];
    assert_eq!(first.part, 1);
    assert_eq!(first.platform_post_id.as_deref(), Some("drill-part-1"));
    assert!(page.body.contains("<code>drill-part-1</code>"));
    assert!(page.body.contains(
        r#"<a href="https://drill.example/p/1" rel="noopener noreferrer nofollow" target="_blank">"#
    ));
}
