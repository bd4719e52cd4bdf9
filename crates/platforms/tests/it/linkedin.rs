//! The `linkedin` adapter against the Posts API fake.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::linkedin::{Linkedin, LinkedinSettings};
use airlock_platforms::{
    Evidence, Platform, Prepared, PublishRequest, ReconcileRequest, SettingsError, StepError,
    Verification,
};

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_no_canary_shown,
    assert_token_only_in_headers, client, closed_port_url, request,
};
use airlock_testkit::fake::linkedin::{LinkedinFake, PublishMode, SUB};

const ORGANIZATION: &str = "urn:li:organization:5515715";

fn settings(base_url: String) -> LinkedinSettings {
    LinkedinSettings {
        base_url,
        request_timeout: Duration::from_secs(5),
        ..LinkedinSettings::new(crate::support::token())
    }
}

fn adapter(fake: &LinkedinFake) -> Linkedin {
    Linkedin::new(settings(fake.server.uri()), client()).unwrap()
}

/// An adapter posting for an organization, which needs no `userinfo` read.
fn organization_adapter(base_url: String, request_timeout: Duration) -> Linkedin {
    Linkedin::new(
        LinkedinSettings {
            author: Some(ORGANIZATION.into()),
            request_timeout,
            ..settings(base_url)
        },
        client(),
    )
    .unwrap()
}

fn post() -> PublishRequest {
    request(
        "linkedin-inn",
        "Our cats (all 3) nap at 2pm #slowliving — see [notes] @inn_keeper",
    )
}

fn permalink(urn: &str) -> String {
    format!("https://www.linkedin.com/feed/update/{urn}/")
}

#[tokio::test]
async fn happy_path_posts_once_with_the_required_headers_and_builds_the_permalink() {
    let fake = LinkedinFake::start(1, 1).await;
    let linkedin = adapter(&fake);

    let account = linkedin.account().await.unwrap().unwrap();
    assert_eq!(account.username, SUB);
    assert_eq!(
        account.id.as_deref(),
        Some(format!("urn:li:person:{SUB}").as_str())
    );

    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let prepared = linkedin.prepare(&req).await.unwrap();
    let outcome = linkedin.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let urn = published
        .platform_post_id
        .clone()
        .expect("the URN from x-restli-id");
    assert!(urn.starts_with("urn:li:share:"), "{urn}");
    assert_eq!(
        published.permalink.as_deref(),
        Some(permalink(&urn).as_str())
    );

    let created = fake.with(|s| s.posts.clone());
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].author, format!("urn:li:person:{SUB}"));
    assert_eq!(
        created[0].commentary,
        r"Our cats \(all 3\) nap at 2pm \#slowliving — see \[notes\] \@inn\_keeper".to_owned()
            + "\n\nhttps://inn.example/naps/"
    );
    let requests = fake.server.received_requests().await.unwrap();
    let create = requests
        .iter()
        .find(|r| r.url.path() == "/rest/posts")
        .unwrap();
    let header = |name: &str| {
        create
            .headers
            .get(name)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(header("linkedin-version"), "202609");
    assert_eq!(header("x-restli-protocol-version"), "2.0.0");
    assert_eq!(header("authorization"), format!("Bearer {CANARY}"));

    // Reading posts back needs a restricted scope.
    assert_eq!(linkedin.verify(&urn).await, Verification::Unsupported);
    assert_no_canary(&account);
    assert_no_canary(&outcome);
    assert_no_canary(&linkedin);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn wrong_account_is_reported_before_anything_is_posted() {
    let fake = LinkedinFake::start(1, 0).await;
    fake.with(|s| s.sub = "someoneElse42".into());
    let account = adapter(&fake).account().await.unwrap().unwrap();
    assert_eq!(account.username, "someoneElse42");
    assert_no_canary(&account);
}

#[tokio::test]
async fn a_duplicate_naming_a_post_that_reads_back_counts_as_published() {
    let fake = LinkedinFake::start_expecting(0, 2, 1).await;
    fake.with(|s| {
        s.publish_mode = PublishMode::CreateThenDelay(LONG_DELAY);
        s.can_read_posts = true;
    });
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let req = post();
    let first = linkedin.publish(&req, &Prepared::default()).await;
    assert!(matches!(first, Outcome::Unknown { .. }), "{first:?}");

    // A person requeued it, believing it lost; LinkedIn knows better.
    fake.with(|s| s.publish_mode = PublishMode::Normal);
    let second = linkedin.publish(&req, &Prepared::default()).await;
    let earlier = fake.with(|s| s.posts[0].urn.clone());
    let Outcome::Published(published) = &second else {
        panic!("expected the earlier post, got {second:?}");
    };
    assert_eq!(
        published.platform_post_id.as_deref(),
        Some(earlier.as_str())
    );
    assert_eq!(
        published.permalink.as_deref(),
        Some(permalink(&earlier).as_str())
    );
    assert!(
        published
            .existing
            .as_deref()
            .is_some_and(|e| e.contains(&earlier)),
        "{published:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 1);
    assert_no_canary(&first);
    assert_no_canary(&second);
}

#[tokio::test]
async fn a_duplicate_naming_a_post_that_cannot_be_read_fails_as_duplicate_content() {
    let fake = LinkedinFake::start_expecting(0, 2, 1).await;
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let req = post();
    let first = linkedin.publish(&req, &Prepared::default()).await;
    assert!(matches!(first, Outcome::Published(_)), "{first:?}");
    let earlier = fake.with(|s| s.posts[0].urn.clone());
    let second = linkedin.publish(&req, &Prepared::default()).await;
    assert!(
        matches!(&second, Outcome::Rejected { reason, credential: false } if reason.contains("duplicate content") && reason.contains(&earlier) && reason.contains("HTTP 403")),
        "{second:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 1);
    assert_no_canary(&second);
}

#[tokio::test]
async fn an_inactive_version_is_rejected_as_a_configuration_problem() {
    let fake = LinkedinFake::start(0, 1).await;
    let linkedin = Linkedin::new(
        LinkedinSettings {
            version: "202401".into(),
            author: Some(ORGANIZATION.into()),
            ..settings(fake.server.uri())
        },
        client(),
    )
    .unwrap();
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: false, reason }
            if reason.contains("NONEXISTENT_VERSION") && reason.contains("202401")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts.len()), 0);
}

#[tokio::test]
async fn publish_answering_500_is_unknown() {
    let fake = LinkedinFake::start(0, 1).await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenStatus(500));
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("HTTP 500")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn publish_timeout_after_sending_is_unknown() {
    let fake = LinkedinFake::start(0, 1).await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenDelay(LONG_DELAY));
    let linkedin = organization_adapter(fake.server.uri(), SHORT_TIMEOUT);
    let outcome = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("timed out")),
        "{outcome:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let linkedin = Linkedin::new(settings(closed_port_url()), client()).unwrap();
    let account = linkedin.account().await.unwrap_err();
    assert!(
        matches!(account, StepError::Transient { .. }),
        "{account:?}"
    );
    let prepare = linkedin.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(prepare, StepError::Transient { .. }),
        "{prepare:?}"
    );
    let outcome = organization_adapter(closed_port_url(), Duration::from_secs(5))
        .publish(&post(), &Prepared::default())
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_no_canary_shown(&account);
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn expired_token_is_a_credential_rejection() {
    let fake = LinkedinFake::start(1, 1).await;
    fake.with(|s| s.token_expired = true);
    let account = adapter(&fake).account().await.unwrap_err();
    assert!(
        matches!(&account, StepError::Rejected { credential: true, reason } if reason.contains("HTTP 401")),
        "{account:?}"
    );
    let outcome = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .publish(&post(), &Prepared::default())
        .await;
    assert!(
        matches!(
            outcome,
            Outcome::Rejected {
                credential: true,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_no_canary_shown(&account);
    assert_no_canary(&outcome);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn daily_limit_reached_is_not_sent_with_a_retry_hint() {
    let fake = LinkedinFake::start(0, 2).await;
    fake.with(|s| s.daily_limit = 1);
    let linkedin = organization_adapter(fake.server.uri(), Duration::from_secs(5));
    let first = linkedin.publish(&post(), &Prepared::default()).await;
    assert!(matches!(first, Outcome::Published(_)), "{first:?}");
    let mut other = post();
    other.text = "Another day, another nap.".into();
    let second = linkedin.publish(&other, &Prepared::default()).await;
    assert!(
        matches!(&second, Outcome::NotSent { retry_after: Some(d), .. } if *d > chrono::Duration::zero()),
        "{second:?}"
    );
}

#[tokio::test]
async fn over_long_commentary_is_rejected() {
    let fake = LinkedinFake::start(0, 1).await;
    let mut req = post();
    req.text = "a".repeat(3001);
    let outcome = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .publish(&req, &Prepared::default())
        .await;
    assert!(
        matches!(
            outcome,
            Outcome::Rejected {
                credential: false,
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn posts_with_media_are_refused_before_anything_is_sent() {
    let fake = LinkedinFake::start(0, 0).await;
    let mut req = post();
    req.media = vec![crate::support::image("https://inn.example/cat.jpg")];
    let err = organization_adapter(fake.server.uri(), Duration::from_secs(5))
        .prepare(&req)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StepError::Rejected {
                credential: false,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn reconcile_cannot_read_linkedin_and_leaves_it_to_a_person() {
    let fake = LinkedinFake::start(0, 0).await;
    let evidence = adapter(&fake)
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: None,
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
}

#[tokio::test]
async fn malformed_settings_are_refused() {
    for (version, author, setting) in [
        ("2026-09", None, "version"),
        ("202609", Some("urn:li:company:1"), "author"),
    ] {
        let err = Linkedin::new(
            LinkedinSettings {
                version: version.into(),
                author: author.map(str::to_owned),
                ..settings("https://api.linkedin.com".into())
            },
            client(),
        )
        .unwrap_err();
        assert!(
            matches!(err, SettingsError::Invalid { setting: s, .. } if s == setting),
            "{err}"
        );
    }
}
