use std::time::Duration as StdDuration;

use chrono::Duration;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::helpers::{Harness, webhook_sink};

const SECRET: &str = "webhook-canary-secret";

fn header_of<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers.get(name).map(|v| v.to_str().unwrap())
}

fn expected_signature(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[tokio::test]
async fn webhook_keeps_its_event_id_and_a_valid_signature_across_retries_after_a_5xx() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hooks/airlock"))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream busy"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/hooks/airlock"))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let post = h.post().await;
    let id = h
        .queue(&post, "audit", "published", "post 1 published")
        .await;
    let url = format!("{}/hooks/airlock", server.uri());
    let deliverer = h.deliverer(vec![webhook_sink("audit", &url, Some(SECRET))]);

    assert_eq!(deliverer.deliver_once().await.unwrap().retried, 1);
    assert_eq!(
        h.row(id).await.last_error.as_deref(),
        Some("webhook: HTTP 503: upstream busy")
    );
    h.clock.advance(Duration::seconds(5));
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            header_of(request, "x-airlock-event-id"),
            Some(id.to_string().as_str())
        );
        assert_eq!(
            header_of(request, "idempotency-key"),
            Some(format!("airlock-event-{id}").as_str())
        );
        assert_eq!(header_of(request, "x-airlock-event"), Some("published"));
        assert_eq!(
            header_of(request, "x-airlock-signature"),
            Some(expected_signature(&request.body).as_str())
        );
        let body: Value = request.body_json().unwrap();
        assert_eq!(body["event"], "published");
        assert_eq!(body["message"], "post 1 published");
        assert_eq!(body["post_id"], post.id.0);
    }
    assert_eq!(
        requests[0].body, requests[1].body,
        "the body is the same on every retry"
    );
}

#[tokio::test]
async fn webhook_that_does_not_answer_in_time_is_retried_with_the_same_event_id() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(StdDuration::from_secs(4)))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let post = h.post().await;
    let id = h
        .queue(&post, "audit", "published", "post 1 published")
        .await;
    let mut sink = webhook_sink("audit", &server.uri(), None);
    sink.request_timeout = StdDuration::from_millis(500);
    let deliverer = h.deliverer(vec![sink]);

    assert_eq!(deliverer.deliver_once().await.unwrap().retried, 1);
    let row = h.row(id).await;
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("webhook: timed out"),
        "{row:?}"
    );
    h.clock.advance(Duration::seconds(5));
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);

    let ids: Vec<_> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| header_of(r, "x-airlock-event-id").map(str::to_owned))
        .collect();
    assert_eq!(ids, [Some(id.to_string()), Some(id.to_string())]);
}

#[tokio::test]
async fn webhook_without_a_secret_sends_the_payload_unsigned() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let post = h.post().await;
    h.queue(&post, "audit", "published", "post 1 published")
        .await;
    let deliverer = h.deliverer(vec![webhook_sink("audit", &server.uri(), None)]);

    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(header_of(request, "x-airlock-signature"), None);
    assert_eq!(
        request.body_json::<Value>().unwrap()["detail"]["channel"],
        "threads-main"
    );
}

/// What the README tells a receiver to do with `X-Airlock-Signature-V2`: recompute the
/// HMAC over `"<t>.<body>"`, compare, and refuse a `t` more than `tolerance` seconds
/// away from its own clock.
fn receiver_accepts(header: &str, body: &[u8], now: i64, tolerance: i64) -> bool {
    let Some((t, mac)) = header.split_once(',') else {
        return false;
    };
    let (Some(t), Some(mac)) = (t.strip_prefix("t="), mac.strip_prefix("sha256=")) else {
        return false;
    };
    let Ok(t) = t.parse::<i64>() else {
        return false;
    };
    let mut expected = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    expected.update(format!("{t}.").as_bytes());
    expected.update(body);
    let Ok(mac) = hex::decode(mac) else {
        return false;
    };
    expected.verify_slice(&mac).is_ok() && (now - t).abs() <= tolerance
}

#[tokio::test]
async fn a_captured_delivery_cannot_be_replayed_later_against_the_timestamped_signature() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let post = h.post().await;
    h.queue(&post, "audit", "published", "post 1 published")
        .await;
    let url = format!("{}/hooks/airlock", server.uri());
    let deliverer = h.deliverer(vec![webhook_sink("audit", &url, Some(SECRET))]);
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);

    let requests = server.received_requests().await.unwrap();
    let request = &requests[0];
    let signed = header_of(request, "x-airlock-signature-v2").expect("a timestamped signature");
    let now = chrono::Utc::now().timestamp();
    assert!(
        receiver_accepts(signed, &request.body, now, 300),
        "{signed}"
    );
    // The same capture ten minutes later is refused.
    assert!(!receiver_accepts(signed, &request.body, now + 600, 300));
    // A fresh timestamp pasted onto the old signature does not verify.
    let mac = signed.split_once(',').unwrap().1;
    let forged = format!("t={},{mac}", now + 600);
    assert!(!receiver_accepts(&forged, &request.body, now + 600, 300));
    // Nor does another body.
    assert!(!receiver_accepts(
        signed,
        b"{\"event\":\"failed\"}",
        now,
        300
    ));
}

#[tokio::test]
async fn a_sink_with_signature_v1_off_sends_only_the_timestamped_signature() {
    let h = Harness::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let post = h.post().await;
    h.queue(&post, "audit", "published", "post 1 published")
        .await;
    let mut sink = webhook_sink("audit", &server.uri(), Some(SECRET));
    if let airlock_notify::SinkKind::Webhook { signature_v1, .. } = &mut sink.kind {
        *signature_v1 = false;
    }
    let deliverer = h.deliverer(vec![sink]);
    assert_eq!(deliverer.deliver_once().await.unwrap().delivered, 1);
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(header_of(request, "x-airlock-signature"), None);
    let signed = header_of(request, "x-airlock-signature-v2").expect("V2 is always sent");
    assert!(receiver_accepts(
        signed,
        &request.body,
        chrono::Utc::now().timestamp(),
        300
    ));
}

/// A webhook notification sink and a webhook channel POST to a URL someone configured:
/// they refuse the same URLs by one rule, with the same message naming the `url` key
/// (and never a password the URL carried), and accept the same ones.
#[test]
fn a_webhook_sink_and_a_webhook_channel_refuse_a_url_by_the_same_rule_and_message() {
    use airlock_notify::Sink;
    use airlock_platforms::webhook::Webhook;
    for url in [
        "http://example.com/hook",
        "https://user:hunter2@example.com/hook",
        "https://example.com/hook#part",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let channel = Webhook::new(
            url,
            None,
            airlock_platforms::http::client(StdDuration::from_secs(5)),
        )
        .err()
        .unwrap_or_else(|| panic!("the channel accepted {url}"))
        .to_string();
        let sink = Sink::new(webhook_sink("hooks", url, None))
            .err()
            .unwrap_or_else(|| panic!("the sink accepted {url}"))
            .to_string();
        assert!(
            sink.ends_with(&format!(": {channel}")),
            "{url}: the sink says {sink:?}, the channel {channel:?}"
        );
        assert!(channel.starts_with("url "), "names the key: {channel}");
        assert!(!channel.contains("hunter2"), "{channel}");
    }
    for url in ["https://example.com/hook", "http://127.0.0.1:9/hook"] {
        Webhook::new(
            url,
            None,
            airlock_platforms::http::client(StdDuration::from_secs(5)),
        )
        .unwrap_or_else(|e| panic!("the channel refused {url}: {e}"));
        Sink::new(webhook_sink("hooks", url, None))
            .unwrap_or_else(|e| panic!("the sink refused {url}: {e}"));
    }
}
