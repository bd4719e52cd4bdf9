//! Composing a post (`/compose`): the channel's rules, the check before saving (the
//! Check button without JavaScript, `/compose/check` for the script), the preview, saving
//! as the operator, and refusals shown with the form as it was. And the post page's
//! check of a stored draft before anyone presses Approve.

use airlock_app::{ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, PostStatus};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use crate::support::{Browser, Harness, create, draft};

/// `inn`: a sandbox channel in New York's zone whose posts must carry `#inn` and stay
/// within 80 characters.
pub async fn with_rules() -> Harness {
    Harness::with(|settings| {
        let ny = "America/New_York".parse().unwrap();
        let mut inn = ChannelSettings::new(
            ChannelName::parse("inn").unwrap(),
            ChannelKind::Sandbox,
            5,
            ny,
        );
        inn.policy.required = vec!["#inn".into()];
        inn.policy.max_chars = Some(80);
        *settings = settings.clone().with_channel(inn);
    })
    .await
}

const GOOD: &str = "Breakfast is served from seven. #inn";
const LONG: &str =
    "Breakfast is served from seven, with bread from the bakery down the road and eggs.";
/// Fits, but lacks the required phrase: drafted, but not approvable.
const UNTAGGED: &str = "Breakfast is served from seven.";

fn fields<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all = vec![
        ("channel", "inn"),
        ("key", "form-1"),
        ("title", ""),
        ("p1_text", GOOD),
        ("p1_url", ""),
        ("p1_alt", ""),
        ("first_comment", ""),
        ("link", ""),
        ("date", ""),
        ("time", ""),
    ];
    for (name, value) in extra {
        match all.iter_mut().find(|(n, _)| n == name) {
            Some(field) => field.1 = value,
            None => all.push((name, value)),
        }
    }
    all
}

async fn newest(h: &Harness) -> airlock_core::Post {
    let posts = h
        .app
        .list_posts(&Principal::cli(), &airlock_app::PostFilter::default())
        .await
        .unwrap();
    posts.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_page_offers_every_channel_its_rules_and_the_pickers() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser.get("/compose?channel=inn").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    for channel in ["cats", "drill", "strict"] {
        assert!(
            body.contains(&format!(r#"<option value="{channel}">"#)),
            "{channel}"
        );
    }
    assert!(body.contains(r#"<option value="inn" selected>inn (sandbox, America/New_York)"#));
    assert!(body.contains("Rules of inn"));
    assert!(body.contains("Must contain “#inn”"));
    assert!(body.contains("At most 80 characters a part"));
    assert!(body.contains("At most 5 a day in America/New_York"));
    assert!(body.contains(r#"<input id="compose-date" type="date" name="date" value="">"#));
    assert!(body.contains(r#"<input id="compose-time" type="time" name="time" value="">"#));
    assert!(
        body.contains(r#"(in <span id="compose-zone">America/New_York</span>, the channel's zone"#)
    );
    assert!(
        body.contains(r#"name="key" value="compose-"#),
        "a fresh key"
    );
    assert!(body.contains(r#"<a href="/compose" aria-current="page">Compose</a>"#));
    // Without a channel, the first one.
    let page = browser.get("/compose").await;
    assert!(page.body.contains(r#"<option value="cats" selected>"#));
}

#[tokio::test]
async fn checking_without_javascript_shows_every_problem_and_keeps_the_form() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let n_events = h.n_events().await;
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[
                ("p1_text", LONG),
                ("p1_url", "https://inn.example/bread.jpg"),
                ("p1_alt", "Fresh bread"),
                ("date", "2026-12-05"),
                ("time", "07:00"),
                ("intent", "check"),
            ]),
        )
        .await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert!(
        body.contains("Cannot be drafted yet: fix what stops the draft"),
        "{body}"
    );
    assert!(
        body.contains("the text is 82 characters long; channel inn (sandbox) allows at most 80")
    );
    assert!(body.contains("stops the draft"));
    assert!(body.contains("the text lacks the required phrase &#34;#inn&#34;: add it"));
    assert!(body.contains("stops approval"));
    assert!(body.contains("82 / 80 characters"), "the counted length");
    // The preview: the text as sent, its media, when it goes out.
    assert!(body.contains("Preview on inn"));
    assert!(body.contains("<code>https://inn.example/bread.jpg</code>"));
    assert!(body.contains("alt: Fresh bread"));
    assert!(body.contains("2026-12-05 07:00 EST (in 4 days)"));
    assert!(body.contains("Next free slot"));
    // The form keeps what was typed, with a blank row after the filled one.
    assert!(body.contains(&format!(">{LONG}</textarea>")));
    assert!(body.contains(r#"name="p1_url" value="https://inn.example/bread.jpg""#));
    assert!(body.contains(r#"<input id="p1-url-2" type="url" name="p1_url" value="""#));
    assert!(body.contains(r#"name="date" value="2026-12-05""#));
    assert!(body.contains(r#"name="time" value="07:00""#));
    assert!(body.contains(r#"name="key" value="form-1""#));
    assert_eq!(h.n_events().await, n_events, "a check writes nothing");

    // Fixed: ready.
    let page = browser
        .submit("/compose", "/compose", &fields(&[("intent", "check")]))
        .await;
    assert!(
        page.body.contains("Ready: save it, and it goes to review"),
        "{}",
        page.body
    );
    assert!(page.body.contains("No problem found."));
    assert!(page.body.contains("36 / 80 characters"));
}

#[tokio::test]
async fn the_scripts_check_returns_the_panel_alone() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit(
            "/compose",
            "/compose/check",
            &fields(&[("p1_text", "No tag")]),
        )
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.starts_with(r#"<div id="compose-check""#),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<html"));
    assert!(page.body.contains("lacks the required phrase"));
    assert!(page.body.contains("Rules of inn"));
    // Another channel: its rules, and its problems.
    let page = browser
        .submit(
            "/compose",
            "/compose/check",
            &fields(&[("channel", "cats"), ("p1_text", "No tag")]),
        )
        .await;
    assert!(page.body.contains("Rules of cats"));
    assert!(!page.body.contains("lacks the required phrase"));
    // An unknown channel is a problem, not an error page.
    let page = browser
        .submit(
            "/compose",
            "/compose/check",
            &fields(&[("channel", "nope")]),
        )
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Cannot be checked"));
    assert!(page.body.contains("nope"));
}

#[tokio::test]
async fn saving_drafts_as_the_operator_in_the_channels_zone_once() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let form = fields(&[
        ("date", "2026-12-05"),
        ("time", "07:00"),
        ("p1_url", "https://inn.example/bread.jpg"),
        ("p1_alt", "Fresh bread"),
        ("link", "https://inn.example/"),
        ("first_comment", "Ask at the desk."),
        ("intent", "save"),
    ]);
    let page = browser.submit("/compose", "/compose", &form).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let post = newest(&h).await;
    assert_eq!(page.location(), format!("/posts/{}", post.id));
    assert_eq!(post.status, PostStatus::Draft);
    assert_eq!(post.created_by, "token:ops", "the operator's name");
    assert_eq!(post.content.channel.as_str(), "inn");
    assert_eq!(post.content.text, GOOD);
    assert_eq!(post.content.media[0].alt.as_deref(), Some("Fresh bread"));
    assert_eq!(post.content.link.as_deref(), Some("https://inn.example/"));
    assert_eq!(
        post.content.first_comment.as_deref(),
        Some("Ask at the desk.")
    );
    // 07:00 in New York in December is noon UTC.
    let at: DateTime<Utc> = "2026-12-05T12:00:00Z".parse().unwrap();
    assert_eq!(post.scheduled_at, at);
    let shown = browser.get(page.location()).await;
    assert!(
        shown.body.contains(&format!(
            "Drafted post #{} on inn, scheduled for 2026-12-05 07:00 EST: it goes through review",
            post.id
        )),
        "{}",
        shown.body
    );

    // The same form sent again (a double click) drafts nothing more.
    let again = browser.submit("/compose", "/compose", &form).await;
    assert_eq!(again.location(), format!("/posts/{}", post.id));
    assert_eq!(newest(&h).await.id, post.id);
    let shown = browser.get(&format!("/posts/{}", post.id)).await;
    assert!(shown.body.contains("This form already drafted post"));

    // Its author may not approve it: review is someone else's.
    browser
        .submit(
            &format!("/posts/{}", post.id),
            &format!("/posts/{}/approve", post.id),
            &[],
        )
        .await;
    assert_eq!(h.status(post.id).await, PostStatus::Draft);
}

#[tokio::test]
async fn a_thread_is_built_part_by_part_without_javascript() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit("/compose", "/compose", &fields(&[("intent", "add_part")]))
        .await;
    assert!(page.body.contains("Part 2 of 2"), "{}", page.body);
    assert!(page.body.contains(r#"name="p2_text""#));
    assert!(page.body.contains("Remove the last part"));
    let form = fields(&[
        ("p2_text", "Dinner from six. #inn"),
        ("p2_url", "https://inn.example/soup.jpg"),
        ("p2_alt", "Soup"),
        ("intent", "check"),
    ]);
    let page = browser.submit("/compose", "/compose", &form).await;
    assert!(page.body.contains("<strong>1/2</strong>"), "{}", page.body);
    assert!(page.body.contains("<strong>2/2</strong>"));
    assert!(page.body.contains("21 / 80 characters"));
    let mut save = form.clone();
    save.retain(|(n, _)| *n != "intent");
    save.push(("intent", "remove_part"));
    let page = browser.submit("/compose", "/compose", &save).await;
    assert!(!page.body.contains(r#"name="p2_text""#));
    save.retain(|(n, _)| *n != "intent");
    save.push(("intent", "save"));
    let page = browser.submit("/compose", "/compose", &save).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let post = newest(&h).await;
    assert_eq!(post.content.more.len(), 1);
    assert_eq!(
        post.content.more[0].media[0].url,
        "https://inn.example/soup.jpg"
    );
}

#[tokio::test]
async fn refusals_show_on_the_page_with_the_form_as_it_was() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let n_events = h.n_events().await;
    // A time the clocks skip: nothing is sent to the ledger.
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[
                ("date", "2027-03-14"),
                ("time", "02:30"),
                ("intent", "save"),
            ]),
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(
        page.body.contains(
            "Not drafted: 2027-03-14 02:30 does not exist in America/New_York: the clocks skip from 02:00 to 03:00"
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains(r#"name="date" value="2027-03-14""#));
    assert!(page.body.contains(&format!(">{GOOD}</textarea>")));
    // No text.
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[("p1_text", " "), ("intent", "save")]),
        )
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(
        page.body.contains("Not drafted: the text is empty"),
        "{}",
        page.body
    );
    assert_eq!(h.n_events().await, n_events, "nothing written");

    // A duplicate of a queued text: refused by the ledger, the form kept.
    let queued = create(&h.app, draft("inn", GOOD)).await;
    h.app.approve(&Principal::cli(), queued).await.unwrap();
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[("key", "form-2"), ("title", "Kept"), ("intent", "save")]),
        )
        .await;
    assert_eq!(page.status, StatusCode::CONFLICT, "{}", page.body);
    assert!(page.body.contains("Not drafted:"), "{}", page.body);
    assert!(page.body.contains("flash-refused"));
    assert!(page.body.contains(r#"name="title" value="Kept""#));
}

#[tokio::test]
async fn what_an_agent_wrote_is_escaped_in_the_form_and_the_preview() {
    let h = with_rules().await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let xss = "<script>alert(1)</script> #inn";
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[
                ("p1_text", xss),
                ("p1_alt", "\"><img src=x>"),
                ("p1_url", "https://inn.example/a.jpg"),
                ("intent", "check"),
            ]),
        )
        .await;
    assert!(!page.body.contains("<script>alert"));
    assert!(!page.body.contains("<img src=x>"));
    assert!(
        page.body
            .contains("&#60;script&#62;alert(1)&#60;/script&#62; #inn")
    );
}

#[tokio::test]
async fn the_post_page_shows_what_breaks_the_rules_before_approval() {
    let h = with_rules().await;
    // Drafted anyway: only its approval is stopped.
    let id = create(&h.app, draft("inn", UNTAGGED)).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let path = format!("/posts/{id}");
    let page = browser.get(&path).await;
    let body = &page.body;
    assert!(body.contains("Breaks the rules of inn"), "{body}");
    assert!(body.contains("Approve is refused until the content meets them"));
    let rules = body.find("Breaks the rules of inn").unwrap();
    let actions = body.find(r#"id="actions-title""#).unwrap();
    assert!(rules < actions, "shown before the Approve button");
    assert!(
        body.contains("Fix before approving:"),
        "and in the edit form"
    );
    // Both lists name the problem (the timeline may too, where drafting records it).
    let missing = "the text lacks the required phrase &#34;#inn&#34;";
    for list in [r#"id="rule-problems""#, r#"class="edit-problems""#] {
        let at = body.find(list).unwrap();
        let end = body[at..].find("</ul>").unwrap() + at;
        assert!(body[at..end].contains(missing), "{list}");
    }
    // Fixed through the edit form: the problems are gone.
    browser
        .submit(
            &path,
            &format!("{path}/edit"),
            &[("text", GOOD), ("date", "2026-11-30"), ("time", "19:00")],
        )
        .await;
    let page = browser.get(&path).await;
    assert!(
        !page.body.contains("Breaks the rules of inn"),
        "{}",
        page.body
    );
    // A post that breaks nothing shows nothing of it.
    let seeded = browser.get(&format!("/posts/{}", h.seeded.draft)).await;
    assert!(!seeded.body.contains("Breaks the rules"));
}

#[tokio::test]
async fn the_check_shows_the_cost_where_a_budget_counts_and_the_link_as_sent() {
    let h = Harness::with(|settings| {
        let x = ChannelName::parse("cats").unwrap();
        if let Some(cats) = settings.channels.get_mut(&x) {
            // As X sends it: the link at the end of the text, counted in its length.
            cats.policy.appends_link = true;
        }
    })
    .await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let page = browser
        .submit(
            "/compose",
            "/compose",
            &fields(&[
                ("channel", "cats"),
                ("p1_text", "Mochi naps."),
                ("link", "https://inn.example/"),
                ("intent", "check"),
            ]),
        )
        .await;
    let body = &page.body;
    // `cats` has a money budget, as X channels do.
    assert!(body.contains("<dt>Cost</dt>"), "{body}");
    assert!(
        body.contains("of this month&#39;s budget of $5.00"),
        "{body}"
    );
    assert!(
        body.contains("Mochi naps.\nhttps://inn.example/"),
        "the text as sent"
    );
    assert!(
        body.contains(r#"<span class="preview-length">32 characters</span>"#),
        "the link counts: {body}"
    );
    assert!(body.contains("The link is sent at the end of the text"));
}

#[tokio::test]
async fn the_drafts_limit_is_a_refusal_shown_with_the_form() {
    let h = Harness::with(|settings| settings.max_drafts_per_token = 1).await;
    let mut browser = Browser::signed_in(h.router(), &h.operator).await;
    let first = fields(&[
        ("channel", "cats"),
        ("p1_text", "The first of the day."),
        ("intent", "save"),
    ]);
    let page = browser.submit("/compose", "/compose", &first).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.body);
    let second = fields(&[
        ("channel", "cats"),
        ("key", "form-2"),
        ("p1_text", "One too many."),
        ("intent", "save"),
    ]);
    let page = browser.submit("/compose", "/compose", &second).await;
    assert!(page.status.is_client_error(), "{}", page.status);
    assert!(page.body.contains("Not drafted:"), "{}", page.body);
    assert!(page.body.contains(">One too many.</textarea>"));
    // The check says so before saving, too.
    let page = browser.submit("/compose", "/compose/check", &second).await;
    assert!(page.body.contains("stops the draft"), "{}", page.body);
}
