//! A fresh PostgreSQL database per test (`airlock_testkit::pg::TestDb`), and stores on it.

use std::sync::Arc;

use async_trait::async_trait;

use airlock_store::Store;
use airlock_store_postgres::{PgSettings, PgStore};
use airlock_store_tests::{Backend, Ledger};
pub use airlock_testkit::pg::TestDb;

/// A store on `db` with a small pool (many tests run at once).
pub async fn store(db: &TestDb) -> PgStore {
    let settings = PgSettings {
        max_connections: 4,
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
