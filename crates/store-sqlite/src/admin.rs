//! Pauses, the notification outbox, API tokens, and ledger health.

use chrono::{DateTime, Duration, Utc};
use sqlx::{Row, SqliteConnection, SqlitePool};

use airlock_core::{ChannelName, PostId, PostStatus, RoleSet};
use airlock_store::{
    NewNotification, NewToken, Notification, OutboxStats, Pause, PauseScope, QuotaRows, Result,
    StoreError, TokenRecord,
};

use crate::{SqliteStore, db, parse_ts, publish, status_of, ts};

fn time(text: &str) -> Result<DateTime<Utc>> {
    parse_ts(text).map_err(|t| StoreError::Corrupt(format!("{t:?} is not a time")))
}

fn opt_time(text: Option<String>) -> Result<Option<DateTime<Utc>>> {
    text.as_deref().map(time).transpose()
}

/// Inserts a pause unless the scope is already paused; queues `notify` only for a new pause.
pub(crate) async fn insert_pause(
    conn: &mut SqliteConnection,
    scope: &PauseScope,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
    notify: &[NewNotification],
) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT OR IGNORE INTO pauses (scope, reason, actor, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(scope.as_key())
    .bind(reason)
    .bind(actor)
    .bind(ts(now))
    .execute(&mut *conn)
    .await
    .map_err(db)?
    .rows_affected()
        > 0;
    if inserted {
        insert_outbox(conn, notify, now).await?;
    }
    Ok(inserted)
}

pub(crate) async fn resume(
    store: &SqliteStore,
    scope: &PauseScope,
    actor: &str,
    now: DateTime<Utc>,
    notify: Vec<NewNotification>,
) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let lifted = sqlx::query(
        "UPDATE pauses SET resumed_at = ?, resumed_by = ? WHERE scope = ? AND resumed_at IS NULL",
    )
    .bind(ts(now))
    .bind(actor)
    .bind(scope.as_key())
    .execute(&mut *tx)
    .await
    .map_err(db)?
    .rows_affected()
        > 0;
    if lifted {
        if let PauseScope::Channel(channel) = scope {
            sqlx::query("DELETE FROM channel_failures WHERE channel = ?")
                .bind(channel.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        insert_outbox(&mut tx, &notify, now).await?;
    }
    tx.commit().await.map_err(db)?;
    Ok(lifted)
}

pub(crate) async fn pauses(pool: &SqlitePool) -> Result<Vec<Pause>> {
    sqlx::query(
        "SELECT scope, reason, actor, created_at FROM pauses WHERE resumed_at IS NULL ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(|row| {
        let at: String = row.try_get("created_at").map_err(db)?;
        Ok(Pause {
            scope: row.try_get("scope").map_err(db)?,
            reason: row.try_get("reason").map_err(db)?,
            actor: row.try_get("actor").map_err(db)?,
            at: time(&at)?,
        })
    })
    .collect()
}

pub(crate) async fn insert_outbox(
    conn: &mut SqliteConnection,
    notify: &[NewNotification],
    now: DateTime<Utc>,
) -> Result<()> {
    for note in notify {
        sqlx::query(
            "INSERT INTO outbox (sink, event, post_id, payload, created_at, next_attempt_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&note.sink)
        .bind(&note.event)
        .bind(note.post_id.map(|id| id.0))
        .bind(note.payload.to_string())
        .bind(ts(now))
        .bind(ts(now))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

pub(crate) async fn claim_notifications(
    store: &SqliteStore,
    now: DateTime<Utc>,
    worker: &str,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Notification>> {
    let mut tx = store.begin_write().await?;
    let rows = sqlx::query(
        "UPDATE outbox SET locked_by = ?, locked_until = ? WHERE id IN ( \
           SELECT id FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL \
           AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?) \
           ORDER BY id LIMIT ?) \
         RETURNING id, sink, event, post_id, payload, attempts, created_at",
    )
    .bind(worker)
    .bind(ts(lease_until))
    .bind(ts(now))
    .bind(ts(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    let mut claimed = rows
        .iter()
        .map(|row| {
            let payload: String = row.try_get("payload").map_err(db)?;
            let created_at: String = row.try_get("created_at").map_err(db)?;
            Ok(Notification {
                id: row.try_get("id").map_err(db)?,
                sink: row.try_get("sink").map_err(db)?,
                event: row.try_get("event").map_err(db)?,
                post_id: row
                    .try_get::<Option<i64>, _>("post_id")
                    .map_err(db)?
                    .map(PostId),
                payload: serde_json::from_str(&payload)
                    .map_err(|e| StoreError::Corrupt(format!("outbox payload: {e}")))?,
                attempts: row.try_get("attempts").map_err(db)?,
                created_at: time(&created_at)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    claimed.sort_by_key(|n| n.id);
    Ok(claimed)
}

/// Marks a notification delivered while `worker` still holds it.
pub(crate) async fn notification_delivered(
    pool: &SqlitePool,
    id: i64,
    worker: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE outbox SET delivered_at = ?, locked_by = NULL, locked_until = NULL, last_error = NULL \
         WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
    )
    .bind(ts(now))
    .bind(id)
    .bind(worker)
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(done.rows_affected() > 0)
}

/// Records a failed delivery while `worker` still holds it.
pub(crate) async fn notification_failed(
    pool: &SqlitePool,
    id: i64,
    worker: &str,
    error: &str,
    retry_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let query = match retry_at {
        Some(at) => sqlx::query(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, \
             locked_by = NULL, locked_until = NULL \
             WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
        )
        .bind(error)
        .bind(ts(at)),
        None => sqlx::query(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, abandoned_at = ?, \
             locked_by = NULL, locked_until = NULL \
             WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
        )
        .bind(error)
        .bind(ts(now)),
    };
    let done = query
        .bind(id)
        .bind(worker)
        .execute(pool)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn outbox_stats(pool: &SqlitePool) -> Result<OutboxStats> {
    let row = sqlx::query(
        "SELECT \
           (SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL) AS pending, \
           (SELECT count(*) FROM outbox WHERE abandoned_at IS NOT NULL) AS abandoned, \
           (SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL) AS delivered, \
           (SELECT min(created_at) FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL) AS oldest",
    )
    .fetch_one(pool)
    .await
    .map_err(db)?;
    Ok(OutboxStats {
        pending: row.try_get("pending").map_err(db)?,
        abandoned: row.try_get("abandoned").map_err(db)?,
        delivered: row.try_get("delivered").map_err(db)?,
        oldest_pending_at: opt_time(row.try_get("oldest").map_err(db)?)?,
    })
}

pub(crate) async fn create_token(pool: &SqlitePool, token: NewToken) -> Result<()> {
    let result = sqlx::query(
        "INSERT INTO tokens (name, roles, secret_sha256, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(&token.name)
    .bind(token.roles.to_list())
    .bind(&token.secret_sha256)
    .bind(ts(token.now))
    .execute(pool)
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate(
            format!("a token named {:?}", token.name),
        )),
        Err(e) => Err(db(e)),
    }
}

fn token_row(row: &sqlx::sqlite::SqliteRow) -> Result<TokenRecord> {
    let roles: String = row.try_get("roles").map_err(db)?;
    let created_at: String = row.try_get("created_at").map_err(db)?;
    Ok(TokenRecord {
        name: row.try_get("name").map_err(db)?,
        roles: RoleSet::parse_list(&roles).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        created_at: time(&created_at)?,
        revoked_at: opt_time(row.try_get("revoked_at").map_err(db)?)?,
        last_used_at: opt_time(row.try_get("last_used_at").map_err(db)?)?,
    })
}

pub(crate) async fn tokens(pool: &SqlitePool) -> Result<Vec<TokenRecord>> {
    sqlx::query(
        "SELECT name, roles, created_at, revoked_at, last_used_at FROM tokens ORDER BY name",
    )
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(token_row)
    .collect()
}

pub(crate) async fn revoke_token(
    pool: &SqlitePool,
    name: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    Ok(
        sqlx::query("UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL")
            .bind(ts(now))
            .bind(name)
            .execute(pool)
            .await
            .map_err(db)?
            .rows_affected()
            > 0,
    )
}

pub(crate) async fn authenticate(
    pool: &SqlitePool,
    secret_sha256: &str,
    now: DateTime<Utc>,
) -> Result<Option<TokenRecord>> {
    let row = sqlx::query(
        "SELECT name, roles, created_at, revoked_at, last_used_at FROM tokens \
         WHERE secret_sha256 = ? AND revoked_at IS NULL",
    )
    .bind(secret_sha256)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    let Some(record) = row.as_ref().map(token_row).transpose()? else {
        return Ok(None);
    };
    // Note use at most once a minute: a write per request would serialize readers behind the write lock.
    if record
        .last_used_at
        .is_none_or(|at| now - at > Duration::minutes(1))
    {
        sqlx::query("UPDATE tokens SET last_used_at = ? WHERE name = ?")
            .bind(ts(now))
            .bind(&record.name)
            .execute(pool)
            .await
            .map_err(db)?;
    }
    Ok(Some(record))
}

pub(crate) async fn status_counts(pool: &SqlitePool) -> Result<Vec<(PostStatus, i64)>> {
    sqlx::query("SELECT status, count(*) AS n FROM posts GROUP BY status ORDER BY status")
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(|row| {
            let status: String = row.try_get("status").map_err(db)?;
            Ok((status_of(&status)?, row.try_get("n").map_err(db)?))
        })
        .collect()
}

/// Each check is a query returning offending post ids, and the sentence that explains them.
const INVARIANTS: &[(&str, &str)] = &[
    (
        "SELECT id FROM posts WHERE status = 'posted' AND posted_at IS NULL LIMIT 20",
        "posted without posted_at",
    ),
    (
        "SELECT id FROM posts WHERE posted_at IS NOT NULL AND status NOT IN ('posted') LIMIT 20",
        "have posted_at but are not posted",
    ),
    (
        "SELECT id FROM posts WHERE status = 'posting' AND (lease_owner IS NULL OR lease_expires_at IS NULL) LIMIT 20",
        "are posting without a lease",
    ),
    (
        "SELECT id FROM posts WHERE status IN ('approved', 'posting', 'posted') AND approved_hash IS NULL LIMIT 20",
        "passed approval without an approved_hash",
    ),
    (
        "SELECT r.post_id FROM reservations r JOIN posts p ON p.id = r.post_id \
         WHERE r.state = 'reserved' AND p.status NOT IN ('posting', 'needs_review') LIMIT 20",
        "hold a reserved quota slot but are neither posting nor waiting for review",
    ),
    (
        "SELECT i.post_id FROM intents i JOIN posts p ON p.id = i.post_id \
         WHERE i.phase = 'sending' AND NOT (p.status = 'posting' AND p.generation = i.generation) LIMIT 20",
        "have a 'sending' intent that no live claim owns",
    ),
    (
        "SELECT p.id FROM posts p WHERE NOT EXISTS \
         (SELECT 1 FROM post_events e WHERE e.post_id = p.id AND e.from_status IS NULL) LIMIT 20",
        "have no creation event",
    ),
];

pub(crate) async fn check_invariants(pool: &SqlitePool, now: DateTime<Utc>) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (query, sentence) in INVARIANTS {
        let ids: Vec<i64> = sqlx::query_scalar(*query)
            .fetch_all(pool)
            .await
            .map_err(db)?;
        if !ids.is_empty() {
            let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
            problems.push(format!("posts {} {sentence}", ids.join(", ")));
        }
    }
    let mut conn = pool.acquire().await.map_err(db)?;
    let quota: Result<QuotaRows> =
        publish::live_reservations(&mut conn, now - Duration::days(2), now).await;
    if let Err(StoreError::CorruptQuota(reason)) = quota {
        problems.push(reason);
    } else {
        quota?;
    }
    Ok(problems)
}

pub(crate) async fn sources_used(
    pool: &SqlitePool,
    channel: &ChannelName,
    since: DateTime<Utc>,
) -> Result<Vec<(String, DateTime<Utc>)>> {
    sqlx::query(
        "SELECT source_path, max(created_at) AS last FROM posts \
         WHERE channel = ? AND source_path IS NOT NULL AND created_at >= ? GROUP BY source_path",
    )
    .bind(channel.as_str())
    .bind(ts(since))
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(|row| {
        let last: String = row.try_get("last").map_err(db)?;
        Ok((row.try_get("source_path").map_err(db)?, time(&last)?))
    })
    .collect()
}

/// The connection settings airlock opens SQLite with, read back: WAL and `synchronous =
/// FULL` (2), so a committed intent survives a power cut.
pub(crate) async fn durability_warnings(pool: &SqlitePool) -> Result<Vec<String>> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let mut warnings = Vec::new();
    if synchronous < 2 {
        warnings.push(format!(
            "SQLite synchronous is {synchronous}, not FULL (2): a commit may not survive a power cut"
        ));
    }
    if !journal.eq_ignore_ascii_case("wal") {
        warnings.push(format!(
            "SQLite journal_mode is {journal}, not wal: readers and writers block each other"
        ));
    }
    Ok(warnings)
}
