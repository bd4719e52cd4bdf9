//! The `linkedin` adapter against the Posts API fake.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::linkedin::{Linkedin, LinkedinSettings};
use airlock_platforms::{
    EarlierAttempt, Evidence, PartRequest, Platform, Prepared, PublishRequest, PublishedPart,
    ReconcileRequest, SettingsError, StepError, Verification,
};

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_no_canary_shown,
    assert_token_only_in_headers, client, closed_port_url, image, image_server, request,
};
use airlock_testkit::fake::linkedin::{Expect, LinkedinFake, PublishMode, SUB};

const ORGANIZATION: &str = "urn:li:organization:5515715";

fn settings(base_url: String) -> LinkedinSettings {
    LinkedinSettings {
        base_url,
        request_timeout: Duration::from_secs(5),
        ..LinkedinSettings::new(crate::support::token())
    }
}

fn adapter(fake: &LinkedinFake) -> Linkedin {
    Linkedin::new(settings(fake.server.uri()), client()).unwrap()
}

/// An adapter posting for an organization, which needs no `userinfo` read.
fn organization_adapter(base_url: String, request_timeout: Duration) -> Linkedin {
    Linkedin::new(
        LinkedinSettings {
            author: Some(ORGANIZATION.into()),
            request_timeout,
            ..settings(base_url)
        },
        client(),
    )
    .unwrap()
}

fn post() -> PublishRequest {
    request(
        "linkedin-inn",
        "Our cats (all 3) nap at 2pm #slowliving — see [notes] @inn_keeper",
    )
}

fn permalink(urn: &str) -> String {
    format!("https://www.linkedin.com/feed/update/{urn}/")
}

#[tokio::test]
async fn happy_path_posts_once_with_the_required_headers_and_builds_the_permalink() {
    let fake = LinkedinFake::start(1, 1).await;
    let linkedin = adapter(&fake);

    let account = linkedin.account().await.unwrap().unwrap();
    assert_eq!(account.username, SUB);
    assert_eq!(
        account.id.as_deref(),
        Some(format!("urn:li:person:{SUB}").as_str())
    );

    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let prepared = linkedin.prepare(&req).await.unwrap();
    let outcome = linkedin.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let urn = published
        .platform_post_id
        .clone()
        .expect("the URN from x-restli-id");
    assert!(urn.starts_with("urn:li:share:"), "{urn}");
    assert_eq!(
        published.permalink.as_deref(),
        Some(permalink(&urn).as_str())
    );

    let created = fake.with(|s| s.posts.clone());
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].author, format!("urn:li:person:{SUB}"));
    assert_eq!(
        created[0].commentary,
        r"Our cats \(all 3\) nap at 2pm \#slowliving — see \[notes\] \@inn\_keeper".to_owned()
            + "\n\nhttps://inn.example/naps/"
    );
    let requests = fake.server.received_requests().await.unwrap();
    let create = requests
        .iter()
        .find(|r| r.url.path() == "/rest/posts")
        .unwrap();
    let header = |name: &str| {
        create
            .headers
            .get(name)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("linkedin-version"), "202609");
    assert_eq!(header("x-restli-protocol-version"), "2.0.0");
    assert_eq!(header("authorization"), format!("Bearer {CANARY}"));

    // Reading posts back needs a restricted scope.
    assert_eq!(linkedin.verify(&urn).await, Verification::Unsupported);
    assert_no_canary(&account);
    assert_no_canary(&outcome);
    assert_no_canary(&linkedin);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn wrong_account_is_reported_before_anything_is_posted() {
    let fake = LinkedinFake::start(1, 0).await;
    fake.with(|s| s.sub = "someoneElse42".into());
    let account = adapter(&fake).account().await.unwrap().unwrap();
    assert_eq!(account.username, "someoneElse42");
    assert_no_canary(&account);
}

#[tokio::test]
async fn a_duplicate_naming_a_post_that_reads_back_counts_as_published() {
    let fake = LinkedinFake::start_expecting(0, 2, 1).await;
    fake.with(|s| {
        s.publish_mode = PublishMode::CreateThenDelay(LONG_DELAY);
        s.can_read_posts = true;
    });
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let req = post();
    let first = linkedin.publish(&req, &Prepared::default()).await;
    assert!(matches!(first, Outcome::Unknown { .. }), "{first:?}");

    // A person requeued it, believing it lost; LinkedIn knows better.
    fake.with(|s| s.publish_mode = PublishMode::Normal);
    let second = linkedin.publish(&req, &Prepared::default()).await;
    let earlier = fake.with(|s| s.posts[0].urn.clone());
    let Outcome::Published(published) = &second else {
        panic!("expected the earlier post, got {second:?}");
    };
    assert_eq!(
        published.platform_post_id.as_deref(),
        Some(earlier.as_str())
    );
    assert_eq!(
        published.permalink.as_deref(),
        Some(permalink(&earlier).as_str())
    );
    assert!(
        published
            .existing
            .as_deref()
            .is_some_and(|e| e.contains(&earlier)),
        "{published:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 1);
    assert_no_canary(&first);
    assert_no_canary(&second);
}

#[tokio::test]
async fn a_duplicate_naming_a_post_that_cannot_be_read_fails_as_duplicate_content() {
    let fake = LinkedinFake::start_expecting(0, 2, 1).await;
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let req = post();
    let first = linkedin.publish(&req, &Prepared::default()).await;
    assert!(matches!(first, Outcome::Published(_)), "{first:?}");
    let earlier = fake.with(|s| s.posts[0].urn.clone());
    let second = linkedin.publish(&req, &Prepared::default()).await;
    assert!(
        matches!(&second, Outcome::Rejected { reason, credential: false } if reason.contains("duplicate content") && reason.contains(&earlier) && reason.contains("HTTP 403")),
        "{second:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 1);
    assert_no_canary(&second);
}

#[tokio::test]
async fn an_inactive_version_is_rejected_as_a_configuration_problem() {
    let fake = LinkedinFake::start(0, 1).await;
    let linkedin = Linkedin::new(
        LinkedinSettings {
            version: "202401".into(),
            author: Some(ORGANIZATION.into()),
            ..settings(fake.server.uri())
        },
        client(),
    )
    .unwrap();
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: false, reason }
            if reason.contains("NONEXISTENT_VERSION") && reason.contains("202401")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 0);
}

#[tokio::test]
async fn publish_answering_500_is_unknown() {
    let fake = LinkedinFake::start(0, 1).await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenStatus(500));
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("HTTP 500")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn publish_timeout_after_sending_is_unknown() {
    let fake = LinkedinFake::start(0, 1).await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenDelay(LONG_DELAY));
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("timed out")),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let linkedin = Linkedin::new(settings(closed_port_url()), client()).unwrap();
    let account = linkedin.account().await.unwrap_err();
    assert!(
        matches!(account, StepError::Transient { .. }),
        "{account:?}"
    );
    let prepare = linkedin.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(prepare, StepError::Transient { .. }),
        "{prepare:?}"
    );
    let outcome = organization_adapter(closed_port_url(), Duration::from_secs(5))
        .publish(&post(), &Prepared::default())
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_no_canary_shown(&account);
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn expired_token_is_a_credential_rejection() {
    let fake = LinkedinFake::start(1, 1).await;
    fake.with(|s| s.token_expired = true);
    let account = adapter(&fake).account().await.unwrap_err();
    assert!(
        matches!(&account, StepError::Rejected { credential: true, reason } if reason.contains("HTTP 401")),
        "{account:?}"
    );
    let outcome = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .publish(&post(), &Prepared::default())
        .await;
    assert!(
        matches!(
            outcome,
            Outcome::Rejected {
                credential: true,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_no_canary_shown(&account);
    assert_no_canary(&outcome);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn daily_limit_reached_is_not_sent_with_a_retry_hint() {
    let fake = LinkedinFake::start(0, 2).await;
    fake.with(|s| s.daily_limit = 1);
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let first = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(matches!(first, Outcome::Published(_)), "{first:?}");
    let mut other = post();
    other.text = "Another day, another nap.".into();
    let second = linkedin.publish(&other, &Prepared::default()).await;
    assert!(
        matches!(&second, Outcome::NotSent { retry_after: Some(d), .. } if *d > chrono::Duration::zero()),
        "{second:?}"
    );
}

#[tokio::test]
async fn over_long_commentary_is_rejected() {
    let fake = LinkedinFake::start(0, 1).await;
    let mut req = post();
    req.text = "a".repeat(3001);
    let outcome = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .publish(&req, &Prepared::default())
        .await;
    assert!(
        matches!(
            outcome,
            Outcome::Rejected {
                credential: false,
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_video_is_refused_before_anything_is_sent() {
    let fake = LinkedinFake::start(0, 0).await;
    let mut req = post();
    let mut video = image("https://inn.example/cat.mp4");
    video.content_type = Some("video/mp4".into());
    req.media = vec![video];
    let err = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .prepare(&req)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason } if reason.contains("images only")),
        "{err:?}"
    );
}

#[tokio::test]
async fn reconcile_cannot_read_linkedin_and_leaves_it_to_a_person() {
    let fake = LinkedinFake::start(0, 0).await;
    let evidence = adapter(&fake)
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: None,
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
}

#[tokio::test]
async fn malformed_settings_are_refused() {
    for (version, author, setting) in [
        ("2026-09", None, "version"),
        ("202609", Some("urn:li:company:1"), "author"),
    ] {
        let err = Linkedin::new(
            LinkedinSettings {
                version: version.into(),
                author: author.map(str::to_owned),
                ..settings("https://api.linkedin.com".into())
            },
            client(),
        )
        .unwrap_err();
        assert!(
            matches!(err, SettingsError::Invalid { setting: s, .. } if s == setting),
            "{err}"
        );
    }
}

/// The bytes `image_server` serves, as approved.
const CAT_JPEG: [u8; 8] = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4];

/// An image at `url` approved with the digest of `approved`, with alt text `alt`.
fn approved_image(url: String, approved: &[u8], alt: &str) -> airlock_core::Media {
    let mut media = image(&url);
    media.alt = Some(alt.to_owned());
    media.sha256 = Some(airlock_core::hash::sha256_hex(approved));
    media.content_type = Some("image/jpeg".into());
    media
}

/// The post's first comment, after the post `urn` (part 1 of 2).
fn first_comment(text: &str, urn: &str) -> PublishRequest {
    let mut req = request("linkedin-inn", text);
    req.idempotency_key = format!("{}-2", req.idempotency_key);
    req.part = PartRequest {
        number: 2,
        of: 2,
        comment: true,
        published: vec![PublishedPart {
            number: 1,
            platform_post_id: urn.to_owned(),
            permalink: Some(permalink(urn)),
        }],
    };
    req
}

/// A member's post with one image: downloaded, uploaded through the Images API (the
/// member may not read its status, so it is not read again), and posted as
/// `content.media` with its alt text.
#[tokio::test]
async fn one_image_is_uploaded_and_posted_as_media_with_its_alt_text() {
    let fake = LinkedinFake::start_counting(Expect {
        userinfo: 1,
        create: 1,
        image_init: 1,
        image_put: 1,
        image_read: 1,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let linkedin = adapter(&fake);
    let mut req = post();
    req.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        &CAT_JPEG,
        "Mochi asleep",
    )];
    let prepared = linkedin.prepare(&req).await.unwrap();
    let urn = prepared
        .platform_ref
        .clone()
        .expect("the image URN is the handle");
    assert!(urn.starts_with("urn:li:image:"), "{urn}");
    let outcome = linkedin.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    fake.with(|s| {
        let post = &s.posts[0];
        assert_eq!(post.images, vec![urn.clone()]);
        assert!(!post.multi_image);
        assert_eq!(post.alt_texts, vec![Some("Mochi asleep".to_owned())]);
        assert_eq!(s.images[0].bytes, CAT_JPEG);
        assert_eq!(s.images[0].owner, format!("urn:li:person:{SUB}"));
    });
    assert_token_only_in_headers(&fake.server).await;
}

/// An organization's post with three images: each uploaded and read `AVAILABLE`, then
/// one multi-image post naming them in order.
#[tokio::test]
async fn several_images_are_posted_as_one_multi_image_post() {
    let fake = LinkedinFake::start_counting(Expect {
        create: 1,
        image_init: 3,
        image_put: 3,
        image_read: 3,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let mut req = post();
    req.media = (1..=3)
        .map(|n| {
            approved_image(
                format!("{}/cat.jpg", images.uri()),
                &CAT_JPEG,
                &format!("Cat {n}"),
            )
        })
        .collect();
    let prepared = linkedin.prepare(&req).await.unwrap();
    let outcome = linkedin.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    fake.with(|s| {
        let post = &s.posts[0];
        assert!(post.multi_image);
        assert_eq!(
            post.images,
            s.images.iter().map(|i| i.urn.clone()).collect::<Vec<_>>()
        );
        assert_eq!(post.alt_texts[2].as_deref(), Some("Cat 3"));
        assert_eq!(post.author, ORGANIZATION);
    });
}

/// LinkedIn is still processing an image: its status is read again until `AVAILABLE`,
/// then the post goes out.
#[tokio::test]
async fn an_image_still_processing_is_waited_for() {
    let fake = LinkedinFake::start_counting(Expect {
        create: 1,
        image_init: 1,
        image_put: 1,
        image_read: 2,
        ..Expect::NONE
    })
    .await;
    fake.with(|s| s.processing_reads = 1);
    let images = image_server().await;
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let mut req = post();
    req.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        &CAT_JPEG,
        "Mochi",
    )];
    let prepared = linkedin.prepare(&req).await.unwrap();
    assert!(matches!(
        linkedin.publish(&req, &prepared).await,
        Outcome::Published(_)
    ));
}

/// The upload URL expired before the bytes were sent: a step error that may pass (the
/// next attempt gets a new URL), and no post.
#[tokio::test]
async fn an_expired_upload_url_is_a_step_error_and_nothing_is_posted() {
    let fake = LinkedinFake::start_counting(Expect {
        image_init: 1,
        image_put: 1,
        ..Expect::NONE
    })
    .await;
    fake.with(|s| s.expire_upload_urls = true);
    let images = image_server().await;
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let mut req = post();
    req.media = vec![
        approved_image(format!("{}/cat.jpg", images.uri()), &CAT_JPEG, "Mochi"),
        approved_image(
            format!("{}/cat.jpg", images.uri()),
            &CAT_JPEG,
            "Mochi again",
        ),
    ];
    let err = linkedin.prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, .. } if reason.contains("may have expired") && reason.contains("(1 of 2)")),
        "{err:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 0);
    assert_no_canary(&err);
}

/// The bytes at an image's URL are not those approved: refused, naming both digests,
/// before anything is uploaded.
#[tokio::test]
async fn a_swapped_image_is_refused_before_anything_is_uploaded() {
    let fake = LinkedinFake::start(0, 0).await;
    let images = image_server().await;
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let mut req = post();
    req.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        b"the picture the critic saw",
        "Mochi",
    )];
    let err = linkedin.prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason }
            if reason.contains(&airlock_core::hash::sha256_hex(&CAT_JPEG))
                && reason.contains(&airlock_core::hash::sha256_hex(b"the picture the critic saw"))),
        "{err:?}"
    );
    assert!(fake.with(|s| s.images.is_empty()));
}

/// The first comment goes on the post, as the member, with its text as typed; its URN is
/// the part's id, and its permalink points at it under the post.
#[tokio::test]
async fn the_first_comment_goes_on_the_post_and_names_its_urn() {
    let fake = LinkedinFake::start_counting(Expect {
        userinfo: 1,
        create: 1,
        comment: 1,
        ..Expect::NONE
    })
    .await;
    let linkedin = adapter(&fake);
    let mut req = post();
    req.part = PartRequest {
        number: 1,
        of: 2,
        comment: false,
        published: Vec::new(),
    };
    let prepared = linkedin.prepare(&req).await.unwrap();
    let Outcome::Published(published) = linkedin.publish(&req, &prepared).await else {
        panic!("the post");
    };
    let urn = published.platform_post_id.unwrap();

    let comment = first_comment("Menu (and #hours) at the link [above]", &urn);
    let prepared = linkedin.prepare(&comment).await.unwrap();
    let outcome = linkedin.publish(&comment, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("the comment: {outcome:?}");
    };
    let comment_urn = published.platform_post_id.clone().unwrap();
    assert!(comment_urn.starts_with("urn:li:comment:("), "{comment_urn}");
    assert!(
        published.permalink.as_deref().is_some_and(
            |p| p.starts_with(&permalink(&urn)) && p.contains("commentUrn=urn%3Ali%3Acomment")
        ),
        "{published:?}"
    );
    let comments = fake.with(|s| s.comments_on(&urn));
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].urn, comment_urn);
    assert_eq!(comments[0].actor, format!("urn:li:person:{SUB}"));
    assert_eq!(comments[0].text, "Menu (and #hours) at the link [above]");
    assert_no_canary(&outcome);
    assert_token_only_in_headers(&fake.server).await;
}

/// The comment's request landed but its answer never came: reconcile finds it among the
/// post's comments by author and text. Without permission to read comments, or for a
/// comment that never went out, there is no proof. A retry of a comment an earlier
/// attempt may have made looks first, and sends nothing when it finds it.
#[tokio::test]
async fn reconcile_finds_a_first_comment_whose_answer_was_lost() {
    let fake = LinkedinFake::start_counting(Expect {
        create: 1,
        comment: 1,
        comments_read: 4,
        ..Expect::NONE
    })
    .await;
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let Outcome::Published(published) = linkedin.publish(&post(), &Prepared::default()).await
    else {
        panic!("the post");
    };
    let urn = published.platform_post_id.unwrap();
    fake.with(|s| s.comment_mode = PublishMode::CreateThenDelay(LONG_DELAY));
    let comment = first_comment("Menu at the link above.", &urn);
    let outcome = linkedin.publish(&comment, &Prepared::default()).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let landed = fake.with(|s| s.comments[0].urn.clone());
    let reconcile = |publish: PublishRequest| ReconcileRequest {
        publish,
        platform_ref: None,
    };

    // The token may not read comments: nothing proves it either way.
    assert_eq!(
        linkedin.reconcile(&reconcile(comment.clone())).await,
        Evidence::NoProof
    );
    fake.with(|s| s.can_read_comments = true);
    let evidence = linkedin.reconcile(&reconcile(comment.clone())).await;
    let Evidence::Published(proof) = &evidence else {
        panic!("found: {evidence:?}");
    };
    assert_eq!(proof.platform_post_id.as_deref(), Some(landed.as_str()));
    // Another text was never sent.
    assert_eq!(
        linkedin
            .reconcile(&reconcile(first_comment("Something else.", &urn)))
            .await,
        Evidence::NoProof
    );

    let mut retry = comment.clone();
    retry.earlier = vec![EarlierAttempt {
        generation: 2,
        idempotency_key: comment.idempotency_key.clone(),
        platform_ref: None,
        sent_at: chrono::Utc::now() - chrono::Duration::hours(1),
        definitely_unpublished: false,
        resend: false,
    }];
    let prepared = linkedin.prepare(&retry).await.unwrap();
    let proof = prepared.already_published.expect("found before sending");
    assert_eq!(proof.platform_post_id.as_deref(), Some(landed.as_str()));
    assert_eq!(proof.attempt, Some(2));
    assert_eq!(fake.with(|s| s.comments.len()), 1);
}
