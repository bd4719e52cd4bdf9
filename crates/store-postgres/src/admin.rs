//! Pauses, the notification outbox, API tokens, and ledger health.
//!
//! Outbox rows are leased with `FOR UPDATE SKIP LOCKED`, so deliverers in several
//! processes never hand out the same notification at once. Nothing here touches a
//! post's status.

use chrono::{DateTime, Duration, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};

use airlock_core::{ChannelName, PostId, PostStatus, RoleSet};
use airlock_store::{
    NewNotification, NewToken, Notification, OutboxStats, Pause, PauseScope, QuotaRows, Result,
    StoreError, TokenRecord,
};

use crate::rows::get;
use crate::{begin, db, is_unique_violation, lock, publish, status_of, xact_lock};

/// Inserts a pause unless the scope is already paused; queues `notify` only for a new pause.
pub(crate) async fn insert_pause(
    conn: &mut PgConnection,
    scope: &PauseScope,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
    notify: &[NewNotification],
) -> Result<bool> {
    // Wait for intents being recorded now; every later one sees this pause.
    xact_lock(&mut *conn, lock::PAUSES, 0).await?;
    let inserted = sqlx::query(
        "INSERT INTO pauses (scope, reason, actor, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (scope) WHERE resumed_at IS NULL DO NOTHING",
    )
    .bind(scope.as_key())
    .bind(reason)
    .bind(actor)
    .bind(now)
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
    pool: &PgPool,
    scope: &PauseScope,
    actor: &str,
    now: DateTime<Utc>,
    notify: Vec<NewNotification>,
) -> Result<bool> {
    let mut tx = begin(pool).await?;
    // The trigger on `pauses` sends NOTIFY airlock_due with this transaction.
    let lifted = sqlx::query(
        "UPDATE pauses SET resumed_at = $1, resumed_by = $2 \
         WHERE scope = $3 AND resumed_at IS NULL",
    )
    .bind(now)
    .bind(actor)
    .bind(scope.as_key())
    .execute(&mut *tx)
    .await
    .map_err(db)?
    .rows_affected()
        > 0;
    if lifted {
        if let PauseScope::Channel(channel) = scope {
            sqlx::query("DELETE FROM channel_failures WHERE channel = $1")
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

pub(crate) async fn pauses(pool: &PgPool) -> Result<Vec<Pause>> {
    sqlx::query(
        "SELECT scope, reason, actor, created_at FROM pauses WHERE resumed_at IS NULL ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(|row| {
        Ok(Pause {
            scope: get(row, "scope")?,
            reason: get(row, "reason")?,
            actor: get(row, "actor")?,
            at: get(row, "created_at")?,
        })
    })
    .collect()
}

pub(crate) async fn insert_outbox(
    conn: &mut PgConnection,
    notify: &[NewNotification],
    now: DateTime<Utc>,
) -> Result<()> {
    for note in notify {
        sqlx::query(
            "INSERT INTO outbox (sink, event, post_id, payload, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $5)",
        )
        .bind(&note.sink)
        .bind(&note.event)
        .bind(note.post_id.map(|id| id.0))
        .bind(Json(&note.payload))
        .bind(now)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

pub(crate) async fn claim_notifications(
    pool: &PgPool,
    now: DateTime<Utc>,
    worker: &str,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Notification>> {
    let rows = sqlx::query(
        "WITH due AS ( \
           SELECT id FROM outbox \
           WHERE delivered_at IS NULL AND abandoned_at IS NULL AND next_attempt_at <= $1 \
             AND (locked_until IS NULL OR locked_until < $1) \
           ORDER BY id LIMIT $2 \
           FOR UPDATE SKIP LOCKED) \
         UPDATE outbox o SET locked_by = $3, locked_until = $4 FROM due WHERE o.id = due.id \
         RETURNING o.id, o.sink, o.event, o.post_id, o.payload, o.attempts, o.created_at",
    )
    .bind(now)
    .bind(i64::from(limit))
    .bind(worker)
    .bind(lease_until)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let mut claimed = rows
        .iter()
        .map(|row| {
            let payload: Json<serde_json::Value> = get(row, "payload")?;
            Ok(Notification {
                id: get(row, "id")?,
                sink: get(row, "sink")?,
                event: get(row, "event")?,
                post_id: get::<Option<i64>>(row, "post_id")?.map(PostId),
                payload: payload.0,
                attempts: get(row, "attempts")?,
                created_at: get(row, "created_at")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    claimed.sort_by_key(|n| n.id);
    Ok(claimed)
}

/// Marks a notification delivered while `worker` still holds it.
pub(crate) async fn notification_delivered(
    pool: &PgPool,
    id: i64,
    worker: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE outbox SET delivered_at = $1, locked_by = NULL, locked_until = NULL, \
         last_error = NULL \
         WHERE id = $2 AND locked_by = $3 AND delivered_at IS NULL AND abandoned_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .bind(worker)
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(done.rows_affected() > 0)
}

/// Records a failed delivery while `worker` still holds it.
pub(crate) async fn notification_failed(
    pool: &PgPool,
    id: i64,
    worker: &str,
    error: &str,
    retry_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let query = match retry_at {
        Some(at) => sqlx::query(
            "UPDATE outbox SET attempts = attempts + 1, last_error = $1, next_attempt_at = $2, \
             locked_by = NULL, locked_until = NULL \
             WHERE id = $3 AND locked_by = $4 AND delivered_at IS NULL AND abandoned_at IS NULL",
        )
        .bind(error)
        .bind(at),
        None => sqlx::query(
            "UPDATE outbox SET attempts = attempts + 1, last_error = $1, abandoned_at = $2, \
             locked_by = NULL, locked_until = NULL \
             WHERE id = $3 AND locked_by = $4 AND delivered_at IS NULL AND abandoned_at IS NULL",
        )
        .bind(error)
        .bind(now),
    };
    let done = query
        .bind(id)
        .bind(worker)
        .execute(pool)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn outbox_stats(pool: &PgPool) -> Result<OutboxStats> {
    let row = sqlx::query(
        "SELECT \
           count(*) FILTER (WHERE delivered_at IS NULL AND abandoned_at IS NULL) AS pending, \
           count(*) FILTER (WHERE abandoned_at IS NOT NULL) AS abandoned, \
           count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered, \
           min(created_at) FILTER (WHERE delivered_at IS NULL AND abandoned_at IS NULL) AS oldest \
         FROM outbox",
    )
    .fetch_one(pool)
    .await
    .map_err(db)?;
    Ok(OutboxStats {
        pending: get(&row, "pending")?,
        abandoned: get(&row, "abandoned")?,
        delivered: get(&row, "delivered")?,
        oldest_pending_at: get(&row, "oldest")?,
    })
}

pub(crate) async fn create_token(pool: &PgPool, token: NewToken) -> Result<()> {
    let result = sqlx::query(
        "INSERT INTO tokens (name, roles, secret_sha256, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&token.name)
    .bind(token.roles.to_list())
    .bind(&token.secret_sha256)
    .bind(token.now)
    .execute(pool)
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate(format!(
            "a token named {:?}",
            token.name
        ))),
        Err(e) => Err(db(e)),
    }
}

fn token_row(row: &sqlx::postgres::PgRow) -> Result<TokenRecord> {
    let roles: String = get(row, "roles")?;
    Ok(TokenRecord {
        name: get(row, "name")?,
        roles: RoleSet::parse_list(&roles).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        created_at: get(row, "created_at")?,
        revoked_at: get(row, "revoked_at")?,
        last_used_at: get(row, "last_used_at")?,
    })
}

pub(crate) async fn tokens(pool: &PgPool) -> Result<Vec<TokenRecord>> {
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

pub(crate) async fn revoke_token(pool: &PgPool, name: &str, now: DateTime<Utc>) -> Result<bool> {
    Ok(
        sqlx::query("UPDATE tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(name)
            .execute(pool)
            .await
            .map_err(db)?
            .rows_affected()
            > 0,
    )
}

pub(crate) async fn authenticate(
    pool: &PgPool,
    secret_sha256: &str,
    now: DateTime<Utc>,
) -> Result<Option<TokenRecord>> {
    let row = sqlx::query(
        "SELECT name, roles, created_at, revoked_at, last_used_at FROM tokens \
         WHERE secret_sha256 = $1 AND revoked_at IS NULL",
    )
    .bind(secret_sha256)
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    let Some(record) = row.as_ref().map(token_row).transpose()? else {
        return Ok(None);
    };
    // Note use at most once a minute: a write per request is wasted work.
    if record
        .last_used_at
        .is_none_or(|at| now - at > Duration::minutes(1))
    {
        sqlx::query("UPDATE tokens SET last_used_at = $1 WHERE name = $2")
            .bind(now)
            .bind(&record.name)
            .execute(pool)
            .await
            .map_err(db)?;
    }
    Ok(Some(record))
}

pub(crate) async fn status_counts(pool: &PgPool) -> Result<Vec<(PostStatus, i64)>> {
    sqlx::query("SELECT status, count(*) AS n FROM posts GROUP BY status ORDER BY status")
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(|row| {
            let status: String = get(row, "status")?;
            Ok((status_of(&status)?, get(row, "n")?))
        })
        .collect()
}

/// Each check is a query returning offending post ids, and the sentence that explains them.
/// The same checks as the SQLite backend's.
const INVARIANTS: &[(&str, &str)] = &[
    (
        "SELECT id FROM posts WHERE status = 'posted' AND posted_at IS NULL LIMIT 20",
        "posted without posted_at",
    ),
    (
        "SELECT id FROM posts WHERE posted_at IS NOT NULL AND status <> 'posted' LIMIT 20",
        "have posted_at but are not posted",
    ),
    (
        "SELECT id FROM posts WHERE status = 'posting' \
         AND (lease_owner IS NULL OR lease_expires_at IS NULL) LIMIT 20",
        "are posting without a lease",
    ),
    (
        "SELECT id FROM posts WHERE status IN ('approved', 'posting', 'posted') \
         AND approved_hash IS NULL LIMIT 20",
        "passed approval without an approved_hash",
    ),
    (
        "SELECT r.post_id FROM reservations r JOIN posts p ON p.id = r.post_id \
         WHERE r.state = 'reserved' AND p.status NOT IN ('posting', 'needs_review') LIMIT 20",
        "hold a reserved quota slot but are neither posting nor waiting for review",
    ),
    (
        "SELECT i.post_id FROM intents i JOIN posts p ON p.id = i.post_id \
         WHERE i.phase = 'sending' AND NOT (p.status = 'posting' AND p.generation = i.generation) \
         LIMIT 20",
        "have a 'sending' intent that no live claim owns",
    ),
    (
        "SELECT p.id FROM posts p WHERE NOT EXISTS \
         (SELECT 1 FROM post_events e WHERE e.post_id = p.id AND e.from_status IS NULL) LIMIT 20",
        "have no creation event",
    ),
];

pub(crate) async fn check_invariants(pool: &PgPool, now: DateTime<Utc>) -> Result<Vec<String>> {
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
    match quota {
        Err(StoreError::CorruptQuota(reason)) => problems.push(reason),
        other => {
            other?;
        }
    }
    Ok(problems)
}

pub(crate) async fn sources_used(
    pool: &PgPool,
    channel: &ChannelName,
    since: DateTime<Utc>,
) -> Result<Vec<(String, DateTime<Utc>)>> {
    sqlx::query(
        "SELECT source_path, max(created_at) AS last FROM posts \
         WHERE channel = $1 AND source_path IS NOT NULL AND created_at >= $2 \
         GROUP BY source_path ORDER BY source_path",
    )
    .bind(channel.as_str())
    .bind(since)
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(|row| Ok((get(row, "source_path")?, get(row, "last")?)))
    .collect()
}

/// Server settings under which a commit may not survive a crash.
pub(crate) async fn durability_warnings(pool: &PgPool) -> Result<Vec<String>> {
    let settings: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, setting FROM pg_settings \
         WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')",
    )
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let mut warnings = Vec::new();
    for (name, setting) in settings {
        match (name.as_str(), setting.as_str()) {
            ("fsync", "off") => warnings.push(
                "PostgreSQL fsync is off: a crash can lose or corrupt any commit, intents included; set fsync = on".to_owned(),
            ),
            ("full_page_writes", "off") => warnings.push(
                "PostgreSQL full_page_writes is off: a crash can leave torn pages; set full_page_writes = on".to_owned(),
            ),
            ("synchronous_commit", "off") => warnings.push(
                "PostgreSQL synchronous_commit is off for this role or database: airlock forces it on for intents and outcomes, but approvals, pauses and other writes may be lost in a crash; set it to on".to_owned(),
            ),
            _ => {}
        }
    }
    Ok(warnings)
}
