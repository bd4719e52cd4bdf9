//! The connection pool hands out only connections fit to write with.

use airlock_store::Store;
use airlock_store_tests::fixture::*;

use crate::fresh;

/// SQLite may end a transaction itself on some errors (a full disk, an I/O error); sqlx's
/// own `ROLLBACK` on drop then fails and it goes on counting the connection as inside a
/// transaction, refusing every later `BEGIN IMMEDIATE` on it. Such a connection is not
/// handed out again: every later write finds one that works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_whose_transaction_sqlite_ended_is_not_handed_out_again() {
    let (store, _dir) = fresh().await;
    let s = &store as &dyn Store;
    approved(s, "alpha", "before", mins(-5)).await;
    {
        let mut tx = store.pool().begin().await.unwrap();
        // As SQLite does on such an error: the transaction ends under sqlx's feet.
        sqlx::query("ROLLBACK").execute(&mut *tx).await.unwrap();
    }
    for n in 0..10 {
        approved(s, "alpha", &format!("after {n}"), mins(-5)).await;
    }
}
