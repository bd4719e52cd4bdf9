//! Every row of the outcome table of docs/channels.md, through the guarded path, against a
//! local webhook fake: what the post becomes, what happens to its reservation, whether it
//! is retried, and that the irreversible request was sent at most once.

use std::time::Duration as StdDuration;

use airlock_app::Principal;
use airlock_app::publish::PublishResult;
use airlock_core::PostStatus;
use wiremock::matchers::{header_exists, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::*;

const TIMEOUT: StdDuration = StdDuration::from_millis(800);

async fn harness_for(url: &str) -> Harness {
    let url = url.to_owned();
    Harness::new(move |_| vec![webhook("hook", &url, TIMEOUT, 10)]).await
}

/// Publishes one approved post through the dispatcher path and returns the report and
/// the post's reservation states.
async fn run(h: &Harness) -> (airlock_app::publish::PublishReport, Vec<String>) {
    let app = h.app();
    let post = approved(&app, "hook", "hello").await;
    let report = app
        .publish_next(None)
        .await
        .unwrap()
        .expect("a post was due");
    assert_eq!(report.post.id, post.id);
    // The read-back runs in a task of its own.
    app.drain().await;
    let detail = app.store().post_detail(post.id).await.unwrap();
    let states = detail
        .reservations
        .iter()
        .map(|r| r.state.clone())
        .collect();
    (report, states)
}

async fn fake(status: u16, body: &str, n: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .and(header_exists("idempotency-key"))
        .respond_with(ResponseTemplate::new(status).set_body_string(body.to_owned()))
        .expect(n)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn connection_refused_is_not_sent_and_retried_with_backoff() {
    let url = closed_port_url().await;
    let h = harness_for(&url).await;
    let (report, reservations) = run(&h).await;
    assert!(
        matches!(report.result, PublishResult::Retrying { .. }),
        "{:?}",
        report.result
    );
    assert_eq!(report.post.status, PostStatus::Approved);
    assert_eq!(report.post.attempts, 1);
    assert!(report.post.not_before.unwrap() > h.clock.now());
    assert_eq!(reservations, ["released"]);
    // Not due again until the backoff passes; then it is retried.
    let app = h.app();
    assert!(app.publish_next(None).await.unwrap().is_none());
    h.clock.advance(chrono::Duration::minutes(1));
    let again = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(again.post.attempts, 2);
}

#[tokio::test]
async fn too_many_requests_is_not_sent_and_waits_for_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "120"))
        .expect(1)
        .mount(&server)
        .await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    let PublishResult::Retrying { not_before, .. } = report.result else {
        panic!("{:?}", report.result)
    };
    assert_eq!(not_before, h.clock.now() + chrono::Duration::seconds(120));
    assert_eq!(report.post.status, PostStatus::Approved);
    assert_eq!(
        report.post.attempts, 0,
        "a platform's \"not now\" is not an attempt"
    );
    assert_eq!(reservations, ["released"]);
}

#[tokio::test]
async fn request_timeout_408_is_not_sent() {
    let server = fake(408, "", 1).await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert!(matches!(report.result, PublishResult::Retrying { .. }));
    assert_eq!(reservations, ["released"]);
}

#[tokio::test]
async fn success_with_an_id_is_posted_committed_and_verified_state_recorded() {
    let server = fake(
        201,
        r#"{"id": "w-42", "permalink": "https://hooks.example/p/42"}"#,
        1,
    )
    .await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.result, PublishResult::Posted);
    assert_eq!(report.post.status, PostStatus::Posted);
    assert_eq!(report.post.platform_post_id.as_deref(), Some("w-42"));
    assert_eq!(
        report.post.permalink.as_deref(),
        Some("https://hooks.example/p/42")
    );
    assert!(report.post.posted_at.is_some());
    assert_eq!(reservations, ["committed"]);
}

#[tokio::test]
async fn success_without_a_readable_id_is_posted_but_flagged() {
    let server = fake(200, "thanks", 1).await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.post.status, PostStatus::Posted);
    assert_eq!(report.post.platform_post_id, None);
    assert!(
        report
            .post
            .error
            .as_deref()
            .unwrap()
            .contains("without a readable post id")
    );
    assert_eq!(reservations, ["committed"]);
    let detail = h.app().store().post_detail(report.post.id).await.unwrap();
    assert!(detail.events.iter().any(|e| e.kind == "verify_failed"));
}

#[tokio::test]
async fn unauthorized_and_forbidden_fail_and_pause_the_channel() {
    for status in [401u16, 403] {
        let server = fake(status, "token expired", 1).await;
        let h = harness_for(&format!("{}/hook", server.uri())).await;
        let (report, reservations) = run(&h).await;
        assert!(matches!(report.result, PublishResult::Failed { .. }));
        assert_eq!(report.post.status, PostStatus::Failed);
        assert_eq!(reservations, ["released"]);
        let pauses = h.app().store().pauses().await.unwrap();
        assert_eq!(pauses.len(), 1, "{status}");
        assert_eq!(pauses[0].scope, "hook");
        assert!(pauses[0].reason.contains("credential"));
    }
}

#[tokio::test]
async fn other_client_errors_fail_without_retry_or_pause() {
    let server = fake(422, r#"{"error": "text too long"}"#, 1).await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.post.status, PostStatus::Failed);
    assert!(report.post.error.as_deref().unwrap().contains("422"));
    assert_eq!(reservations, ["released"]);
    assert!(h.app().store().pauses().await.unwrap().is_empty());
    // Failed posts are never picked again.
    assert!(h.app().publish_next(None).await.unwrap().is_none());
}

#[tokio::test]
async fn redirects_are_not_followed_and_need_review() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", "https://elsewhere.example/"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.post.status, PostStatus::NeedsReview);
    assert_eq!(reservations, ["reserved"]);
}

#[tokio::test]
async fn server_errors_need_review_keep_the_reservation_and_pause_the_channel() {
    let server = fake(503, "upstream down", 1).await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.post.status, PostStatus::NeedsReview);
    assert_eq!(reservations, ["reserved"]);
    let pauses = h.app().store().pauses().await.unwrap();
    assert_eq!(pauses[0].scope, "hook");
    // Never retried: nothing else is due, and the channel is paused.
    assert!(h.app().publish_next(None).await.unwrap().is_none());
}

#[tokio::test]
async fn an_answer_that_never_comes_needs_review() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(TIMEOUT * 3))
        .expect(1)
        .mount(&server)
        .await;
    let h = harness_for(&format!("{}/hook", server.uri())).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(report.post.status, PostStatus::NeedsReview);
    assert!(
        report.post.error.as_deref().unwrap().contains("timed out"),
        "{:?}",
        report.post.error
    );
    assert_eq!(reservations, ["reserved"]);
}

#[tokio::test]
async fn a_connection_dropped_after_the_request_needs_review() {
    let server = DroppingServer::start(None).await;
    let h = harness_for(&server.url).await;
    let (report, reservations) = run(&h).await;
    assert_eq!(server.count(), 1);
    assert_eq!(
        report.post.status,
        PostStatus::NeedsReview,
        "{:?}",
        report.post.error
    );
    assert_eq!(reservations, ["reserved"]);
}

#[tokio::test]
async fn resolving_settles_the_reservation_both_ways() {
    for (published, state, status) in [
        (true, "committed", PostStatus::Posted),
        (false, "released", PostStatus::Failed),
    ] {
        let server = fake(500, "", 1).await;
        let h = harness_for(&format!("{}/hook", server.uri())).await;
        let (report, _) = run(&h).await;
        let app = h.app();
        let resolution = if published {
            airlock_app::review::Resolution::Published {
                permalink: Some("https://hooks.example/p/1".into()),
                platform_post_id: None,
            }
        } else {
            airlock_app::review::Resolution::NotPublished
        };
        let post = app
            .resolve(&Principal::cli(), report.post.id, resolution)
            .await
            .unwrap();
        assert_eq!(post.status, status);
        let detail = app.store().post_detail(post.id).await.unwrap();
        assert_eq!(detail.reservations[0].state, state);
        // Resolving does not resume the channel: only an operator does.
        assert_eq!(app.store().pauses().await.unwrap().len(), 1);
    }
}
