//! The SQLite backend of airlock's [`Store`]: the embedded default (docs/stores.md).
//!
//! - WAL journal, `synchronous = FULL` (an intent must survive a power cut before the
//!   irreversible request leaves), foreign keys on, a generous busy timeout so several
//!   processes on one file (cron overlaps) wait for each other instead of failing.
//! - Every write transaction starts with `BEGIN IMMEDIATE`, taking SQLite's single write
//!   lock up front: claims, reservations and outcome writes are serialized across
//!   processes, which makes quotas exact and claims exclusive. Claims and named changes
//!   made at the same moment in one process share a transaction and its commit
//!   (`group`).
//! - Triggers in `migrations/0001_ledger.sql` refuse illegal status changes and append
//!   the event row of every status change, whatever SQL statement made it.
//!
//! Layout: the reads are shared with PostgreSQL (`airlock_store_sql::reads::SqlReads`,
//! over `dialect`: times as canonical text, lists through `json_each`); each write module
//! implements one part of the store: `posts` ([`Posts`](airlock_store::Posts)),
//! `publish` ([`Publishing`](airlock_store::Publishing), with the fail-closed quota
//! read), `admin` ([`Admin`](airlock_store::Admin)), `ops`
//! ([`Sessions`](airlock_store::Sessions)); `backup` makes online, checked copies for
//! `airlock backup`.

use std::path::Path;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
pub use backup::{Backup, BackupError};
use chrono::{DateTime, Utc};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use airlock_core::PostEvent;
use airlock_core::time::format_utc;
use airlock_store::{Result, Store, StoreError};
use airlock_store_sql::reads;

use crate::dialect::Lite;

mod admin;
mod backup;
mod dialect;
mod group;
mod ops;
mod posts;
mod publish;
mod rekey;
mod schema;

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    reads: airlock_store_sql::reads::SqlReads<Lite>,
    /// Writers of this process, one at a time: SQLite has one write lock, and a writer
    /// that finds it taken sleeps in the busy handler (milliseconds at a time). Queueing
    /// here instead hands the lock on as soon as the previous transaction commits.
    writer: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Claims and changes waiting to be written together (`group`).
    queue: std::sync::Arc<group::Queue>,
    /// Write transactions committed ([`SqliteStore::commits`]).
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// A write transaction (`BEGIN IMMEDIATE`) holding this process's writer turn until it
/// commits or is dropped.
pub(crate) struct WriteTx {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    _turn: tokio::sync::OwnedMutexGuard<()>,
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl WriteTx {
    pub(crate) async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.commit().await?;
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

impl std::ops::Deref for WriteTx {
    type Target = sqlx::SqliteConnection;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl SqliteStore {
    /// Opens (creating if missing) the database at `path` and applies pending migrations.
    /// A new database file is created with mode 0600, whatever the umask; SQLite gives
    /// its `-wal` and `-shm` files the database file's mode.
    pub async fn open(path: &Path) -> Result<Self> {
        create_private(path).map_err(|e| {
            StoreError::Unavailable(
                format!("cannot create SQLite database {}: {e}", path.display()).into(),
            )
        })?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(StdDuration::from_secs(60));
        // sqlx's ping before handing out a connection only goes to the connection's own
        // thread and back: it proves nothing about a file in this process, and costs a
        // trip per statement.
        // SQLite may end a transaction itself on some errors (a full disk, an I/O
        // error). sqlx's `ROLLBACK` on drop then fails, and sqlx goes on counting the
        // connection as inside a transaction, refusing every later `BEGIN` on it: such a
        // connection is closed rather than handed out again.
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .before_acquire(|conn, _| {
                Box::pin(async move { Ok(!sqlx::Connection::is_in_transaction(conn)) })
            })
            .connect_with(options)
            .await
            .map_err(|e| unavailable_at(path, e))?;
        let store = SqliteStore::over(pool);
        store.migrate().await?;
        Ok(store)
    }

    /// Opens a `sqlite://PATH` URL (`sqlite:PATH` also works).
    pub async fn open_url(url: &str) -> Result<Self> {
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        Self::open(Path::new(path)).await
    }

    /// Applies pending migrations, then recomputes the duplicate keys of earlier posts if
    /// they were computed the way of an older release (`0011_text_key_version`). Several
    /// processes opening a new file at once may race on the first migration; the loser
    /// sees it applied on its next try.
    pub async fn migrate(&self) -> Result<()> {
        let mut tries = 0;
        loop {
            match MIGRATOR.run(&self.pool).await {
                Ok(()) => return self.rekey_texts().await.map(drop),
                Err(e) if tries < 5 => {
                    tracing::debug!(error = %e, "migration raced another process; retrying");
                    tries += 1;
                    tokio::time::sleep(StdDuration::from_millis(50 * tries)).await;
                }
                Err(e) => return Err(StoreError::Unavailable(Box::new(e))),
            }
        }
    }

    /// The connection pool, for tests and tools that read the ledger directly.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    fn over(pool: SqlitePool) -> Self {
        SqliteStore {
            reads: airlock_store_sql::reads::SqlReads::new(pool.clone()),
            pool,
            writer: std::sync::Arc::new(tokio::sync::Mutex::new(())),
            queue: std::sync::Arc::default(),
            commits: std::sync::Arc::default(),
        }
    }

    async fn begin_write(&self) -> Result<WriteTx> {
        let turn = self.writer.clone().lock_owned().await;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        Ok(self.write_tx(tx, turn))
    }

    fn write_tx(
        &self,
        tx: sqlx::Transaction<'static, sqlx::Sqlite>,
        turn: tokio::sync::OwnedMutexGuard<()>,
    ) -> WriteTx {
        WriteTx {
            tx,
            _turn: turn,
            commits: self.commits.clone(),
        }
    }

    /// Write transactions this store has committed: with group commit, fewer than the
    /// writes asked for when callers write at the same time (for benchmarks and tests).
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Creates an empty file at `path` with mode 0600 unless something exists there: the
/// ledger holds every post and token hash, readable only by its owner.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match created {
        // The umask can only take bits away; set exactly 0600.
        Ok(file) => file.set_permissions(std::fs::Permissions::from_mode(0o600)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn unavailable_at(path: &Path, e: sqlx::Error) -> StoreError {
    StoreError::Unavailable(format!("cannot open SQLite database {}: {e}", path.display()).into())
}

/// Maps a database error: the size triggers' refusal, a value that does not decode
/// (corrupt, as on PostgreSQL), or the store being unavailable. Other trigger refusals
/// become domain errors where the caller knows the post.
pub(crate) fn db(e: sqlx::Error) -> StoreError {
    if let Some(message) = too_large(&e) {
        return StoreError::TooLarge(message);
    }
    airlock_store_sql::column_error(e)
}

/// The size-limit triggers' refusal (`airlock: value too large: ...`), as its message.
fn too_large(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(d) => d
            .message()
            .find("airlock: value too large: ")
            .map(|at| d.message()[at + "airlock: ".len()..].to_owned()),
        _ => None,
    }
}

/// Whether a database error is one of the ledger triggers refusing a change.
pub(crate) fn is_trigger_refusal(e: &sqlx::Error, marker: &str) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.message().contains(marker))
}

/// Starts the next statement `sql` of `chain`: the statements of one write go to the
/// connection's thread in one call (each call is two thread hand-offs), their unnamed
/// `?` bound in order across statements.
pub(crate) fn next_statement<'c>(
    chain: &'c mut sqlx::QueryBuilder<sqlx::Sqlite>,
    sql: &str,
) -> &'c mut sqlx::QueryBuilder<sqlx::Sqlite> {
    if !chain.sql().as_str().is_empty() {
        chain.push("; ");
    }
    chain.push(sql)
}

pub(crate) fn ts(at: DateTime<Utc>) -> String {
    format_utc(at)
}

pub(crate) fn parse_ts(text: &str) -> std::result::Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| text.to_owned())
}

impl airlock_store::ReadsFrom for SqliteStore {
    fn reader(&self) -> &dyn airlock_store::Reads {
        &self.reads
    }
}

#[async_trait]
impl Store for SqliteStore {
    // Writes: each one `BEGIN IMMEDIATE` transaction.

    // SQLite's own: the event feed and wake-ups.

    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>> {
        // A committed SQLite write is final in id order: one writer at a time.
        reads::events_after::<Lite>(&self.pool, after, None, limit).await
    }

    async fn ledger_clock(&self) -> Result<airlock_store::LedgerClock> {
        Ok(airlock_store::LedgerClock::Caller)
    }

    async fn due_signals(&self) -> u64 {
        0
    }

    async fn wait_for_due(&self, _seen: u64, timeout: StdDuration) -> u64 {
        // SQLite has no cross-process signal; in-process wake-ups come from the app.
        tokio::time::sleep(timeout).await;
        0
    }
}
