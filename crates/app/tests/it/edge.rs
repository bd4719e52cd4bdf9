//! At most once at the platform edge: platforms that process a publish after the client
//! gave up, rename what they store, fail after saving or send absurd hints; callers that
//! hang up; a pause that lands while a post is being prepared. Against stateful fakes,
//! each scenario ends with at most one copy on the platform and no post left `posting`.

use std::time::Duration as StdDuration;

use chrono::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use airlock_app::publish::PublishResult;
use airlock_app::review::Resolution;
use airlock_app::{App, Principal};
use airlock_core::{PostId, PostStatus};
use airlock_testkit::fake::meta::{Expect, Flavour, GraphFake, PublishMode};
use airlock_testkit::fake::wordpress;

use crate::support::*;

const TIMEOUT: StdDuration = StdDuration::from_millis(400);
/// Longer than [`TIMEOUT`]: the client has long given up when the platform acts.
const LATE: StdDuration = StdDuration::from_millis(1500);

async fn graph_harness(flavour: Flavour, fake: &GraphFake) -> Harness {
    let uri = fake.uri();
    Harness::new(move |_| vec![graph_channel("meta", flavour, &uri, TIMEOUT)]).await
}

async fn meta_post(app: &App, flavour: Flavour) -> PostId {
    let me = Principal::cli();
    let mut input = draft("meta", "Cats rest here.");
    if flavour == Flavour::Instagram {
        input.media = vec![airlock_core::Media::new(
            "https://inn.example/cat.jpg".into(),
            Some("a cat".into()),
        )];
    }
    let post = app
        .create_post(&me, input, None, airlock_app::posts::DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap().id
}

async fn reservations(app: &App, id: PostId) -> Vec<String> {
    let detail = app.store().post_detail(id).await.unwrap();
    detail
        .reservations
        .iter()
        .map(|r| r.state.clone())
        .collect()
}

/// A publish the platform takes late: the answer never comes, the container reads
/// `FINISHED` meanwhile. That is no proof of anything: the post waits for proof instead of
/// going out again on a new container, and the late publish, once it lands, settles it.
async fn late_processing_is_settled_by_proof_not_repeated(flavour: Flavour) {
    let expect = Expect {
        identity: 1,
        limit: 1,
        create: 1,
        status_at_least: 2,
        publish: 1,
        media_read: 0,
    };
    let fake = GraphFake::start_with(flavour, expect, |s| {
        s.publish_mode = PublishMode::ProcessLate(LATE);
    })
    .await;
    let h = graph_harness(flavour, &fake).await;
    let app = h.app();
    let id = meta_post(&app, flavour).await;

    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(
        matches!(report.result, PublishResult::NeedsReview { .. }),
        "{:?}",
        report.result
    );
    // Long after any lease: the container still reads FINISHED, which proves nothing.
    h.clock.advance(Duration::hours(1));
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    assert!(app.publish_next(None).await.unwrap().is_none());

    assert!(
        eventually(StdDuration::from_secs(5), async || fake
            .with(|s| s.published())
            == 1)
        .await
    );
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(status(&app, id).await, PostStatus::Posted);
    assert_eq!(reservations(&app, id).await, ["committed"]);
    tokio::time::sleep(LATE).await;
    assert_eq!(fake.with(|s| s.published()), 1);
}

#[tokio::test]
async fn threads_late_processing_is_settled_by_proof_not_repeated() {
    late_processing_is_settled_by_proof_not_repeated(Flavour::Threads).await;
}

#[tokio::test]
async fn instagram_late_processing_is_settled_by_proof_not_repeated() {
    late_processing_is_settled_by_proof_not_repeated(Flavour::Instagram).await;
}

/// After a person wrongly says "not published" and requeues, the retry publishes the
/// same container again, so the platform itself refuses a second copy.
async fn a_retry_reuses_the_first_container(flavour: Flavour, late_lands_first: bool) {
    // The account is read again after the operator resumes the channel.
    let expect = Expect {
        identity: 2,
        // Proof found among the earlier containers needs no limit read.
        limit: if late_lands_first { 1 } else { 2 },
        create: 1,
        status_at_least: 2,
        publish: if late_lands_first { 1 } else { 2 },
        media_read: if late_lands_first { 0 } else { 1 },
    };
    // When the retry must come first, the backend takes long enough for that to hold
    // even on a loaded machine.
    let late = if late_lands_first { LATE } else { 4 * LATE };
    let fake = GraphFake::start_with(flavour, expect, |s| {
        s.publish_mode = PublishMode::ProcessLate(late);
    })
    .await;
    let h = graph_harness(flavour, &fake).await;
    let app = h.app();
    let me = Principal::cli();
    let id = meta_post(&app, flavour).await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(matches!(report.result, PublishResult::NeedsReview { .. }));

    app.resolve(&me, id, Resolution::NotPublished)
        .await
        .unwrap();
    app.requeue(&me, id).await.unwrap();
    app.resume(&me, Some("meta")).await.unwrap();
    fake.with(|s| s.publish_mode = PublishMode::Normal);
    if late_lands_first {
        assert!(
            eventually(StdDuration::from_secs(5), async || fake
                .with(|s| s.published())
                == 1)
            .await
        );
    }
    let mut report = app.publish_next(None).await.unwrap().unwrap();
    if !late_lands_first {
        // A backend may still be processing the first publish: the container is published
        // again only once that is unlikely, never replaced by a new one.
        assert!(
            matches!(&report.result, PublishResult::Retrying { reason, .. } if reason.contains("published again once")),
            "{:?}",
            report.result
        );
        h.clock.advance(Duration::minutes(16));
        report = app.publish_next(None).await.unwrap().unwrap();
    }
    assert_eq!(report.result, PublishResult::Posted, "{:?}", report.post);

    tokio::time::sleep(late + StdDuration::from_millis(300)).await;
    assert_eq!(fake.with(|s| s.published()), 1, "one copy on the platform");
    assert_eq!(
        fake.with(|s| s.containers().len()),
        1,
        "no second container"
    );
    assert_eq!(status(&app, id).await, PostStatus::Posted);
}

#[tokio::test]
async fn threads_retry_publishes_the_same_container_before_the_late_one_lands() {
    a_retry_reuses_the_first_container(Flavour::Threads, false).await;
}

#[tokio::test]
async fn threads_retry_finds_the_container_published_by_the_late_one() {
    a_retry_reuses_the_first_container(Flavour::Threads, true).await;
}

#[tokio::test]
async fn instagram_retry_publishes_the_same_container_before_the_late_one_lands() {
    a_retry_reuses_the_first_container(Flavour::Instagram, false).await;
}

#[tokio::test]
async fn instagram_retry_finds_the_container_published_by_the_late_one() {
    a_retry_reuses_the_first_container(Flavour::Instagram, true).await;
}

async fn wordpress_harness(fake: &wordpress::WordpressFake) -> Harness {
    let uri = fake.server.uri();
    Harness::new(move |_| vec![wordpress_channel("blog", &uri, TIMEOUT)]).await
}

/// WordPress renames an all-digit slug (`3` becomes `3-2`) and a plugin fails the
/// request after the article was saved. The article is found by the key it carries, in
/// whatever slug WordPress chose.
#[tokio::test]
async fn a_wordpress_article_saved_before_a_500_is_found_by_its_key_not_its_slug() {
    let fake = wordpress::WordpressFake::start(wordpress::Expect {
        identity: 1,
        lookup: 2,
        create: 1,
        read: 0,
    })
    .await;
    fake.with(|s| s.publish_mode = wordpress::PublishMode::CreateThenStatus(500));
    let h = wordpress_harness(&fake).await;
    let app = h.app();
    let id = approved_article(&app, "blog", "3つの理由", "Three reasons cats rest.")
        .await
        .id;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(matches!(report.result, PublishResult::NeedsReview { .. }));
    assert_eq!(fake.with(|s| s.articles[0].slug.clone()), "3-2");

    h.clock.advance(Duration::hours(1));
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Posted);
    assert_eq!(post.platform_post_id.as_deref(), Some("101"));
    assert!(post.permalink.unwrap().ends_with("/3-2/"));
    assert_eq!(fake.with(|s| s.articles.len()), 1);
}

/// A person said "not published" and requeued it; the retry's own lookup finds the
/// article by its key and creates nothing.
#[tokio::test]
async fn a_requeued_wordpress_article_is_found_by_its_key_before_a_second_create() {
    let fake = wordpress::WordpressFake::start(wordpress::Expect {
        identity: 2,
        lookup: 2,
        create: 1,
        read: 0,
    })
    .await;
    fake.with(|s| s.publish_mode = wordpress::PublishMode::CreateThenStatus(500));
    let h = wordpress_harness(&fake).await;
    let app = h.app();
    let me = Principal::cli();
    let id = approved_article(&app, "blog", "Feed", "Why cats like boxes.")
        .await
        .id;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(matches!(report.result, PublishResult::NeedsReview { .. }));
    app.resolve(&me, id, Resolution::NotPublished)
        .await
        .unwrap();
    app.requeue(&me, id).await.unwrap();
    app.resume(&me, Some("blog")).await.unwrap();
    fake.with(|s| s.publish_mode = wordpress::PublishMode::Normal);

    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.result, PublishResult::Posted, "{:?}", report.post);
    assert_eq!(fake.with(|s| s.articles.len()), 1);
    assert!(report.post.permalink.unwrap().ends_with("/feed-2/"));
}

/// A caller that stops waiting (a client that hung up) changes nothing: the publish runs
/// to its end in its own task.
#[tokio::test]
async fn a_caller_that_hangs_up_does_not_strand_the_post() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(serde_json::json!({"id": "w-1"}))
                .set_delay(StdDuration::from_millis(600)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let url = format!("{}/hook", server.uri());
    let h = Harness::new(move |_| vec![webhook("hook", &url, StdDuration::from_secs(5), 10)]).await;
    let app = h.app();
    let id = approved(&app, "hook", "hello").await.id;

    let gave_up = tokio::time::timeout(
        StdDuration::from_millis(150),
        app.publish_now(&Principal::cli(), id),
    )
    .await;
    assert!(gave_up.is_err(), "the caller stopped waiting");
    assert!(
        eventually(StdDuration::from_secs(5), async || status(&app, id).await
            == PostStatus::Posted)
        .await,
        "the publish went on to its end: {:?}",
        status(&app, id).await
    );
    assert_eq!(reservations(&app, id).await, ["committed"]);
    assert!(app.store().pauses().await.unwrap().is_empty());
}

async fn throttled_by(retry_after: &str) -> (Harness, MockServer) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", retry_after))
        .mount(&server)
        .await;
    let url = format!("{}/hook", server.uri());
    let h = Harness::new(move |_| vec![webhook("hook", &url, TIMEOUT, 10)]).await;
    (h, server)
}

#[tokio::test]
async fn an_absurd_retry_after_is_clamped_to_a_day_not_a_panic() {
    let (h, _server) = throttled_by("99999999999999").await;
    let app = h.app();
    let id = approved(&app, "hook", "hello").await.id;
    let report = app.publish_next(None).await.unwrap().unwrap();
    let PublishResult::Retrying { not_before, .. } = report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(not_before, h.clock.now() + Duration::hours(24));
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!((post.status, post.attempts), (PostStatus::Approved, 0));
}

#[tokio::test]
async fn a_zero_retry_after_waits_at_least_the_poll_interval() {
    let (h, _server) = throttled_by("0").await;
    let app = h.app();
    approved(&app, "hook", "hello").await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    let PublishResult::Retrying { not_before, .. } = report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(not_before, h.clock.now() + Duration::seconds(30));
    assert!(
        app.publish_next(None).await.unwrap().is_none(),
        "not claimed again at once"
    );
}

/// "Not now" does not count as an attempt, but a platform that keeps saying it does not
/// hold a post forever: after a day's worth of waits every further one counts, until the
/// post fails.
#[tokio::test]
async fn a_platform_that_keeps_saying_not_now_is_counted_after_a_while() {
    let (h, _server) = throttled_by("60").await;
    let app = h.app();
    let id = approved(&app, "hook", "hello").await.id;
    let mut results = Vec::new();
    for _ in 0..40 {
        let Some(report) = app.publish_next(None).await.unwrap() else {
            break;
        };
        results.push(report.post.attempts);
        if report.post.status == PostStatus::Failed {
            break;
        }
        h.clock.advance(Duration::seconds(61));
    }
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Failed, "{results:?}");
    let free = airlock_app::publish::FREE_PLATFORM_WAITS as usize;
    assert!(results[..free].iter().all(|a| *a == 0), "{results:?}");
    assert_eq!(results.len(), free + 3, "{results:?}");
}

/// A pause set while the container is still processing stops the post before its intent:
/// back to `approved`, its reservation released, no attempt counted, nothing published.
#[tokio::test]
async fn a_pause_while_a_post_is_being_prepared_stops_it_before_the_intent() {
    let expect = Expect {
        identity: 1,
        limit: 1,
        create: 1,
        status_at_least: 1,
        publish: 0,
        media_read: 0,
    };
    let fake = GraphFake::start_with(Flavour::Threads, expect, |s| s.in_progress_reads = 40).await;
    let h = graph_harness(Flavour::Threads, &fake).await;
    let app = h.app();
    let id = meta_post(&app, Flavour::Threads).await;
    let worker = {
        let app = app.clone();
        tokio::spawn(async move { app.publish_next(None).await })
    };
    tokio::time::sleep(StdDuration::from_millis(200)).await;
    app.pause(&Principal::cli(), None, "stop everything")
        .await
        .unwrap();
    let report = worker.await.unwrap().unwrap().unwrap();
    assert!(
        matches!(&report.result, PublishResult::Held { scope, .. } if scope == "*"),
        "{:?}",
        report.result
    );
    let detail = app.store().post_detail(id).await.unwrap();
    assert_eq!(detail.post.status, PostStatus::Approved);
    assert_eq!(detail.post.attempts, 0);
    assert!(detail.intents.is_empty());
    assert_eq!(reservations(&app, id).await, ["released"]);
    assert_eq!(fake.with(|s| s.published()), 0);
}

/// LinkedIn refuses a text as a duplicate of a post it can read back; when that post is
/// another post of the ledger, this one failed as duplicate content, it was not published.
#[tokio::test]
async fn a_linkedin_duplicate_of_another_posts_urn_fails_instead_of_counting_as_posted() {
    use airlock_testkit::fake::linkedin::LinkedinFake;
    let fake = LinkedinFake::start_expecting(1, 2, 1).await;
    fake.with(|s| s.can_read_posts = true);
    let uri = fake.server.uri();
    // airlock's own duplicate check is off on this channel: LinkedIn's is under test.
    let h = Harness::new(move |_| {
        let mut channel = linkedin_channel("li", &uri, TIMEOUT);
        channel.settings.review.duplicate_window = chrono::Duration::zero();
        vec![channel]
    })
    .await;
    let app = h.app();
    let first = approved(&app, "li", "The inn opens at eight.").await.id;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.result, PublishResult::Posted);
    let urn = report.post.platform_post_id.clone().unwrap();

    let second = approved(&app, "li", "The inn opens at eight.").await.id;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.id, second);
    let PublishResult::Failed { reason } = &report.result else {
        panic!("{:?}", report.result);
    };
    assert!(
        reason.contains("duplicate content")
            && reason.contains(&urn)
            && reason.contains(&first.to_string()),
        "{reason}"
    );
    assert_eq!(report.post.platform_post_id, None);
    assert_eq!(reservations(&app, second).await, ["released"]);
    assert_eq!(fake.with(|s| s.posts.len()), 1);
}
