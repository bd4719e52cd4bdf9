//! `cargo bench -p airlock-bench`: guarded publishes per second with 1 and 4 workers,
//! reserve+commit per second, and dispatch lag p50/p99 in `serve`'s loop, on an empty
//! SQLite ledger and on one with a long history (default one million posted posts),
//! beside a raw-SQL anchor: the rate of bare SQLite write transactions on the same file
//! settings. A guarded publish makes five write transactions (claim, reserve, intent,
//! outcome, verification), so the path is bound by SQLite commits when
//! `publishes/s × 5 ≈ anchor commits/s`.
//!
//! Environment: `AIRLOCK_BENCH_HISTORY` (posted posts in the long ledger, default
//! 1000000), `AIRLOCK_BENCH_POSTS` (posts per throughput run, default 2000).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock_bench::*;
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A ledger file for one measurement: empty, or a copy of the seeded history.
async fn ledger(dir: &Path, name: &str, history: Option<&Path>) -> (Arc<SqliteStore>, PathBuf) {
    let path = dir.join(format!("{name}.db"));
    if let Some(template) = history {
        std::fs::copy(template, &path).expect("copy the history ledger");
    }
    let store = SqliteStore::open(&path).await.expect("open");
    (Arc::new(store), path)
}

async fn history_template(n: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join(format!("sqlite-history-{n}.db"));
    if path.exists() {
        return path;
    }
    let partial = dir.join(format!("sqlite-history-{n}.db.partial"));
    let _ = std::fs::remove_file(&partial);
    let started = Instant::now();
    eprintln!(
        "seeding {n} posted posts into {} (once; reused later) ...",
        path.display()
    );
    {
        let store = SqliteStore::open(&partial).await.expect("open");
        seed_sqlite_history(store.pool(), n).await.expect("seed");
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(store.pool())
            .await
            .expect("checkpoint");
        store.pool().close().await;
    }
    std::fs::rename(&partial, &path).expect("rename");
    eprintln!("seeded in {:.0} s", started.elapsed().as_secs_f64());
    path
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let history_n = env_num("AIRLOCK_BENCH_HISTORY", 1_000_000);
    let posts = env_num("AIRLOCK_BENCH_POSTS", 2000) as usize;
    let history = history_template(history_n).await;
    let dir = tempfile::tempdir_in(history.parent().expect("dir")).expect("tempdir");
    println!("airlock bench, SQLite (WAL, synchronous=FULL), {posts} posts per run");
    println!(
        "{:<28} {:>14} {:>14}",
        "figure",
        "empty ledger",
        format!("{history_n} posted")
    );
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let mut figures =
        |label: &str, empty: String, long: String| rows.push((label.into(), empty, long));

    let mut publish = Vec::new();
    for workers in [1usize, 4] {
        let mut pair = Vec::new();
        for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
            let (store, _) = ledger(dir.path(), &format!("pub{workers}-{idx}"), template).await;
            let app = app(store as Arc<dyn Store>, settings());
            pair.push(measure_publishes(&app, workers, posts).await);
        }
        figures(
            &format!("publishes/s, {workers} worker(s)"),
            format!("{:.0}", pair[0]),
            format!("{:.0}", pair[1]),
        );
        publish.push(pair);
    }

    let mut reserve = Vec::new();
    for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
        let (store, _) = ledger(dir.path(), &format!("res-{idx}"), template).await;
        let app = app(store as Arc<dyn Store>, settings());
        reserve.push(measure_reservations(&app, 1, posts).await);
    }
    figures(
        "reserve+commit/s",
        format!("{:.0}", reserve[0]),
        format!("{:.0}", reserve[1]),
    );

    let mut anchor = Vec::new();
    for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
        let (store, _) = ledger(dir.path(), &format!("anchor-{idx}"), template).await;
        anchor.push(
            sqlite_commit_anchor(store.pool(), posts * 2)
                .await
                .expect("anchor"),
        );
    }
    figures(
        "raw SQLite commits/s",
        format!("{:.0}", anchor[0]),
        format!("{:.0}", anchor[1]),
    );

    let mut lag = Vec::new();
    for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
        let (store, _) = ledger(dir.path(), &format!("lag-{idx}"), template).await;
        let app = app(store as Arc<dyn Store>, settings());
        lag.push(measure_lag(&app, 2, 200, Duration::from_millis(25)).await);
    }
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    figures(
        "dispatch lag p50",
        ms(quantile(&lag[0], 0.5)),
        ms(quantile(&lag[1], 0.5)),
    );
    figures(
        "dispatch lag p99",
        ms(quantile(&lag[0], 0.99)),
        ms(quantile(&lag[1], 0.99)),
    );
    figures(
        "commits/publish vs anchor",
        format!("{:.2}", anchor[0] / publish[0][0]),
        format!("{:.2}", anchor[1] / publish[0][1]),
    );
    for (label, empty, long) in rows {
        println!("{label:<28} {empty:>14} {long:>14}");
    }
    println!(
        "a guarded publish makes 5 write transactions; 1-worker publishes/s x 5 is {:.0}% of the raw commit rate (empty), {:.0}% (history)",
        publish[0][0] * 5.0 / anchor[0] * 100.0,
        publish[0][1] * 5.0 / anchor[1] * 100.0
    );
}
