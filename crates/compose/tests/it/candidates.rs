//! Candidates: each eligibility rule and each skip reason on a fixture site, the reuse
//! window, the order, and `HEAD` checks against a local server.

use std::time::Duration as StdDuration;

use chrono::Duration;
use wiremock::ResponseTemplate;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{App, Principal};
use airlock_compose::head::HeadFailure;
use airlock_compose::{Error, SkipReason, candidates};
use airlock_core::policy::Violation;
use airlock_core::{ChannelKind, Media, Source};

use crate::support::*;

/// Records a post made from `path` on `channel` at `at`, as a past compose run would have.
pub async fn used_at(
    h: &Harness,
    app: &App,
    channel: &str,
    path: &str,
    at: chrono::DateTime<chrono::Utc>,
) {
    let back = h.clock.now();
    h.clock.set(at);
    app.create_post(
        &Principal::cli(),
        DraftInput {
            channel: channel.into(),
            text: format!("earlier post from {path}"),
            ..DraftInput::default()
        },
        None,
        DraftOrigin {
            source: Some(Source {
                path: path.into(),
                sha256: "0".repeat(64),
                updated: None,
            }),
            slot: None,
            allow_duplicate: false,
        },
    )
    .await
    .unwrap();
    h.clock.set(back);
}

#[tokio::test]
async fn a_fixture_site_yields_each_skip_reason_and_only_eligible_articles() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &["guaranteed"], &[]);
    let app = h.app();

    h.article("good.md", "good", "2026-11-01").await;
    h.article("nested/deep.md", "deep", "2026-11-10").await;
    h.write(".hidden.md", &article("hidden", "2026-11-01", ""));
    h.write("notes.txt", "not markdown");
    h.write(
        "draft.md",
        &article("draft", "2026-11-01", "").replace("status: publish", "status: draft"),
    );
    h.write(
        "no-status.md",
        &article("no-status", "2026-11-01", "").replace("status: publish\n", ""),
    );
    h.write("plain.md", "# Just a heading\n");
    h.write("unclosed.md", "---\nstatus: publish\n");
    h.write("bad-yaml.md", "---\ntitle: [unclosed\n---\n");
    h.write("bad-slug.md", &article("Bad Slug", "2026-11-01", ""));
    h.write(
        "no-slug.md",
        &article("x", "2026-11-01", "").replace("slug: x\n", ""),
    );
    h.write(
        "moved-url.md",
        &article(
            "moved-url",
            "2026-11-01",
            "url: https://elsewhere.example/moved-url/\n",
        ),
    );
    h.write("dup-a.md", &article("twin", "2026-11-01", ""));
    h.write("dup-b.md", &article("twin", "2026-11-02", ""));
    h.write(
        "no-title.md",
        &article("no-title", "2026-11-01", "")
            .replace("title: Title of no-title\n", "title: \"\"\n"),
    );
    h.write(
        "no-description.md",
        &article("no-description", "2026-11-01", "")
            .replace("description: About no-description.\n", ""),
    );
    h.write(
        "unchecked.md",
        &article("unchecked", "2026-11-01", "")
            .replace("fact_checked: 2026-11-01", "fact_checked: false"),
    );
    h.write(
        "forbidden.md",
        &article("forbidden", "2026-11-01", "")
            .replace("About forbidden.", "Guaranteed to meet the cat."),
    );
    h.page("forbidden").await;
    h.write("gone.md", &article("gone", "2026-11-01", ""));
    h.write("redirect.md", &article("redirect", "2026-11-01", ""));
    h.head(
        "/redirect/",
        ResponseTemplate::new(301).insert_header("Location", "https://inn.example/new/"),
    )
    .await;
    h.write("slow.md", &article("slow", "2026-11-01", ""));
    h.head(
        "/slow/",
        ResponseTemplate::new(200).set_delay(StdDuration::from_secs(5)),
    )
    .await;
    h.article("used.md", "used", "2026-11-01").await;
    used_at(
        &h,
        &app,
        "cats",
        "used.md",
        h.clock.now() - Duration::days(10),
    )
    .await;

    let found = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();

    let eligible: Vec<&str> = found.eligible.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(eligible, ["nested/deep.md", "good.md"]);
    let deep = &found.eligible[0];
    assert_eq!(deep.slug, "deep");
    assert_eq!(deep.url, h.url("deep"));
    assert_eq!(deep.title, "Title of deep");
    assert_eq!(deep.image, None);

    let reasons = reasons(&found.skipped);
    let expect = |path: &str| {
        reasons
            .get(path)
            .unwrap_or_else(|| panic!("{path} not skipped: {reasons:#?}"))
    };
    assert_eq!(
        expect("draft.md"),
        &SkipReason::NotPublished {
            status: Some("draft".into())
        }
    );
    assert_eq!(
        expect("no-status.md"),
        &SkipReason::NotPublished { status: None }
    );
    assert_eq!(expect("plain.md"), &SkipReason::NoFrontMatter);
    assert_eq!(expect("unclosed.md"), &SkipReason::UnclosedFrontMatter);
    assert!(matches!(
        expect("bad-yaml.md"),
        SkipReason::BadFrontMatter(_)
    ));
    assert_eq!(
        expect("bad-slug.md"),
        &SkipReason::BadSlug {
            slug: "Bad Slug".into()
        }
    );
    assert_eq!(expect("no-slug.md"), &SkipReason::Missing("slug"));
    assert_eq!(
        expect("moved-url.md"),
        &SkipReason::UrlMismatch {
            declared: "https://elsewhere.example/moved-url/".into(),
            url: h.url("moved-url")
        }
    );
    assert_eq!(
        expect("dup-a.md"),
        &SkipReason::DuplicateSlug {
            slug: "twin".into(),
            other: "dup-b.md".into()
        }
    );
    assert_eq!(
        expect("dup-b.md"),
        &SkipReason::DuplicateSlug {
            slug: "twin".into(),
            other: "dup-a.md".into()
        }
    );
    assert_eq!(expect("no-title.md"), &SkipReason::Missing("title"));
    assert_eq!(
        expect("no-description.md"),
        &SkipReason::Missing("description")
    );
    assert_eq!(expect("unchecked.md"), &SkipReason::Missing("fact_checked"));
    assert_eq!(
        expect("forbidden.md"),
        &SkipReason::Policy(vec![Violation::Forbidden("guaranteed".into())])
    );
    assert_eq!(
        expect("gone.md"),
        &SkipReason::Page {
            url: h.url("gone"),
            failure: HeadFailure::Status(404)
        }
    );
    assert_eq!(
        expect("redirect.md"),
        &SkipReason::Page {
            url: h.url("redirect"),
            failure: HeadFailure::Redirect {
                status: 301,
                location: Some("https://inn.example/new/".into())
            }
        }
    );
    assert_eq!(
        expect("slow.md"),
        &SkipReason::Page {
            url: h.url("slow"),
            failure: HeadFailure::Timeout(StdDuration::from_millis(500))
        }
    );
    assert!(matches!(expect("used.md"), SkipReason::RecentlyUsed { .. }));
    assert!(!reasons.contains_key(".hidden.md") && !reasons.contains_key("notes.txt"));
    assert_eq!(reasons.len(), 18, "{reasons:#?}");

    // The reasons read as sentences that say what to change.
    let said = |path: &str| expect(path).to_string();
    assert!(
        said("redirect.md").contains("redirects are not followed"),
        "{}",
        said("redirect.md")
    );
    assert!(
        said("slow.md").contains("did not answer HEAD within 0.5s"),
        "{}",
        said("slow.md")
    );
    assert!(said("gone.md").contains("HTTP 404"), "{}", said("gone.md"));
    assert!(
        said("used.md").contains("eligible again from"),
        "{}",
        said("used.md")
    );
    assert!(
        said("draft.md").contains("status: publish"),
        "{}",
        said("draft.md")
    );
}

#[tokio::test]
async fn candidates_serialize_with_the_spec_field_names() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    h.article("a.md", "a", "2026-11-01").await;
    h.write("b.md", "no front matter");
    let found = candidates(&h.app(), h.target("cats"), &h.checker())
        .await
        .unwrap();
    let json = serde_json::to_value(&found).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "eligible": [{"slug": "a", "path": "a.md", "url": h.url("a"), "title": "Title of a", "image": null}],
            "skipped": [{"path": "b.md", "reason": SkipReason::NoFrontMatter.to_string()}],
        })
    );
}

#[tokio::test]
async fn instagram_needs_a_jpeg_under_the_media_prefix() {
    let mut h = Harness::new().await;
    h.channel("gram", ChannelKind::Instagram, None, &[], &[]);
    let a = h.jpeg("a.jpg").await;
    let b = h.jpeg("b.jpeg").await;
    h.head(
        "/wp-content/uploads/e.jpg",
        ResponseTemplate::new(200).insert_header("Content-Type", "image/png"),
    )
    .await;
    h.head(
        "/wp-content/uploads/g.jpg",
        ResponseTemplate::new(302).insert_header("Location", "/elsewhere.jpg"),
    )
    .await;
    let uploads = format!("{}/wp-content/uploads", h.server.uri());
    let cases = [
        (
            "fm-image.md",
            "image: /wp-content/uploads/a.jpg\nimage_alt: 眠る猫\n",
            "",
        ),
        (
            "body-image.md",
            "",
            "![窓辺の猫](UPLOADS/b.jpeg)\n\n![later](UPLOADS/a.jpg)",
        ),
        ("no-image.md", "", "No pictures."),
        ("off-site.md", "image: https://cdn.example/c.jpg\n", ""),
        ("png.md", "image:\n  url: /wp-content/uploads/d.png\n", ""),
        ("wrong-type.md", "image: /wp-content/uploads/e.jpg\n", ""),
        (
            "missing-image.md",
            "",
            "<img src=\"UPLOADS/f.jpg\" alt=\"f\">",
        ),
        ("moved-image.md", "image: /wp-content/uploads/g.jpg\n", ""),
    ];
    for (file, front, body) in cases {
        let slug = file.trim_end_matches(".md");
        let text = article(slug, "2026-11-01", front).replace(
            &format!("Body of {slug}.\n"),
            &body.replace("UPLOADS", &uploads),
        );
        h.write(file, &text);
        h.page(slug).await;
    }

    let found = candidates(&h.app(), h.target("gram"), &h.checker())
        .await
        .unwrap();

    let eligible: Vec<(&str, Option<&str>)> = found
        .eligible
        .iter()
        .map(|e| (e.path.as_str(), e.image.as_deref()))
        .collect();
    assert_eq!(
        eligible,
        [
            ("body-image.md", Some(b.as_str())),
            ("fm-image.md", Some(a.as_str()))
        ]
    );
    let fm = &found.eligible[1];
    assert_eq!(
        fm.content.media,
        vec![Media::new(a.clone(), Some("眠る猫".into()))]
    );
    assert_eq!(
        found.eligible[0].content.media[0].alt.as_deref(),
        Some("窓辺の猫")
    );

    let reasons = reasons(&found.skipped);
    assert_eq!(reasons["no-image.md"], SkipReason::NoImage);
    assert_eq!(
        reasons["off-site.md"],
        SkipReason::ImageOffSite {
            url: "https://cdn.example/c.jpg".into(),
            prefix: format!("{uploads}/")
        }
    );
    assert_eq!(
        reasons["png.md"],
        SkipReason::ImageNotJpegUrl {
            url: format!("{uploads}/d.png")
        }
    );
    assert_eq!(
        reasons["wrong-type.md"],
        SkipReason::Image {
            url: format!("{uploads}/e.jpg"),
            failure: HeadFailure::NotJpeg {
                content_type: Some("image/png".into())
            }
        }
    );
    assert_eq!(
        reasons["missing-image.md"],
        SkipReason::Image {
            url: format!("{uploads}/f.jpg"),
            failure: HeadFailure::Status(404)
        }
    );
    assert!(matches!(
        &reasons["moved-image.md"],
        SkipReason::Image {
            failure: HeadFailure::Redirect { status: 302, .. },
            ..
        }
    ));
    assert_eq!(reasons.len(), 6, "{reasons:#?}");
}

#[tokio::test]
async fn an_instagram_channel_on_a_site_without_media_prefix_is_refused() {
    let mut h = Harness::new().await;
    h.channel("gram", ChannelKind::Instagram, None, &[], &[]);
    h.settings.sites.get_mut("inn").unwrap().media_prefix = None;
    let err = candidates(&h.app(), h.target("gram"), &h.checker())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err}");
    assert!(err.to_string().contains("media_prefix"), "{err}");
    assert!(err.is_refusal());
}

#[tokio::test]
async fn an_article_rests_for_reuse_after_on_its_channel_only() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    h.channel("dogs", ChannelKind::Sandbox, None, &[], &[]);
    let app = h.app();
    h.article("a.md", "a", "2026-11-01").await;
    used_at(&h, &app, "cats", "a.md", h.clock.now() - Duration::days(59)).await;

    let on_cats = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();
    assert!(on_cats.eligible.is_empty());
    assert!(matches!(
        on_cats.skipped[0].reason,
        SkipReason::RecentlyUsed { .. }
    ));
    let on_dogs = candidates(&app, h.target("dogs"), &h.checker())
        .await
        .unwrap();
    assert_eq!(
        on_dogs.eligible.len(),
        1,
        "another channel's use does not count"
    );

    h.clock.advance(Duration::days(1) + Duration::minutes(1));
    let later = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();
    assert_eq!(later.eligible.len(), 1, "{:?}", later.skipped);
    assert_eq!(
        later.eligible[0].last_used,
        Some(h.clock.now() - Duration::days(60) - Duration::minutes(1))
    );

    // A shorter window for the site.
    h.settings.sites.get_mut("inn").unwrap().reuse_after = "7d".parse().unwrap();
    used_at(&h, &app, "cats", "a.md", h.clock.now() - Duration::days(8)).await;
    let short = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();
    assert_eq!(short.eligible.len(), 1);
}

#[tokio::test]
async fn least_recently_used_comes_first_then_newest_updated() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &[]);
    let app = h.app();
    h.article("older.md", "older", "2026-11-01").await;
    h.article("newer.md", "newer", "2026-11-20T09:00:00+09:00")
        .await;
    h.article("newest-but-used.md", "newest-but-used", "2026-11-25")
        .await;
    h.article("used-long-ago.md", "used-long-ago", "2026-01-01")
        .await;
    h.write(
        "undated.md",
        &article("undated", "", "").replace("updated: \n", ""),
    );
    h.page("undated").await;
    used_at(
        &h,
        &app,
        "cats",
        "newest-but-used.md",
        h.clock.now() - Duration::days(70),
    )
    .await;
    used_at(
        &h,
        &app,
        "cats",
        "used-long-ago.md",
        h.clock.now() - Duration::days(300),
    )
    .await;

    let found = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();
    let order: Vec<&str> = found.eligible.iter().map(|e| e.slug.as_str()).collect();
    assert_eq!(
        order,
        [
            "newer",
            "older",
            "undated",
            "used-long-ago",
            "newest-but-used"
        ],
        "{:?}",
        found.skipped
    );
}

#[tokio::test]
async fn a_template_with_separator_lines_makes_a_thread_where_the_channel_takes_one() {
    let mut h = Harness::new().await;
    h.channel("cats", ChannelKind::Sandbox, None, &[], &["#ad"])
        .template =
        airlock_compose::template::Template::parse("{title}\n---\n{description}\n---\n{url}")
            .unwrap();
    let app = h.app();
    h.article("a.md", "a", "2026-11-01").await;
    let found = candidates(&app, h.target("cats"), &h.checker())
        .await
        .unwrap();
    let content = &found.eligible[0].content;
    let parts = content.parts();
    assert_eq!(parts.len(), 3, "{content:?}");
    assert!(
        parts[0].text.ends_with("\n#ad"),
        "the required phrase goes with part 1: {content:?}"
    );
    assert_eq!(parts[2].text, found.eligible[0].url);
    assert!(parts.iter().all(|p| !p.text.contains("---")));
}
