//! Drafts, guarded post updates, discarding, events and verification records, each one
//! call of airlock's functions (the reads are shared: `airlock_store_sql::reads`).
//!
//! Each write locks the post row (`FOR UPDATE`) before it checks its guard, so the check
//! and the write see the same row; the status edge itself is checked once more by the
//! trigger. Creation serializes per idempotency key and per slot with advisory locks, so
//! two agents retrying at once still make one post.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sqlx::types::Json;

use airlock_core::{Post, PostEvent, PostId};
use airlock_store::{
    CreatePost, Created, EventNote, FailureStep, Guard, NewNotification, PostFields, PostUpdate,
    Result, Settle, StoreError, VerificationRecord,
};

use airlock_store_sql::{reads, rows};

use crate::dialect::{Pg, get};
use crate::{
    PgStore, begin, db, is_unique_violation, json_time, lock, micros, notify_json, refusal,
    xact_lock,
};

/// Store::create_post: `airlock_create_post` (idempotency key, slot, the creator's
/// draft count, the duplicate text, the draft and its key) in one round trip.
pub(crate) async fn create(store: &PgStore, req: CreatePost) -> Result<Created> {
    let new = &req.new;
    let content = &new.content;
    let key = req.idempotency.as_ref();
    let row = sqlx::query(
        "SELECT r.existing, (r.post).* FROM airlock_create_post($1, $2, $3, $4, $5, $6, $7, \
         $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) r",
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
    .bind(airlock_core::review::text_key(&content.text))
    .bind(key.map(|k| k.scope.as_str()))
    .bind(key.map(|k| k.key.as_str()))
    .bind(key.map(|k| k.request_hash.as_str()))
    .bind(key.map(|k| micros(k.ttl)))
    .bind(req.duplicate_window.map(micros))
    .bind(req.max_live_drafts.map(i64::from))
    .fetch_one(&store.pool)
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

/// The fields a post update sets, as `airlock_update_post` reads them: a key present
/// with `null` clears its column, an absent key leaves it alone.
fn set_json(set: &PostFields) -> Value {
    let mut m = Map::new();
    let opt = |v: Option<&str>| v.map_or(Value::Null, |v| Value::String(v.to_owned()));
    let time = |v: Option<DateTime<Utc>>| v.map_or(Value::Null, json_time);
    if let Some((content, hash)) = &set.content {
        m.insert(
            "content".into(),
            json!({
                "title": content.title,
                "text": content.text,
                "media": content.media,
                "link": content.link,
                "content_hash": hash.as_str(),
                "text_key": airlock_core::review::text_key(&content.text),
            }),
        );
    }
    if let Some(at) = set.scheduled_at {
        m.insert("scheduled_at".into(), json_time(at));
    }
    if let Some(hash) = &set.approved_hash {
        m.insert(
            "approved_hash".into(),
            opt(hash.as_ref().map(|h| h.as_str())),
        );
    }
    if let Some(by) = &set.approved_by {
        m.insert("approved_by".into(), opt(by.as_deref()));
    }
    if let Some(by) = &set.edited_by {
        m.insert("edited_by".into(), Value::String(by.clone()));
    }
    for (key, on) in [
        ("count_attempt", set.count_attempt),
        ("count_wait", set.count_wait),
        ("reset_attempts", set.reset_attempts),
        ("count_revision", set.count_revision),
        ("reset_revisions", set.reset_revisions),
    ] {
        m.insert(key.into(), Value::Bool(on));
    }
    if let Some(at) = set.not_before {
        m.insert("not_before".into(), time(at));
    }
    if let Some(at) = set.deferred_until {
        m.insert("deferred_until".into(), time(at));
    }
    if let Some(id) = &set.platform_post_id {
        m.insert("platform_post_id".into(), opt(id.as_deref()));
    }
    if let Some(link) = &set.permalink {
        m.insert("permalink".into(), opt(link.as_deref()));
    }
    if let Some(at) = set.posted_at {
        m.insert("posted_at".into(), json_time(at));
    }
    if let Some(at) = set.verified_at {
        m.insert("verified_at".into(), time(at));
    }
    if let Some(error) = &set.error {
        m.insert("error".into(), opt(error.as_deref()));
    }
    if let Some(at) = set.quarantined_at {
        m.insert("quarantined_at".into(), time(at));
    }
    Value::Object(m)
}

/// Store::update_post: `airlock_update_post` (guard, walk, verdict, the change, its
/// event, intent phase, reservation, failure counter, pause and notifications) in one
/// round trip.
pub(crate) async fn update(store: &PgStore, update: PostUpdate) -> Result<Post> {
    let (guard_kind, guard) = match update.guard {
        Guard::Version(v) => ("version", v),
        Guard::Generation(g) => ("generation", g),
    };
    let stale_note = match update.guard {
        Guard::Generation(generation) if update.record_stale => {
            airlock_store::decide::stale_evidence(&update, generation).note
        }
        _ => None,
    };
    let verdict = update.verdict.as_ref().map(|v| {
        Json(json!({
            "verdict": v.verdict.as_str(),
            "reasons": v.reasons,
            "content_hash": v.content_hash.as_str(),
            "rubric_hash": v.rubric_hash,
            "content": v.content,
        }))
    });
    let pause = update.pause.as_ref().map(|p| {
        Json(json!({
            "scope": p.scope.as_key(),
            "reason": p.reason,
            "after_failures": p.after_failures,
            "notify": notify_json(&p.notify).0,
        }))
    });
    let row = sqlx::query(
        "SELECT r.outcome, (r.post).* FROM airlock_update_post($1, $2, $3, $4, $5, $6, $7, $8, \
         $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) r",
    )
    .bind(update.id.0)
    .bind(guard_kind)
    .bind(guard)
    .bind(update.to.map(|s| s.as_str()))
    .bind(update.via.map(|s| s.as_str()))
    .bind(&update.actor)
    .bind(&update.note)
    .bind(update.now)
    .bind(Json(set_json(&update.set)))
    .bind(update.event.as_ref().map(|e| e.kind.as_str()))
    .bind(update.event.as_ref().and_then(|e| e.note.as_deref()))
    .bind(update.intent_required)
    .bind(update.intent_phase.map(|p| p.as_str()))
    .bind(verdict)
    .bind(update.reservation.map(|settle| match settle {
        Settle::Commit => "committed".to_owned(),
        Settle::Release => "released".to_owned(),
        Settle::CommitAttempt(generation) => format!("attempt:{generation}"),
    }))
    .bind(stale_note)
    .bind(update.failures.map(|step| match step {
        FailureStep::Reset => "reset",
        FailureStep::Increment => "increment",
    }))
    .bind(pause)
    .bind(notify_json(&update.notify))
    .bind(update.duplicate_window.map(micros))
    .fetch_one(&store.pool)
    .await
    .map_err(|e| refusal(e, update.id))?;
    let outcome: String = get(&row, "outcome")?;
    if outcome == "fenced" {
        return Err(StoreError::Fenced {
            id: update.id,
            generation: guard,
        });
    }
    rows::post::<Pg>(&row)
}

/// Store::delete_draft: `airlock_delete_draft`.
pub(crate) async fn delete_draft(
    store: &PgStore,
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
        .execute(&store.pool)
        .await
        .map_err(|e| refusal(e, id))?;
    Ok(())
}

/// Store::add_event: `airlock_add_event`.
pub(crate) async fn add_event(
    store: &PgStore,
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
        .execute(&store.pool)
        .await
        .map_err(|e| refusal(e, id))?;
    Ok(())
}

/// Store::record_verifications: `airlock_record_verifications`, the batch in one round
/// trip.
pub(crate) async fn record_verifications(
    store: &PgStore,
    records: &[VerificationRecord],
) -> Result<()> {
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
        .execute(&store.pool)
        .await
        .map_err(db)?;
    Ok(())
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
