//! The `webhook` adapter against a local receiver: which signatures it sends, and what
//! of a refusing receiver's answer it records.

use airlock_core::Outcome;
use airlock_platforms::webhook::Webhook;
use airlock_platforms::{Platform, Prepared};
use airlock_testkit::fake::receiver::Receiver;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{CANARY, client, request, token};

#[tokio::test]
async fn both_signatures_are_sent_by_default_and_v1_can_be_turned_off() {
    let receiver = Receiver::start().await;
    let hook = Webhook::new(&receiver.url(), Some(token()), client()).unwrap();
    let outcome = hook
        .publish(&request("hook", "hello"), &Prepared::default())
        .await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    let without_v1 = Webhook::new(&receiver.url(), Some(token()), client())
        .unwrap()
        .without_signature_v1();
    let outcome = without_v1
        .publish(&request("hook", "hello"), &Prepared::default())
        .await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 2);
    assert!(requests[0].headers.get("x-airlock-signature").is_some());
    assert!(requests[0].headers.get("x-airlock-signature-v2").is_some());
    assert!(
        requests[1].headers.get("x-airlock-signature").is_none(),
        "V1 was sent although turned off"
    );
    assert!(requests[1].headers.get("x-airlock-signature-v2").is_some());
}

#[tokio::test]
async fn a_refusing_receivers_free_form_answer_is_recorded_by_its_size_only() {
    let server = MockServer::start().await;
    let echo = format!(
        "<html><body>Bad request. You sent: X-Debug: leaked-{CANARY}-value and cookie=abc123secret</body></html>"
    );
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string(echo.clone()))
        .mount(&server)
        .await;
    let hook = Webhook::new(&format!("{}/hook", server.uri()), None, client()).unwrap();
    let outcome = hook
        .publish(&request("hook", "hello"), &Prepared::default())
        .await;
    let Outcome::Rejected { reason, .. } = &outcome else {
        panic!("a 400 is a rejection: {outcome:?}");
    };
    assert!(reason.starts_with("webhook: HTTP 400"), "{reason}");
    assert!(
        reason.contains(&format!("{} bytes, not kept", echo.len())),
        "{reason}"
    );
    for leaked in ["leaked", "abc123secret", "You sent"] {
        assert!(!reason.contains(leaked), "{leaked} was recorded: {reason}");
    }
}

#[tokio::test]
async fn a_json_refusal_keeps_its_code_and_a_bounded_message() {
    let server = MockServer::start().await;
    let long = "x".repeat(1000);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(422).set_body_json(serde_json::json!({
            "code": "invalid_post",
            "message": format!("text too long {long}"),
            "echo": {"authorization": "Bearer something-secret-123"},
        })))
        .mount(&server)
        .await;
    let hook = Webhook::new(&format!("{}/hook", server.uri()), None, client()).unwrap();
    let outcome = hook
        .publish(&request("hook", "hello"), &Prepared::default())
        .await;
    let Outcome::Rejected { reason, .. } = &outcome else {
        panic!("a 422 is a rejection: {outcome:?}");
    };
    assert!(
        reason.starts_with("webhook: HTTP 422, invalid_post: text too long xxx"),
        "{reason}"
    );
    assert!(reason.chars().count() < 300, "{reason}");
    assert!(!reason.contains("something-secret"), "{reason}");
}
