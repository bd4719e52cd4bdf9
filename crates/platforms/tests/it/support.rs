//! The helpers every adapter test shares; the platform fakes themselves live in
//! `airlock-testkit`.

use std::fmt::{Debug, Display};
use std::time::Duration;

use airlock_core::{ChannelName, Media, PostId};
use airlock_platforms::PublishRequest;
use secrecy::SecretString;
use wiremock::MockServer;

pub use airlock_testkit::{CANARY, closed_port_url, hits};

/// The canary as a secret.
pub fn token() -> SecretString {
    SecretString::from(CANARY.to_owned())
}

/// A client like the CLI builds one (no redirects, no pooling).
pub fn client() -> reqwest::Client {
    airlock_platforms::http::client(Duration::from_secs(5))
}

/// A request timeout short enough for a delayed answer to outlast it.
pub const SHORT_TIMEOUT: Duration = Duration::from_millis(400);

/// A delay longer than [`SHORT_TIMEOUT`].
pub const LONG_DELAY: Duration = Duration::from_secs(2);

/// A post as the guarded path would hand it to an adapter.
pub fn request(channel: &str, text: &str) -> PublishRequest {
    PublishRequest {
        post_id: PostId(42),
        channel: ChannelName::parse(channel).unwrap(),
        title: None,
        text: text.to_owned(),
        media: Vec::new(),
        link: None,
        scheduled_at: chrono::Utc::now(),
        idempotency_key: "42-0123456789abcdef".into(),
        now: chrono::Utc::now(),
        earlier: Vec::new(),
        part: airlock_platforms::PartRequest::SINGLE,
    }
}

/// One image, with alt text.
pub fn image(url: &str) -> Media {
    Media::new(url.to_owned(), Some("A cat asleep on a cushion".into()))
}

/// Asserts that a value's `Debug` form does not carry the token.
#[track_caller]
pub fn assert_no_canary<T: Debug>(value: &T) {
    let shown = format!("{value:?}");
    assert!(!shown.contains(CANARY), "the token leaked: {shown}");
}

/// Asserts that neither the `Display` nor the `Debug` form of a value carries the token.
#[track_caller]
pub fn assert_no_canary_shown<T: Debug + Display>(value: &T) {
    assert_no_canary(value);
    let shown = value.to_string();
    assert!(!shown.contains(CANARY), "the token leaked: {shown}");
}

/// Asserts the token never travelled in a URL or a body, only in headers.
pub async fn assert_token_only_in_headers(server: &MockServer) {
    for request in server.received_requests().await.unwrap_or_default() {
        assert!(
            !request.url.as_str().contains(CANARY),
            "token in URL {}",
            request.url
        );
        assert!(
            !String::from_utf8_lossy(&request.body).contains(CANARY),
            "token in the body of {}",
            request.url
        );
    }
}

/// Asserts the token travelled only in headers, except in the bodies of requests to
/// `path` (a login or token endpoint of the platform itself, where the protocol puts it).
pub async fn assert_token_only_in_headers_except(server: &MockServer, path: &str) {
    for request in server.received_requests().await.unwrap_or_default() {
        assert!(
            !request.url.as_str().contains(CANARY),
            "token in URL {}",
            request.url
        );
        if request.url.path() != path {
            assert!(
                !String::from_utf8_lossy(&request.body).contains(CANARY),
                "token in the body of {}",
                request.url
            );
        }
    }
}

/// A server of one JPEG image at `/cat.jpg`.
pub async fn image_server() -> MockServer {
    let server = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/cat.jpg"))
        .respond_with(
            wiremock::ResponseTemplate::new(200)
                .insert_header("content-type", "image/jpeg")
                .set_body_bytes(vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4]),
        )
        .mount(&server)
        .await;
    server
}

/// An answer that repeats the request's bearer token at the end of a long message: a
/// platform (or a proxy in front of it) that echoes what it was sent. `body` makes the
/// JSON body from the message.
pub struct EchoBearer {
    /// The HTTP status.
    pub status: u16,
    /// The body, from the message.
    pub body: fn(String) -> serde_json::Value,
}

impl wiremock::Respond for EchoBearer {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("")
            .to_owned();
        // About 150 characters, then the token: a cut at 160 splits it.
        let message = format!(
            "{} token {bearer}",
            "the request was refused ".repeat(6).trim_end()
        );
        wiremock::ResponseTemplate::new(self.status).set_body_json((self.body)(message))
    }
}

/// Mounts [`EchoBearer`] over `method path` on `server`, ahead of the fake's own routes.
pub async fn echo_bearer_at(
    server: &MockServer,
    method: &'static str,
    path: &'static str,
    status: u16,
    body: fn(String) -> serde_json::Value,
) {
    wiremock::Mock::given(wiremock::matchers::method(method))
        .and(wiremock::matchers::path(path))
        .respond_with(EchoBearer { status, body })
        .with_priority(1)
        .mount(server)
        .await;
}

/// No piece of the canary (its first 8 characters and on) is in `text`.
pub fn assert_no_canary_piece(text: &str) {
    assert!(
        !text.contains(&CANARY[..8]),
        "a piece of the token survived: {text}"
    );
}
