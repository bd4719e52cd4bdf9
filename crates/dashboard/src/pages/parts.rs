//! The view models more than one page shows: the frame around every signed-in page
//! ([`Layout`]), a post as a list row and as a whole ([`PostRow`], [`PostView`]), its
//! evidence (events, intents, reservations) and verdicts, and the inbox counts behind
//! the navigation badge. Plain strings only, times in the post's channel calendar.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use airlock_app::PostFilter;
use airlock_app::control::ExplainedPause;
use airlock_app::{App, Error};
use airlock_core::{ChannelName, Media, Post, PostContent, PostDetail, PostStatus, PostSummary};

use super::EXCERPT_CHARS;
use crate::auth::Operator;
use crate::session::{Dashboard, Flash};
use crate::view::{excerpt, is_web_link, local, local_precise, relative, size, status_label};

/// What every signed-in page shows around its content.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The page title.
    pub title: String,
    /// Who is signed in (`token:ops`).
    pub actor: String,
    /// The CSRF token for this page's forms.
    pub csrf: String,
    /// Messages from the last action.
    pub flashes: Vec<Flash>,
    /// Posts that need a person (the inbox badge).
    pub review_count: i64,
    /// Which navigation item is current: `queue`, `review` or `post`.
    pub nav: &'static str,
}

/// One post in a list.
#[derive(Debug, Clone)]
pub struct PostRow {
    /// Id.
    pub id: i64,
    /// State name (CSS class).
    pub status: &'static str,
    /// State label.
    pub status_label: &'static str,
    /// Channel.
    pub channel: String,
    /// Title, if any.
    pub title: Option<String>,
    /// The start of the text.
    pub excerpt: String,
    /// When it is scheduled, in its channel's calendar.
    pub scheduled: String,
    /// When it was published, if it was.
    pub posted: Option<String>,
    /// How long ago it last changed.
    pub updated: String,
    /// A test post.
    pub test: bool,
    /// Quarantined after too many failed reviews.
    pub quarantined: bool,
}

/// A post's content and facts, formatted.
#[derive(Debug, Clone)]
pub struct PostView {
    /// Id.
    pub id: i64,
    /// State name (CSS class).
    pub status: &'static str,
    /// State label.
    pub status_label: &'static str,
    /// Channel.
    pub channel: String,
    /// Channel kind, if the channel is configured.
    pub kind: String,
    /// The channel's calendar.
    pub timezone: String,
    /// Title.
    pub title: Option<String>,
    /// Text, as written (of part 1 when there are several).
    pub text: String,
    /// Media (of part 1 when there are several).
    pub media: Vec<MediaView>,
    /// Every part in order when the post has several or a first comment; empty for a
    /// single post, which shows `text` and `media` as it always did.
    pub parts: Vec<PartView>,
    /// The comment published under the post once it is out.
    pub first_comment: Option<String>,
    /// Link and whether it is clickable.
    pub link: Option<(String, bool)>,
    /// The source article `(path, sha256, updated)`.
    pub source: Option<(String, String, Option<String>)>,
    /// Scheduled, local.
    pub scheduled: String,
    /// Scheduled, relative.
    pub scheduled_relative: String,
    /// Scheduled, the date in the channel's calendar (the edit form's date picker).
    pub scheduled_date: String,
    /// Scheduled, the time of day in the channel's calendar (the edit form's time picker).
    pub scheduled_time: String,
    /// Content hash.
    pub content_hash: String,
    /// Approved hash.
    pub approved_hash: Option<String>,
    /// Whether the approved hash matches the content (`None`: not approved).
    pub hash_matches: Option<bool>,
    /// Who approved it.
    pub approved_by: Option<String>,
    /// Who created it.
    pub created_by: String,
    /// Who last edited it.
    pub edited_by: String,
    /// Fencing generation.
    pub generation: i64,
    /// Attempts.
    pub attempts: i64,
    /// Lease `(owner, until)`.
    pub lease: Option<(String, String)>,
    /// Not claimed before.
    pub not_before: Option<String>,
    /// Platform id.
    pub platform_post_id: Option<String>,
    /// Permalink and whether it is clickable.
    pub permalink: Option<(String, bool)>,
    /// Published at.
    pub posted_at: Option<String>,
    /// Verified at.
    pub verified_at: Option<String>,
    /// Last error.
    pub error: Option<String>,
    /// Test post.
    pub test: bool,
    /// Compose slot.
    pub slot: Option<String>,
    /// Created.
    pub created_at: String,
    /// Updated.
    pub updated_at: String,
    /// When it was quarantined, local, if it is.
    pub quarantined: Option<String>,
    /// Failed reviews since the last release.
    pub revisions: i64,
}

/// One part of a post of several.
#[derive(Debug, Clone)]
pub struct PartView {
    /// From 1.
    pub number: usize,
    /// How many parts the post has (the first comment not counted).
    pub of: usize,
    /// Its text, as written.
    pub text: String,
    /// Its media.
    pub media: Vec<MediaView>,
}

/// A media item and what airlock found at its URL when it was drafted: the facts the
/// approval binds.
#[derive(Debug, Clone)]
pub struct MediaView {
    /// The URL.
    pub url: String,
    /// Whether it may be a link (`http`/`https` only).
    pub clickable: bool,
    /// Alt text.
    pub alt: Option<String>,
    /// Type read from the bytes.
    pub content_type: Option<String>,
    /// Size, formatted (`48213 bytes (47.1 KiB)`).
    pub size: Option<String>,
    /// `1200 × 800 px`, when both are known.
    pub dimensions: Option<String>,
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: Option<String>,
}

impl MediaView {
    fn of(media: &Media) -> Self {
        MediaView {
            url: media.url.clone(),
            clickable: is_web_link(&media.url),
            alt: media.alt.clone(),
            content_type: media.content_type.clone(),
            size: media.bytes.map(size),
            dimensions: match (media.width, media.height) {
                (Some(w), Some(h)) => Some(format!("{w} × {h} px")),
                _ => None,
            },
            sha256: media.sha256.clone(),
        }
    }

    /// Whether anything beyond the URL and alt is known.
    pub fn has_facts(&self) -> bool {
        self.content_type.is_some() || self.size.is_some() || self.dimensions.is_some()
    }
}

fn media_views(media: &[Media]) -> Vec<MediaView> {
    media.iter().map(MediaView::of).collect()
}

/// Which request of a `needs_review` post of several is in doubt (the latest intent's).
#[derive(Debug, Clone)]
pub struct InDoubt {
    /// `part 2 of 3`, `the first comment`.
    pub what: String,
    /// Whether a part follows it (it then needs its platform id to be settled).
    pub needs_id: bool,
}

/// What is in doubt for a post of several parts or with a first comment; `None` for a
/// single post.
pub(super) fn in_doubt(detail: &PostDetail) -> Option<InDoubt> {
    let content = &detail.post.content;
    let count = content.part_count() as u32;
    if count <= 1 {
        return None;
    }
    let part = detail.intents.last().map_or(1, |i| i.part);
    Some(InDoubt {
        what: part_label(content, part),
        needs_id: part < count,
    })
}

/// `part 2 of 3` or `the first comment`, for a request's part number.
fn part_label(content: &PostContent, part: u32) -> String {
    let parts = 1 + content.more.len() as u32;
    if part > parts && content.first_comment.is_some() {
        "the first comment".to_owned()
    } else {
        format!("part {part} of {parts}")
    }
}

/// One verdict, with each reason shown against the rubric item it names.
#[derive(Debug, Clone)]
pub struct VerdictRow {
    /// `pass` or `fail` (CSS class too).
    pub verdict: &'static str,
    /// Who gave it.
    pub actor: String,
    /// When, local.
    pub at: String,
    /// The first twelve digits of the content hash it was given against.
    pub content_hash: String,
    /// Whether that is the post's content now.
    pub current_content: bool,
    /// The first twelve digits of the rubric hash it was given under.
    pub rubric_hash: String,
    /// Whether that is the rubric as it reads now.
    pub current_rubric: bool,
    /// Each reason: `(item id, what the item asks, the reason)`; the item parts are
    /// empty when the reason names no item of the current rubric.
    pub reasons: Vec<(String, String, String)>,
}

/// One event on a timeline.
#[derive(Debug, Clone)]
pub struct EventRow {
    /// When, local.
    pub at: String,
    /// Kind (`status`, `note`, ...).
    pub kind: String,
    /// `draft → approved`, or the state it stayed in.
    pub change: String,
    /// Who.
    pub actor: String,
    /// Why.
    pub note: Option<String>,
}

/// One intent.
#[derive(Debug, Clone)]
pub struct IntentRow {
    /// Which part its request sends, from 1.
    pub part: u32,
    /// `part 2 of 3`, `the first comment`; `None` for a single post.
    pub part_label: Option<String>,
    /// The part's id on the platform, once it is known to be out.
    pub platform_post_id: Option<String>,
    /// The part's permalink and whether it is clickable.
    pub permalink: Option<(String, bool)>,
    /// Generation.
    pub generation: i64,
    /// Idempotency key.
    pub idempotency_key: String,
    /// Phase.
    pub phase: String,
    /// Platform handle.
    pub platform_ref: Option<String>,
    /// When the request was about to be sent.
    pub created_at: String,
    /// When settled.
    pub settled_at: Option<String>,
}

/// One quota reservation.
#[derive(Debug, Clone)]
pub struct ReservationRow {
    /// Id.
    pub id: i64,
    /// Generation.
    pub generation: i64,
    /// `reserved`, `committed`, `released`.
    pub state: String,
    /// Created.
    pub created_at: String,
    /// Sent.
    pub sent_at: Option<String>,
    /// Settled.
    pub settled_at: Option<String>,
}

/// The most quarantined posts a page counts; an operator settles them long before.
pub(super) const QUARANTINE_SCAN: u32 = 1000;

pub(super) fn layout(
    dash: &Dashboard,
    op: &Operator,
    nav: &'static str,
    title: String,
    review_count: i64,
) -> Layout {
    Layout {
        title,
        actor: op.principal.actor.to_string(),
        csrf: op.csrf.clone(),
        flashes: dash.take_flashes(&op.session),
        review_count,
        nav,
    }
}

/// Posts that need a person: `needs_review` ones and quarantined ones.
pub(super) async fn review_count(app: &App, op: &Operator) -> Result<i64, Error> {
    Ok(needs_review_count(app, op).await? + quarantine_count(app, op).await?)
}

/// How many posts are `needs_review`.
pub(super) async fn needs_review_count(app: &App, op: &Operator) -> Result<i64, Error> {
    Ok(app
        .status_counts(&op.principal)
        .await?
        .into_iter()
        .find(|(s, _)| *s == PostStatus::NeedsReview)
        .map_or(0, |(_, n)| n))
}

/// How many posts are quarantined (counted from summaries without text).
pub(super) async fn quarantine_count(app: &App, op: &Operator) -> Result<i64, Error> {
    let filter = PostFilter {
        quarantined: Some(true),
        limit: Some(QUARANTINE_SCAN),
        ..PostFilter::default()
    };
    Ok(app.list_summaries(&op.principal, &filter, 0).await?.len() as i64)
}

/// The channel whose pause resolving `post` may lift in the same action: its own
/// channel, when a post in doubt set that channel's pause and no other post on it is in
/// doubt now (the CLI's `post resolve --resume`). `None` otherwise: resuming would let
/// the channel publish while another outcome is unknown, or lift an operator's pause.
pub(super) async fn resume_offer(
    app: &App,
    op: &Operator,
    explained: &[ExplainedPause],
    post: &Post,
) -> Result<Option<String>, Error> {
    let channel = &post.content.channel;
    let held_by_doubt = explained
        .iter()
        .any(|e| e.pause.scope == channel.as_str() && e.unknown.is_some());
    if !held_by_doubt {
        return Ok(None);
    }
    let filter = PostFilter {
        status: Some(PostStatus::NeedsReview),
        channel: Some(channel.clone()),
        limit: Some(2),
        ..PostFilter::default()
    };
    let others = app
        .list_summaries(&op.principal, &filter, 0)
        .await?
        .iter()
        .any(|p| p.id != post.id);
    Ok((!others).then(|| channel.to_string()))
}

/// A channel's calendar, or the default one for a channel no longer configured.
pub(super) fn channel_tz(app: &App, channel: &ChannelName) -> Tz {
    app.settings()
        .channels
        .get(channel)
        .map(|c| c.timezone)
        .unwrap_or(app.settings().timezone)
}

pub(super) fn post_row(app: &App, post: &PostSummary, now: DateTime<Utc>) -> PostRow {
    let tz = channel_tz(app, &post.channel);
    PostRow {
        id: post.id.0,
        status: post.status.as_str(),
        status_label: status_label(post.status),
        channel: post.channel.to_string(),
        title: post.title.clone(),
        excerpt: excerpt(&post.excerpt, EXCERPT_CHARS as usize),
        scheduled: local(post.scheduled_at, tz),
        posted: post.posted_at.map(|at| local(at, tz)),
        updated: relative(post.updated_at, now),
        test: post.test,
        quarantined: post.quarantined_at.is_some(),
    }
}

pub(super) fn post_view(app: &App, post: &Post, now: DateTime<Utc>) -> PostView {
    let tz = channel_tz(app, &post.content.channel);
    let content = &post.content;
    PostView {
        id: post.id.0,
        status: post.status.as_str(),
        status_label: status_label(post.status),
        channel: content.channel.to_string(),
        kind: app
            .settings()
            .channels
            .get(&content.channel)
            .map(|c| c.kind.to_string())
            .unwrap_or_else(|| "not configured".to_owned()),
        timezone: tz.name().to_owned(),
        title: content.title.clone(),
        text: content.text.clone(),
        media: media_views(&content.media),
        parts: if content.more.is_empty() && content.first_comment.is_none() {
            Vec::new()
        } else {
            let parts = content.parts();
            let of = parts.len();
            parts
                .iter()
                .enumerate()
                .map(|(i, part)| PartView {
                    number: i + 1,
                    of,
                    text: part.text.clone(),
                    media: media_views(&part.media),
                })
                .collect()
        },
        first_comment: content.first_comment.clone(),
        link: content.link.as_ref().map(|l| (l.clone(), is_web_link(l))),
        source: content
            .source
            .as_ref()
            .map(|s| (s.path.clone(), s.sha256.clone(), s.updated.clone())),
        scheduled: local(post.scheduled_at, tz),
        scheduled_relative: relative(post.scheduled_at, now),
        scheduled_date: crate::zone::inputs(post.scheduled_at, tz).0,
        scheduled_time: crate::zone::inputs(post.scheduled_at, tz).1,
        content_hash: post.content_hash.to_string(),
        approved_hash: post.approved_hash.as_ref().map(|h| h.to_string()),
        hash_matches: post
            .approved_hash
            .as_ref()
            .map(|h| h.as_str() == post.content_hash.as_str()),
        approved_by: post.approved_by.clone(),
        created_by: post.created_by.clone(),
        edited_by: post.edited_by.clone(),
        generation: post.generation,
        attempts: post.attempts,
        lease: post.lease_owner.as_ref().map(|owner| {
            (
                owner.clone(),
                post.lease_expires_at
                    .map(|at| local_precise(at, tz))
                    .unwrap_or_default(),
            )
        }),
        not_before: post
            .not_before
            .map(|at| format!("{} ({})", local(at, tz), relative(at, now))),
        platform_post_id: post.platform_post_id.clone(),
        permalink: post.permalink.as_ref().map(|l| (l.clone(), is_web_link(l))),
        posted_at: post.posted_at.map(|at| local_precise(at, tz)),
        verified_at: post.verified_at.map(|at| local_precise(at, tz)),
        error: post.error.clone(),
        test: post.test,
        slot: post.slot.clone(),
        created_at: local_precise(post.created_at, tz),
        updated_at: format!(
            "{} ({})",
            local_precise(post.updated_at, tz),
            relative(post.updated_at, now)
        ),
        quarantined: post.quarantined_at.map(|at| local_precise(at, tz)),
        revisions: post.revisions,
    }
}

/// A post's verdicts, each reason shown against the item of the channel's rubric it names.
pub(super) fn verdict_rows(app: &App, detail: &PostDetail, tz: Tz) -> Vec<VerdictRow> {
    let rubric = app
        .settings()
        .channels
        .get(&detail.post.content.channel)
        .and_then(|c| c.review.rubric.read().ok());
    detail
        .verdicts
        .iter()
        .map(|v| VerdictRow {
            verdict: v.verdict.as_str(),
            actor: v.actor.clone(),
            at: local_precise(v.at, tz),
            content_hash: v.content_hash.as_str()[..12].to_owned(),
            current_content: v.content_hash == detail.post.content_hash,
            rubric_hash: v.rubric_hash.get(..12).unwrap_or(&v.rubric_hash).to_owned(),
            current_rubric: rubric.as_ref().is_some_and(|r| r.hash == v.rubric_hash),
            reasons: v
                .reasons
                .iter()
                .map(|reason| {
                    let item = rubric
                        .as_ref()
                        .and_then(|r| airlock_core::review::reason_item(r, reason));
                    match item {
                        Some(item) => (item.id.clone(), item.text.clone(), reason.clone()),
                        None => (String::new(), String::new(), reason.clone()),
                    }
                })
                .collect(),
        })
        .collect()
}

pub(super) fn event_rows(detail: &PostDetail, tz: Tz) -> Vec<EventRow> {
    detail
        .events
        .iter()
        .map(|e| EventRow {
            at: local_precise(e.at, tz),
            kind: e.kind.clone(),
            change: match e.from {
                Some(from) if from != e.to => {
                    format!("{} → {}", status_label(from), status_label(e.to))
                }
                Some(_) => status_label(e.to).to_owned(),
                None => format!("→ {}", status_label(e.to)),
            },
            actor: e.actor.clone(),
            note: e.note.clone(),
        })
        .collect()
}

pub(super) fn intent_rows(detail: &PostDetail, tz: Tz) -> Vec<IntentRow> {
    let content = &detail.post.content;
    let several = content.part_count() > 1;
    detail
        .intents
        .iter()
        .map(|i| IntentRow {
            part: i.part,
            part_label: several.then(|| part_label(content, i.part)),
            platform_post_id: i.platform_post_id.clone(),
            permalink: i.permalink.as_ref().map(|l| (l.clone(), is_web_link(l))),
            generation: i.generation,
            idempotency_key: i.idempotency_key.clone(),
            phase: i.phase.clone(),
            platform_ref: i.platform_ref.clone(),
            created_at: local_precise(i.created_at, tz),
            settled_at: i.settled_at.map(|at| local_precise(at, tz)),
        })
        .collect()
}

pub(super) fn reservation_rows(detail: &PostDetail, tz: Tz) -> Vec<ReservationRow> {
    detail
        .reservations
        .iter()
        .map(|r| ReservationRow {
            id: r.id,
            generation: r.generation,
            state: r.state.clone(),
            created_at: local_precise(r.created_at, tz),
            sent_at: r.sent_at.map(|at| local_precise(at, tz)),
            settled_at: r.settled_at.map(|at| local_precise(at, tz)),
        })
        .collect()
}
