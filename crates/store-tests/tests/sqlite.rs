//! The conformance suite against the SQLite backend: a fresh database file in its own
//! temporary directory per case. More handles are more `SqliteStore`s (own pools) on
//! the same file, as separate processes would open it.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use airlock_store::Store;
use airlock_store_sqlite::SqliteStore;
use airlock_store_tests::{Backend, Ledger};

/// One temporary database file; the directory goes when the last handle does.
struct SqliteFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

#[async_trait]
impl Backend for SqliteFile {
    async fn open(&self) -> Arc<dyn Store> {
        Arc::new(
            SqliteStore::open(&self.path)
                .await
                .expect("open the test database"),
        )
    }
}

async fn fresh() -> Ledger {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("airlock.db");
    let backend = Arc::new(SqliteFile { _dir: dir, path });
    Ledger {
        store: backend.open().await,
        backend,
    }
}

airlock_store_tests::conformance_suite!(fresh);
