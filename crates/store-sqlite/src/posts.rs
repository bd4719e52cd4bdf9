//! Drafts, guarded post updates, discarding, events and verification records (the
//! reads are shared: `airlock_store_sql::reads`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection};

use airlock_core::{Post, PostId, PostStatus};
use airlock_store::decide::{
    GuardCheck, check_guard, draft_limit, edit_duplicate_check, illegal_step, leaves_quarantine,
    pause_applies, stale_evidence, write_refusal,
};
use airlock_store::{
    CreatePost, Created, Effects, EventNote, FailureStep, Guard, NewNotification, PostChange,
    Result, Settle, StoreError, VerificationRecord,
};
use airlock_store_sql::reads;
use airlock_store_sql::rows::{self, POST_COLUMNS, status_of};

use crate::dialect::Lite;
use crate::group::{Savepoint, Write};
use crate::{SqliteStore, admin, db, is_trigger_refusal, next_statement, ts};

async fn get_in(conn: &mut SqliteConnection, id: PostId) -> Result<Post> {
    reads::get_in::<Lite>(conn, id).await
}

/// Refuses ([`StoreError::DuplicateText`]) a text key that a post on the channel other
/// than `except` holds while quarantined, or while approved, in flight or posted and
/// going out within `window` of `at` (`posted_at` when posted, else `scheduled_at`).
async fn refuse_duplicate(
    conn: &mut SqliteConnection,
    channel: &str,
    text_key: &str,
    at: DateTime<Utc>,
    window: chrono::Duration,
    except: Option<PostId>,
) -> Result<()> {
    let earlier = sqlx::query(
        "SELECT id, status FROM posts WHERE channel = ?1 AND text_key = ?2 \
         AND ((status = 'draft' AND quarantined_at IS NOT NULL) \
              OR (status IN ('approved', 'posting', 'needs_review', 'posted') \
                  AND COALESCE(posted_at, scheduled_at) > ?3 \
                  AND COALESCE(posted_at, scheduled_at) < ?4)) \
         AND (?5 IS NULL OR id <> ?5) \
         ORDER BY id DESC LIMIT 1",
    )
    .bind(channel)
    .bind(text_key)
    .bind(ts(at - window))
    .bind(ts(at + window))
    .bind(except.map(|id| id.0))
    .fetch_optional(conn)
    .await
    .map_err(db)?;
    match earlier {
        Some(row) => Err(StoreError::DuplicateText {
            earlier: PostId(row.try_get("id").map_err(db)?),
            status: status_of(&row.try_get::<String, _>("status").map_err(db)?)?,
        }),
        None => Ok(()),
    }
}

/// Adds the statements that end the post's live reservations as `settle` says to
/// `writes`.
fn push_settle(writes: &mut QueryBuilder<Sqlite>, id: PostId, settle: Settle, now: DateTime<Utc>) {
    let (state, sender) = match settle {
        Settle::Commit => ("committed", None),
        Settle::Release => ("released", None),
        Settle::CommitAttempt(generation) => ("released", Some(generation)),
    };
    next_statement(
        writes,
        "UPDATE reservations SET state = CASE WHEN generation = ",
    )
    .push_bind(sender)
    .push(" THEN 'committed' ELSE ")
    .push_bind(state);
    writes.push(" END, settled_at = ").push_bind(ts(now));
    writes
        .push(" WHERE post_id = ")
        .push_bind(id.0)
        .push(" AND state = 'reserved'");
    if let Some(generation) = sender {
        // A resolution released it: the attempt is counted again, with its own stamps.
        next_statement(
            writes,
            "INSERT INTO reservations (post_id, generation, channel, state, created_at, \
             sent_at, settled_at, cost_usd_micros) \
             SELECT r.post_id, r.generation, r.channel, 'committed', r.created_at, \
               COALESCE(r.sent_at, (SELECT min(i.created_at) FROM intents i \
                                    WHERE i.post_id = r.post_id AND i.generation = r.generation)), ",
        )
        .push_bind(ts(now));
        writes.push(", r.cost_usd_micros FROM reservations r WHERE r.post_id = ");
        writes
            .push_bind(id.0)
            .push(" AND r.generation = ")
            .push_bind(generation);
        writes.push(
            " AND NOT EXISTS (SELECT 1 FROM reservations c WHERE c.post_id = r.post_id \
             AND c.generation = r.generation AND c.state = 'committed') \
             ORDER BY r.id DESC LIMIT 1",
        );
    }
}

fn guard_generation(guard: Guard) -> Option<i64> {
    match guard {
        Guard::Generation(generation) => Some(generation),
        Guard::Version(_) => None,
    }
}

fn push_fields(query: &mut QueryBuilder<Sqlite>, effects: &Effects) {
    let set = &effects.set;
    if let Some((content, hash)) = &set.content {
        query.push(", title = ").push_bind(content.title.clone());
        query.push(", text = ").push_bind(content.text.clone());
        query
            .push(", media = ")
            .push_bind(serde_json::to_string(&content.media).expect("media serializes"));
        query.push(", link = ").push_bind(content.link.clone());
        query
            .push(", more_parts = ")
            .push_bind(serde_json::to_string(&content.more).expect("parts serialize"));
        query
            .push(", first_comment = ")
            .push_bind(content.first_comment.clone());
        query
            .push(", content_hash = ")
            .push_bind(hash.as_str().to_owned());
        query
            .push(", text_key = ")
            .push_bind(airlock_core::review::text_key(&content.text));
    }
    if let Some(at) = set.scheduled_at {
        query.push(", scheduled_at = ").push_bind(ts(at));
    }
    if let Some(approval) = &set.approval {
        let (hash, by) = match approval {
            Some((hash, by)) => (Some(hash.as_str().to_owned()), Some(by.clone())),
            None => (None, None),
        };
        query.push(", approved_hash = ").push_bind(hash);
        query.push(", approved_by = ").push_bind(by);
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
        query.push(", not_before = ").push_bind(at.map(ts));
    }
    if let Some(at) = set.deferred_until {
        query.push(", deferred_until = ").push_bind(at.map(ts));
    }
    if let Some(id) = &set.platform_post_id {
        query.push(", platform_post_id = ").push_bind(id.clone());
    }
    if let Some(link) = &set.permalink {
        query.push(", permalink = ").push_bind(link.clone());
    }
    if let Some(at) = set.posted_at {
        query.push(", posted_at = ").push_bind(ts(at));
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
        query.push(", quarantined_at = ").push_bind(at.map(ts));
    }
}

/// Adds the statement that appends `event` to the post's history to `writes`; the caller
/// may follow it with a `WHERE`.
fn push_event(
    writes: &mut QueryBuilder<Sqlite>,
    id: PostId,
    event: &EventNote,
    status: PostStatus,
    actor: &str,
    now: DateTime<Utc>,
) {
    let mut values = next_statement(
        writes,
        "INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note) \
         SELECT ",
    )
    .separated(", ");
    values.push_bind(id.0);
    values.push_bind(ts(now));
    values.push_bind(event.kind.clone());
    values.push_bind(status.as_str());
    values.push_bind(status.as_str());
    values.push_bind(actor.to_owned());
    values.push_bind(event.note.clone());
}

/// Appends `event` to the post's history.
pub(crate) async fn insert_event(
    conn: &mut SqliteConnection,
    id: PostId,
    event: &EventNote,
    status: PostStatus,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut insert = QueryBuilder::new("");
    push_event(&mut insert, id, event, status, actor, now);
    insert.build().execute(conn).await.map_err(db)?;
    Ok(())
}

#[async_trait]
impl airlock_store::Posts for SqliteStore {
    async fn created_with_key(
        &self,
        key: &airlock_store::CreateKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Created>> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let earlier = sqlx::query(
            "SELECT request_sha256, post_id FROM create_keys \
             WHERE scope = ? AND key = ? AND created_at >= ?",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .bind(ts(now - key.ttl))
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
        let Some(row) = earlier else {
            return Ok(None);
        };
        let request: String = row.try_get("request_sha256").map_err(db)?;
        if request != key.request_hash {
            return Err(StoreError::IdempotencyMismatch(key.key.clone()));
        }
        let post = get_in(&mut conn, PostId(row.try_get("post_id").map_err(db)?)).await?;
        Ok(Some(Created {
            post,
            existing: true,
        }))
    }

    async fn create_post(&self, req: CreatePost) -> Result<Created> {
        let mut tx = self.begin_write().await?;
        if let Some(key) = &req.idempotency {
            sqlx::query("DELETE FROM create_keys WHERE created_at < ?")
                .bind(ts(req.now - key.ttl))
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            let earlier = sqlx::query(
                "SELECT request_sha256, post_id FROM create_keys WHERE scope = ? AND key = ?",
            )
            .bind(&key.scope)
            .bind(&key.key)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
            if let Some(row) = earlier {
                let request: String = row.try_get("request_sha256").map_err(db)?;
                if request != key.request_hash {
                    return Err(StoreError::IdempotencyMismatch(key.key.clone()));
                }
                let post = get_in(&mut tx, PostId(row.try_get("post_id").map_err(db)?)).await?;
                return Ok(Created {
                    post,
                    existing: true,
                });
            }
        }
        let new = &req.new;
        if let Some(slot) = &new.slot {
            let taken = sqlx::query("SELECT id FROM posts WHERE channel = ? AND slot = ?")
                .bind(new.content.channel.as_str())
                .bind(slot)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
            if let Some(row) = taken {
                let post = get_in(&mut tx, PostId(row.try_get("id").map_err(db)?)).await?;
                return Ok(Created {
                    post,
                    existing: true,
                });
            }
        }
        if req.max_live_drafts.is_some() {
            // Inside the write transaction (BEGIN IMMEDIATE): no other create counts meanwhile.
            let held = reads::live_drafts_in::<Lite>(&mut tx, &req.actor).await?;
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
        let media = serde_json::to_string(&content.media).expect("media serializes");
        let source = content
            .source
            .as_ref()
            .map(|s| serde_json::to_string(s).expect("source serializes"));
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO posts (channel, status, title, text, media, more_parts, first_comment, \
             link, source, source_path, scheduled_at, content_hash, created_by, edited_by, test, \
             slot, created_at, updated_at, event_actor, event_note, text_key) \
             VALUES (?, 'draft', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'created', ?) \
             RETURNING id",
        )
        .bind(content.channel.as_str())
        .bind(&content.title)
        .bind(&content.text)
        .bind(media)
        .bind(serde_json::to_string(&content.more).expect("parts serialize"))
        .bind(&content.first_comment)
        .bind(&content.link)
        .bind(source)
        .bind(content.source.as_ref().map(|s| s.path.clone()))
        .bind(ts(new.scheduled_at))
        .bind(content.hash().as_str())
        .bind(&req.actor)
        .bind(&req.actor)
        .bind(new.test as i64)
        .bind(&new.slot)
        .bind(ts(req.now))
        .bind(ts(req.now))
        .bind(&req.actor)
        .bind(&text_key)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        if let Some(key) = &req.idempotency {
            sqlx::query(
                "INSERT INTO create_keys (scope, key, request_sha256, post_id, created_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(&key.scope)
            .bind(&key.key)
            .bind(&key.request_hash)
            .bind(id)
            .bind(ts(req.now))
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

    async fn change_post(&self, change: PostChange) -> Result<Post> {
        self.grouped(|answer| Write::Change(Box::new(change), answer))
            .await
    }

    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let post = get_in(&mut tx, id).await?;
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
        let history: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM intents WHERE post_id = ?1) + (SELECT count(*) FROM reservations WHERE post_id = ?1)",
        )
        .bind(id.0)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        if history > 0 {
            return Err(StoreError::HasHistory(id));
        }
        let event = EventNote {
            kind: "discarded".into(),
            note: Some("draft discarded".into()),
        };
        insert_event(&mut tx, id, &event, PostStatus::Draft, actor, now).await?;
        sqlx::query("DELETE FROM create_keys WHERE post_id = ?")
            .bind(id.0)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        sqlx::query("DELETE FROM posts WHERE id = ?")
            .bind(id.0)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)
    }

    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM posts WHERE id = ?")
            .bind(id.0)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        let status = status_of(&status.ok_or(StoreError::NotFound(id))?)?;
        insert_event(&mut tx, id, &event, status, actor, now).await?;
        admin::insert_outbox(&mut tx, &notify, now).await?;
        tx.commit().await.map_err(db)
    }

    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        for record in records {
            let permalink = match &record.result {
                Ok(permalink) => permalink,
                Err(reason) => {
                    // A failed check: its notifications go out only for a post still posted.
                    let status: Option<String> =
                        sqlx::query_scalar("SELECT status FROM posts WHERE id = ?")
                            .bind(record.id.0)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(db)?;
                    if status.as_deref() == Some(PostStatus::Posted.as_str()) {
                        admin::insert_outbox(&mut tx, &record.notify, record.at).await?;
                        let event = airlock_store::verify_failed_event(reason);
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
                    continue;
                }
            };
            // Only a post still posted is marked, in one call to the driver's thread.
            let mut writes = QueryBuilder::new("UPDATE posts SET verified_at = ");
            writes.push_bind(ts(record.at));
            writes
                .push(", permalink = coalesce(permalink, ")
                .push_bind(permalink.clone());
            writes
                .push("), version = version + 1 WHERE id = ")
                .push_bind(record.id.0);
            writes.push(" AND status = 'posted'");
            push_event(
                &mut writes,
                record.id,
                &airlock_store::verified_event(),
                PostStatus::Posted,
                &record.actor,
                record.at,
            );
            writes.push(" WHERE EXISTS (SELECT 1 FROM posts WHERE id = ");
            writes
                .push_bind(record.id.0)
                .push(" AND status = 'posted')");
            writes.build().execute(&mut *tx).await.map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }
}

/// A named change ([`Posts::change_post`](airlock_store::Posts::change_post)) inside the
/// caller's write transaction. `Err`: nothing of it may stay (the caller rolls it back);
/// `Ok(Err(_))`: refused, with what it wrote kept (the evidence of a stale write).
pub(crate) async fn change_in(
    tx: &mut SqliteConnection,
    change: PostChange,
    savepoint: &mut Savepoint,
) -> Result<std::result::Result<Post, StoreError>> {
    let PostChange {
        id,
        actor,
        now,
        change,
        notify,
    } = change;
    let effects = change.effects(&actor, now);
    let read = format!(
        "{}SELECT status, version, generation, channel, review_round, content_hash, \
         quarantined_at IS NOT NULL AS quarantined, \
         (SELECT phase FROM intents WHERE post_id = posts.id AND generation = posts.generation \
          ORDER BY id DESC LIMIT 1) AS claim_intent, \
         EXISTS (SELECT 1 FROM channel_failures f WHERE f.channel = posts.channel) AS failing \
         FROM posts WHERE id = ?",
        savepoint.take()
    );
    let current = sqlx::query(sqlx::AssertSqlSafe(read))
        .bind(id.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?
        .ok_or(StoreError::NotFound(id))?;
    let status = status_of(&current.try_get::<String, _>("status").map_err(db)?)?;
    let version: i64 = current.try_get("version").map_err(db)?;
    let generation: i64 = current.try_get("generation").map_err(db)?;
    let channel: String = current.try_get("channel").map_err(db)?;
    let review_round: i64 = current.try_get("review_round").map_err(db)?;
    let quarantined: bool = current.try_get("quarantined").map_err(db)?;
    let content_hash: String = current.try_get("content_hash").map_err(db)?;
    let claim_intent: Option<String> = current.try_get("claim_intent").map_err(db)?;
    let failing: bool = current.try_get("failing").map_err(db)?;
    match check_guard(effects.guard, status, version, generation) {
        GuardCheck::Holds => {}
        GuardCheck::Conflict => return Err(StoreError::Conflict(id)),
        GuardCheck::Fenced => {
            // Nothing of the stale write applies; only the evidence is recorded.
            let stale = guard_generation(effects.guard).unwrap_or(generation);
            if effects.record_stale {
                let event = stale_evidence(&effects, stale);
                insert_event(&mut *tx, id, &event, status, &actor, now).await?;
                sqlx::query("UPDATE posts SET version = version + 1 WHERE id = ?")
                    .bind(id.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
            }
            return Ok(Err(StoreError::Fenced {
                id,
                generation: stale,
            }));
        }
    }
    if effects
        .intent_required
        .is_some_and(|required| required != claim_intent.is_some())
    {
        return Err(StoreError::Conflict(id));
    }
    if let Some((from, to)) = illegal_step(&effects, status) {
        return Err(StoreError::IllegalTransition { id, from, to });
    }
    if let Some(rule) = write_refusal(&effects, status, &content_hash) {
        return Err(StoreError::Refused {
            id,
            rule: rule.to_owned(),
        });
    }
    if leaves_quarantine(&effects, quarantined) {
        return Err(StoreError::Quarantined(id));
    }
    if effects.duplicate_window.is_some() {
        let before = get_in(&mut *tx, id).await?;
        if let Some((key, at, window)) =
            edit_duplicate_check(&effects, status, &before.content.text, before.scheduled_at)
        {
            refuse_duplicate(&mut *tx, &channel, &key, at, window, Some(id)).await?;
        }
    }
    let after = effects.to.unwrap_or(status);
    // The change's writes go to the connection's thread in one call.
    let mut query = QueryBuilder::<Sqlite>::new("");
    if let Some(verdict) = &effects.verdict {
        // In the round the verdict was given in, before this change may start a new one.
        let mut values = next_statement(
            &mut query,
            "INSERT INTO verdicts (post_id, verdict, reasons, actor, content_hash, rubric_hash, \
             review_round, content, at) VALUES (",
        )
        .separated(", ");
        values.push_bind(id.0);
        values.push_bind(verdict.verdict.as_str());
        values.push_bind(serde_json::to_string(&verdict.reasons).expect("reasons serialize"));
        values.push_bind(actor.clone());
        values.push_bind(verdict.content_hash.as_str().to_owned());
        values.push_bind(verdict.rubric_hash.clone());
        values.push_bind(review_round);
        values.push_bind(serde_json::to_string(&verdict.content).expect("content serializes"));
        values.push_bind(ts(now));
        values.push_unseparated(")");
    }
    next_statement(
        &mut query,
        "UPDATE posts SET version = version + 1, updated_at = ",
    )
    .push_bind(ts(now));
    query.push(", event_actor = ").push_bind(actor.clone());
    query
        .push(", event_note = ")
        .push_bind(effects.note.clone());
    if let Some(to) = effects.to {
        query.push(", status = ").push_bind(to.as_str());
        if to != PostStatus::Posting {
            query.push(", lease_owner = NULL, lease_expires_at = NULL");
        }
    }
    if let Some(lease_until) = effects.next_part {
        query
            .push(", generation = generation + 1, lease_expires_at = ")
            .push_bind(ts(lease_until));
    }
    push_fields(&mut query, &effects);
    query.push(" WHERE id = ").push_bind(id.0);
    // The row as written is the answer when it starts from `posting` (every outcome of
    // the guarded path): SQLite's RETURNING shows the row before its AFTER triggers, and
    // the triggers that rewrite a post's own row (its authors, its review round) start
    // only from a draft or an approved post. Nothing below writes the post row.
    if status == PostStatus::Posting {
        query.push(format!(" RETURNING {POST_COLUMNS}"));
    }
    // The status event says what happened when the status moved.
    if let Some(event) = &effects.event
        && !(effects.event_unless_moved && after != status)
    {
        push_event(&mut query, id, event, after, &actor, now);
    }
    if let Some(phase) = effects.intent_phase {
        let (landed_id, landed_link) = effects.intent_landed.clone().unwrap_or_default();
        let generation = guard_generation(effects.guard);
        next_statement(&mut query, "UPDATE intents SET phase = ").push_bind(phase.as_str());
        query.push(", settled_at = ").push_bind(ts(now));
        query
            .push(", platform_post_id = coalesce(")
            .push_bind(landed_id);
        query
            .push(", platform_post_id), permalink = coalesce(")
            .push_bind(landed_link);
        query.push(", permalink) WHERE id = (SELECT max(id) FROM intents WHERE post_id = ");
        query.push_bind(id.0).push(" AND (").push_bind(generation);
        query
            .push(" IS NULL OR generation = ")
            .push_bind(generation)
            .push("))");
    }
    if let Some(settle) = effects.reservation {
        push_settle(&mut query, id, settle, now);
    }
    if effects.failures == Some(FailureStep::Reset) && failing {
        next_statement(&mut query, "DELETE FROM channel_failures WHERE channel = ")
            .push_bind(channel.clone());
    }
    let written = query.build().fetch_all(&mut *tx).await.map_err(|e| {
        if is_trigger_refusal(&e, "airlock: quarantined") {
            StoreError::Quarantined(id)
        } else if is_trigger_refusal(&e, "illegal status transition") {
            StoreError::IllegalTransition {
                id,
                from: status,
                to: after,
            }
        } else {
            db(e)
        }
    })?;
    let mut failures = 0;
    if let Some(step) = effects.failures {
        failures = match step {
            // Written with the change, above.
            FailureStep::Reset => 0,
            FailureStep::Increment => sqlx::query_scalar(
                "INSERT INTO channel_failures (channel, consecutive) VALUES (?, 1) \
                 ON CONFLICT (channel) DO UPDATE SET consecutive = consecutive + 1 \
                 RETURNING consecutive",
            )
            .bind(&channel)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?,
        };
    }
    if let Some(pause) = &effects.pause
        && pause_applies(pause.after_failures, failures)
    {
        admin::insert_pause(
            &mut *tx,
            &pause.scope,
            &pause.reason,
            &actor,
            now,
            &pause.notify,
        )
        .await?;
    }
    admin::insert_outbox(&mut *tx, &notify, now).await?;
    // A row only when the UPDATE returned one.
    match written.first() {
        Some(row) => Ok(Ok(rows::post::<Lite>(row)?)),
        None => Ok(Ok(get_in(&mut *tx, id).await?)),
    }
}
