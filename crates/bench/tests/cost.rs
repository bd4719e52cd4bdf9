//! What one guarded publish costs the store, counted (not timed): a regression here is
//! a commit or a round trip added to every publish.

use std::sync::Arc;

use airlock_bench::measure_cost;
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

/// A publish to a channel without a prepare step (once the process knows the channel's
/// account): the claim with its reservation and intent, the outcome, the read-back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_publish_commits_three_write_transactions_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let cost = measure_cost(Arc::new(store) as Arc<dyn Store>, 20).await;
    assert_eq!(cost.commits, 3.0, "{cost:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_publish_commits_three_write_transactions_on_postgresql() {
    let db = airlock_testkit::pg::TestDb::create();
    let store = airlock_store_postgres::PgStore::connect(&db.url)
        .await
        .unwrap();
    let cost = measure_cost(Arc::new(store) as Arc<dyn Store>, 10).await;
    assert_eq!(cost.commits, 3.0, "{cost:?}");
}
