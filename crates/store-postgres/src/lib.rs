//! The PostgreSQL backend of airlock's [`Store`]: for several processes or machines
//! sharing one queue (docs/stores.md).
//!
//! - **Writes** are PL/pgSQL functions (`sql/functions.sql`), one per write transaction,
//!   each called in one round trip: `SECURITY DEFINER`, so the same code path serves a
//!   store connected as the ledger's owner and one connected as a role holding only the
//!   runtime role (`airlock_runtime`), which may call them and read without secrets but
//!   write no table (`functions`, docs/stores.md#hardened-postgresql). No transaction
//!   is ever held across a platform request.
//! - **Claims** lock the post's row with `FOR UPDATE SKIP LOCKED` (a row another worker
//!   holds is skipped) and return the row as claimed.
//! - **Quotas** are exact under any number of processes: every reservation takes one
//!   transaction-level advisory lock on the global window (the window spans channels)
//!   before it reads the live rows, checks them fail-closed and decides as
//!   `airlock_store::decide_reservation` does, in PL/pgSQL.
//! - **Triggers** in `migrations/0001_ledger.sql` refuse illegal status changes and
//!   append the event of every status change, whatever SQL statement made it.
//! - **Wake-ups**: a status change to `approved` and a lifted pause send
//!   `NOTIFY airlock_due` inside their transaction; [`Store::wait_for_due`] listens on a
//!   dedicated connection (`wake`). A notification is a hint; a missed one costs the
//!   caller one poll interval.
//! - **Migrations** are embedded and applied by [`PgStore::connect`] under an advisory
//!   lock, so processes starting together do not race, followed by the functions; a
//!   runtime role applies nothing and starts only on a current ledger.
//!
//! Layout: the reads are shared with SQLite (`airlock_store_sql::reads::SqlReads`, over
//! `dialect`); each write module implements one part of the store, each write a call of
//! one function: `posts` ([`Posts`](airlock_store::Posts)), `publish`
//! ([`Publishing`](airlock_store::Publishing), with the fail-closed quota read), `admin`
//! ([`Admin`](airlock_store::Admin)), `ops` ([`Sessions`](airlock_store::Sessions));
//! `wake` (LISTEN/NOTIFY), `functions` (installing `sql/functions.sql`, the mode for
//! `doctor`). Row shapes and
//! sqlx types stay inside the store crates: errors leave them as [`StoreError`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration as StdDuration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool};
use sqlx::{AssertSqlSafe, Connection, PgConnection};

use airlock_core::{PostEvent, PostId};
use airlock_store::{NewNotification, Result, Store, StoreError};
use airlock_store_sql::rows;

use crate::dialect::Pg;

mod admin;
mod batch;
mod claims;
mod dialect;
mod functions;
mod limits;
mod ops;
mod outcomes;
mod posts;
mod publish;
mod rekey;
mod schema;
mod wake;

/// The PostgreSQL store. Cheap to clone: clones share the pool and the wake-up listener.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    reads: airlock_store_sql::reads::SqlReads<Pg>,
    wake: Arc<wake::Wake>,
    runtime_role: Arc<str>,
    claims: Arc<batch::Queue<claims::Claims>>,
    outcomes: Arc<batch::Queue<outcomes::Outcomes>>,
}

pub use functions::{DEFAULT_RUNTIME_ROLE, PgMode};
pub use limits::{BudgetLimits, ChannelLimits, LedgerLimits};

/// Whose clock a PostgreSQL ledger decides by ([`PgStore::set_clock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The database server's (the default, and the only one for production).
    Database,
    /// Each caller's `now`, for tests that step a clock of their own.
    Caller,
}

impl ClockSource {
    fn as_str(self) -> &'static str {
        match self {
            ClockSource::Database => "database",
            ClockSource::Caller => "caller",
        }
    }
}

/// Connection settings beyond the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgSettings {
    /// Most connections this process opens (besides the wake-up listener).
    pub max_connections: u32,
    /// How long a caller waits for a free connection before the store is unavailable.
    pub acquire_timeout: StdDuration,
    /// The `NOLOGIN` group role that a migration creates and grants EXECUTE on airlock's
    /// functions and SELECT on what reads need ([`DEFAULT_RUNTIME_ROLE`] by default).
    pub runtime_role: String,
}

impl Default for PgSettings {
    /// Ten connections: every method is one short transaction, so a handful serve a
    /// dispatcher, the HTTP API and the deliverer, and a hundred-connection server
    /// still fits several processes.
    fn default() -> Self {
        PgSettings {
            max_connections: 10,
            acquire_timeout: StdDuration::from_secs(30),
            runtime_role: DEFAULT_RUNTIME_ROLE.to_owned(),
        }
    }
}

pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How long a session waits for a lock another session holds before the statement fails
/// ([`StoreError::Timeout`]). Any role that can log in may take an advisory lock, so no
/// wait is unbounded.
pub const LOCK_TIMEOUT: &str = "5s";

/// How long one statement may run before it fails ([`StoreError::Timeout`]). Migrations
/// run on a connection of their own without it.
pub const STATEMENT_TIMEOUT: &str = "60s";

/// How long `migrate` waits for another process applying migrations.
const MIGRATE_LOCK_TIMEOUT: &str = "5min";

/// Timeouts this process saw ([`Store::timeouts`]): lock waits, statements.
static TIMEOUTS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Advisory lock classes (two-int form; the first int). See the migration's header.
///
/// The others are taken by airlock's functions (`sql/functions.sql`): +4 creation
/// idempotency keys (a hash of scope and key), +5 compose slots (channel and slot), +7
/// drafts with one normalised text on a channel, +8 the live drafts of one creator. The
/// rolling window (once +1) and pauses against intents (once +6) are rows of
/// `ledger_locks`, which only the owner may lock (`0010_hardened_ledger.sql`).
pub(crate) mod lock {
    /// The event feed watermark (shared by every event insert, see the migration).
    pub const EVENTS: i32 = 1_095_912_450;
    /// Applying migrations.
    pub const MIGRATE: i32 = 1_095_912_451;
}

impl PgStore {
    /// Connects to a `postgres://` URL with [`PgSettings::default`] and applies pending
    /// migrations.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PgSettings::default()).await
    }

    /// Connects with explicit settings and applies pending migrations.
    pub async fn connect_with(url: &str, settings: PgSettings) -> Result<Self> {
        let store = Self::connect_existing_with(url, settings).await?;
        store.open().await?;
        Ok(store)
    }

    /// Makes sure the ledger is this binary's: nothing to do when its migrations and
    /// functions are current (the only case a runtime role, which may run no DDL, can
    /// start in); otherwise the owner migrates, and anyone else is refused.
    async fn open(&self) -> Result<()> {
        let status = self.migration_status().await?;
        let current = status.applied > 0
            && status.problem().is_none()
            && functions::installed(&self.pool).await?.as_deref()
                == Some(functions::version(&self.runtime_role).as_str());
        if current {
            return Ok(());
        }
        if functions::can_migrate(&self.pool).await? {
            return self.migrate().await;
        }
        let why = match status.problem() {
            Some(problem) if !status.unknown.is_empty() => problem,
            _ => "the ledger needs `airlock migrate` run with the owner's URL (this role may \
                  not change the schema; docs/deploy.md#hardened-postgresql)"
                .to_owned(),
        };
        Err(StoreError::Unavailable(why.into()))
    }

    /// How this store is connected: owner or runtime role, and whether the functions
    /// are this binary's (`airlock doctor`).
    pub async fn mode(&self) -> Result<PgMode> {
        functions::mode(&self.pool, &self.runtime_role).await
    }

    /// Applies pending migrations, recomputes the duplicate keys of earlier posts if they
    /// were computed the way of an older release (`0011_text_key_version`), then
    /// installs airlock's functions and the runtime role's grants, holding a session advisory lock on a connection of its own so that
    /// processes starting at once apply them one after another (the later ones find
    /// nothing to do).
    pub async fn migrate(&self) -> Result<()> {
        let mut lock_conn = PgConnection::connect_with(&self.wake.options())
            .await
            .map_err(db)?;
        // A migration may rewrite a large table: no statement limit on this connection,
        // and a longer wait for another process migrating now.
        sqlx::raw_sql(AssertSqlSafe(format!(
            "SET statement_timeout = 0; SET lock_timeout = '{MIGRATE_LOCK_TIMEOUT}'"
        )))
        .execute(&mut lock_conn)
        .await
        .map_err(db)?;
        sqlx::query("SELECT pg_advisory_lock($1, 0)")
            .bind(lock::MIGRATE)
            .execute(&mut lock_conn)
            .await
            .map_err(db)?;
        let applied = match MIGRATOR.run_direct(None, &mut lock_conn, false).await {
            Ok(()) => match rekey::rekey_texts(&self.pool).await {
                Ok(_) => functions::install(&mut lock_conn, &self.runtime_role).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(StoreError::Unavailable(Box::new(e))),
        };
        // Closing the session releases its lock whatever happened.
        lock_conn.close().await.ok();
        applied
    }

    /// Sets whose clock the ledger decides by (the owner's; `ledger_clock`). Only tests
    /// that step a clock of their own set [`ClockSource::Caller`]; doctor reports a ledger
    /// left so.
    pub async fn set_clock(&self, source: ClockSource) -> Result<()> {
        sqlx::query("UPDATE ledger_clock SET source = $1")
            .bind(source.as_str())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn measure_clock(&self) -> Result<airlock_store::LedgerClock> {
        let (source, now): (String, DateTime<Utc>) =
            sqlx::query_as("SELECT source, clock_timestamp() FROM ledger_clock")
                .fetch_one(&self.pool)
                .await
                .map_err(db)?;
        Ok(match source.as_str() {
            "caller" => airlock_store::LedgerClock::Caller,
            _ => airlock_store::LedgerClock::Database { now },
        })
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
    let code = sqlstate(&e);
    if let sqlx::Error::Database(d) = &e {
        match code.as_deref() {
            Some(TOO_LARGE) => {
                return StoreError::TooLarge(
                    d.message().trim_start_matches("airlock: ").to_owned(),
                );
            }
            Some(code @ (LOCK_NOT_AVAILABLE | QUERY_CANCELED)) => {
                let lock = code == LOCK_NOT_AVAILABLE;
                TIMEOUTS[usize::from(!lock)].fetch_add(1, Ordering::Relaxed);
                // Where it waited: the statement, or the function line that took the lock.
                let at = d
                    .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                    .and_then(|d| d.r#where())
                    .and_then(|w| w.lines().next())
                    .unwrap_or("a statement")
                    .to_owned();
                let timeout = |name, value| format!("{name} = {value}");
                tracing::warn!(target: "airlock::store", at, lock, "PostgreSQL gave up waiting");
                return StoreError::Timeout {
                    what: format!("for a {} ({at})", if lock { "lock" } else { "statement" }),
                    limit: if lock {
                        timeout("lock_timeout", LOCK_TIMEOUT)
                    } else {
                        timeout("statement_timeout", STATEMENT_TIMEOUT)
                    },
                };
            }
            _ => {}
        }
    }
    airlock_store_sql::column_error(e)
}

/// SQLSTATE of a lock wait that `lock_timeout` ended.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// SQLSTATE of a statement `statement_timeout` (or a cancel request) ended.
const QUERY_CANCELED: &str = "57014";

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

/// Maps a refusal raised by one of airlock's functions (`sql/functions.sql`: SQLSTATE
/// class AL, values in a JSON DETAIL) about post `id`; anything else as [`db`] does.
pub(crate) fn refusal(e: sqlx::Error, id: PostId) -> StoreError {
    let Some(code) = sqlstate(&e) else {
        return db(e);
    };
    let detail: serde_json::Value = e
        .as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>())
        .and_then(|d| d.detail())
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    let text = |key: &str| detail[key].as_str().map(str::to_owned);
    let status = |key: &str| text(key).as_deref().map(rows::status_of).transpose();
    match code.as_str() {
        ILLEGAL_TRANSITION => match (status("from"), status("to")) {
            (Ok(Some(from)), Ok(Some(to))) => StoreError::IllegalTransition { id, from, to },
            (Err(e), _) | (_, Err(e)) => e,
            _ => db(e),
        },
        QUARANTINED => StoreError::Quarantined(id),
        "AL010" => StoreError::NotFound(detail["id"].as_i64().map_or(id, PostId)),
        "AL011" => StoreError::Conflict(id),
        "AL012" => StoreError::Fenced {
            id,
            generation: detail["generation"].as_i64().unwrap_or_default(),
        },
        "AL013" => StoreError::Paused {
            scope: text("scope").unwrap_or_default(),
            reason: text("reason").unwrap_or_default(),
        },
        "AL014" => StoreError::Duplicate(text("what").unwrap_or_default()),
        "AL015" => StoreError::HasHistory(id),
        "AL016" => StoreError::IdempotencyMismatch(text("key").unwrap_or_default()),
        "AL017" => match status("status") {
            Ok(Some(status)) => StoreError::DuplicateText {
                earlier: PostId(detail["earlier"].as_i64().unwrap_or_default()),
                status,
            },
            Ok(None) => db(e),
            Err(e) => e,
        },
        "AL019" => StoreError::DraftLimit {
            actor: text("actor").unwrap_or_default(),
            held: detail["held"].as_i64().unwrap_or_default(),
            max: detail["max"]
                .as_u64()
                .and_then(|m| u32::try_from(m).ok())
                .unwrap_or_default(),
        },
        "AL020" => StoreError::Refused {
            id,
            rule: text("rule").unwrap_or_default(),
        },
        "AL021" => {
            let time = |key: &str| {
                text(key)
                    .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                    .map(|t| t.with_timezone(&Utc))
            };
            match (time("caller"), time("database")) {
                (Some(caller), Some(database)) => StoreError::ClockSkew { caller, database },
                _ => db(e),
            }
        }
        "AL022" => StoreError::Limits(text("what").unwrap_or_default()),
        "AL018" => match e.as_database_error() {
            Some(d) => StoreError::CorruptQuota(d.message().to_owned()),
            None => db(e),
        },
        _ => db(e),
    }
}

/// A time as the functions read it from JSON: RFC 3339 in microseconds, truncated as
/// sqlx truncates a bound `DateTime`.
pub(crate) fn json_time(at: DateTime<Utc>) -> serde_json::Value {
    serde_json::Value::String(at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

/// A duration in microseconds, for the functions' `_us` parameters.
pub(crate) fn micros(d: chrono::Duration) -> i64 {
    d.num_microseconds().unwrap_or(i64::MAX)
}

/// Notifications as `airlock_insert_outbox` reads them.
pub(crate) fn notify_json(notify: &[NewNotification]) -> sqlx::types::Json<serde_json::Value> {
    sqlx::types::Json(serde_json::Value::Array(
        notify
            .iter()
            .map(|n| {
                serde_json::json!({
                    "sink": n.sink,
                    "event": n.event,
                    "post_id": n.post_id.map(|id| id.0),
                    "payload": n.payload,
                })
            })
            .collect(),
    ))
}

/// Whether a database error is a unique violation.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

/// Begins a transaction on a pooled connection.
pub(crate) async fn begin(pool: &PgPool) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    pool.begin().await.map_err(db)
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

impl airlock_store::ReadsFrom for PgStore {
    fn reader(&self) -> &dyn airlock_store::Reads {
        &self.reads
    }
}

#[async_trait]
impl Store for PgStore {
    // Writes: each one call of airlock's functions, one round trip.

    // PostgreSQL's own: the event feed and wake-ups.

    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>> {
        posts::events_after(self, after, limit).await
    }

    async fn ledger_clock(&self) -> Result<airlock_store::LedgerClock> {
        self.measure_clock().await
    }

    async fn due_signals(&self) -> u64 {
        self.wake.signals()
    }

    async fn wait_for_due(&self, seen: u64, timeout: StdDuration) -> u64 {
        self.wake.wait(seen, timeout).await
    }

    fn timeouts(&self) -> (u64, u64) {
        (
            TIMEOUTS[0].load(Ordering::Relaxed),
            TIMEOUTS[1].load(Ordering::Relaxed),
        )
    }
}
