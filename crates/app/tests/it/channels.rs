//! Bluesky, Mastodon and X through the guarded path, over a real SQLite store and the
//! stateful fakes: what each platform lets airlock prove after an answer that never came,
//! the account check, expired credentials, rate limits, and X's money budget.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::Duration;

use airlock_app::publish::PublishResult;
use airlock_app::review::Resolution;
use airlock_app::{App, Budget, ChannelSettings, Principal};
use airlock_core::budget::Costs;
use airlock_core::quota::Limit;
use airlock_core::{ChannelKind, PostId, PostStatus};
use airlock_platforms::bluesky::{Bluesky, BlueskySettings};
use airlock_platforms::mastodon::{Mastodon, MastodonSettings};
use airlock_platforms::x::{Credential, X, XSettings};
use airlock_testkit::fake::{bluesky, mastodon, x};

use crate::support::*;

const TIMEOUT: StdDuration = StdDuration::from_millis(400);
/// Longer than [`TIMEOUT`]: the client has given up when the answer comes.
const LATE: StdDuration = StdDuration::from_millis(1500);

fn client() -> airlock_platforms::http::Client {
    airlock_platforms::http::client(TIMEOUT)
}

fn settings(channel: &str, kind: ChannelKind, account: &str) -> ChannelSettings {
    let mut settings = ChannelSettings::new(name(channel), kind, 10, tokyo());
    settings.account = Some(account.into());
    settings.request_timeout = Duration::from_std(TIMEOUT).unwrap();
    settings
}

fn bluesky_channel(fake: &bluesky::BlueskyFake, account: &str) -> TestChannel {
    let platform = Bluesky::new(
        BlueskySettings {
            base_url: fake.uri(),
            request_timeout: TIMEOUT,
            ..BlueskySettings::new(bluesky::HANDLE.into(), fake_token())
        },
        client(),
    )
    .unwrap();
    TestChannel {
        settings: settings("bsky", ChannelKind::Bluesky, account),
        platform: Arc::new(platform),
    }
}

fn mastodon_channel(fake: &mastodon::MastodonFake) -> TestChannel {
    let platform = Mastodon::new(
        MastodonSettings {
            request_timeout: TIMEOUT,
            ..MastodonSettings::new(fake.uri(), fake_token())
        },
        client(),
    )
    .unwrap();
    TestChannel {
        settings: settings("masto", ChannelKind::Mastodon, mastodon::ACCT),
        platform: Arc::new(platform),
    }
}

fn x_channel(dir: &std::path::Path, fake: &x::XFake, budget: Option<Budget>) -> TestChannel {
    let path = dir.join("x.token");
    let credential = Credential::parse(&fake_token(), &path).expect("a bare token is a credential");
    let platform = X::new(
        XSettings {
            base_url: fake.uri(),
            token_file: path,
            credential,
            request_timeout: TIMEOUT,
        },
        client(),
    )
    .unwrap();
    let mut settings = settings("x-main", ChannelKind::X, x::USERNAME);
    settings.budget = budget;
    TestChannel {
        settings,
        platform: Arc::new(platform),
    }
}

async fn publish(app: &App, channel: &str, text: &str) -> (PostId, PublishResult) {
    let post = approved(app, channel, text).await;
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(report.post.id, post.id);
    // The read-back runs in a task of its own.
    app.drain().await;
    (post.id, report.result)
}

async fn paused(app: &App, channel: &str) -> Option<String> {
    app.store()
        .pauses()
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.scope == channel)
        .map(|p| p.reason)
}

async fn reservation_states(app: &App, id: PostId) -> Vec<String> {
    let detail = app.store().post_detail(id).await.unwrap();
    detail
        .reservations
        .iter()
        .map(|r| r.state.clone())
        .collect()
}

/// A PDS that wrote the record at a key of its own: the post is posted with the real uri,
/// and the channel pauses, saying why (a retry there could make a second record).
#[tokio::test]
async fn a_bluesky_record_at_another_key_is_posted_with_its_uri_and_pauses_the_channel() {
    let fake =
        bluesky::BlueskyFake::start_with(bluesky::Expect::ANY, |s| s.ignore_client_rkey = true)
            .await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, bluesky::HANDLE)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "bsky", "Mochi naps in the sun.").await;
    assert_eq!(result, PublishResult::Posted);
    let post = app.store().get_post(id).await.unwrap();
    let written = fake.with(|s| s.records[0].rkey.clone());
    assert_eq!(
        post.platform_post_id,
        Some(format!(
            "at://{}/app.bsky.feed.post/{written}",
            bluesky::DID
        ))
    );
    let reason = paused(&app, "bsky").await.expect("the channel is paused");
    assert!(
        reason.contains("ignores client-chosen record keys"),
        "{reason}"
    );
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_bluesky_post_goes_out_once_with_its_permalink_and_is_verified() {
    let fake = bluesky::BlueskyFake::start(bluesky::Expect::ONE_POST).await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, bluesky::HANDLE)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "bsky", "Mochi naps in the sun.").await;
    assert_eq!(result, PublishResult::Posted);
    let post = app.store().get_post(id).await.unwrap();
    let rkey = post
        .permalink
        .as_deref()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        post.permalink.as_deref(),
        Some(format!("https://bsky.app/profile/{}/post/{rkey}", bluesky::HANDLE).as_str())
    );
    assert!(post.verified_at.is_some());
    let detail = app.store().post_detail(id).await.unwrap();
    assert_eq!(
        detail.intents[0].platform_ref.as_deref(),
        Some(rkey.as_str())
    );
    assert_eq!(fake.with(|s| s.posts()), 1);
    assert_eq!(reservation_states(&app, id).await, ["committed"]);
}

#[tokio::test]
async fn a_bluesky_session_of_another_account_sends_nothing_and_pauses_the_channel() {
    let fake = bluesky::BlueskyFake::start(bluesky::Expect {
        create_session: 1,
        get_session: 1,
        ..bluesky::Expect::NONE
    })
    .await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, "someone-else.bsky.social")]).await;
    let app = h.app();
    let (id, result) = publish(&app, "bsky", "Mochi naps.").await;
    assert!(matches!(result, PublishResult::Held { .. }), "{result:?}");
    assert_eq!(status(&app, id).await, PostStatus::Approved);
    let reason = paused(&app, "bsky").await.expect("paused");
    assert!(
        reason.contains("someone-else") && reason.contains(bluesky::HANDLE),
        "{reason}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
}

#[tokio::test]
async fn an_expired_bluesky_session_is_refreshed_and_the_post_goes_out_once() {
    let fake = bluesky::BlueskyFake::start_with(
        bluesky::Expect {
            refresh_session: 1,
            create: 2,
            ..bluesky::Expect::ONE_POST
        },
        |s| s.expire_sessions_at = Some(bluesky::Route::CreateRecord),
    )
    .await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, bluesky::HANDLE)]).await;
    let app = h.app();
    let (_, result) = publish(&app, "bsky", "Mochi naps.").await;
    assert_eq!(result, PublishResult::Posted);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

/// The answer to the create never comes; the record at the intent's key settles it, with
/// one record on the platform.
#[tokio::test]
async fn a_bluesky_create_whose_answer_never_comes_is_settled_by_its_record_key_and_never_doubled()
{
    let fake = bluesky::BlueskyFake::start_with(
        bluesky::Expect {
            create_session: 1,
            get_session: 1,
            create: 1,
            get_record: bluesky::ANY_CALLS,
            ..bluesky::Expect::NONE
        },
        |s| s.create_mode = bluesky::CreateMode::CreateThenDelay(LATE),
    )
    .await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, bluesky::HANDLE)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "bsky", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    assert!(paused(&app, "bsky").await.is_some());
    assert_eq!(reservation_states(&app, id).await, ["reserved"]);

    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert!(
        settled[0].evidence.contains("exists"),
        "{}",
        settled[0].evidence
    );
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Posted);
    let rkey = app.store().post_detail(id).await.unwrap().intents[0]
        .platform_ref
        .clone()
        .unwrap();
    assert!(post.permalink.unwrap().ends_with(&rkey));
    assert_eq!(
        post.platform_post_id.as_deref(),
        Some(format!("at://{}/app.bsky.feed.post/{rkey}", bluesky::DID).as_str())
    );
    assert_eq!(reservation_states(&app, id).await, ["committed"]);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

/// A 502 with nothing written proves nothing; a person, unsure, says "not published" and
/// requeues the post, and the first request lands late: the retry finds the record at
/// the first attempt's key and settles the post without sending anything.
#[tokio::test]
async fn a_bluesky_retry_after_a_person_requeued_reuses_the_record_key() {
    let fake = bluesky::BlueskyFake::start_with(bluesky::Expect::ANY, |s| {
        s.create_mode = bluesky::CreateMode::StatusWithoutCreating(502)
    })
    .await;
    let h = Harness::new(|_| vec![bluesky_channel(&fake, bluesky::HANDLE)]).await;
    let app = h.app();
    let me = Principal::cli();
    let (id, result) = publish(&app, "bsky", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    // No record at the key: that proves nothing, the post waits.
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    let first_key = app.store().post_detail(id).await.unwrap().intents[0]
        .platform_ref
        .clone()
        .unwrap();

    // A person says it did not go out and requeues it; meanwhile the first request lands.
    app.resolve(&me, id, Resolution::NotPublished)
        .await
        .unwrap();
    app.requeue(&me, id).await.unwrap();
    app.resume(&me, Some("bsky")).await.unwrap();
    fake.with(|s| {
        s.create_mode = bluesky::CreateMode::Normal;
        s.records.push(bluesky::Record {
            rkey: first_key.clone(),
            value: serde_json::json!({"text": "Mochi naps."}),
            cid: "bafyreilate".into(),
        });
    });
    h.clock.advance(Duration::minutes(10));
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert_eq!(
        report.result,
        PublishResult::Posted,
        "settled from the earlier record"
    );
    let detail = app.store().post_detail(id).await.unwrap();
    assert_eq!(detail.intents.len(), 1, "nothing was sent again");
    assert_eq!(fake.with(|s| s.posts()), 1);

    // The publish is the first attempt's: published when it was sent, and counted once,
    // by that attempt's reservation with its send time.
    let sent = detail.intents[0].created_at;
    assert_eq!(detail.post.posted_at, Some(sent));
    let committed: Vec<_> = detail
        .reservations
        .iter()
        .filter(|r| r.state == "committed")
        .collect();
    assert_eq!(committed.len(), 1, "{:?}", detail.reservations);
    assert_eq!(committed[0].generation, 1);
    assert_eq!(committed[0].sent_at, Some(sent));
    assert!(
        detail.reservations.iter().all(|r| r.state != "reserved"),
        "{:?}",
        detail.reservations
    );
    let quota = app.quota_status(&me).await.unwrap();
    assert_eq!(quota.window.usage.used, 1, "sent ten minutes ago");
    assert_eq!(quota.channels[0].usage.used, 1);
    // Once the window has passed the first send, the window is free; the day holds one.
    h.clock.advance(Duration::hours(1));
    let quota = app.quota_status(&me).await.unwrap();
    assert_eq!(quota.window.usage.used, 0, "{quota:?}");
    assert_eq!(quota.channels[0].usage.used, 1);
    assert!(
        app.store()
            .check_invariants(h.clock.now())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_mastodon_post_goes_out_once_with_its_permalink() {
    let fake = mastodon::MastodonFake::start(mastodon::Expect::ONE_POST).await;
    let h = Harness::new(|_| vec![mastodon_channel(&fake)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "masto", "Mochi naps in the sun.").await;
    assert_eq!(result, PublishResult::Posted);
    let post = app.store().get_post(id).await.unwrap();
    let status_id = post.platform_post_id.clone().unwrap();
    assert_eq!(
        post.permalink,
        Some(format!("{}/@{}/{status_id}", fake.uri(), mastodon::ACCT))
    );
    assert!(post.verified_at.is_some());
    let key = app.store().post_detail(id).await.unwrap().intents[0]
        .platform_ref
        .clone()
        .unwrap();
    assert!(fake.with(|s| s.keeps_key(&key)));
}

/// The answer never comes. Within the hour the instance still keeps the key: once the
/// first request cannot still be processing, reconcile sends the status again with the
/// same key and gets the original back — one status.
#[tokio::test]
async fn a_mastodon_create_whose_answer_never_comes_is_settled_by_its_key_within_the_hour() {
    let fake = mastodon::MastodonFake::start_with(
        mastodon::Expect {
            // The publish's account check, and the re-send's.
            identity: 2,
            instance: 1,
            create: 2,
            ..mastodon::Expect::NONE
        },
        |s| s.create_mode = mastodon::CreateMode::CreateThenDelay(LATE),
    )
    .await;
    let h = Harness::new(|_| vec![mastodon_channel(&fake)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "masto", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    // Moments later the first request could still be processing: nothing is sent.
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);

    fake.with(|s| s.create_mode = mastodon::CreateMode::Normal);
    h.clock.advance(Duration::minutes(10));
    let settled = app.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert!(
        settled[0].evidence.contains("Idempotency-Key"),
        "{}",
        settled[0].evidence
    );
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Posted);
    assert_eq!(
        post.platform_post_id,
        Some(fake.with(|s| s.statuses[0].id.clone()))
    );
    assert_eq!(reservation_states(&app, id).await, ["committed"]);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_mastodon_unknown_outcome_past_the_hour_waits_for_a_person() {
    let fake = mastodon::MastodonFake::start_with(
        mastodon::Expect {
            identity: 1,
            instance: 1,
            create: 1,
            ..mastodon::Expect::NONE
        },
        |s| s.create_mode = mastodon::CreateMode::CreateThenStatus(502),
    )
    .await;
    let h = Harness::new(|_| vec![mastodon_channel(&fake)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "masto", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    h.clock.advance(Duration::minutes(70));
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

/// A post whose create answered 502, ready for a reconcile re-send (the create answers
/// normally again).
async fn mastodon_unknown(
    expect: mastodon::Expect,
) -> (mastodon::MastodonFake, Harness, App, PostId) {
    let fake = mastodon::MastodonFake::start_with(expect, |s| {
        s.create_mode = mastodon::CreateMode::CreateThenStatus(502)
    })
    .await;
    let h = Harness::new(|_| vec![mastodon_channel(&fake)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "masto", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    fake.with(|s| s.create_mode = mastodon::CreateMode::Normal);
    (fake, h, app, id)
}

async fn creates(fake: &mastodon::MastodonFake) -> usize {
    fake.requests()
        .await
        .iter()
        .filter(|r| r.method.as_str() == "POST" && r.url.path() == "/api/v1/statuses")
        .count()
}

/// The token now belongs to another account (an operator wrote another account's token
/// into the token file): reconcile checks the account before it sends the status again,
/// sends nothing, and the post waits for a person.
#[tokio::test]
async fn a_mastodon_reconcile_checks_the_account_before_sending_again() {
    let (fake, h, app, id) = mastodon_unknown(mastodon::Expect {
        identity: 2,
        instance: 1,
        create: 1,
        ..mastodon::Expect::NONE
    })
    .await;
    fake.with(|s| s.acct = "someone_else".into());
    h.clock.advance(Duration::minutes(10));
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    assert_eq!(fake.with(|s| s.posts_of("someone_else")), 0);
    assert_eq!(creates(&fake).await, 1);
    let events = app.store().post_detail(id).await.unwrap().events;
    assert!(
        events.iter().any(|e| e
            .note
            .as_deref()
            .is_some_and(|n| n.contains("someone_else"))),
        "{events:?}"
    );
}

/// `pause --all`, or an operator's pause of the channel, holds the re-send too: only the
/// pause this post's own unknown outcome set does not.
#[tokio::test]
async fn a_mastodon_reconcile_sends_nothing_while_an_operator_pause_holds() {
    let (fake, h, app, id) = mastodon_unknown(mastodon::Expect {
        identity: 2,
        instance: 1,
        create: 2,
        read: 0,
        ..mastodon::Expect::NONE
    })
    .await;
    let me = Principal::cli();
    h.clock.advance(Duration::minutes(10));
    assert!(app.pause(&me, None, "maintenance").await.unwrap());
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(creates(&fake).await, 1);

    // The channel's own pause replaced by an operator's.
    assert!(app.resume(&me, None).await.unwrap());
    assert!(app.resume(&me, Some("masto")).await.unwrap());
    assert!(
        app.pause(&me, Some("masto"), "token rotation")
            .await
            .unwrap()
    );
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(creates(&fake).await, 1);
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);

    // Lifted: the re-send settles it.
    assert!(app.resume(&me, Some("masto")).await.unwrap());
    assert_eq!(app.reconcile().await.unwrap().len(), 1);
    assert_eq!(status(&app, id).await, PostStatus::Posted);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

/// Two processes reconcile the same post, the second `stagger` after the first, while
/// the re-send's answer takes a while: the status is sent again once, with one `resend`
/// event.
async fn two_processes_reconcile(stagger: StdDuration) {
    let (fake, h, app, id) = mastodon_unknown(mastodon::Expect {
        identity: mastodon::Expect::ANY.identity,
        instance: 1,
        create: 2,
        ..mastodon::Expect::NONE
    })
    .await;
    fake.with(|s| {
        s.create_mode = mastodon::CreateMode::CreateThenDelay(StdDuration::from_millis(250))
    });
    h.clock.advance(Duration::minutes(10));
    let other = h.app();
    let (a, b) = tokio::join!(app.reconcile(), async {
        tokio::time::sleep(stagger).await;
        other.reconcile().await
    });
    assert_eq!(a.unwrap().len() + b.unwrap().len(), 1);
    assert_eq!(creates(&fake).await, 2);
    assert_eq!(status(&app, id).await, PostStatus::Posted);
    let events = app.store().post_detail(id).await.unwrap().events;
    assert_eq!(
        events.iter().filter(|e| e.kind == "resend").count(),
        1,
        "{events:?}"
    );
}

/// The second process reads the post after the first claimed the re-send: that re-send
/// counts as a send of the key, so it sends nothing while the request may be processing.
#[tokio::test]
async fn two_processes_reconciling_a_mastodon_post_send_it_again_once() {
    two_processes_reconcile(StdDuration::from_millis(100)).await;
}

/// Both read the post at the same version: one claims the re-send with its
/// version-guarded `resend` event, the other's write conflicts and it sends nothing.
#[tokio::test]
async fn two_processes_reconciling_a_mastodon_post_at_once_send_it_again_once() {
    two_processes_reconcile(StdDuration::ZERO).await;
}

/// A server of one JPEG image at `/cat.jpg`.
async fn image_server() -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
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

/// A Mastodon channel whose requests may each take three minutes (the longest a re-send
/// can cover is a little more), with a post of two images whose create answered 502 and
/// made nothing: ready for a reconcile re-send.
async fn slow_mastodon_unknown(
    images: &wiremock::MockServer,
) -> (mastodon::MastodonFake, Harness, App, PostId) {
    let timeout = StdDuration::from_secs(180);
    let fake = mastodon::MastodonFake::start_with(mastodon::Expect::ANY, |s| {
        s.create_mode = mastodon::CreateMode::StatusWithoutCreating(502)
    })
    .await;
    let platform = Mastodon::new(
        MastodonSettings {
            request_timeout: timeout,
            ..MastodonSettings::new(fake.uri(), fake_token())
        },
        airlock_platforms::http::client(timeout),
    )
    .unwrap();
    let mut settings = settings("masto", ChannelKind::Mastodon, mastodon::ACCT);
    settings.request_timeout = Duration::from_std(timeout).unwrap();
    let h = Harness::new(|_| {
        vec![TestChannel {
            settings,
            platform: Arc::new(platform),
        }]
    })
    .await;
    let app = h.app();
    let me = Principal::cli();
    let mut input = draft("masto", "Mochi naps.");
    let image = airlock_core::Media::new(format!("{}/cat.jpg", images.uri()), Some("a cat".into()));
    input.media = vec![image.clone(), image];
    let post = app
        .create_post(&me, input, None, airlock_app::posts::DraftOrigin::default())
        .await
        .unwrap()
        .post;
    app.approve(&me, post.id).await.unwrap();
    let report = app.publish_next(None).await.unwrap().unwrap();
    assert!(
        matches!(report.result, PublishResult::NeedsReview { .. }),
        "{:?}",
        report.result
    );
    fake.with(|s| s.create_mode = mastodon::CreateMode::Normal);
    (fake, h, app, post.id)
}

/// Process A claims a re-send and uploads slow media; six minutes later by the clock
/// (past the five-minute floor) process B reads the post. A's request may still be
/// running — it may take seven requests of three minutes — so B sends nothing, and the
/// instance, which stores a key only after it made the status, holds one status.
#[tokio::test]
async fn a_resend_waits_while_another_resend_with_slow_media_may_still_be_running() {
    let images = image_server().await;
    let (fake, h, app, id) = slow_mastodon_unknown(&images).await;
    fake.with(|s| {
        s.upload_delay = Some(StdDuration::from_millis(300));
        s.key_stored_after = Some(StdDuration::from_secs(2));
    });
    h.clock.advance(Duration::minutes(10));
    let other = h.app();
    let clock = h.clock.clone();
    let (a, b) = tokio::join!(app.reconcile(), async {
        // A has claimed its re-send and is uploading.
        tokio::time::sleep(StdDuration::from_millis(150)).await;
        clock.advance(Duration::minutes(6));
        other.reconcile().await
    });
    assert_eq!(a.unwrap().len(), 1, "A's re-send settles the post");
    assert!(b.unwrap().is_empty(), "B sends nothing");
    assert_eq!(fake.with(|s| s.posts()), 1, "one status");
    assert_eq!(creates(&fake).await, 2, "the publish, and A's re-send");
    assert_eq!(status(&app, id).await, PostStatus::Posted);
}

/// A re-send's answer that comes after a person settled the post meanwhile is kept on the
/// post as evidence for that person, never dropped.
#[tokio::test]
async fn a_resend_answer_after_the_post_was_settled_is_recorded_on_it() {
    let images = image_server().await;
    let (fake, h, app, id) = slow_mastodon_unknown(&images).await;
    fake.with(|s| s.upload_delay = Some(StdDuration::from_millis(300)));
    h.clock.advance(Duration::minutes(10));
    let me = Principal::cli();
    let person = h.app();
    let (settled, resolved) = tokio::join!(app.reconcile(), async {
        tokio::time::sleep(StdDuration::from_millis(150)).await;
        person.resolve(&me, id, Resolution::NotPublished).await
    });
    assert!(settled.unwrap().is_empty());
    resolved.unwrap();
    assert_eq!(fake.with(|s| s.posts()), 1);
    let status_id = fake.with(|s| s.statuses[0].id.clone());
    let events = app.store().post_detail(id).await.unwrap().events;
    assert!(
        events.iter().any(|e| e.kind == "stale_outcome"
            && e.note.as_deref().is_some_and(|n| n.contains(&status_id))),
        "{events:?}"
    );
}

/// While a re-send uploads slow media, a person settles the post "not published" and
/// requeues it: the retry on the guarded path sees the re-send as a send of its key,
/// which may still be processed, and waits instead of sending the key again (the
/// instance stores a key only once it made the status). One status.
#[tokio::test]
async fn a_retry_after_requeue_waits_while_a_resend_of_its_key_may_still_run() {
    let images = image_server().await;
    let (fake, h, app, id) = slow_mastodon_unknown(&images).await;
    fake.with(|s| {
        s.upload_delay = Some(StdDuration::from_millis(400));
        s.key_stored_after = Some(StdDuration::from_secs(3));
    });
    h.clock.advance(Duration::minutes(10));
    let me = Principal::cli();
    let person = h.app();
    let (settled, retried) = tokio::join!(app.reconcile(), async {
        tokio::time::sleep(StdDuration::from_millis(150)).await;
        person
            .resolve(&me, id, Resolution::NotPublished)
            .await
            .unwrap();
        person.requeue(&me, id).await.unwrap();
        person.resume(&me, Some("masto")).await.unwrap();
        person.publish_next(None).await.unwrap()
    });
    assert!(settled.unwrap().is_empty());
    let retried = retried.unwrap();
    assert!(
        matches!(retried.result, PublishResult::Retrying { .. }),
        "{:?}",
        retried.result
    );
    tokio::time::sleep(StdDuration::from_secs(1)).await;
    assert_eq!(fake.with(|s| s.posts()), 1, "one status");
    assert_eq!(status(&app, id).await, PostStatus::Approved);
}

#[tokio::test]
async fn a_revoked_mastodon_token_fails_the_post_and_pauses_the_channel() {
    let fake = mastodon::MastodonFake::start_with(
        mastodon::Expect {
            identity: 1,
            ..mastodon::Expect::NONE
        },
        |s| s.token_revoked = true,
    )
    .await;
    let h = Harness::new(|_| vec![mastodon_channel(&fake)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "masto", "Mochi naps.").await;
    assert!(matches!(result, PublishResult::Failed { .. }), "{result:?}");
    assert_eq!(status(&app, id).await, PostStatus::Failed);
    assert!(paused(&app, "masto").await.unwrap().contains("credential"));
}

#[tokio::test]
async fn an_x_post_goes_out_once_with_its_permalink() {
    let fake = x::XFake::start(x::Expect::ONE_POST).await;
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, None)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "x-main", "Mochi naps in the sun.").await;
    assert_eq!(result, PublishResult::Posted);
    let post = app.store().get_post(id).await.unwrap();
    let tweet = post.platform_post_id.clone().unwrap();
    assert_eq!(
        post.permalink,
        Some(format!("https://x.com/{}/status/{tweet}", x::USERNAME))
    );
    assert!(post.verified_at.is_some());
}

/// `monthly_budget_usd = 0.04` with $0.015 posts: three go out, the fourth is held
/// before any request until the month turns, and the budget shows as spent.
#[tokio::test]
async fn an_x_budget_holds_the_post_that_starts_after_it_is_spent_before_any_request() {
    let fake = x::XFake::start(x::Expect {
        identity: 1,
        create: 3,
        read: 3,
        ..x::Expect::NONE
    })
    .await;
    let budget = Budget {
        monthly: 40_000,
        costs: Costs::X_DEFAULT,
    };
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, Some(budget))]).await;
    let app = h.app();
    for n in 1..=3 {
        let (_, result) = publish(&app, "x-main", &format!("Mochi naps, day {n}.")).await;
        assert_eq!(result, PublishResult::Posted, "post {n}");
    }
    let (id, result) = publish(&app, "x-main", "Mochi naps, day 4.").await;
    let PublishResult::Deferred {
        limit,
        used,
        max,
        next_free_at,
    } = result
    else {
        panic!("the fourth is held: {result:?}");
    };
    assert_eq!((limit, used, max), (Limit::Budget, 45_000, 40_000));
    // January 1 in Tokyo, past the clocks' allowance.
    assert_eq!(next_free_at.to_rfc3339(), "2026-12-31T15:05:00+00:00");
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Approved);
    assert_eq!(post.attempts, 0);
    assert!(
        app.store()
            .post_detail(id)
            .await
            .unwrap()
            .reservations
            .is_empty()
    );
    assert_eq!(fake.with(|s| s.posts()), 3);

    let quota = app.quota_status(&Principal::cli()).await.unwrap();
    let channel = &quota.channels[0];
    let spend = channel.budget.expect("the budget is shown");
    assert!((spend.used_usd - 0.045).abs() < 1e-9, "{spend:?}");
    assert_eq!(spend.remaining_usd, 0.0);
    assert_eq!(channel.next_slot_at, Some(next_free_at));
    let json = serde_json::to_value(&quota).unwrap();
    assert_eq!(json["channels"][0]["budget"]["budget_usd"], 0.04);

    // Asked for now, it is refused naming the budget.
    let err = app.publish_now(&Principal::cli(), id).await.unwrap_err();
    assert!(err.to_string().contains("monthly budget"), "{err}");
}

#[tokio::test]
async fn an_x_duplicate_content_refusal_never_marks_a_post_posted() {
    let fake = x::XFake::start_with(
        x::Expect {
            identity: 1,
            create: 1,
            ..x::Expect::NONE
        },
        |s| {
            s.tweets.push(x::Tweet {
                id: "1866000000000000001".into(),
                author: x::USERNAME.into(),
                text: "Mochi naps.".into(),
            })
        },
    )
    .await;
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, None)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "x-main", "Mochi naps.").await;
    let PublishResult::Failed { reason } = result else {
        panic!("a duplicate fails: {result:?}");
    };
    assert!(reason.contains("duplicate content"), "{reason}");
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.status, PostStatus::Failed);
    assert_eq!(post.platform_post_id, None);
    assert!(
        paused(&app, "x-main").await.is_none(),
        "not a credential problem"
    );
    assert_eq!(reservation_states(&app, id).await, ["released"]);
}

#[tokio::test]
async fn an_x_create_whose_answer_never_comes_waits_for_a_person() {
    let fake = x::XFake::start_with(
        x::Expect {
            identity: 1,
            create: 1,
            ..x::Expect::NONE
        },
        |s| s.create_mode = x::CreateMode::CreateThenDelay(LATE),
    )
    .await;
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, None)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "x-main", "Mochi naps.").await;
    assert!(
        matches!(result, PublishResult::NeedsReview { .. }),
        "{result:?}"
    );
    h.clock.advance(Duration::minutes(10));
    assert!(app.reconcile().await.unwrap().is_empty());
    assert_eq!(status(&app, id).await, PostStatus::NeedsReview);
    assert_eq!(reservation_states(&app, id).await, ["reserved"]);
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn an_expired_x_token_without_a_refresh_token_fails_and_pauses_and_a_rate_limit_only_waits() {
    let fake = x::XFake::start_with(
        x::Expect {
            identity: 1,
            ..x::Expect::NONE
        },
        |s| s.expire_token_at = Some(x::Route::Identity),
    )
    .await;
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, None)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "x-main", "Mochi naps.").await;
    assert!(matches!(result, PublishResult::Failed { .. }), "{result:?}");
    assert_eq!(status(&app, id).await, PostStatus::Failed);
    assert!(paused(&app, "x-main").await.unwrap().contains("credential"));

    let fake = x::XFake::start_with(
        x::Expect {
            identity: 1,
            create: 1,
            ..x::Expect::NONE
        },
        |s| s.posts_left = Some(0),
    )
    .await;
    let h = Harness::new(|dir| vec![x_channel(dir, &fake, None)]).await;
    let app = h.app();
    let (id, result) = publish(&app, "x-main", "Mochi naps.").await;
    let PublishResult::Retrying { not_before, .. } = result else {
        panic!("a rate limit waits: {result:?}");
    };
    let post = app.store().get_post(id).await.unwrap();
    assert_eq!(post.attempts, 0, "a rate limit is not an attempt");
    assert!(
        not_before > h.clock.now() + Duration::minutes(5),
        "{not_before}"
    );
    assert_eq!(reservation_states(&app, id).await, ["released"]);
}
