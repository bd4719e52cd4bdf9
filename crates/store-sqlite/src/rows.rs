//! Decoding ledger rows into `airlock-core` types. Row shapes stay private to this crate.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use airlock_core::{
    ChannelName, ContentHash, Intent, Media, Post, PostContent, PostEvent, PostId, PostSummary,
    Reservation, Source, Verdict, VerdictKind,
};
use airlock_store::{Result, StoreError, Unreadable};

use crate::{db, parse_ts, status_of};

/// The columns [`post`] reads, in a `SELECT` list.
pub(crate) const POST_COLUMNS: &str = "id, channel, status, title, text, media, link, source, \
    scheduled_at, content_hash, approved_hash, approved_by, created_by, edited_by, authors, \
    generation, attempts, waits, lease_owner, lease_expires_at, not_before, platform_post_id, \
    permalink, posted_at, \
    verified_at, error, test, slot, created_at, updated_at, version, review_round, revisions, \
    quarantined_at";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

fn time(row: &SqliteRow, column: &str) -> Result<DateTime<Utc>> {
    let text: String = row.try_get(column).map_err(db)?;
    parse_ts(&text).map_err(|text| corrupt(format!("{column} {text:?} is not a time")))
}

fn opt_time(row: &SqliteRow, column: &str) -> Result<Option<DateTime<Utc>>> {
    let text: Option<String> = row.try_get(column).map_err(db)?;
    text.map(|t| parse_ts(&t).map_err(|text| corrupt(format!("{column} {text:?} is not a time"))))
        .transpose()
}

fn hash(text: Option<String>, column: &str) -> Result<Option<ContentHash>> {
    text.map(|t| {
        ContentHash::parse(&t).ok_or_else(|| corrupt(format!("{column} {t:?} is not a SHA-256")))
    })
    .transpose()
}

pub(crate) fn channel(text: &str) -> Result<ChannelName> {
    ChannelName::parse(text).map_err(corrupt)
}

/// A post row that did not decode, by its id, for scans that go on past it.
pub(crate) fn unreadable(row: &SqliteRow, error: StoreError) -> Unreadable {
    Unreadable {
        id: PostId(row.try_get("id").unwrap_or_default()),
        reason: error.to_string(),
    }
}

pub(crate) fn post(row: &SqliteRow) -> Result<Post> {
    let id: i64 = row.try_get("id").map_err(db)?;
    let media: String = row.try_get("media").map_err(db)?;
    let media: Vec<Media> =
        serde_json::from_str(&media).map_err(|e| corrupt(format!("post {id} media: {e}")))?;
    let source: Option<String> = row.try_get("source").map_err(db)?;
    let source: Option<Source> = source
        .map(|s| serde_json::from_str(&s))
        .transpose()
        .map_err(|e| corrupt(format!("post {id} source: {e}")))?;
    let status: String = row.try_get("status").map_err(db)?;
    let channel_name: String = row.try_get("channel").map_err(db)?;
    let content_hash: String = row.try_get("content_hash").map_err(db)?;
    Ok(Post {
        id: PostId(id),
        status: status_of(&status)?,
        content: PostContent {
            channel: channel(&channel_name)?,
            title: row.try_get("title").map_err(db)?,
            text: row.try_get("text").map_err(db)?,
            media,
            link: row.try_get("link").map_err(db)?,
            source,
        },
        scheduled_at: time(row, "scheduled_at")?,
        content_hash: hash(Some(content_hash), "content_hash")?
            .ok_or_else(|| corrupt("content_hash"))?,
        approved_hash: hash(row.try_get("approved_hash").map_err(db)?, "approved_hash")?,
        approved_by: row.try_get("approved_by").map_err(db)?,
        created_by: row.try_get("created_by").map_err(db)?,
        edited_by: row.try_get("edited_by").map_err(db)?,
        authors: {
            let authors: String = row.try_get("authors").map_err(db)?;
            serde_json::from_str(&authors)
                .map_err(|e| corrupt(format!("post {id} authors: {e}")))?
        },
        generation: row.try_get("generation").map_err(db)?,
        attempts: row.try_get("attempts").map_err(db)?,
        waits: row.try_get("waits").map_err(db)?,
        lease_owner: row.try_get("lease_owner").map_err(db)?,
        lease_expires_at: opt_time(row, "lease_expires_at")?,
        not_before: opt_time(row, "not_before")?,
        platform_post_id: row.try_get("platform_post_id").map_err(db)?,
        permalink: row.try_get("permalink").map_err(db)?,
        posted_at: opt_time(row, "posted_at")?,
        verified_at: opt_time(row, "verified_at")?,
        error: row.try_get("error").map_err(db)?,
        test: row.try_get::<i64, _>("test").map_err(db)? != 0,
        slot: row.try_get("slot").map_err(db)?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        version: row.try_get("version").map_err(db)?,
        review_round: row.try_get("review_round").map_err(db)?,
        revisions: row.try_get("revisions").map_err(db)?,
        quarantined_at: opt_time(row, "quarantined_at")?,
    })
}

/// The columns [`summary`] reads besides `excerpt`, in a `SELECT` list.
pub(crate) const SUMMARY_COLUMNS: &str = "id, status, channel, title, scheduled_at, not_before, posted_at, updated_at, test, quarantined_at";

pub(crate) fn summary(row: &SqliteRow) -> Result<PostSummary> {
    let status: String = row.try_get("status").map_err(db)?;
    let channel_name: String = row.try_get("channel").map_err(db)?;
    Ok(PostSummary {
        id: PostId(row.try_get("id").map_err(db)?),
        status: status_of(&status)?,
        channel: channel(&channel_name)?,
        title: row.try_get("title").map_err(db)?,
        excerpt: row.try_get("excerpt").map_err(db)?,
        scheduled_at: time(row, "scheduled_at")?,
        not_before: opt_time(row, "not_before")?,
        posted_at: opt_time(row, "posted_at")?,
        updated_at: time(row, "updated_at")?,
        test: row.try_get::<i64, _>("test").map_err(db)? != 0,
        quarantined_at: opt_time(row, "quarantined_at")?,
    })
}

pub(crate) const EVENT_COLUMNS: &str = "id, post_id, at, kind, from_status, to_status, actor, note";

pub(crate) fn event(row: &SqliteRow) -> Result<PostEvent> {
    let from: Option<String> = row.try_get("from_status").map_err(db)?;
    let to: String = row.try_get("to_status").map_err(db)?;
    Ok(PostEvent {
        id: row.try_get("id").map_err(db)?,
        post_id: PostId(row.try_get("post_id").map_err(db)?),
        at: time(row, "at")?,
        kind: row.try_get("kind").map_err(db)?,
        from: from.as_deref().map(status_of).transpose()?,
        to: status_of(&to)?,
        actor: row.try_get("actor").map_err(db)?,
        note: row.try_get("note").map_err(db)?,
    })
}

pub(crate) const INTENT_COLUMNS: &str =
    "post_id, generation, idempotency_key, phase, platform_ref, created_at, settled_at";

pub(crate) fn intent(row: &SqliteRow) -> Result<Intent> {
    Ok(Intent {
        post_id: PostId(row.try_get("post_id").map_err(db)?),
        generation: row.try_get("generation").map_err(db)?,
        idempotency_key: row.try_get("idempotency_key").map_err(db)?,
        phase: row.try_get("phase").map_err(db)?,
        platform_ref: row.try_get("platform_ref").map_err(db)?,
        created_at: time(row, "created_at")?,
        settled_at: opt_time(row, "settled_at")?,
    })
}

pub(crate) const RESERVATION_COLUMNS: &str =
    "id, post_id, generation, channel, state, created_at, sent_at, settled_at";

pub(crate) fn reservation(row: &SqliteRow) -> Result<Reservation> {
    let channel_name: String = row.try_get("channel").map_err(db)?;
    Ok(Reservation {
        id: row.try_get("id").map_err(db)?,
        post_id: PostId(row.try_get("post_id").map_err(db)?),
        generation: row.try_get("generation").map_err(db)?,
        channel: channel(&channel_name)?,
        state: row.try_get("state").map_err(db)?,
        created_at: time(row, "created_at")?,
        sent_at: opt_time(row, "sent_at")?,
        settled_at: opt_time(row, "settled_at")?,
    })
}

pub(crate) const VERDICT_COLUMNS: &str =
    "id, post_id, verdict, reasons, actor, content_hash, rubric_hash, review_round, content, at";

pub(crate) fn verdict(row: &SqliteRow) -> Result<Verdict> {
    let id: i64 = row.try_get("id").map_err(db)?;
    let kind: String = row.try_get("verdict").map_err(db)?;
    let reasons: String = row.try_get("reasons").map_err(db)?;
    let content: Option<String> = row.try_get("content").map_err(db)?;
    Ok(Verdict {
        id,
        post_id: PostId(row.try_get("post_id").map_err(db)?),
        verdict: kind
            .parse::<VerdictKind>()
            .map_err(|e| corrupt(format!("verdict {id}: {e}")))?,
        reasons: serde_json::from_str(&reasons)
            .map_err(|e| corrupt(format!("verdict {id} reasons: {e}")))?,
        actor: row.try_get("actor").map_err(db)?,
        content_hash: hash(row.try_get("content_hash").map_err(db)?, "content_hash")?
            .ok_or_else(|| corrupt("verdict content_hash"))?,
        rubric_hash: row.try_get("rubric_hash").map_err(db)?,
        review_round: row.try_get("review_round").map_err(db)?,
        // A snapshot that does not read back only loses the "what changed" view.
        content: content.and_then(|c| serde_json::from_str::<PostContent>(&c).ok()),
        at: time(row, "at")?,
    })
}
