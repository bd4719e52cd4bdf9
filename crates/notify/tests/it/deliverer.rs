use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use airlock_notify::{Deliverer, DeliveryReport, DeliverySettings, Sink};
use airlock_store::{Admin, PauseScope, Reads, Store};
use tokio_util::sync::CancellationToken;

use crate::fakes::{DiscordFake, SlackFake};
use crate::helpers::{Harness, discord_sink, notification, slack_sink, webhook_sink};

const SLACK_TOKEN: &str = "slack-canary-hook";
const DISCORD_TOKEN: &str = "discord-canary-token.abc";
const WEBHOOK_SECRET: &str = "webhook-canary-secret";

#[tokio::test]
async fn sink_secrets_never_reach_last_error_even_when_a_sink_echoes_them() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    let slack = SlackFake::new();
    slack.remove();
    slack.echo_path_in_errors();
    Mock::given(method("POST"))
        .and(wiremock::matchers::path_regex("^/services/"))
        .respond_with(slack.clone())
        .expect(1)
        .mount(&server)
        .await;
    let discord = DiscordFake::new("the-right-token", &["123456789"]);
    discord.echo_auth_in_errors();
    Mock::given(method("POST"))
        .and(wiremock::matchers::path_regex("^/channels/"))
        .respond_with(discord.clone())
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(wiremock::matchers::path("/hook"))
        .respond_with(
            ResponseTemplate::new(500).set_body_string(format!("bad key {WEBHOOK_SECRET}")),
        )
        .expect(1)
        .mount(&server)
        .await;
    // Nothing listens on this port: a transport error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!(
        "http://{}/services/T1/B1/{SLACK_TOKEN}",
        closed.local_addr().unwrap()
    );
    drop(closed);

    let post = h.post().await;
    for sink in ["slack", "slack-down", "discord", "webhook"] {
        h.queue(&post, sink, "failed", "post 1 failed").await;
    }
    let deliverer = h.deliverer(vec![
        slack_sink(
            "slack",
            &format!("{}/services/T1/B1/{SLACK_TOKEN}", server.uri()),
        ),
        slack_sink("slack-down", &closed_url),
        discord_sink("discord", &server.uri(), DISCORD_TOKEN, "123456789"),
        webhook_sink(
            "webhook",
            &format!("{}/hook", server.uri()),
            Some(WEBHOOK_SECRET),
        ),
    ]);

    assert_eq!(deliverer.deliver_once().await.unwrap().retried, 4);

    let errors = h.last_errors().await;
    assert_eq!(errors.len(), 4);
    for error in &errors {
        for secret in [SLACK_TOKEN, DISCORD_TOKEN, WEBHOOK_SECRET] {
            assert!(!error.contains(secret), "{error:?} leaks {secret:?}");
        }
    }
    assert!(
        errors[0].starts_with("slack: HTTP 404: no_service"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("slack: could not connect"),
        "{errors:?}"
    );
    assert!(
        errors[2].starts_with("discord: HTTP 401: 401: Unauthorized"),
        "{errors:?}"
    );
    assert!(
        errors[3].starts_with("webhook: HTTP 500: bad key"),
        "{errors:?}"
    );
    let debug = format!("{deliverer:?}");
    for secret in [SLACK_TOKEN, DISCORD_TOKEN, WEBHOOK_SECRET] {
        assert!(!debug.contains(secret), "Debug leaks {secret:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_deliverers_racing_on_one_store_deliver_each_row_once() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(24)
        .mount(&server)
        .await;
    let post = h.post().await;
    let mut ids = BTreeSet::new();
    for n in 0..24 {
        ids.insert(
            h.queue(&post, "audit", "published", &format!("note {n}"))
                .await,
        );
    }
    let settings = DeliverySettings {
        batch: 3,
        ..DeliverySettings::default()
    };
    let sink = || vec![webhook_sink("audit", &server.uri(), None)];
    let a = h.deliverer_with(h.store.clone(), "worker-a", sink(), settings.clone());
    let b = h.deliverer_with(h.reopen().await, "worker-b", sink(), settings);

    let drain = |deliverer: Deliverer| async move {
        let mut delivered = 0;
        loop {
            let report = deliverer.deliver_once().await.unwrap();
            if report.total() == 0 {
                return delivered;
            }
            delivered += report.delivered;
        }
    };
    let (from_a, from_b) = tokio::join!(tokio::spawn(drain(a)), tokio::spawn(drain(b)));
    let (from_a, from_b) = (from_a.unwrap(), from_b.unwrap());

    assert_eq!(from_a + from_b, 24);
    let sent: BTreeSet<i64> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            r.headers["x-airlock-event-id"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(sent, ids);
    let stats = h.store.outbox_stats().await.unwrap();
    assert_eq!((stats.pending, stats.delivered), (0, 24));
}

#[tokio::test]
async fn a_failing_sink_never_changes_any_post() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("rollup_error"))
        .expect(3)
        .mount(&server)
        .await;
    let post = h.post().await;
    let id = h.queue(&post, "team", "failed", "post 1 failed").await;
    let before = h.store.post_detail(post.id).await.unwrap();
    let settings = DeliverySettings {
        max_attempts: 3,
        ..DeliverySettings::default()
    };
    let deliverer = h.deliverer_with(
        h.store.clone(),
        "worker-a",
        vec![slack_sink(
            "team",
            &format!("{}/services/T/B/x", server.uri()),
        )],
        settings,
    );

    let mut reports = Vec::new();
    for _ in 0..3 {
        reports.push(deliverer.deliver_once().await.unwrap());
        h.clock.advance(Duration::hours(1));
    }

    assert_eq!(
        reports.last(),
        Some(&DeliveryReport {
            delivered: 0,
            retried: 0,
            abandoned: 1
        })
    );
    assert!(h.row(id).await.abandoned_at.is_some());
    assert_eq!(h.store.post_detail(post.id).await.unwrap(), before);
    assert_eq!(h.store.get_post(post.id).await.unwrap(), post);
}

#[tokio::test]
async fn a_notification_for_a_sink_that_is_no_longer_configured_is_abandoned_with_a_clear_error() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let now = h.clock.now();
    h.store
        .pause(
            &PauseScope::All,
            "maintenance",
            "cli",
            now,
            vec![
                notification("old-ops", "paused", None, "all publishing paused", now),
                notification("audit", "paused", None, "all publishing paused", now),
            ],
        )
        .await
        .unwrap();
    let abandoned_id = h.last_outbox_id().await - 1;
    let deliverer = h.deliverer(vec![webhook_sink("audit", &server.uri(), None)]);

    let report = deliverer.deliver_once().await.unwrap();

    assert_eq!((report.delivered, report.abandoned), (1, 1));
    let row = h.row(abandoned_id).await;
    assert!(row.abandoned_at.is_some());
    assert_eq!(
        row.last_error.as_deref(),
        Some(
            "sink \"old-ops\" is not configured: notification abandoned (add [notify.old-ops] to deliver such rows)"
        )
    );
}

#[tokio::test]
async fn run_delivers_queued_notifications_until_it_is_cancelled() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(2)
        .mount(&server)
        .await;
    let post = h.post().await;
    h.queue(&post, "audit", "published", "one").await;
    h.queue(&post, "audit", "published", "two").await;
    let deliverer = Arc::new(h.deliverer(vec![webhook_sink("audit", &server.uri(), None)]));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn({
        let deliverer = deliverer.clone();
        let shutdown = shutdown.clone();
        async move { deliverer.run(shutdown, StdDuration::from_millis(20)).await }
    });

    let mut delivered = 0;
    for _ in 0..1_000 {
        delivered = h.store.outbox_stats().await.unwrap().delivered;
        if delivered == 2 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
    shutdown.cancel();
    running.await.unwrap();

    assert_eq!(delivered, 2);
}

#[tokio::test]
async fn sink_settings_are_checked_before_anything_is_sent() {
    let slack_http = Sink::new(slack_sink(
        "team",
        &format!("http://hooks.slack.com/services/T/B/{SLACK_TOKEN}"),
    ))
    .unwrap_err();
    let message = slack_http.to_string();
    assert!(message.contains("must use https"), "{message}");
    assert!(message.contains("webhook_file"), "{message}");
    assert!(!message.contains(SLACK_TOKEN), "{message}");

    let webhook_http = Sink::new(webhook_sink("audit", "http://receiver.example/hook", None));
    assert!(webhook_http.is_err());

    let bad_channel = Sink::new(discord_sink(
        "ops",
        "https://discord.com/api/v10",
        DISCORD_TOKEN,
        "../../users/@me",
    ))
    .unwrap_err();
    assert!(bad_channel.to_string().contains("channel_id"));

    let mut unknown_event = webhook_sink("audit", "https://receiver.example/hook", None);
    unknown_event.events = vec!["publishd".to_owned()];
    let message = Sink::new(unknown_event).unwrap_err().to_string();
    assert!(message.contains("unknown event \"publishd\""), "{message}");

    let h = Harness::new().await;
    let store: Arc<dyn Store> = h.store.clone();
    let twice = (0..2)
        .map(|_| Sink::new(webhook_sink("audit", "https://receiver.example/hook", None)).unwrap())
        .collect();
    let err = Deliverer::new(store.clone(), twice, "w", DeliverySettings::default()).unwrap_err();
    assert_eq!(err.to_string(), "notify sink \"audit\" is configured twice");

    let mut slow = webhook_sink("audit", "https://receiver.example/hook", None);
    slow.request_timeout = StdDuration::from_secs(120);
    let err = Deliverer::new(
        store,
        vec![Sink::new(slow).unwrap()],
        "w",
        DeliverySettings::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("shorter than the delivery lease"),
        "{err}"
    );
}
