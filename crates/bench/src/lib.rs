//! Building blocks of airlock's benchmarks (`cargo bench -p airlock-bench`).
//!
//! - [`NoopPlatform`]: a channel that answers instantly, so what is measured is airlock's
//!   guarded path and its store, not a network.
//! - [`seed_sqlite_history`]: a long history (posted posts with their events, intents
//!   and committed reservations) written with bulk SQL through the ledger's own
//!   triggers, so the history looks like one airlock made.
//! - [`measure_publishes`], [`measure_reservations`], [`measure_lag`]: the figures.
//!
//! This crate is the one place outside `store-*` with SQL: bulk seeding and raw-SQL
//! anchors are what a benchmark compares airlock against.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration as StdDuration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::publish::PublishResult;
use airlock_app::{App, AppSettings, ChannelSettings, Principal};
use airlock_core::{ChannelKind, ChannelName, Outcome, PostId, Published};
use airlock_platforms::{Account, Platform, Prepared, PublishRequest, StepError, Verification};
use airlock_store::{Change, PostChange, PostClaim, PostClaimed, QuotaClaim, Store};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

/// A channel that publishes instantly and always verifies.
#[derive(Debug, Default)]
pub struct NoopPlatform {
    next: AtomicU64,
}

#[async_trait]
impl Platform for NoopPlatform {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Sandbox
    }

    fn prepares(&self) -> bool {
        false
    }

    async fn account(&self) -> Result<Option<Account>, StepError> {
        Ok(None)
    }

    async fn publish(&self, _req: &PublishRequest, _prepared: &Prepared) -> Outcome {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        Outcome::Published(Published {
            platform_post_id: Some(format!("noop-{id}")),
            permalink: None,
            pause: None,
            existing: None,
        })
    }

    async fn verify(&self, _platform_post_id: &str) -> Verification {
        Verification::Verified { permalink: None }
    }
}

/// The bench channel's name.
pub const CHANNEL: &str = "bench";

/// Settings with one no-op channel and limits that never bind.
pub fn settings() -> AppSettings {
    let tz: Tz = "Asia/Tokyo".parse().expect("a known zone");
    let mut settings = AppSettings::new(tz).with_channel(ChannelSettings::new(
        ChannelName::parse(CHANNEL).expect("a valid name"),
        ChannelKind::Sandbox,
        u32::MAX,
        tz,
    ));
    settings.window.limit = u32::MAX;
    settings
}

/// An app over `store` with the no-op channel.
pub fn app(store: Arc<dyn Store>, settings: AppSettings) -> App {
    let mut platforms: BTreeMap<ChannelName, Arc<dyn Platform>> = BTreeMap::new();
    platforms.insert(
        ChannelName::parse(CHANNEL).expect("a valid name"),
        Arc::new(NoopPlatform::default()),
    );
    App::new(store, settings, platforms, App::system_clock())
}

/// Creates and approves `n` posts due at `at` (or now), returning their ids. Each text
/// is new to the process, so later calls draft no duplicates of earlier ones.
pub async fn approved_posts(app: &App, n: usize, at: Option<DateTime<Utc>>) -> Vec<PostId> {
    static DRAFTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let me = Principal::cli();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let i = DRAFTED.fetch_add(1, Ordering::Relaxed);
        let input = DraftInput {
            channel: CHANNEL.into(),
            text: format!("bench post {i}: the garden cats found the sunny spot"),
            scheduled_at: at.map(|t| t.to_rfc3339()),
            ..DraftInput::default()
        };
        let post = app
            .create_post(&me, input, None, DraftOrigin::default())
            .await
            .expect("create")
            .post;
        app.approve(&me, post.id).await.expect("approve");
        ids.push(post.id);
    }
    ids
}

/// Guarded publishes per second with `workers` concurrent dispatchers over `n` posts
/// approved for the run.
pub async fn measure_publishes(app: &App, workers: usize, n: usize) -> f64 {
    approved_posts(app, n, None).await;
    publish_all(app, workers, n).await
}

/// How long the workers of [`publish_all`] go on looking while posts are due and none
/// of them publishes one, before the run fails.
const STUCK: std::time::Duration = std::time::Duration::from_secs(30);

/// Publishes the `n` due posts with `workers` workers taking batches as `serve`'s do:
/// publishes per second.
pub async fn publish_all(app: &App, workers: usize, n: usize) -> f64 {
    let start = Instant::now();
    let published = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        let app = app.clone();
        let published = published.clone();
        tasks.spawn(async move {
            let (mut seen, mut since) = (0, Instant::now());
            loop {
                let batch = app
                    .publish_batch(None, airlock_dispatcher::BATCH)
                    .await
                    .expect("publish");
                if !batch.is_empty() {
                    let n = batch.len();
                    for run in batch {
                        let report = run.expect("publish");
                        assert_eq!(report.result, PublishResult::Posted, "{report:?}");
                    }
                    published.fetch_add(n, Ordering::SeqCst);
                    continue;
                }
                // Every candidate was taken by other workers: like the dispatcher's
                // worker, look again while posts are due, rather than leave the rest
                // of the run to the others.
                let next = app.next_due_at().await.expect("next due time");
                if next.is_none_or(|at| at > app.now()) {
                    break;
                }
                let now_published = published.load(Ordering::SeqCst);
                if now_published != seen {
                    (seen, since) = (now_published, Instant::now());
                }
                assert!(
                    since.elapsed() < STUCK,
                    "posts are due, and no worker published one for {STUCK:?}"
                );
            }
        });
    }
    while let Some(worker) = tasks.join_next().await {
        worker.expect("worker");
    }
    assert_eq!(
        published.load(Ordering::SeqCst),
        n,
        "every post published once"
    );
    n as f64 / start.elapsed().as_secs_f64()
}

/// Reserve-then-commit pairs per second (`workers` concurrent): each post claimed with
/// its reservation in one transaction (the quota decision serialized across channels),
/// then its reservation committed with the outcome — the two quota transactions of a
/// publish, without the platform, the intent or verification.
pub async fn measure_reservations(
    app: &App,
    store: Arc<dyn Store>,
    workers: usize,
    n: usize,
) -> f64 {
    let ids = approved_posts(app, n, None).await;
    let mut posts = Vec::with_capacity(n);
    for id in ids {
        posts.push(store.get_post(id).await.expect("read"));
    }
    let settings = app.settings().clone();
    let chunks: Vec<Vec<_>> = posts
        .chunks(n.div_ceil(workers))
        .map(<[_]>::to_vec)
        .collect();
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in chunks {
        let store = store.clone();
        let settings = settings.clone();
        tasks.spawn(async move {
            let channel = &settings.channels[&ChannelName::parse(CHANNEL).expect("valid")];
            for read in chunk {
                let now = Utc::now();
                let claim = PostClaim {
                    id: read.id,
                    version: read.version,
                    allow_test: false,
                    worker: "bench".into(),
                    actor: "dispatcher:bench".into(),
                    now,
                    lease_until: now + Duration::hours(1),
                    quota: Some(QuotaClaim {
                        window: settings.window,
                        daily: channel.daily(),
                        budget: None,
                    }),
                    intent: None,
                };
                let post = match store.claim_post(&claim).await.expect("claim") {
                    PostClaimed::Claimed { post, .. } => post,
                    other => panic!("could not claim: {other:?}"),
                };
                // Committed with the publish it stands for.
                let commit = Change::Published {
                    part: 1,
                    generation: post.generation,
                    posted_at: Utc::now(),
                    platform_post_id: Some(format!("bench-{}", post.id)),
                    permalink: None,
                    sent_by: None,
                    note: "published".into(),
                    flag: None,
                    pause: None,
                };
                let commit = PostChange::new(post.id, "bench", Utc::now(), commit);
                store.change_post(commit).await.expect("commit");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("worker");
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// What one guarded publish costs the store, measured: calls to the driver (on
/// PostgreSQL each one round trip, `BEGIN` travelling with the first; on SQLite each a
/// hand-off to the connection's thread and back), the SQL statements they carry, and
/// write transactions committed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PublishCost {
    /// Driver calls per publish.
    pub calls: f64,
    /// SQL statements per publish.
    pub statements: f64,
    /// Write commits per publish.
    pub commits: f64,
}

/// Publishes `n` posts over `store` one after another (each read back before the next,
/// so nothing overlaps), counting the statements sqlx sends and the store's write
/// transactions. The first publish of a process checks the channel's account, so its
/// intent is not folded into its claim; it runs before counting starts.
pub async fn measure_cost(store: Arc<dyn Store>, n: usize) -> PublishCost {
    let metered = Arc::new(airlock_store_tests::metered::Metered::new(store));
    let app = app(metered.clone() as Arc<dyn Store>, settings());
    approved_posts(&app, n + 1, None).await;
    app.publish_next(None).await.expect("publish").expect("due");
    app.drain().await;
    let statements = StatementCounter::installed();
    statements.reset();
    metered.take();
    for _ in 0..n {
        app.publish_next(None).await.expect("publish").expect("due");
        app.drain().await;
    }
    let (calls, sent) = statements.total();
    PublishCost {
        calls: calls as f64 / n as f64,
        statements: sent as f64 / n as f64,
        commits: metered.take().writes as f64 / n as f64,
    }
}

/// Counts the calls sqlx makes (its `sqlx::query` events) and the statements they carry.
#[derive(Debug, Clone, Default)]
struct StatementCounter {
    calls: Arc<std::sync::atomic::AtomicU64>,
    statements: Arc<std::sync::atomic::AtomicU64>,
}

impl StatementCounter {
    /// The process's counter, installed as the global subscriber on first use: a
    /// publish's statements run on the runtime's worker threads.
    fn installed() -> StatementCounter {
        static COUNTER: std::sync::OnceLock<StatementCounter> = std::sync::OnceLock::new();
        COUNTER
            .get_or_init(|| {
                let counter = StatementCounter::default();
                let subscriber = tracing_subscriber::registry().with(
                    counter.clone().with_filter(
                        tracing_subscriber::filter::Targets::new()
                            .with_target("sqlx::query", Level::DEBUG),
                    ),
                );
                tracing::subscriber::set_global_default(subscriber)
                    .expect("no other global subscriber in a bench");
                counter
            })
            .clone()
    }

    fn reset(&self) {
        self.calls.store(0, Ordering::SeqCst);
        self.statements.store(0, Ordering::SeqCst);
    }

    /// Calls and statements since the last reset.
    fn total(&self) -> (u64, u64) {
        (
            self.calls.load(Ordering::SeqCst),
            self.statements.load(Ordering::SeqCst),
        )
    }
}

/// The SQL of a `sqlx::query` event: its `db.statement`, or its `summary` when the whole
/// text fits there.
#[derive(Default)]
struct Sql {
    summary: String,
    statement: String,
}

impl tracing::field::Visit for Sql {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "summary" => self.summary = value.to_owned(),
            "db.statement" => self.statement = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for StatementCounter {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut sql = Sql::default();
        event.record(&mut sql);
        let text = if sql.statement.trim().is_empty() {
            &sql.summary
        } else {
            &sql.statement
        };
        // Airlock's statements hold no `;` inside a literal.
        let statements = text.split(';').filter(|s| !s.trim().is_empty()).count();
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.statements
            .fetch_add(statements.max(1) as u64, Ordering::SeqCst);
    }
}

/// An idle worker's looks at the queue per second (`publish_next` finding nothing, then
/// `next_due_at`, `n` times), on the ledger as it is.
pub async fn measure_looks(app: &App, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        assert!(app.publish_next(None).await.expect("look").is_none());
        app.next_due_at().await.expect("next due");
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// How many times [`measure_waiting`] measures each state. Their median is the figure:
/// one run of looks swings by a tenth on these machines, and the states are measured
/// one after another, never side by side.
const LOOK_ROUNDS: usize = 5;

/// Looks per second ([`measure_looks`]) on an empty queue, with one approved post
/// scheduled a day ahead, with `queued` of them, then with the channel paused: the work
/// of a look must not grow with the posts waiting. (One waiting post is the yardstick: a
/// look that finds when the next post is due reads that one row, which an empty queue
/// does not have.)
pub async fn measure_waiting(app: &App, queued: usize, looks: usize) -> [f64; 4] {
    let median = || async {
        let mut rates = Vec::with_capacity(LOOK_ROUNDS);
        for _ in 0..LOOK_ROUNDS {
            rates.push(measure_looks(app, looks).await);
        }
        rates.sort_by(f64::total_cmp);
        rates[LOOK_ROUNDS / 2]
    };
    let tomorrow = Utc::now() + Duration::days(1);
    let empty = median().await;
    approved_posts(app, 1, Some(tomorrow)).await;
    let one = median().await;
    approved_posts(app, queued.saturating_sub(1), Some(tomorrow)).await;
    let later = median().await;
    app.pause(&Principal::cli(), Some(CHANNEL), "bench: waiting")
        .await
        .expect("pause");
    let paused = median().await;
    [empty, one, later, paused]
}

/// The PostgreSQL server the benchmarks use: `AIRLOCK_BENCH_PG`, by default
/// `postgres://postgres@127.0.0.1:5432`.
pub fn pg_server() -> String {
    std::env::var("AIRLOCK_BENCH_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// Runs one statement on the server's `postgres` database.
pub async fn pg_admin(sql: String) -> Result<(), sqlx::Error> {
    let pool = sqlx::PgPool::connect(&format!("{}/postgres", pg_server())).await?;
    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&pool).await?;
    pool.close().await;
    Ok(())
}

/// A fresh database `name`, empty or a copy of `template`, with airlock's migrations.
pub async fn pg_database(
    name: &str,
    template: Option<&str>,
) -> Arc<airlock_store_postgres::PgStore> {
    pg_admin(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .expect("drop");
    let create = match template {
        Some(t) => format!("CREATE DATABASE {name} TEMPLATE {t}"),
        None => format!("CREATE DATABASE {name}"),
    };
    pg_admin(create).await.expect("create database");
    let store = airlock_store_postgres::PgStore::connect(&format!("{}/{name}", pg_server()))
        .await
        .expect("connect");
    store
        .hold_limits(&ledger_limits(&settings()))
        .await
        .expect("hold the limits");
    Arc::new(store)
}

/// The ledger's limits for `settings`, which `serve` has the ledger hold before it
/// claims (`airlock_cli::wiring::ledger_limits`): claims then decide by them.
fn ledger_limits(settings: &AppSettings) -> airlock_store_postgres::LedgerLimits {
    airlock_store_postgres::LedgerLimits {
        window: settings.window,
        channels: settings
            .channels
            .values()
            .map(|c| airlock_store_postgres::ChannelLimits {
                channel: c.name.to_string(),
                daily_limit: c.daily_limit,
                zone: c.timezone.name().to_owned(),
                budget: None,
                tests: c.kind.publishes_test_posts(),
            })
            .collect(),
    }
}

/// Dispatch lag (due time to request) of `n` posts due over the next moments, published
/// by `serve`'s dispatcher loop with `workers` workers. Returns sorted lags.
pub async fn measure_lag(
    app: &App,
    workers: usize,
    n: usize,
    spacing: StdDuration,
) -> Vec<StdDuration> {
    let first = Utc::now()
        + Duration::milliseconds(500)
        + Duration::from_std(spacing).expect("small") * (n as i32 / 4);
    let me = Principal::cli();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let at = first + Duration::from_std(spacing).expect("small") * i as i32;
        let input = DraftInput {
            channel: CHANNEL.into(),
            text: format!("lag post {i}"),
            scheduled_at: Some(at.to_rfc3339()),
            ..DraftInput::default()
        };
        let post = app
            .create_post(&me, input, None, DraftOrigin::default())
            .await
            .expect("create")
            .post;
        app.approve(&me, post.id).await.expect("approve");
        ids.push(post.id);
    }
    let shutdown = tokio_util::sync::CancellationToken::new();
    let dispatcher = airlock_dispatcher::Dispatcher::new(
        app.clone(),
        airlock_dispatcher::DispatcherSettings {
            workers,
            batch: airlock_dispatcher::BATCH,
            poll_interval: StdDuration::from_secs(30),
            reap_interval: StdDuration::from_secs(30),
        },
    );
    let running = tokio::spawn(dispatcher.run(shutdown.clone()));
    let deadline = Instant::now() + spacing * n as u32 + StdDuration::from_secs(30);
    let mut lags = Vec::with_capacity(n);
    for id in &ids {
        loop {
            let detail = app.get_post(&me, *id).await.expect("detail");
            if let Some(intent) = detail.intents.first() {
                let due = detail.post.scheduled_at;
                lags.push((intent.created_at - due).to_std().unwrap_or_default());
                break;
            }
            assert!(Instant::now() < deadline, "post {id} was never published");
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
    }
    shutdown.cancel();
    running.await.expect("dispatcher");
    lags.sort();
    lags
}

/// The `q`-quantile of sorted durations.
pub fn quantile(sorted: &[StdDuration], q: f64) -> StdDuration {
    if sorted.is_empty() {
        return StdDuration::ZERO;
    }
    let idx = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[idx]
}

/// Writes `n` posted posts (with events, intents and committed reservations spread
/// over the past year) into a SQLite ledger, through its triggers.
pub async fn seed_sqlite_history(pool: &sqlx::SqlitePool, n: u64) -> Result<(), sqlx::Error> {
    const BATCH: u64 = 100_000;
    let hash = "0".repeat(64);
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        let ts = |expr: &str| {
            format!("strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ({expr}) || ' seconds')")
        };
        let insert = format!(
            "WITH RECURSIVE seq(n) AS (SELECT {first} UNION ALL SELECT n + 1 FROM seq WHERE n < {last}) \
             INSERT INTO posts (channel, status, text, media, scheduled_at, content_hash, created_by, \
               edited_by, created_at, updated_at, event_actor, event_note) \
             SELECT 'history', 'draft', 'history post ' || n || ': the garden cats found the sunny spot', '[]', \
               {at}, '{hash}', 'bench', 'bench', {at}, {at}, 'bench', 'seeded' FROM seq",
            first = start + 1,
            last = end,
            // Spread evenly over the year before yesterday, as a long-lived ledger is.
            at = ts(&format!(
                "2 * 86400 + n * {}",
                (31_536_000 / n.max(1)).max(1)
            )),
        );
        sqlx::query(sqlx::AssertSqlSafe(insert))
            .execute(&mut *tx)
            .await?;
        let last: i64 = sqlx::query_scalar("SELECT max(id) FROM posts")
            .fetch_one(&mut *tx)
            .await?;
        let range = format!("id BETWEEN {} AND {last}", last - (end - start) as i64 + 1);
        for step in [
            "status = 'approved', approved_hash = content_hash, approved_by = 'bench'",
            "status = 'posting', generation = 1, lease_owner = 'bench', lease_expires_at = updated_at",
            "status = 'posted', lease_owner = NULL, lease_expires_at = NULL, posted_at = updated_at, platform_post_id = 'h' || id",
        ] {
            let update = format!(
                "UPDATE posts SET {step}, version = version + 1, event_actor = 'bench' WHERE {range}"
            );
            sqlx::query(sqlx::AssertSqlSafe(update))
                .execute(&mut *tx)
                .await?;
        }
        let intents = format!(
            "INSERT INTO intents (post_id, generation, idempotency_key, phase, created_at, settled_at) \
             SELECT id, 1, 'airlock-' || id, 'succeeded', posted_at, posted_at FROM posts WHERE {range}"
        );
        sqlx::query(sqlx::AssertSqlSafe(intents))
            .execute(&mut *tx)
            .await?;
        let reservations = format!(
            "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at, settled_at) \
             SELECT id, 1, channel, 'committed', posted_at, posted_at, posted_at FROM posts WHERE {range}"
        );
        sqlx::query(sqlx::AssertSqlSafe(reservations))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        start = end;
    }
    // No ANALYZE: airlock never runs it, so the figures are what a ledger that grew by
    // itself gets (the claim path's reads name their partial indexes).
    Ok(())
}

/// Raw SQLite commits per second with the ledger's settings: one `BEGIN IMMEDIATE`
/// transaction updating a row and appending an event, as a claim does, nothing around it.
pub async fn sqlite_commit_anchor(pool: &sqlx::SqlitePool, n: usize) -> Result<f64, sqlx::Error> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS anchor_rows (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
    )
    .execute(pool)
    .await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS anchor_events (id INTEGER PRIMARY KEY, row_id INTEGER, at TEXT)")
        .execute(pool)
        .await?;
    sqlx::query("INSERT OR IGNORE INTO anchor_rows (id, n) VALUES (1, 0)")
        .execute(pool)
        .await?;
    let start = Instant::now();
    for _ in 0..n {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query("UPDATE anchor_rows SET n = n + 1 WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO anchor_events (row_id, at) VALUES (1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// A busy day on [`CHANNEL`]: `n` committed reservations sent over the eight hours before
/// now, for one seeded post. A quota decision that reads every live row of the day pays
/// for each of them.
pub async fn seed_busy_day_pg(pool: &sqlx::PgPool, n: u64) -> Result<(), sqlx::Error> {
    let post: i64 = sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
           edited_by, created_at, updated_at) \
         VALUES ($1, 'draft', 'busy day', now(), repeat('0', 64), 'bench', 'bench', now(), now()) \
         RETURNING id",
    )
    .bind(CHANNEL)
    .fetch_one(pool)
    .await?;
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         SELECT $1, g, $2, 'committed', t, t \
         FROM (SELECT g, now() - make_interval(secs => g * 28800.0 / $3) AS t \
               FROM generate_series(1, $3) AS g) AS s",
    )
    .bind(post)
    .bind(CHANNEL)
    .bind(i64::try_from(n).unwrap_or(i64::MAX))
    .execute(pool)
    .await?;
    Ok(())
}

/// [`seed_busy_day_pg`] on SQLite.
pub async fn seed_busy_day_sqlite(pool: &sqlx::SqlitePool, n: u64) -> Result<(), sqlx::Error> {
    let at = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n * 28800.0 / ?3) || ' seconds')";
    let post: i64 = sqlx::query_scalar(
        "INSERT INTO posts (channel, status, text, media, scheduled_at, content_hash, created_by, \
           edited_by, created_at, updated_at) \
         VALUES (?1, 'draft', 'busy day', '[]', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), \
           printf('%064d', 0), 'bench', 'bench', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), \
           strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) RETURNING id",
    )
    .bind(CHANNEL)
    .fetch_one(pool)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?3) \
         INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         SELECT ?2, n, ?1, 'committed', {at}, {at} FROM seq"
    )))
    .bind(CHANNEL)
    .bind(post)
    .bind(i64::try_from(n).unwrap_or(i64::MAX))
    .execute(pool)
    .await?;
    Ok(())
}

/// Writes `n` posted posts (with events, intents and committed reservations spread
/// over the year before yesterday) into a PostgreSQL ledger, through its triggers.
pub async fn seed_pg_history(pool: &sqlx::PgPool, n: u64) -> Result<(), sqlx::Error> {
    const BATCH: u64 = 100_000;
    let hash = "0".repeat(64);
    let spacing = (31_536_000 / n.max(1)).max(1);
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let mut tx = pool.begin().await?;
        let insert = format!(
            "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
               edited_by, created_at, updated_at, event_actor, event_note) \
             SELECT 'history', 'draft', 'history post ' || g || ': the garden cats found the sunny spot', \
               t, '{hash}', 'bench', 'bench', t, t, 'bench', 'seeded' \
             FROM (SELECT g, now() - interval '2 days' - make_interval(secs => g * {spacing}) AS t \
                   FROM generate_series({first}, {last}) AS g) AS s",
            first = start + 1,
            last = end,
        );
        sqlx::query(sqlx::AssertSqlSafe(insert))
            .execute(&mut *tx)
            .await?;
        let last: i64 = sqlx::query_scalar("SELECT max(id) FROM posts")
            .fetch_one(&mut *tx)
            .await?;
        let range = format!("id BETWEEN {} AND {last}", last - (end - start) as i64 + 1);
        for step in [
            "status = 'approved', approved_hash = content_hash, approved_by = 'bench'",
            "status = 'posting', generation = 1, lease_owner = 'bench', lease_expires_at = updated_at",
            "status = 'posted', lease_owner = NULL, lease_expires_at = NULL, posted_at = updated_at, platform_post_id = 'h' || id",
        ] {
            let update = format!(
                "UPDATE posts SET {step}, version = version + 1, event_actor = 'bench' WHERE {range}"
            );
            sqlx::query(sqlx::AssertSqlSafe(update))
                .execute(&mut *tx)
                .await?;
        }
        let intents = format!(
            "INSERT INTO intents (post_id, generation, idempotency_key, phase, created_at, settled_at) \
             SELECT id, 1, 'airlock-' || id, 'succeeded', posted_at, posted_at FROM posts WHERE {range}"
        );
        sqlx::query(sqlx::AssertSqlSafe(intents))
            .execute(&mut *tx)
            .await?;
        let reservations = format!(
            "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at, settled_at) \
             SELECT id, 1, channel, 'committed', posted_at, posted_at, posted_at FROM posts WHERE {range}"
        );
        sqlx::query(sqlx::AssertSqlSafe(reservations))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        start = end;
    }
    sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    Ok(())
}

/// Dispatch lag when another process approves: `dispatching` runs `serve`'s loop with a
/// long poll interval, `approving` (a separate store connection, as another process
/// would have) approves already-due drafts one by one. The lag is from the approval to
/// the request; only a cross-process wake-up (PostgreSQL `NOTIFY`) keeps it short.
pub async fn measure_wakeup_lag(
    dispatching: &App,
    approving: &App,
    n: usize,
    spacing: StdDuration,
) -> Vec<StdDuration> {
    let me = Principal::cli();
    let mut drafts = Vec::with_capacity(n);
    for i in 0..n {
        let input = DraftInput {
            channel: CHANNEL.into(),
            text: format!("wake-up post {i}"),
            ..DraftInput::default()
        };
        drafts.push(
            approving
                .create_post(&me, input, None, DraftOrigin::default())
                .await
                .expect("create")
                .post
                .id,
        );
    }
    let shutdown = tokio_util::sync::CancellationToken::new();
    let dispatcher = airlock_dispatcher::Dispatcher::new(
        dispatching.clone(),
        airlock_dispatcher::DispatcherSettings {
            workers: 2,
            batch: airlock_dispatcher::BATCH,
            poll_interval: StdDuration::from_secs(600),
            reap_interval: StdDuration::from_secs(600),
        },
    );
    let running = tokio::spawn(dispatcher.run(shutdown.clone()));
    tokio::time::sleep(StdDuration::from_millis(300)).await;
    let mut approved_at = Vec::with_capacity(n);
    for id in &drafts {
        let post = approving.approve(&me, *id).await.expect("approve");
        approved_at.push(post.updated_at);
        tokio::time::sleep(spacing).await;
    }
    let deadline = Instant::now() + StdDuration::from_secs(60);
    let mut lags = Vec::with_capacity(n);
    for (id, approved) in drafts.iter().zip(approved_at) {
        loop {
            let detail = approving.get_post(&me, *id).await.expect("detail");
            if let Some(intent) = detail.intents.first() {
                lags.push((intent.created_at - approved).to_std().unwrap_or_default());
                break;
            }
            if Instant::now() > deadline {
                // Never woken: the lag is at least the time waited.
                lags.push(StdDuration::from_secs(60));
                break;
            }
            tokio::time::sleep(StdDuration::from_millis(20)).await;
        }
    }
    shutdown.cancel();
    running.await.expect("dispatcher");
    lags.sort();
    lags
}
