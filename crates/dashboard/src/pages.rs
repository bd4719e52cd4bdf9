//! The pages: the queue (`/`), its live fragment (`/live`), a post (`/posts/{id}`, with
//! its verdicts against the rubric) and the inbox of posts that need a person (`/review`:
//! `needs_review` posts to settle and quarantined drafts to release or discard), plus
//! the error page.
//!
//! Handlers read through [`airlock_app::App`] as the signed-in operator and turn the
//! answers into view models of plain strings (times already in the channel's calendar),
//! so templates only lay them out. Times of a post show in its channel's time zone;
//! pauses and the rolling window show in the configured default time zone.

use std::collections::BTreeMap;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Deserialize;

use airlock_app::control::{ChannelQuota, QuotaStatus};
use airlock_app::{App, Error};
use airlock_core::quota::day_bounds;
use airlock_core::{ChannelName, Post, PostDetail, PostId, PostStatus, PostSummary};
use airlock_store::{Pause, PostFilter};

use crate::auth::Operator;
use crate::session::{Dashboard, Flash};
use crate::view::{
    excerpt, is_web_link, local, local_precise, local_rfc3339, local_time, relative, status_label,
};

/// Posts per page of the queue table; older ones are a link away (`?before=`).
pub const TABLE_LIMIT: u32 = 100;
/// Posts the queue's inbox lists; the review page has them all, a page at a time.
pub const INBOX_LIMIT: u32 = 50;
/// Posts per state the "today" schedule looks at (approved, posting, posted), newest first.
pub const SCHEDULE_LIMIT: u32 = 200;
/// Posts per page of the review inbox, each with its whole text and evidence.
pub const REVIEW_PAGE: u32 = 10;
/// Characters of text a list shows; the store cuts the text, so lists never load more.
pub const EXCERPT_CHARS: u32 = 120;

// What one render of the queue (or its live fragment, every 15 s) costs, whatever the
// ledger holds: one count per state (`count(*)`), and at most INBOX_LIMIT +
// 3 × SCHEDULE_LIMIT + TABLE_LIMIT summaries of EXCERPT_CHARS + 1 characters of text
// each. No whole text is loaded. The review page loads at most REVIEW_PAGE whole posts.

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

/// One status with its count, as a filter link.
#[derive(Debug, Clone)]
pub struct CountRow {
    /// State name (CSS class).
    pub status: &'static str,
    /// State label.
    pub label: &'static str,
    /// How many posts are in this state.
    pub count: String,
    /// The filter link.
    pub href: String,
    /// Whether the queue is filtered to this status now.
    pub active: bool,
}

/// One line of today's schedule.
#[derive(Debug, Clone)]
pub struct ScheduleRow {
    /// `09:00 JST`, in the channel's calendar.
    pub time: String,
    /// `in 2 h`.
    pub relative: String,
    /// Channel.
    pub channel: String,
    /// Post id.
    pub id: i64,
    /// The start of the text.
    pub excerpt: String,
    /// What happens: `scheduled`, `due now`, `held: paused`, `publishing`, `published`.
    pub state: String,
    /// CSS class for the state.
    pub class: &'static str,
}

/// The queue's part that live refresh replaces: inbox, counts, today, the table.
#[derive(Debug, Clone)]
pub struct Live {
    /// Posts that need a person, oldest first (at most [`INBOX_LIMIT`]), then the
    /// quarantined ones (as many again at most).
    pub inbox: Vec<PostRow>,
    /// How many posts need a person in all (`needs_review` and quarantined).
    pub review_count: i64,
    /// Counts per status.
    pub counts: Vec<CountRow>,
    /// What goes out today, per channel calendar.
    pub schedule: Vec<ScheduleRow>,
    /// The filtered posts.
    pub posts: Vec<PostRow>,
    /// `all posts`, `drafts on cats`.
    pub filter_label: String,
    /// The fragment's own URL, for the refresh script.
    pub live_url: String,
    /// The next (older) page of the table, when there may be one.
    pub older_url: Option<String>,
    /// Seconds between refreshes (`0`: none).
    pub refresh_seconds: u32,
    /// When this was rendered, in the default calendar.
    pub rendered_at: String,
}

/// An active pause, as a banner.
#[derive(Debug, Clone)]
pub struct PauseRow {
    /// `All publishing` or `Channel cats`.
    pub label: String,
    /// The form value to resume it: empty for all, else the channel.
    pub channel: String,
    /// Why.
    pub reason: String,
    /// Who.
    pub actor: String,
    /// Since when.
    pub since: String,
}

/// A channel with its daily gauge and pause state.
#[derive(Debug, Clone)]
pub struct ChannelRow {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Calendar name.
    pub timezone: String,
    /// Used today.
    pub used: u32,
    /// Daily limit.
    pub limit: u32,
    /// `max` of the gauge (at least 1).
    pub gauge_max: u32,
    /// Level from which the gauge warns.
    pub gauge_high: u32,
    /// When this channel can publish next: `now`, or a local time with how far off.
    pub next_slot: String,
    /// The pause reason, when paused (by itself or everything).
    pub paused: Option<String>,
    /// Whether the channel itself is paused (so it can be resumed here).
    pub own_pause: bool,
    /// Its money budget this month (X channels with one).
    pub budget: Option<BudgetRow>,
}

/// A channel's money budget gauge, in dollars.
#[derive(Debug, Clone)]
pub struct BudgetRow {
    /// Spent this month (`$0.045`).
    pub used: String,
    /// The budget (`$5.00`).
    pub limit: String,
    /// What is left.
    pub left: String,
    /// The gauge's scale: thousandths of the budget.
    pub gauge_max: u32,
    /// Spent, on that scale (capped at the maximum).
    pub gauge_used: u32,
    /// Level from which the gauge warns.
    pub gauge_high: u32,
}

fn budget_row(spend: &airlock_core::budget::Spend) -> BudgetRow {
    use airlock_core::budget::{MICROS_PER_USD, format_usd};
    let micros = |usd: f64| (usd * MICROS_PER_USD as f64).round() as u64;
    let (used, limit) = (micros(spend.used_usd), micros(spend.budget_usd));
    let gauge_used = used
        .saturating_mul(1000)
        .checked_div(limit)
        .map_or(1000, |share| share.min(1000) as u32);
    BudgetRow {
        used: format_usd(used),
        limit: format_usd(limit),
        left: format_usd(limit.saturating_sub(used)),
        gauge_max: 1000,
        gauge_used,
        gauge_high: 800,
    }
}

/// The rolling window gauge.
#[derive(Debug, Clone)]
pub struct WindowRow {
    /// `60m`.
    pub window: String,
    /// Counted now.
    pub used: u32,
    /// Limit.
    pub limit: u32,
    /// `max` of the gauge (at least 1).
    pub gauge_max: u32,
    /// Level from which the gauge warns.
    pub gauge_high: u32,
    /// `now`, or when the next slot frees.
    pub next_slot: String,
}

/// `GET /`.
#[derive(Template, WebTemplate)]
#[template(path = "queue.html")]
pub struct QueuePage {
    /// Frame.
    pub layout: Layout,
    /// Active pauses.
    pub pauses: Vec<PauseRow>,
    /// Whether everything is paused.
    pub global_paused: bool,
    /// The refreshable part.
    pub live: Live,
    /// Channels with gauges.
    pub channels: Vec<ChannelRow>,
    /// The rolling window.
    pub window: WindowRow,
    /// The status filter (`""`: any).
    pub filter_status: String,
    /// The channel filter (`""`: any).
    pub filter_channel: String,
    /// Every status, for the filter.
    pub status_options: Vec<SelectOption>,
    /// Every channel, for the filter.
    pub channel_options: Vec<SelectOption>,
}

/// One `<option>`.
#[derive(Debug, Clone)]
pub struct SelectOption {
    /// Value.
    pub value: String,
    /// Label.
    pub label: String,
    /// Whether it is selected.
    pub selected: bool,
}

/// `GET /live`: the queue's refreshable fragment.
#[derive(Template, WebTemplate)]
#[template(path = "live.html")]
pub struct LiveFragment {
    /// The refreshable part.
    pub live: Live,
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
    /// Text, as written.
    pub text: String,
    /// Media `(url, alt, clickable)`.
    pub media: Vec<(String, Option<String>, bool)>,
    /// Link and whether it is clickable.
    pub link: Option<(String, bool)>,
    /// The source article `(path, sha256, updated)`.
    pub source: Option<(String, String, Option<String>)>,
    /// Scheduled, local.
    pub scheduled: String,
    /// Scheduled, relative.
    pub scheduled_relative: String,
    /// Scheduled, RFC 3339 in the channel's calendar (the edit form's value).
    pub scheduled_input: String,
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

/// The review state of a post: the rubric, approvals and the revision cap.
#[derive(Debug, Clone)]
pub struct ReviewView {
    /// Where the rubric comes from.
    pub rubric_origin: String,
    /// Its hash.
    pub rubric_hash: String,
    /// Its items `(id, text)`.
    pub rubric_items: Vec<(String, String)>,
    /// Its text.
    pub rubric_text: String,
    /// Why it cannot be read, if it cannot (verdicts are refused until it can).
    pub rubric_error: Option<String>,
    /// The channel's `approvals_required`.
    pub approvals_required: u32,
    /// Critics whose passes count for the content now.
    pub passed_by: Vec<String>,
    /// The channel's `max_revisions`.
    pub max_revisions: u32,
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

/// Which actions the post page offers, by state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Actions {
    /// Draft.
    pub approve: bool,
    /// Draft or approved.
    pub reject: bool,
    /// Approved.
    pub unapprove: bool,
    /// Draft or approved.
    pub edit: bool,
    /// Approved.
    pub publish: bool,
    /// Failed.
    pub requeue: bool,
    /// Needs review.
    pub resolve: bool,
    /// Quarantined.
    pub release: bool,
    /// Quarantined (an operator discards it, or releases it).
    pub discard: bool,
}

/// `GET /posts/{id}`.
#[derive(Template, WebTemplate)]
#[template(path = "post.html")]
pub struct PostPage {
    /// Frame.
    pub layout: Layout,
    /// The post.
    pub p: PostView,
    /// Timeline, oldest first.
    pub events: Vec<EventRow>,
    /// Intents.
    pub intents: Vec<IntentRow>,
    /// Reservations.
    pub reservations: Vec<ReservationRow>,
    /// Verdicts, oldest first.
    pub verdicts: Vec<VerdictRow>,
    /// The rubric, approvals and revisions.
    pub review: ReviewView,
    /// Offered actions.
    pub actions: Actions,
    /// Where actions return.
    pub back: String,
}

/// One post in the inbox, with its evidence.
#[derive(Debug, Clone)]
pub struct ReviewItem {
    /// The post.
    pub p: PostView,
    /// Intents (when the request went out, with which key).
    pub intents: Vec<IntentRow>,
    /// Timeline.
    pub events: Vec<EventRow>,
    /// Reservations.
    pub reservations: Vec<ReservationRow>,
}

/// A quarantined post in the inbox, with the verdicts that put it there.
#[derive(Debug, Clone)]
pub struct QuarantineItem {
    /// The post.
    pub p: PostView,
    /// Its verdicts, oldest first.
    pub verdicts: Vec<VerdictRow>,
}

/// `GET /review`.
#[derive(Template, WebTemplate)]
#[template(path = "review.html")]
pub struct ReviewPage {
    /// Frame.
    pub layout: Layout,
    /// Posts that need a person, a page of at most [`REVIEW_PAGE`], oldest first.
    pub items: Vec<ReviewItem>,
    /// Quarantined posts, at most [`REVIEW_PAGE`], oldest first.
    pub quarantined: Vec<QuarantineItem>,
    /// How many posts are quarantined in all.
    pub quarantined_total: i64,
    /// How many posts need a person in all.
    pub total: i64,
    /// The next page, when there are more.
    pub more_url: Option<String>,
}

/// A page for errors (404, 503).
#[derive(Template, WebTemplate)]
#[template(path = "error.html")]
pub struct ErrorPage {
    /// Heading.
    pub title: String,
    /// What happened and what to do.
    pub message: String,
}

/// `?status=&channel=` on the queue.
#[derive(Debug, Default, Deserialize)]
pub struct QueueQuery {
    /// A state name, or empty.
    #[serde(default)]
    pub status: String,
    /// A channel, or empty.
    #[serde(default)]
    pub channel: String,
    /// Only posts older than this id (the table's next page), or empty.
    #[serde(default)]
    pub before: String,
}

/// `?after=` on the review inbox: the page after this post id.
#[derive(Debug, Default, Deserialize)]
pub struct ReviewQuery {
    /// A post id, or empty for the first page.
    #[serde(default)]
    pub after: String,
}

/// An error page with a status code and a way back.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    (
        status,
        ErrorPage {
            title: title.to_owned(),
            message: message.to_owned(),
        },
    )
        .into_response()
}

fn app_error_page(e: Error) -> Response {
    match e {
        Error::NotFound(message) => error_page(StatusCode::NOT_FOUND, "Not found", &message),
        Error::Invalid(message) => error_page(StatusCode::BAD_REQUEST, "Not understood", &message),
        other => error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The ledger is unavailable",
            &other.to_string(),
        ),
    }
}

/// `GET /`: the queue.
pub async fn queue(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<QueueQuery>,
) -> Response {
    match queue_page(&dash, &op, &query).await {
        Ok(page) => page.into_response(),
        Err(e) => app_error_page(e),
    }
}

/// `GET /live`: the queue's live fragment (inbox, counts, today, table).
pub async fn live(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<QueueQuery>,
) -> Response {
    let pauses = match dash.app().pauses(&op.principal).await {
        Ok(pauses) => pauses,
        Err(e) => return app_error_page(e),
    };
    match live_part(&dash, &op, &query, &pauses).await {
        Ok(live) => LiveFragment { live }.into_response(),
        Err(e) => app_error_page(e),
    }
}

/// `GET /posts/{id}`.
pub async fn post(State(dash): State<Dashboard>, op: Operator, Path(id): Path<String>) -> Response {
    let id = match id.parse::<PostId>() {
        Ok(id) => id,
        Err(e) => return error_page(StatusCode::NOT_FOUND, "Not found", &e.to_string()),
    };
    match post_page(&dash, &op, id).await {
        Ok(page) => page.into_response(),
        Err(e) => app_error_page(e),
    }
}

/// `GET /review`: the inbox, a page at a time (`?after=`).
pub async fn review(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<ReviewQuery>,
) -> Response {
    match review_page(&dash, &op, &query).await {
        Ok(page) => page.into_response(),
        Err(e) => app_error_page(e),
    }
}

fn layout(
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

async fn queue_page(
    dash: &Dashboard,
    op: &Operator,
    query: &QueueQuery,
) -> Result<QueuePage, Error> {
    let app = dash.app();
    let who = &op.principal;
    let now = app.now();
    let default_tz = app.settings().timezone;
    let pauses = app.pauses(who).await?;
    let live = live_part(dash, op, query, &pauses).await?;
    let quota = app.quota_status(who).await?;
    let statuses = app.channel_statuses(who).await?;
    let global_paused = pauses.iter().any(|p| p.scope == "*");

    let channels = statuses
        .iter()
        .map(|status| {
            let quota_row = quota.channels.iter().find(|q| q.channel == status.name);
            let tz = channel_tz(app, &status.name);
            ChannelRow {
                name: status.name.to_string(),
                kind: status.kind.to_string(),
                timezone: tz.name().to_owned(),
                used: status.daily_used,
                limit: status.daily_limit,
                gauge_max: status.daily_limit.max(1),
                gauge_high: gauge_high(status.daily_limit),
                next_slot: next_slot(quota_row, now, tz),
                paused: status.pause_reason.clone(),
                own_pause: pauses.iter().any(|p| p.scope == status.name.as_str()),
                budget: quota_row.and_then(|q| q.budget.as_ref()).map(budget_row),
            }
        })
        .collect();
    let window = window_row(&quota, now, default_tz);
    let pauses = pauses
        .iter()
        .map(|pause| PauseRow {
            label: if pause.scope == "*" {
                "All publishing".to_owned()
            } else {
                format!("Channel {}", pause.scope)
            },
            channel: if pause.scope == "*" {
                String::new()
            } else {
                pause.scope.clone()
            },
            reason: pause.reason.clone(),
            actor: pause.actor.clone(),
            since: format!(
                "{} ({})",
                local(pause.at, default_tz),
                relative(pause.at, now)
            ),
        })
        .collect();
    let layout = layout(dash, op, "queue", "Queue".to_owned(), live.review_count);
    let filter_status = parse_status(&query.status)
        .map(|s| s.as_str().to_owned())
        .unwrap_or_default();
    let filter_channel = parse_channel(app, &query.channel)
        .map(|c| c.to_string())
        .unwrap_or_default();
    let status_options = PostStatus::ALL
        .iter()
        .map(|s| SelectOption {
            value: s.as_str().to_owned(),
            label: status_label(*s).to_owned(),
            selected: filter_status == s.as_str(),
        })
        .collect();
    let channel_options = app
        .settings()
        .channels
        .keys()
        .map(|c| SelectOption {
            value: c.to_string(),
            label: c.to_string(),
            selected: filter_channel == c.as_str(),
        })
        .collect();
    Ok(QueuePage {
        layout,
        pauses,
        global_paused,
        live,
        channels,
        window,
        filter_status,
        filter_channel,
        status_options,
        channel_options,
    })
}

async fn live_part(
    dash: &Dashboard,
    op: &Operator,
    query: &QueueQuery,
    pauses: &[Pause],
) -> Result<Live, Error> {
    let app = dash.app();
    let who = &op.principal;
    let now = app.now();
    let status = parse_status(&query.status);
    let channel = parse_channel(app, &query.channel);
    let before = query.before.trim().parse::<PostId>().ok();

    let counted = app.status_counts(who).await?;
    let count_of = |s: PostStatus| {
        counted
            .iter()
            .find(|(status, _)| *status == s)
            .map_or(0, |(_, n)| *n)
    };
    let summaries = |status: PostStatus, limit: u32| PostFilter {
        status: Some(status),
        limit: Some(limit),
        ..PostFilter::default()
    };
    let mut by_status: BTreeMap<PostStatus, Vec<PostSummary>> = BTreeMap::new();
    for (s, limit) in [
        (PostStatus::NeedsReview, INBOX_LIMIT),
        (PostStatus::Approved, SCHEDULE_LIMIT),
        (PostStatus::Posting, SCHEDULE_LIMIT),
        (PostStatus::Posted, SCHEDULE_LIMIT),
    ] {
        by_status.insert(
            s,
            app.list_summaries(who, &summaries(s, limit), EXCERPT_CHARS)
                .await?,
        );
    }
    let channel_query = channel
        .as_ref()
        .map(|c| format!("&channel={c}"))
        .unwrap_or_default();
    let counts = PostStatus::ALL
        .iter()
        .map(|s| CountRow {
            status: s.as_str(),
            label: status_label(*s),
            count: count_of(*s).to_string(),
            href: format!("/?status={}{channel_query}", s.as_str()),
            active: status == Some(*s),
        })
        .collect();

    let mut inbox: Vec<PostRow> = by_status[&PostStatus::NeedsReview]
        .iter()
        .map(|p| post_row(app, p, now))
        .collect();
    inbox.reverse();
    let quarantined = app
        .list_summaries(
            who,
            &PostFilter {
                quarantined: Some(true),
                limit: Some(INBOX_LIMIT),
                ..PostFilter::default()
            },
            EXCERPT_CHARS,
        )
        .await?;
    let quarantined_count = quarantine_count(app, op).await?;
    inbox.extend(quarantined.iter().rev().map(|p| post_row(app, p, now)));

    let schedule = schedule(app, &by_status, pauses, now);

    let filter = PostFilter {
        status,
        channel: channel.clone(),
        before,
        limit: Some(TABLE_LIMIT),
        ..PostFilter::default()
    };
    let listed = app.list_summaries(who, &filter, EXCERPT_CHARS).await?;
    let posts: Vec<PostRow> = listed.iter().map(|p| post_row(app, p, now)).collect();
    let mut filter_label = match (&status, &channel) {
        (None, None) => "All posts".to_owned(),
        (Some(s), None) => format!("Posts: {}", status_label(*s)),
        (None, Some(c)) => format!("Posts on {c}"),
        (Some(s), Some(c)) => format!("Posts on {c}: {}", status_label(*s)),
    };
    if let Some(before) = before {
        filter_label.push_str(&format!(", older than #{before}"));
    }
    let mut query_string = String::new();
    if let Some(s) = status {
        query_string.push_str(&format!("status={}", s.as_str()));
    }
    query_string.push_str(&channel_query);
    let older_url = (listed.len() >= TABLE_LIMIT as usize)
        .then(|| listed.last())
        .flatten()
        .map(|last| format!("/?{query_string}&before={}", last.id));
    let mut live_url = format!("/live?{query_string}");
    if let Some(before) = before {
        live_url.push_str(&format!("&before={before}"));
    }
    Ok(Live {
        inbox,
        review_count: count_of(PostStatus::NeedsReview) + quarantined_count,
        counts,
        schedule,
        posts,
        filter_label,
        live_url,
        older_url,
        refresh_seconds: dash.settings().refresh_seconds,
        rendered_at: local_precise(now, app.settings().timezone),
    })
}

/// What goes out today in each channel's calendar: approved posts scheduled before the
/// local day ends (overdue ones included), posts being published, posts published today.
fn schedule(
    app: &App,
    by_status: &BTreeMap<PostStatus, Vec<PostSummary>>,
    pauses: &[Pause],
    now: DateTime<Utc>,
) -> Vec<ScheduleRow> {
    let global_pause = pauses.iter().any(|p| p.scope == "*");
    let mut rows: Vec<(DateTime<Utc>, ScheduleRow)> = Vec::new();
    let mut push = |at: DateTime<Utc>, post: &PostSummary, tz: Tz, state: String, class| {
        rows.push((
            at,
            ScheduleRow {
                time: local_time(at, tz),
                relative: relative(at, now),
                channel: post.channel.to_string(),
                id: post.id.0,
                excerpt: excerpt(&post.excerpt, 90),
                state,
                class,
            },
        ));
    };
    for post in &by_status[&PostStatus::Approved] {
        let tz = channel_tz(app, &post.channel);
        let (_, day_end) = day_bounds(now, tz);
        if post.scheduled_at >= day_end {
            continue;
        }
        let paused = global_pause || pauses.iter().any(|p| p.scope == post.channel.as_str());
        let at = post
            .scheduled_at
            .max(post.not_before.unwrap_or(post.scheduled_at));
        let (state, class) = if paused {
            ("held: paused".to_owned(), "held")
        } else if post.not_before.is_some_and(|t| t > now) {
            (format!("waiting until {}", local_time(at, tz)), "held")
        } else if post.scheduled_at <= now {
            ("due now".to_owned(), "due")
        } else {
            ("scheduled".to_owned(), "scheduled")
        };
        push(at, post, tz, state, class);
    }
    for post in &by_status[&PostStatus::Posting] {
        let tz = channel_tz(app, &post.channel);
        push(
            post.scheduled_at,
            post,
            tz,
            "publishing now".to_owned(),
            "due",
        );
    }
    for post in &by_status[&PostStatus::Posted] {
        let tz = channel_tz(app, &post.channel);
        let (day_start, day_end) = day_bounds(now, tz);
        if let Some(at) = post.posted_at
            && at >= day_start
            && at < day_end
        {
            push(at, post, tz, "published".to_owned(), "published");
        }
    }
    rows.sort_by_key(|(at, row)| (*at, row.id));
    rows.into_iter().map(|(_, row)| row).collect()
}

async fn post_page(dash: &Dashboard, op: &Operator, id: PostId) -> Result<PostPage, Error> {
    let app = dash.app();
    let who = &op.principal;
    let now = app.now();
    let detail = app.get_post(who, id).await?;
    let review_count = review_count(app, op).await?;
    let tz = channel_tz(app, &detail.post.content.channel);
    let status = detail.post.status;
    let quarantined = detail.post.is_quarantined();
    let actions = Actions {
        approve: status == PostStatus::Draft && !quarantined,
        reject: matches!(status, PostStatus::Draft | PostStatus::Approved) && !quarantined,
        unapprove: status == PostStatus::Approved,
        edit: matches!(status, PostStatus::Draft | PostStatus::Approved) && !quarantined,
        publish: status == PostStatus::Approved,
        requeue: status == PostStatus::Failed,
        resolve: status == PostStatus::NeedsReview,
        release: quarantined,
        discard: quarantined,
    };
    let review = review_view(app, op, &detail).await?;
    let layout = layout(dash, op, "post", format!("Post #{id}"), review_count);
    Ok(PostPage {
        layout,
        p: post_view(app, &detail.post, now),
        events: event_rows(&detail, tz),
        intents: intent_rows(&detail, tz),
        reservations: reservation_rows(&detail, tz),
        verdicts: verdict_rows(app, &detail, tz),
        review,
        actions,
        back: format!("/posts/{id}"),
    })
}

async fn review_page(
    dash: &Dashboard,
    op: &Operator,
    query: &ReviewQuery,
) -> Result<ReviewPage, Error> {
    let app = dash.app();
    let who = &op.principal;
    let now = app.now();
    let after = query.after.trim().parse::<PostId>().ok();
    // The inbox reads oldest first, and lists come newest first: collect the ids after
    // `after` from summaries with an empty excerpt (no text is loaded), then load the
    // whole post only for the REVIEW_PAGE oldest of them.
    let total = needs_review_count(app, op).await?;
    let mut ids: Vec<PostId> = Vec::new();
    let mut before: Option<PostId> = None;
    loop {
        let filter = PostFilter {
            status: Some(PostStatus::NeedsReview),
            before,
            limit: Some(200),
            ..PostFilter::default()
        };
        let chunk = app.list_summaries(who, &filter, 0).await?;
        let Some(last) = chunk.last() else { break };
        before = Some(last.id);
        ids.extend(
            chunk
                .iter()
                .map(|p| p.id)
                .filter(|id| after.is_none_or(|after| *id > after)),
        );
        if chunk.len() < 200 {
            break;
        }
    }
    ids.sort();
    let more = ids.len() > REVIEW_PAGE as usize;
    ids.truncate(REVIEW_PAGE as usize);
    let mut items = Vec::with_capacity(ids.len());
    for id in &ids {
        let detail = match app.get_post(who, *id).await {
            Ok(detail) => detail,
            // Settled or discarded between the list and now: it is no longer in the inbox.
            Err(Error::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if detail.post.status != PostStatus::NeedsReview {
            continue;
        }
        let tz = channel_tz(app, &detail.post.content.channel);
        items.push(ReviewItem {
            p: post_view(app, &detail.post, now),
            intents: intent_rows(&detail, tz),
            events: event_rows(&detail, tz),
            reservations: reservation_rows(&detail, tz),
        });
    }
    let more_url = more
        .then(|| ids.last())
        .flatten()
        .map(|last| format!("/review?after={last}"));

    // Quarantined drafts, oldest first: ids from summaries without text, then the
    // REVIEW_PAGE oldest loaded whole.
    let mut quarantined_ids: Vec<PostId> = app
        .list_summaries(
            who,
            &PostFilter {
                quarantined: Some(true),
                limit: Some(QUARANTINE_SCAN),
                ..PostFilter::default()
            },
            0,
        )
        .await?
        .iter()
        .map(|p| p.id)
        .collect();
    quarantined_ids.sort();
    let quarantined_total = quarantined_ids.len() as i64;
    quarantined_ids.truncate(REVIEW_PAGE as usize);
    let mut quarantined = Vec::with_capacity(quarantined_ids.len());
    for id in &quarantined_ids {
        let detail = match app.get_post(who, *id).await {
            Ok(detail) => detail,
            Err(Error::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if !detail.post.is_quarantined() {
            continue;
        }
        let tz = channel_tz(app, &detail.post.content.channel);
        quarantined.push(QuarantineItem {
            p: post_view(app, &detail.post, now),
            verdicts: verdict_rows(app, &detail, tz),
        });
    }
    let layout = layout(
        dash,
        op,
        "review",
        "Needs review".to_owned(),
        total + quarantined_total,
    );
    Ok(ReviewPage {
        layout,
        items,
        quarantined,
        quarantined_total,
        total,
        more_url,
    })
}

/// The most quarantined posts a page counts; an operator settles them long before.
const QUARANTINE_SCAN: u32 = 1000;

/// Posts that need a person: `needs_review` ones and quarantined ones.
async fn review_count(app: &App, op: &Operator) -> Result<i64, Error> {
    Ok(needs_review_count(app, op).await? + quarantine_count(app, op).await?)
}

/// How many posts are `needs_review`.
async fn needs_review_count(app: &App, op: &Operator) -> Result<i64, Error> {
    Ok(app
        .status_counts(&op.principal)
        .await?
        .into_iter()
        .find(|(s, _)| *s == PostStatus::NeedsReview)
        .map_or(0, |(_, n)| n))
}

/// How many posts are quarantined (counted from summaries without text).
async fn quarantine_count(app: &App, op: &Operator) -> Result<i64, Error> {
    let filter = PostFilter {
        quarantined: Some(true),
        limit: Some(QUARANTINE_SCAN),
        ..PostFilter::default()
    };
    Ok(app.list_summaries(&op.principal, &filter, 0).await?.len() as i64)
}

/// The rubric, approvals and revisions of a post, from its review packet; a rubric that
/// cannot be read is shown as such instead of failing the page.
async fn review_view(app: &App, op: &Operator, detail: &PostDetail) -> Result<ReviewView, Error> {
    let post = &detail.post;
    let channel = app.settings().channels.get(&post.content.channel);
    let (approvals_required, max_revisions) = channel
        .map(|c| {
            (
                c.review.rules.approvals_required,
                c.review.rules.max_revisions,
            )
        })
        .unwrap_or((1, 2));
    let passed_by = airlock_core::review::current_passes(
        &detail.verdicts,
        post.review_round,
        &post.content_hash,
    );
    let mut view = ReviewView {
        rubric_origin: channel
            .map(|c| c.review.rubric.origin())
            .unwrap_or_else(|| "the channel is not configured".to_owned()),
        rubric_hash: String::new(),
        rubric_items: Vec::new(),
        rubric_text: String::new(),
        rubric_error: None,
        approvals_required,
        passed_by,
        max_revisions,
    };
    match app.review_packet(&op.principal, post.id).await {
        Ok(packet) => {
            view.rubric_hash = packet.rubric.hash;
            view.rubric_items = packet
                .rubric
                .items
                .into_iter()
                .map(|i| (i.id, i.text))
                .collect();
            view.rubric_text = packet.rubric.text;
        }
        Err(Error::NotFound(m)) => return Err(Error::NotFound(m)),
        Err(e) => view.rubric_error = Some(e.to_string()),
    }
    Ok(view)
}

/// A post's verdicts, each reason shown against the item of the channel's rubric it names.
fn verdict_rows(app: &App, detail: &PostDetail, tz: Tz) -> Vec<VerdictRow> {
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

fn parse_status(value: &str) -> Option<PostStatus> {
    value.trim().parse().ok()
}

fn parse_channel(app: &App, value: &str) -> Option<ChannelName> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    app.channel(value).ok().map(|c| c.name.clone())
}

/// A channel's calendar, or the default one for a channel no longer configured.
fn channel_tz(app: &App, channel: &ChannelName) -> Tz {
    app.settings()
        .channels
        .get(channel)
        .map(|c| c.timezone)
        .unwrap_or(app.settings().timezone)
}

fn gauge_high(limit: u32) -> u32 {
    // Warn when one slot is left (or at once for a limit of one).
    limit.saturating_sub(1).max(1)
}

fn next_slot(quota: Option<&ChannelQuota>, now: DateTime<Utc>, tz: Tz) -> String {
    match quota.and_then(|q| q.next_slot_at) {
        Some(at) => format!("{} ({})", local(at, tz), relative(at, now)),
        None => "now".to_owned(),
    }
}

fn window_row(quota: &QuotaStatus, now: DateTime<Utc>, tz: Tz) -> WindowRow {
    let usage = &quota.window.usage;
    WindowRow {
        window: quota.window.window.to_string(),
        used: usage.used,
        limit: usage.limit,
        gauge_max: usage.limit.max(1),
        gauge_high: gauge_high(usage.limit),
        next_slot: match usage.next_free_at {
            Some(at) => format!("{} ({})", local(at, tz), relative(at, now)),
            None => "now".to_owned(),
        },
    }
}

fn post_row(app: &App, post: &PostSummary, now: DateTime<Utc>) -> PostRow {
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

fn post_view(app: &App, post: &Post, now: DateTime<Utc>) -> PostView {
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
        media: content
            .media
            .iter()
            .map(|m| (m.url.clone(), m.alt.clone(), is_web_link(&m.url)))
            .collect(),
        link: content.link.as_ref().map(|l| (l.clone(), is_web_link(l))),
        source: content
            .source
            .as_ref()
            .map(|s| (s.path.clone(), s.sha256.clone(), s.updated.clone())),
        scheduled: local(post.scheduled_at, tz),
        scheduled_relative: relative(post.scheduled_at, now),
        scheduled_input: local_rfc3339(post.scheduled_at, tz),
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

fn event_rows(detail: &PostDetail, tz: Tz) -> Vec<EventRow> {
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

fn intent_rows(detail: &PostDetail, tz: Tz) -> Vec<IntentRow> {
    detail
        .intents
        .iter()
        .map(|i| IntentRow {
            generation: i.generation,
            idempotency_key: i.idempotency_key.clone(),
            phase: i.phase.clone(),
            platform_ref: i.platform_ref.clone(),
            created_at: local_precise(i.created_at, tz),
            settled_at: i.settled_at.map(|at| local_precise(at, tz)),
        })
        .collect()
}

fn reservation_rows(detail: &PostDetail, tz: Tz) -> Vec<ReservationRow> {
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
