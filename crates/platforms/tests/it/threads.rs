//! The `threads` adapter against the Graph fake.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::threads::{Threads, ThreadsSettings};
use airlock_platforms::{
    Evidence, PartRequest, Platform, Prepared, Proof, PublishRequest, PublishedPart,
    ReconcileRequest, StepError, Verification,
};

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_no_canary_shown,
    assert_token_only_in_headers, client, closed_port_url, hits, image, request,
};
use airlock_testkit::fake::meta::{
    Expect, Flavour, GraphFake, NewContainers, PublishMode, THREADS_USER_ID,
};

fn settings(base_url: String) -> ThreadsSettings {
    ThreadsSettings {
        base_url,
        request_timeout: Duration::from_secs(5),
        poll_interval: Duration::from_millis(10),
        poll_timeout: Duration::from_secs(5),
        ..ThreadsSettings::new(crate::support::token())
    }
}

fn adapter(fake: &GraphFake) -> Threads {
    Threads::new(settings(fake.uri()), client()).unwrap()
}

fn post() -> PublishRequest {
    request(
        "threads-main",
        "Cats rest here. Please respect the cats' own pace.",
    )
}

const PREPARE_AND_PUBLISH: Expect = Expect {
    identity: 0,
    limit: 1,
    create: 1,
    status_at_least: 1,
    publish: 1,
    media_read: 0,
};

async fn prepared(threads: &Threads, req: &PublishRequest) -> Prepared {
    let prepared = threads.prepare(req).await.unwrap();
    assert!(prepared.platform_ref.is_some());
    prepared
}

fn reconcile_request(prepared: &Prepared) -> ReconcileRequest {
    ReconcileRequest {
        publish: post(),
        platform_ref: prepared.platform_ref.clone(),
    }
}

#[tokio::test]
async fn happy_path_creates_a_container_publishes_it_once_and_reads_the_permalink() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            identity: 1,
            media_read: 1,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let threads = adapter(&fake);

    let account = threads.account().await.unwrap().unwrap();
    assert_eq!(account.username, "inn_cats");
    assert_eq!(account.id.as_deref(), Some(THREADS_USER_ID));

    let req = post();
    let prepared = prepared(&threads, &req).await;
    let container = prepared.platform_ref.clone().unwrap();
    assert_eq!(
        fake.with(|s| s.container_state(&container)),
        Some("FINISHED")
    );
    let params = fake.with(|s| s.container_params(&container));
    assert_eq!(params["media_type"], "TEXT");
    assert_eq!(params["text"], req.text);

    let outcome = threads.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let media_id = published.platform_post_id.clone().expect("the media id");
    assert_eq!(
        fake.with(|s| s.container_state(&container)),
        Some("PUBLISHED")
    );

    let verification = threads.verify(&media_id).await;
    let Verification::Verified {
        permalink: Some(permalink),
    } = &verification
    else {
        panic!("expected a permalink, got {verification:?}");
    };
    assert!(
        permalink.starts_with("https://www.threads.com/@inn_cats/post/"),
        "{permalink}"
    );

    for request in fake.server.received_requests().await.unwrap() {
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
    assert_no_canary(&account);
    assert_no_canary(&prepared);
    assert_no_canary(&outcome);
    assert_no_canary(&verification);
    assert_no_canary(&threads);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn a_link_becomes_a_link_card_on_text_posts_and_part_of_the_caption_on_image_posts() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            limit: 2,
            create: 2,
            status_at_least: 2,
            publish: 0,
            ..Expect::NONE
        },
    )
    .await;
    let threads = adapter(&fake);
    let mut req = post();
    req.link = Some("https://inn.example/cats/".into());
    let text_container = prepared(&threads, &req).await.platform_ref.unwrap();
    let params = fake.with(|s| s.container_params(&text_container));
    assert_eq!(params["media_type"], "TEXT");
    assert_eq!(params["link_attachment"], "https://inn.example/cats/");

    req.media = vec![image("https://inn.example/wp-content/uploads/cat.jpg")];
    let image_container = prepared(&threads, &req).await.platform_ref.unwrap();
    let params = fake.with(|s| s.container_params(&image_container));
    assert_eq!(params["media_type"], "IMAGE");
    assert_eq!(
        params["image_url"],
        "https://inn.example/wp-content/uploads/cat.jpg"
    );
    assert_eq!(params["alt_text"], "A cat asleep on a cushion");
    assert!(params["text"].ends_with("\nhttps://inn.example/cats/"));
    assert!(!params.contains_key("link_attachment"));
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn wrong_account_is_reported_before_any_container_is_created() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            identity: 1,
            ..Expect::NONE
        },
    )
    .await;
    fake.with(|s| s.username = "someone_else".into());
    let threads = adapter(&fake);
    let account = threads.account().await.unwrap().unwrap();
    // The app compares this with the configured account and pauses the channel; the
    // adapter's part is to report the real owner faithfully.
    assert_eq!(account.username, "someone_else");
    assert_ne!(account.username, "inn_cats");
    assert_eq!(hits(&fake.server, "/threads").await, 0);
    assert_no_canary(&account);
}

#[tokio::test]
async fn container_that_finishes_after_a_few_polls_is_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 4,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.in_progress_reads = 3);
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let outcome = threads.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Published(p) if p.platform_post_id.is_some()),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn error_container_is_rejected_and_never_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.new_containers = NewContainers::Error("FAILED_DOWNLOADING_VIDEO".into()));
    let threads = adapter(&fake);
    let err = threads.prepare(&post()).await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("expected a rejection, got {err:?}");
    };
    assert!(!credential);
    assert!(reason.contains("FAILED_DOWNLOADING_VIDEO"), "{reason}");
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn expired_container_is_transient_and_never_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.new_containers = NewContainers::Expire);
    let err = adapter(&fake).prepare(&post()).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, .. } if reason.contains("expired")),
        "{err:?}"
    );
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn container_still_in_progress_at_the_poll_timeout_is_transient() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 2,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.new_containers = NewContainers::Hang);
    let threads = Threads::new(
        ThreadsSettings {
            poll_timeout: Duration::from_millis(150),
            ..settings(fake.uri())
        },
        client(),
    )
    .unwrap();
    let err = threads.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, .. } if reason.contains("not ready")),
        "{err:?}"
    );
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn publish_answering_500_is_unknown_and_reconcile_finds_the_container_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::PublishThenStatus(500));
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let outcome = threads.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("HTTP 500")),
        "{outcome:?}"
    );

    let evidence = threads.reconcile(&reconcile_request(&prepared)).await;
    let container = prepared.platform_ref.clone().unwrap();
    let Evidence::Published(Proof { note, .. }) = &evidence else {
        panic!("expected evidence of publishing, got {evidence:?}");
    };
    assert!(
        note.contains(&container) && note.contains("PUBLISHED"),
        "{note}"
    );
    assert_no_canary(&outcome);
    assert_no_canary(&evidence);
}

#[tokio::test]
async fn publish_answering_502_without_publishing_reconciles_as_not_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutPublishing(502));
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let outcome = threads.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");

    let evidence = threads.reconcile(&reconcile_request(&prepared)).await;
    assert!(matches!(&evidence, Evidence::NoProof), "{evidence:?}");
    assert_no_canary(&evidence);
}

#[tokio::test]
async fn publish_timeout_after_sending_is_unknown() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.publish_mode = PublishMode::PublishThenDelay(LONG_DELAY));
    let threads = Threads::new(
        ThreadsSettings {
            request_timeout: SHORT_TIMEOUT,
            ..settings(fake.uri())
        },
        client(),
    )
    .unwrap();
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let outcome = threads.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("timed out")),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);

    // The container says what the lost answer would have.
    let evidence = threads.reconcile(&reconcile_request(&prepared)).await;
    assert!(
        matches!(evidence, Evidence::Published { .. }),
        "{evidence:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let threads = Threads::new(settings(closed_port_url()), client()).unwrap();
    let account = threads.account().await.unwrap_err();
    assert!(
        matches!(account, StepError::Transient { .. }),
        "{account:?}"
    );
    let prepare = threads.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(prepare, StepError::Transient { .. }),
        "{prepare:?}"
    );
    let outcome = threads
        .publish(&post(), &Prepared::with_ref("17900000000000007"))
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_no_canary_shown(&account);
    assert_no_canary_shown(&prepare);
    assert_no_canary(&outcome);
    // A failed read proves nothing.
    let evidence = threads
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: Some("17900000000000007".into()),
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
}

#[tokio::test]
async fn expired_token_is_a_credential_rejection() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            identity: 1,
            limit: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.token_expired = true);
    let threads = adapter(&fake);

    let account = threads.account().await.unwrap_err();
    assert!(
        matches!(&account, StepError::Rejected { credential: true, reason } if reason.contains("code 190/463")),
        "{account:?}"
    );
    let prepare = threads.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(
            prepare,
            StepError::Rejected {
                credential: true,
                ..
            }
        ),
        "{prepare:?}"
    );

    // The token expires between the container and the publish.
    fake.with(|s| s.token_expired = false);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    fake.with(|s| s.token_expired = true);
    let outcome = threads.publish(&req, &prepared).await;
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
    assert_no_canary_shown(&prepare);
    assert_no_canary(&outcome);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn publishing_limit_reached_is_transient_with_a_retry_hint_and_makes_no_container() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            limit: 1,
            ..Expect::NONE
        },
    )
    .await;
    fake.with(|s| {
        s.quota_total = 3;
        s.fill_quota();
    });
    let err = adapter(&fake).prepare(&post()).await.unwrap_err();
    let StepError::Transient {
        reason,
        retry_after,
    } = &err
    else {
        panic!("expected a transient refusal, got {err:?}");
    };
    assert!(reason.contains("3 of 3"), "{reason}");
    assert!(retry_after.is_some_and(|d| d > chrono::Duration::zero()));
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn limit_reached_at_publish_is_not_sent_with_a_retry_hint() {
    let fake = GraphFake::start(Flavour::Threads, PREPARE_AND_PUBLISH).await;
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    // Other clients of the account use the quota up meanwhile.
    fake.with(|s| s.fill_quota());
    let outcome = threads.publish(&req, &prepared).await;
    assert!(
        matches!(
            &outcome,
            Outcome::NotSent {
                retry_after: Some(_),
                ..
            }
        ),
        "{outcome:?}"
    );
    let container = prepared.platform_ref.unwrap();
    assert_eq!(
        fake.with(|s| s.container_state(&container)),
        Some("FINISHED")
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn publish_answering_429_is_not_sent_with_retry_after() {
    let fake = GraphFake::start(Flavour::Threads, PREPARE_AND_PUBLISH).await;
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutPublishing(429));
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let outcome = threads.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::NotSent { retry_after: Some(d), .. } if *d == chrono::Duration::seconds(120)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn reconcile_reads_expired_and_error_containers_as_not_published_and_anything_else_as_unknown()
 {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 4,
            ..Expect::NONE
        },
    )
    .await;
    let threads = adapter(&fake);
    let reconcile = |platform_ref: Option<String>| {
        let threads = &threads;
        async move {
            threads
                .reconcile(&ReconcileRequest {
                    publish: post(),
                    platform_ref,
                })
                .await
        }
    };
    for state in ["EXPIRED", "ERROR"] {
        let container = fake.with(|s| s.add_container(state));
        let evidence = reconcile(Some(container)).await;
        assert!(
            matches!(&evidence, Evidence::CannotLand { note } if note.contains(state)),
            "{evidence:?}"
        );
        assert_no_canary(&evidence);
    }
    let container = fake.with(|s| s.add_container("IN_PROGRESS"));
    assert_eq!(reconcile(Some(container)).await, Evidence::NoProof);
    // A media id has no status: the read fails, which proves nothing.
    assert_eq!(
        reconcile(Some("17900000000000999".into())).await,
        Evidence::NoProof
    );
    assert_eq!(reconcile(None).await, Evidence::NoProof);
}

#[tokio::test]
async fn base_urls_that_could_leak_the_token_are_refused() {
    for bad in [
        "http://graph.threads.net",
        "https://user:pw@graph.threads.net",
        "graph.threads.net",
    ] {
        let err = Threads::new(settings(bad.into()), client()).unwrap_err();
        assert!(err.to_string().contains("base_url"), "{err}");
    }
}

fn retry_of(container: &str, key: &str) -> PublishRequest {
    let mut req = post();
    req.earlier = vec![airlock_platforms::EarlierAttempt {
        generation: 1,
        idempotency_key: key.into(),
        platform_ref: Some(container.into()),
        sent_at: chrono::Utc::now() - chrono::Duration::minutes(20),
        definitely_unpublished: false,
        resend: false,
    }];
    req
}

#[tokio::test]
async fn a_retry_publishes_the_container_the_earlier_attempt_sent_instead_of_a_new_one() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            create: 0,
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let container = fake.with(|s| s.add_container("FINISHED"));
    let threads = adapter(&fake);
    let req = retry_of(&container, &post().idempotency_key);
    let prepared = threads.prepare(&req).await.unwrap();
    assert_eq!(prepared.platform_ref.as_deref(), Some(container.as_str()));
    let outcome = threads.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    assert_eq!(fake.with(|s| s.published()), 1);
}

#[tokio::test]
async fn an_earlier_container_that_reads_published_proves_the_post_is_out() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 1,
            ..Expect::NONE
        },
    )
    .await;
    let container = fake.with(|s| s.add_container("PUBLISHED"));
    let prepared = adapter(&fake)
        .prepare(&retry_of(&container, &post().idempotency_key))
        .await
        .unwrap();
    let Some(proof) = &prepared.already_published else {
        panic!("expected proof, got {prepared:?}");
    };
    assert!(
        proof.note.contains(&container) && proof.note.contains("PUBLISHED"),
        "{proof:?}"
    );
}

#[tokio::test]
async fn an_earlier_container_that_can_never_be_published_gives_way_to_a_new_one() {
    for state in ["EXPIRED", "ERROR"] {
        let fake = GraphFake::start(
            Flavour::Threads,
            Expect {
                publish: 0,
                status_at_least: 2,
                ..PREPARE_AND_PUBLISH
            },
        )
        .await;
        let earlier = fake.with(|s| s.add_container(state));
        let prepared = adapter(&fake)
            .prepare(&retry_of(&earlier, &post().idempotency_key))
            .await
            .unwrap();
        let fresh = prepared.platform_ref.unwrap();
        assert_ne!(fresh, earlier, "{state}");
    }
}

#[tokio::test]
async fn an_earlier_container_with_older_content_holds_the_post_until_it_expires() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 1,
            ..Expect::NONE
        },
    )
    .await;
    let container = fake.with(|s| s.add_container("FINISHED"));
    let err = adapter(&fake)
        .prepare(&retry_of(&container, "airlock-42-older-content"))
        .await
        .unwrap_err();
    let StepError::Transient {
        reason,
        retry_after: Some(wait),
    } = &err
    else {
        panic!("expected a wait, got {err:?}");
    };
    assert!(reason.contains(&container), "{reason}");
    assert!(
        *wait > chrono::Duration::hours(23) && *wait < chrono::Duration::hours(24),
        "{wait:?}"
    );
}

#[tokio::test]
async fn a_publish_refused_because_the_container_was_already_published_is_this_post() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 2,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let threads = adapter(&fake);
    let req = post();
    let prepared = prepared(&threads, &req).await;
    let container = prepared.platform_ref.clone().unwrap();
    // An earlier request on this container landed after all.
    fake.with(|s| s.set_container_state(&container, "PUBLISHED"));
    let outcome = threads.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected the earlier publish, got {outcome:?}");
    };
    assert!(
        published
            .existing
            .as_deref()
            .is_some_and(|e| e.contains(&container)),
        "{published:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn a_non_json_error_page_is_recorded_by_its_size_not_its_text() {
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let page = "<html><body><h1>502 Bad Gateway</h1><pre>X-Forwarded-Authorization: sessionid-leaked-cookie-value</pre></body></html>";
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(502).set_body_string(page))
        .mount(&server)
        .await;
    let threads = Threads::new(settings(server.uri()), client()).unwrap();
    let err = threads.account().await.unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("HTTP 502"), "{shown}");
    assert!(
        shown.contains(&format!("{} bytes, not kept", page.len())),
        "{shown}"
    );
    for leaked in ["sessionid", "Bad Gateway", "X-Forwarded"] {
        assert!(!shown.contains(leaked), "{leaked} was recorded: {shown}");
    }
}

// Parts, carousels and video.

fn typed(url: &str, content_type: &str) -> airlock_core::Media {
    airlock_core::Media {
        content_type: Some(content_type.into()),
        ..image(url)
    }
}

/// Part `number` of `of`, after the parts `published` (their media ids, from part 1).
fn part_of(text: &str, number: u32, of: u32, published: &[&str]) -> PublishRequest {
    let mut req = post();
    req.text = text.into();
    req.idempotency_key = format!("{}-{number}", req.idempotency_key);
    req.part = PartRequest {
        number,
        of,
        comment: false,
        published: published
            .iter()
            .enumerate()
            .map(|(i, id)| PublishedPart {
                number: i as u32 + 1,
                platform_post_id: (*id).to_owned(),
                permalink: None,
            })
            .collect(),
    };
    req
}

async fn publish_part(threads: &Threads, req: &PublishRequest) -> (String, String) {
    let prepared = threads.prepare(req).await.unwrap();
    let container = prepared.platform_ref.clone().expect("a container");
    let outcome = threads.publish(req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!(
            "part {}: expected a publish, got {outcome:?}",
            req.part.number
        );
    };
    assert_no_canary(&outcome);
    (
        container,
        published.platform_post_id.clone().expect("a media id"),
    )
}

async fn limit_fields_read(fake: &GraphFake) -> Vec<String> {
    fake.requests()
        .await
        .iter()
        .filter(|r| r.url.path().ends_with("/threads_publishing_limit"))
        .filter_map(|r| {
            r.url
                .query_pairs()
                .find(|(k, _)| k == "fields")
                .map(|(_, v)| v.into_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_three_part_thread_with_a_carousel_in_part_two_and_a_first_comment_chains_by_reply_to_id()
{
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            identity: 0,
            // Room for the three replies before part 1, then each part's own quota.
            limit: 5,
            // Part 1, part 2's two items and its carousel, part 3, the comment.
            create: 6,
            status_at_least: 6,
            publish: 4,
            media_read: 0,
        },
    )
    .await;
    let threads = adapter(&fake);

    let (_, first) = publish_part(&threads, &part_of("A thread about cats.", 1, 4, &[])).await;

    let mut second = part_of("Two of them.", 2, 4, &[&first]);
    second.media = vec![
        typed("https://inn.example/a.jpg", "image/jpeg"),
        typed("https://inn.example/b.png", "image/png"),
    ];
    let (carousel, second_id) = publish_part(&threads, &second).await;
    let params = fake.with(|s| s.container_params(&carousel));
    assert_eq!(params["media_type"], "CAROUSEL");
    assert_eq!(params["reply_to_id"], first);
    assert_eq!(params["text"], "Two of them.");
    let children = fake.with(|s| s.children(&carousel));
    assert_eq!(children.len(), 2);
    for (child, url) in children
        .iter()
        .zip(["https://inn.example/a.jpg", "https://inn.example/b.png"])
    {
        let item = fake.with(|s| s.container_params(child));
        assert_eq!(item["media_type"], "IMAGE");
        assert_eq!(item["image_url"], url);
        assert_eq!(item["is_carousel_item"], "true");
        assert!(!item.contains_key("reply_to_id"), "{item:?}");
    }

    let (_, third) = publish_part(
        &threads,
        &part_of("And that is all.", 3, 4, &[&first, &second_id]),
    )
    .await;
    let mut comment = part_of(
        "Tell us about your cats.",
        4,
        4,
        &[&first, &second_id, &third],
    );
    comment.part.comment = true;
    let (_, comment_id) = publish_part(&threads, &comment).await;

    fake.with(|s| {
        assert_eq!(s.published(), 4, "each part once");
        assert_eq!(s.replied_to(&first), None);
        assert_eq!(s.replied_to(&second_id).as_deref(), Some(first.as_str()));
        assert_eq!(s.replied_to(&third).as_deref(), Some(second_id.as_str()));
        assert_eq!(s.replied_to(&comment_id).as_deref(), Some(third.as_str()));
        // Part 1 is a post; the later parts and the comment are replies.
        assert_eq!(s.quota_usage(), 1);
        assert_eq!(s.reply_quota_usage(), 3);
    });
    assert_eq!(
        limit_fields_read(&fake).await,
        [
            "reply_quota_usage,reply_config",
            "quota_usage,config",
            "reply_quota_usage,reply_config",
            "reply_quota_usage,reply_config",
            "reply_quota_usage,reply_config",
        ]
    );
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn a_later_part_whose_parent_is_unknown_is_refused_before_any_call() {
    let fake = GraphFake::start(Flavour::Threads, Expect::NONE).await;
    let err = adapter(&fake)
        .prepare(&part_of("Orphan.", 2, 2, &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { reason, .. } if reason.contains("part 2 replies to part 1")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_reply_quota_used_up_stops_a_later_part_before_its_container() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            limit: 1,
            ..Expect::NONE
        },
    )
    .await;
    let parent = fake.with(|s| {
        let container = s.add_container("FINISHED");
        let media = s.publish_now(&container).unwrap();
        s.reply_quota_total = 2;
        let now = s.now();
        s.replies_at = vec![now, now];
        media
    });
    let err = adapter(&fake)
        .prepare(&part_of("Part two.", 2, 2, &[&parent]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, retry_after: Some(_) } if reason.contains("2 of 2 replies")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_video_container_still_processing_is_polled_until_finished_then_published() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 4,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.video_reads = 3);
    let threads = adapter(&fake);
    let mut req = post();
    req.media = vec![typed("https://inn.example/cats.mp4", "video/mp4")];
    let (container, media_id) = publish_part(&threads, &req).await;
    let params = fake.with(|s| s.container_params(&container));
    assert_eq!(params["media_type"], "VIDEO");
    assert_eq!(params["video_url"], "https://inn.example/cats.mp4");
    assert!(!params.contains_key("image_url"));
    assert_eq!(
        fake.with(|s| s.media_container(&media_id)),
        Some(container.clone())
    );
    // Three reads said IN_PROGRESS before the one that said FINISHED.
    assert!(hits(&fake.server, &format!("/{container}")).await >= 4);
}

#[tokio::test]
async fn a_video_that_fails_processing_is_rejected_naming_the_error() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            status_at_least: 3,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.video_error = Some("INVALID_DURATION".into()));
    let mut req = post();
    req.media = vec![typed("https://inn.example/cats.mov", "video/quicktime")];
    let err = adapter(&fake).prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: false, reason } if reason.contains("INVALID_DURATION")),
        "{err:?}"
    );
    assert_eq!(fake.with(|s| s.published()), 0);
    assert_no_canary_shown(&err);
}

#[tokio::test]
async fn a_carousel_child_that_fails_processing_is_refused_and_no_carousel_is_made() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            create: 2,
            status_at_least: 2,
            publish: 0,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    fake.with(|s| s.video_error = Some("FAILED_DOWNLOADING_VIDEO".into()));
    let mut req = post();
    req.media = vec![
        image("https://inn.example/cat.jpg"),
        typed("https://inn.example/cats.mp4", "video/mp4"),
    ];
    let err = adapter(&fake).prepare(&req).await.unwrap_err();
    let StepError::Rejected { reason, .. } = &err else {
        panic!("expected a rejection, got {err:?}");
    };
    assert!(
        reason.contains("carousel item 2 of 2") && reason.contains("FAILED_DOWNLOADING_VIDEO"),
        "{reason}"
    );
    // The two items only: the parent was never made.
    assert_eq!(fake.with(|s| s.containers().len()), 2);
    assert_eq!(fake.with(|s| s.published()), 0);
}

#[tokio::test]
async fn the_fake_refuses_carousels_with_too_few_too_many_or_unfinished_children() {
    let fake = GraphFake::start(Flavour::Threads, Expect::ANY).await;
    let http = client();
    let create = |form: Vec<(&'static str, String)>| {
        let http = http.clone();
        let query: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let url =
            airlock_platforms::http::endpoint(&fake.uri(), &["v1.0", "me", "threads"], &query);
        async move { http.post(url).bearer_auth(CANARY).send().await.unwrap() }
    };
    let item = |url: &str| {
        vec![
            ("media_type", "IMAGE".to_owned()),
            ("image_url", url.to_owned()),
            ("is_carousel_item", "true".to_owned()),
        ]
    };
    let carousel = |children: Vec<String>| {
        vec![
            ("media_type", "CAROUSEL".to_owned()),
            ("children", children.join(",")),
        ]
    };
    let finished: Vec<String> = (0..21)
        .map(|_| fake.with(|s| s.add_container("FINISHED")))
        .collect();
    // Added containers are not items: make real ones, finished.
    let mut items = Vec::new();
    for i in 0..21 {
        let answer = create(item(&format!("https://inn.example/{i}.jpg"))).await;
        assert_eq!(answer.status(), 200);
        let id = answer.json::<serde_json::Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        fake.with(|s| s.set_container_state(&id, "FINISHED"));
        items.push(id);
    }
    fake.with(|s| s.in_progress_reads = 5);
    let answer = create(item("https://inn.example/slow.jpg")).await;
    let slow = answer.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (children, why) in [
        (items[..1].to_vec(), "2 to 20"),
        (items.clone(), "2 to 20"),
        (vec![items[0].clone(), slow], "not FINISHED"),
        (finished[..2].to_vec(), "is_carousel_item"),
        (
            vec![items[0].clone(), "17900000000000003".into()],
            "does not exist",
        ),
    ] {
        let answer = create(carousel(children)).await;
        assert_eq!(answer.status(), 400);
        let body = answer.text().await.unwrap();
        assert!(body.contains(why), "{why}: {body}");
    }
    assert_eq!(create(carousel(items[..20].to_vec())).await.status(), 200);
    // An item is published only with its carousel.
    let publish = http
        .post(format!(
            "{}/v1.0/me/threads_publish?creation_id={}",
            fake.uri(),
            items[20]
        ))
        .bearer_auth(CANARY)
        .send()
        .await
        .unwrap();
    assert_eq!(publish.status(), 400);
    assert_eq!(fake.with(|s| s.published()), 0);
}

#[tokio::test]
async fn a_retry_of_a_carousel_part_publishes_the_earlier_parent_container() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            create: 0,
            status_at_least: 2,
            publish: 1,
            ..PREPARE_AND_PUBLISH
        },
    )
    .await;
    let container = fake.with(|s| s.add_container("FINISHED"));
    let mut req = retry_of(&container, &post().idempotency_key);
    req.media = vec![
        image("https://inn.example/a.jpg"),
        image("https://inn.example/b.jpg"),
    ];
    let threads = adapter(&fake);
    let prepared = threads.prepare(&req).await.unwrap();
    assert_eq!(prepared.platform_ref.as_deref(), Some(container.as_str()));
    let outcome = threads.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    assert_eq!(fake.with(|s| s.published()), 1);
}

#[tokio::test]
async fn an_expired_container_of_part_two_cannot_land() {
    let fake = GraphFake::start(Flavour::Threads, Expect::ANY).await;
    let threads = adapter(&fake);
    let (_, first) = publish_part(&threads, &part_of("Part one.", 1, 3, &[])).await;
    let second = part_of("Part two.", 2, 3, &[&first]);
    let prepared = threads.prepare(&second).await.unwrap();
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutPublishing(502));
    let outcome = threads.publish(&second, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let reconcile = ReconcileRequest {
        publish: second.clone(),
        platform_ref: prepared.platform_ref.clone(),
    };
    // Unpublished and still publishable: nothing is proven yet.
    assert_eq!(threads.reconcile(&reconcile).await, Evidence::NoProof);
    // A day later the container has expired: part 2 can never land.
    fake.with(|s| s.advance(25 * 3600));
    let evidence = threads.reconcile(&reconcile).await;
    let Evidence::CannotLand { note } = &evidence else {
        panic!("expected CannotLand, got {evidence:?}");
    };
    assert!(
        note.contains("EXPIRED") && note.contains(prepared.platform_ref.as_deref().unwrap()),
        "{note}"
    );
    assert_eq!(fake.with(|s| s.published()), 1);
}

#[tokio::test]
async fn lost_answers_of_parts_that_others_reply_to_are_settled_with_their_media_ids() {
    let fake = GraphFake::start(Flavour::Threads, Expect::ANY).await;
    let threads = adapter(&fake);
    let reconciled = |req: &PublishRequest, prepared: &Prepared| ReconcileRequest {
        publish: PublishRequest {
            earlier: vec![airlock_platforms::EarlierAttempt {
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
    };

    // Part 1 of 2: published, its answer lost; found among the account's threads.
    fake.with(|s| s.publish_mode = PublishMode::PublishThenStatus(500));
    let first = part_of("Part one.", 1, 2, &[]);
    let prepared = threads.prepare(&first).await.unwrap();
    let outcome = threads.publish(&first, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    assert_no_canary(&outcome);
    let evidence = threads.reconcile(&reconciled(&first, &prepared)).await;
    let Evidence::Published(Proof {
        platform_post_id: Some(first_id),
        permalink: Some(_),
        ..
    }) = &evidence
    else {
        panic!("expected proof with the media id, got {evidence:?}");
    };
    assert_eq!(
        fake.with(|s| s.media_container(first_id)),
        prepared.platform_ref
    );

    // Part 2 of 3: someone else replied with the same text first; ours is the one owned.
    let foreign = fake.with(|s| s.add_remark(first_id, "copycat", "Part two."));
    let second = part_of("Part two.", 2, 3, &[first_id]);
    let prepared = threads.prepare(&second).await.unwrap();
    let outcome = threads.publish(&second, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let evidence = threads.reconcile(&reconciled(&second, &prepared)).await;
    let Evidence::Published(Proof {
        platform_post_id: Some(second_id),
        note,
        ..
    }) = &evidence
    else {
        panic!("expected proof with the media id, got {evidence:?}");
    };
    assert_ne!(second_id, &foreign);
    assert_eq!(
        fake.with(|s| s.replied_to(second_id)).as_deref(),
        Some(first_id.as_str())
    );
    assert!(
        note.contains("PUBLISHED") && note.contains("replies to part 1"),
        "{note}"
    );

    // A retry that finds the container published proves it with the id too.
    let mut retry = second.clone();
    retry.earlier = reconciled(&second, &prepared).publish.earlier;
    let again = threads.prepare(&retry).await.unwrap();
    assert_eq!(
        again
            .already_published
            .as_ref()
            .and_then(|p| p.platform_post_id.as_ref()),
        Some(second_id)
    );
    assert_eq!(fake.with(|s| s.published()), 2, "each part once");
}

#[tokio::test]
async fn a_published_container_whose_media_is_not_listed_needs_a_person() {
    let fake = GraphFake::start(Flavour::Threads, Expect::ANY).await;
    let threads = adapter(&fake);
    let (_, first) = publish_part(&threads, &part_of("Part one.", 1, 3, &[])).await;
    // Published by some other path: the replies to part 1 do not show it.
    let container = fake.with(|s| s.add_container("PUBLISHED"));
    let evidence = threads
        .reconcile(&ReconcileRequest {
            publish: part_of("Part two.", 2, 3, &[&first]),
            platform_ref: Some(container.clone()),
        })
        .await;
    assert!(
        matches!(&evidence, Evidence::Unsettled { note } if note.contains(&container) && note.contains("media id")),
        "{evidence:?}"
    );
    // The last part needs no id: the container read is proof enough.
    let evidence = threads
        .reconcile(&ReconcileRequest {
            publish: part_of("Part three.", 3, 3, &[&first, "1"]),
            platform_ref: Some(container),
        })
        .await;
    assert!(matches!(evidence, Evidence::Published(_)), "{evidence:?}");
}

#[tokio::test]
async fn a_thread_whose_replies_would_not_fit_the_reply_quota_is_held_before_part_one() {
    let fake = GraphFake::start(
        Flavour::Threads,
        Expect {
            limit: 1,
            ..Expect::NONE
        },
    )
    .await;
    fake.with(|s| {
        s.reply_quota_total = 3;
        let now = s.now();
        s.replies_at = vec![now, now];
    });
    // Part 1 of 3: two replies follow, and only one more fits.
    let err = adapter(&fake)
        .prepare(&part_of("Part one.", 1, 3, &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, retry_after: Some(_) } if reason.contains("no room for 2 more") && reason.contains("replies")),
        "{err:?}"
    );
    assert!(
        fake.with(|s| s.containers().is_empty()),
        "no container made"
    );
}
