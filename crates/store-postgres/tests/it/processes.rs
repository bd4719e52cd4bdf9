//! Several pools on one database, each a stand-in for a separate airlock process:
//! migrations applied once, every post claimed once, one daily limit never exceeded.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_core::{PostId, PostStatus};
use airlock_store::{Change, PostChange, PostClaim, PostClaimed, Reads, Store, StoreError};
use airlock_store_postgres::PgStore;
use airlock_store_tests::fixture::*;

use crate::support::{TestDb, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_starting_together_migrate_a_fresh_database_once() {
    let db = TestDb::create();
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let url = db.url.clone();
        starts.spawn(async move {
            PgStore::connect(&url)
                .await
                .map(|store| store.pool().size())
        });
    }
    while let Some(started) = starts.join_next().await {
        started.unwrap().expect("every process starts");
    }
    let mut conn = db.conn().await;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let embedded = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .is_ok_and(|f| f.path().extension().is_some_and(|e| e == "sql"))
        })
        .count();
    assert_eq!(applied, embedded as i64, "each migration applied once");
}

/// One dispatcher process: reads what is due, claims each post with its quota, then
/// publishes it — or, over quota, defers it without claiming — until nothing is due.
async fn dispatch(
    store: Arc<dyn Store>,
    worker: String,
    daily: u32,
    start: Arc<tokio::sync::Barrier>,
) -> Vec<(PostId, bool)> {
    let mut done = Vec::new();
    start.wait().await;
    let channels = [ch("alpha"), ch("beta")];
    loop {
        let due = store
            .due_posts(&channels, &[], t0(), 16)
            .await
            .expect("due posts");
        if due.is_empty() {
            return done;
        }
        for read in due {
            let claim = PostClaim {
                worker: worker.clone(),
                actor: format!("dispatcher:{worker}"),
                ..post_claim(&read, t0(), Some((1000, daily)))
            };
            match store.claim_post(&claim).await.expect("claim") {
                PostClaimed::Claimed { post, .. } => {
                    assert_eq!(post.lease_owner.as_deref(), Some(worker.as_str()));
                    intent(store.as_ref(), &post, t0()).await;
                    let mut change = outcome(&post, PostStatus::Posted, t0());
                    change.actor = format!("dispatcher:{worker}");
                    store.change_post(change).await.expect("posted");
                    done.push((post.id, true));
                }
                PostClaimed::OverQuota(denial) => {
                    let defer = Change::Deferred {
                        version: read.version,
                        until: denial.next_free_at,
                        note: "over quota".into(),
                    };
                    let defer = PostChange::new(read.id, worker.clone(), t0(), defer);
                    match store.change_post(defer).await {
                        Ok(_) => done.push((read.id, false)),
                        // Another process deferred or took it first.
                        Err(StoreError::Conflict(_)) => {}
                        Err(e) => panic!("defer: {e}"),
                    }
                }
                // Another process took it first.
                PostClaimed::Gone(_) => {}
                PostClaimed::Paused { .. } => panic!("nothing is paused"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_pools_claim_each_post_once_and_share_one_daily_limit() {
    share_one_daily_limit(4, 15, 4).await;
}

/// A limit far above the window's slots: the first claims prove their room from
/// `quota_hours` while others are in flight, the last ones from the rows, alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_in_flight_together_never_pass_a_large_daily_limit() {
    let (_db, store) = share_one_daily_limit(8, 100, 80).await;
    // The shards of claims that held a slot (the others write 17 to 32).
    let slots_used: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT shard) FROM quota_hours \
         WHERE shard BETWEEN 1 AND 16 OR shard BETWEEN 33 AND 48",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(slots_used > 0, "no claim held a window slot");
}

/// `dispatchers` processes, each with its own pool, publish `per_channel` approved posts
/// on each of two channels with a daily limit of `daily`; the ledger is left to look at.
async fn share_one_daily_limit(
    dispatchers: usize,
    per_channel: usize,
    daily: u32,
) -> (TestDb, PgStore) {
    let db = TestDb::create();
    let setup = store(&db).await;
    let mut posts = Vec::new();
    for idx in 0..per_channel {
        for channel in ["alpha", "beta"] {
            posts.push(
                approved(
                    &setup,
                    channel,
                    &format!("{channel} {idx}"),
                    mins(-(idx as i64)),
                )
                .await,
            );
        }
    }

    let start = Arc::new(tokio::sync::Barrier::new(dispatchers));
    let mut processes = tokio::task::JoinSet::new();
    for idx in 0..dispatchers {
        let store: Arc<dyn Store> = Arc::new(store(&db).await);
        processes.spawn(dispatch(
            store,
            format!("process-{idx}"),
            daily,
            start.clone(),
        ));
    }
    let mut handled: BTreeMap<PostId, usize> = BTreeMap::new();
    let mut published = 0;
    while let Some(done) = processes.join_next().await {
        for (id, posted) in done.expect("dispatcher process") {
            *handled.entry(id).or_default() += 1;
            published += usize::from(posted);
        }
    }
    assert_eq!(handled.len(), posts.len(), "every post was handled");
    assert!(
        handled.values().all(|n| *n == 1),
        "a post was handled twice: {handled:?}"
    );
    assert_eq!(
        published,
        2 * daily as usize,
        "each channel published exactly its daily limit"
    );

    for channel in ["alpha", "beta"] {
        let posted = setup
            .list_posts(&airlock_store::PostFilter {
                status: Some(PostStatus::Posted),
                channel: Some(ch(channel)),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(posted.len(), daily as usize, "{channel}");
    }
    // A published post was claimed once; a deferred one never (over quota, nothing is
    // claimed).
    for post in &posts {
        let claims = events(&setup, post.id)
            .await
            .iter()
            .filter(|e| e.to == PostStatus::Posting)
            .count();
        let posted = setup.get_post(post.id).await.unwrap().status == PostStatus::Posted;
        assert_eq!(
            claims,
            usize::from(posted),
            "post {} was claimed {claims} times",
            post.id
        );
    }
    assert!(setup.check_invariants(mins(1)).await.unwrap().is_empty());
    (db, setup)
}
