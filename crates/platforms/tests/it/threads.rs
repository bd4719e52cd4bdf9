//! The `threads` adapter against the Graph fake.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::threads::{Threads, ThreadsSettings};
use airlock_platforms::{
    Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest, StepError, Verification,
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
