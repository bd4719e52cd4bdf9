//! The store's side of the guarded publish path: claims, reservations and intents
//! (what is due, expired leases and the review queue are shared reads).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection};

use airlock_core::quota::Denial;
use airlock_core::{ChannelName, Intent, PostId};
use airlock_store::decide::{claimable, fence_holds, lease_outlasts};
use airlock_store::{
    HourCount, IntentRequest, PostClaim, PostClaimed, QuotaClaim, QuotaRows, RawReservation,
    Result, StoreError, decide_reservation, hours_since, now_after, quota_since, room_from_hours,
};
use airlock_store_sql::rows::{self, POST_COLUMNS, status_of};

use crate::dialect::Lite;
use crate::group::{Savepoint, Write};
use crate::{SqliteStore, db, next_statement, parse_ts, ts};

/// Fails with [`StoreError::Fenced`] unless the post is `posting` under `generation`
/// (and, when `lease_valid_at` is given, its lease has not expired by then).
async fn check_fence(
    conn: &mut SqliteConnection,
    id: PostId,
    generation: i64,
    lease_valid_at: Option<DateTime<Utc>>,
) -> Result<()> {
    let row = sqlx::query("SELECT status, generation, lease_expires_at FROM posts WHERE id = ?")
        .bind(id.0)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?
        .ok_or(StoreError::NotFound(id))?;
    let status = status_of(&row.try_get::<String, _>("status").map_err(db)?)?;
    let current: i64 = row.try_get("generation").map_err(db)?;
    let lease: Option<String> = row.try_get("lease_expires_at").map_err(db)?;
    let lease = lease.map(|l| parse_ts(&l)).transpose().unwrap_or(None);
    if fence_holds(status, current, generation, lease, lease_valid_at) {
        Ok(())
    } else {
        Err(StoreError::Fenced { id, generation })
    }
}

/// The quota decision for one more publish on `channel` at `now`, inside the caller's
/// (write-locked) transaction: from the per-hour counts (`hours`, read by
/// [`push_hours`]) when they prove room (migration 0013), else over the live
/// reservations.
async fn decide_quota(
    conn: &mut SqliteConnection,
    channel: &ChannelName,
    rules: &QuotaClaim,
    now: DateTime<Utc>,
    hours: &[SqliteRow],
) -> Result<std::result::Result<(), Denial>> {
    if rules.budget.is_none() && room_in_hours(channel, rules, now, hours)? {
        return Ok(Ok(()));
    }
    let live = live_reservations(conn, quota_since(now, rules), now).await?;
    Ok(decide_reservation(now, channel, rules, &live))
}

/// Adds the read of the per-hour counts a claim at `now` under `rules` looks at, and a
/// row 'suspect' while any live row is, to `reads`.
fn push_hours(reads: &mut QueryBuilder<Sqlite>, rules: &QuotaClaim, now: DateTime<Utc>) {
    let since = ts(hours_since(now, rules));
    next_statement(
        reads,
        "SELECT channel, hour, live, latest FROM quota_hours WHERE hour >= ",
    )
    .push_bind(since[..13].to_owned());
    reads.push(
        " OR hour = 'unsent' \
         UNION ALL \
         SELECT '', 'suspect', 0, '' WHERE EXISTS (SELECT 1 FROM quota_suspects)",
    );
}

/// Whether the per-hour counts `hours` prove room for one more publish
/// ([`room_from_hours`]): only while no live row is suspect, and never when an hour or
/// stamp does not read.
fn room_in_hours(
    channel: &ChannelName,
    rules: &QuotaClaim,
    now: DateTime<Utc>,
    hours: &[SqliteRow],
) -> Result<bool> {
    let mut counts = Vec::with_capacity(hours.len());
    for row in hours {
        let (channel, hour, live, latest): (String, String, i64, String) =
            sqlx::FromRow::from_row(row).map_err(db)?;
        if hour == "suspect" {
            return Ok(false);
        }
        let (hour, latest) = if hour == "unsent" {
            (None, None)
        } else {
            match (parse_ts(&format!("{hour}:00:00.000Z")), parse_ts(&latest)) {
                (Ok(hour), Ok(latest)) => (Some(hour), Some(latest)),
                _ => return Ok(false),
            }
        };
        counts.push(HourCount {
            channel,
            hour,
            live,
            latest,
        });
    }
    Ok(room_from_hours(now, channel, rules, &counts))
}

/// The pause that holds a post's channel (or everything), if any.
async fn active_pause(conn: &mut SqliteConnection, id: PostId) -> Result<Option<(String, String)>> {
    sqlx::query_as(
        "SELECT scope, reason FROM pauses WHERE resumed_at IS NULL \
         AND (scope = '*' OR scope = (SELECT channel FROM posts WHERE id = ?)) \
         ORDER BY scope = '*' DESC, id LIMIT 1",
    )
    .bind(id.0)
    .fetch_optional(conn)
    .await
    .map_err(db)
}

/// Adds the statement that records a `sending` intent to `writes`, and returns the
/// intent it records.
fn push_intent(
    writes: &mut QueryBuilder<Sqlite>,
    post_id: PostId,
    generation: i64,
    idempotency_key: &str,
    part: u32,
    platform_ref: Option<&str>,
    now: DateTime<Utc>,
) -> Intent {
    let mut values = next_statement(
        writes,
        "INSERT INTO intents (post_id, generation, idempotency_key, part, phase, platform_ref, \
         created_at) VALUES (",
    )
    .separated(", ");
    values.push_bind(post_id.0);
    values.push_bind(generation);
    values.push_bind(idempotency_key.to_owned());
    values.push_bind(part);
    values.push("'sending'");
    values.push_bind(platform_ref.map(str::to_owned));
    values.push_bind(ts(now));
    values.push_unseparated(")");
    Intent {
        post_id,
        generation,
        idempotency_key: idempotency_key.to_owned(),
        phase: "sending".into(),
        platform_ref: platform_ref.map(str::to_owned),
        created_at: now,
        settled_at: None,
        part,
        platform_post_id: None,
        permalink: None,
    }
}

/// A write's error, where a second intent for the same claim is [`StoreError::Duplicate`].
fn intent_error(e: sqlx::Error, post_id: PostId, generation: i64) -> StoreError {
    match e {
        sqlx::Error::Database(d) if d.is_unique_violation() && d.message().contains("intents.") => {
            StoreError::Duplicate(format!(
                "an intent for post {post_id} generation {generation}"
            ))
        }
        e => db(e),
    }
}

/// The columns of a row [`push_hours`] reads.
const HOUR_COLUMNS: usize = 4;

/// The pause that holds a post's channel (or everything), if any, as a column pair of a
/// query on `posts` (`pause_scope`, `pause_reason`).
const ACTIVE_PAUSE: &str = "(SELECT scope FROM pauses WHERE resumed_at IS NULL \
     AND (scope = '*' OR scope = posts.channel) ORDER BY scope = '*' DESC, id LIMIT 1) AS pause_scope, \
     (SELECT reason FROM pauses WHERE resumed_at IS NULL \
     AND (scope = '*' OR scope = posts.channel) ORDER BY scope = '*' DESC, id LIMIT 1) AS pause_reason";

/// Where `quota_hours` differs from its recount (`quota_hours_recount`) from `since`'s
/// hour on: one sentence each. A count below the rows', or a latest stamp before theirs,
/// would let a claim's quick proof pass a limit; doctor names it.
pub(crate) async fn quota_hours_drift(
    conn: &mut SqliteConnection,
    since: DateTime<Utc>,
) -> Result<Vec<String>> {
    let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "WITH kept AS (SELECT * FROM quota_hours WHERE hour >= ?1 OR hour = 'unsent'), \
              counted AS (SELECT * FROM quota_hours_recount WHERE hour >= ?1 OR hour = 'unsent') \
         SELECT k.channel, k.hour, COALESCE(c.live, 0), k.live FROM kept k \
           LEFT JOIN counted c ON c.channel = k.channel AND c.hour = k.hour \
         WHERE k.live <> COALESCE(c.live, 0) OR k.latest < c.latest \
         UNION ALL \
         SELECT c.channel, c.hour, c.live, 0 FROM counted c \
         WHERE NOT EXISTS (SELECT 1 FROM kept k WHERE k.channel = c.channel AND k.hour = c.hour) \
         ORDER BY 2, 1",
    )
    .bind(&ts(since)[..13])
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    let mut drift: Vec<String> = rows
        .into_iter()
        .map(|(channel, hour, counted, kept)| {
            format!(
                "quota_hours holds {kept} live reservations for channel {channel} in hour {hour}, or an earlier latest stamp than theirs; the reservations hold {counted}: a claim may have been let past a limit; correct those rows from the view quota_hours_recount"
            )
        })
        .collect();
    // The triggers take a row's old hours out by this list: it must name exactly the live
    // rows no count stands for.
    let misfiled: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM quota_suspects WHERE id IN (SELECT id FROM quota_counted) \
            OR id NOT IN (SELECT id FROM reservations WHERE state IS NOT 'released') \
         UNION \
         SELECT id FROM reservations WHERE state IS NOT 'released' \
            AND id NOT IN (SELECT id FROM quota_counted) \
            AND id NOT IN (SELECT id FROM quota_suspects) \
         ORDER BY 1",
    )
    .fetch_all(conn)
    .await
    .map_err(db)?;
    if !misfiled.is_empty() {
        let ids: Vec<String> = misfiled.iter().map(i64::to_string).collect();
        drift.push(format!(
            "quota_suspects misfiles reservations {}: the counts kept from it may be wrong; list exactly the live reservations that quota_counted leaves out, then correct quota_hours from quota_hours_recount",
            ids.join(", ")
        ));
    }
    Ok(drift)
}

/// Live reservations sent at or after `since`, and every unsent one, checked fail-closed.
pub(crate) async fn live_reservations(
    conn: &mut SqliteConnection,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<QuotaRows> {
    // Times are compared as text, which orders canonical times only. The range starts at
    // the beginning of `since`'s UTC date rather than at `since` itself, so a time written
    // in another form on that date (SQLite's own `datetime('now')` form,
    // '2026-03-01 16:00:00', sorts before '2026-03-01T15:00:00.000Z') is read and refused
    // by the check instead of silently not counted; so is text below '1' (signs, blanks,
    // zero). The extra rows read are checked, then dropped.
    // Every branch reads the partial index `reservations_live`.
    let rows = sqlx::query(
        "SELECT id, channel, state, created_at, sent_at, cost_usd_micros FROM reservations \
         WHERE state <> 'released' AND sent_at >= ? \
         UNION ALL \
         SELECT id, channel, state, created_at, sent_at, cost_usd_micros FROM reservations \
         WHERE state <> 'released' AND sent_at IS NULL \
         UNION ALL \
         SELECT id, channel, state, created_at, sent_at, cost_usd_micros FROM reservations \
         WHERE state <> 'released' AND sent_at < '1'",
    )
    .bind(since.format("%Y-%m-%d").to_string())
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let mut raw = Vec::with_capacity(rows.len());
    for row in rows {
        let created_at: String = row.try_get("created_at").map_err(db)?;
        let sent_at: Option<String> = row.try_get("sent_at").map_err(db)?;
        raw.push(RawReservation {
            id: row.try_get("id").map_err(db)?,
            channel: row.try_get("channel").map_err(db)?,
            state: row.try_get("state").map_err(db)?,
            created_at: parse_ts(&created_at),
            sent_at: sent_at.as_deref().map(parse_ts),
            cost: row.try_get("cost_usd_micros").map_err(db)?,
        });
    }
    let mut live = QuotaRows::check(raw, now)?;
    live.0
        .retain(|r| r.sent_at.is_none_or(|sent| sent >= since));
    Ok(live)
}

#[async_trait]
impl airlock_store::Publishing for SqliteStore {
    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed> {
        let started = std::time::Instant::now();
        self.grouped(|answer| Write::Claim(Box::new(req.clone()), started, answer))
            .await
    }

    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent> {
        let started = std::time::Instant::now();
        let mut tx = self.begin_write().await?;
        let now = now_after(req.now, started);
        check_fence(
            &mut tx,
            req.post_id,
            req.generation,
            Some(now + req.lease_margin),
        )
        .await?;
        if let Some((scope, reason)) = active_pause(&mut tx, req.post_id).await? {
            return Err(StoreError::Paused { scope, reason });
        }
        let mut writes = QueryBuilder::new("");
        let intent = push_intent(
            &mut writes,
            req.post_id,
            req.generation,
            &req.idempotency_key,
            req.part,
            req.platform_ref.as_deref(),
            now,
        );
        next_statement(&mut writes, "UPDATE reservations SET sent_at = ").push_bind(ts(now));
        writes.push(" WHERE post_id = ").push_bind(req.post_id.0);
        writes.push(" AND generation = ").push_bind(req.generation);
        writes.push(" AND state = 'reserved'");
        writes
            .build()
            .execute(&mut *tx)
            .await
            .map_err(|e| intent_error(e, req.post_id, req.generation))?;
        tx.commit().await.map_err(db)?;
        Ok(intent)
    }
}

/// A claim ([`Publishing::claim_post`](airlock_store::Publishing::claim_post)) inside the
/// caller's write transaction, its times moved on by the wait since `started`. `Err`:
/// nothing of it may stay (the caller rolls it back).
pub(crate) async fn claim_in(
    tx: &mut SqliteConnection,
    req: &PostClaim,
    started: std::time::Instant,
    savepoint: &mut Savepoint,
) -> Result<PostClaimed> {
    let now = now_after(req.now, started);
    // The post and the pause that holds it, and the per-hour counts a quick quota
    // decision reads, in one call.
    let mut reads = QueryBuilder::<Sqlite>::new(format!(
        "{}SELECT {POST_COLUMNS}, {ACTIVE_PAUSE} FROM posts WHERE id = ",
        savepoint.take()
    ));
    reads.push_bind(req.id.0);
    if let Some(rules) = req.quota.as_ref().filter(|rules| rules.budget.is_none()) {
        push_hours(&mut reads, rules, now);
    }
    let read = reads.build().fetch_all(&mut *tx).await.map_err(db)?;
    // The post row has many more columns than an hour's.
    let (row, hours) = match read.split_first() {
        Some((row, hours)) if row.len() > HOUR_COLUMNS => (row, hours),
        _ => return Ok(PostClaimed::Gone(None)),
    };
    let post = rows::post::<Lite>(row)?;
    if !claimable(&post, req.version, req.allow_test) {
        return Ok(PostClaimed::Gone(Some(Box::new(post))));
    }
    let scope: Option<String> = row.try_get("pause_scope").map_err(db)?;
    if let Some(scope) = scope {
        let reason: String = row.try_get("pause_reason").map_err(db)?;
        return Ok(PostClaimed::Paused { scope, reason });
    }
    if let Some(rules) = &req.quota
        && let Err(denial) =
            decide_quota(&mut *tx, &post.content.channel, rules, now, hours).await?
    {
        return Ok(PostClaimed::OverQuota(denial));
    }
    let generation = post.generation + 1;
    if let Some(intent) = &req.intent
        && !lease_outlasts(req.lease_until, now, intent.lease_margin)
    {
        return Err(StoreError::Fenced {
            id: req.id,
            generation,
        });
    }
    // The claim, its reservation and its intent in one call to the connection's thread.
    let mut writes = QueryBuilder::new("UPDATE posts SET status = 'posting', lease_owner = ");
    writes.push_bind(&req.worker);
    writes
        .push(", lease_expires_at = ")
        .push_bind(ts(req.lease_until));
    writes.push(", generation = generation + 1, version = version + 1, updated_at = ");
    writes.push_bind(ts(now));
    writes
        .push(", deferred_until = NULL, event_actor = ")
        .push_bind(&req.actor);
    writes
        .push(", event_note = ")
        .push_bind(format!("claimed, lease until {}", ts(req.lease_until)));
    writes.push(" WHERE id = ").push_bind(req.id.0);
    writes.push(format!(" RETURNING {POST_COLUMNS}"));
    if let Some(rules) = &req.quota {
        // With the intent in this transaction, the request is as good as sent now.
        let sent = req.intent.is_some().then_some(now);
        let cost = rules.budget.map_or(0, |charge| charge.cost);
        let mut values = next_statement(
            &mut writes,
            "INSERT INTO reservations (post_id, generation, channel, state, created_at, \
             sent_at, cost_usd_micros) VALUES (",
        )
        .separated(", ");
        values.push_bind(req.id.0);
        values.push_bind(generation);
        values.push_bind(post.content.channel.as_str());
        values.push("'reserved'");
        values.push_bind(ts(now));
        values.push_bind(sent.map(ts));
        values.push_bind(i64::try_from(cost).unwrap_or(i64::MAX));
        values.push_unseparated(")");
    }
    let intent = req.intent.as_ref().map(|intent| {
        push_intent(
            &mut writes,
            req.id,
            generation,
            &intent.idempotency_key,
            intent.part,
            None,
            now,
        )
    });
    let written = writes
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| intent_error(e, req.id, generation))?;
    // Nothing after the UPDATE changes the post row: the row as written is the answer.
    let row = written.first().ok_or_else(|| {
        StoreError::Corrupt(format!("the claim of post {} returned no row", req.id))
    })?;
    let post = rows::post::<Lite>(row)?;
    Ok(PostClaimed::Claimed {
        post: Box::new(post),
        intent,
    })
}
