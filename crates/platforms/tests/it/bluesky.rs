//! The `bluesky` adapter against the fake PDS.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::bluesky::{Bluesky, BlueskySettings, is_tid};
use airlock_platforms::{
    EarlierAttempt, Evidence, Platform, Prepared, PublishRequest, ReconcileRequest, StepError,
    Verification,
};
use airlock_testkit::fake::bluesky::{BlueskyFake, CreateMode, DID, Expect, HANDLE, Route};

use crate::support::{
    LONG_DELAY, SHORT_TIMEOUT, assert_no_canary, assert_token_only_in_headers_except, client,
    image, image_server, request, token,
};

const SESSION: &str = "/xrpc/com.atproto.server.createSession";

fn adapter_with(fake: &BlueskyFake, identifier: &str, timeout: Duration) -> Bluesky {
    let settings = BlueskySettings {
        base_url: fake.uri(),
        identifier: (identifier != HANDLE).then(|| identifier.to_owned()),
        request_timeout: timeout,
        ..BlueskySettings::new(HANDLE.to_owned(), token())
    };
    Bluesky::new(settings, client()).unwrap()
}

fn adapter(fake: &BlueskyFake) -> Bluesky {
    adapter_with(fake, HANDLE, Duration::from_secs(5))
}

fn post() -> PublishRequest {
    request(
        "bsky-main",
        "Mochi naps in the sun #cats, ask @mochi.bsky.social",
    )
}

fn reconcile(req: &PublishRequest, prepared: &Prepared) -> ReconcileRequest {
    ReconcileRequest {
        publish: req.clone(),
        platform_ref: prepared.platform_ref.clone(),
    }
}

fn earlier(rkey: &str) -> EarlierAttempt {
    EarlierAttempt {
        generation: 1,
        idempotency_key: "42-0123456789abcdef".into(),
        platform_ref: Some(rkey.to_owned()),
        sent_at: chrono::Utc::now() - chrono::Duration::minutes(30),
        definitely_unpublished: false,
        resend: false,
    }
}

#[tokio::test]
async fn one_session_one_record_at_the_key_airlock_chose_with_facets_and_a_permalink() {
    let expect = Expect {
        resolve: 1,
        ..Expect::ONE_POST
    };
    let fake = BlueskyFake::start(expect).await;
    let bluesky = adapter(&fake);

    let account = bluesky.account().await.unwrap().unwrap();
    assert_eq!(account.username, HANDLE);
    assert_eq!(account.id.as_deref(), Some(DID));

    let mut req = post();
    req.link = Some("https://inn.example/naps/".into());
    let prepared = bluesky.prepare(&req).await.unwrap();
    let rkey = prepared.platform_ref.clone().unwrap();
    assert!(is_tid(&rkey), "{rkey}");
    let outcome = bluesky.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("expected a publish, got {outcome:?}");
    };
    let uri = format!("at://{DID}/app.bsky.feed.post/{rkey}");
    assert_eq!(published.platform_post_id.as_deref(), Some(uri.as_str()));
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("https://bsky.app/profile/{HANDLE}/post/{rkey}").as_str())
    );

    let record = fake.with(|s| s.record(&rkey).unwrap().value.clone());
    assert_eq!(record["text"], req.text);
    let features: Vec<&str> = record["facets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["features"][0]["$type"].as_str().unwrap())
        .collect();
    assert_eq!(
        features,
        [
            "app.bsky.richtext.facet#tag",
            "app.bsky.richtext.facet#mention"
        ]
    );
    assert_eq!(record["facets"][1]["features"][0]["did"], "did:plc:mochi");
    let start = record["facets"][1]["index"]["byteStart"].as_u64().unwrap() as usize;
    let end = record["facets"][1]["index"]["byteEnd"].as_u64().unwrap() as usize;
    assert_eq!(&req.text[start..end], "@mochi.bsky.social");
    assert_eq!(record["embed"]["$type"], "app.bsky.embed.external");
    assert_eq!(
        record["embed"]["external"]["uri"],
        "https://inn.example/naps/"
    );

    assert!(matches!(
        bluesky.verify(&uri).await,
        Verification::Verified { .. }
    ));
    assert_eq!(fake.with(|s| s.posts()), 1);
    assert_no_canary(&account);
    assert_no_canary(&outcome);
    assert_no_canary(&bluesky);
    assert_token_only_in_headers_except(&fake.server, SESSION).await;
}

#[tokio::test]
async fn images_go_up_as_blobs_with_their_alt_text() {
    let images = image_server().await;
    let expect = Expect {
        create_session: 1,
        upload: 2,
        create: 1,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start(expect).await;
    let bluesky = adapter(&fake);
    let mut req = request("bsky-main", "Two cats.");
    req.media = vec![
        image(&format!("{}/cat.jpg", images.uri())),
        image(&format!("{}/cat.jpg", images.uri())),
    ];
    let prepared = bluesky.prepare(&req).await.unwrap();
    assert!(matches!(
        bluesky.publish(&req, &prepared).await,
        Outcome::Published(_)
    ));
    let record = fake.with(|s| s.records[0].value.clone());
    assert_eq!(record["embed"]["$type"], "app.bsky.embed.images");
    assert_eq!(
        record["embed"]["images"][0]["alt"],
        "A cat asleep on a cushion"
    );
    assert_eq!(
        record["embed"]["images"][1]["image"]["mimeType"],
        "image/jpeg"
    );
    assert_eq!(fake.with(|s| s.blobs.len()), 2);

    // An image URL that is not https is never fetched.
    let mut bad = request("bsky-main", "A cat.");
    bad.media = vec![image("http://cats.example/cat.jpg")];
    let err = bluesky.prepare(&bad).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { reason, credential: false } if reason.contains("https")),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_expired_session_is_refreshed_and_the_same_record_sent_once_more() {
    let expect = Expect {
        create_session: 1,
        refresh_session: 1,
        create: 2,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start_with(expect, |s| {
        s.expire_sessions_at = Some(Route::CreateRecord);
    })
    .await;
    let bluesky = adapter(&fake);
    let req = request("bsky-main", "Mochi naps.");
    let prepared = bluesky.prepare(&req).await.unwrap();
    let outcome = bluesky.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Published(_)), "{outcome:?}");
    assert_eq!(fake.with(|s| s.posts()), 1);
    let rkey = prepared.platform_ref.unwrap();
    assert!(fake.with(|s| s.record(&rkey).is_some()));
}

#[tokio::test]
async fn a_refused_refresh_makes_a_new_session_and_a_revoked_password_fails_for_the_credential() {
    let expect = Expect {
        create_session: 2,
        refresh_session: 1,
        get_session: 2,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start_with(expect, |s| {
        s.expire_sessions_at = Some(Route::GetSession);
        s.refresh_refused = true;
    })
    .await;
    let bluesky = adapter(&fake);
    let account = bluesky.account().await.unwrap().unwrap();
    assert_eq!(account.username, HANDLE);

    let fake = BlueskyFake::start_with(
        Expect {
            create_session: 1,
            ..Expect::NONE
        },
        |s| s.password = "a-new-app-password".into(),
    )
    .await;
    let err = adapter(&fake).account().await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(*credential, "{reason}");
    assert!(reason.contains("app password"), "{reason}");
    assert_no_canary(&err);
}

#[tokio::test]
async fn the_session_names_the_account_the_identifier_logs_into() {
    let fake = BlueskyFake::start_with(
        Expect {
            create_session: 1,
            get_session: 1,
            ..Expect::NONE
        },
        |s| s.handle = "someone-else.bsky.social".into(),
    )
    .await;
    let bluesky = adapter_with(&fake, "cats@inn.example", Duration::from_secs(5));
    let account = bluesky.account().await.unwrap().unwrap();
    assert_eq!(account.username, "someone-else.bsky.social");
}

/// A create whose answer is lost (`mode`): unknown, then the record at the intent's key
/// proves it went out.
async fn a_lost_answer_is_settled_by_the_record_at_its_key(mode: CreateMode, timeout: Duration) {
    let expect = Expect {
        create_session: 1,
        create: 1,
        get_record: 1,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start_with(expect, |s| s.create_mode = mode).await;
    let bluesky = adapter_with(&fake, HANDLE, timeout);
    let req = request("bsky-main", "Mochi naps.");
    let prepared = bluesky.prepare(&req).await.unwrap();
    let outcome = bluesky.publish(&req, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    let Evidence::Published(proof) = bluesky.reconcile(&reconcile(&req, &prepared)).await else {
        panic!("the record exists");
    };
    let rkey = prepared.platform_ref.clone().unwrap();
    assert!(proof.note.contains(&rkey), "{}", proof.note);
    assert_eq!(
        proof.platform_post_id,
        Some(format!("at://{DID}/app.bsky.feed.post/{rkey}"))
    );
    assert!(proof.permalink.unwrap().ends_with(&rkey));
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_create_answered_with_500_is_unknown_and_settled_by_get_record() {
    a_lost_answer_is_settled_by_the_record_at_its_key(
        CreateMode::CreateThenStatus(500),
        Duration::from_secs(5),
    )
    .await;
}

#[tokio::test]
async fn a_create_whose_answer_never_comes_is_unknown_and_settled_by_get_record() {
    a_lost_answer_is_settled_by_the_record_at_its_key(
        CreateMode::CreateThenDelay(LONG_DELAY),
        SHORT_TIMEOUT,
    )
    .await;
}

#[tokio::test]
async fn no_record_at_the_key_proves_nothing() {
    let expect = Expect {
        create_session: 1,
        create: 1,
        get_record: 1,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start_with(expect, |s| {
        s.create_mode = CreateMode::StatusWithoutCreating(502)
    })
    .await;
    let bluesky = adapter(&fake);
    let req = request("bsky-main", "Mochi naps.");
    let prepared = bluesky.prepare(&req).await.unwrap();
    assert!(matches!(
        bluesky.publish(&req, &prepared).await,
        Outcome::Unknown { .. }
    ));
    assert_eq!(
        bluesky.reconcile(&reconcile(&req, &prepared)).await,
        Evidence::NoProof
    );
}

#[tokio::test]
async fn a_retry_finds_the_earlier_record_or_reuses_its_key_so_a_late_landing_cannot_double() {
    // The earlier attempt's record exists: proof, nothing sent.
    let fake = BlueskyFake::start(Expect {
        create_session: 1,
        create: 1,
        get_record: 1,
        ..Expect::NONE
    })
    .await;
    let bluesky = adapter(&fake);
    let first = request("bsky-main", "Mochi naps.");
    let prepared = bluesky.prepare(&first).await.unwrap();
    let rkey = prepared.platform_ref.clone().unwrap();
    assert!(matches!(
        bluesky.publish(&first, &prepared).await,
        Outcome::Published(_)
    ));
    let mut retry = first.clone();
    retry.earlier = vec![earlier(&rkey)];
    let again = bluesky.prepare(&retry).await.unwrap();
    let proof = again
        .already_published
        .expect("the earlier record is proof");
    assert!(proof.note.contains(&rkey), "{}", proof.note);
    assert_eq!(fake.with(|s| s.posts()), 1);

    // No record yet: the retry sends the same key; when the earlier attempt lands first,
    // the PDS refuses the second record (500 today), which is unknown, never a second post.
    let fake = BlueskyFake::start(Expect {
        create_session: 1,
        create: 1,
        get_record: 1,
        ..Expect::NONE
    })
    .await;
    let bluesky = adapter(&fake);
    let key = "3lbabcdefgh22";
    let mut retry = request("bsky-main", "Mochi naps.");
    retry.earlier = vec![earlier(key)];
    let prepared = bluesky.prepare(&retry).await.unwrap();
    assert_eq!(prepared.platform_ref.as_deref(), Some(key));
    // The earlier attempt's request lands now, late.
    fake.with(|s| {
        s.records.push(airlock_testkit::fake::bluesky::Record {
            rkey: key.into(),
            value: serde_json::json!({"text": "Mochi naps."}),
            cid: "bafyreilate".into(),
        })
    });
    let outcome = bluesky.publish(&retry, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    assert_eq!(fake.with(|s| s.posts()), 1);
}

#[tokio::test]
async fn a_spent_write_budget_is_not_sent_and_waits_for_the_reset() {
    let fake = BlueskyFake::start_with(
        Expect {
            create_session: 1,
            create: 1,
            ..Expect::NONE
        },
        |s| s.writes_left = Some(0),
    )
    .await;
    let bluesky = adapter(&fake);
    let req = request("bsky-main", "Mochi naps.");
    let prepared = bluesky.prepare(&req).await.unwrap();
    let Outcome::NotSent {
        reason,
        retry_after,
    } = bluesky.publish(&req, &prepared).await
    else {
        panic!("a 429 is not sent");
    };
    assert!(reason.contains("429"), "{reason}");
    let wait = retry_after.unwrap();
    assert!(
        wait > chrono::Duration::seconds(100) && wait <= chrono::Duration::seconds(120),
        "{wait:?}"
    );
    assert_eq!(fake.with(|s| s.posts()), 0);
}

#[tokio::test]
async fn a_fresh_process_reconciles_by_the_handle_whatever_it_logs_in_with() {
    let expect = Expect {
        create_session: 1,
        create: 1,
        get_record: 1,
        ..Expect::NONE
    };
    let fake = BlueskyFake::start_with(expect, |s| {
        s.create_mode = CreateMode::CreateThenStatus(500)
    })
    .await;
    let first = adapter_with(&fake, "cats@inn.example", Duration::from_secs(5));
    let req = request("bsky-main", "Mochi naps.");
    let prepared = first.prepare(&req).await.unwrap();
    assert!(matches!(
        first.publish(&req, &prepared).await,
        Outcome::Unknown { .. }
    ));
    // Another process, without a session: the record is read from the handle's repo.
    let later = adapter_with(&fake, "cats@inn.example", Duration::from_secs(5));
    let Evidence::Published(proof) = later.reconcile(&reconcile(&req, &prepared)).await else {
        panic!("the record exists");
    };
    assert!(proof.permalink.unwrap().contains(HANDLE));
}

/// The PDS's message is redacted before it is cut: a session token at character 150 of
/// it leaves no piece behind in the reason.
#[tokio::test]
async fn a_message_echoing_the_token_is_redacted_before_it_is_cut() {
    let fake = BlueskyFake::start(Expect::ANY).await;
    crate::support::echo_bearer_at(
        &fake.server,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        400,
        |message| serde_json::json!({"error": "InvalidRequest", "message": message}),
    )
    .await;
    let bluesky = adapter(&fake);
    let req = post();
    let prepared = bluesky.prepare(&req).await.unwrap();
    let outcome = bluesky.publish(&req, &prepared).await;
    let Outcome::Rejected { reason, .. } = &outcome else {
        panic!("refused: {outcome:?}");
    };
    assert!(reason.contains("the request was refused"), "{reason}");
    crate::support::assert_no_canary_piece(reason);
}

/// A PDS that answers 2xx with a record at another key than the one airlock chose: the
/// post is out at that key (its uri and permalink are the PDS's), and the answer asks for
/// the channel to pause: a retry there could make a second record, since airlock's key
/// fences nothing on that server.
#[tokio::test]
async fn a_record_written_at_another_key_is_recorded_as_it_is_and_pauses_the_channel() {
    let fake = BlueskyFake::start_with(Expect::ANY, |s| s.ignore_client_rkey = true).await;
    let bluesky = adapter(&fake);
    let req = post();
    let prepared = bluesky.prepare(&req).await.unwrap();
    let chosen = prepared.platform_ref.clone().unwrap();
    let outcome = bluesky.publish(&req, &prepared).await;
    let Outcome::Published(published) = &outcome else {
        panic!("published: {outcome:?}");
    };
    let written = fake.with(|s| s.records[0].rkey.clone());
    assert_ne!(written, chosen);
    let uri = format!("at://{DID}/app.bsky.feed.post/{written}");
    assert_eq!(published.platform_post_id.as_deref(), Some(uri.as_str()));
    assert_eq!(
        published.permalink.as_deref(),
        Some(format!("https://bsky.app/profile/{HANDLE}/post/{written}").as_str())
    );
    let reason = published.pause.as_deref().expect("a pause");
    assert!(
        reason.contains("ignores client-chosen record keys"),
        "{reason}"
    );
}
