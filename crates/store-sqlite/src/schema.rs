//! Opening a ledger that must already exist and must not change: `airlock backup` and
//! `airlock export` read the ledger another process serves, so they never create a file,
//! never migrate, and refuse a ledger whose migrations differ from this binary's (a
//! newer binary's backup must not migrate the live ledger under an older `serve`).

use std::path::Path;
use std::time::Duration as StdDuration;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};

use airlock_store::{MigrationStatus, Result, StoreError};

use crate::{MIGRATOR, SqliteStore, unavailable_at};

impl SqliteStore {
    /// Opens the ledger at `path` without creating it and without applying migrations.
    /// A missing file is [`StoreError::NotFound`]-like: refused, naming the path.
    pub async fn open_existing(path: &Path) -> Result<Self> {
        if !path.is_file() {
            return Err(StoreError::Unavailable(
                format!(
                    "there is no SQLite ledger at {}: check `database` in the configuration (nothing was created)",
                    path.display()
                )
                .into(),
            ));
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(false)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(StdDuration::from_secs(60));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| unavailable_at(path, e))?;
        Ok(SqliteStore::over(pool))
    }

    /// [`SqliteStore::open_existing`] for a `sqlite://PATH` URL.
    pub async fn open_existing_url(url: &str) -> Result<Self> {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        Self::open_existing(Path::new(path)).await
    }

    /// How the ledger's applied migrations compare with this binary's.
    pub async fn migration_status(&self) -> Result<MigrationStatus> {
        airlock_store_sql::reads::migration_status::<crate::dialect::Lite>(&self.pool, &MIGRATOR)
            .await
    }
}
