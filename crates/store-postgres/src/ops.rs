//! Export pages, dashboard sessions and health figures (see `airlock_store::ops`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgPool, Postgres, QueryBuilder};

use airlock_core::{PostDetail, PostId};
use airlock_store::{ExportFilter, HealthStats, NewSession, Result, Session};

use crate::db;
use crate::rows::{
    self, EVENT_COLUMNS, INTENT_COLUMNS, POST_COLUMNS, RESERVATION_COLUMNS, VERDICT_COLUMNS, get,
};

/// Rows of a child table for a page of posts, grouped by post id, in id order.
async fn children<T>(
    conn: &mut sqlx::PgConnection,
    columns: &str,
    table: &str,
    ids: &[i64],
    decode: fn(&PgRow) -> Result<T>,
    post_id: fn(&T) -> PostId,
) -> Result<BTreeMap<PostId, Vec<T>>> {
    let mut grouped: BTreeMap<PostId, Vec<T>> = BTreeMap::new();
    let rows = sqlx::query(AssertSqlSafe(format!(
        "SELECT {columns} FROM {table} WHERE post_id = ANY($1) ORDER BY post_id, id"
    )))
    .bind(ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    for row in rows {
        let item = decode(&row)?;
        grouped.entry(post_id(&item)).or_default().push(item);
    }
    Ok(grouped)
}

pub(crate) async fn export_page(
    pool: &PgPool,
    filter: &ExportFilter,
    after: Option<PostId>,
    limit: u32,
) -> Result<Vec<PostDetail>> {
    // One snapshot for the page: posts and their timelines agree.
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(db)?;
    let mut query =
        QueryBuilder::<Postgres>::new(format!("SELECT {POST_COLUMNS} FROM posts WHERE id > "));
    query.push_bind(after.map_or(0, |id| id.0));
    if let Some(status) = filter.status {
        query.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(channel) = &filter.channel {
        query
            .push(" AND channel = ")
            .push_bind(channel.as_str().to_owned());
    }
    if let Some(since) = filter.since {
        // updated_at covers creation and every change of the row; events cover notes
        // and verification results, which leave the row alone.
        query
            .push(" AND (updated_at >= ")
            .push_bind(since)
            .push(" OR EXISTS (SELECT 1 FROM post_events e WHERE e.post_id = posts.id AND e.at >= ")
            .push_bind(since)
            .push("))");
    }
    query
        .push(" ORDER BY id LIMIT ")
        .push_bind(i64::from(limit.max(1)));
    let posts = query
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?
        .iter()
        .map(rows::post)
        .collect::<Result<Vec<_>>>()?;
    if posts.is_empty() {
        tx.commit().await.map_err(db)?;
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = posts.iter().map(|p| p.id.0).collect();
    let mut events = children(
        &mut tx,
        EVENT_COLUMNS,
        "post_events",
        &ids,
        rows::event,
        |e| e.post_id,
    )
    .await?;
    let mut intents = children(
        &mut tx,
        INTENT_COLUMNS,
        "intents",
        &ids,
        rows::intent,
        |i| i.post_id,
    )
    .await?;
    let mut reservations = children(
        &mut tx,
        RESERVATION_COLUMNS,
        "reservations",
        &ids,
        rows::reservation,
        |r| r.post_id,
    )
    .await?;
    let mut verdicts = children(
        &mut tx,
        VERDICT_COLUMNS,
        "verdicts",
        &ids,
        rows::verdict,
        |v| v.post_id,
    )
    .await?;
    tx.commit().await.map_err(db)?;
    Ok(posts
        .into_iter()
        .map(|post| PostDetail {
            verdicts: verdicts.remove(&post.id).unwrap_or_default(),
            events: events.remove(&post.id).unwrap_or_default(),
            intents: intents.remove(&post.id).unwrap_or_default(),
            reservations: reservations.remove(&post.id).unwrap_or_default(),
            post,
        })
        .collect())
}

pub(crate) async fn open_session(pool: &PgPool, session: NewSession) -> Result<()> {
    sqlx::query("SELECT airlock_open_session($1, $2, $3, $4, $5)")
        .bind(&session.id_sha256)
        .bind(&session.token_sha256)
        .bind(session.now)
        .bind(session.expires_at)
        .bind(i64::from(session.max_sessions.max(1)))
        .execute(pool)
        .await
        .map_err(db)?;
    Ok(())
}

pub(crate) async fn session(pool: &PgPool, id_sha256: &str) -> Result<Option<Session>> {
    let row = sqlx::query("SELECT * FROM airlock_session($1)")
        .bind(id_sha256)
        .fetch_optional(pool)
        .await
        .map_err(db)?;
    row.map(|row| {
        Ok(Session {
            token_sha256: get(&row, "token_sha256")?,
            created_at: get(&row, "created_at")?,
            expires_at: get(&row, "expires_at")?,
        })
    })
    .transpose()
}

pub(crate) async fn end_session(pool: &PgPool, id_sha256: &str) -> Result<bool> {
    sqlx::query_scalar("SELECT airlock_end_session($1)")
        .bind(id_sha256)
        .fetch_one(pool)
        .await
        .map_err(db)
}

pub(crate) async fn health_stats(pool: &PgPool, now: DateTime<Utc>) -> Result<HealthStats> {
    // One snapshot: the figures agree with each other.
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(db)?;
    let due = sqlx::query(
        "SELECT count(*) AS n, min(greatest(scheduled_at, not_before)) AS oldest \
         FROM posts WHERE status = 'approved' AND posted_at IS NULL AND NOT test \
         AND scheduled_at <= $1 AND (not_before IS NULL OR not_before <= $1) \
         AND channel NOT IN (SELECT scope FROM pauses WHERE resumed_at IS NULL) \
         AND NOT EXISTS (SELECT 1 FROM pauses WHERE scope = '*' AND resumed_at IS NULL)",
    )
    .bind(now)
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    let review: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT min(updated_at) FROM posts WHERE status = 'needs_review'")
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
    let verify_failed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM posts p WHERE status = 'posted' AND verified_at IS NULL \
         AND NOT test AND EXISTS (SELECT 1 FROM post_events e \
         WHERE e.post_id = p.id AND e.kind = 'verify_failed')",
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    let verify_failed_recent: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM posts p WHERE status = 'posted' AND verified_at IS NULL \
         AND NOT test AND EXISTS (SELECT 1 FROM post_events e \
         WHERE e.post_id = p.id AND e.kind = 'verify_failed' AND e.at >= $1)",
    )
    .bind(now - chrono::Duration::hours(24))
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(HealthStats {
        due: get(&due, "n")?,
        oldest_due_at: get(&due, "oldest")?,
        oldest_needs_review_at: review,
        verify_failed,
        verify_failed_recent,
    })
}

pub(crate) async fn due_by_channel(
    pool: &PgPool,
    now: DateTime<Utc>,
) -> Result<Vec<airlock_store::ChannelDue>> {
    let rows = sqlx::query(
        "SELECT channel, count(*) AS n, min(greatest(scheduled_at, not_before)) AS oldest \
         FROM posts WHERE status = 'approved' AND posted_at IS NULL AND NOT test \
         AND scheduled_at <= $1 AND (not_before IS NULL OR not_before <= $1) \
         AND channel NOT IN (SELECT scope FROM pauses WHERE resumed_at IS NULL) \
         AND NOT EXISTS (SELECT 1 FROM pauses WHERE scope = '*' AND resumed_at IS NULL) \
         GROUP BY channel ORDER BY channel",
    )
    .bind(now)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.iter()
        .map(|row| {
            Ok(airlock_store::ChannelDue {
                channel: get(row, "channel")?,
                due: get(row, "n")?,
                oldest_due_at: get(row, "oldest")?,
            })
        })
        .collect()
}

pub(crate) async fn live_sessions(
    pool: &PgPool,
    now: DateTime<Utc>,
) -> Result<Vec<airlock_store::LiveSession>> {
    let rows = sqlx::query("SELECT * FROM airlock_live_sessions($1)")
        .bind(now)
        .fetch_all(pool)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            Ok(airlock_store::LiveSession {
                token: get(row, "name")?,
                created_at: get(row, "created_at")?,
                expires_at: get(row, "expires_at")?,
            })
        })
        .collect()
}
