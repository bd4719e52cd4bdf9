use chrono::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use airlock_notify::{DeliveryReport, DeliverySettings};
use airlock_store::Reads;

use crate::fakes::SlackFake;
use crate::helpers::{Harness, slack_sink, ts};

const HOOK_PATH: &str = "/services/T0001/B0002/slack-canary-hook";

async fn slack(fake: &SlackFake, expected: u64) -> (MockServer, String) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(HOOK_PATH))
        .respond_with(fake.clone())
        .expect(expected)
        .mount(&server)
        .await;
    let url = format!("{}{HOOK_PATH}", server.uri());
    (server, url)
}

#[tokio::test]
async fn slack_sink_posts_the_message_as_text_and_marks_the_row_delivered() {
    let h = Harness::new().await;
    let fake = SlackFake::new();
    let (_server, url) = slack(&fake, 1).await;
    let post = h.post().await;
    let id = h
        .queue(
            &post,
            "team",
            "published",
            "post 1 published on threads-main: <!channel> & co",
        )
        .await;
    let deliverer = h.deliverer(vec![slack_sink("team", &url)]);

    let report = deliverer.deliver_once().await.unwrap();

    assert_eq!(
        report,
        DeliveryReport {
            delivered: 1,
            retried: 0,
            abandoned: 0
        }
    );
    assert_eq!(
        fake.received(),
        [serde_json::json!({
            "text": "post 1 published on threads-main: &lt;!channel&gt; &amp; co"
        })]
    );
    let row = h.row(id).await;
    assert_eq!(row.delivered_at, Some(ts(h.clock.now())));
    assert_eq!(row.attempts, 0);
    assert_eq!(h.store.outbox_stats().await.unwrap().delivered, 1);
    // Nothing is left to send.
    assert_eq!(deliverer.deliver_once().await.unwrap().total(), 0);
}

#[tokio::test]
async fn slack_rate_limit_is_retried_at_the_time_its_retry_after_names() {
    let h = Harness::new().await;
    // One message, then one more every 30 s: the second gets 429 + Retry-After: 30.
    let fake = SlackFake::with_bucket(1.0, 1.0 / 30.0);
    let (_server, url) = slack(&fake, 3).await;
    let post = h.post().await;
    let first = h.queue(&post, "team", "published", "first").await;
    let second = h.queue(&post, "team", "published", "second").await;
    let deliverer = h.deliverer(vec![slack_sink("team", &url)]);
    let start = h.clock.now();

    let report = deliverer.deliver_once().await.unwrap();

    assert_eq!((report.delivered, report.retried), (1, 1));
    assert!(h.row(first).await.delivered_at.is_some());
    let row = h.row(second).await;
    assert_eq!(row.attempts, 1);
    assert_eq!(row.next_attempt_at, ts(start + Duration::seconds(30)));
    assert_eq!(
        row.last_error.as_deref(),
        Some("slack: HTTP 429: rate_limited")
    );

    // Not before the hinted time...
    h.clock.advance(Duration::seconds(29));
    assert_eq!(deliverer.deliver_once().await.unwrap().total(), 0);

    // ...and then it goes out.
    fake.refill();
    h.clock.advance(Duration::seconds(1));
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);
    assert!(h.row(second).await.delivered_at.is_some());
    let texts: Vec<_> = fake.received().iter().map(|p| p["text"].clone()).collect();
    assert_eq!(texts, ["first", "second"]);
}

#[tokio::test]
async fn removed_slack_webhook_is_retried_with_backoff_then_abandoned_after_max_attempts() {
    let h = Harness::new().await;
    let fake = SlackFake::new();
    fake.remove();
    let settings = DeliverySettings::default();
    let (_server, url) = slack(&fake, u64::from(settings.max_attempts)).await;
    let post = h.post().await;
    let id = h.queue(&post, "team", "failed", "post 1 failed").await;
    let deliverer = h.deliverer(vec![slack_sink("team", &url)]);

    let mut waits = Vec::new();
    for attempt in 1..settings.max_attempts {
        let report = deliverer.deliver_once().await.unwrap();
        assert_eq!(report.retried, 1, "attempt {attempt}");
        let row = h.row(id).await;
        assert_eq!(row.attempts, i64::from(attempt));
        assert_eq!(
            row.last_error.as_deref(),
            Some("slack: HTTP 404: no_service")
        );
        let now = h.clock.now();
        let wait = (1..=3600)
            .find(|s| ts(now + Duration::seconds(*s)) == row.next_attempt_at)
            .expect("the retry is scheduled within the hour");
        waits.push(wait);
        // Just before the retry time nothing is claimed.
        h.clock.advance(Duration::seconds(wait - 1));
        assert_eq!(deliverer.deliver_once().await.unwrap().total(), 0);
        h.clock.advance(Duration::seconds(1));
    }
    assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600]);

    let report = deliverer.deliver_once().await.unwrap();
    assert_eq!(report.abandoned, 1);
    let row = h.row(id).await;
    assert!(row.abandoned_at.is_some());
    assert_eq!(row.attempts, 12);
    assert_eq!(
        row.last_error.as_deref(),
        Some("gave up after 12 attempts: slack: HTTP 404: no_service")
    );
    let stats = h.store.outbox_stats().await.unwrap();
    assert_eq!((stats.pending, stats.abandoned), (0, 1));

    // An abandoned row is never sent again.
    h.clock.advance(Duration::days(7));
    assert_eq!(deliverer.deliver_once().await.unwrap().total(), 0);
}
