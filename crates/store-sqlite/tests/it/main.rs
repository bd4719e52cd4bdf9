//! Integration tests of the SQLite backend beyond the conformance suite (which runs in
//! `airlock-store-tests`): what the schema guarantees against hand-written SQL, and
//! fail-closed quota reads over corrupt rows. Each test opens a fresh database file.

mod backup;
mod group;
mod migrate;
mod pool;
mod quota;
mod triggers;

use airlock_store_sqlite::SqliteStore;

/// A fresh store in its own temporary directory (kept alive by the returned guard).
pub async fn fresh() -> (SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("airlock.db"))
        .await
        .expect("open a fresh store");
    (store, dir)
}
