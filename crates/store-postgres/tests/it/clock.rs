//! One clock decides (docs/quotas.md#one-clock): a PostgreSQL ledger stamps and decides
//! by the database's clock whatever time a process sends, and refuses to claim or send
//! for a process whose clock is further off than the allowance, naming both times.

use chrono::{DateTime, Duration, Utc};

use airlock_core::quota::CLOCK_ALLOWANCE;
use airlock_store::{LedgerClock, Publishing, Reads, StoreError};
use airlock_store_postgres::{PgSettings, PgStore};
use airlock_store_tests::fixture::*;

use crate::support::TestDb;

/// A store on `db` deciding by the database's clock, as in production.
async fn database_clock(db: &TestDb) -> PgStore {
    let settings = PgSettings {
        max_connections: 4,
        ..PgSettings::default()
    };
    PgStore::connect_with(&db.url, settings).await.unwrap()
}

fn near(a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
    (a - b).abs() < Duration::seconds(5)
}

#[tokio::test]
async fn a_claim_is_stamped_and_leased_by_the_databases_clock() {
    let db = TestDb::create();
    let store = database_clock(&db).await;
    let offset = LedgerClock::offset_from(&store, Utc::now)
        .await
        .unwrap()
        .expect("a production ledger decides by the database's clock");
    assert!(offset.abs() < Duration::seconds(5), "{offset}");

    // A process four minutes behind: inside the allowance, so it may claim, but what is
    // written is the database's time.
    let behind = Utc::now() - Duration::minutes(4);
    let post = approved(&store, "alpha", "four minutes behind", behind).await;
    let claimed = match reserve(&store, &post, behind, 10, 10).await {
        Reserved::Granted(post) => post,
        Reserved::Denied(denial) => panic!("{denial:?}"),
    };
    let lease = claimed.lease_expires_at.unwrap();
    assert!(
        near(lease, Utc::now() + Duration::minutes(LEASE_MINUTES)),
        "the lease runs from the database's time: {lease}"
    );
    intent(&store, &claimed, behind).await;
    let detail = store.post_detail(post.id).await.unwrap();
    let reservation = &detail.reservations[0];
    assert!(near(reservation.created_at, Utc::now()), "{reservation:?}");
    assert!(
        near(reservation.sent_at.unwrap(), Utc::now()),
        "{reservation:?}"
    );
    assert!(
        detail.events.iter().all(|e| near(e.at, Utc::now())),
        "{:?}",
        detail.events
    );
}

/// The lease a published part renews for the next part is as long as the worker asked,
/// from the database's time, as a claim's is.
#[tokio::test]
async fn the_next_parts_lease_runs_from_the_databases_clock() {
    let db = TestDb::create();
    let store = database_clock(&db).await;
    let behind = Utc::now() - Duration::minutes(4);
    let mut thread = new_post("alpha", "a thread, four minutes behind", behind);
    thread.content.more = vec![airlock_core::Part {
        text: "and its second part".into(),
        media: vec![],
    }];
    let post = approve(&store, &create(&store, thread).await, behind).await;
    let claimed = claim(&store, &post, behind).await;
    intent(&store, &claimed, behind).await;
    let change = airlock_store::Change::PartPublished {
        generation: claimed.generation,
        part: 1,
        platform_post_id: "p-1".into(),
        permalink: None,
        sent_by: None,
        lease_until: behind + Duration::minutes(LEASE_MINUTES),
        note: "part 1 of 2 published".into(),
    };
    let next = airlock_store::Posts::change_post(
        &store,
        airlock_store::PostChange::new(post.id, DISPATCHER, behind, change),
    )
    .await
    .unwrap();
    assert_eq!(next.generation, claimed.generation + 1);
    let lease = next.lease_expires_at.unwrap();
    assert!(
        near(lease, Utc::now() + Duration::minutes(LEASE_MINUTES)),
        "the next part's lease runs from the database's time: {lease}"
    );
}

#[tokio::test]
async fn a_process_whose_clock_is_too_far_off_may_not_claim_or_send() {
    let db = TestDb::create();
    let store = database_clock(&db).await;
    let ahead = Utc::now() + CLOCK_ALLOWANCE + Duration::minutes(2);
    let post = approved(&store, "alpha", "seven minutes ahead", Utc::now()).await;
    let refused = store
        .claim_post(&post_claim(&post, ahead, Some((10, 10))))
        .await
        .unwrap_err();
    let StoreError::ClockSkew { caller, database } = &refused else {
        panic!("{refused:?}");
    };
    assert!((*caller - ahead).abs() < Duration::milliseconds(1));
    assert!(near(*database, Utc::now()));
    let message = refused.to_string();
    assert!(
        message.contains("clock") && message.contains("NTP"),
        "{message}"
    );
    // Nothing was written; a process with the right time claims it.
    let claimed = match reserve(&store, &post, Utc::now(), 10, 10).await {
        Reserved::Granted(post) => post,
        Reserved::Denied(denial) => panic!("{denial:?}"),
    };
    let refused = store
        .record_intent(&intent_request(&claimed, ahead))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::ClockSkew { .. }),
        "{refused:?}"
    );
}
