//! The `instagram` adapter against the Graph fake.

use std::time::Duration;

use airlock_core::{Media, Outcome};
use airlock_platforms::instagram::{Instagram, InstagramSettings};
use airlock_platforms::{
    EarlierAttempt, Evidence, PartRequest, Platform, Prepared, Proof, PublishRequest,
    PublishedPart, ReconcileRequest, SettingsError, StepError, Verification,
};

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_no_canary_shown,
    assert_token_only_in_headers, client, closed_port_url, hits, image, request,
};
use airlock_testkit::fake::meta::{
    CreateMode, Expect, Flavour, GraphFake, IG_USER_ID, NewContainers, PublishMode,
};

const JPEG: &str = "https://inn.example/wp-content/uploads/2026/09/cat.jpg";

fn settings(base_url: String) -> InstagramSettings {
    InstagramSettings {
        base_url,
        request_timeout: Duration::from_secs(5),
        poll_interval: Duration::from_millis(10),
        poll_timeout: Duration::from_secs(5),
        ..InstagramSettings::new(crate::support::token())
    }
}

fn adapter(fake: &GraphFake) -> Instagram {
    Instagram::new(settings(fake.uri()), client()).unwrap()
}

fn post() -> PublishRequest {
    let mut req = request("instagram-inn", "A quiet afternoon at the inn. #cats");
    req.media = vec![image(JPEG)];
    req
}

/// `prepare` reads `/me` once for the user id, then the limit, the container, its status.
const PREPARE_AND_PUBLISH: Expect = Expect {
    identity: 1,
    limit: 1,
    create: 1,
    status_at_least: 1,
    publish: 1,
    media_read: 0,
};

fn reconcile_request(prepared: &Prepared) -> ReconcileRequest {
    ReconcileRequest {
        publish: post(),
        platform_ref: prepared.platform_ref.clone(),
    }
}

#[tokio::test]
async fn happy_path_creates_a_container_publishes_it_once_and_reads_the_permalink() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            media_read: 1,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let instagram = adapter(&fake);

    let account = instagram.account().await.unwrap().unwrap();
    assert_eq!(account.username, "inn_cats");
    // The professional account's `user_id`, not the app-scoped `id`.
    assert_eq!(account.id.as_deref(), Some(IG_USER_ID));

    let mut req = post();
    req.link = Some("https://inn.example/quiet-afternoon/".into());
    let prepared = instagram.prepare(&req).await.unwrap();
    let container = prepared.platform_ref.clone().unwrap();
    let params = fake.with(|s| s.container_params(&container));
    assert_eq!(params["image_url"], JPEG);
    assert_eq!(params["alt_text"], "A cat asleep on a cushion");
    assert_eq!(
        params["caption"],
        "A quiet afternoon at the inn. #cats\n\nhttps://inn.example/quiet-afternoon/"
    );

    let outcome = instagram.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let media_id = published.platform_post_id.clone().expect("the media id");
    assert_eq!(
        fake.with(|s| s.container_state(&container)),
        Some("PUBLISHED")
    );
    assert_eq!(
        hits(&fake.server, &format!("/{IG_USER_ID}/media_publish")).await,
        1
    );

    let verification = instagram.verify(&media_id).await;
    let Verification::Verified {
        permalink: Some(permalink),
    } = &verification
    else {
        panic!("expected a permalink, got {verification:?}");
    };
    assert!(
        permalink.starts_with("https://www.instagram.com/p/"),
        "{permalink}"
    );

    for request in fake.server.received_requests().await.unwrap() {
        assert!(request.url.path().starts_with("/v24.0/"), "{}", request.url);
        assert_eq!(
            request
                .headers
                .get("authorization")
                .unwrap()
                .to_str()
                .unwrap(),
            format!("Bearer {CANARY}")
        );
    }
    for shown in [
        format!("{account:?}"),
        format!("{prepared:?}"),
        format!("{outcome:?}"),
    ] {
        assert!(!shown.contains(CANARY), "{shown}");
    }
    assert_no_canary(&verification);
    assert_no_canary(&instagram);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn wrong_account_is_reported_before_any_container_is_created() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            ..Expect::NONE
        },
    )
    .await;
    fake.with(|s| s.username = "someone_else".into());
    let account = adapter(&fake).account().await.unwrap().unwrap();
    assert_eq!(account.username, "someone_else");
    assert_eq!(hits(&fake.server, "/media").await, 0);
    assert_no_canary(&account);
}

#[tokio::test]
async fn non_jpeg_images_and_posts_without_media_or_with_too_many_are_refused_before_any_call() {
    let fake = GraphFake::start(Flavour::Instagram, Expect::NONE).await;
    let instagram = adapter(&fake);
    let png_checked = Media {
        content_type: Some("image/png".into()),
        ..image(JPEG)
    };
    for media in [
        vec![image("https://inn.example/cat.png")],
        vec![image("https://inn.example/cat.jpg.webp?x=.jpg")],
        vec![],
        vec![image(JPEG); 11],
        // The checked type wins over the URL.
        vec![png_checked.clone()],
        vec![image(JPEG), png_checked],
    ] {
        let mut req = post();
        req.media = media;
        let err = instagram.prepare(&req).await.unwrap_err();
        assert!(
            matches!(
                err,
                StepError::Rejected {
                    credential: false,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_no_canary_shown(&err);
    }
}

#[tokio::test]
async fn container_that_finishes_after_a_few_polls_is_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            status_at_least: 4,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.in_progress_reads = 3);
    let instagram = adapter(&fake);
    let prepared = instagram.prepare(&post()).await.unwrap();
    let outcome = instagram.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Published(p) if p.platform_post_id.is_some()),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn error_container_is_rejected_and_never_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.new_containers = NewContainers::Error("Media download has timed out".into()));
    let err = adapter(&fake).prepare(&post()).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason } if reason.contains("Media download has timed out")),
        "{err:?}"
    );
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn expired_container_is_transient_and_never_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.new_containers = NewContainers::Expire);
    let err = adapter(&fake).prepare(&post()).await.unwrap_err();
    assert!(matches!(err, StepError::Transient { .. }), "{err:?}");
}

#[tokio::test]
async fn publish_answering_500_is_unknown_and_reconcile_finds_the_container_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::PublishThenStatus(500));
    let instagram = adapter(&fake);
    let prepared = instagram.prepare(&post()).await.unwrap();
    let outcome = instagram.publish(&post(), &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let evidence = instagram.reconcile(&reconcile_request(&prepared)).await;
    assert!(
        matches!(&evidence, Evidence::Published(Proof { note, .. }) if note.contains("PUBLISHED")),
        "{evidence:?}"
    );
    assert_no_canary(&outcome);
    assert_no_canary(&evidence);
}

#[tokio::test]
async fn publish_answering_503_without_publishing_reconciles_as_not_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutPublishing(503));
    let instagram = adapter(&fake);
    let prepared = instagram.prepare(&post()).await.unwrap();
    let outcome = instagram.publish(&post(), &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let evidence = instagram.reconcile(&reconcile_request(&prepared)).await;
    assert!(matches!(&evidence, Evidence::NoProof), "{evidence:?}");
}

#[tokio::test]
async fn publish_timeout_after_sending_is_unknown() {
    let fake = GraphFake::start(Flavour::Instagram, PREPARE_AND_PUBLISH).await;
    fake.with(|s| s.publish_mode = PublishMode::PublishThenDelay(LONG_DELAY));
    let instagram = Instagram::new(
        InstagramSettings {
            request_timeout: SHORT_TIMEOUT,
            ..settings(fake.uri())
        },
        client(),
    )
    .unwrap();
    let prepared = instagram.prepare(&post()).await.unwrap();
    let outcome = instagram.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("timed out")),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let instagram = Instagram::new(
        InstagramSettings {
            user_id: Some(IG_USER_ID.into()),
            ..settings(closed_port_url())
        },
        client(),
    )
    .unwrap();
    let account = instagram.account().await.unwrap_err();
    assert!(
        matches!(account, StepError::Transient { .. }),
        "{account:?}"
    );
    let prepare = instagram.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(prepare, StepError::Transient { .. }),
        "{prepare:?}"
    );
    let outcome = instagram
        .publish(&post(), &Prepared::with_ref("17900000000000007"))
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_no_canary_shown(&account);
    assert_no_canary_shown(&prepare);
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn expired_token_is_a_credential_rejection() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.token_expired = true);
    let instagram = adapter(&fake);
    let account = instagram.account().await.unwrap_err();
    assert!(
        matches!(
            account,
            StepError::Rejected {
                credential: true,
                ..
            }
        ),
        "{account:?}"
    );

    fake.with(|s| s.token_expired = false);
    let prepared = instagram.prepare(&post()).await.unwrap();
    fake.with(|s| s.token_expired = true);
    let outcome = instagram.publish(&post(), &prepared).await;
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
async fn publishing_limit_reached_is_transient_with_a_retry_hint_and_makes_no_container() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            limit: 1,
            ..Expect::NONE
        },
    )
    .await;
    fake.with(|s| {
        s.quota_total = 50;
        s.fill_quota();
    });
    let err = adapter(&fake).prepare(&post()).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { retry_after: Some(_), reason } if reason.contains("50 of 50")),
        "{err:?}"
    );
}

#[tokio::test]
async fn limit_reached_at_publish_is_not_sent_with_a_retry_hint() {
    let fake = GraphFake::start(Flavour::Instagram, PREPARE_AND_PUBLISH).await;
    let instagram = adapter(&fake);
    let prepared = instagram.prepare(&post()).await.unwrap();
    fake.with(|s| s.fill_quota());
    let outcome = instagram.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::NotSent { retry_after: Some(_), reason } if reason.contains("2207042")),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn a_container_that_expired_before_publishing_is_not_sent() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            publish: 1,
            // The refusal is checked against the container: it is not PUBLISHED.
            status_at_least: 1,
            ..Expect::NONE
        },
    )
    .await;
    let instagram = adapter(&fake);
    instagram.account().await.unwrap();
    let container = fake.with(|s| s.add_container("EXPIRED"));
    let outcome = instagram
        .publish(&post(), &Prepared::with_ref(container))
        .await;
    assert!(
        matches!(&outcome, Outcome::NotSent { reason, .. } if reason.contains("2207020")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_configured_user_id_is_used_for_identity_and_paths() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let instagram = Instagram::new(
        InstagramSettings {
            user_id: Some(IG_USER_ID.into()),
            api_version: "v26.0".into(),
            ..settings(fake.uri())
        },
        client(),
    )
    .unwrap();
    let account = instagram.account().await.unwrap().unwrap();
    assert_eq!(account.id.as_deref(), Some(IG_USER_ID));
    let prepared = instagram.prepare(&post()).await.unwrap();
    assert!(matches!(
        instagram.publish(&post(), &prepared).await,
        Outcome::Published(_)
    ));
    assert_eq!(hits(&fake.server, &format!("/v26.0/{IG_USER_ID}")).await, 1);
    assert_eq!(
        hits(&fake.server, &format!("/v26.0/{IG_USER_ID}/media_publish")).await,
        1
    );
}

#[tokio::test]
async fn malformed_settings_are_refused() {
    let err = Instagram::new(
        InstagramSettings {
            api_version: "24".into(),
            ..settings("https://graph.instagram.com".into())
        },
        client(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            SettingsError::Invalid {
                setting: "api_version",
                ..
            }
        ),
        "{err}"
    );
    let err = Instagram::new(settings("http://graph.instagram.com".into()), client()).unwrap_err();
    assert!(matches!(err, SettingsError::BaseUrl(_)), "{err}");
}

// Carousels, Reels and the first comment.

fn typed(url: &str, content_type: &str) -> Media {
    Media {
        content_type: Some(content_type.into()),
        ..image(url)
    }
}

/// Part 1 of a post with a first comment.
fn first_of_two(media: Vec<Media>) -> PublishRequest {
    let mut req = post();
    req.media = media;
    req.part = PartRequest {
        number: 1,
        of: 2,
        comment: false,
        published: Vec::new(),
    };
    req
}

/// The first comment, under `media_id`.
fn comment_on(media_id: &str, text: &str) -> PublishRequest {
    let mut req = request("instagram-inn", text);
    req.idempotency_key = format!("{}-2", req.idempotency_key);
    req.part = PartRequest {
        number: 2,
        of: 2,
        comment: true,
        published: vec![PublishedPart {
            number: 1,
            platform_post_id: media_id.to_owned(),
            permalink: None,
        }],
    };
    req
}

fn three_jpegs() -> Vec<Media> {
    (1..=3)
        .map(|i| typed(&format!("https://inn.example/cat-{i}.jpg"), "image/jpeg"))
        .collect()
}

#[tokio::test]
async fn a_carousel_of_three_images_and_a_first_comment_go_out_once() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            // Three items and their carousel.
            create: 4,
            status_at_least: 4,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let instagram = adapter(&fake);

    let req = first_of_two(three_jpegs());
    let prepared = instagram.prepare(&req).await.unwrap();
    let carousel = prepared.platform_ref.clone().unwrap();
    let params = fake.with(|s| s.container_params(&carousel));
    assert_eq!(params["media_type"], "CAROUSEL");
    assert_eq!(params["caption"], req.text);
    let children = fake.with(|s| s.children(&carousel));
    assert_eq!(children.len(), 3);
    for (i, child) in children.iter().enumerate() {
        let item = fake.with(|s| s.container_params(child));
        assert_eq!(
            item["image_url"],
            format!("https://inn.example/cat-{}.jpg", i + 1)
        );
        assert_eq!(item["is_carousel_item"], "true");
        assert!(!item.contains_key("caption"), "{item:?}");
    }
    let outcome = instagram.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let media_id = published.platform_post_id.clone().unwrap();

    let comment = comment_on(&media_id, "Which one is your favourite?");
    let prepared = instagram.prepare(&comment).await.unwrap();
    assert_eq!(prepared, Prepared::default());
    let outcome = instagram.publish(&comment, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected the comment, got {outcome:?}");
    };
    let comment_id = published.platform_post_id.clone().unwrap();

    fake.with(|s| {
        assert_eq!(s.published(), 1, "one carousel media");
        assert_eq!(s.media_container(&media_id), Some(carousel.clone()));
        let comments = s.own_comments();
        assert_eq!(comments.len(), 1, "one comment");
        assert_eq!(comments[0].id, comment_id);
        assert_eq!(comments[0].on, media_id);
        assert_eq!(comments[0].text, "Which one is your favourite?");
    });
    assert_eq!(
        hits(&fake.server, &format!("/{media_id}/comments")).await,
        1
    );
    assert_no_canary(&outcome);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn a_first_comment_whose_answer_was_lost_is_settled_by_the_comment_list() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            ..Expect::NONE
        },
    )
    .await;
    let instagram = adapter(&fake);
    let media_id = fake.with(|s| {
        let container = s.add_container("FINISHED");
        s.publish_now(&container).unwrap()
    });
    let text = "Which one is your favourite?";
    // Someone else wrote the same words first: that is not ours.
    let foreign = fake.with(|s| s.add_remark(&media_id, "someone_else", text));

    fake.with(|s| s.comment_mode = CreateMode::CreateThenStatus(500));
    let req = comment_on(&media_id, text);
    let outcome = instagram.publish(&req, &Prepared::default()).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    assert_no_canary(&outcome);

    let attempt = EarlierAttempt {
        generation: 1,
        idempotency_key: req.idempotency_key.clone(),
        platform_ref: None,
        sent_at: chrono::Utc::now(),
        definitely_unpublished: false,
        resend: false,
    };
    let reconcile = ReconcileRequest {
        publish: PublishRequest {
            earlier: vec![attempt.clone()],
            ..req.clone()
        },
        platform_ref: None,
    };
    let evidence = instagram.reconcile(&reconcile).await;
    let Evidence::Published(Proof {
        platform_post_id: Some(id),
        ..
    }) = &evidence
    else {
        panic!("expected the comment as proof, got {evidence:?}");
    };
    assert_ne!(id, &foreign);
    assert_eq!(fake.with(|s| s.own_comments())[0].id, *id);

    // A retry (a person requeued it) finds it too and sends nothing.
    let retry = PublishRequest {
        earlier: vec![EarlierAttempt {
            sent_at: chrono::Utc::now() - chrono::Duration::minutes(20),
            ..attempt
        }],
        ..req.clone()
    };
    let prepared = instagram.prepare(&retry).await.unwrap();
    assert_eq!(
        prepared
            .already_published
            .as_ref()
            .and_then(|p| p.platform_post_id.as_ref()),
        Some(id)
    );
    assert_eq!(fake.with(|s| s.own_comments().len()), 1);
    assert_eq!(
        hits(&fake.server, &format!("/{media_id}/comments")).await,
        // The lost POST, the reconcile's list, the retry's list.
        3
    );
}

#[tokio::test]
async fn a_first_comment_that_never_landed_proves_nothing_and_waits_while_it_may() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            identity: 1,
            ..Expect::NONE
        },
    )
    .await;
    let instagram = adapter(&fake);
    let media_id = fake.with(|s| {
        let container = s.add_container("FINISHED");
        s.publish_now(&container).unwrap()
    });
    fake.with(|s| s.comment_mode = CreateMode::StatusWithoutCreating(502));
    let req = comment_on(&media_id, "Hello.");
    let outcome = instagram.publish(&req, &Prepared::default()).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let attempt = EarlierAttempt {
        generation: 1,
        idempotency_key: req.idempotency_key.clone(),
        platform_ref: None,
        sent_at: chrono::Utc::now(),
        definitely_unpublished: false,
        resend: false,
    };
    let with_attempt = PublishRequest {
        earlier: vec![attempt],
        ..req.clone()
    };
    let evidence = instagram
        .reconcile(&ReconcileRequest {
            publish: with_attempt.clone(),
            platform_ref: None,
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
    // Right after the send, a retry does not send again: the request may still land.
    let err = instagram.prepare(&with_attempt).await.unwrap_err();
    assert!(
        matches!(
            &err,
            StepError::Transient {
                retry_after: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(fake.with(|s| s.remarks().len()), 0);
}

#[tokio::test]
async fn a_reel_is_polled_until_finished_and_published() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            status_at_least: 4,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.video_reads = 3);
    let instagram = adapter(&fake);
    let mut req = post();
    req.media = vec![typed("https://inn.example/cats.mp4", "video/mp4")];
    let prepared = instagram.prepare(&req).await.unwrap();
    let container = prepared.platform_ref.clone().unwrap();
    let params = fake.with(|s| s.container_params(&container));
    assert_eq!(params["media_type"], "REELS");
    assert_eq!(params["video_url"], "https://inn.example/cats.mp4");
    assert_eq!(params["caption"], req.text);
    assert!(!params.contains_key("image_url"));
    let outcome = instagram.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Published(p) if p.platform_post_id.is_some()),
        "{outcome:?}"
    );
    assert!(hits(&fake.server, &format!("/{container}")).await >= 4);
}

#[tokio::test]
async fn a_reel_that_fails_processing_is_rejected_naming_the_error() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            status_at_least: 3,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.video_error = Some("Unsupported video format".into()));
    let mut req = post();
    req.media = vec![typed("https://inn.example/cats.mov", "video/quicktime")];
    let err = adapter(&fake).prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason } if reason.contains("Unsupported video format")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_carousel_child_the_platform_refuses_stops_the_post_before_its_carousel() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            // Item 1 is made, item 2 refused; no carousel, no publish.
            create: 2,
            status_at_least: 0,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let mut media = three_jpegs();
    // Checked as a JPEG, but served at a URL Instagram's fetcher will not take.
    media[1] = typed("https://inn.example/cat.php?id=2", "image/jpeg");
    let err = adapter(&fake)
        .prepare(&first_of_two(media))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason } if reason.contains("carousel item 2 of 3") && reason.contains("2207052")),
        "{err:?}"
    );
    assert_eq!(fake.with(|s| s.published()), 0);
}

#[tokio::test]
async fn a_carousel_with_a_video_item_makes_a_video_item_container() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            create: 3,
            status_at_least: 3,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let mut req = post();
    req.media = vec![
        image(JPEG),
        typed("https://inn.example/cats.mp4", "video/mp4"),
    ];
    let prepared = adapter(&fake).prepare(&req).await.unwrap();
    let children = fake.with(|s| s.children(prepared.platform_ref.as_deref().unwrap()));
    let video = fake.with(|s| s.container_params(&children[1]));
    assert_eq!(video["media_type"], "VIDEO");
    assert_eq!(video["is_carousel_item"], "true");
}

#[tokio::test]
async fn a_lost_publish_answer_before_a_first_comment_is_settled_with_the_media_id() {
    let fake = GraphFake::start(
        Flavour::Instagram,
        Expect {
            create: 4,
            status_at_least: 5,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::PublishThenStatus(500));
    let instagram = adapter(&fake);
    let req = first_of_two(three_jpegs());
    let prepared = instagram.prepare(&req).await.unwrap();
    let outcome = instagram.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let evidence = instagram
        .reconcile(&ReconcileRequest {
            publish: PublishRequest {
                earlier: vec![EarlierAttempt {
                    generation: 1,
                    idempotency_key: req.idempotency_key.clone(),
                    platform_ref: prepared.platform_ref.clone(),
                    sent_at: chrono::Utc::now(),
                    definitely_unpublished: false,
                    resend: false,
                }],
                ..req.clone()
            },
            platform_ref: prepared.platform_ref.clone(),
        })
        .await;
    let Evidence::Published(Proof {
        platform_post_id: Some(media_id),
        ..
    }) = &evidence
    else {
        panic!("expected proof with the media id, got {evidence:?}");
    };
    assert_eq!(
        fake.with(|s| s.media_container(media_id)),
        prepared.platform_ref
    );
}
