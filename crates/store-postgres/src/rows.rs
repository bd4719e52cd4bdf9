//! Decoding ledger rows into `airlock-core` types. Row shapes stay private to this
//! crate; a row that cannot be read is [`StoreError::Corrupt`], never skipped.

use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::Json;

use airlock_core::{
    ChannelName, ContentHash, Intent, Media, Post, PostContent, PostEvent, PostId, PostSummary,
    Reservation, Source, Verdict, VerdictKind,
};
use airlock_store::{Result, StoreError, Unreadable};

use crate::{db, status_of};

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

/// One column, with decode failures reported as a corrupt row.
pub(crate) fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get(column).map_err(db)
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
pub(crate) fn unreadable(row: &PgRow, error: StoreError) -> Unreadable {
    Unreadable {
        id: PostId(row.try_get("id").unwrap_or_default()),
        reason: error.to_string(),
    }
}

pub(crate) fn post(row: &PgRow) -> Result<Post> {
    let id: i64 = get(row, "id")?;
    let media: Json<Vec<Media>> = row
        .try_get("media")
        .map_err(|e| corrupt(format!("post {id} media: {e}")))?;
    let source: Option<Json<Source>> = row
        .try_get("source")
        .map_err(|e| corrupt(format!("post {id} source: {e}")))?;
    let status: String = get(row, "status")?;
    let channel_name: String = get(row, "channel")?;
    let content_hash: String = get(row, "content_hash")?;
    Ok(Post {
        id: PostId(id),
        status: status_of(&status)?,
        content: PostContent {
            channel: channel(&channel_name)?,
            title: get(row, "title")?,
            text: get(row, "text")?,
            media: media.0,
            link: get(row, "link")?,
            source: source.map(|s| s.0),
        },
        scheduled_at: get(row, "scheduled_at")?,
        content_hash: hash(Some(content_hash), "content_hash")?
            .ok_or_else(|| corrupt("content_hash"))?,
        approved_hash: hash(get(row, "approved_hash")?, "approved_hash")?,
        approved_by: get(row, "approved_by")?,
        created_by: get(row, "created_by")?,
        edited_by: get(row, "edited_by")?,
        authors: get(row, "authors")?,
        generation: get(row, "generation")?,
        attempts: get(row, "attempts")?,
        waits: get(row, "waits")?,
        lease_owner: get(row, "lease_owner")?,
        lease_expires_at: get(row, "lease_expires_at")?,
        not_before: get(row, "not_before")?,
        platform_post_id: get(row, "platform_post_id")?,
        permalink: get(row, "permalink")?,
        posted_at: get(row, "posted_at")?,
        verified_at: get(row, "verified_at")?,
        error: get(row, "error")?,
        test: get(row, "test")?,
        slot: get(row, "slot")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
        version: get(row, "version")?,
        review_round: get(row, "review_round")?,
        revisions: get(row, "revisions")?,
        quarantined_at: get(row, "quarantined_at")?,
    })
}

/// The columns [`summary`] reads besides `excerpt`, in a `SELECT` list.
pub(crate) const SUMMARY_COLUMNS: &str = "id, status, channel, title, scheduled_at, not_before, posted_at, updated_at, test, quarantined_at";

pub(crate) fn summary(row: &PgRow) -> Result<PostSummary> {
    let status: String = get(row, "status")?;
    let channel_name: String = get(row, "channel")?;
    Ok(PostSummary {
        id: PostId(get(row, "id")?),
        status: status_of(&status)?,
        channel: channel(&channel_name)?,
        title: get(row, "title")?,
        excerpt: get(row, "excerpt")?,
        scheduled_at: get(row, "scheduled_at")?,
        not_before: get(row, "not_before")?,
        posted_at: get(row, "posted_at")?,
        updated_at: get(row, "updated_at")?,
        test: get(row, "test")?,
        quarantined_at: get(row, "quarantined_at")?,
    })
}

pub(crate) const EVENT_COLUMNS: &str = "id, post_id, at, kind, from_status, to_status, actor, note";

pub(crate) fn event(row: &PgRow) -> Result<PostEvent> {
    let from: Option<String> = get(row, "from_status")?;
    let to: String = get(row, "to_status")?;
    Ok(PostEvent {
        id: get(row, "id")?,
        post_id: PostId(get(row, "post_id")?),
        at: get(row, "at")?,
        kind: get(row, "kind")?,
        from: from.as_deref().map(status_of).transpose()?,
        to: status_of(&to)?,
        actor: get(row, "actor")?,
        note: get(row, "note")?,
    })
}

pub(crate) const INTENT_COLUMNS: &str =
    "post_id, generation, idempotency_key, phase, platform_ref, created_at, settled_at";

pub(crate) fn intent(row: &PgRow) -> Result<Intent> {
    Ok(Intent {
        post_id: PostId(get(row, "post_id")?),
        generation: get(row, "generation")?,
        idempotency_key: get(row, "idempotency_key")?,
        phase: get(row, "phase")?,
        platform_ref: get(row, "platform_ref")?,
        created_at: get(row, "created_at")?,
        settled_at: get(row, "settled_at")?,
    })
}

pub(crate) const RESERVATION_COLUMNS: &str =
    "id, post_id, generation, channel, state, created_at, sent_at, settled_at";

pub(crate) fn reservation(row: &PgRow) -> Result<Reservation> {
    let channel_name: String = get(row, "channel")?;
    Ok(Reservation {
        id: get(row, "id")?,
        post_id: PostId(get(row, "post_id")?),
        generation: get(row, "generation")?,
        channel: channel(&channel_name)?,
        state: get(row, "state")?,
        created_at: get(row, "created_at")?,
        sent_at: get(row, "sent_at")?,
        settled_at: get(row, "settled_at")?,
    })
}

pub(crate) const VERDICT_COLUMNS: &str =
    "id, post_id, verdict, reasons, actor, content_hash, rubric_hash, review_round, content, at";

pub(crate) fn verdict(row: &PgRow) -> Result<Verdict> {
    let id: i64 = get(row, "id")?;
    let kind: String = get(row, "verdict")?;
    let reasons: Json<Vec<String>> = row
        .try_get("reasons")
        .map_err(|e| corrupt(format!("verdict {id} reasons: {e}")))?;
    // A snapshot that does not read back only loses the "what changed" view.
    let content: Option<Json<PostContent>> = row.try_get("content").ok().flatten();
    Ok(Verdict {
        id,
        post_id: PostId(get(row, "post_id")?),
        verdict: kind
            .parse::<VerdictKind>()
            .map_err(|e| corrupt(format!("verdict {id}: {e}")))?,
        reasons: reasons.0,
        actor: get(row, "actor")?,
        content_hash: hash(get(row, "content_hash")?, "content_hash")?
            .ok_or_else(|| corrupt("verdict content_hash"))?,
        rubric_hash: get(row, "rubric_hash")?,
        review_round: get(row, "review_round")?,
        content: content.map(|c| c.0),
        at: get(row, "at")?,
    })
}
