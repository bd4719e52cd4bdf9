//! One figure at a time, for profiling: guarded publishes/s on an empty ledger; with
//! `waiting` as the worker count, an idle worker's looks/s with posts waiting; with
//! `drafting`, posts drafted and approved per second as the queue grows.
//!
//! `cargo run --release -p airlock-bench --example publishes -- <sqlite|postgres> [workers|waiting|drafting] [posts] [template database]`
//!
//! PostgreSQL runs in a fresh database `airlock_bench_example` on
//! [`airlock_bench::pg_server`], left in place afterwards so its statistics can be read.
//! On SQLite, `BUSY=n` first writes a day of `n` live reservations on the channel, as the
//! bench's busy-day figure does.

use std::sync::Arc;

use airlock_bench::{app, approved_posts, measure_waiting, pg_database, publish_all, settings};
use airlock_store::Store;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let backend = args.next().unwrap_or_else(|| "sqlite".into());
    let mode = args.next().unwrap_or_else(|| "4".into());
    let posts: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    // PostgreSQL only: a database to start from (the bench's history ledger, say).
    let template = args.next();
    let mut sqlite = None;
    let store: Arc<dyn Store> = match backend.as_str() {
        "postgres" => pg_database("airlock_bench_example", template.as_deref()).await,
        _ => {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.keep().join("example.db");
            let store = Arc::new(
                airlock_store_sqlite::SqliteStore::open(&path)
                    .await
                    .expect("open"),
            );
            if let Some(n) = std::env::var("BUSY").ok().and_then(|n| n.parse().ok()) {
                airlock_bench::seed_busy_day_sqlite(store.pool(), n)
                    .await
                    .expect("seed a busy day");
            }
            sqlite = Some(store.clone());
            store
        }
    };
    let app = app(store, settings());
    if mode == "waiting" {
        let [empty, one, later, paused] = measure_waiting(&app, posts, 1000).await;
        println!(
            "{backend}: idle looks/s {empty:.0} empty, {one:.0} with 1 scheduled later, \
             {later:.0} with {posts}, {paused:.0} with them paused"
        );
        return;
    }
    if mode == "drafting" {
        // Drafting and approving must not slow as the queue grows: each thousand's rate.
        for batch in 0..posts / 1000 {
            let start = std::time::Instant::now();
            approved_posts(&app, 1000, None).await;
            let rate = 1000.0 / start.elapsed().as_secs_f64();
            println!(
                "{backend}: {rate:.0} posts/s drafted and approved with {} queued",
                batch * 1000
            );
        }
        return;
    }
    let workers: usize = mode.parse().expect("a number of workers, or `waiting`");
    approved_posts(&app, posts, None).await;
    eprintln!("approved {posts} posts; publishing");
    let before = sqlite.as_ref().map(|s| s.commits());
    let cpu_before = cpu_ms();
    let rate = publish_all(&app, workers, posts).await;
    let cpu_after = cpu_ms();
    println!("{backend}: {rate:.0} publishes/s at {workers} worker(s), {posts} posts");
    // CPU time is steadier than throughput on a noisy machine: compare changes by it.
    println!(
        "CPU ms per publish: this process {:.3}, postgres processes {:.3}",
        (cpu_after.0 - cpu_before.0) / posts as f64,
        (cpu_after.1 - cpu_before.1) / posts as f64
    );
    if let (Some(store), Some(before)) = (sqlite, before) {
        app.drain().await;
        let commits = store.commits() - before;
        println!(
            "write commits per publish: {:.2}",
            commits as f64 / posts as f64
        );
    }
}

/// CPU milliseconds (user + system) used so far by this process and by every process
/// named `postgres` on the machine, from `/proc` (Linux only; zeros elsewhere).
fn cpu_ms() -> (f64, f64) {
    fn stat_ms(stat: &str) -> Option<(String, f64)> {
        let (head, tail) = stat.rsplit_once(')')?;
        let name = head.split_once('(')?.1.to_owned();
        let fields: Vec<&str> = tail.split_whitespace().collect();
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        // Linux reports in clock ticks of 1/100 s on every architecture it runs here.
        Some((name, ticks * 10.0))
    }
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| stat_ms(&s))
        .map_or(0.0, |(_, ms)| ms);
    let mut postgres = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat"))
            && let Some((name, ms)) = stat_ms(&stat)
            && name == "postgres"
        {
            postgres += ms;
        }
    }
    (own, postgres)
}
