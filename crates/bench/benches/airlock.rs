//! `cargo bench -p airlock-bench`: guarded publishes per second with 1, 2, 4 and 8
//! workers, reserve+commit per second, dispatch lag p50/p99 in `serve`'s loop, and the
//! statements and write commits one publish costs (measured), an idle worker's looks at
//! the queue with [`WAITING`] posts waiting against an empty one, on an empty SQLite ledger
//! and on one with a long history (default one million posted posts), beside a raw-SQL
//! anchor: the rate of bare SQLite write transactions on the same file settings. The
//! path is bound by SQLite commits when `publishes/s × commits per publish ≈ anchor
//! commits/s`; the commits a publish took at each worker count (claims and outcomes
//! made at once share one) are counted by the store.
//!
//! With PostgreSQL reachable (`AIRLOCK_BENCH_PG`, default
//! `postgres://postgres@127.0.0.1:5432`) the same figures follow for PostgreSQL at 1, 2,
//! 4 and 8 workers, plus the dispatch lag when another process approves (LISTEN/NOTIFY),
//! and then `../shared/bench/anchors.sh` runs on the same server so airlock's figures
//! print as ratios of the raw claim and reservation transactions.
//!
//! Environment: `AIRLOCK_BENCH_HISTORY` (posted posts in the long ledger, default
//! 1000000), `AIRLOCK_BENCH_POSTS` (posts per throughput run, default 4000: half as many
//! is a few dozen rounds of the workers' batches, and its figure spread by 15%),
//! `AIRLOCK_BENCH_ANCHORS` (path of anchors.sh, default `../shared/bench/anchors.sh`
//! beside the repository), `AIRLOCK_BENCH_ONLY` (`sqlite` or `postgres`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock_bench::*;
use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;

/// Live reservations of the busy day measured beside the empty ledger.
const BUSY_DAY: u64 = 10_000;

/// Approved posts waiting (scheduled later, then on a paused channel) while idle workers
/// look at the queue.
const WAITING: usize = 9_000;

/// Looks per second on an empty queue, with one post waiting and with [`WAITING`]: the
/// work of a look must not grow with the posts waiting, so [`WAITING`] against one.
fn print_waiting(waiting: &[f64; 4]) {
    let [empty, one, later, paused] = waiting;
    println!(
        "idle looks/s: {empty:.0} empty, {one:.0} with 1 scheduled later, {later:.0} with \
         {WAITING} ({:.2}), {paused:.0} with them paused ({:.2}); target >= 0.9",
        later / one,
        paused / one
    );
}

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
        // Flushed now, so its writeback does not compete with the measured fsyncs.
        std::fs::File::open(&path)
            .and_then(|file| file.sync_all())
            .expect("sync the copied ledger");
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
    let posts = env_num("AIRLOCK_BENCH_POSTS", 4000) as usize;
    let only = std::env::var("AIRLOCK_BENCH_ONLY").unwrap_or_default();
    if only != "postgres" {
        sqlite(history_n, posts).await;
    }
    if only != "sqlite" {
        postgres::run(history_n, posts).await;
    }
}

async fn sqlite(history_n: u64, posts: usize) {
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
    let mut grouped = Vec::new();
    for workers in [1usize, 2, 4, 8] {
        let mut pair = Vec::new();
        let mut commits = Vec::new();
        for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
            let (store, _) = ledger(dir.path(), &format!("pub{workers}-{idx}"), template).await;
            let app = app(store.clone() as Arc<dyn Store>, settings());
            approved_posts(&app, posts, None).await;
            let before = store.commits();
            pair.push(publish_all(&app, workers, posts).await);
            app.drain().await;
            commits.push((store.commits() - before) as f64 / posts as f64);
        }
        figures(
            &format!("publishes/s, {workers} worker(s)"),
            format!("{:.0}", pair[0]),
            format!("{:.0}", pair[1]),
        );
        publish.push(pair);
        grouped.push((workers, commits));
    }
    for (workers, commits) in grouped {
        figures(
            &format!("commits/publish, {workers} worker(s)"),
            format!("{:.2}", commits[0]),
            format!("{:.2}", commits[1]),
        );
    }

    // The busy day is compared with an empty ledger measured beside it, alternately,
    // so the disk's state after the copies above weighs on both alike.
    let (mut quiet, mut busy) = (0f64, 0f64);
    for round in 0..2 {
        let (store, _) = ledger(dir.path(), &format!("quiet-{round}"), None).await;
        let quiet_app = app(store as Arc<dyn Store>, settings());
        quiet = quiet.max(measure_publishes(&quiet_app, 4, posts).await);
        let (store, _) = ledger(dir.path(), &format!("busy-{round}"), None).await;
        seed_busy_day_sqlite(store.pool(), BUSY_DAY)
            .await
            .expect("seed a busy day");
        let busy_app = app(store as Arc<dyn Store>, settings());
        busy = busy.max(measure_publishes(&busy_app, 4, posts).await);
    }
    figures(
        &format!("publishes/s, 4, {BUSY_DAY} today"),
        format!("{busy:.0} (beside {quiet:.0} empty)"),
        "-".into(),
    );

    let mut reserve = Vec::new();
    for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
        let (store, _) = ledger(dir.path(), &format!("res-{idx}"), template).await;
        let store = store as Arc<dyn Store>;
        let app = app(store.clone(), settings());
        reserve.push(measure_reservations(&app, store, 1, posts).await);
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
    let mut cost = Vec::new();
    for (idx, template) in [None, Some(history.as_path())].into_iter().enumerate() {
        let (store, _) = ledger(dir.path(), &format!("cost-{idx}"), template).await;
        cost.push(measure_cost(store as Arc<dyn Store>, 200).await);
    }
    figures(
        "driver calls per publish",
        format!("{:.1}", cost[0].calls),
        format!("{:.1}", cost[1].calls),
    );
    figures(
        "statements per publish",
        format!("{:.1}", cost[0].statements),
        format!("{:.1}", cost[1].statements),
    );
    figures(
        "write commits per publish",
        format!("{:.2}", cost[0].commits),
        format!("{:.2}", cost[1].commits),
    );
    let waiting = {
        let (store, _) = ledger(dir.path(), "waiting", None).await;
        let app = app(store as Arc<dyn Store>, settings());
        measure_waiting(&app, WAITING, 1000).await
    };
    for (label, empty, long) in rows {
        println!("{label:<28} {empty:>14} {long:>14}");
    }
    print_waiting(&waiting);
    let best = |idx: usize| publish.iter().map(|pair| pair[idx]).fold(0.0, f64::max);
    println!(
        "best publishes/s / raw commits/s: {:.2} (empty), {:.2} (history); target >= 0.4",
        best(0) / anchor[0],
        best(1) / anchor[1]
    );
    println!(
        "history / empty, best publishes/s: {:.2}; target >= 0.9",
        best(1) / best(0)
    );
    println!(
        "{BUSY_DAY} live today / empty, publishes/s at 4 workers: {:.2}; target >= 0.9",
        busy / quiet
    );
}

mod postgres {
    //! The PostgreSQL half: fresh databases per figure (the long ledger copied from a
    //! seeded template database), then the raw-SQL anchors on the same server.

    use std::process::Command;
    use std::sync::Arc;
    use std::time::Duration;

    use airlock_bench::*;
    use airlock_store::Store;
    use airlock_store_postgres::PgStore;

    use super::BUSY_DAY;

    async fn history_template(n: u64) -> String {
        let name = format!("airlock_bench_history_{n}");
        let exists = async {
            let pool = sqlx::PgPool::connect(&format!("{}/postgres", pg_server())).await?;
            let found: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
                    .bind(&name)
                    .fetch_optional(&pool)
                    .await?;
            pool.close().await;
            Ok::<_, sqlx::Error>(found.is_some())
        };
        if exists.await.expect("list databases") {
            return name;
        }
        let partial = format!("{name}_partial");
        eprintln!(
            "seeding {n} posted posts into PostgreSQL database {name} (once; reused later) ..."
        );
        let started = std::time::Instant::now();
        let store = pg_database(&partial, None).await;
        seed_pg_history(store.pool(), n).await.expect("seed");
        store.pool().close().await;
        drop(store);
        pg_admin(format!("ALTER DATABASE {partial} RENAME TO {name}"))
            .await
            .expect("rename");
        eprintln!("seeded in {:.0} s", started.elapsed().as_secs_f64());
        name
    }

    fn anchors() -> Vec<(String, usize, f64)> {
        let script = std::env::var("AIRLOCK_BENCH_ANCHORS").unwrap_or_else(|_| {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/bench/anchors.sh"
            )
            .into()
        });
        if !std::path::Path::new(&script).exists() {
            eprintln!("anchors: {script} not found; set AIRLOCK_BENCH_ANCHORS to its path");
            return Vec::new();
        }
        let out = Command::new("bash")
            .arg(&script)
            .arg(pg_server())
            .env(
                "DUR",
                std::env::var("AIRLOCK_BENCH_ANCHOR_SECONDS").unwrap_or_else(|_| "5".into()),
            )
            .env("CLIENTS", "1 2 4 8")
            .output()
            .expect("run anchors.sh");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                Some((
                    parts.next()?.to_owned(),
                    parts.next()?.parse().ok()?,
                    parts.next()?.parse().ok()?,
                ))
            })
            .collect()
    }

    pub async fn run(history_n: u64, posts: usize) {
        if sqlx::PgPool::connect(&format!("{}/postgres", pg_server()))
            .await
            .is_err()
        {
            println!(
                "PostgreSQL is not reachable at {}: PostgreSQL figures skipped (scripts/test.sh starts it)",
                pg_server()
            );
            return;
        }
        let template = history_template(history_n).await;
        println!();
        println!("airlock bench, PostgreSQL, {posts} posts per run");
        println!(
            "{:<34} {:>14} {:>14}",
            "figure",
            "empty ledger",
            format!("{history_n} posted")
        );
        let mut publish_at_4 = [0.0f64; 2];
        let mut best = [0.0f64; 2];
        let mut reserve_1 = [0.0f64; 2];
        for workers in [1usize, 2, 4, 8] {
            let mut pair = [0.0f64; 2];
            for (idx, t) in [None, Some(template.as_str())].into_iter().enumerate() {
                let store = pg_database("airlock_bench_run", t).await;
                let app = app(store.clone() as Arc<dyn Store>, settings());
                pair[idx] = measure_publishes(&app, workers, posts).await;
                store.pool().close().await;
            }
            if workers == 4 {
                publish_at_4 = pair;
            }
            best = [best[0].max(pair[0]), best[1].max(pair[1])];
            println!(
                "{:<34} {:>14.0} {:>14.0}",
                format!("publishes/s, {workers} worker(s)"),
                pair[0],
                pair[1]
            );
        }
        let busy = {
            let store = pg_database("airlock_bench_run", None).await;
            seed_busy_day_pg(store.pool(), BUSY_DAY)
                .await
                .expect("seed a busy day");
            let app = app(store.clone() as Arc<dyn Store>, settings());
            let rate = measure_publishes(&app, 4, posts).await;
            store.pool().close().await;
            rate
        };
        println!(
            "{:<34} {:>14.0} {:>14}",
            format!("publishes/s, 4, {BUSY_DAY} today"),
            busy,
            "-"
        );
        println!(
            "{:<34} {:>14.2}",
            format!("{BUSY_DAY} today / empty, 4 workers"),
            busy / publish_at_4[0]
        );
        for workers in [1usize, 4] {
            let mut pair = [0.0f64; 2];
            for (idx, t) in [None, Some(template.as_str())].into_iter().enumerate() {
                let store = pg_database("airlock_bench_run", t).await;
                let app = app(store.clone() as Arc<dyn Store>, settings());
                pair[idx] = measure_reservations(&app, store.clone(), workers, posts).await;
                store.pool().close().await;
            }
            if workers == 1 {
                reserve_1 = pair;
            }
            println!(
                "{:<34} {:>14.0} {:>14.0}",
                format!("reserve+commit/s, {workers} worker(s)"),
                pair[0],
                pair[1]
            );
        }
        println!(
            "{:<34} {:>14.2}",
            "history / empty, best publishes/s",
            best[1] / best[0]
        );
        let mut cost = Vec::new();
        for t in [None, Some(template.as_str())] {
            let store = pg_database("airlock_bench_run", t).await;
            cost.push(measure_cost(store.clone() as Arc<dyn Store>, 200).await);
            store.pool().close().await;
        }
        println!(
            "{:<34} {:>14.1} {:>14.1}",
            "round trips per publish", cost[0].calls, cost[1].calls
        );
        println!(
            "{:<34} {:>14.1} {:>14.1}",
            "statements per publish", cost[0].statements, cost[1].statements
        );
        println!(
            "{:<34} {:>14.2} {:>14.2}",
            "write commits per publish", cost[0].commits, cost[1].commits
        );
        let waiting = {
            let store = pg_database("airlock_bench_run", None).await;
            let app = app(store.clone() as Arc<dyn Store>, settings());
            let rates = measure_waiting(&app, super::WAITING, 1000).await;
            store.pool().close().await;
            rates
        };
        super::print_waiting(&waiting);
        let mut lags = Vec::new();
        for t in [None, Some(template.as_str())] {
            let store = pg_database("airlock_bench_run", t).await;
            let dispatching = app(store.clone() as Arc<dyn Store>, settings());
            let other = Arc::new(
                PgStore::connect(&format!("{}/airlock_bench_run", pg_server()))
                    .await
                    .expect("connect"),
            );
            let approving = app(other.clone() as Arc<dyn Store>, settings());
            lags.push(
                measure_wakeup_lag(&dispatching, &approving, 100, Duration::from_millis(30)).await,
            );
            other.pool().close().await;
            store.pool().close().await;
        }
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        for q in [0.5, 0.99] {
            println!(
                "{:<34} {:>14} {:>14}",
                format!("lag after another process approves p{}", (q * 100.0) as u32),
                ms(quantile(&lags[0], q)),
                ms(quantile(&lags[1], q))
            );
        }
        pg_admin("DROP DATABASE IF EXISTS airlock_bench_run WITH (FORCE)".into())
            .await
            .expect("drop");

        let anchors = anchors();
        if anchors.is_empty() {
            return;
        }
        println!();
        println!(
            "raw-SQL anchors on the same server (shared/bench/anchors.sh): scenario clients tps"
        );
        for (scenario, clients, tps) in &anchors {
            println!("  {scenario:<8} {clients:>2} {tps:>10.0}");
        }
        let find = |scenario: &str, clients: usize| {
            anchors
                .iter()
                .find(|(s, c, _)| s == scenario && *c == clients)
                .map(|(_, _, tps)| *tps)
        };
        if let Some(claim4) = find("claim", 4) {
            println!(
                "guarded publish at 4 workers / raw claim at 4 clients: {:.2} (empty), {:.2} (history); target >= 0.5",
                publish_at_4[0] / claim4,
                publish_at_4[1] / claim4
            );
        }
        if let (Some(reserve), Some(commit)) = (find("reserve", 1), find("commit", 1)) {
            // One reserve+commit pair is one reserve and one commit transaction.
            let pair_rate = 1.0 / (1.0 / reserve + 1.0 / commit);
            println!(
                "reserve+commit at 1 worker / raw reserve+commit pair at 1 client: {:.2} (empty), {:.2} (history)",
                reserve_1[0] / pair_rate,
                reserve_1[1] / pair_rate
            );
        }
    }
}
