//! The `x` adapter against the fake API.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;

use airlock_core::Outcome;
use airlock_platforms::x::{Credential, X, XSettings};
use airlock_platforms::{
    EarlierAttempt, Evidence, PartRequest, Platform, PublishRequest, PublishedPart,
    ReconcileRequest, StepError, Verification,
};
use airlock_testkit::fake::x::{CLIENT_ID, CreateMode, Expect, Route, USERNAME, XFake};

use crate::support::{
    CANARY, LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_token_only_in_headers_except,
    client, image, image_server, request,
};

const TOKEN_PATH: &str = "/2/oauth2/token";

/// A token file in a fresh directory, mode 0600.
fn token_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.token");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, path)
}

fn adapter_with(fake: &XFake, path: &Path, timeout: Duration) -> X {
    let text = airlock_platforms::credential::read_secret(path).unwrap();
    let credential = Credential::parse(&text, path).unwrap();
    X::new(
        XSettings {
            base_url: fake.uri(),
            token_file: path.to_path_buf(),
            credential,
            request_timeout: timeout,
        },
        client(),
    )
    .unwrap()
}

fn refreshable(expires_at: &str) -> String {
    format!(
        r#"{{"access_token":"{CANARY}","refresh_token":"{CANARY}-first-refresh","client_id":"{CLIENT_ID}","expires_at":"{expires_at}"}}"#
    )
}

fn post() -> PublishRequest {
    request("x-main", "Mochi naps in the sun.")
}

#[tokio::test]
async fn happy_path_posts_once_with_a_permalink_and_reads_it_back() {
    let fake = XFake::start(Expect::ONE_POST).await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let account = x.account().await.unwrap().unwrap();
    assert_eq!(account.username, USERNAME);
    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let prepared = x.prepare(&req).await.unwrap();
    assert_eq!(prepared.platform_ref, None);
    let outcome = x.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let id = published.platform_post_id.clone().unwrap();
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("https://x.com/{USERNAME}/status/{id}").as_str())
    );
    assert_eq!(
        fake.with(|s| s.tweets[0].text.clone()),
        "Mochi naps in the sun.\nhttps://inn.example/naps/"
    );
    assert!(matches!(x.verify(&id).await, Verification::Verified { .. }));
    // X has no key to find a post by: an unknown outcome waits for a person.
    let reconcile = ReconcileRequest {
        publish: req.clone(),
        platform_ref: None,
    };
    assert_eq!(x.reconcile(&reconcile).await, Evidence::NoProof);
    assert_no_canary(&outcome);
    assert_no_canary(&x);
    assert_token_only_in_headers_except(&fake.server, TOKEN_PATH).await;
}

#[tokio::test]
async fn duplicate_content_is_never_proof_of_publication() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            create: 2,
            ..Expect::NONE
        },
        |s| {
            s.tweets.push(airlock_testkit::fake::x::Tweet {
                id: "1866000000000000001".into(),
                author: USERNAME.into(),
                text: "Mochi naps in the sun.".into(),
            })
        },
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    let outcome = x.publish(&req, &prepared).await;
    let Outcome::Rejected { reason, credential } = &outcome else {
        panic!("a duplicate fails the post: {outcome:?}");
    };
    assert!(!credential, "not a token problem: {reason}");
    assert!(reason.contains("duplicate content"), "{reason}");

    // When an earlier attempt of this post may have gone out, a person decides.
    let mut retry = req.clone();
    retry.earlier = vec![EarlierAttempt {
        generation: 1,
        idempotency_key: req.idempotency_key.clone(),
        platform_ref: None,
        sent_at: chrono::Utc::now() - chrono::Duration::hours(1),
        definitely_unpublished: false,
        resend: false,
    }];
    let outcome = x.publish(&retry, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Unknown { reason } if reason.contains("earlier attempt")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn an_expired_bare_token_fails_for_the_credential() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            ..Expect::NONE
        },
        |s| s.expire_token_at = Some(Route::Identity),
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let err = adapter_with(&fake, &path, Duration::from_secs(5))
        .account()
        .await
        .unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(*credential);
    assert!(reason.contains("refresh_token"), "{reason}");
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_the_rotated_pair_written_back_privately() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            refresh: 1,
            create: 2,
            ..Expect::NONE
        },
        |s| {
            s.refresh_token = Some(format!("{CANARY}-first-refresh"));
            s.expire_token_at = Some(Route::Create);
        },
    )
    .await;
    let (_dir, path) = token_file(&refreshable("2099-01-01T00:00:00Z"));
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    let outcome = x.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    assert_eq!(fake.with(|s| s.posts()), 1);

    let written = std::fs::read_to_string(&path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(value["access_token"], format!("{CANARY}-access-1"));
    assert_eq!(value["refresh_token"], format!("{CANARY}-refresh-1"));
    assert_eq!(value["client_id"], CLIENT_ID);
    assert!(value["expires_at"].is_string());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The refresh token went only in the token endpoint's body.
    assert_token_only_in_headers_except(&fake.server, TOKEN_PATH).await;
}

#[tokio::test]
async fn a_token_about_to_expire_is_renewed_before_the_post_and_a_rotated_file_is_adopted() {
    let fake = XFake::start_with(
        Expect {
            // The second process: refused once, then with the file's token.
            identity: 3,
            refresh: 1,
            create: 2,
            ..Expect::NONE
        },
        |s| s.refresh_token = Some(format!("{CANARY}-first-refresh")),
    )
    .await;
    let soon = (chrono::Utc::now() + chrono::Duration::minutes(2)).to_rfc3339();
    let (_dir, path) = token_file(&refreshable(&soon));
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    assert!(matches!(
        x.publish(&req, &prepared).await,
        Outcome::Published(_)
    ));
    assert_eq!(fake.with(|s| s.refreshes), 1);

    // Another process still holds the old pair: when X refuses its token it reads the
    // file this one rotated and uses that, without spending a refresh.
    let original = Credential::parse(&SecretString::from(refreshable(&soon)), &path).unwrap();
    let other = X::new(
        XSettings {
            base_url: fake.uri(),
            token_file: path.clone(),
            credential: original,
            request_timeout: Duration::from_secs(5),
        },
        client(),
    )
    .unwrap();
    let mut later = request("x-main", "Mochi naps in the shade.");
    later.now = chrono::Utc::now() - chrono::Duration::hours(1);
    let prepared = other.prepare(&later).await.unwrap();
    assert!(matches!(
        other.publish(&later, &prepared).await,
        Outcome::Published(_)
    ));
    assert_eq!(fake.with(|s| s.refreshes), 1, "no second refresh");
    assert_eq!(fake.with(|s| s.posts()), 2);
}

/// An operator wrote another account's token into the token file. When X refuses the
/// token this process holds, the adapter reads the file, and before it uses a credential
/// it did not mint it asks `/2/users/me` whose it is: another account's is a credential
/// refusal (the channel pauses), and nothing is posted.
#[tokio::test]
async fn a_token_file_naming_another_account_is_not_adopted() {
    let fake = XFake::start_with(
        Expect {
            // The account check, then the other token's identity read.
            identity: 2,
            create: 1,
            ..Expect::NONE
        },
        |s| {
            s.other_accounts = vec![(format!("{CANARY}-other"), "someone_else".into())];
        },
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    assert_eq!(x.account().await.unwrap().unwrap().username, USERNAME);
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    // The operator's edit; X now refuses the token this process holds.
    std::fs::write(&path, format!("{CANARY}-other")).unwrap();
    fake.with(|s| s.access_token = format!("{CANARY}-revoked"));
    let outcome = x.publish(&req, &prepared).await;
    let Outcome::Rejected {
        reason,
        credential: true,
    } = &outcome
    else {
        panic!("a credential refusal: {outcome:?}");
    };
    assert!(reason.contains("someone_else"), "{reason}");
    assert_eq!(fake.with(|s| s.posts()), 0);
    assert_no_canary(&reason);
}

#[tokio::test]
async fn a_refused_refresh_token_fails_for_the_credential_naming_the_file() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            refresh: 1,
            ..Expect::NONE
        },
        |s| {
            s.refresh_token = Some("another-refresh-token".into());
            s.expire_token_at = Some(Route::Identity);
        },
    )
    .await;
    let (_dir, path) = token_file(&refreshable("2099-01-01T00:00:00Z"));
    let err = adapter_with(&fake, &path, Duration::from_secs(5))
        .account()
        .await
        .unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(*credential);
    assert!(reason.contains(&path.display().to_string()), "{reason}");
    assert_no_canary(&err);
}

#[tokio::test]
async fn a_create_whose_answer_never_comes_is_unknown_with_nothing_to_settle_it() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            create: 1,
            ..Expect::NONE
        },
        |s| s.create_mode = CreateMode::CreateThenDelay(LONG_DELAY),
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, SHORT_TIMEOUT);
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    let outcome = x.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let reconcile = ReconcileRequest {
        publish: req,
        platform_ref: None,
    };
    assert_eq!(x.reconcile(&reconcile).await, Evidence::NoProof);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_rate_limit_is_not_sent_and_waits_for_its_reset() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            create: 1,
            ..Expect::NONE
        },
        |s| s.posts_left = Some(0),
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    let Outcome::NotSent { retry_after, .. } = x.publish(&req, &prepared).await else {
        panic!("a 429 is not sent");
    };
    let wait = retry_after.unwrap();
    assert!(
        wait > chrono::Duration::minutes(14) && wait <= chrono::Duration::minutes(15),
        "{wait:?}"
    );
}

/// X's message is redacted before it is cut: a token at character 150 of it leaves no
/// piece behind in the reason.
#[tokio::test]
async fn a_message_echoing_the_token_is_redacted_before_it_is_cut() {
    let fake = XFake::start(Expect {
        identity: 1,
        ..Expect::NONE
    })
    .await;
    crate::support::echo_bearer_at(
        &fake.server,
        "POST",
        "/2/tweets",
        400,
        |message| serde_json::json!({"title": "Invalid Request", "detail": message, "status": 400}),
    )
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = post();
    let prepared = x.prepare(&req).await.unwrap();
    let outcome = x.publish(&req, &prepared).await;
    let Outcome::Rejected { reason, .. } = &outcome else {
        panic!("refused: {outcome:?}");
    };
    assert!(reason.contains("the request was refused"), "{reason}");
    crate::support::assert_no_canary_piece(reason);
}

/// Two processes whose token is due for renewal at the same time: the file lock makes one
/// wait while the other reads, refreshes and writes; the second then reads the rotated
/// pair and uses it. One refresh: the second never spends the refresh token the first
/// already spent.
#[tokio::test]
async fn two_processes_renewing_at_once_refresh_once() {
    let fake = XFake::start_with(
        Expect {
            identity: 2,
            refresh: 1,
            ..Expect::NONE
        },
        |s| s.refresh_token = Some(format!("{CANARY}-first-refresh")),
    )
    .await;
    let soon = (chrono::Utc::now() + chrono::Duration::minutes(2)).to_rfc3339();
    let (_dir, path) = token_file(&refreshable(&soon));
    let first = adapter_with(&fake, &path, Duration::from_secs(5));
    let second = adapter_with(&fake, &path, Duration::from_secs(5));
    let (one, two) = (post(), post());
    let (a, b) = tokio::join!(first.prepare(&one), second.prepare(&two));
    a.unwrap();
    b.unwrap();
    assert_eq!(fake.with(|s| s.refreshes), 1);
}

/// A refreshable token file must be in a directory airlock can write: X rotates the
/// refresh token on every refresh, and a pair that cannot be written back leaves a spent
/// token in the file.
#[test]
fn a_refreshable_token_file_needs_a_writable_directory() {
    let (dir, path) = token_file(&refreshable("2099-01-01T00:00:00Z"));
    let credential = Credential::parse(
        &airlock_platforms::credential::read_secret(&path).unwrap(),
        &path,
    )
    .unwrap();
    airlock_platforms::x::check_token_dir(&path, &credential).unwrap();
    let elsewhere = dir.path().join("gone").join("x.token");
    let err = airlock_platforms::x::check_token_dir(&elsewhere, &credential).unwrap_err();
    assert!(err.contains("writable"), "{err}");
    assert!(err.contains("ReadWritePaths"), "{err}");
    // A bare access token is never rewritten: any directory will do.
    let bare = Credential::parse(&SecretString::from(CANARY.to_owned()), &elsewhere).unwrap();
    airlock_platforms::x::check_token_dir(&elsewhere, &bare).unwrap();
}

/// The bytes `image_server` serves, as approved.
const CAT_JPEG: [u8; 8] = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4];

/// An image at `url` approved with the digest of `approved`.
fn approved_image(url: String, approved: &[u8]) -> airlock_core::Media {
    let mut media = image(&url);
    media.sha256 = Some(airlock_core::hash::sha256_hex(approved));
    media.content_type = Some("image/jpeg".into());
    media
}

/// Part `number` of a post of `of` parts, after the parts `published` (number, id).
fn part(
    text: &str,
    number: u32,
    of: u32,
    comment: bool,
    published: &[(u32, &str)],
) -> PublishRequest {
    let mut req = request("x-main", text);
    if number > 1 {
        req.idempotency_key = format!("{}-{number}", req.idempotency_key);
    }
    req.part = PartRequest {
        number,
        of,
        comment,
        published: published
            .iter()
            .map(|(n, id)| PublishedPart {
                number: *n,
                platform_post_id: (*id).to_owned(),
                permalink: None,
            })
            .collect(),
    };
    req
}

/// Prepares and publishes a part; its id.
async fn publish_part(x: &X, req: &PublishRequest) -> String {
    let prepared = x.prepare(req).await.unwrap();
    let outcome = x.publish(req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("part {} not published: {outcome:?}", req.part.number);
    };
    published.platform_post_id.clone().unwrap()
}

/// A thread of three parts, an image on part 2, and a first comment: each goes out once,
/// each a reply to the one before (the comment to the last part), the image uploaded as
/// a `tweet_image` and attached to part 2 alone, the link on part 1 alone.
#[tokio::test]
async fn a_three_part_thread_with_an_image_and_a_comment_is_a_chain_each_part_once() {
    let fake = XFake::start(Expect {
        identity: 1,
        create: 4,
        upload: 1,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    assert!(x.prepares());

    let mut first = part("Mochi's day, a thread.", 1, 4, false, &[]);
    first.link = Some("https://inn.example/mochi/".into());
    let one = publish_part(&x, &first).await;

    let mut second = part("Noon: the sunny cushion.", 2, 4, false, &[(1, &one)]);
    second.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        &CAT_JPEG,
    )];
    let prepared = x.prepare(&second).await.unwrap();
    let media_id = prepared
        .platform_ref
        .clone()
        .expect("the media id is the handle");
    let Outcome::Published(published) = x.publish(&second, &prepared).await else {
        panic!("part 2 not published");
    };
    let two = published.platform_post_id.unwrap();
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("https://x.com/{USERNAME}/status/{two}").as_str())
    );

    let three = publish_part(
        &x,
        &part("Night: the box.", 3, 4, false, &[(1, &one), (2, &two)]),
    )
    .await;
    let comment = publish_part(
        &x,
        &part(
            "Photos by the inn.",
            4,
            4,
            true,
            &[(1, &one), (2, &two), (3, &three)],
        ),
    )
    .await;

    fake.with(|s| {
        assert_eq!(s.posts(), 4, "each part once");
        assert_eq!(
            s.tweets[0].text,
            "Mochi's day, a thread.\nhttps://inn.example/mochi/"
        );
        assert_eq!(
            s.tweets[1].text, "Noon: the sunny cushion.",
            "no link on later parts"
        );
        assert_eq!(s.reply_to(&one), None);
        assert_eq!(s.reply_to(&two).as_deref(), Some(one.as_str()));
        assert_eq!(s.reply_to(&three).as_deref(), Some(two.as_str()));
        assert_eq!(s.reply_to(&comment).as_deref(), Some(three.as_str()));
        assert_eq!(s.media_of(&two), vec![media_id.clone()]);
        assert!(s.media_of(&one).is_empty() && s.media_of(&three).is_empty());
        assert_eq!(s.uploads.len(), 1);
        assert_eq!(s.uploads[0].bytes, CAT_JPEG);
        assert_eq!(s.uploads[0].category, "tweet_image");
        // One conversation.
        for id in [&two, &three, &comment] {
            assert_eq!(s.attached[id.as_str()].conversation_id, one);
        }
    });
    assert_token_only_in_headers_except(&fake.server, TOKEN_PATH).await;
}

/// Part 2's request landed but its answer never came: reconcile finds it in one read of
/// the account's timeline since part 1 (as X shows it: links as t.co, `&` as `&amp;`,
/// the image as a link of its own), replying to part 1 with part 2's text, and not the
/// account's other reply to part 1. A part that never went out is not found: no proof.
#[tokio::test]
async fn reconcile_finds_a_later_part_whose_answer_was_lost() {
    let fake = XFake::start(Expect {
        identity: 1,
        create: 3,
        upload: 1,
        timeline: 2,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, SHORT_TIMEOUT);
    let one = publish_part(&x, &part("Mochi's day, a thread.", 1, 3, false, &[])).await;
    // A person replies to part 1 by hand meanwhile.
    publish_part(&x, &part("Nice cat!", 2, 2, false, &[(1, &one)])).await;

    let text = "Noon: cushion & sun, see https://inn.example/noon/";
    let mut second = part(text, 2, 3, false, &[(1, &one)]);
    second.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        &CAT_JPEG,
    )];
    let prepared = x.prepare(&second).await.unwrap();
    fake.with(|s| s.create_mode = CreateMode::CreateThenDelay(LONG_DELAY));
    let outcome = x.publish(&second, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let landed = fake.with(|s| s.tweets.last().unwrap().id.clone());

    let evidence = x
        .reconcile(&ReconcileRequest {
            publish: second.clone(),
            platform_ref: prepared.platform_ref.clone(),
        })
        .await;
    let Evidence::Published(proof) = &evidence else {
        panic!("part 2 is found: {evidence:?}");
    };
    assert_eq!(proof.platform_post_id.as_deref(), Some(landed.as_str()));
    assert_eq!(
        proof.permalink.as_deref(),
        Some(format!("https://x.com/{USERNAME}/status/{landed}").as_str())
    );

    // Part 3 never went out: the timeline shows no reply to part 2 with its text.
    let third = part("Night: the box.", 3, 3, false, &[(1, &one), (2, &landed)]);
    let evidence = x
        .reconcile(&ReconcileRequest {
            publish: third,
            platform_ref: None,
        })
        .await;
    assert_eq!(evidence, Evidence::NoProof);
    let timeline = fake
        .requests()
        .await
        .into_iter()
        .find(|r| r.url.path().ends_with("/tweets") && r.url.path().starts_with("/2/users/"))
        .unwrap();
    let query = timeline.url.query().unwrap_or("");
    assert!(query.contains(&format!("since_id={one}")), "{query}");
    assert!(query.contains("referenced_tweets"), "{query}");
    assert_no_canary(&evidence);
    assert_token_only_in_headers_except(&fake.server, TOKEN_PATH).await;
}

/// A later part whose earlier attempt may have gone out is looked for before anything is
/// uploaded or sent: found, it is settled by that proof.
#[tokio::test]
async fn a_later_part_an_earlier_attempt_published_is_found_before_sending() {
    let fake = XFake::start(Expect {
        identity: 1,
        create: 2,
        timeline: 1,
        ..Expect::NONE
    })
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let one = publish_part(&x, &part("Mochi's day, a thread.", 1, 2, false, &[])).await;
    let two = publish_part(
        &x,
        &part("Noon: the sunny cushion.", 2, 2, false, &[(1, &one)]),
    )
    .await;
    let mut again = part("Noon: the sunny cushion.", 2, 2, false, &[(1, &one)]);
    again.earlier = vec![EarlierAttempt {
        generation: 3,
        idempotency_key: again.idempotency_key.clone(),
        platform_ref: None,
        sent_at: chrono::Utc::now() - chrono::Duration::hours(1),
        definitely_unpublished: false,
        resend: false,
    }];
    let prepared = x.prepare(&again).await.unwrap();
    let proof = prepared.already_published.expect("found");
    assert_eq!(proof.platform_post_id.as_deref(), Some(two.as_str()));
    assert_eq!(proof.attempt, Some(3));
    assert_eq!(fake.with(|s| s.posts()), 2);
}

/// The bytes at an image's URL are not those approved: the part is refused, naming both
/// digests, before anything is uploaded or posted.
#[tokio::test]
async fn a_swapped_image_is_refused_before_anything_is_uploaded_or_created() {
    let fake = XFake::start(Expect {
        identity: 1,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let mut req = post();
    let url = format!("{}/cat.jpg", images.uri());
    req.media = vec![
        approved_image(url.clone(), &CAT_JPEG),
        approved_image(url, b"the picture the critic saw"),
    ];
    let err = x.prepare(&req).await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("refused: {err:?}");
    };
    assert!(!credential);
    assert!(reason.contains("changed since it was approved"), "{reason}");
    assert!(
        reason.contains(&airlock_core::hash::sha256_hex(&CAT_JPEG))
            && reason.contains(&airlock_core::hash::sha256_hex(
                b"the picture the critic saw"
            )),
        "{reason}"
    );
    assert_eq!(fake.with(|s| (s.posts(), s.uploads.len())), (0, 0));

    // More images than a post takes are refused before anything is fetched.
    req.media = vec![image("https://inn.example/cat.jpg"); 5];
    assert!(matches!(
        x.prepare(&req).await,
        Err(StepError::Rejected {
            credential: false,
            ..
        })
    ));
}

/// X fails the second of three uploads: a step error that may pass, and no post.
#[tokio::test]
async fn an_upload_failing_halfway_is_a_step_error_and_nothing_is_created() {
    let fake = XFake::start_with(
        Expect {
            identity: 1,
            upload: 2,
            ..Expect::NONE
        },
        |s| s.fail_uploads_after = Some((1, 503)),
    )
    .await;
    let images = image_server().await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let mut req = post();
    req.media = vec![approved_image(format!("{}/cat.jpg", images.uri()), &CAT_JPEG); 3];
    let err = x.prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Transient { reason, .. } if reason.contains("image upload (2 of 3)") && reason.contains("HTTP 503")),
        "{err:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
    assert_no_canary(&err);
}

/// The media ids expired between the upload and the post (X keeps them about a day): X
/// refuses the create, nothing is posted, and the next attempt uploads again.
#[tokio::test]
async fn an_expired_media_id_is_not_sent_and_the_next_attempt_uploads_again() {
    let fake = XFake::start(Expect {
        identity: 1,
        upload: 2,
        create: 2,
        ..Expect::NONE
    })
    .await;
    let images = image_server().await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let mut req = post();
    req.media = vec![approved_image(
        format!("{}/cat.jpg", images.uri()),
        &CAT_JPEG,
    )];
    let prepared = x.prepare(&req).await.unwrap();
    fake.with(|s| s.expire_media());
    let outcome = x.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::NotSent { reason, .. } if reason.contains("media ids")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
    let id = publish_part(&x, &req).await;
    assert_eq!(fake.with(|s| s.media_of(&id).len()), 1);
}

/// The part before was deleted: X refuses the reply. Nothing was posted, and it is not a
/// credential problem (the channel stays up); the reason names the part replied to.
#[tokio::test]
async fn a_reply_to_a_deleted_part_fails_naming_it() {
    let fake = XFake::start(Expect {
        identity: 1,
        create: 1,
        ..Expect::NONE
    })
    .await;
    let (_dir, path) = token_file(CANARY);
    let x = adapter_with(&fake, &path, Duration::from_secs(5));
    let req = part(
        "Noon: the sunny cushion.",
        2,
        2,
        false,
        &[(1, "1866000000000000999")],
    );
    let prepared = x.prepare(&req).await.unwrap();
    let outcome = x.publish(&req, &prepared).await;
    assert!(
        matches!(&outcome, Outcome::Rejected { credential: false, reason }
            if reason.contains("part 1 (1866000000000000999)") && reason.contains("deleted")),
        "{outcome:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
}
