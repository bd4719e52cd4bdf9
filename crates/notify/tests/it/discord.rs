use std::time::Duration as StdDuration;

use chrono::Duration;
use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer};

use crate::fakes::DiscordFake;
use crate::helpers::{Harness, discord_sink, ts};

const TOKEN: &str = "discord-canary-token.abc";
const CHANNEL: &str = "123456789";

async fn discord(fake: &DiscordFake, expected: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_regex(r"^/channels/[0-9]+/messages$"))
        .respond_with(fake.clone())
        .expect(expected)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn discord_message_carries_bot_auth_a_nonce_from_the_outbox_id_and_enforce_nonce() {
    let h = Harness::new().await;
    let fake = DiscordFake::new(TOKEN, &[CHANNEL]);
    let server = discord(&fake, 1).await;
    let post = h.post().await;
    let id = h
        .queue(
            &post,
            "ops",
            "needs_review",
            "post 1 on threads-main needs review: @everyone",
        )
        .await;
    let deliverer = h.deliverer(vec![discord_sink("ops", &server.uri(), TOKEN, CHANNEL)]);

    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);

    let requests = server.received_requests().await.unwrap();
    let request = &requests[0];
    assert_eq!(request.url.path(), format!("/channels/{CHANNEL}/messages"));
    assert_eq!(
        request.headers.get("authorization").unwrap(),
        &format!("Bot {TOKEN}")
    );
    assert_eq!(
        request.body_json::<Value>().unwrap(),
        json!({
            "content": "post 1 on threads-main needs review: @everyone",
            "nonce": format!("airlock-{id}"),
            "enforce_nonce": true,
            "allowed_mentions": {"parse": []},
        })
    );
    assert_eq!(fake.created().len(), 1);
    assert!(h.row(id).await.delivered_at.is_some());
}

#[tokio::test]
async fn discord_redelivery_after_a_lost_answer_returns_the_original_message_instead_of_a_second() {
    let h = Harness::new().await;
    let fake = DiscordFake::new(TOKEN, &[CHANNEL]);
    // The first message is created but its answer arrives after the client gave up.
    fake.lose_answers(1, StdDuration::from_secs(4));
    let server = discord(&fake, 2).await;
    let post = h.post().await;
    let id = h
        .queue(&post, "ops", "needs_review", "post 1 needs review")
        .await;
    let mut sink = discord_sink("ops", &server.uri(), TOKEN, CHANNEL);
    sink.request_timeout = StdDuration::from_millis(500);
    let deliverer = h.deliverer(vec![sink]);

    let report = deliverer.deliver_once().await.unwrap();
    assert_eq!(report.retried, 1);
    let row = h.row(id).await;
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("discord: timed out"),
        "{row:?}"
    );
    assert_eq!(
        row.next_attempt_at,
        ts(h.clock.now() + Duration::seconds(5))
    );

    h.clock.advance(Duration::seconds(5));
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);

    assert_eq!(
        fake.created().len(),
        1,
        "the repeat must not create a message"
    );
    let nonces: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json::<Value>().unwrap()["nonce"].clone())
        .collect();
    assert_eq!(
        nonces,
        [
            json!(format!("airlock-{id}")),
            json!(format!("airlock-{id}"))
        ]
    );
}

#[tokio::test]
async fn discord_rate_limit_is_retried_after_the_time_it_asks_for() {
    let h = Harness::new().await;
    let fake = DiscordFake::new(TOKEN, &[CHANNEL]);
    fake.rate_limit_next(64.57);
    let server = discord(&fake, 2).await;
    let post = h.post().await;
    let id = h
        .queue(&post, "ops", "needs_review", "post 1 needs review")
        .await;
    let deliverer = h.deliverer(vec![discord_sink("ops", &server.uri(), TOKEN, CHANNEL)]);
    let start = h.clock.now();

    assert_eq!(deliverer.deliver_once().await.unwrap().retried, 1);
    let row = h.row(id).await;
    assert_eq!(row.next_attempt_at, ts(start + Duration::seconds(65)));
    assert_eq!(
        row.last_error.as_deref(),
        Some("discord: HTTP 429: You are being rate limited.")
    );

    h.clock.advance(Duration::seconds(65));
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);
    assert_eq!(fake.created().len(), 1);
}

#[tokio::test]
async fn discord_unknown_channel_is_reported_with_its_error_code() {
    let h = Harness::new().await;
    let fake = DiscordFake::new(TOKEN, &[CHANNEL]);
    let server = discord(&fake, 1).await;
    let post = h.post().await;
    let id = h
        .queue(&post, "ops", "needs_review", "post 1 needs review")
        .await;
    let deliverer = h.deliverer(vec![discord_sink("ops", &server.uri(), TOKEN, "987654321")]);

    assert_eq!(deliverer.deliver_once().await.unwrap().retried, 1);
    assert_eq!(
        h.row(id).await.last_error.as_deref(),
        Some("discord: HTTP 404: Unknown Channel (code 10003)")
    );
    assert!(fake.created().is_empty());
}

#[tokio::test]
async fn discord_content_longer_than_two_thousand_characters_is_shortened_to_fit() {
    let h = Harness::new().await;
    let fake = DiscordFake::new(TOKEN, &[CHANNEL]);
    let server = discord(&fake, 1).await;
    let post = h.post().await;
    h.queue(&post, "ops", "needs_review", &"ß".repeat(2500))
        .await;
    let deliverer = h.deliverer(vec![discord_sink("ops", &server.uri(), TOKEN, CHANNEL)]);

    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);
    let created = fake.created();
    assert_eq!(
        created[0]["content"].as_str().unwrap().chars().count(),
        2000
    );
}
