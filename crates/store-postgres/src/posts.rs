//! Drafts, guarded post updates, discarding, and the event log.
//!
//! Each write locks the post row (`FOR UPDATE`) before it checks its guard, so the check
//! and the write see the same row; the status edge itself is checked once more by the
//! trigger. Creation serializes per idempotency key and per slot with advisory locks, so
//! two agents retrying at once still make one post.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Postgres, QueryBuilder};

use airlock_core::status::is_legal;
use airlock_core::{Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary, Verdict};
use airlock_store::decide::{draft_limit, edit_duplicate_check, leaves_quarantine};
use airlock_store::{
    CreatePost, Created, EventNote, FailureStep, Guard, NewNotification, PostFilter, PostUpdate,
    Result, Settle, StoreError, VerificationRecord,
};

use crate::rows::{
    self, EVENT_COLUMNS, INTENT_COLUMNS, POST_COLUMNS, RESERVATION_COLUMNS, SUMMARY_COLUMNS,
    VERDICT_COLUMNS,
};
use crate::{
    ILLEGAL_TRANSITION, QUARANTINED, admin, begin, db, durable_commit, is_unique_violation, lock,
    sqlstate, status_of, xact_lock, xact_lock_text,
};

pub(crate) async fn create(pool: &PgPool, req: CreatePost) -> Result<Created> {
    let mut tx = begin(pool).await?;
    if let Some(key) = &req.idempotency {
        xact_lock_text(
            &mut tx,
            lock::CREATE_KEY,
            &format!("{}\n{}", key.scope, key.key),
        )
        .await?;
        sqlx::query("DELETE FROM create_keys WHERE created_at < $1")
            .bind(req.now - key.ttl)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let earlier = sqlx::query(
            "SELECT request_sha256, post_id FROM create_keys WHERE scope = $1 AND key = $2",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        if let Some(row) = earlier {
            let request: String = rows::get(&row, "request_sha256")?;
            if request != key.request_hash {
                return Err(StoreError::IdempotencyMismatch(key.key.clone()));
            }
            let post = get_in(&mut tx, PostId(rows::get(&row, "post_id")?)).await?;
            return Ok(Created {
                post,
                existing: true,
            });
        }
    }
    let new = &req.new;
    if let Some(slot) = &new.slot {
        xact_lock_text(
            &mut tx,
            lock::SLOT,
            &format!("{}\n{slot}", new.content.channel.as_str()),
        )
        .await?;
        let taken: Option<i64> =
            sqlx::query_scalar("SELECT id FROM posts WHERE channel = $1 AND slot = $2")
                .bind(new.content.channel.as_str())
                .bind(slot)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        if let Some(id) = taken {
            let post = get_in(&mut tx, PostId(id)).await?;
            return Ok(Created {
                post,
                existing: true,
            });
        }
    }
    if req.max_live_drafts.is_some() {
        // Creates by one actor count one after another: the count below sees every
        // draft a create that held this lock before committed.
        xact_lock_text(&mut tx, lock::DRAFTS, &req.actor).await?;
        let held = crate::bounds::live_drafts_by(&mut *tx, &req.actor).await?;
        draft_limit(&req.actor, held, req.max_live_drafts)?;
    }
    let content = &new.content;
    let text_key = airlock_core::review::text_key(&content.text);
    if let Some(window) = req.duplicate_window {
        refuse_duplicate(
            &mut tx,
            content.channel.as_str(),
            &text_key,
            new.scheduled_at,
            window,
            None,
        )
        .await?;
    }
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO posts (channel, status, title, text, media, link, source, source_path, \
         scheduled_at, content_hash, created_by, edited_by, test, slot, created_at, updated_at, \
         event_actor, event_note, text_key) \
         VALUES ($1, 'draft', $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13, $13, $10, 'created', $14) \
         RETURNING id",
    )
    .bind(content.channel.as_str())
    .bind(&content.title)
    .bind(&content.text)
    .bind(Json(&content.media))
    .bind(&content.link)
    .bind(content.source.as_ref().map(Json))
    .bind(content.source.as_ref().map(|s| s.path.clone()))
    .bind(new.scheduled_at)
    .bind(content.hash().as_str())
    .bind(&req.actor)
    .bind(new.test)
    .bind(&new.slot)
    .bind(req.now)
    .bind(&text_key)
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| {
        if is_unique_violation(&e) {
            StoreError::Duplicate(format!(
                "a post for slot {:?} on {}",
                new.slot.as_deref().unwrap_or(""),
                content.channel
            ))
        } else {
            db(e)
        }
    })?;
    if let Some(key) = &req.idempotency {
        sqlx::query(
            "INSERT INTO create_keys (scope, key, request_sha256, post_id, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .bind(&key.request_hash)
        .bind(id)
        .bind(req.now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    let post = get_in(&mut tx, PostId(id)).await?;
    tx.commit().await.map_err(db)?;
    Ok(Created {
        post,
        existing: false,
    })
}

pub(crate) async fn get_in(conn: &mut PgConnection, id: PostId) -> Result<Post> {
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts WHERE id = $1"
    )))
    .bind(id.0)
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    row.as_ref()
        .map(rows::post)
        .transpose()?
        .ok_or(StoreError::NotFound(id))
}

/// Refuses ([`StoreError::DuplicateText`]) a text key that a post on the channel other
/// than `except` holds while quarantined, or while approved, in flight or posted and
/// going out within `window` of `at` (`posted_at` when posted, else `scheduled_at`). Holds the
/// channel's text-key lock until the transaction ends, so two drafts (or edits) with
/// the same text at once still find each other.
async fn refuse_duplicate(
    conn: &mut PgConnection,
    channel: &str,
    text_key: &str,
    at: DateTime<Utc>,
    window: chrono::Duration,
    except: Option<PostId>,
) -> Result<()> {
    xact_lock_text(
        &mut *conn,
        lock::TEXT_KEY,
        &format!("{channel}\n{text_key}"),
    )
    .await?;
    let earlier = sqlx::query(
        "SELECT id, status FROM posts WHERE channel = $1 AND text_key = $2 \
         AND ((status = 'draft' AND quarantined_at IS NOT NULL) \
              OR (status IN ('approved', 'posting', 'needs_review', 'posted') \
                  AND COALESCE(posted_at, scheduled_at) > $3 \
                  AND COALESCE(posted_at, scheduled_at) < $4)) \
         AND ($5::bigint IS NULL OR id <> $5) \
         ORDER BY id DESC LIMIT 1",
    )
    .bind(channel)
    .bind(text_key)
    .bind(at - window)
    .bind(at + window)
    .bind(except.map(|id| id.0))
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    match earlier {
        Some(row) => Err(StoreError::DuplicateText {
            earlier: PostId(rows::get(&row, "id")?),
            status: status_of(&rows::get::<String>(&row, "status")?)?,
        }),
        None => Ok(()),
    }
}

/// Reads and locks a post row for the rest of the transaction.
pub(crate) async fn lock_post(conn: &mut PgConnection, id: PostId) -> Result<Post> {
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT {POST_COLUMNS} FROM posts WHERE id = $1 FOR UPDATE"
    )))
    .bind(id.0)
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    row.as_ref()
        .map(rows::post)
        .transpose()?
        .ok_or(StoreError::NotFound(id))
}

pub(crate) async fn detail(pool: &PgPool, id: PostId) -> Result<PostDetail> {
    // One snapshot for the post and its timeline.
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(db)?;
    let post = get_in(&mut tx, id).await?;
    let events = sqlx::query(AssertSqlSafe(format!(
        "SELECT {EVENT_COLUMNS} FROM post_events WHERE post_id = $1 ORDER BY id"
    )))
    .bind(id.0)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?
    .iter()
    .map(rows::event)
    .collect::<Result<_>>()?;
    let intents = sqlx::query(AssertSqlSafe(format!(
        "SELECT {INTENT_COLUMNS} FROM intents WHERE post_id = $1 ORDER BY id"
    )))
    .bind(id.0)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?
    .iter()
    .map(rows::intent)
    .collect::<Result<_>>()?;
    let reservations = sqlx::query(AssertSqlSafe(format!(
        "SELECT {RESERVATION_COLUMNS} FROM reservations WHERE post_id = $1 ORDER BY id"
    )))
    .bind(id.0)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?
    .iter()
    .map(rows::reservation)
    .collect::<Result<_>>()?;
    let verdicts = verdicts_in(&mut tx, id).await?;
    tx.commit().await.map_err(db)?;
    Ok(PostDetail {
        post,
        events,
        intents,
        reservations,
        verdicts,
    })
}

pub(crate) async fn verdicts(pool: &PgPool, id: PostId) -> Result<Vec<Verdict>> {
    let mut conn = pool.acquire().await.map_err(db)?;
    verdicts_in(&mut conn, id).await
}

async fn verdicts_in(conn: &mut PgConnection, id: PostId) -> Result<Vec<Verdict>> {
    sqlx::query(AssertSqlSafe(format!(
        "SELECT {VERDICT_COLUMNS} FROM verdicts WHERE post_id = $1 ORDER BY id"
    )))
    .bind(id.0)
    .fetch_all(conn)
    .await
    .map_err(db)?
    .iter()
    .map(rows::verdict)
    .collect()
}

pub(crate) async fn list(pool: &PgPool, filter: &PostFilter) -> Result<Vec<Post>> {
    let mut query =
        QueryBuilder::<Postgres>::new(format!("SELECT {POST_COLUMNS} FROM posts WHERE TRUE"));
    push_filter(&mut query, filter);
    query
        .build()
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(rows::post)
        .collect()
}

pub(crate) async fn list_summaries(
    pool: &PgPool,
    filter: &PostFilter,
    excerpt_chars: u32,
) -> Result<Vec<PostSummary>> {
    // left() counts characters: only the excerpt leaves the database.
    let mut query = QueryBuilder::<Postgres>::new("SELECT left(text, ");
    query.push_bind(i32::try_from(excerpt_chars).unwrap_or(i32::MAX - 1) + 1);
    query.push(format!(
        ") AS excerpt, {SUMMARY_COLUMNS} FROM posts WHERE TRUE"
    ));
    push_filter(&mut query, filter);
    query
        .build()
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(rows::summary)
        .collect()
}

/// The `WHERE` conditions (after `WHERE TRUE`), order and limit of a post list.
pub(crate) fn push_filter(query: &mut QueryBuilder<Postgres>, filter: &PostFilter) {
    if let Some(status) = filter.status {
        query.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(channel) = &filter.channel {
        query
            .push(" AND channel = ")
            .push_bind(channel.as_str().to_owned());
    }
    if let Some(before) = filter.before {
        query.push(" AND id < ").push_bind(before.0);
    }
    if let Some(slot) = &filter.slot {
        query.push(" AND slot = ").push_bind(slot.clone());
    }
    if let Some(id) = &filter.platform_post_id {
        query.push(" AND platform_post_id = ").push_bind(id.clone());
    }
    match filter.quarantined {
        Some(true) => query.push(" AND quarantined_at IS NOT NULL"),
        Some(false) => query.push(" AND quarantined_at IS NULL"),
        None => query,
    };
    query
        .push(" ORDER BY id DESC LIMIT ")
        .push_bind(i64::from(filter.limit.unwrap_or(100)));
}

pub(crate) async fn update(pool: &PgPool, update: PostUpdate) -> Result<Post> {
    let mut tx = begin(pool).await?;
    if matches!(update.guard, Guard::Generation(_)) {
        // An outcome of the guarded path: it must survive a crash like the intent did.
        durable_commit(&mut tx).await?;
    }
    let current = lock_post(&mut tx, update.id).await?;
    let status = current.status;
    match update.guard {
        Guard::Version(expected) if expected != current.version => {
            return Err(StoreError::Conflict(update.id));
        }
        Guard::Generation(expected)
            if status != PostStatus::Posting || expected != current.generation =>
        {
            // Nothing of the stale write applies; only the evidence is recorded.
            if update.record_stale {
                record_stale(&mut tx, &update, status, expected).await?;
                tx.commit().await.map_err(db)?;
            }
            return Err(StoreError::Fenced {
                id: update.id,
                generation: expected,
            });
        }
        _ => {}
    }
    if let Some(required) = update.intent_required {
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM intents WHERE post_id = $1 AND generation = $2)",
        )
        .bind(update.id.0)
        .bind(current.generation)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        if exists != required {
            return Err(StoreError::Conflict(update.id));
        }
    }
    let mut from = status;
    for to in update.via.iter().chain(update.to.iter()) {
        if *to != from && !is_legal(from, *to) {
            return Err(StoreError::IllegalTransition {
                id: update.id,
                from,
                to: *to,
            });
        }
        from = *to;
    }
    if leaves_quarantine(&update, current.quarantined_at.is_some()) {
        return Err(StoreError::Quarantined(update.id));
    }
    if let Some((key, at, window)) =
        edit_duplicate_check(&update, status, &current.content.text, current.scheduled_at)
    {
        let channel = current.content.channel.as_str();
        refuse_duplicate(&mut tx, channel, &key, at, window, Some(update.id)).await?;
    }
    let after = update.to.unwrap_or(status);
    if let Some(verdict) = &update.verdict {
        // In the round the verdict was given in, before this change may start a new one.
        sqlx::query(
            "INSERT INTO verdicts (post_id, verdict, reasons, actor, content_hash, rubric_hash, \
             review_round, content, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(update.id.0)
        .bind(verdict.verdict.as_str())
        .bind(Json(&verdict.reasons))
        .bind(&update.actor)
        .bind(verdict.content_hash.as_str())
        .bind(&verdict.rubric_hash)
        .bind(current.review_round)
        .bind(Json(&verdict.content))
        .bind(update.now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    let refused = |e: sqlx::Error, to: PostStatus| {
        if sqlstate(&e).as_deref() == Some(QUARANTINED) {
            StoreError::Quarantined(update.id)
        } else if sqlstate(&e).as_deref() == Some(ILLEGAL_TRANSITION) {
            StoreError::IllegalTransition {
                id: update.id,
                from: status,
                to,
            }
        } else {
            db(e)
        }
    };
    if let Some(via) = update.via {
        // The intermediate step is its own statement so the trigger checks and records it.
        sqlx::query(
            "UPDATE posts SET status = $1, version = version + 1, updated_at = $2, \
             event_actor = $3, event_note = $4 WHERE id = $5",
        )
        .bind(via.as_str())
        .bind(update.now)
        .bind(&update.actor)
        .bind(&update.note)
        .bind(update.id.0)
        .execute(&mut *tx)
        .await
        .map_err(|e| refused(e, via))?;
    }

    let mut query =
        QueryBuilder::<Postgres>::new("UPDATE posts SET version = version + 1, updated_at = ");
    query.push_bind(update.now);
    query
        .push(", event_actor = ")
        .push_bind(update.actor.clone());
    query.push(", event_note = ").push_bind(update.note.clone());
    if let Some(to) = update.to {
        query.push(", status = ").push_bind(to.as_str());
        if to != PostStatus::Posting {
            query.push(", lease_owner = NULL, lease_expires_at = NULL");
        }
    }
    push_fields(&mut query, &update);
    query.push(" WHERE id = ").push_bind(update.id.0);
    // Nothing below changes the post row, so the row as written is the answer.
    query.push(format!(" RETURNING {POST_COLUMNS}"));
    let written = query
        .build()
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| refused(e, after))?;
    let post = rows::post(&written)?;

    if let Some(event) = &update.event {
        insert_event(&mut tx, update.id, event, after, &update.actor, update.now).await?;
    }
    if let Some(phase) = update.intent_phase {
        let generation = match update.guard {
            Guard::Generation(generation) => Some(generation),
            Guard::Version(_) => None,
        };
        sqlx::query(
            "UPDATE intents SET phase = $1, settled_at = $2 WHERE id = ( \
               SELECT max(id) FROM intents WHERE post_id = $3 \
               AND ($4::bigint IS NULL OR generation = $4))",
        )
        .bind(phase.as_str())
        .bind(update.now)
        .bind(update.id.0)
        .bind(generation)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if let Some(settle) = update.reservation {
        let state = match settle {
            Settle::Commit => "committed",
            Settle::Release => "released",
        };
        sqlx::query(
            "UPDATE reservations SET state = $1, settled_at = $2 \
             WHERE post_id = $3 AND state = 'reserved'",
        )
        .bind(state)
        .bind(update.now)
        .bind(update.id.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    let channel = current.content.channel.as_str();
    let mut failures = 0;
    if let Some(step) = update.failures {
        failures = match step {
            FailureStep::Reset => {
                sqlx::query("DELETE FROM channel_failures WHERE channel = $1")
                    .bind(channel)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                0
            }
            FailureStep::Increment => sqlx::query_scalar(
                "INSERT INTO channel_failures (channel, consecutive) VALUES ($1, 1) \
                 ON CONFLICT (channel) DO UPDATE \
                 SET consecutive = channel_failures.consecutive + 1 \
                 RETURNING consecutive",
            )
            .bind(channel)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?,
        };
    }
    if let Some(pause) = &update.pause
        && pause
            .after_failures
            .is_none_or(|n| failures >= i64::from(n))
    {
        admin::insert_pause(
            &mut tx,
            &pause.scope,
            &pause.reason,
            &update.actor,
            update.now,
            &pause.notify,
        )
        .await?;
    }
    admin::insert_outbox(&mut tx, &update.notify, update.now).await?;
    tx.commit().await.map_err(db)?;
    Ok(post)
}

fn push_fields(query: &mut QueryBuilder<Postgres>, update: &PostUpdate) {
    let set = &update.set;
    if let Some((content, hash)) = &set.content {
        query.push(", title = ").push_bind(content.title.clone());
        query.push(", text = ").push_bind(content.text.clone());
        query
            .push(", media = ")
            .push_bind(Json(content.media.clone()));
        query.push(", link = ").push_bind(content.link.clone());
        query
            .push(", content_hash = ")
            .push_bind(hash.as_str().to_owned());
        query
            .push(", text_key = ")
            .push_bind(airlock_core::review::text_key(&content.text));
    }
    if let Some(at) = set.scheduled_at {
        query.push(", scheduled_at = ").push_bind(at);
    }
    if let Some(hash) = &set.approved_hash {
        query
            .push(", approved_hash = ")
            .push_bind(hash.as_ref().map(|h| h.as_str().to_owned()));
    }
    if let Some(by) = &set.approved_by {
        query.push(", approved_by = ").push_bind(by.clone());
    }
    if let Some(by) = &set.edited_by {
        query.push(", edited_by = ").push_bind(by.clone());
    }
    if set.count_attempt {
        query.push(", attempts = attempts + 1");
    }
    if set.count_wait {
        query.push(", waits = waits + 1");
    }
    if set.reset_attempts {
        query.push(", attempts = 0, waits = 0");
    }
    if let Some(at) = set.not_before {
        query.push(", not_before = ").push_bind(at);
    }
    if let Some(id) = &set.platform_post_id {
        query.push(", platform_post_id = ").push_bind(id.clone());
    }
    if let Some(link) = &set.permalink {
        query.push(", permalink = ").push_bind(link.clone());
    }
    if let Some(at) = set.posted_at {
        query.push(", posted_at = ").push_bind(at);
    }
    if let Some(at) = set.verified_at {
        query.push(", verified_at = ").push_bind(at);
    }
    if let Some(error) = &set.error {
        query.push(", error = ").push_bind(error.clone());
    }
    if set.count_revision {
        query.push(", revisions = revisions + 1");
    }
    if set.reset_revisions {
        query.push(", revisions = 0");
    }
    if let Some(at) = set.quarantined_at {
        query.push(", quarantined_at = ").push_bind(at);
    }
}

/// Records that a stale worker's write arrived and changed nothing: evidence for the
/// person who settles the post. The post's `version` moves on, so a decision made on an
/// earlier read (without this evidence) conflicts and reads again.
async fn record_stale(
    conn: &mut PgConnection,
    update: &PostUpdate,
    status: PostStatus,
    generation: i64,
) -> Result<()> {
    let wanted = update.to.map(|s| s.as_str()).unwrap_or("no status change");
    let note = format!(
        "refused a write from generation {generation} (wanted {wanted}{}); the post had moved on",
        update
            .note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    );
    let event = EventNote {
        kind: "stale_outcome".into(),
        note: Some(note),
    };
    insert_event(
        &mut *conn,
        update.id,
        &event,
        status,
        &update.actor,
        update.now,
    )
    .await?;
    sqlx::query("UPDATE posts SET version = version + 1 WHERE id = $1")
        .bind(update.id.0)
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(())
}

pub(crate) async fn insert_event(
    conn: &mut PgConnection,
    id: PostId,
    event: &EventNote,
    status: PostStatus,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note) \
         VALUES ($1, $2, $3, $4, $4, $5, $6)",
    )
    .bind(id.0)
    .bind(now)
    .bind(&event.kind)
    .bind(status.as_str())
    .bind(actor)
    .bind(&event.note)
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn delete_draft(
    pool: &PgPool,
    id: PostId,
    version: i64,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut tx = begin(pool).await?;
    let post = lock_post(&mut tx, id).await?;
    if post.version != version {
        return Err(StoreError::Conflict(id));
    }
    if post.status != PostStatus::Draft {
        return Err(StoreError::IllegalTransition {
            id,
            from: post.status,
            to: PostStatus::Draft,
        });
    }
    let history: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM intents WHERE post_id = $1) \
             OR EXISTS (SELECT 1 FROM reservations WHERE post_id = $1)",
    )
    .bind(id.0)
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    if history {
        return Err(StoreError::HasHistory(id));
    }
    let event = EventNote {
        kind: "discarded".into(),
        note: Some("draft discarded".into()),
    };
    insert_event(&mut tx, id, &event, PostStatus::Draft, actor, now).await?;
    sqlx::query("DELETE FROM create_keys WHERE post_id = $1")
        .bind(id.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    sqlx::query("DELETE FROM posts WHERE id = $1")
        .bind(id.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)
}

pub(crate) async fn add_event(
    pool: &PgPool,
    id: PostId,
    event: EventNote,
    actor: &str,
    now: DateTime<Utc>,
    notify: Vec<NewNotification>,
) -> Result<()> {
    let mut tx = begin(pool).await?;
    // FOR SHARE: the status recorded on the event is the one the post has when it commits.
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM posts WHERE id = $1 FOR SHARE")
            .bind(id.0)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
    let status = status_of(&status.ok_or(StoreError::NotFound(id))?)?;
    insert_event(&mut tx, id, &event, status, actor, now).await?;
    admin::insert_outbox(&mut tx, &notify, now).await?;
    tx.commit().await.map_err(db)
}

pub(crate) async fn record_verifications(
    pool: &PgPool,
    records: &[VerificationRecord],
) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut tx = begin(pool).await?;
    for record in records {
        // FOR SHARE: the post stays `posted` until this commits.
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM posts WHERE id = $1 FOR SHARE")
                .bind(record.id.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        if status.as_deref() != Some(PostStatus::Posted.as_str()) {
            continue;
        }
        let event = match &record.result {
            Ok(permalink) => {
                sqlx::query(
                    "UPDATE posts SET verified_at = $1, permalink = coalesce(permalink, $2), \
                     version = version + 1 WHERE id = $3",
                )
                .bind(record.at)
                .bind(permalink)
                .bind(record.id.0)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
                airlock_store::verified_event()
            }
            Err(reason) => {
                admin::insert_outbox(&mut tx, &record.notify, record.at).await?;
                airlock_store::verify_failed_event(reason)
            }
        };
        insert_event(
            &mut tx,
            record.id,
            &event,
            PostStatus::Posted,
            &record.actor,
            record.at,
        )
        .await?;
    }
    tx.commit().await.map_err(db)
}

/// Events with ids above `after`, oldest first, never skipping one that commits late.
///
/// Ids are taken in insert order but transactions commit in any order, so a plain
/// `id > after` could return id 11 while id 10 is still uncommitted, and a reader
/// that moves its cursor to 11 would never see 10. Every event insert holds the
/// event-feed lock shared until it commits (see the migration); taking it exclusively
/// for an instant waits out the inserts in flight, after which every id up to the
/// highest visible one is final. Only ids up to that watermark are returned.
pub(crate) async fn events_after(pool: &PgPool, after: i64, limit: u32) -> Result<Vec<PostEvent>> {
    let mut tx = begin(pool).await?;
    xact_lock(&mut tx, lock::EVENTS, 0).await?;
    let watermark: Option<i64> = sqlx::query_scalar("SELECT max(id) FROM post_events")
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    let Some(watermark) = watermark else {
        return Ok(Vec::new());
    };
    sqlx::query(AssertSqlSafe(format!(
        "SELECT {EVENT_COLUMNS} FROM post_events WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3"
    )))
    .bind(after)
    .bind(watermark)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?
    .iter()
    .map(rows::event)
    .collect()
}
