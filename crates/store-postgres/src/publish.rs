//! The store's side of the guarded publish path: claims, reservations, intents,
//! expired leases and the review queue.
//!
//! Claims and reservations are short transactions and never wait for a platform.
//! A claim skips rows other claimers hold (`FOR UPDATE SKIP LOCKED`) and reads its
//! result back. Every reservation serializes on one advisory lock for the global
//! window, so the count it decides on includes every reservation committed before it,
//! from any process.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Row};

use airlock_core::quota::Denial;
use airlock_core::{ChannelName, Intent, Post, PostId, PostStatus};
use airlock_store::decide::{claimable, lease_outlasts};
use airlock_store::{
    ExpiredLease, IntentRequest, PostClaim, PostClaimed, QuotaClaim, QuotaRows, RawReservation,
    Result, ReviewItem, StoreError, Unreadable, decide_reservation, now_after, quota_since,
};

use crate::posts::get_in;
use crate::rows::{self, INTENT_COLUMNS, POST_COLUMNS};
use crate::{begin, db, durable_commit, is_unique_violation, lock, xact_lock, xact_lock_shared};

fn names(channels: &[ChannelName]) -> Vec<String> {
    channels.iter().map(|c| c.as_str().to_owned()).collect()
}

/// Locks the post and fails with [`StoreError::Fenced`] unless it is `posting` under
/// `generation` (and, when `lease_valid_at` is given, its lease has not expired by then).
async fn check_fence(
    conn: &mut PgConnection,
    id: PostId,
    generation: i64,
    lease_valid_at: Option<DateTime<Utc>>,
) -> Result<Option<DateTime<Utc>>> {
    let row = sqlx::query(
        "SELECT status, generation, lease_expires_at FROM posts WHERE id = $1 FOR UPDATE",
    )
    .bind(id.0)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?
    .ok_or(StoreError::NotFound(id))?;
    let status: String = rows::get(&row, "status")?;
    let current: i64 = rows::get(&row, "generation")?;
    let lease: Option<DateTime<Utc>> = rows::get(&row, "lease_expires_at")?;
    let lease_ok = match (lease_valid_at, lease) {
        (None, _) => true,
        (Some(at), Some(lease)) => lease > at,
        (Some(_), None) => false,
    };
    if status == PostStatus::Posting.as_str() && current == generation && lease_ok {
        Ok(lease)
    } else {
        Err(StoreError::Fenced { id, generation })
    }
}

/// Live reservations sent at or after `since`, and every unsent one, checked fail-closed.
/// A time PostgreSQL holds but chrono cannot (`±infinity`) is handed to the check as
/// unreadable text, never dropped.
pub(crate) async fn live_reservations(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<QuotaRows> {
    // Each branch reads the partial index `reservations_live`; the last one makes sure a
    // row sent at '-infinity' is seen (and refused) rather than silently out of range.
    let rows = sqlx::query(
        "WITH live AS ( \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at >= $1 \
           UNION ALL \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at IS NULL \
           UNION ALL \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at = '-infinity') \
         SELECT id, channel, state, cost_usd_micros, \
           CASE WHEN isfinite(created_at) THEN created_at END AS created_at, \
           created_at::text AS created_text, \
           CASE WHEN isfinite(sent_at) THEN sent_at END AS sent_at, \
           sent_at::text AS sent_text \
         FROM live",
    )
    .bind(since)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let mut raw = Vec::with_capacity(rows.len());
    for row in rows {
        let created_at: Option<DateTime<Utc>> = rows::get(&row, "created_at")?;
        let created_text: String = rows::get(&row, "created_text")?;
        let sent_at: Option<DateTime<Utc>> = rows::get(&row, "sent_at")?;
        let sent_text: Option<String> = rows::get(&row, "sent_text")?;
        raw.push(RawReservation {
            id: row.try_get("id").map_err(db)?,
            channel: row.try_get("channel").map_err(db)?,
            state: row.try_get("state").map_err(db)?,
            created_at: created_at.ok_or(created_text),
            sent_at: sent_text.map(|text| sent_at.ok_or(text)),
            cost: row.try_get("cost_usd_micros").map_err(db)?,
        });
    }
    QuotaRows::check(raw, now)
}

pub(crate) async fn record_intent(pool: &PgPool, req: &IntentRequest) -> Result<Intent> {
    let started = std::time::Instant::now();
    let mut tx = begin(pool).await?;
    // The fence locks the post row; the lease is judged at the time that lock is ours.
    let lease = check_fence(&mut tx, req.post_id, req.generation, None).await?;
    let now = now_after(req.now, started);
    if !lease.is_some_and(|lease| lease_outlasts(lease, now, req.lease_margin)) {
        return Err(StoreError::Fenced {
            id: req.post_id,
            generation: req.generation,
        });
    }
    if let Some((scope, reason)) = active_pause(&mut tx, req.post_id).await? {
        return Err(StoreError::Paused { scope, reason });
    }
    let intent = insert_intent(
        &mut tx,
        req.post_id,
        req.generation,
        &req.idempotency_key,
        req.platform_ref.as_deref(),
        now,
    )
    .await?;
    tx.commit().await.map_err(db)?;
    Ok(intent)
}

/// The pause that holds a post's channel (or everything), if any. Takes the pauses lock
/// shared — shared with other intents, exclusive with a pause being set — so a pause
/// that has returned to its caller is seen here.
async fn active_pause(conn: &mut PgConnection, id: PostId) -> Result<Option<(String, String)>> {
    xact_lock_shared(&mut *conn, lock::PAUSES, 0).await?;
    sqlx::query_as(
        "SELECT scope, reason FROM pauses WHERE resumed_at IS NULL \
         AND (scope = '*' OR scope = (SELECT channel FROM posts WHERE id = $1)) \
         ORDER BY scope = '*' DESC, id LIMIT 1",
    )
    .bind(id.0)
    .fetch_optional(conn)
    .await
    .map_err(db)
}

/// Records a `sending` intent, committed durably, and marks the generation's reservation
/// as sent at `now`.
async fn insert_intent(
    conn: &mut PgConnection,
    post_id: PostId,
    generation: i64,
    idempotency_key: &str,
    platform_ref: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Intent> {
    durable_commit(&mut *conn).await?;
    let row = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO intents (post_id, generation, idempotency_key, phase, platform_ref, created_at) \
         VALUES ($1, $2, $3, 'sending', $4, $5) RETURNING {INTENT_COLUMNS}"
    )))
    .bind(post_id.0)
    .bind(generation)
    .bind(idempotency_key)
    .bind(platform_ref)
    .bind(now)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| {
        if is_unique_violation(&e) {
            StoreError::Duplicate(format!(
                "an intent for post {post_id} generation {generation}"
            ))
        } else {
            db(e)
        }
    })?;
    let intent = rows::intent(&row)?;
    sqlx::query(
        "UPDATE reservations SET sent_at = $1 \
         WHERE post_id = $2 AND generation = $3 AND state = 'reserved'",
    )
    .bind(now)
    .bind(post_id.0)
    .bind(generation)
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(intent)
}

/// The quota decision for one more publish on `channel`, serialized on the global window:
/// the rows are read by a statement whose snapshot is taken after the lock, so it sees
/// every reservation committed by the previous holder (the transaction must be READ
/// COMMITTED).
async fn decide_quota(
    conn: &mut PgConnection,
    channel: &ChannelName,
    rules: &QuotaClaim,
    started: std::time::Instant,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, std::result::Result<(), Denial>)> {
    xact_lock(&mut *conn, lock::QUOTA, 0).await?;
    let now = now_after(now, started);
    let live = live_reservations(conn, quota_since(now, rules), now).await?;
    Ok((now, decide_reservation(now, channel, rules, &live)))
}

async fn insert_reservation(
    conn: &mut PgConnection,
    post_id: PostId,
    generation: i64,
    channel: &ChannelName,
    rules: &QuotaClaim,
    now: DateTime<Utc>,
) -> Result<i64> {
    let cost = rules.budget.map_or(0, |charge| charge.cost);
    sqlx::query_scalar(
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, cost_usd_micros) \
         VALUES ($1, $2, $3, 'reserved', $4, $5) RETURNING id",
    )
    .bind(post_id.0)
    .bind(generation)
    .bind(channel.as_str())
    .bind(now)
    .bind(i64::try_from(cost).unwrap_or(i64::MAX))
    .fetch_one(conn)
    .await
    .map_err(db)
}

pub(crate) async fn claim_post(pool: &PgPool, req: &PostClaim) -> Result<PostClaimed> {
    let started = std::time::Instant::now();
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL READ COMMITTED")
        .await
        .map_err(db)?;
    // Another worker claiming it now holds the row: this one moves on.
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts WHERE id = $1 FOR UPDATE SKIP LOCKED"
    )))
    .bind(req.id.0)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let Some(row) = row else {
        return Ok(PostClaimed::Gone(None));
    };
    let post = rows::post(&row)?;
    if !claimable(&post, req.version, req.allow_test) {
        return Ok(PostClaimed::Gone(Some(Box::new(post))));
    }
    if let Some((scope, reason)) = active_pause(&mut tx, req.id).await? {
        return Ok(PostClaimed::Paused { scope, reason });
    }
    let mut now = now_after(req.now, started);
    if let Some(rules) = &req.quota {
        let (at, decision) =
            decide_quota(&mut tx, &post.content.channel, rules, started, req.now).await?;
        if let Err(denial) = decision {
            return Ok(PostClaimed::OverQuota(denial));
        }
        now = at;
    }
    let generation: i64 = sqlx::query_scalar(
        "UPDATE posts SET status = 'posting', lease_owner = $1, lease_expires_at = $2, \
         generation = generation + 1, version = version + 1, updated_at = $3, \
         event_actor = $4, event_note = $5 WHERE id = $6 RETURNING generation",
    )
    .bind(&req.worker)
    .bind(req.lease_until)
    .bind(now)
    .bind(&req.actor)
    .bind(format!(
        "claimed, lease until {}",
        airlock_core::time::format_utc(req.lease_until)
    ))
    .bind(req.id.0)
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    if let Some(rules) = &req.quota {
        insert_reservation(
            &mut tx,
            req.id,
            generation,
            &post.content.channel,
            rules,
            now,
        )
        .await?;
    }
    let intent = match &req.intent {
        Some(intent) if !lease_outlasts(req.lease_until, now, intent.lease_margin) => {
            return Err(StoreError::Fenced {
                id: req.id,
                generation,
            });
        }
        Some(intent) => Some(
            insert_intent(
                &mut tx,
                req.id,
                generation,
                &intent.idempotency_key,
                None,
                now,
            )
            .await?,
        ),
        None => None,
    };
    let post = get_in(&mut tx, req.id).await?;
    tx.commit().await.map_err(db)?;
    Ok(PostClaimed::Claimed {
        post: Box::new(post),
        intent,
    })
}

pub(crate) async fn due_posts(
    pool: &PgPool,
    channels: &[ChannelName],
    test_channels: &[ChannelName],
    now: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Post>> {
    if channels.is_empty() {
        return Ok(Vec::new());
    }
    sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts \
         WHERE status = 'approved' AND posted_at IS NULL AND scheduled_at <= $1 \
           AND (not_before IS NULL OR not_before <= $1) \
           AND channel = ANY($2) AND (NOT test OR channel = ANY($3)) \
           AND NOT EXISTS (SELECT 1 FROM pauses WHERE resumed_at IS NULL \
                           AND (scope = '*' OR scope = posts.channel)) \
         ORDER BY scheduled_at, id LIMIT $4"
    )))
    .bind(now)
    .bind(names(channels))
    .bind(names(test_channels))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(rows::post)
    .collect()
}

async fn intent_for(
    conn: &mut PgConnection,
    id: PostId,
    generation: Option<i64>,
) -> Result<Option<Intent>> {
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT {INTENT_COLUMNS} FROM intents \
         WHERE post_id = $1 AND ($2::bigint IS NULL OR generation = $2) \
         ORDER BY id DESC LIMIT 1"
    )))
    .bind(id.0)
    .bind(generation)
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    row.as_ref().map(rows::intent).transpose()
}

/// A read-only transaction with one snapshot, so posts and their intents agree.
async fn snapshot(pool: &PgPool) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    pool.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(db)
}

pub(crate) async fn expired_leases(
    pool: &PgPool,
    now: DateTime<Utc>,
) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>> {
    let mut tx = snapshot(pool).await?;
    let rows = sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts \
         WHERE status = 'posting' AND lease_expires_at < $1 ORDER BY id"
    )))
    .bind(now)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let mut expired = Vec::with_capacity(rows.len());
    for row in &rows {
        let lease = match rows::post(row) {
            Ok(post) => match intent_for(&mut tx, post.id, Some(post.generation)).await {
                Ok(intent) => Ok(ExpiredLease { post, intent }),
                Err(e) => Err(rows::unreadable(row, e)),
            },
            Err(e) => Err(rows::unreadable(row, e)),
        };
        expired.push(lease);
    }
    tx.commit().await.map_err(db)?;
    Ok(expired)
}

pub(crate) async fn review_queue(
    pool: &PgPool,
) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>> {
    let mut tx = snapshot(pool).await?;
    let rows = sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts WHERE status = 'needs_review' ORDER BY updated_at, id"
    )))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let mut items = Vec::with_capacity(rows.len());
    for row in &rows {
        let item = match rows::post(row) {
            Ok(post) => match intent_for(&mut tx, post.id, None).await {
                Ok(intent) => Ok(ReviewItem { post, intent }),
                Err(e) => Err(rows::unreadable(row, e)),
            },
            Err(e) => Err(rows::unreadable(row, e)),
        };
        items.push(item);
    }
    tx.commit().await.map_err(db)?;
    Ok(items)
}

pub(crate) async fn next_due_at(
    pool: &PgPool,
    channels: &[ChannelName],
    test_channels: &[ChannelName],
) -> Result<Option<DateTime<Utc>>> {
    if channels.is_empty() {
        return Ok(None);
    }
    sqlx::query_scalar(
        "SELECT min(GREATEST(scheduled_at, COALESCE(not_before, scheduled_at))) FROM posts \
         WHERE status = 'approved' AND posted_at IS NULL \
           AND channel = ANY($1) AND (NOT test OR channel = ANY($2))",
    )
    .bind(names(channels))
    .bind(names(test_channels))
    .fetch_one(pool)
    .await
    .map_err(db)
}
