//! A fresh PostgreSQL database per test (`airlock_testkit::pg::TestDb`), and stores on it.

use std::sync::Arc;

use async_trait::async_trait;

use airlock_store::Store;
use airlock_store_postgres::{ClockSource, PgSettings, PgStore};
use airlock_store_tests::{Backend, Ledger};
pub use airlock_testkit::pg::{TestDb, TestRole};

/// A store on `db` with a small pool (many tests run at once), deciding by the times the
/// tests pass in.
pub async fn store(db: &TestDb) -> PgStore {
    let settings = PgSettings {
        max_connections: 4,
        ..PgSettings::default()
    };
    let store = PgStore::connect_with(&db.url, settings)
        .await
        .expect("connect to the test database");
    store
        .set_clock(ClockSource::Caller)
        .await
        .expect("the owner sets the ledger's clock");
    store
}

/// A store on `db` with one connection, so that what a test reads of its session
/// (statistics, prepared statements, plans) is its own calls'.
pub async fn one_connection(db: &TestDb) -> PgStore {
    let settings = PgSettings {
        max_connections: 1,
        ..PgSettings::default()
    };
    PgStore::connect_with(&db.url, settings)
        .await
        .expect("connect to the test database")
}

/// More handles on one test database, each with its own pool.
pub struct PgBackend {
    /// The database.
    pub db: TestDb,
}

#[async_trait]
impl Backend for PgBackend {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(store(&self.db).await)
    }
}

/// A fresh ledger for a conformance case.
pub async fn fresh() -> Ledger {
    let backend = Arc::new(PgBackend {
        db: TestDb::create(),
    });
    Ledger {
        store: backend.open().await,
        backend,
    }
}

/// A ledger migrated by its owner and used through a login role that holds only the
/// runtime role (docs/deploy.md#hardened-postgresql).
pub struct HardenedBackend {
    /// The database (dropped first, with the role's connections, then the role).
    pub db: TestDb,
    /// The login role.
    pub role: TestRole,
}

#[async_trait]
impl Backend for HardenedBackend {
    async fn open(&self) -> Arc<dyn Store> {
        let settings = PgSettings {
            max_connections: 4,
            ..PgSettings::default()
        };
        Arc::new(
            PgStore::connect_with(&self.role.url(&self.db.url), settings)
                .await
                .expect("connect as the runtime role"),
        )
    }
}

/// A fresh ledger for a conformance case, migrated as the owner and served as a role
/// with only `airlock_runtime`.
pub async fn fresh_hardened() -> Ledger {
    let db = TestDb::create();
    let owner = store(&db).await;
    // The owner writes limits for every channel a case drafts on (the suite's cases
    // name their own channels and pass their own limits): wide enough that each case's
    // own decide, in the suite's zone.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "INSERT INTO ledger_limits (window_us, window_limit, updated_at) \
           VALUES (1, 1000000000, now()); \
         CREATE FUNCTION test_channel_limits() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN \
             INSERT INTO channel_limits (channel, daily_limit, zone, tests, updated_at) \
                 VALUES (NEW.channel, 1000000000, '{}', true, now()) ON CONFLICT DO NOTHING; \
             RETURN NULL; \
         END $$; \
         CREATE TRIGGER test_channel_limits AFTER INSERT ON posts \
             FOR EACH ROW EXECUTE FUNCTION test_channel_limits();",
        airlock_store_tests::fixture::TZ.name()
    )))
    .execute(owner.pool())
    .await
    .expect("the owner writes the limits");
    owner.close().await;
    let role = TestRole::create(airlock_store_postgres::DEFAULT_RUNTIME_ROLE);
    let backend = Arc::new(HardenedBackend { db, role });
    Ledger {
        store: backend.open().await,
        backend,
    }
}

/// Writes the ledger's limits as its owner does: a window far from every test's, and
/// each of `channels`' daily limit in the fixtures' zone.
pub async fn owner_limits(pool: &sqlx::PgPool, channels: &[(&str, i64)]) {
    sqlx::query(
        "INSERT INTO ledger_limits (window_us, window_limit, updated_at) \
         VALUES (1, 1000000000, now())",
    )
    .execute(pool)
    .await
    .unwrap();
    for (channel, daily) in channels {
        sqlx::query(
            "INSERT INTO channel_limits (channel, daily_limit, zone, tests, updated_at) \
             VALUES ($1, $2, $3, true, now())",
        )
        .bind(channel)
        .bind(daily)
        .bind(airlock_store_tests::fixture::TZ.name())
        .execute(pool)
        .await
        .unwrap();
    }
}

/// `n` committed reservations of `post` on `alpha`, made and sent a minute before the
/// fixtures' now.
pub async fn counted(pool: &sqlx::PgPool, post: i64, n: i64) {
    sqlx::query(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at) \
         SELECT $1, g, 'alpha', 'committed', $2, $2 FROM generate_series(1, $3) g",
    )
    .bind(post)
    .bind(airlock_store_tests::fixture::mins(-1))
    .bind(n)
    .execute(pool)
    .await
    .unwrap();
}
