//! The `bluesky` adapter against the fake PDS.

use std::time::Duration;

use airlock_core::Outcome;
use airlock_platforms::bluesky::{Bluesky, BlueskySettings, is_tid};
use airlock_platforms::{
    EarlierAttempt, Evidence, PartRequest, Platform, Prepared, PublishRequest, PublishedPart,
    ReconcileRequest, StepError, Verification,
};
use airlock_testkit::fake::bluesky::{BlueskyFake, CreateMode, DID, Expect, HANDLE, Record, Route};

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

/// Part `number` of a post of `of` parts, after the parts `published`, as the guarded
/// path hands it over: its own text and key (part 1 keeps the post's key).
fn part(
    text: &str,
    number: u32,
    of: u32,
    comment: bool,
    published: &[PublishedPart],
) -> PublishRequest {
    let mut req = request("bsky-main", text);
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

/// Prepares and publishes `req`; the part as the next ones see it.
async fn publish_part(bluesky: &Bluesky, req: &PublishRequest) -> PublishedPart {
    let prepared = bluesky.prepare(req).await.unwrap();
    let outcome = bluesky.publish(req, &prepared).await;
    let Outcome::Published(published) = outcome else {
        panic!("part {} published: {outcome:?}", req.part.number);
    };
    out(
        req.part.number,
        published.platform_post_id,
        published.permalink,
    )
}

/// Every record but the first replies to the one before it, under the first.
fn assert_chain(records: &[Record]) {
    assert!(records[0].parent().is_none() && records[0].root().is_none());
    for pair in records.windows(2) {
        assert_eq!(pair[1].parent(), Some(pair[0].strong_ref()), "{pair:?}");
        assert_eq!(pair[1].root(), Some(records[0].strong_ref()), "{pair:?}");
    }
}

#[tokio::test]
async fn a_five_part_thread_and_its_first_comment_are_a_chain_of_replies_at_airlocks_keys() {
    let fake = BlueskyFake::start(Expect {
        create_session: 1,
        create: 6,
        // Parts 2..6 each read their parent (part 2's parent is its root too), parts 3..6
        // the root as well.
        get_record: 5 + 4,
        ..Expect::NONE
    })
    .await;
    let bluesky = adapter(&fake);
    // Prepared within one clock tick: the keys still differ and sort in order.
    let now = chrono::Utc::now();
    let mut published = Vec::new();
    for number in 1..=6 {
        let comment = number == 6;
        let text = if comment {
            "Comments welcome.".to_owned()
        } else {
            format!("Mochi's day, {number}/5")
        };
        let mut req = part(&text, number, 6, comment, &published);
        req.now = now;
        published.push(publish_part(&bluesky, &req).await);
    }
    let records = fake.with(|s| s.records.clone());
    assert_eq!(records.len(), 6, "each part once");
    assert_chain(&records);
    assert_eq!(records[5].text(), "Comments welcome.");
    for (record, part) in records.iter().zip(&published) {
        assert!(is_tid(&record.rkey), "{}", record.rkey);
        assert_eq!(part.platform_post_id, record.uri());
        assert_eq!(
            part.permalink.as_deref(),
            Some(format!("https://bsky.app/profile/{HANDLE}/post/{}", record.rkey).as_str())
        );
    }
    let keys: Vec<&str> = records.iter().map(|r| r.rkey.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        keys, sorted,
        "the keys are distinct and sort in the thread's order"
    );
}

/// Part 3's record is stored and its answer lost: part 3 is settled by the record at its
/// own key (a fresh process, no session), parts 4 and 5 follow it, and the PDS holds each
/// part once, in a chain.
#[tokio::test]
async fn a_lost_answer_of_part_3_is_settled_by_the_record_at_part_3s_key() {
    let fake = BlueskyFake::start_with(Expect::ANY, |s| {
        s.create_mode_of
            .insert(3, CreateMode::CreateThenStatus(500));
    })
    .await;
    let bluesky = adapter(&fake);
    let mut published = Vec::new();
    for number in 1..=2 {
        let req = part(&format!("Part {number}/5"), number, 5, false, &published);
        published.push(publish_part(&bluesky, &req).await);
    }
    let third = part("Part 3/5", 3, 5, false, &published);
    let prepared = bluesky.prepare(&third).await.unwrap();
    let key = prepared.platform_ref.clone().unwrap();
    let outcome = bluesky.publish(&third, &prepared).await;
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    assert_eq!(fake.with(|s| s.posts()), 3);

    // Another process reconciles part 3 with part 3's request and key.
    let later = adapter(&fake);
    let mut publish = third.clone();
    publish.earlier = vec![earlier(&key)];
    let evidence = later
        .reconcile(&ReconcileRequest {
            publish,
            platform_ref: Some(key.clone()),
        })
        .await;
    let Evidence::Published(proof) = evidence else {
        panic!("part 3's record is at its key: {evidence:?}");
    };
    assert!(proof.note.contains(&key), "{}", proof.note);
    let uri = format!("at://{DID}/app.bsky.feed.post/{key}");
    assert_eq!(proof.platform_post_id.as_deref(), Some(uri.as_str()));
    // A retry of part 3 would find it too, and send nothing.
    let mut retry = third.clone();
    retry.earlier = vec![earlier(&key)];
    let again = later.prepare(&retry).await.unwrap();
    assert!(again.already_published.is_some(), "{again:?}");

    published.push(out(3, proof.platform_post_id, proof.permalink));
    for number in 4..=5 {
        let req = part(&format!("Part {number}/5"), number, 5, false, &published);
        published.push(publish_part(&later, &req).await);
    }
    let records = fake.with(|s| s.records.clone());
    let texts: Vec<&str> = records.iter().map(Record::text).collect();
    assert_eq!(
        texts,
        ["Part 1/5", "Part 2/5", "Part 3/5", "Part 4/5", "Part 5/5"]
    );
    assert_chain(&records);
    fake.with(|s| {
        for record in &s.records[1..] {
            assert!(s.resolve(&record.parent().unwrap()).is_some());
        }
    });
}

/// An image whose bytes at its URL are not the approved ones is refused before anything
/// is uploaded or created, naming both digests; the approved bytes go up, in a reply.
#[tokio::test]
async fn a_swapped_image_is_refused_before_create_record_and_the_approved_one_goes_in_a_reply() {
    let images = image_server().await;
    let fake = BlueskyFake::start(Expect {
        create_session: 1,
        upload: 1,
        create: 2,
        // Part 1's record, read for each of part 2's two prepares.
        get_record: 2,
        ..Expect::NONE
    })
    .await;
    let bluesky = adapter(&fake);
    let first = publish_part(&bluesky, &part("Two cats, a thread.", 1, 2, false, &[])).await;

    let served = airlock_core::hash::sha256_hex(&[0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4]);
    let approved = airlock_core::hash::sha256_hex(b"the picture the critic passed");
    let mut second = part("The second cat.", 2, 2, false, std::slice::from_ref(&first));
    let mut media = image(&format!("{}/cat.jpg", images.uri()));
    media.sha256 = Some(approved.clone());
    second.media = vec![media.clone()];
    let err = bluesky.prepare(&second).await.unwrap_err();
    let StepError::Rejected { reason, credential } = &err else {
        panic!("refused: {err:?}");
    };
    assert!(!credential);
    assert!(
        reason.contains(&approved) && reason.contains(&served),
        "{reason}"
    );
    assert_eq!(fake.with(|s| (s.posts(), s.blobs.len())), (1, 0));

    media.sha256 = Some(served);
    second.media = vec![media];
    publish_part(&bluesky, &second).await;
    let records = fake.with(|s| s.records.clone());
    assert_chain(&records);
    assert_eq!(records[1].value["embed"]["$type"], "app.bsky.embed.images");
    assert_eq!(fake.with(|s| s.blobs.len()), 1);
}

/// A later part whose parent's record is gone fails, sending nothing; one published
/// without its reply references prepared is not sent.
#[tokio::test]
async fn a_reply_is_never_sent_without_its_parent() {
    let fake = BlueskyFake::start(Expect {
        create_session: 1,
        get_record: 1,
        ..Expect::NONE
    })
    .await;
    let bluesky = adapter(&fake);
    let gone = PublishedPart {
        number: 1,
        platform_post_id: format!("at://{DID}/app.bsky.feed.post/3lbabcdefgh22"),
        permalink: None,
    };
    let req = part("Part 2/2", 2, 2, false, &[gone]);
    let err = bluesky.prepare(&req).await.unwrap_err();
    assert!(
        matches!(&err, StepError::Rejected { reason, .. } if reason.contains("part 1")),
        "{err:?}"
    );
    let outcome = bluesky
        .publish(&req, &Prepared::with_ref("3lbabcdefgh23"))
        .await;
    assert!(matches!(outcome, Outcome::NotSent { .. }), "{outcome:?}");
    assert_eq!(fake.with(|s| s.posts()), 0);
}
