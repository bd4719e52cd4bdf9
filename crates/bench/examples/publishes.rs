//! One figure at a time, for profiling: guarded publishes/s on an empty ledger, or with
//! `waiting` as the worker count, an idle worker's looks/s with posts waiting.
//!
//! `cargo run --release -p airlock-bench --example publishes -- <sqlite|postgres> [workers|waiting] [posts]`
//!
//! PostgreSQL runs in a fresh database `airlock_bench_example` on
//! [`airlock_bench::pg_server`], left in place afterwards so its statistics can be read.

use std::sync::Arc;

use airlock_bench::{app, approved_posts, measure_waiting, pg_database, publish_all, settings};
use airlock_store::Store;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let backend = args.next().unwrap_or_else(|| "sqlite".into());
    let mode = args.next().unwrap_or_else(|| "4".into());
    let posts: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let mut sqlite = None;
    let store: Arc<dyn Store> = match backend.as_str() {
        "postgres" => pg_database("airlock_bench_example", None).await,
        _ => {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.keep().join("example.db");
            let store = Arc::new(
                airlock_store_sqlite::SqliteStore::open(&path)
                    .await
                    .expect("open"),
            );
            sqlite = Some(store.clone());
            store
        }
    };
    let app = app(store, settings());
    if mode == "waiting" {
        let [empty, later, paused] = measure_waiting(&app, posts, 1000).await;
        println!(
            "{backend}: idle looks/s {empty:.0} empty, {later:.0} with {posts} scheduled later, \
             {paused:.0} with them paused"
        );
        return;
    }
    let workers: usize = mode.parse().expect("a number of workers, or `waiting`");
    approved_posts(&app, posts, None).await;
    let before = sqlite.as_ref().map(|s| s.commits());
    let rate = publish_all(&app, workers, posts).await;
    println!("{backend}: {rate:.0} publishes/s at {workers} worker(s), {posts} posts");
    if let (Some(store), Some(before)) = (sqlite, before) {
        app.drain().await;
        let commits = store.commits() - before;
        println!(
            "write commits per publish: {:.2}",
            commits as f64 / posts as f64
        );
    }
}
