use std::time::Duration as StdDuration;

use airlock_app::Error;
use airlock_app::publish::PublishResult;
use airlock_core::PostStatus;
use airlock_dispatcher::{Dispatcher, DispatcherSettings};

use crate::support::Harness;

/// Runs `body` with the failpoints `points` configured, one test at a time.
pub async fn with_failpoints<T>(points: &[(&str, &str)], body: impl AsyncFnOnce() -> T) -> T {
    let scenario = fail::FailScenario::setup();
    for (name, action) in points {
        fail::cfg(*name, action).unwrap();
    }
    let result = body().await;
    scenario.teardown();
    result
}

#[tokio::test]
async fn an_outcome_write_that_meets_an_unreachable_store_is_tried_again_within_the_lease() {
    let h = Harness::new().await;
    let post = h.approved("hello").await;
    let report = with_failpoints(&[("publish::outcome_write", "2*return")], async || {
        h.app.publish_next(None).await
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    assert_eq!(report.post.id, post.id);
    assert_eq!(report.post.status, PostStatus::Posted);
    assert_eq!(h.published(), 1);
}

#[tokio::test]
async fn a_store_error_while_recording_the_verification_is_no_failed_publish() {
    let h = Harness::new().await;
    h.approved("hello").await;
    let report = with_failpoints(&[("publish::verify_write", "return")], async || {
        h.app.publish_next(None).await
    })
    .await
    .expect("a posted post is reported posted")
    .unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    assert_eq!(report.post.verified_at, None);
    assert_eq!(h.published(), 1);
}

/// The first publish of a channel in a process claims without its intent (the account
/// is looked at once the post has its slot): a worker that dies right after that claim
/// sent nothing, and the post goes back to the queue.
#[tokio::test]
async fn a_publish_that_panics_before_its_intent_returns_the_post_to_the_queue() {
    let h = Harness::new().await;
    let post = h.approved("hello").await;
    let result = with_failpoints(&[("publish::after_claim", "panic")], async || {
        h.app.publish_next(None).await
    })
    .await;
    assert!(
        matches!(&result, Err(Error::Internal(why)) if why.contains(&format!("post {}", post.id))),
        "{result:?}"
    );
    let detail = h.app.store().post_detail(post.id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Approved);
    assert_eq!(detail.post.attempts, 1);
    assert!(detail.intents.is_empty());
    assert_eq!(detail.reservations[0].state, "released");
    assert_eq!(h.published(), 0);
}

/// Once the channel's account is known, a sandbox (no prepare step) commits its intent
/// with the claim: from the claim on, a worker that dies may have sent, and the post goes
/// to a person.
#[tokio::test]
async fn a_publish_that_panics_after_its_intent_needs_review() {
    for point in ["publish::after_claim", "publish::after_intent"] {
        let h = Harness::new().await;
        h.approved("a first post, so the account is known").await;
        let post = h.approved("hello").await;
        // Configured only after the first publish, inside the one scenario.
        let result = with_failpoints(&[], async || {
            h.app.publish_next(None).await.unwrap().unwrap();
            fail::cfg(point, "panic").unwrap();
            h.app.publish_next(None).await
        })
        .await;
        assert!(
            matches!(&result, Err(Error::Internal(why)) if why.contains(&format!("post {}", post.id))),
            "{point}: {result:?}"
        );
        let detail = h.app.store().post_detail(post.id).await.unwrap();
        assert_eq!(detail.post.status, PostStatus::NeedsReview, "{point}");
        assert_eq!(detail.intents.len(), 1, "{point}");
        assert_eq!(
            detail.reservations[0].state, "reserved",
            "{point}: kept counted"
        );
        assert_eq!(h.app.store().pauses().await.unwrap().len(), 1, "{point}");
        assert_eq!(h.published(), 1, "{point}: only the first post");
    }
}

#[tokio::test]
async fn a_worker_that_panics_is_replaced_and_the_post_still_goes_out() {
    let h = Harness::new().await;
    let post = h.approved("hello").await;
    with_failpoints(&[("dispatcher::worker", "1*panic")], async || {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let dispatcher = Dispatcher::new(
            h.app.clone(),
            DispatcherSettings {
                workers: 1,
                batch: airlock_dispatcher::BATCH,
                poll_interval: StdDuration::from_millis(50),
                reap_interval: StdDuration::from_secs(60),
            },
        );
        let running = tokio::spawn(dispatcher.run(shutdown.clone()));
        let deadline = std::time::Instant::now() + StdDuration::from_secs(10);
        while h.app.store().get_post(post.id).await.unwrap().status != PostStatus::Posted {
            assert!(std::time::Instant::now() < deadline, "never published");
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
        shutdown.cancel();
        running.await.unwrap();
    })
    .await;
    assert_eq!(h.published(), 1);
    let _ = &h.clock;
}
