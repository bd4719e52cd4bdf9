//! A fresh PostgreSQL database per test: `CREATE DATABASE airlock_test_<random>` on the
//! server named by `AIRLOCK_TEST_PG` (default `postgres://postgres@127.0.0.1:5432/postgres`),
//! dropped again when the test's handle goes, even when the test panicked.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{Connection, Executor, PgConnection};

use airlock_store::Store;
use airlock_store_postgres::{PgSettings, PgStore};
use airlock_store_tests::{Backend, Ledger};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The maintenance database URL tests create their databases from.
pub fn admin_url() -> String {
    std::env::var("AIRLOCK_TEST_PG").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// `url` with its database replaced by `name` (query parameters kept).
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let server = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

async fn admin() -> PgConnection {
    let url = admin_url();
    PgConnection::connect(&url).await.unwrap_or_else(|e| {
        panic!(
            "PostgreSQL is not reachable at {url} ({e}); start it with \
             `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` \
             or point AIRLOCK_TEST_PG at a server"
        )
    })
}

/// A database that exists for one test.
pub struct TestDb {
    name: String,
    /// Its URL.
    pub url: String,
}

impl TestDb {
    /// Creates an empty database with a random name.
    pub async fn create() -> TestDb {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("the OS random source works");
        let name = format!("airlock_test_{}", hex::encode(bytes));
        let mut conn = admin().await;
        conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create the test database");
        conn.close().await.ok();
        let url = with_database(&admin_url(), &name);
        TestDb { name, url }
    }

    /// A store on this database with a small pool (many tests run at once).
    pub async fn store(&self) -> PgStore {
        let settings = PgSettings {
            max_connections: 4,
            ..PgSettings::default()
        };
        PgStore::connect_with(&self.url, settings)
            .await
            .expect("connect to the test database")
    }

    /// A plain connection, for hand-written SQL.
    pub async fn conn(&self) -> PgConnection {
        PgConnection::connect(&self.url)
            .await
            .expect("connect to the test database")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs inside the test's runtime: do the async cleanup on a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for cleanup");
            runtime.block_on(async move {
                let mut conn = admin().await;
                conn.execute(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .await
                .map(|_| ())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

/// More handles on one test database, each with its own pool.
pub struct PgBackend {
    /// The database.
    pub db: TestDb,
}

#[async_trait]
impl Backend for PgBackend {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.db.store().await)
    }
}

/// A fresh ledger for a conformance case.
pub async fn fresh() -> Ledger {
    let backend = Arc::new(PgBackend {
        db: TestDb::create().await,
    });
    Ledger {
        store: backend.open().await,
        backend,
    }
}

#[test]
fn urls_get_their_database_replaced() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
        "postgres://postgres@127.0.0.1:5432/x"
    );
    assert_eq!(
        with_database("postgres://u:p@h/db?sslmode=disable", "x"),
        "postgres://u:p@h/x?sslmode=disable"
    );
    assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
}
