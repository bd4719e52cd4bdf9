//! Drafts, guarded post updates, discarding, events and verification records, each one
//! call of airlock's functions (the reads are shared: `airlock_store_sql::reads`).
//!
//! Each write locks the post row (`FOR UPDATE`) before it checks its guard, so the check
//! and the write see the same row; the status edge itself is checked once more by the
//! trigger. Creation serializes per idempotency key and per slot with advisory locks, so
//! two agents retrying at once still make one post.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::AssertSqlSafe;
use sqlx::types::Json;

use airlock_core::{ContentHash, Post, PostContent, PostEvent, PostId};
use airlock_store::{
    Change, CreatePost, Created, EventNote, Guard, NewNotification, PauseSpec, PostChange, Result,
    StoreError, VerdictEffect, VerificationRecord,
};

use airlock_store_sql::{reads, rows};

use crate::dialect::{Pg, get};
use crate::{
    PgStore, begin, db, is_unique_violation, json_time, lock, micros, notify_json, refusal,
    xact_lock,
};

/// A change's content as `airlock_change_edited` reads it.
fn content_json(content: &PostContent, hash: &ContentHash) -> Value {
    json!({
        "title": content.title,
        "text": content.text,
        "media": content.media,
        "more_parts": content.more,
        "first_comment": content.first_comment,
        "link": content.link,
        "content_hash": hash.as_str(),
        "text_key": airlock_core::review::text_key(&content.text),
    })
}

fn pause_json(pause: &PauseSpec) -> Json<Value> {
    Json(json!({
        "scope": pause.scope.as_key(),
        "reason": pause.reason,
        "after_failures": pause.after_failures,
        "notify": notify_json(&pause.notify).0,
    }))
}

/// One argument of a named change's function.
enum Arg {
    Int(Option<i64>),
    Text(Option<String>),
    Time(Option<DateTime<Utc>>),
    Flag(bool),
    Json(Option<Json<Value>>),
}

/// Events with ids above `after`, oldest first, never skipping one that commits late.
///
/// Ids are taken in insert order but transactions commit in any order, so a plain
/// `id > after` could return id 11 while id 10 is still uncommitted, and a reader
/// that moves its cursor to 11 would never see 10. Every event insert holds the
/// event-feed lock shared until it commits (see the migration); taking it exclusively
/// for an instant waits out the inserts in flight, after which every id up to the
/// highest visible one is final. Only ids up to that watermark are returned.
pub(crate) async fn events_after(
    store: &PgStore,
    after: i64,
    limit: u32,
) -> Result<Vec<PostEvent>> {
    let mut tx = begin(&store.pool).await?;
    xact_lock(&mut tx, lock::EVENTS, 0).await?;
    let watermark: Option<i64> = sqlx::query_scalar("SELECT max(id) FROM post_events")
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    let Some(watermark) = watermark else {
        return Ok(Vec::new());
    };
    reads::events_after::<Pg>(&store.pool, after, Some(watermark), limit).await
}

impl PgStore {
    /// One change alone: the change's own function, `airlock_change_<name>` (each passes
    /// its one combination to `airlock_apply_change`), in one round trip.
    pub(crate) async fn change_alone(&self, change: PostChange) -> Result<Post> {
        use Arg::*;
        let PostChange {
            id,
            actor,
            now,
            change,
            notify,
        } = change;
        let name = change.name();
        let guard = match change.guard() {
            Guard::Version(v) | Guard::Generation(v) => v,
        };
        let args: Vec<Arg> = match change {
            Change::Published {
                part,
                generation,
                posted_at,
                platform_post_id,
                permalink,
                sent_by,
                note,
                flag,
                pause,
            } => vec![
                Int(Some(generation)),
                Int(Some(part.into())),
                Time(Some(posted_at)),
                Text(platform_post_id),
                Text(permalink),
                Int(sent_by),
                Text(Some(note)),
                Text(flag),
                Json(pause.as_ref().map(pause_json)),
            ],
            Change::PartPublished {
                generation,
                part,
                platform_post_id,
                permalink,
                sent_by,
                lease_until,
                note,
            } => vec![
                Int(Some(generation)),
                Int(Some(part.into())),
                Text(Some(platform_post_id)),
                Text(permalink),
                Int(sent_by),
                Time(Some(lease_until)),
                Text(Some(note)),
            ],
            Change::PartSettled {
                version,
                part,
                platform_post_id,
                permalink,
                note,
            } => vec![
                Int(Some(version)),
                Int(Some(part.into())),
                Text(Some(platform_post_id)),
                Text(permalink),
                Text(Some(note)),
            ],
            Change::NotSent {
                generation,
                reason,
                note,
                not_before,
                counts_attempt,
                counts_wait,
                settles_intent,
            } => vec![
                Int(Some(generation)),
                Text(Some(reason)),
                Text(Some(note)),
                Time(Some(not_before)),
                Flag(counts_attempt),
                Flag(counts_wait),
                Flag(settles_intent),
            ],
            Change::Failed {
                generation,
                reason,
                counts_attempt,
                settles_intent,
                pause,
            } => vec![
                Int(Some(generation)),
                Text(Some(reason)),
                Flag(counts_attempt),
                Flag(settles_intent),
                Json(pause.as_ref().map(pause_json)),
            ],
            Change::Unknown {
                generation,
                reason,
                pause,
            }
            | Change::ReapedSent {
                generation,
                reason,
                pause,
            } => vec![
                Int(Some(generation)),
                Text(Some(reason)),
                Json(pause.as_ref().map(pause_json)),
            ],
            Change::Held {
                generation,
                note,
                pause,
            } => vec![
                Int(Some(generation)),
                Text(Some(note)),
                Json(pause.as_ref().map(pause_json)),
            ],
            Change::ReapedUnsent {
                generation,
                reason,
                note,
                gives_up,
                not_before,
            } => vec![
                Int(Some(generation)),
                Text(Some(reason)),
                Text(Some(note)),
                Flag(gives_up),
                Time(not_before),
            ],
            Change::Edited {
                version,
                content,
                scheduled_at,
                fields,
                duplicate_window,
            } => vec![
                Int(Some(version)),
                Json(content.map(|(c, h)| sqlx::types::Json(content_json(&c, &h)))),
                Time(scheduled_at),
                Text(Some(fields)),
                Int(duplicate_window.map(micros)),
            ],
            Change::Verdict {
                version,
                verdict,
                effect,
            } => {
                let verdict = sqlx::types::Json(json!({
                    "verdict": verdict.verdict.as_str(),
                    "reasons": verdict.reasons,
                    "content_hash": verdict.content_hash.as_str(),
                    "rubric_hash": verdict.rubric_hash,
                    "content": verdict.content,
                }));
                let (effect, approved_by, note, window, counts, quarantine, error) = match effect {
                    VerdictEffect::Approve {
                        approved_by,
                        note,
                        duplicate_window,
                    } => (
                        "approve",
                        Some(approved_by),
                        note,
                        duplicate_window,
                        false,
                        false,
                        None,
                    ),
                    VerdictEffect::AwaitMore { note } => {
                        ("await", None, note, None, false, false, None)
                    }
                    VerdictEffect::Revise {
                        counts,
                        quarantine,
                        error,
                        note,
                    } => ("revise", None, note, None, counts, quarantine, Some(error)),
                };
                vec![
                    Int(Some(version)),
                    Json(Some(verdict)),
                    Text(Some(effect.to_owned())),
                    Text(approved_by),
                    Text(Some(note)),
                    Int(window.map(micros)),
                    Flag(counts),
                    Flag(quarantine),
                    Text(error),
                ]
            }
            Change::Withdrawn {
                version,
                note,
                error,
            } => vec![Int(Some(version)), Text(Some(note)), Text(error)],
            Change::Released { version, note }
            | Change::CannotLand { version, note }
            | Change::ResendClaimed { version, note } => {
                vec![Int(Some(version)), Text(Some(note))]
            }
            Change::Requeued { version } => vec![Int(Some(version))],
            Change::SettledPublished {
                part,
                version,
                posted_at,
                platform_post_id,
                permalink,
                note,
            } => vec![
                Int(Some(version)),
                Int(Some(part.into())),
                Time(Some(posted_at)),
                Text(platform_post_id),
                Text(permalink),
                Text(Some(note)),
            ],
            Change::SettledNotPublished {
                version,
                error,
                note,
            } => vec![Int(Some(version)), Text(Some(error)), Text(Some(note))],
            Change::Deferred {
                version,
                until,
                note,
            } => vec![Int(Some(version)), Time(Some(until)), Text(Some(note))],
            Change::DeferralLifted {
                version,
                until,
                note,
            } => vec![Int(Some(version)), Time(until), Text(Some(note))],
        };
        let placeholders: Vec<String> = (1..=4 + args.len()).map(|n| format!("${n}")).collect();
        let text = format!(
            "SELECT r.outcome, (r.post).* FROM airlock_change_{name}({}) r",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(AssertSqlSafe(text))
            .bind(id.0)
            .bind(&actor)
            .bind(now)
            .bind(notify_json(&notify));
        for arg in args {
            query = match arg {
                Int(v) => query.bind(v),
                Text(v) => query.bind(v),
                Time(v) => query.bind(v),
                Flag(v) => query.bind(v),
                Json(v) => query.bind(v),
            };
        }
        let row = query
            .fetch_one(&self.pool)
            .await
            .map_err(|e| refusal(e, id))?;
        let outcome: String = get(&row, "outcome")?;
        if outcome == "fenced" {
            return Err(StoreError::Fenced {
                id,
                generation: guard,
            });
        }
        rows::post::<Pg>(&row)
    }
}

#[async_trait]
impl airlock_store::Posts for PgStore {
    /// Store::create_post: `airlock_create_post` (idempotency key, slot, the creator's
    /// draft count, the duplicate text, the draft and its key) in one round trip.
    async fn create_post(&self, req: CreatePost) -> Result<Created> {
        let new = &req.new;
        let content = &new.content;
        let key = req.idempotency.as_ref();
        let row = sqlx::query(
            "SELECT r.existing, (r.post).* FROM airlock_create_post($1, $2, $3, $4, $5, $6, $7, \
             $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) r",
        )
        .bind(content.channel.as_str())
        .bind(&content.title)
        .bind(&content.text)
        .bind(Json(&content.media))
        .bind(Json(&content.more))
        .bind(&content.first_comment)
        .bind(&content.link)
        .bind(content.source.as_ref().map(Json))
        .bind(content.source.as_ref().map(|s| s.path.clone()))
        .bind(new.scheduled_at)
        .bind(content.hash().as_str())
        .bind(&req.actor)
        .bind(new.test)
        .bind(&new.slot)
        .bind(req.now)
        .bind(airlock_core::review::text_key(&content.text))
        .bind(key.map(|k| k.scope.as_str()))
        .bind(key.map(|k| k.key.as_str()))
        .bind(key.map(|k| k.request_hash.as_str()))
        .bind(key.map(|k| micros(k.ttl)))
        .bind(req.duplicate_window.map(micros))
        .bind(req.max_live_drafts.map(i64::from))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                StoreError::Duplicate(format!(
                    "a post for slot {:?} on {}",
                    new.slot.as_deref().unwrap_or(""),
                    content.channel
                ))
            } else {
                refusal(e, PostId(0))
            }
        })?;
        Ok(Created {
            existing: get(&row, "existing")?,
            post: rows::post::<Pg>(&row)?,
        })
    }

    async fn created_with_key(
        &self,
        key: &airlock_store::CreateKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Created>> {
        let row =
            sqlx::query("SELECT request_sha256, post_id FROM airlock_created_with_key($1, $2, $3)")
                .bind(&key.scope)
                .bind(&key.key)
                .bind(now - key.ttl)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let request: String = get(&row, "request_sha256")?;
        if request != key.request_hash {
            return Err(StoreError::IdempotencyMismatch(key.key.clone()));
        }
        let id: i64 = get(&row, "post_id")?;
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let post = reads::get_in::<Pg>(&mut conn, PostId(id)).await?;
        Ok(Some(Created {
            post,
            existing: true,
        }))
    }

    /// Store::change_post: a publish in a batch with the others of this moment
    /// (`outcomes.rs`), any other change alone.
    async fn change_post(&self, change: PostChange) -> Result<Post> {
        if crate::outcomes::batched(&change) {
            crate::batch::make::<crate::outcomes::Outcomes>(self, change).await
        } else {
            self.change_alone(change).await
        }
    }

    /// Store::delete_draft: `airlock_delete_draft`.
    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query("SELECT airlock_delete_draft($1, $2, $3, $4, $5, $6)")
            .bind(id.0)
            .bind(version)
            .bind(actor)
            .bind(now)
            .bind("discarded")
            .bind("draft discarded")
            .execute(&self.pool)
            .await
            .map_err(|e| refusal(e, id))?;
        Ok(())
    }

    /// Store::add_event: `airlock_add_event`.
    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()> {
        sqlx::query("SELECT airlock_add_event($1, $2, $3, $4, $5, $6)")
            .bind(id.0)
            .bind(&event.kind)
            .bind(&event.note)
            .bind(actor)
            .bind(now)
            .bind(notify_json(&notify))
            .execute(&self.pool)
            .await
            .map_err(|e| refusal(e, id))?;
        Ok(())
    }

    /// Store::record_verifications: `airlock_record_verifications`, the batch in one round
    /// trip.
    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let batch: Vec<Value> = records
            .iter()
            .map(|r| {
                let (ok, permalink, event) = match &r.result {
                    Ok(permalink) => (true, permalink.clone(), airlock_store::verified_event()),
                    Err(reason) => (false, None, airlock_store::verify_failed_event(reason)),
                };
                json!({
                    "id": r.id.0,
                    "actor": r.actor,
                    "at": json_time(r.at),
                    "ok": ok,
                    "permalink": permalink,
                    "kind": event.kind,
                    "note": event.note,
                    "notify": notify_json(&r.notify).0,
                })
            })
            .collect();
        sqlx::query("SELECT airlock_record_verifications($1)")
            .bind(Json(Value::Array(batch)))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}
