//! Decoding ledger rows into `airlock-core` and `airlock-store` types, for both
//! dialects. A row that cannot be read is [`StoreError::Corrupt`], never skipped
//! (scans that go on past it report it as [`Unreadable`]).

use std::str::FromStr;

use airlock_core::{
    ChannelName, ContentHash, Intent, Post, PostContent, PostEvent, PostId, PostStatus,
    PostSummary, Reservation, RoleSet, Verdict, VerdictKind,
};
use airlock_store::{Notification, Pause, Result, Session, StoreError, TokenRecord, Unreadable};

use crate::{Cols, Dialect, Row, corrupt};

/// The columns [`post`] reads, in a `SELECT` list.
pub const POST_COLUMNS: &str = "id, channel, status, title, text, media, link, source, \
    scheduled_at, content_hash, approved_hash, approved_by, created_by, edited_by, authors, \
    generation, attempts, waits, lease_owner, lease_expires_at, not_before, platform_post_id, \
    permalink, posted_at, \
    verified_at, error, test, slot, created_at, updated_at, version, review_round, revisions, \
    quarantined_at, deferred_until, more_parts, first_comment";

/// The columns [`summary`] reads besides `excerpt`, in a `SELECT` list.
pub const SUMMARY_COLUMNS: &str = "id, status, channel, title, scheduled_at, not_before, \
    posted_at, updated_at, test, quarantined_at";

/// The columns [`event`] reads.
pub const EVENT_COLUMNS: &str = "id, post_id, at, kind, from_status, to_status, actor, note";

/// The columns [`intent`] reads.
pub const INTENT_COLUMNS: &str = "post_id, generation, idempotency_key, phase, platform_ref, created_at, settled_at, part, \
     platform_post_id, permalink";

/// The columns [`reservation`] reads.
pub const RESERVATION_COLUMNS: &str =
    "id, post_id, generation, channel, state, created_at, sent_at, settled_at";

/// The columns [`verdict`] reads.
pub const VERDICT_COLUMNS: &str =
    "id, post_id, verdict, reasons, actor, content_hash, rubric_hash, review_round, content, at";

/// The columns [`token`] reads (never the secret's hash).
pub const TOKEN_COLUMNS: &str = "name, roles, created_at, revoked_at, last_used_at";

/// A status as stored.
pub fn status_of(text: &str) -> Result<PostStatus> {
    PostStatus::from_str(text).map_err(corrupt)
}

/// A channel name as stored.
pub fn channel(text: &str) -> Result<ChannelName> {
    ChannelName::parse(text).map_err(corrupt)
}

fn hash(text: Option<String>, column: &str) -> Result<Option<ContentHash>> {
    text.map(|t| {
        ContentHash::parse(&t).ok_or_else(|| corrupt(format!("{column} {t:?} is not a SHA-256")))
    })
    .transpose()
}

/// A post row that did not decode, by its id, for scans that go on past it.
pub fn unreadable<D: Dialect>(row: &Row<D>, error: StoreError) -> Unreadable {
    Unreadable {
        id: PostId(D::int(row, "id").ok().flatten().unwrap_or_default()),
        reason: error.to_string(),
    }
}

/// A post, from the columns of [`POST_COLUMNS`].
pub fn post<D: Dialect>(row: &Row<D>) -> Result<Post> {
    let r = Cols::<D>(row);
    let id = r.int("id")?;
    Ok(Post {
        id: PostId(id),
        status: status_of(&r.text("status")?)?,
        content: PostContent {
            channel: channel(&r.text("channel")?)?,
            title: r.opt_text("title")?,
            text: r.text("text")?,
            media: r.json("media", &format!("post {id} media"))?,
            more: r.json("more_parts", &format!("post {id} parts"))?,
            first_comment: r.opt_text("first_comment")?,
            link: r.opt_text("link")?,
            source: r.opt_json("source", &format!("post {id} source"))?,
        },
        scheduled_at: r.time("scheduled_at")?,
        content_hash: hash(Some(r.text("content_hash")?), "content_hash")?
            .ok_or_else(|| corrupt("content_hash"))?,
        approved_hash: hash(r.opt_text("approved_hash")?, "approved_hash")?,
        approved_by: r.opt_text("approved_by")?,
        created_by: r.text("created_by")?,
        edited_by: r.text("edited_by")?,
        authors: r.texts("authors")?,
        generation: r.int("generation")?,
        attempts: r.int("attempts")?,
        waits: r.int("waits")?,
        lease_owner: r.opt_text("lease_owner")?,
        lease_expires_at: r.opt_time("lease_expires_at")?,
        not_before: r.opt_time("not_before")?,
        platform_post_id: r.opt_text("platform_post_id")?,
        permalink: r.opt_text("permalink")?,
        posted_at: r.opt_time("posted_at")?,
        verified_at: r.opt_time("verified_at")?,
        error: r.opt_text("error")?,
        test: r.flag("test")?,
        slot: r.opt_text("slot")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        version: r.int("version")?,
        review_round: r.int("review_round")?,
        revisions: r.int("revisions")?,
        quarantined_at: r.opt_time("quarantined_at")?,
        deferred_until: r.opt_time("deferred_until")?,
    })
}

/// A post summary, from `excerpt` and the columns of [`SUMMARY_COLUMNS`].
pub fn summary<D: Dialect>(row: &Row<D>) -> Result<PostSummary> {
    let r = Cols::<D>(row);
    Ok(PostSummary {
        id: PostId(r.int("id")?),
        status: status_of(&r.text("status")?)?,
        channel: channel(&r.text("channel")?)?,
        title: r.opt_text("title")?,
        excerpt: r.text("excerpt")?,
        scheduled_at: r.time("scheduled_at")?,
        not_before: r.opt_time("not_before")?,
        posted_at: r.opt_time("posted_at")?,
        updated_at: r.time("updated_at")?,
        test: r.flag("test")?,
        quarantined_at: r.opt_time("quarantined_at")?,
    })
}

/// A timeline event, from [`EVENT_COLUMNS`].
pub fn event<D: Dialect>(row: &Row<D>) -> Result<PostEvent> {
    let r = Cols::<D>(row);
    Ok(PostEvent {
        id: r.int("id")?,
        post_id: PostId(r.int("post_id")?),
        at: r.time("at")?,
        kind: r.text("kind")?,
        from: r
            .opt_text("from_status")?
            .as_deref()
            .map(status_of)
            .transpose()?,
        to: status_of(&r.text("to_status")?)?,
        actor: r.text("actor")?,
        note: r.opt_text("note")?,
    })
}

/// An intent, from [`INTENT_COLUMNS`].
pub fn intent<D: Dialect>(row: &Row<D>) -> Result<Intent> {
    let r = Cols::<D>(row);
    Ok(Intent {
        post_id: PostId(r.int("post_id")?),
        generation: r.int("generation")?,
        idempotency_key: r.text("idempotency_key")?,
        phase: r.text("phase")?,
        platform_ref: r.opt_text("platform_ref")?,
        created_at: r.time("created_at")?,
        settled_at: r.opt_time("settled_at")?,
        part: u32::try_from(r.int("part")?).map_err(corrupt)?,
        platform_post_id: r.opt_text("platform_post_id")?,
        permalink: r.opt_text("permalink")?,
    })
}

/// A reservation, from [`RESERVATION_COLUMNS`].
pub fn reservation<D: Dialect>(row: &Row<D>) -> Result<Reservation> {
    let r = Cols::<D>(row);
    Ok(Reservation {
        id: r.int("id")?,
        post_id: PostId(r.int("post_id")?),
        generation: r.int("generation")?,
        channel: channel(&r.text("channel")?)?,
        state: r.text("state")?,
        created_at: r.time("created_at")?,
        sent_at: r.opt_time("sent_at")?,
        settled_at: r.opt_time("settled_at")?,
    })
}

/// A verdict, from [`VERDICT_COLUMNS`].
pub fn verdict<D: Dialect>(row: &Row<D>) -> Result<Verdict> {
    let r = Cols::<D>(row);
    let id = r.int("id")?;
    Ok(Verdict {
        id,
        post_id: PostId(r.int("post_id")?),
        verdict: r
            .text("verdict")?
            .parse::<VerdictKind>()
            .map_err(|e| corrupt(format!("verdict {id}: {e}")))?,
        reasons: r.json("reasons", &format!("verdict {id} reasons"))?,
        actor: r.text("actor")?,
        content_hash: hash(r.opt_text("content_hash")?, "content_hash")?
            .ok_or_else(|| corrupt("verdict content_hash"))?,
        rubric_hash: r.text("rubric_hash")?,
        review_round: r.int("review_round")?,
        // A snapshot that does not read back only loses the "what changed" view.
        content: r.opt_json("content", "").ok().flatten(),
        at: r.time("at")?,
    })
}

/// A token's record, from [`TOKEN_COLUMNS`].
pub fn token<D: Dialect>(row: &Row<D>) -> Result<TokenRecord> {
    let r = Cols::<D>(row);
    Ok(TokenRecord {
        name: r.text("name")?,
        roles: RoleSet::parse_list(&r.text("roles")?).map_err(corrupt)?,
        created_at: r.time("created_at")?,
        revoked_at: r.opt_time("revoked_at")?,
        last_used_at: r.opt_time("last_used_at")?,
    })
}

/// A pause, from `scope, reason, actor, created_at`.
pub fn pause<D: Dialect>(row: &Row<D>) -> Result<Pause> {
    let r = Cols::<D>(row);
    Ok(Pause {
        scope: r.text("scope")?,
        reason: r.text("reason")?,
        actor: r.text("actor")?,
        at: r.time("created_at")?,
    })
}

/// An outbox notification, from `id, sink, event, post_id, payload, attempts, created_at`.
pub fn notification<D: Dialect>(row: &Row<D>) -> Result<Notification> {
    let r = Cols::<D>(row);
    let id = r.int("id")?;
    Ok(Notification {
        id,
        sink: r.text("sink")?,
        event: r.text("event")?,
        post_id: r.opt_int("post_id")?.map(PostId),
        payload: r.json("payload", &format!("notification {id} payload"))?,
        attempts: r.int("attempts")?,
        created_at: r.time("created_at")?,
    })
}

/// Claimed notifications, in id order.
pub fn notifications<D: Dialect>(found: &[Row<D>]) -> Result<Vec<Notification>> {
    let mut claimed = found
        .iter()
        .map(notification::<D>)
        .collect::<Result<Vec<_>>>()?;
    claimed.sort_by_key(|n| n.id);
    Ok(claimed)
}

/// A dashboard session, from `token_sha256, created_at, expires_at`.
pub fn session<D: Dialect>(row: &Row<D>) -> Result<Session> {
    let r = Cols::<D>(row);
    Ok(Session {
        token_sha256: r.text("token_sha256")?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
    })
}

/// A live dashboard session by its token's name, from `name, created_at, expires_at`.
pub fn live_session<D: Dialect>(row: &Row<D>) -> Result<airlock_store::LiveSession> {
    let r = Cols::<D>(row);
    Ok(airlock_store::LiveSession {
        token: r.text("name")?,
        created_at: r.time("created_at")?,
        expires_at: r.time("expires_at")?,
    })
}
