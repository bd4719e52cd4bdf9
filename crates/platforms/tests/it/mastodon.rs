//! The `mastodon` adapter against the fake instance.

use std::time::Duration;

use chrono::Utc;

use airlock_core::Outcome;
use airlock_platforms::mastodon::{
    KEY_TRUSTED_FOR, Mastodon, MastodonSettings, RESEND_AFTER, Visibility,
};
use airlock_platforms::{
    EarlierAttempt, Evidence, PartRequest, Platform, Prepared, PublishRequest, PublishedPart,
    ReconcileRequest, StepError, Verification,
};
use airlock_testkit::fake::mastodon::{ACCT, CreateMode, Expect, MastodonFake};

use crate::support::{
    LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_token_only_in_headers, client, image,
    image_server, request, token,
};

fn adapter_with(fake: &MastodonFake, timeout: Duration) -> Mastodon {
    let settings = MastodonSettings {
        visibility: Visibility::Unlisted,
        request_timeout: timeout,
        ..MastodonSettings::new(fake.uri(), token())
    };
    Mastodon::new(settings, client()).unwrap()
}

fn adapter(fake: &MastodonFake) -> Mastodon {
    adapter_with(fake, Duration::from_secs(5))
}

fn post() -> PublishRequest {
    request("masto-main", "Mochi naps in the sun.")
}

/// The attempt a prepared request records, sent at `sent_at`.
fn attempt(prepared: &Prepared, sent_at: chrono::DateTime<Utc>) -> EarlierAttempt {
    EarlierAttempt {
        generation: 1,
        idempotency_key: "42-0123456789abcdef".into(),
        platform_ref: prepared.platform_ref.clone(),
        sent_at,
        definitely_unpublished: false,
        resend: false,
    }
}

/// A reconcile at `now` of the attempt `prepared` sent at `sent_at`.
fn reconcile_at(
    req: &PublishRequest,
    prepared: &Prepared,
    sent_at: chrono::DateTime<Utc>,
    now: chrono::DateTime<Utc>,
) -> ReconcileRequest {
    let mut publish = req.clone();
    publish.now = now;
    publish.earlier = vec![attempt(prepared, sent_at)];
    ReconcileRequest {
        publish,
        platform_ref: prepared.platform_ref.clone(),
    }
}

#[tokio::test]
async fn happy_path_sends_the_idempotency_key_and_keeps_the_permalink() {
    let fake = MastodonFake::start(Expect::ONE_POST).await;
    let mastodon = adapter(&fake);
    let account = mastodon.account().await.unwrap().unwrap();
    assert_eq!(account.username, ACCT);

    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let prepared = mastodon.prepare(&req).await.unwrap();
    assert_eq!(
        prepared.platform_ref.as_deref(),
        Some(req.idempotency_key.as_str())
    );
    let outcome = mastodon.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let id = published.platform_post_id.clone().unwrap();
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("{}/@{ACCT}/{id}", fake.uri()).as_str())
    );
    let status = fake.with(|s| s.statuses[0].clone());
    assert_eq!(
        status.text,
        "Mochi naps in the sun.\n\nhttps://inn.example/naps/"
    );
    assert_eq!(status.visibility, "unlisted");
    let create = fake
        .requests()
        .await
        .into_iter()
        .find(|r| r.url.path() == "/api/v1/statuses")
        .unwrap();
    assert_eq!(
        create.headers.get("idempotency-key").unwrap(),
        req.idempotency_key.as_str()
    );
    assert!(matches!(
        mastodon.verify(&id).await,
        Verification::Verified { .. }
    ));
    assert_no_canary(&outcome);
    assert_no_canary(&mastodon);
    assert_token_only_in_headers(&fake.server).await;
}

#[tokio::test]
async fn the_instance_limit_refuses_a_long_status_before_it_is_sent() {
    let fake = MastodonFake::start_with(
        Expect {
            instance: 1,
            ..Expect::NONE
        },
        |s| s.max_characters = 30,
    )
    .await;
    let mastodon = adapter(&fake);
    // 23 for the link, 11 for the rest: 34 > 30.
    let req = request(
        "masto-main",
        "Mochi naps https://inn.example/a/very/long/path/indeed",
    );
    let err = mastodon.prepare(&req).await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(!credential);
    assert!(
        reason.contains("34") && reason.contains("30") && reason.contains("max_chars"),
        "{reason}"
    );
}

#[tokio::test]
async fn media_go_up_with_their_descriptions_and_wait_for_processing() {
    let images = image_server().await;
    let fake = MastodonFake::start_with(
        Expect {
            instance: 1,
            upload: 1,
            media_read: 1,
            create: 1,
            ..Expect::NONE
        },
        |s| s.media_processing = true,
    )
    .await;
    let mastodon = adapter(&fake);
    let mut req = post();
    req.media = vec![image(&format!("{}/cat.jpg", images.uri()))];
    let prepared = mastodon.prepare(&req).await.unwrap();
    assert!(matches!(
        mastodon.publish(&req, &prepared).await,
        Outcome::Published(_)
    ));
    let media = fake.with(|s| s.media.clone());
    assert_eq!(media[0].description, "A cat asleep on a cushion");
    assert_eq!(
        fake.with(|s| s.statuses[0].media_ids.clone()),
        vec![media[0].id.clone()]
    );
}

/// A create whose answer is lost: unknown; nothing is re-sent while the first request
/// could still be processing; within the hour a re-send with the same key answers the
/// original status; after the hour nothing proves anything.
async fn a_lost_answer_is_settled_by_the_same_key_within_the_hour(
    mode: CreateMode,
    timeout: Duration,
) {
    let expect = Expect {
        identity: 1,
        instance: 1,
        create: 2,
        ..Expect::NONE
    };
    let fake = MastodonFake::start_with(expect, |s| s.create_mode = mode).await;
    let mastodon = adapter_with(&fake, timeout);
    let req = post();
    let sent_at = Utc::now();
    let prepared = mastodon.prepare(&req).await.unwrap();
    let outcome = mastodon.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let original = fake.with(|s| s.statuses[0].id.clone());

    // Too soon: the first request might still be processing.
    let soon = reconcile_at(
        &req,
        &prepared,
        sent_at,
        sent_at + chrono::Duration::minutes(1),
    );
    assert_eq!(mastodon.reconcile(&soon).await, Evidence::NoProof);

    fake.with(|s| s.create_mode = CreateMode::Normal);
    // The guarded path checks the account before a re-send; its answer must name it.
    assert_eq!(mastodon.account().await.unwrap().unwrap().username, ACCT);
    let later = sent_at + RESEND_AFTER + chrono::Duration::minutes(5);
    let Evidence::Published(proof) = mastodon
        .reconcile(&reconcile_at(&req, &prepared, sent_at, later))
        .await
    else {
        panic!("the key settles it");
    };
    assert_eq!(proof.platform_post_id.as_deref(), Some(original.as_str()));
    assert!(proof.note.contains(&req.idempotency_key), "{}", proof.note);
    assert_eq!(fake.with(|s| s.posts()), 1, "exactly one status");

    // After the hour the key may be gone: a person decides, and nothing is sent.
    let too_late = sent_at + KEY_TRUSTED_FOR + chrono::Duration::minutes(1);
    assert_eq!(
        mastodon
            .reconcile(&reconcile_at(&req, &prepared, sent_at, too_late))
            .await,
        Evidence::NoProof
    );
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_create_answered_with_502_is_settled_by_the_same_key_within_the_hour() {
    a_lost_answer_is_settled_by_the_same_key_within_the_hour(
        CreateMode::CreateThenStatus(502),
        Duration::from_secs(5),
    )
    .await;
}

#[tokio::test]
async fn a_create_whose_answer_never_comes_is_settled_by_the_same_key_within_the_hour() {
    a_lost_answer_is_settled_by_the_same_key_within_the_hour(
        CreateMode::CreateThenDelay(LONG_DELAY),
        SHORT_TIMEOUT,
    )
    .await;
}

/// Generation 1 sent the key and got 429 (not sent); generation 2 sent the same key six
/// minutes later and its answer never came. Half a minute after that, generation 2's
/// request may still be processing: nothing is sent, by reconcile or by a retry's
/// prepare — the five minutes count from the key's latest send, the fifty from its first.
#[tokio::test]
async fn a_key_sent_again_moments_ago_is_not_sent_again_whatever_its_first_send() {
    let fake = MastodonFake::start(Expect {
        instance: 1,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let req = post();
    let prepared = Prepared::with_ref(req.idempotency_key.clone());
    let t0 = Utc::now() - chrono::Duration::minutes(30);
    let mut first = attempt(&prepared, t0);
    first.definitely_unpublished = true;
    let mut second = attempt(&prepared, t0 + chrono::Duration::minutes(6));
    second.generation = 2;
    let mut publish = req.clone();
    publish.now = t0 + chrono::Duration::seconds(6 * 60 + 30);
    publish.earlier = vec![first.clone(), second.clone()];
    let reconcile = ReconcileRequest {
        publish: publish.clone(),
        platform_ref: prepared.platform_ref.clone(),
    };
    assert!(!mastodon.reconcile_sends(&reconcile));
    assert_eq!(mastodon.reconcile(&reconcile).await, Evidence::NoProof);

    // A retry's prepare waits the same way, until five minutes after the latest send.
    let err = mastodon.prepare(&publish).await.unwrap_err();
    assert!(
        matches!(err, StepError::Transient { retry_after: Some(wait), .. } if wait == chrono::Duration::seconds(270)),
        "{err:?}"
    );

    // Past five minutes after the latest send and within fifty of the first: due.
    let mut later = reconcile.clone();
    later.publish.now = t0 + chrono::Duration::minutes(12);
    assert!(mastodon.reconcile_sends(&later));
    // Fifty minutes after the first send the key may be gone, however recent the latest.
    later.publish.now = t0 + KEY_TRUSTED_FOR;
    later.publish.earlier[1].sent_at = t0 + chrono::Duration::minutes(40);
    assert!(!mastodon.reconcile_sends(&later));
}

/// A person settled the earlier attempt as not published moments ago, and this
/// content's key is the one it sent: however it was settled, the request may still be
/// processed, so the retry waits before sending that key again.
#[tokio::test]
async fn a_key_settled_not_published_moments_ago_is_not_sent_again_yet() {
    let fake = MastodonFake::start(Expect {
        instance: 1,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let mut req = post();
    let sent = Utc::now() - chrono::Duration::minutes(1);
    let mut earlier = attempt(&Prepared::with_ref(req.idempotency_key.clone()), sent);
    earlier.definitely_unpublished = true;
    req.now = Utc::now();
    req.earlier = vec![earlier];
    let err = mastodon.prepare(&req).await.unwrap_err();
    assert!(
        matches!(err, StepError::Transient { retry_after: Some(wait), .. }
            if wait > chrono::Duration::minutes(3) && wait <= RESEND_AFTER),
        "{err:?}"
    );
}

/// A re-send whose answer is a status of another account than the one the account check
/// found (the token changed in between) proves nothing about this post.
#[tokio::test]
async fn a_resend_answered_by_another_accounts_status_proves_nothing() {
    let fake = MastodonFake::start_with(
        Expect {
            identity: 1,
            instance: 1,
            create: 2,
            ..Expect::NONE
        },
        |s| s.create_mode = CreateMode::CreateThenStatus(502),
    )
    .await;
    let mastodon = adapter(&fake);
    let req = post();
    let sent_at = Utc::now();
    let prepared = mastodon.prepare(&req).await.unwrap();
    assert!(matches!(
        mastodon.publish(&req, &prepared).await,
        Outcome::Unknown { .. }
    ));
    assert_eq!(mastodon.account().await.unwrap().unwrap().username, ACCT);
    fake.with(|s| {
        s.create_mode = CreateMode::Normal;
        s.acct = "someone_else".into();
    });
    let later = sent_at + RESEND_AFTER + chrono::Duration::minutes(1);
    let evidence = mastodon
        .reconcile(&reconcile_at(&req, &prepared, sent_at, later))
        .await;
    // Settles nothing, but is kept for the person who settles the post.
    assert!(
        matches!(&evidence, Evidence::Unsettled { note } if note.contains("someone_else")),
        "{evidence:?}"
    );
}

#[tokio::test]
async fn the_instance_forgets_keys_after_an_hour_on_its_clock() {
    let fake = MastodonFake::start(Expect {
        instance: 1,
        create: 1,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let req = post();
    let prepared = mastodon.prepare(&req).await.unwrap();
    assert!(matches!(
        mastodon.publish(&req, &prepared).await,
        Outcome::Published(_)
    ));
    let key = req.idempotency_key.clone();
    fake.with(|s| s.now = Some(Utc::now()));
    assert!(fake.with(|s| s.keeps_key(&key)));
    fake.with(|s| s.advance(chrono::Duration::minutes(59)));
    assert!(fake.with(|s| s.keeps_key(&key)));
    fake.with(|s| s.advance(chrono::Duration::minutes(2)));
    assert!(!fake.with(|s| s.keeps_key(&key)));
}

#[tokio::test]
async fn a_retry_within_the_hour_reuses_the_earlier_key_and_gets_the_original_status() {
    let fake = MastodonFake::start(Expect {
        instance: 2,
        create: 2,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let first = post();
    let prepared = mastodon.prepare(&first).await.unwrap();
    let Outcome::Published(original) = mastodon.publish(&first, &prepared).await else {
        panic!("published");
    };
    // A person requeued it (said "not published") after an unknown outcome; the content
    // was approved again with another text, so its own key differs.
    let mut retry = request("masto-main", "Mochi naps in the shade.");
    retry.idempotency_key = "42-fedcba9876543210".into();
    retry.earlier = vec![attempt(
        &prepared,
        Utc::now() - chrono::Duration::minutes(20),
    )];
    let again = mastodon.prepare(&retry).await.unwrap();
    assert_eq!(again.platform_ref, prepared.platform_ref);
    let Outcome::Published(second) = mastodon.publish(&retry, &again).await else {
        panic!("published");
    };
    assert_eq!(second.platform_post_id, original.platform_post_id);
    assert_eq!(fake.with(|s| s.posts()), 1);

    // Sent moments ago: wait until that request can no longer be processing.
    let fake = MastodonFake::start(Expect {
        instance: 1,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let mut retry = post();
    retry.earlier = vec![attempt(&prepared, retry.now - chrono::Duration::minutes(1))];
    let err = mastodon.prepare(&retry).await.unwrap_err();
    assert!(
        matches!(err, StepError::Transient { retry_after: Some(wait), .. } if wait == chrono::Duration::minutes(4)),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_refused_token_fails_for_the_credential_and_a_rate_limit_waits_for_its_reset() {
    let fake = MastodonFake::start_with(
        Expect {
            identity: 1,
            ..Expect::NONE
        },
        |s| s.token_revoked = true,
    )
    .await;
    let err = adapter(&fake).account().await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { credential: true, reason } if reason.contains("401")),
        "{err:?}"
    );
    assert_no_canary(&err);

    let fake = MastodonFake::start_with(
        Expect {
            instance: 1,
            create: 1,
            ..Expect::NONE
        },
        |s| s.requests_left = Some(1),
    )
    .await;
    let mastodon = adapter(&fake);
    let req = post();
    let prepared = mastodon.prepare(&req).await.unwrap();
    let Outcome::NotSent { retry_after, .. } = mastodon.publish(&req, &prepared).await else {
        panic!("a 429 is not sent");
    };
    let wait = retry_after.unwrap();
    assert!(
        wait > chrono::Duration::minutes(4) && wait <= chrono::Duration::minutes(5),
        "{wait:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
}

/// Part `number` of a post of `of` parts, after the parts `published`, as the guarded
/// path hands it over: its own text and key (part 1 keeps the post's key).
fn part(
    text: &str,
    number: u32,
    of: u32,
    comment: bool,
    published: &[PublishedPart],
) -> PublishRequest {
    let mut req = request("masto-main", text);
    if number > 1 {
        req.idempotency_key = format!("{}-{number}", req.idempotency_key);
    }
    req.part = PartRequest {
        number,
        of,
        comment,
        published: published.to_vec(),
    };
    req
}

/// What a published part becomes for the parts after it.
fn out(number: u32, id: Option<String>, permalink: Option<String>) -> PublishedPart {
    PublishedPart {
        number,
        platform_post_id: id.expect("a part that is not the last names its id"),
        permalink,
    }
}

async fn publish_part(mastodon: &Mastodon, req: &PublishRequest) -> PublishedPart {
    let prepared = mastodon.prepare(req).await.unwrap();
    assert_eq!(
        prepared.platform_ref.as_deref(),
        Some(req.idempotency_key.as_str())
    );
    let outcome = mastodon.publish(req, &prepared).await;
    let Outcome::Published(published) = outcome else {
        panic!("part {} published: {outcome:?}", req.part.number);
    };
    out(
        req.part.number,
        published.platform_post_id,
        published.permalink,
    )
}

/// Every status but the first replies to the one before it.
fn assert_chain(fake: &MastodonFake, texts: &[&str]) {
    let statuses = fake.with(|s| s.statuses.clone());
    let made: Vec<&str> = statuses.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(made, texts, "each part once, in order");
    assert_eq!(statuses[0].in_reply_to_id, None);
    for pair in statuses.windows(2) {
        assert_eq!(pair[1].in_reply_to_id.as_ref(), Some(&pair[0].id));
    }
}

#[tokio::test]
async fn a_three_part_thread_and_its_first_comment_chain_each_with_its_own_key() {
    let fake = MastodonFake::start(Expect {
        instance: 4,
        create: 4,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let texts = ["Mochi's day, 1/3", "Mochi's day, 2/3", "Mochi's day, 3/3"];
    let mut published = Vec::new();
    for (number, text) in (1..).zip(texts) {
        let req = part(text, number, 4, false, &published);
        published.push(publish_part(&mastodon, &req).await);
    }
    let comment = part("Comments welcome.", 4, 4, true, &published);
    publish_part(&mastodon, &comment).await;
    assert_chain(&fake, &[texts[0], texts[1], texts[2], "Comments welcome."]);
    let keys: Vec<String> = fake
        .requests()
        .await
        .into_iter()
        .filter(|r| r.url.path() == "/api/v1/statuses")
        .map(|r| {
            r.headers
                .get("idempotency-key")
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        keys,
        [
            "42-0123456789abcdef",
            "42-0123456789abcdef-2",
            "42-0123456789abcdef-3",
            "42-0123456789abcdef-4"
        ]
    );
}

/// Part 2's status is made and its answer lost. Within the hour, part 2's own key sent
/// again (in reply to part 1) answers the original; part 3 then replies to it, and the
/// instance holds each part once, in a chain.
#[tokio::test]
async fn a_lost_answer_of_part_2_is_settled_by_part_2s_key_within_the_hour() {
    let fake = MastodonFake::start(Expect::ANY).await;
    let mastodon = adapter(&fake);
    let first = publish_part(&mastodon, &part("Part 1/3", 1, 3, false, &[])).await;
    let published = vec![first];

    fake.with(|s| s.create_mode = CreateMode::CreateThenStatus(502));
    let second = part("Part 2/3", 2, 3, false, &published);
    let sent_at = Utc::now();
    let prepared = mastodon.prepare(&second).await.unwrap();
    let outcome = mastodon.publish(&second, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let original = fake.with(|s| s.statuses[1].id.clone());

    // Too soon to send the key again (the first request may still be processing): a
    // read finds part 2 among part 1's replies, and nothing is sent.
    fake.with(|s| s.create_mode = CreateMode::Normal);
    let soon = reconcile_at(
        &second,
        &prepared,
        sent_at,
        sent_at + chrono::Duration::minutes(1),
    );
    assert!(!mastodon.reconcile_sends(&soon));
    let Evidence::Published(read) = mastodon.reconcile(&soon).await else {
        panic!("part 2 is among part 1's replies");
    };
    assert_eq!(read.platform_post_id.as_deref(), Some(original.as_str()));
    assert_eq!(fake.with(|s| s.posts()), 2);

    assert_eq!(mastodon.account().await.unwrap().unwrap().username, ACCT);
    let later = reconcile_at(
        &second,
        &prepared,
        sent_at,
        sent_at + RESEND_AFTER + chrono::Duration::minutes(1),
    );
    assert!(mastodon.reconcile_sends(&later));
    let Evidence::Published(proof) = mastodon.reconcile(&later).await else {
        panic!("part 2's key settles it");
    };
    assert_eq!(proof.platform_post_id.as_deref(), Some(original.as_str()));
    assert!(
        proof.note.contains("42-0123456789abcdef-2"),
        "{}",
        proof.note
    );

    let mut published = published;
    published.push(out(2, proof.platform_post_id, proof.permalink));
    publish_part(&mastodon, &part("Part 3/3", 3, 3, false, &published)).await;
    assert_chain(&fake, &["Part 1/3", "Part 2/3", "Part 3/3"]);
}

/// Part 2's answer was lost over an hour ago: the key may be forgotten, so nothing is
/// sent; a reply to part 1 by this account with part 2's text, among part 1's
/// descendants, is part 2. Without one, nothing proves anything.
#[tokio::test]
async fn a_lost_answer_of_part_2_after_the_hour_is_settled_by_the_replies_to_part_1() {
    let fake = MastodonFake::start(Expect {
        identity: 2,
        instance: 3,
        create: 3,
        context: 2,
        // Both replies to part 1 the first time, the other one the second.
        source: 3,
        ..Expect::NONE
    })
    .await;
    let mastodon = adapter(&fake);
    let first = publish_part(&mastodon, &part("Part 1/2", 1, 2, false, &[])).await;
    let published = vec![first.clone()];
    // Another reply to part 1 by this account, with other text: not part 2.
    let mut other = part("Something else", 2, 2, false, &published);
    other.idempotency_key = "43-0123456789abcdef".into();
    publish_part(&mastodon, &other).await;

    fake.with(|s| s.create_mode = CreateMode::CreateThenStatus(502));
    let second = part("Part 2/2", 2, 2, false, &published);
    let sent_at = Utc::now() - chrono::Duration::hours(2);
    let prepared = mastodon.prepare(&second).await.unwrap();
    assert!(matches!(
        mastodon.publish(&second, &prepared).await,
        Outcome::Unknown { .. }
    ));
    let original = fake.with(|s| s.statuses[2].id.clone());
    let reconcile = reconcile_at(&second, &prepared, sent_at, Utc::now());
    assert!(!mastodon.reconcile_sends(&reconcile));
    let Evidence::Published(proof) = mastodon.reconcile(&reconcile).await else {
        panic!("part 2 is among part 1's replies");
    };
    assert_eq!(proof.platform_post_id.as_deref(), Some(original.as_str()));
    assert!(proof.permalink.unwrap().ends_with(&original));
    assert!(
        proof.note.contains(&first.platform_post_id),
        "{}",
        proof.note
    );
    assert_eq!(fake.with(|s| s.posts()), 3, "nothing sent");

    // Had it not been made, nothing would prove anything.
    fake.with(|s| {
        s.statuses.pop();
    });
    assert_eq!(mastodon.reconcile(&reconcile).await, Evidence::NoProof);
}

/// A later part names the status it replies to; without one, nothing is sent.
#[tokio::test]
async fn a_later_part_without_the_status_before_it_is_refused() {
    let fake = MastodonFake::start(Expect::NONE).await;
    let mastodon = adapter(&fake);
    let req = part("Part 2/2", 2, 2, false, &[]);
    let err = mastodon.prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { reason, .. } if reason.contains("part 2")),
        "{err:?}"
    );
}
