//! The `telegram` adapter against the fake Bot API.

use std::time::Duration;

use secrecy::SecretString;
use wiremock::MockServer;

use airlock_core::Outcome;
use airlock_platforms::telegram::{ChatId, Telegram, TelegramSettings};
use airlock_platforms::{
    Evidence, Platform, PublishRequest, ReconcileRequest, StepError, Verification,
};
use airlock_testkit::fake::telegram::{
    BOT_USERNAME, CHAT_ID, CHAT_USERNAME, Chat, CreateMode, Expect, TelegramFake, token,
};

use crate::support::{CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, client, request};

fn adapter_with(base_url: &str, token: &str, chat_id: ChatId, timeout: Duration) -> Telegram {
    Telegram::new(
        TelegramSettings {
            base_url: base_url.to_owned(),
            token: SecretString::from(token.to_owned()),
            chat_id,
            request_timeout: timeout,
        },
        client(),
    )
    .unwrap()
}

fn adapter(fake: &TelegramFake) -> Telegram {
    adapter_with(
        &fake.uri(),
        &token(),
        ChatId::Id(CHAT_ID),
        Duration::from_secs(5),
    )
}

fn post() -> PublishRequest {
    request("tg-main", "Mochi naps in the sun.")
}

/// The token travelled only in the path of requests to its own Bot API: never in a query,
/// a body or a header.
async fn assert_token_only_in_the_path(server: &MockServer) {
    for request in server.received_requests().await.unwrap_or_default() {
        assert!(
            request.url.path().starts_with("/bot"),
            "a request without the token in its path: {}",
            request.url.path()
        );
        assert!(
            !request.url.query().unwrap_or("").contains(CANARY),
            "token in a query"
        );
        assert!(
            !String::from_utf8_lossy(&request.body).contains(CANARY),
            "token in the body of {}",
            request.url.path()
        );
        for (name, value) in request.headers.iter() {
            assert!(
                !value.to_str().unwrap_or("").contains(CANARY),
                "token in header {name}"
            );
        }
    }
}

#[tokio::test]
async fn happy_path_sends_one_message_with_a_permalink_and_the_link() {
    let fake = TelegramFake::start(Expect::ONE_POST).await;
    let telegram = adapter(&fake);
    let account = telegram.account().await.unwrap().unwrap();
    assert_eq!(account.username, BOT_USERNAME);
    assert!(
        !telegram.prepares(),
        "nothing is made before the one request"
    );
    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let outcome = telegram.publish(&req, &Default::default()).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    assert_eq!(
        published.platform_post_id.as_deref(),
        Some(format!("{CHAT_ID}/1").as_str())
    );
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("https://t.me/{CHAT_USERNAME}/1").as_str())
    );
    assert_eq!(
        fake.with(|s| s.messages[0].text.clone()),
        "Mochi naps in the sun.\nhttps://inn.example/naps/"
    );
    // A bot reads no message back and sends no key: an unknown outcome waits for a person.
    assert_eq!(
        telegram.verify("-1001234567890/1").await,
        Verification::Unsupported
    );
    let reconcile = ReconcileRequest {
        publish: req.clone(),
        platform_ref: None,
    };
    assert!(!telegram.reconcile_sends(&reconcile));
    assert_eq!(telegram.reconcile(&reconcile).await, Evidence::NoProof);
    assert_no_canary(&outcome);
    assert_no_canary(&telegram);
    assert_token_only_in_the_path(&fake.server).await;
}

#[tokio::test]
async fn a_chat_named_by_its_username_gets_the_message() {
    let fake = TelegramFake::start(Expect {
        send: 1,
        ..Expect::NONE
    })
    .await;
    let telegram = adapter_with(
        &fake.uri(),
        &token(),
        ChatId::parse(&format!("@{CHAT_USERNAME}")).unwrap(),
        Duration::from_secs(5),
    );
    let outcome = telegram.publish(&post(), &Default::default()).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    assert_eq!(fake.with(|s| s.messages[0].chat_id), CHAT_ID);
}

#[tokio::test]
async fn a_timeout_after_telegram_accepted_waits_for_a_person() {
    let fake = TelegramFake::start_with(
        Expect {
            send: 1,
            ..Expect::NONE
        },
        |s| s.create_mode = CreateMode::CreateThenDelay(LONG_DELAY),
    )
    .await;
    let telegram = adapter_with(&fake.uri(), &token(), ChatId::Id(CHAT_ID), SHORT_TIMEOUT);
    let outcome = telegram.publish(&post(), &Default::default()).await;
    let Outcome::Unknown { reason } = &outcome else {
        panic!("a lost answer is unknown: {outcome:?}");
    };
    assert!(reason.contains("timed out"), "{reason}");
    assert_eq!(fake.with(|s| s.posts()), 1, "Telegram did send it");
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn a_5xx_is_unknown_and_its_page_is_not_kept() {
    for mode in [
        CreateMode::CreateThenStatus(502),
        CreateMode::StatusWithoutCreating(500),
    ] {
        let fake = TelegramFake::start_with(
            Expect {
                send: 1,
                ..Expect::NONE
            },
            |s| s.create_mode = mode,
        )
        .await;
        let outcome = adapter(&fake).publish(&post(), &Default::default()).await;
        let Outcome::Unknown { reason } = &outcome else {
            panic!("{mode:?}: a 5xx proves nothing: {outcome:?}");
        };
        assert!(reason.contains("has no key to find out"), "{reason}");
        assert!(
            reason.contains("not kept") && !reason.contains("nginx"),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn flood_control_waits_for_the_retry_after_in_the_body() {
    let fake = TelegramFake::start_with(
        Expect {
            send: 1,
            ..Expect::NONE
        },
        |s| {
            s.messages_left = Some(0);
            s.retry_after = 35;
        },
    )
    .await;
    let outcome = adapter(&fake).publish(&post(), &Default::default()).await;
    let Outcome::NotSent {
        reason,
        retry_after,
    } = &outcome
    else {
        panic!("a 429 sent nothing: {outcome:?}");
    };
    assert_eq!(*retry_after, Some(chrono::Duration::seconds(35)));
    assert!(reason.contains("nothing was published"), "{reason}");
    assert_eq!(fake.with(|s| s.posts()), 0);
}

#[tokio::test]
async fn a_refused_token_fails_for_the_credential_and_is_never_shown() {
    let fake = TelegramFake::start(Expect { get_me: 2, send: 1 }).await;
    let other = format!("7000000002:{CANARY}-revoked");
    let telegram = adapter_with(
        &fake.uri(),
        &other,
        ChatId::Id(CHAT_ID),
        Duration::from_secs(5),
    );
    let err = telegram.account().await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("a 401 is a refusal: {err:?}");
    };
    assert!(*credential && reason.contains("HTTP 401"), "{reason}");
    let outcome = telegram.publish(&post(), &Default::default()).await;
    assert!(
        matches!(
            &outcome,
            Outcome::Rejected {
                credential: true,
                ..
            }
        ),
        "{outcome:?}"
    );
    // A path whose token the Bot API cannot read answers 404: the token, too.
    let malformed = adapter_with(
        &fake.uri(),
        CANARY,
        ChatId::Id(CHAT_ID),
        Duration::from_secs(5),
    );
    let err = malformed.account().await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: true, reason } if reason.contains("HTTP 404")),
        "{err:?}"
    );
    assert_no_canary(&err);
    assert_no_canary(&outcome);
    assert_eq!(fake.with(|s| s.posts()), 0);
}

#[tokio::test]
async fn a_chat_the_bot_cannot_post_to_fails_and_pauses_the_channel() {
    let fake = TelegramFake::start_with(
        Expect {
            send: 3,
            ..Expect::NONE
        },
        |s| {
            s.chats.push(Chat {
                id: -4001,
                username: None,
                member: true,
                migrated_to: Some(-1009876543210),
            });
            s.chats.push(Chat {
                id: -1005550000000,
                username: None,
                member: false,
                migrated_to: None,
            });
        },
    )
    .await;
    let send_to = |chat: i64| {
        let telegram = adapter_with(
            &fake.uri(),
            &token(),
            ChatId::Id(chat),
            Duration::from_secs(5),
        );
        async move { telegram.publish(&post(), &Default::default()).await }
    };
    let outcome = send_to(-42).await;
    let Outcome::Rejected { reason, credential } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(*credential, "every message would fail alike: {reason}");
    assert!(
        reason.contains("chat not found") && reason.contains("chat_id"),
        "{reason}"
    );
    let outcome = send_to(-4001).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: true, reason } if reason.contains("chat_id = -1009876543210")),
        "{outcome:?}"
    );
    let outcome = send_to(-1005550000000).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: true, reason } if reason.contains("HTTP 403")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
}

#[tokio::test]
async fn a_refused_connection_is_not_sent_and_an_echoed_token_is_redacted() {
    let closed = airlock_testkit::closed_port_url();
    let telegram = adapter_with(
        &closed,
        &token(),
        ChatId::Id(CHAT_ID),
        Duration::from_secs(5),
    );
    let outcome = telegram.publish(&post(), &Default::default()).await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_no_canary(&outcome);

    // A proxy that echoes the path it was asked for (with the token in it).
    let server = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(|request: &wiremock::Request| {
            wiremock::ResponseTemplate::new(400).set_body_json(serde_json::json!({
                "ok": false, "error_code": 400,
                "description": format!("Bad Request: no route for {}", request.url.path()),
            }))
        })
        .mount(&server)
        .await;
    let telegram = adapter_with(
        &server.uri(),
        &token(),
        ChatId::Id(CHAT_ID),
        Duration::from_secs(5),
    );
    let outcome = telegram.publish(&post(), &Default::default()).await;
    let Outcome::Rejected { reason, credential } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(!credential);
    assert!(reason.contains("[redacted]"), "{reason}");
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn media_and_unsafe_base_urls_are_refused_before_anything_is_sent() {
    let fake = TelegramFake::start(Expect::NONE).await;
    let mut req = post();
    req.media = vec![crate::support::image("https://inn.example/cat.jpg")];
    let outcome = adapter(&fake).publish(&req, &Default::default()).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: false, reason } if reason.contains("text messages only")),
        "{outcome:?}"
    );
    let err = Telegram::new(
        TelegramSettings {
            base_url: "http://api.telegram.example".into(),
            token: SecretString::from(token()),
            chat_id: ChatId::Id(CHAT_ID),
            request_timeout: Duration::from_secs(5),
        },
        client(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("https"), "{err}");
}
