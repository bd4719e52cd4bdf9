//! The calendar (`GET /calendar?view=week|month&start=YYYY-MM-DD&channel=NAME`): every
//! post with a time, on the day it goes out (or went out) in one channel's zone, or in
//! the ledger's zone when it shows every channel; a week or a month at a time, with a
//! form per draft or approved post to move it.
//!
//! A post sits where it goes out: a published post at its publication, one held by a
//! quota or a platform's "not now" at the end of the hold, every other at its schedule.
//! The calendar reads the summaries (an excerpt of the text) of the posts going out in
//! its span, at most [`CALENDAR_LIMIT`] of them, and says so when the span has more.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, Utc};
use chrono_tz::Tz;
use serde::Deserialize;

use airlock_app::{App, Error, PostFilter};
use airlock_core::quota::local_day_start;
use airlock_core::{ChannelName, PostStatus, PostSummary};

use super::error::{app_error_page, error_page};
use super::parts::{Layout, channel_tz, layout, review_count};
use super::queue::SelectOption;
use crate::auth::Operator;
use crate::session::Dashboard;
use crate::view::{excerpt, local_time, status_label};
use crate::zone;

/// Most posts one calendar page reads, newest first.
pub const CALENDAR_LIMIT: u32 = 2000;
/// Characters of text an entry shows.
const ENTRY_CHARS: u32 = 60;

/// A week or a month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Monday to Sunday.
    Week,
    /// The weeks (Monday to Sunday) that hold a month's days.
    Month,
}

impl View {
    fn parse(value: &str) -> Result<View, String> {
        match value.trim() {
            "" | "week" => Ok(View::Week),
            "month" => Ok(View::Month),
            other => Err(format!("{other:?} is not a view: use week or month")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            View::Week => "week",
            View::Month => "month",
        }
    }
}

/// The days a view shows around a date, and where its neighbours start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// The first day the view is about (a Monday, or the first of the month).
    pub start: NaiveDate,
    /// The day after the last day it is about.
    pub end: NaiveDate,
    /// Every day shown, whole weeks from a Monday; a month shows the days before and
    /// after it that fill its first and last weeks.
    pub days: Vec<NaiveDate>,
    /// Where the previous week or month starts.
    pub prev: NaiveDate,
    /// Where the next one starts.
    pub next: NaiveDate,
}

impl Grid {
    /// The grid of `view` holding `date`.
    pub fn of(view: View, date: NaiveDate) -> Grid {
        let monday = |d: NaiveDate| d - Duration::days(d.weekday().num_days_from_monday().into());
        match view {
            View::Week => {
                let start = monday(date);
                let end = start + Duration::days(7);
                Grid {
                    start,
                    end,
                    days: start.iter_days().take(7).collect(),
                    prev: start - Duration::days(7),
                    next: end,
                }
            }
            View::Month => {
                let start = date.with_day(1).expect("every month has a first day");
                let end = start + Months::new(1);
                let first = monday(start);
                let last = monday(end - Duration::days(1)) + Duration::days(7);
                Grid {
                    start,
                    end,
                    days: first.iter_days().take_while(|d| *d < last).collect(),
                    prev: start - Months::new(1),
                    next: end,
                }
            }
        }
    }

    /// The instants the grid covers in `tz`: from the first day's start to the start of
    /// the day after the last.
    pub fn bounds(&self, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
        let first = self.days[0];
        let after = *self.days.last().expect("a grid has days") + Duration::days(1);
        (local_day_start(first, tz), local_day_start(after, tz))
    }
}

/// `GET /calendar`.
#[derive(Template, WebTemplate)]
#[template(path = "calendar.html")]
pub struct CalendarPage {
    /// Frame.
    pub layout: Layout,
    /// `week` or `month`.
    pub view: &'static str,
    /// `Week of 30 Nov 2026`, `December 2026`.
    pub heading: String,
    /// The zone the days are in.
    pub timezone: String,
    /// The channel shown, or empty for all.
    pub channel: String,
    /// Every channel, for the picker.
    pub channel_options: Vec<SelectOption>,
    /// The shown period's start (`YYYY-MM-DD`).
    pub start: String,
    /// Links: previous, today, next, the other view.
    pub prev_url: String,
    /// Today's week or month.
    pub today_url: String,
    /// The next week or month.
    pub next_url: String,
    /// The week view of the day in focus (today when in view).
    pub week_url: String,
    /// The month view of it.
    pub month_url: String,
    /// Weeks of days.
    pub weeks: Vec<Vec<DayView>>,
    /// How many posts the view shows.
    pub shown: usize,
    /// The span holds more than [`CALENDAR_LIMIT`] posts: only the newest were read.
    pub cut: bool,
    /// This page's URL, where the move forms return.
    pub back: String,
}

/// One day of the calendar.
#[derive(Debug, Clone)]
pub struct DayView {
    /// `2026-12-01`.
    pub date: String,
    /// `Tue 1`, or `Tue 1 Dec` on the first of a month.
    pub label: String,
    /// It is today in the calendar's zone.
    pub today: bool,
    /// A day of the month before or after, filling a month view's weeks.
    pub outside: bool,
    /// Its posts, by time.
    pub entries: Vec<Entry>,
}

/// A post on a day.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Id.
    pub id: i64,
    /// `09:30 JST`, in the calendar's zone.
    pub time: String,
    /// State name (CSS class).
    pub status: &'static str,
    /// State label.
    pub status_label: &'static str,
    /// Channel.
    pub channel: String,
    /// Title or the start of the text.
    pub excerpt: String,
    /// What else to know: `held until 10:00 JST (scheduled 09:00 JST)`, `quarantined`.
    pub note: Option<String>,
    /// A draft or approved post can be moved (not a quarantined one).
    pub movable: bool,
    /// Moving it withdraws its approval.
    pub approved: bool,
    /// The move form's date, in the channel's zone.
    pub date_input: String,
    /// The move form's time, in the channel's zone.
    pub time_input: String,
    /// The channel's zone, which the move form's fields are in.
    pub channel_tz: String,
}

/// `?view=&start=&channel=`.
#[derive(Debug, Default, Deserialize)]
pub struct CalendarQuery {
    /// `week` (default) or `month`.
    #[serde(default)]
    pub view: String,
    /// A day in the period to show (`YYYY-MM-DD`); default today.
    #[serde(default)]
    pub start: String,
    /// A channel, or empty for all.
    #[serde(default)]
    pub channel: String,
}

/// `GET /calendar`.
pub async fn calendar(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<CalendarQuery>,
) -> Response {
    match calendar_page(&dash, &op, &query).await {
        Ok(page) => page.into_response(),
        Err(CalendarError::Query(message)) => {
            error_page(StatusCode::BAD_REQUEST, "Not understood", &message)
        }
        Err(CalendarError::App(e)) => app_error_page(e),
    }
}

enum CalendarError {
    Query(String),
    App(Error),
}

impl From<Error> for CalendarError {
    fn from(e: Error) -> Self {
        CalendarError::App(e)
    }
}

async fn calendar_page(
    dash: &Dashboard,
    op: &Operator,
    query: &CalendarQuery,
) -> Result<CalendarPage, CalendarError> {
    let app = dash.app();
    let who = &op.principal;
    let now = app.now();
    let view = View::parse(&query.view).map_err(CalendarError::Query)?;
    let channel: Option<ChannelName> = match query.channel.trim() {
        "" => None,
        name => Some(
            app.channel(name)
                .map_err(|e| CalendarError::Query(e.to_string()))?
                .name
                .clone(),
        ),
    };
    let tz = match &channel {
        Some(c) => channel_tz(app, c),
        None => app.settings().timezone,
    };
    let today = now.with_timezone(&tz).date_naive();
    let date = match query.start.trim() {
        "" => today,
        start => zone::parse_date(start).map_err(CalendarError::Query)?,
    };
    let grid = Grid::of(view, date);
    let (from, until) = grid.bounds(tz);

    let mut placed: Vec<(DateTime<Utc>, PostSummary)> = Vec::new();
    let filter = PostFilter {
        channel: channel.clone(),
        goes_out: Some((from, until)),
        limit: Some(CALENDAR_LIMIT),
        ..PostFilter::default()
    };
    let listed = app.list_summaries(who, &filter, ENTRY_CHARS).await?;
    let cut = listed.len() >= CALENDAR_LIMIT as usize;
    for post in listed {
        let at = placed_at(&post);
        if at >= from && at < until {
            placed.push((at, post));
        }
    }
    placed.sort_by_key(|(at, post)| (*at, post.id));
    let shown = placed.len();

    let mut days: Vec<DayView> = grid
        .days
        .iter()
        .map(|d| DayView {
            date: d.format("%Y-%m-%d").to_string(),
            label: if d.day() == 1 {
                d.format("%a %-d %b").to_string()
            } else {
                d.format("%a %-d").to_string()
            },
            today: *d == today,
            outside: *d < grid.start || *d >= grid.end,
            entries: Vec::new(),
        })
        .collect();
    for (at, post) in placed {
        let day = at.with_timezone(&tz).date_naive();
        let index = (day - grid.days[0]).num_days();
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| days.get_mut(i)) {
            slot.entries.push(entry(app, &post, at, tz));
        }
    }
    let weeks = days.chunks(7).map(<[DayView]>::to_vec).collect();

    let url = |view: View, start: NaiveDate| {
        let mut url = format!("/calendar?view={}&start={start}", view.as_str());
        if let Some(c) = &channel {
            url.push_str(&format!("&channel={c}"));
        }
        url
    };
    // The other view opens on the day in focus: today when it is in view, else a week's
    // Thursday (a week belongs to the month holding most of it) or a month's first day.
    let focus = if today >= grid.start && today < grid.end {
        today
    } else {
        match view {
            View::Week => grid.start + Duration::days(3),
            View::Month => grid.start,
        }
    };
    let heading = match view {
        View::Week => format!(
            "Week of {} to {}",
            grid.start.format("%-d %b %Y"),
            (grid.end - Duration::days(1)).format("%-d %b %Y")
        ),
        View::Month => grid.start.format("%B %Y").to_string(),
    };
    let channel_name = channel.as_ref().map(|c| c.to_string()).unwrap_or_default();
    let channel_options = app
        .settings()
        .channels
        .keys()
        .map(|c| SelectOption {
            value: c.to_string(),
            label: c.to_string(),
            selected: channel_name == c.as_str(),
        })
        .collect();
    let review_count = review_count(app, op).await?;
    Ok(CalendarPage {
        layout: layout(dash, op, "calendar", "Calendar".to_owned(), review_count),
        view: view.as_str(),
        heading,
        timezone: tz.name().to_owned(),
        channel: channel_name,
        channel_options,
        start: grid.start.to_string(),
        prev_url: url(view, grid.prev),
        today_url: url(view, today),
        next_url: url(view, grid.next),
        week_url: url(View::Week, focus),
        month_url: url(View::Month, focus),
        weeks,
        shown,
        cut,
        back: url(view, grid.start),
    })
}

/// Where a post sits: its publication once published, the end of a hold still to come
/// for an approved post, else its schedule.
pub fn placed_at(post: &PostSummary) -> DateTime<Utc> {
    match (post.status, post.posted_at, post.not_before) {
        (PostStatus::Posted, Some(at), _) => at,
        (PostStatus::Approved, _, Some(until)) if until > post.scheduled_at => until,
        _ => post.scheduled_at,
    }
}

fn entry(app: &App, post: &PostSummary, at: DateTime<Utc>, tz: Tz) -> Entry {
    let own = channel_tz(app, &post.channel);
    let (date_input, time_input) = zone::inputs(post.scheduled_at, own);
    let quarantined = post.quarantined_at.is_some();
    let note = if quarantined {
        Some("quarantined".to_owned())
    } else if at != post.scheduled_at && post.status == PostStatus::Approved {
        Some(format!(
            "held until {} (scheduled {})",
            local_time(at, tz),
            local_time(post.scheduled_at, tz)
        ))
    } else if post.status == PostStatus::Posted && at != post.scheduled_at {
        Some(format!("scheduled {}", local_time(post.scheduled_at, tz)))
    } else {
        None
    };
    Entry {
        id: post.id.0,
        time: local_time(at, tz),
        status: post.status.as_str(),
        status_label: status_label(post.status),
        channel: post.channel.to_string(),
        excerpt: match &post.title {
            Some(title) => excerpt(title, ENTRY_CHARS as usize),
            None => excerpt(&post.excerpt, ENTRY_CHARS as usize),
        },
        note,
        movable: matches!(post.status, PostStatus::Draft | PostStatus::Approved) && !quarantined,
        approved: post.status == PostStatus::Approved,
        date_input,
        time_input,
        channel_tz: own.name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_week_runs_monday_to_sunday_around_the_date() {
        // 2026-12-03 is a Thursday.
        let grid = Grid::of(View::Week, day("2026-12-03"));
        assert_eq!(grid.start, day("2026-11-30"));
        assert_eq!(grid.end, day("2026-12-07"));
        assert_eq!(grid.days.len(), 7);
        assert_eq!(grid.days[6], day("2026-12-06"));
        assert_eq!(grid.prev, day("2026-11-23"));
        assert_eq!(grid.next, day("2026-12-07"));
        assert_eq!(Grid::of(View::Week, day("2026-11-30")), grid, "a Monday");
        assert_eq!(Grid::of(View::Week, day("2026-12-06")), grid, "a Sunday");
    }

    #[test]
    fn a_month_fills_whole_weeks_and_steps_by_months() {
        // December 2026 starts on a Tuesday and ends on a Thursday.
        let grid = Grid::of(View::Month, day("2026-12-15"));
        assert_eq!(
            (grid.start, grid.end),
            (day("2026-12-01"), day("2027-01-01"))
        );
        assert_eq!(grid.days.first(), Some(&day("2026-11-30")));
        assert_eq!(grid.days.last(), Some(&day("2027-01-03")));
        assert_eq!(grid.days.len(), 35);
        assert_eq!(
            (grid.prev, grid.next),
            (day("2026-11-01"), day("2027-01-01"))
        );
        // February 2027 starts on a Monday and fills exactly four weeks.
        let feb = Grid::of(View::Month, day("2027-02-28"));
        assert_eq!(feb.days.len(), 28);
        assert_eq!(feb.days[0], day("2027-02-01"));
        // A month of six weeks: August 2026 starts on a Saturday.
        assert_eq!(Grid::of(View::Month, day("2026-08-01")).days.len(), 42);
        // Stepping back from March lands on February's first, whatever the day.
        assert_eq!(
            Grid::of(View::Month, day("2027-03-31")).prev,
            day("2027-02-01")
        );
    }

    #[test]
    fn bounds_are_local_midnights_across_a_clock_change() {
        let tz: Tz = "America/New_York".parse().unwrap();
        // The week of 2 to 8 March 2026; the clocks go forward on the 8th.
        let grid = Grid::of(View::Week, day("2026-03-04"));
        let (from, until) = grid.bounds(tz);
        assert_eq!(
            from,
            "2026-03-02T05:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert_eq!(
            until,
            "2026-03-09T04:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn a_post_sits_where_it_goes_out() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let mut post = PostSummary {
            id: airlock_core::PostId(1),
            status: PostStatus::Approved,
            channel: ChannelName::parse("cats").unwrap(),
            title: None,
            excerpt: String::new(),
            scheduled_at: at("2026-12-01T00:00:00Z"),
            not_before: None,
            posted_at: None,
            updated_at: at("2026-12-01T00:00:00Z"),
            test: false,
            quarantined_at: None,
        };
        assert_eq!(placed_at(&post), at("2026-12-01T00:00:00Z"));
        post.not_before = Some(at("2026-12-02T00:00:00Z"));
        assert_eq!(placed_at(&post), at("2026-12-02T00:00:00Z"), "held");
        post.status = PostStatus::Posted;
        post.posted_at = Some(at("2026-12-03T00:00:00Z"));
        assert_eq!(placed_at(&post), at("2026-12-03T00:00:00Z"), "published");
        post.status = PostStatus::Draft;
        assert_eq!(placed_at(&post), at("2026-12-01T00:00:00Z"));
    }
}
