//! The queue (`GET /`) and its live fragment (`GET /live`, refreshed every few
//! seconds): pauses, each channel's daily gauge and budget, the rolling window, the
//! inbox, counts per state, today's schedule in each channel's calendar, and the
//! filtered table of posts a page at a time.

use std::collections::BTreeMap;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Deserialize;

use airlock_app::control::{ChannelQuota, ExplainedPause, QuotaStatus};
use airlock_app::{App, Error};
use airlock_app::{Pause, PostFilter};
use airlock_core::quota::day_bounds;
use airlock_core::{ChannelName, PostId, PostStatus, PostSummary};

use super::error::app_error_page;
use super::parts::{Layout, PostRow, channel_tz, layout, post_row, quarantine_count};
use super::{EXCERPT_CHARS, INBOX_LIMIT, SCHEDULE_LIMIT, TABLE_LIMIT};
use crate::auth::Operator;
use crate::session::Dashboard;
use crate::view::{excerpt, local, local_precise, local_time, relative, status_label};

/// `GET /`.
#[derive(Template, WebTemplate)]
#[template(path = "queue.html")]
pub struct QueuePage {
    /// Frame.
    pub layout: Layout,
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

/// `GET /live`: the queue's refreshable fragment.
#[derive(Template, WebTemplate)]
#[template(path = "live.html")]
pub struct LiveFragment {
    /// The refreshable part.
    pub live: Live,
}

/// The queue's part that live refresh replaces: pause banners, inbox, counts, today,
/// the table.
#[derive(Debug, Clone)]
pub struct Live {
    /// Posts that need a person, oldest first (at most [`INBOX_LIMIT`]), then the
    /// quarantined ones (as many again at most).
    pub inbox: Vec<PostRow>,
    /// How many posts need a person in all (`needs_review` and quarantined).
    pub review_count: i64,
    /// Of those, how many are `needs_review` (nobody knows whether they went out).
    pub in_doubt: i64,
    /// Of those, how many are quarantined drafts (they never went anywhere).
    pub quarantined: i64,
    /// Active pauses, as banners.
    pub pauses: Vec<PauseRow>,
    /// The CSRF token for the banners' Resume forms.
    pub csrf: String,
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

/// An active pause, as a banner: why, and the one step left, in the dashboard's terms
/// (its inbox and its Resume button, never a command line).
#[derive(Debug, Clone)]
pub struct PauseRow {
    /// `All publishing` or `Channel cats`.
    pub label: String,
    /// The form value to resume it: empty for all, else the channel.
    pub channel: String,
    /// Why: the operator's reason, or what the post whose outcome is unknown did.
    pub reason: String,
    /// Who.
    pub actor: String,
    /// Since when.
    pub since: String,
    /// The post whose unknown outcome set the pause, once a person settled it:
    /// `(id, its state)`.
    pub settled: Option<(i64, &'static str)>,
    /// Posts on the channel still in doubt, to settle in the inbox before resuming.
    pub settle: Vec<i64>,
    /// The pause was set by a post in doubt and none is left: resuming is the step.
    pub resume_now: bool,
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

/// `GET /live`: the queue's live fragment (pause banners, inbox, counts, today, table).
pub async fn live(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<QueueQuery>,
) -> Response {
    let explained = match dash.app().explained_pauses(&op.principal).await {
        Ok(explained) => explained,
        Err(e) => return app_error_page(e),
    };
    match live_part(&dash, &op, &query, &explained).await {
        Ok(live) => LiveFragment { live }.into_response(),
        Err(e) => app_error_page(e),
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
    let explained = app.explained_pauses(who).await?;
    let pauses: Vec<Pause> = explained.iter().map(|e| e.pause.clone()).collect();
    let live = live_part(dash, op, query, &explained).await?;
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
                paused: status.paused.then(|| {
                    explained
                        .iter()
                        .find(|e| e.pause.scope == status.name.as_str())
                        .or_else(|| explained.iter().find(|e| e.pause.scope == "*"))
                        .map(pause_reason)
                        .unwrap_or_default()
                }),
                own_pause: pauses.iter().any(|p| p.scope == status.name.as_str()),
                budget: quota_row.and_then(|q| q.budget.as_ref()).map(budget_row),
            }
        })
        .collect();
    let window = window_row(&quota, now, default_tz);

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

/// The pause banners: why each pause holds and the one step left.
fn pause_rows(app: &App, explained: &[ExplainedPause], now: DateTime<Utc>) -> Vec<PauseRow> {
    let default_tz = app.settings().timezone;
    explained
        .iter()
        .map(|explained| (&explained.pause, explained))
        .map(|(pause, explained)| PauseRow {
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
            reason: pause_reason(explained),
            settled: explained
                .unknown
                .as_ref()
                .and_then(|u| u.settled.map(|s| (u.post.0, s.as_str()))),
            settle: explained
                .unknown
                .iter()
                .flat_map(|u| {
                    let open = u.settled.is_none().then_some(u.post.0);
                    open.into_iter().chain(u.waiting.map(|w| w.0))
                })
                .collect(),
            resume_now: explained
                .unknown
                .as_ref()
                .is_some_and(|u| u.settled.is_some() && u.waiting.is_none()),
            actor: pause.actor.clone(),
            since: format!(
                "{} ({})",
                local(pause.at, default_tz),
                relative(pause.at, now)
            ),
        })
        .collect()
}

/// Why a pause holds, without a step to take (the banner offers the steps): the
/// operator's reason, or what happened to the post whose outcome is unknown.
fn pause_reason(explained: &ExplainedPause) -> String {
    match &explained.unknown {
        Some(unknown) => unknown.what.clone(),
        None => explained.pause.reason.clone(),
    }
}

async fn live_part(
    dash: &Dashboard,
    op: &Operator,
    query: &QueueQuery,
    explained: &[ExplainedPause],
) -> Result<Live, Error> {
    let pauses: Vec<Pause> = explained.iter().map(|e| e.pause.clone()).collect();
    let pauses = pauses.as_slice();
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
        in_doubt: count_of(PostStatus::NeedsReview),
        pauses: pause_rows(app, explained, now),
        csrf: op.csrf.clone(),
        quarantined: quarantined_count,
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
