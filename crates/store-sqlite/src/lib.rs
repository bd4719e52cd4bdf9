//! The SQLite backend of airlock's [`Store`]: the embedded default (docs/stores.md).
//!
//! - WAL journal, `synchronous = FULL` (an intent must survive a power cut before the
//!   irreversible request leaves), foreign keys on, a generous busy timeout so several
//!   processes on one file (cron overlaps) wait for each other instead of failing.
//! - Every write transaction starts with `BEGIN IMMEDIATE`, taking SQLite's single write
//!   lock up front: claims, reservations and outcome writes are serialized across
//!   processes, which makes quotas exact and claims exclusive.
//! - Triggers in `migrations/0001_ledger.sql` refuse illegal status changes and append
//!   the event row of every status change, whatever SQL statement made it.
//!
//! Layout: the reads are shared with PostgreSQL (`airlock_store_sql::reads`, over
//! [`dialect`]: times as canonical text, lists through `json_each`); here are the writes:
//! [`posts`] (drafts, guarded updates, events, verification records), [`publish`]
//! (claims, reservations, intents, the fail-closed quota read), [`admin`] (pauses,
//! outbox, tokens, durability settings), [`ops`] (dashboard sessions, server secrets),
//! [`backup`] (online, checked copies for `airlock backup`).

use std::path::Path;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
pub use backup::{Backup, BackupError};
use chrono::{DateTime, Utc};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use airlock_core::time::format_utc;
use airlock_core::{
    ChannelName, Intent, Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary, Verdict,
};
use airlock_store::{
    ChannelDue, CreatePost, Created, EventNote, ExpiredLease, ExportFilter, HealthStats,
    IntentRequest, LiveSession, NewNotification, NewSession, NewToken, Notification, OutboxStats,
    Pause, PauseScope, PostClaim, PostClaimed, PostFilter, QuotaRows, Result, ReviewItem, Scanned,
    Session, Store, StoreError, TokenRecord, VerificationRecord,
};
use airlock_store_sql::reads;

use crate::dialect::Lite;

mod admin;
mod backup;
mod dialect;
mod ops;
mod posts;
mod publish;
mod schema;

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Writers of this process, one at a time: SQLite has one write lock, and a writer
    /// that finds it taken sleeps in the busy handler (milliseconds at a time). Queueing
    /// here instead hands the lock on as soon as the previous transaction commits.
    writer: std::sync::Arc<tokio::sync::Mutex<()>>,
}

/// A write transaction (`BEGIN IMMEDIATE`) holding this process's writer turn until it
/// commits or is dropped.
pub(crate) struct WriteTx {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

impl WriteTx {
    pub(crate) async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.commit().await
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
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
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

    /// Applies pending migrations. Several processes opening a new file at once may race
    /// on the first migration; the loser sees it applied on its next try.
    pub async fn migrate(&self) -> Result<()> {
        let mut tries = 0;
        loop {
            match MIGRATOR.run(&self.pool).await {
                Ok(()) => return Ok(()),
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
            pool,
            writer: std::sync::Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    async fn begin_write(&self) -> Result<WriteTx> {
        let turn = self.writer.clone().lock_owned().await;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        Ok(WriteTx { tx, _turn: turn })
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

pub(crate) fn ts(at: DateTime<Utc>) -> String {
    format_utc(at)
}

pub(crate) fn parse_ts(text: &str) -> std::result::Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| text.to_owned())
}

#[async_trait]
impl Store for SqliteStore {
    // Reads: written once for both backends in `airlock_store_sql::reads`.

    async fn get_post(&self, id: PostId) -> Result<Post> {
        reads::get_post::<Lite>(&self.pool, id).await
    }

    async fn post_detail(&self, id: PostId) -> Result<PostDetail> {
        reads::post_detail::<Lite>(&self.pool, id).await
    }

    async fn verdicts(&self, id: PostId) -> Result<Vec<Verdict>> {
        reads::verdicts::<Lite>(&self.pool, id).await
    }

    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<Post>> {
        reads::list_posts::<Lite>(&self.pool, filter).await
    }

    async fn list_summaries(&self, filter: &PostFilter, chars: u32) -> Result<Vec<PostSummary>> {
        reads::list_summaries::<Lite>(&self.pool, filter, chars).await
    }

    async fn list_excerpts(&self, filter: &PostFilter, chars: u32) -> Result<Vec<Post>> {
        reads::list_excerpts::<Lite>(&self.pool, filter, chars).await
    }

    async fn live_drafts_by(&self, actor: &str) -> Result<i64> {
        reads::live_drafts_by::<Lite>(&self.pool, actor).await
    }

    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>> {
        reads::due_posts::<Lite>(&self.pool, channels, test_channels, now, limit).await
    }

    async fn deferred_posts(&self) -> Result<Vec<airlock_store::Deferred>> {
        reads::deferred_posts::<Lite>(&self.pool).await
    }

    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>> {
        reads::next_due_at::<Lite>(&self.pool, channels, test_channels).await
    }

    async fn expired_leases(&self, now: DateTime<Utc>) -> Result<Vec<Scanned<ExpiredLease>>> {
        reads::expired_leases::<Lite>(&self.pool, now).await
    }

    async fn review_queue(&self) -> Result<Vec<Scanned<ReviewItem>>> {
        reads::review_queue::<Lite>(&self.pool).await
    }

    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows> {
        reads::quota_rows::<Lite>(&self.pool, since, now).await
    }

    async fn pauses(&self) -> Result<Vec<Pause>> {
        reads::pauses::<Lite>(&self.pool).await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        reads::outbox_stats::<Lite>(&self.pool).await
    }

    async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        reads::tokens::<Lite>(&self.pool).await
    }

    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>> {
        reads::status_counts::<Lite>(&self.pool).await
    }

    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>> {
        reads::check_invariants::<Lite>(&self.pool, now).await
    }

    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        reads::sources_used::<Lite>(&self.pool, channel, since).await
    }

    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        reads::export_page::<Lite>(&self.pool, filter, after, limit).await
    }

    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats> {
        reads::health_stats::<Lite>(&self.pool, now).await
    }

    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<ChannelDue>> {
        reads::due_by_channel::<Lite>(&self.pool, now).await
    }

    async fn session(&self, id_sha256: &str) -> Result<Option<Session>> {
        reads::session::<Lite>(&self.pool, id_sha256).await
    }

    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<LiveSession>> {
        reads::live_sessions::<Lite>(&self.pool, now).await
    }

    async fn durability_warnings(&self) -> Result<Vec<String>> {
        admin::durability_warnings(self).await
    }

    // Writes: each one `BEGIN IMMEDIATE` transaction.

    async fn create_post(&self, req: CreatePost) -> Result<Created> {
        posts::create(self, req).await
    }

    async fn change_post(&self, change: airlock_store::PostChange) -> Result<Post> {
        posts::change(self, change).await
    }

    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        posts::delete_draft(self, id, version, actor, now).await
    }

    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()> {
        posts::add_event(self, id, event, actor, now, notify).await
    }

    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()> {
        posts::record_verifications(self, records).await
    }

    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed> {
        publish::claim_post(self, req).await
    }

    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent> {
        publish::record_intent(self, req).await
    }

    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        admin::pause(self, scope, reason, actor, now, &notify).await
    }

    async fn resume(
        &self,
        scope: &PauseScope,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        admin::resume(self, scope, actor, now, notify).await
    }

    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>> {
        admin::claim_notifications(self, now, worker, lease_until, limit).await
    }

    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        admin::notification_delivered(self, id, worker, now).await
    }

    async fn notification_failed(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        admin::notification_failed(self, id, worker, error, retry_at, now).await
    }

    async fn create_token(&self, token: NewToken) -> Result<()> {
        admin::create_token(self, token).await
    }

    async fn revoke_token(&self, name: &str, now: DateTime<Utc>) -> Result<bool> {
        admin::revoke_token(self, name, now).await
    }

    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>> {
        admin::authenticate(self, secret_sha256, now).await
    }

    async fn open_session(&self, session: NewSession) -> Result<()> {
        ops::open_session(self, session).await
    }

    async fn end_session(&self, id_sha256: &str) -> Result<bool> {
        ops::end_session(self, id_sha256).await
    }

    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String> {
        ops::server_secret(self, name, candidate, now).await
    }

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
