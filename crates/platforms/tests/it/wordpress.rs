//! The `wordpress` adapter against the REST API fake.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::wordpress::{Wordpress, WordpressSettings, key_marker};
use airlock_platforms::{
    EarlierAttempt, Evidence, Platform, Prepared, Proof, PublishRequest, ReconcileRequest,
    StepError, Verification,
};
use secrecy::SecretString;

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_no_canary_shown,
    assert_token_only_in_headers, client, closed_port_url, image, request,
};
use airlock_testkit::fake::wordpress::{Expect, PublishMode, USER_SLUG, USERNAME, WordpressFake};

const TITLE: &str = "Cats' Own Pace";
const SLUG: &str = "cats-own-pace";

fn settings(base_url: String) -> WordpressSettings {
    WordpressSettings {
        request_timeout: Duration::from_secs(5),
        ..WordpressSettings::new(base_url, USERNAME.into(), crate::support::token())
    }
}

fn adapter(fake: &WordpressFake) -> Wordpress {
    Wordpress::new(settings(fake.server.uri()), client()).unwrap()
}

fn post() -> PublishRequest {
    let mut req = request(
        "blog",
        "## Why they nap\n\nOur cats keep **their own** pace.\n\n<script>alert('x')</script>\n",
    );
    req.title = Some(TITLE.into());
    req
}

fn reconcile_request(prepared: &Prepared) -> ReconcileRequest {
    ReconcileRequest {
        publish: post(),
        platform_ref: prepared.platform_ref.clone(),
    }
}

#[tokio::test]
async fn happy_path_publishes_the_rendered_article_once_and_reads_it_back() {
    let fake = WordpressFake::start(Expect {
        identity: 1,
        // Before the create, and in the read-back (the key must be findable).
        lookup: 2,
        create: 1,
        read: 1,
    })
    .await;
    let wordpress = adapter(&fake);

    let account = wordpress.account().await.unwrap().unwrap();
    assert_eq!(account.username, USER_SLUG);
    assert_eq!(account.id.as_deref(), Some("3"));

    let mut req = post();
    req.media = vec![image("https://inn.example/wp-content/uploads/cat.jpg")];
    req.link = Some("https://inn.example/more/".into());
    let prepared = wordpress.prepare(&req).await.unwrap();
    assert_eq!(prepared.platform_ref.as_deref(), Some(SLUG));

    let outcome = wordpress.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let id = published.platform_post_id.clone().expect("the article id");
    let expected_link = format!("{}/{SLUG}/", fake.server.uri());
    assert_eq!(published.permalink.as_deref(), Some(expected_link.as_str()));

    let article = fake.with(|s| s.articles[0].clone());
    assert_eq!(article.title, TITLE);
    assert_eq!(article.status, "publish");
    assert!(
        article.content.contains("<h2>Why they nap</h2>"),
        "{}",
        article.content
    );
    assert!(
        article.content.contains("<strong>their own</strong>"),
        "{}",
        article.content
    );
    assert!(!article.content.contains("<script>"), "{}", article.content);
    assert!(article.content.contains("<img src=\"https://inn.example/wp-content/uploads/cat.jpg\" alt=\"A cat asleep on a cushion\""));
    assert!(
        article
            .content
            .contains("<a href=\"https://inn.example/more/\">")
    );
    assert!(
        article.content.contains(&key_marker(&req.idempotency_key)),
        "the article carries its key: {}",
        article.content
    );

    let verification = wordpress.verify(&id).await;
    assert_eq!(
        verification,
        Verification::Verified {
            permalink: Some(expected_link)
        }
    );

    let requests = fake.server.received_requests().await.unwrap();
    for request in &requests {
        let auth = request
            .headers
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap();
        assert!(auth.starts_with("Basic "), "{auth}");
    }
    assert_no_canary(&account);
    assert_no_canary(&prepared);
    assert_no_canary(&outcome);
    assert_no_canary(&verification);
    assert_no_canary(&wordpress);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn sites_without_pretty_permalinks_are_reached_through_rest_route() {
    let fake = WordpressFake::start(Expect {
        identity: 1,
        lookup: 1,
        create: 1,
        read: 0,
    })
    .await;
    let wordpress = Wordpress::new(
        WordpressSettings {
            rest_route: true,
            ..settings(fake.server.uri())
        },
        client(),
    )
    .unwrap();
    wordpress.account().await.unwrap();
    let prepared = wordpress.prepare(&post()).await.unwrap();
    assert!(matches!(
        wordpress.publish(&post(), &prepared).await,
        Outcome::Published(_)
    ));
    for request in fake.server.received_requests().await.unwrap() {
        assert_eq!(request.url.path(), "/");
        assert!(
            request
                .url
                .query()
                .unwrap()
                .starts_with("rest_route=%2Fwp%2Fv2%2F"),
            "{}",
            request.url
        );
    }
}

#[tokio::test]
async fn wrong_account_is_reported_before_anything_is_created() {
    let fake = WordpressFake::start(Expect {
        identity: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.user_slug = "someone-else".into());
    let account = adapter(&fake).account().await.unwrap().unwrap();
    assert_eq!(account.username, "someone-else");
    assert_no_canary(&account);
}

#[tokio::test]
async fn an_article_carrying_this_attempts_key_is_this_post_already_published() {
    let fake = WordpressFake::start(Expect {
        lookup: 1,
        ..Expect::default()
    })
    .await;
    let req = post();
    let content = format!("<p>text</p>{}", key_marker(&req.idempotency_key));
    let earlier = fake.with(|s| s.add_with_content("cats-own-pace-2", TITLE, "draft", &content));
    let prepared = adapter(&fake).prepare(&req).await.unwrap();
    let Some(Proof {
        platform_post_id,
        note,
        ..
    }) = &prepared.already_published
    else {
        panic!("expected the earlier article as proof, got {prepared:?}");
    };
    assert_eq!(
        platform_post_id.as_deref(),
        Some(earlier.to_string().as_str())
    );
    assert!(note.contains(&req.idempotency_key), "{note}");
    assert_no_canary(&prepared);
}

#[tokio::test]
async fn an_article_with_the_same_title_and_slug_but_not_the_key_is_not_this_post() {
    let fake = WordpressFake::start(Expect {
        lookup: 1,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.add(SLUG, TITLE, "publish"));
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    assert_eq!(prepared.already_published, None);
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Published(p) if p.permalink.as_deref().is_some_and(|l| l.ends_with("/cats-own-pace-2/"))),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_article_of_an_earlier_attempt_with_older_content_is_this_post_already_out() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        ..Expect::default()
    })
    .await;
    let mut req = post();
    req.earlier = vec![EarlierAttempt {
        generation: 1,
        idempotency_key: "airlock-42-older".into(),
        platform_ref: Some(SLUG.into()),
        sent_at: chrono::Utc::now(),
        definitely_unpublished: false,
        resend: false,
    }];
    let content = format!("<p>older text</p>{}", key_marker("airlock-42-older"));
    let earlier = fake.with(|s| s.add_with_content(SLUG, TITLE, "publish", &content));
    let prepared = adapter(&fake).prepare(&req).await.unwrap();
    let Some(proof) = &prepared.already_published else {
        panic!("expected the earlier article, got {prepared:?}");
    };
    assert_eq!(
        proof.platform_post_id.as_deref(),
        Some(earlier.to_string().as_str())
    );
    assert!(proof.note.contains("airlock-42-older"), "{proof:?}");
}

#[tokio::test]
async fn the_key_lookup_reads_every_page_of_the_search() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        ..Expect::default()
    })
    .await;
    let req = post();
    let content = format!("<p>ours</p>{}", key_marker(&req.idempotency_key));
    let ours = fake.with(|s| s.add_with_content("ours", TITLE, "publish", &content));
    // Newer articles that mention the key's text, without being airlock's, fill the first
    // page of a newest-first search.
    for n in 0..120 {
        let quoting = format!("<p>a note about {}</p>", req.idempotency_key);
        fake.with(|s| s.add_with_content(&format!("note-{n}"), "A note", "publish", &quoting));
    }
    let prepared = adapter(&fake).prepare(&req).await.unwrap();
    assert_eq!(
        prepared.already_published.and_then(|p| p.platform_post_id),
        Some(ours.to_string())
    );
}

#[tokio::test]
async fn a_site_that_strips_the_key_comment_fails_verification_and_says_why() {
    let fake = WordpressFake::start(Expect {
        lookup: 1,
        create: 1,
        read: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.strip_comments = true);
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    let Outcome::Published(published) = wordpress.publish(&post(), &prepared).await else {
        panic!("expected a publish");
    };
    let verification = wordpress.verify(&published.platform_post_id.unwrap()).await;
    assert!(
        matches!(&verification, Verification::Failed { reason } if reason.contains("key comment") && reason.contains("only by a person")),
        "{verification:?}"
    );
}

#[tokio::test]
async fn an_all_digit_slug_renamed_by_wordpress_is_still_found_by_its_key() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenStatus(500));
    let wordpress = adapter(&fake);
    let mut req = post();
    req.title = Some("3つの理由".into());
    let prepared = wordpress.prepare(&req).await.unwrap();
    assert_eq!(prepared.platform_ref.as_deref(), Some("3"));
    let outcome = wordpress.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    assert_eq!(fake.with(|s| s.articles[0].slug.clone()), "3-2");
    let evidence = wordpress
        .reconcile(&ReconcileRequest {
            publish: req,
            platform_ref: prepared.platform_ref.clone(),
        })
        .await;
    assert!(
        matches!(&evidence, Evidence::Published(Proof { permalink: Some(link), .. }) if link.ends_with("/3-2/")),
        "{evidence:?}"
    );
}

#[tokio::test]
async fn a_slug_taken_between_prepare_and_publish_is_renamed_and_the_permalink_says_so() {
    let fake = WordpressFake::start(Expect {
        lookup: 1,
        create: 1,
        ..Expect::default()
    })
    .await;
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    fake.with(|s| s.add(SLUG, "Someone else's article", "publish"));
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Published(p) if p.permalink.as_deref().is_some_and(|l| l.ends_with("/cats-own-pace-2/"))),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn publish_answering_500_is_unknown_and_reconcile_finds_the_article() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenStatus(500));
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("HTTP 500")),
        "{outcome:?}"
    );

    let evidence = wordpress.reconcile(&reconcile_request(&prepared)).await;
    let id = fake.with(|s| s.articles[0].id.to_string());
    let Evidence::Published(Proof {
        platform_post_id,
        permalink,
        note,
        ..
    }) = &evidence
    else {
        panic!("expected evidence of publishing, got {evidence:?}");
    };
    assert_eq!(platform_post_id.as_deref(), Some(id.as_str()));
    assert!(
        permalink
            .as_deref()
            .is_some_and(|l| l.ends_with("/cats-own-pace/"))
    );
    assert!(note.contains("carries this attempt's key"), "{note}");
    assert_no_canary(&outcome);
    assert_no_canary(&evidence);
}

#[tokio::test]
async fn publish_answering_503_without_creating_proves_nothing() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutCreating(503));
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    // No article carries the key: that proves nothing, the request may still land.
    let evidence = wordpress.reconcile(&reconcile_request(&prepared)).await;
    assert_eq!(evidence, Evidence::NoProof);
}

#[tokio::test]
async fn publish_timeout_after_sending_is_unknown() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenDelay(LONG_DELAY));
    let wordpress = Wordpress::new(
        WordpressSettings {
            request_timeout: SHORT_TIMEOUT,
            ..settings(fake.server.uri())
        },
        client(),
    )
    .unwrap();
    let prepared = wordpress.prepare(&post()).await.unwrap();
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("timed out")),
        "{outcome:?}"
    );
    let evidence = wordpress.reconcile(&reconcile_request(&prepared)).await;
    assert!(
        matches!(evidence, Evidence::Published { .. }),
        "{evidence:?}"
    );
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn connection_refused_is_not_sent() {
    let wordpress = Wordpress::new(settings(closed_port_url()), client()).unwrap();
    let account = wordpress.account().await.unwrap_err();
    assert!(
        matches!(account, StepError::Transient { .. }),
        "{account:?}"
    );
    let prepare = wordpress.prepare(&post()).await.unwrap_err();
    assert!(
        matches!(prepare, StepError::Transient { .. }),
        "{prepare:?}"
    );
    let outcome = wordpress.publish(&post(), &Prepared::with_ref(SLUG)).await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    let evidence = wordpress
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: Some(SLUG.into()),
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
    assert_no_canary_shown(&account);
    assert_no_canary_shown(&prepare);
    assert_no_canary(&outcome);
}

#[tokio::test]
async fn a_refused_application_password_is_a_credential_rejection() {
    let fake = WordpressFake::start(Expect {
        identity: 1,
        create: 1,
        ..Expect::default()
    })
    .await;
    let wordpress = Wordpress::new(
        WordpressSettings {
            app_password: SecretString::from(format!("{CANARY}-revoked")),
            ..settings(fake.server.uri())
        },
        client(),
    )
    .unwrap();
    let account = wordpress.account().await.unwrap_err();
    assert!(
        matches!(&account, StepError::Rejected { credential: true, reason } if reason.contains("incorrect_password")),
        "{account:?}"
    );
    let outcome = wordpress.publish(&post(), &Prepared::with_ref(SLUG)).await;
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
    assert_no_canary(&wordpress);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn a_user_who_may_not_publish_is_a_credential_rejection() {
    let fake = WordpressFake::start(Expect {
        lookup: 1,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.can_publish = false);
    let wordpress = adapter(&fake);
    let prepared = wordpress.prepare(&post()).await.unwrap();
    let outcome = wordpress.publish(&post(), &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: true, reason } if reason.contains("rest_cannot_publish")),
        "{outcome:?}"
    );
    assert!(fake.with(|s| s.articles.is_empty()));
}

#[tokio::test]
async fn a_host_rate_limit_is_not_sent() {
    let fake = WordpressFake::start(Expect {
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::StatusWithoutCreating(429));
    let outcome = adapter(&fake)
        .publish(&post(), &Prepared::with_ref(SLUG))
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
}

#[tokio::test]
async fn reconcile_leaves_anything_it_cannot_prove_to_a_person() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        ..Expect::default()
    })
    .await;
    // This post's title and slug, but not its key: not proof.
    fake.with(|s| s.add(SLUG, TITLE, "publish"));
    let wordpress = adapter(&fake);
    let evidence = wordpress
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: Some(SLUG.into()),
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
    // The slug recorded in the intent is not what finds an article: the key is.
    let evidence = wordpress
        .reconcile(&ReconcileRequest {
            publish: post(),
            platform_ref: None,
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
}

#[tokio::test]
async fn articles_need_a_title() {
    let fake = WordpressFake::start(Expect::default()).await;
    let mut req = post();
    req.title = None;
    let err = adapter(&fake).prepare(&req).await.unwrap_err();
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
async fn verify_fails_for_an_article_that_is_not_published() {
    let fake = WordpressFake::start(Expect {
        read: 2,
        ..Expect::default()
    })
    .await;
    let draft = fake.with(|s| s.add("draft-one", "Draft", "draft"));
    let wordpress = adapter(&fake);
    let verification = wordpress.verify(&draft.to_string()).await;
    assert!(
        matches!(&verification, Verification::Failed { reason } if reason.contains("draft")),
        "{verification:?}"
    );
    let verification = wordpress.verify("999").await;
    assert!(
        matches!(verification, Verification::Failed { .. }),
        "{verification:?}"
    );
}

/// A title with markup reaches the site as text: escaped, never as a script; and an
/// unknown outcome is still settled by finding the article by its (escaped) title.
#[tokio::test]
async fn a_script_in_a_title_reaches_the_site_only_as_escaped_text() {
    let fake = WordpressFake::start(Expect {
        lookup: 2,
        create: 1,
        ..Expect::default()
    })
    .await;
    fake.with(|s| s.publish_mode = PublishMode::CreateThenStatus(500));
    let wordpress = adapter(&fake);
    let mut req = post();
    req.title = Some("<script>alert('x')</script> Cats & Dogs".into());
    let prepared = wordpress.prepare(&req).await.unwrap();
    let outcome = wordpress.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");

    let article = fake.with(|s| s.articles[0].clone());
    assert!(!article.title.contains('<'), "{}", article.title);
    assert_eq!(
        article.title,
        "&lt;script&gt;alert('x')&lt;/script&gt; Cats &amp; Dogs"
    );

    let evidence = wordpress
        .reconcile(&ReconcileRequest {
            publish: req.clone(),
            platform_ref: prepared.platform_ref.clone(),
        })
        .await;
    assert!(
        matches!(evidence, Evidence::Published { .. }),
        "{evidence:?}"
    );
}
