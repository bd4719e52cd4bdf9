//! The PostgreSQL backend of airlock's [`Store`]: for several processes or machines
//! sharing one queue (docs/stores.md).
//!
//! - **Claims** lock the most overdue due row with `FOR UPDATE SKIP LOCKED` and move it
//!   to `posting` in one short statement, then read the row back and proceed only if
//!   status, owner and generation are this worker's. No transaction is ever held across
//!   a platform request: every method is one short transaction.
//! - **Quotas** are exact under any number of processes: every reservation takes one
//!   transaction-level advisory lock on the global window (the window spans channels)
//!   before it reads the live rows, decides with `airlock_core::quota::decide` and inserts.
//!   Rows are checked fail-closed with `QuotaRows::check`.
//! - **Triggers** in `migrations/0001_ledger.sql` refuse illegal status changes and
//!   append the event of every status change, whatever SQL statement made it.
//! - **Wake-ups**: a status change to `approved` and a lifted pause send
//!   `NOTIFY airlock_due` inside their transaction; [`Store::wait_for_due`] listens on a
//!   dedicated connection ([`wake`]). A notification is a hint; a missed one costs the
//!   caller one poll interval.
//! - **Migrations** are embedded and applied by [`PgStore::connect`] under an advisory
//!   lock, so processes starting together do not race.
//!
//! Layout: [`posts`] (drafts, guarded updates, events), [`publish`] (claims, reservations,
//! intents, leases), [`admin`] (pauses, outbox, tokens, health), [`ops`] (export pages,
//! dashboard sessions, health figures for alerts), [`rows`] (decoding),
//! [`wake`] (LISTEN/NOTIFY). Row shapes and sqlx types stay inside this crate: errors
//! leave it as [`StoreError`].

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection};

use airlock_core::{ChannelName, Intent, Post, PostDetail, PostEvent, PostId, PostStatus};
use airlock_store::{
    CreatePost, Created, EventNote, ExpiredLease, ExportFilter, HealthStats, IntentRequest,
    NewNotification, NewSession, NewToken, Notification, OutboxStats, Pause, PauseScope, PostClaim,
    PostClaimed, PostFilter, PostUpdate, QuotaRows, Result, ReviewItem, Session, Store, StoreError,
    TokenRecord, Unreadable, VerificationRecord,
};

mod admin;
mod bounds;
mod ops;
mod posts;
mod publish;
mod rows;
mod schema;
mod wake;

/// The PostgreSQL store. Cheap to clone: clones share the pool and the wake-up listener.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    wake: Arc<wake::Wake>,
}

/// Connection settings beyond the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgSettings {
    /// Most connections this process opens (besides the wake-up listener).
    pub max_connections: u32,
    /// How long a caller waits for a free connection before the store is unavailable.
    pub acquire_timeout: StdDuration,
}

impl Default for PgSettings {
    /// Ten connections: every method is one short transaction, so a handful serve a
    /// dispatcher, the HTTP API and the deliverer, and a hundred-connection server
    /// still fits several processes.
    fn default() -> Self {
        PgSettings {
            max_connections: 10,
            acquire_timeout: StdDuration::from_secs(30),
        }
    }
}

pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Advisory lock classes (two-int form; the first int). See the migration's header.
pub(crate) mod lock {
    /// Every reservation: the rolling window spans channels.
    pub const QUOTA: i32 = 1_095_912_449;
    /// The event feed watermark (shared by every event insert, see the migration).
    pub const EVENTS: i32 = 1_095_912_450;
    /// Applying migrations.
    pub const MIGRATE: i32 = 1_095_912_451;
    /// Creation idempotency keys, keyed by a hash of scope and key.
    pub const CREATE_KEY: i32 = 1_095_912_452;
    /// Compose slots, keyed by a hash of channel and slot.
    pub const SLOT: i32 = 1_095_912_453;
    /// Pauses against intents: recording an intent holds it shared, setting a pause
    /// exclusively, so a pause that has returned is seen by every later intent.
    pub const PAUSES: i32 = 1_095_912_454;
    /// Drafts with the same normalised text on one channel, keyed by a hash of channel
    /// and text key, so two identical drafts at once still find each other.
    pub const TEXT_KEY: i32 = 1_095_912_455;
    /// The live drafts of one creator, keyed by a hash of the actor, so concurrent
    /// creates count one after another and never pass `max_live_drafts` together.
    pub const DRAFTS: i32 = 1_095_912_456;
}

impl PgStore {
    /// Connects to a `postgres://` URL with [`PgSettings::default`] and applies pending
    /// migrations.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PgSettings::default()).await
    }

    /// Connects with explicit settings and applies pending migrations.
    pub async fn connect_with(url: &str, settings: PgSettings) -> Result<Self> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Unavailable(
                format!("cannot read the PostgreSQL URL (postgres://USER@HOST[:PORT]/DB): {e}")
                    .into(),
            )
        })?;
        let options = options.application_name("airlock");
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .min_connections(0)
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options.clone())
            .await
            .map_err(|e| unavailable_at(&options, e))?;
        let store = PgStore {
            pool,
            wake: Arc::new(wake::Wake::new(options)),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Applies pending migrations, holding a session advisory lock on a connection of
    /// its own so that processes starting at once apply them one after another (the
    /// later ones find nothing to do).
    pub async fn migrate(&self) -> Result<()> {
        let mut lock_conn = PgConnection::connect_with(&self.wake.options())
            .await
            .map_err(db)?;
        sqlx::query("SELECT pg_advisory_lock($1, 0)")
            .bind(lock::MIGRATE)
            .execute(&mut lock_conn)
            .await
            .map_err(db)?;
        let applied = MIGRATOR.run(&self.pool).await;
        // Closing the session releases its lock whatever happened.
        lock_conn.close().await.ok();
        applied.map_err(|e| StoreError::Unavailable(Box::new(e)))?;
        Ok(())
    }

    /// The connection pool, for tests and tools that read the ledger directly.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool and stops the wake-up listener of this store and its clones.
    pub async fn close(&self) {
        self.wake.stop();
        self.pool.close().await;
    }
}

fn unavailable_at(options: &PgConnectOptions, e: sqlx::Error) -> StoreError {
    // Name the server, never the password.
    StoreError::Unavailable(
        format!(
            "cannot connect to PostgreSQL at {}:{} (database {:?}, user {:?}): {e}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("(default)"),
            options.get_username()
        )
        .into(),
    )
}

/// Maps a database error with nothing more specific to say.
pub(crate) fn db(e: sqlx::Error) -> StoreError {
    if sqlstate(&e).as_deref() == Some(TOO_LARGE)
        && let sqlx::Error::Database(d) = &e
    {
        return StoreError::TooLarge(d.message().trim_start_matches("airlock: ").to_owned());
    }
    match e {
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            StoreError::Corrupt(e.to_string())
        }
        e => StoreError::Unavailable(Box::new(e)),
    }
}

/// The SQLSTATE of a database error, if it is one.
pub(crate) fn sqlstate(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(d) => d.code().map(|c| c.into_owned()),
        _ => None,
    }
}

/// SQLSTATE of the lifecycle trigger's refusal (see the migration).
pub(crate) const ILLEGAL_TRANSITION: &str = "AL001";

/// SQLSTATE of the refusal to change a quarantined post (see `0006_review.sql`).
pub(crate) const QUARANTINED: &str = "AL006";

/// SQLSTATE of the size-limit triggers' refusal (see `0003_authorship_and_limits.sql`).
pub(crate) const TOO_LARGE: &str = "AL005";

/// Whether a database error is a unique violation.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

pub(crate) fn status_of(text: &str) -> Result<PostStatus> {
    PostStatus::from_str(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Begins a transaction on a pooled connection.
pub(crate) async fn begin(pool: &PgPool) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    pool.begin().await.map_err(db)
}

/// Makes this transaction's commit durable — flushed to disk (and to synchronous standbys)
/// before `COMMIT` returns — whatever `synchronous_commit` the server, database or role
/// defaults to. Intents and outcomes need it: an intent lost in a crash would let the
/// reaper think nothing was sent.
pub(crate) async fn durable_commit(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("SET LOCAL synchronous_commit = on")
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(())
}

/// Takes a transaction-level advisory lock, held until the transaction ends.
pub(crate) async fn xact_lock(conn: &mut PgConnection, class: i32, key: i32) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
        .bind(class)
        .bind(key)
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(())
}

/// Takes a transaction-level advisory lock in shared mode, held until the transaction ends.
pub(crate) async fn xact_lock_shared(conn: &mut PgConnection, class: i32, key: i32) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock_shared($1, $2)")
        .bind(class)
        .bind(key)
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(())
}

/// Takes a transaction-level advisory lock keyed by a hash of `text`.
pub(crate) async fn xact_lock_text(conn: &mut PgConnection, class: i32, text: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .bind(class)
        .bind(text)
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(())
}

#[async_trait]
impl Store for PgStore {
    async fn create_post(&self, req: CreatePost) -> Result<Created> {
        posts::create(&self.pool, req).await
    }

    async fn get_post(&self, id: PostId) -> Result<airlock_core::Post> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        posts::get_in(&mut conn, id).await
    }

    async fn post_detail(&self, id: PostId) -> Result<PostDetail> {
        posts::detail(&self.pool, id).await
    }

    async fn verdicts(&self, id: PostId) -> Result<Vec<airlock_core::Verdict>> {
        posts::verdicts(&self.pool, id).await
    }

    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<airlock_core::Post>> {
        posts::list(&self.pool, filter).await
    }

    async fn list_summaries(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<airlock_core::PostSummary>> {
        posts::list_summaries(&self.pool, filter, excerpt_chars).await
    }

    async fn update_post(&self, update: PostUpdate) -> Result<airlock_core::Post> {
        posts::update(&self.pool, update).await
    }

    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        posts::delete_draft(&self.pool, id, version, actor, now).await
    }

    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()> {
        posts::add_event(&self.pool, id, event, actor, now, notify).await
    }

    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>> {
        posts::events_after(&self.pool, after, limit).await
    }

    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent> {
        publish::record_intent(&self.pool, req).await
    }

    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>> {
        publish::due_posts(&self.pool, channels, test_channels, now, limit).await
    }

    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed> {
        publish::claim_post(&self.pool, req).await
    }

    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()> {
        posts::record_verifications(&self.pool, records).await
    }

    async fn expired_leases(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>> {
        publish::expired_leases(&self.pool, now).await
    }

    async fn review_queue(&self) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>> {
        publish::review_queue(&self.pool).await
    }

    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>> {
        publish::next_due_at(&self.pool, channels, test_channels).await
    }

    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        publish::live_reservations(&mut conn, since, now).await
    }

    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        let mut tx = begin(&self.pool).await?;
        let created = admin::insert_pause(&mut tx, scope, reason, actor, now, &notify).await?;
        tx.commit().await.map_err(db)?;
        Ok(created)
    }

    async fn resume(
        &self,
        scope: &PauseScope,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        admin::resume(&self.pool, scope, actor, now, notify).await
    }

    async fn pauses(&self) -> Result<Vec<Pause>> {
        admin::pauses(&self.pool).await
    }

    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>> {
        admin::claim_notifications(&self.pool, now, worker, lease_until, limit).await
    }

    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        admin::notification_delivered(&self.pool, id, worker, now).await
    }

    async fn notification_failed(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        admin::notification_failed(&self.pool, id, worker, error, retry_at, now).await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        admin::outbox_stats(&self.pool).await
    }

    async fn create_token(&self, token: NewToken) -> Result<()> {
        admin::create_token(&self.pool, token).await
    }

    async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        admin::tokens(&self.pool).await
    }

    async fn revoke_token(&self, name: &str, now: DateTime<Utc>) -> Result<bool> {
        admin::revoke_token(&self.pool, name, now).await
    }

    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>> {
        admin::authenticate(&self.pool, secret_sha256, now).await
    }

    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>> {
        admin::status_counts(&self.pool).await
    }

    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>> {
        admin::check_invariants(&self.pool, now).await
    }

    async fn durability_warnings(&self) -> Result<Vec<String>> {
        admin::durability_warnings(&self.pool).await
    }

    async fn due_signals(&self) -> u64 {
        self.wake.signals()
    }

    async fn wait_for_due(&self, seen: u64, timeout: StdDuration) -> u64 {
        self.wake.wait(seen, timeout).await
    }

    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        admin::sources_used(&self.pool, channel, since).await
    }

    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        ops::export_page(&self.pool, filter, after, limit).await
    }

    async fn open_session(&self, session: NewSession) -> Result<()> {
        ops::open_session(&self.pool, session).await
    }

    async fn session(&self, id_sha256: &str) -> Result<Option<Session>> {
        ops::session(&self.pool, id_sha256).await
    }

    async fn end_session(&self, id_sha256: &str) -> Result<bool> {
        ops::end_session(&self.pool, id_sha256).await
    }

    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats> {
        ops::health_stats(&self.pool, now).await
    }

    async fn list_excerpts(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<airlock_core::Post>> {
        bounds::list_excerpts(&self.pool, filter, excerpt_chars).await
    }

    async fn live_drafts_by(&self, actor: &str) -> Result<i64> {
        bounds::live_drafts_by(&self.pool, actor).await
    }

    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String> {
        bounds::server_secret(&self.pool, name, candidate, now).await
    }

    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<airlock_store::LiveSession>> {
        ops::live_sessions(&self.pool, now).await
    }

    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<airlock_store::ChannelDue>> {
        ops::due_by_channel(&self.pool, now).await
    }
}
