//! Pauses, the notification outbox, API tokens, and ledger health.
//!
//! Outbox rows are leased with `FOR UPDATE SKIP LOCKED`, so deliverers in several
//! processes never hand out the same notification at once. Nothing here touches a
//! post's status.

use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;
use sqlx::types::Json;

use airlock_core::{ChannelName, PostId, PostStatus, RoleSet};
use airlock_store::{
    NewNotification, NewToken, Notification, OutboxStats, Pause, PauseScope, QuotaRows, Result,
    StoreError, TokenRecord,
};

use crate::rows::get;
use crate::{db, is_unique_violation, notify_json, publish, status_of};

/// Store::pause: `airlock_pause` (a new pause and its notifications, or nothing when the
/// scope is paused already).
pub(crate) async fn pause(
    pool: &PgPool,
    scope: &PauseScope,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
    notify: &[NewNotification],
) -> Result<bool> {
    sqlx::query_scalar("SELECT airlock_pause($1, $2, $3, $4, $5)")
        .bind(scope.as_key())
        .bind(reason)
        .bind(actor)
        .bind(now)
        .bind(notify_json(notify))
        .fetch_one(pool)
        .await
        .map_err(db)
}

/// Store::resume: `airlock_resume` (the pause lifted, a channel's failures reset, the
/// notifications queued).
pub(crate) async fn resume(
    pool: &PgPool,
    scope: &PauseScope,
    actor: &str,
    now: DateTime<Utc>,
    notify: Vec<NewNotification>,
) -> Result<bool> {
    sqlx::query_scalar("SELECT airlock_resume($1, $2, $3, $4, $5)")
        .bind(scope.as_key())
        .bind(matches!(scope, PauseScope::Channel(_)))
        .bind(actor)
        .bind(now)
        .bind(notify_json(&notify))
        .fetch_one(pool)
        .await
        .map_err(db)
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

pub(crate) async fn claim_notifications(
    pool: &PgPool,
    now: DateTime<Utc>,
    worker: &str,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Notification>> {
    let rows = sqlx::query("SELECT * FROM airlock_claim_notifications($1, $2, $3, $4)")
        .bind(now)
        .bind(worker)
        .bind(lease_until)
        .bind(i64::from(limit))
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
    sqlx::query_scalar("SELECT airlock_notification_delivered($1, $2, $3)")
        .bind(id)
        .bind(worker)
        .bind(now)
        .fetch_one(pool)
        .await
        .map_err(db)
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
    sqlx::query_scalar("SELECT airlock_notification_failed($1, $2, $3, $4, $5)")
        .bind(id)
        .bind(worker)
        .bind(error)
        .bind(retry_at)
        .bind(now)
        .fetch_one(pool)
        .await
        .map_err(db)
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
    let result = sqlx::query("SELECT airlock_create_token($1, $2, $3, $4)")
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
    sqlx::query_scalar("SELECT airlock_revoke_token($1, $2)")
        .bind(name)
        .bind(now)
        .fetch_one(pool)
        .await
        .map_err(db)
}

/// Store::authenticate: `airlock_authenticate` (the live token with this hash, its use
/// noted at most once a minute); the hashes never leave the database.
pub(crate) async fn authenticate(
    pool: &PgPool,
    secret_sha256: &str,
    now: DateTime<Utc>,
) -> Result<Option<TokenRecord>> {
    let row = sqlx::query("SELECT * FROM airlock_authenticate($1, $2)")
        .bind(secret_sha256)
        .bind(now)
        .fetch_optional(pool)
        .await
        .map_err(db)?;
    row.as_ref().map(token_row).transpose()
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
