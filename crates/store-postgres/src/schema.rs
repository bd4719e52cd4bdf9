//! Connecting to a ledger that must not change: `airlock backup` refuses PostgreSQL, and
//! `airlock export` reads the ledger other processes serve, so it never migrates and
//! refuses a ledger whose migrations differ from this binary's.

use std::str::FromStr;
use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use airlock_store::{MigrationStatus, Result, StoreError};

use crate::{MIGRATOR, PgSettings, PgStore, unavailable_at, wake};

impl PgStore {
    /// Connects without applying migrations.
    pub async fn connect_existing(url: &str) -> Result<Self> {
        Self::connect_existing_with(url, PgSettings::default()).await
    }

    /// Connects with explicit settings without applying migrations.
    pub async fn connect_existing_with(url: &str, settings: PgSettings) -> Result<Self> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Unavailable(
                format!("cannot read the PostgreSQL URL (postgres://USER@HOST[:PORT]/DB): {e}")
                    .into(),
            )
        })?;
        // A session waits a bounded time for a lock or a statement: a stranger's lock
        // makes a write fail with StoreError::Timeout instead of freezing airlock.
        let options = options.application_name("airlock").options([
            ("lock_timeout", crate::LOCK_TIMEOUT),
            ("statement_timeout", crate::STATEMENT_TIMEOUT),
            (
                "idle_in_transaction_session_timeout",
                crate::STATEMENT_TIMEOUT,
            ),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .min_connections(0)
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options.clone())
            .await
            .map_err(|e| unavailable_at(&options, e))?;
        Ok(PgStore {
            reads: airlock_store_sql::reads::SqlReads::new(pool.clone()),
            pool,
            wake: Arc::new(wake::Wake::new(options)),
            runtime_role: settings.runtime_role.into(),
            claims: Arc::default(),
            outcomes: Arc::default(),
        })
    }

    /// How the ledger's applied migrations compare with this binary's.
    pub async fn migration_status(&self) -> Result<MigrationStatus> {
        airlock_store_sql::reads::migration_status::<crate::dialect::Pg>(&self.pool, &MIGRATOR)
            .await
    }
}
