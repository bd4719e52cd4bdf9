//! Composing a post (`GET /compose`, `POST /compose`) and its check (`POST
//! /compose/check`, the panel alone, for the script).
//!
//! The form has the channel, a title, each part of a thread with its media (URL and alt
//! text rows), a first comment, a link, and the schedule as a date and a time in the
//! channel's zone. Its buttons say what to do (`intent`):
//!
//! - `check`: [`airlock_app::App::check_draft`] on what the form holds, shown beside it
//!   with the channel's rules and a preview as the platform would get it: each part
//!   numbered, its length as the platform counts it against the limit, its media. Nothing
//!   is written. The script does the same as the operator types, through `/compose/check`.
//! - `save`: [`airlock_app::App::create_post`] as the signed-in operator, so the draft
//!   carries the operator's name and goes through review like any other. A refusal
//!   (invalid, a duplicate, the drafts limit) shows on the page, the form as it was.
//! - `add_part`, `remove_part`: one more part, or one fewer, without JavaScript.
//!
//! The form carries a random idempotency key from the moment it is opened, so a Save
//! sent twice (a double click, a resent form) drafts one post.

use std::borrow::Cow;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, RawForm, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Deserialize;

use airlock_app::check::{Blocks, DraftCheck};
use airlock_app::posts::{DraftInput, DraftOrigin};
use airlock_app::{ChannelSettings, Error};
use airlock_core::policy::{VideoRule, with_appended_link};
use airlock_core::{Media, Part};

use super::error::app_error_page;
use super::parts::{Layout, layout, review_count};
use crate::auth::Operator;
use crate::form::{Fields, MAX_FORM_PARTS, MediaRow, rows_of, text_area};
use crate::session::{Dashboard, Flash};
use crate::view::{local, relative};
use crate::zone;

/// `GET /compose`, and the page a `POST /compose` that does not save renders.
#[derive(Template, WebTemplate)]
#[template(path = "compose.html")]
pub struct ComposePage {
    /// Frame.
    pub layout: Layout,
    /// Every channel, for the picker.
    pub channels: Vec<ChannelChoice>,
    /// What the form holds.
    pub form: ComposeForm,
    /// The rules, the check and the preview.
    pub panel: CheckPanel,
}

/// `POST /compose/check`: the panel alone, for the script to swap in.
#[derive(Template, WebTemplate)]
#[template(path = "compose_panel.html")]
pub struct CheckFragment {
    /// The rules, the check and the preview.
    pub panel: CheckPanel,
}

/// A channel in the picker.
#[derive(Debug, Clone)]
pub struct ChannelChoice {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Its zone.
    pub timezone: String,
    /// Chosen.
    pub selected: bool,
}

/// The form's values, as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComposeForm {
    /// The channel.
    pub channel: String,
    /// Title (articles).
    pub title: String,
    /// Each part, from 1.
    pub parts: Vec<PartForm>,
    /// The first comment.
    pub first_comment: String,
    /// The link.
    pub link: String,
    /// The schedule's date in the channel's zone (`YYYY-MM-DD`), or empty for now.
    pub date: String,
    /// Its time (`HH:MM`), or empty for now.
    pub time: String,
    /// The idempotency key of this form's Save.
    pub key: String,
}

/// One part of the form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartForm {
    /// Its text.
    pub text: String,
    /// Its media rows, as typed.
    pub media: Vec<MediaRow>,
}

/// The panel beside the form: the channel's rules, and the check of what the form holds.
#[derive(Debug, Clone, Default)]
pub struct CheckPanel {
    /// The channel (`""`: none chosen or unknown).
    pub channel: String,
    /// Its kind.
    pub kind: String,
    /// Its zone, which the date and time are in.
    pub timezone: String,
    /// Its rules, for people.
    pub rules: Vec<String>,
    /// Why the form was not saved, if it was not.
    pub refusal: Option<String>,
    /// The check, when one ran.
    pub check: Option<CheckView>,
}

/// What [`airlock_app::App::check_draft`] said, for people.
#[derive(Debug, Clone, Default)]
pub struct CheckView {
    /// `ok`, `warn` or `bad` (CSS).
    pub class: &'static str,
    /// `Ready for review`, ...
    pub verdict: String,
    /// Every problem.
    pub problems: Vec<Problem>,
    /// Each part as the platform would get it.
    pub preview: Vec<PreviewPart>,
    /// The title, for article channels.
    pub title: Option<String>,
    /// The link, when the channel does not append it to the text.
    pub link: Option<String>,
    /// When it would go out.
    pub when: String,
    /// What it would cost, on channels with a money budget.
    pub cost: Option<String>,
    /// The channel's next free quota slot.
    pub next_slot: String,
    /// `1 of 5 today`.
    pub daily: String,
    /// Approved posts of the channel waiting for a slot.
    pub waiting: usize,
    /// Why the channel is paused, if it is.
    pub paused: Option<String>,
}

/// One problem the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong and what to change.
    pub message: String,
    /// `stops the draft`, `stops approval`, `stops publishing`.
    pub blocks: &'static str,
    /// `draft`, `approval`, `publish` (CSS).
    pub class: &'static str,
}

impl Problem {
    /// A problem the check reported.
    pub fn of(blocks: Blocks, message: String) -> Self {
        let (label, class) = match blocks {
            Blocks::Draft => ("stops the draft", "draft"),
            Blocks::Approval => ("stops approval", "approval"),
            Blocks::Publish => ("stops publishing", "publish"),
        };
        Problem {
            message,
            blocks: label,
            class,
        }
    }
}

/// A part as it would be sent.
#[derive(Debug, Clone)]
pub struct PreviewPart {
    /// `1/3`, `First comment`, or empty for a single post.
    pub label: String,
    /// The text as sent (a link the channel appends included).
    pub text: String,
    /// `231 / 280`.
    pub length: String,
    /// Whether it fits.
    pub fits: bool,
    /// Its media.
    pub media: Vec<MediaRow>,
}

impl ComposeForm {
    /// The form a channel opens with: one empty part, a fresh key.
    pub fn new(channel: &str) -> Self {
        ComposeForm {
            channel: channel.to_owned(),
            parts: vec![PartForm::default()],
            key: fresh_key(),
            ..ComposeForm::default()
        }
    }

    /// Reads the form's fields: parts `p1_text`, `p2_text`, ... while they come, each
    /// with its `p{n}_url` / `p{n}_alt` rows.
    pub fn read(fields: &Fields) -> Self {
        let mut parts = Vec::new();
        for n in 1..=MAX_FORM_PARTS {
            let Some(text) = fields.get(&format!("p{n}_text")) else {
                break;
            };
            parts.push(PartForm {
                text: text_area(text),
                media: fields.media_rows(n),
            });
        }
        if parts.is_empty() {
            parts.push(PartForm::default());
        }
        let key = fields.text("key").trim().to_owned();
        ComposeForm {
            channel: fields.text("channel").trim().to_owned(),
            title: fields.text("title"),
            parts,
            first_comment: text_area(&fields.text("first_comment")),
            link: fields.text("link").trim().to_owned(),
            date: fields.text("date").trim().to_owned(),
            time: fields.text("time").trim().to_owned(),
            key: if key.is_empty() { fresh_key() } else { key },
        }
    }

    /// The draft the form describes, read in the channel's zone `tz`, and what in the
    /// form cannot be read (a half-filled media row, a time that does not exist): those
    /// are left out of the draft and reported.
    ///
    /// Parts after the first that hold nothing are left out; a single part is the post's
    /// text and media, several are its `parts`.
    pub fn draft(&self, tz: Tz) -> (DraftInput, Vec<String>) {
        let mut problems = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        for (index, part) in self.parts.iter().enumerate() {
            let n = index + 1;
            let mut media = Vec::new();
            for (i, row) in part.media.iter().enumerate() {
                match (row.url.is_empty(), row.alt.is_empty()) {
                    (true, true) => {}
                    (true, false) => problems.push(format!(
                        "media item {} of part {n} has alt text but no URL: add the URL or clear the alt text",
                        i + 1
                    )),
                    (false, _) => media.push(Media::new(
                        row.url.clone(),
                        Some(row.alt.clone()).filter(|a| !a.is_empty()),
                    )),
                }
            }
            if n > 1 && part.text.trim().is_empty() && media.is_empty() {
                continue;
            }
            parts.push(Part {
                text: part.text.clone(),
                media,
            });
        }
        let scheduled_at = match zone::parse_local(&self.date, &self.time, tz) {
            Ok(at) => at.map(|at| at.to_rfc3339()),
            Err(e) => {
                problems.push(e);
                None
            }
        };
        let mut input = DraftInput {
            channel: self.channel.clone(),
            title: Some(self.title.trim().to_owned()).filter(|t| !t.is_empty()),
            first_comment: Some(self.first_comment.clone()).filter(|c| !c.trim().is_empty()),
            link: Some(self.link.clone()).filter(|l| !l.is_empty()),
            scheduled_at,
            ..DraftInput::default()
        };
        if parts.len() > 1 {
            input.parts = Some(parts);
        } else if let Some(first) = parts.pop() {
            input.text = first.text;
            input.media = first.media;
        }
        (input, problems)
    }

    /// The media rows the form shows for each part: those typed, then a blank one.
    pub fn with_blank_rows(mut self) -> Self {
        for part in &mut self.parts {
            part.media
                .retain(|r| !(r.url.is_empty() && r.alt.is_empty()));
            part.media.push(MediaRow::default());
        }
        self
    }
}

/// A random idempotency key for one form's Save (128 bits, hex).
fn fresh_key() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    format!("compose-{}", hex::encode(bytes))
}

/// A channel's rules, for people: its length and phrase rules, what it takes (titles,
/// media, threads, comments), its quota and its review.
pub fn rules_of(channel: &ChannelSettings) -> Vec<String> {
    let policy = &channel.policy;
    let mut rules = Vec::new();
    if let Some(max) = policy.max_chars {
        rules.push(format!("At most {max} {} a part", policy.unit.describe()));
    }
    if let Some(max) = policy.max_bytes {
        rules.push(format!("At most {max} bytes of UTF-8 a part"));
    }
    if policy.appends_link {
        rules.push("The link is sent at the end of the text, and counts in its length".into());
    }
    for phrase in &policy.required {
        rules.push(format!("Must contain “{phrase}”"));
    }
    for phrase in &policy.forbidden {
        rules.push(format!("Must not contain “{phrase}”"));
    }
    if policy.require_title {
        rules.push("Needs a title".into());
    }
    if policy.require_media {
        rules.push("Needs an image".into());
    }
    if let Some(max) = policy.max_media {
        rules.push(format!("At most {max} media items a part"));
    }
    if policy.jpeg_only {
        rules.push("Images must be JPEG (.jpg, .jpeg)".into());
    }
    if !policy.image_types.is_empty() {
        rules.push(format!("Images of type {}", policy.image_types.join(", ")));
    }
    rules.push(match policy.video {
        VideoRule::None => "No video".to_owned(),
        VideoRule::Alone => "A video goes alone in its part".to_owned(),
        VideoRule::InAlbums => "Videos may go with images".to_owned(),
    });
    for (max, what) in [
        (policy.max_hashtags, "#hashtags"),
        (policy.max_mentions, "@mentions"),
        (policy.max_links, "links in the text"),
    ] {
        if let Some(max) = max {
            rules.push(format!("At most {max} {what}"));
        }
    }
    rules.push(if policy.max_parts <= 1 {
        "Single posts only, no threads".to_owned()
    } else {
        format!("Threads of up to {} parts", policy.max_parts)
    });
    rules.push(if policy.first_comment {
        "Takes a first comment".to_owned()
    } else {
        "Takes no first comment".to_owned()
    });
    rules.push(format!(
        "At most {} a day in {}",
        channel.daily_limit, channel.timezone
    ));
    let approvals = channel.review.rules.approvals_required;
    rules.push(if approvals == 1 {
        "One critic approves it".to_owned()
    } else {
        format!("{approvals} different critics approve it")
    });
    let window = channel.review.duplicate_window;
    if window > chrono::Duration::zero() {
        rules.push(format!(
            "The same text within {} days of another post here is refused",
            window.num_days().max(1)
        ));
    }
    rules
}

/// `?channel=` on `/compose`.
#[derive(Debug, Default, Deserialize)]
pub struct ComposeQuery {
    /// The channel to start with.
    #[serde(default)]
    pub channel: String,
}

/// `GET /compose`.
pub async fn compose(
    State(dash): State<Dashboard>,
    op: Operator,
    Query(query): Query<ComposeQuery>,
) -> Response {
    let app = dash.app();
    let channel = match query.channel.trim() {
        "" => app
            .settings()
            .channels
            .keys()
            .next()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        name => name.to_owned(),
    };
    let form = ComposeForm::new(&channel);
    let panel = panel(&dash, &form.channel, None, None);
    page(&dash, &op, form, panel, StatusCode::OK).await
}

/// `POST /compose`: check, save, or add or remove a part.
pub async fn compose_post(
    State(dash): State<Dashboard>,
    op: Operator,
    RawForm(body): RawForm,
) -> Response {
    let fields = Fields::parse(&body);
    let mut form = ComposeForm::read(&fields);
    match fields.get("intent").unwrap_or("check") {
        "add_part" => {
            form.parts.push(PartForm::default());
            let panel = panel(&dash, &form.channel, None, None);
            page(&dash, &op, form, panel, StatusCode::OK).await
        }
        "remove_part" => {
            if form.parts.len() > 1 {
                form.parts.pop();
            }
            let panel = panel(&dash, &form.channel, None, None);
            page(&dash, &op, form, panel, StatusCode::OK).await
        }
        "save" => save(&dash, &op, form).await,
        _ => {
            let panel = checked(&dash, &op, &form, None).await;
            page(&dash, &op, form, panel, StatusCode::OK).await
        }
    }
}

/// `POST /compose/check`: the panel for what the form holds, for the script.
pub async fn compose_check(
    State(dash): State<Dashboard>,
    op: Operator,
    RawForm(body): RawForm,
) -> Response {
    let form = ComposeForm::read(&Fields::parse(&body));
    CheckFragment {
        panel: checked(&dash, &op, &form, None).await,
    }
    .into_response()
}

async fn save(dash: &Dashboard, op: &Operator, form: ComposeForm) -> Response {
    let app = dash.app();
    let (input, problems) = form.draft(zone_of(dash, &form.channel));
    if let Some(first) = problems.first() {
        let refusal = format!("Not drafted: {first}");
        let panel = checked(dash, op, &form, Some(refusal)).await;
        return page(dash, op, form, panel, StatusCode::BAD_REQUEST).await;
    }
    let key = Some(form.key.clone());
    match app
        .create_post(&op.principal, input, key, DraftOrigin::default())
        .await
    {
        Ok(created) => {
            let id = created.post.id;
            let channel = &created.post.content.channel;
            let message = if created.existing {
                format!("This form already drafted post #{id} on {channel}: here it is")
            } else {
                let tz = zone_of(dash, channel.as_str());
                let when = if created.post.scheduled_at <= app.now() {
                    "due as soon as it is approved".to_owned()
                } else {
                    format!("scheduled for {}", local(created.post.scheduled_at, tz))
                };
                format!(
                    "Drafted post #{id} on {channel}, {when}: it goes through review like any other draft"
                )
            };
            dash.flash(&op.session, Flash::done(message));
            Redirect::to(&format!("/posts/{id}")).into_response()
        }
        Err(e) => {
            let status = refusal_status(&e);
            let refusal = if e.is_refusal() {
                format!("Not drafted: {e}")
            } else {
                format!("Failed: {e}")
            };
            let panel = checked(dash, op, &form, Some(refusal)).await;
            page(dash, op, form, panel, status).await
        }
    }
}

/// The HTTP status a refused save answers with, as the API would.
fn refusal_status(e: &Error) -> StatusCode {
    match e {
        Error::Invalid(_) | Error::Policy(_) => StatusCode::BAD_REQUEST,
        Error::Forbidden(_) => StatusCode::FORBIDDEN,
        Error::NotFound(_) => StatusCode::NOT_FOUND,
        Error::OverQuota { .. } => StatusCode::TOO_MANY_REQUESTS,
        e if e.is_refusal() => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    }
}

async fn page(
    dash: &Dashboard,
    op: &Operator,
    form: ComposeForm,
    panel: CheckPanel,
    status: StatusCode,
) -> Response {
    let app = dash.app();
    let review_count = match review_count(app, op).await {
        Ok(n) => n,
        Err(e) => return app_error_page(e),
    };
    let channels = app
        .settings()
        .channels
        .values()
        .map(|c| ChannelChoice {
            name: c.name.to_string(),
            kind: c.kind.to_string(),
            timezone: c.timezone.name().to_owned(),
            selected: c.name.as_str() == form.channel,
        })
        .collect();
    let page = ComposePage {
        layout: layout(dash, op, "compose", "Compose".to_owned(), review_count),
        channels,
        form: form.with_blank_rows(),
        panel,
    };
    (status, page).into_response()
}

/// The zone a form's date and time are in: its channel's, or the ledger's.
fn zone_of(dash: &Dashboard, channel: &str) -> Tz {
    dash.app()
        .channel(channel)
        .map(|c| c.timezone)
        .unwrap_or(dash.app().settings().timezone)
}

/// The panel without a check: the channel's rules.
fn panel(
    dash: &Dashboard,
    channel: &str,
    refusal: Option<String>,
    check: Option<CheckView>,
) -> CheckPanel {
    let app = dash.app();
    match app.channel(channel) {
        Ok(c) => CheckPanel {
            channel: c.name.to_string(),
            kind: c.kind.to_string(),
            timezone: c.timezone.name().to_owned(),
            rules: rules_of(c),
            refusal,
            check,
        },
        Err(_) => CheckPanel {
            timezone: app.settings().timezone.name().to_owned(),
            refusal,
            check,
            ..CheckPanel::default()
        },
    }
}

/// The panel with the check of what the form holds.
async fn checked(
    dash: &Dashboard,
    op: &Operator,
    form: &ComposeForm,
    refusal: Option<String>,
) -> CheckPanel {
    let app = dash.app();
    let tz = zone_of(dash, &form.channel);
    let (input, form_problems) = form.draft(tz);
    let view = match app.check_draft(&op.principal, input.clone()).await {
        Ok(check) => check_view(dash, &input, &check, &form_problems, tz),
        Err(e) => CheckView {
            class: "bad",
            verdict: "Cannot be checked".to_owned(),
            problems: vec![Problem::of(Blocks::Draft, e.to_string())],
            ..CheckView::default()
        },
    };
    panel(dash, &form.channel, refusal, Some(view))
}

fn check_view(
    dash: &Dashboard,
    input: &DraftInput,
    check: &DraftCheck,
    form_problems: &[String],
    tz: Tz,
) -> CheckView {
    let app = dash.app();
    let now = app.now();
    let mut problems: Vec<Problem> = form_problems
        .iter()
        .map(|p| Problem::of(Blocks::Draft, p.clone()))
        .collect();
    problems.extend(
        check
            .violations
            .iter()
            .map(|v| Problem::of(v.blocks, v.message.clone())),
    );
    let accepted = check.accepted && form_problems.is_empty();
    let (class, verdict) = if !accepted {
        ("bad", "Cannot be drafted yet: fix what stops the draft")
    } else if !check.approvable {
        (
            "warn",
            "Can be drafted, but no critic can approve it until what stops approval is fixed",
        )
    } else if check.violations.is_empty() {
        ("ok", "Ready: save it, and it goes to review")
    } else {
        (
            "warn",
            "Can be drafted and approved, but read what stops publishing",
        )
    };
    let policy = app.channel(&input.channel).map(|c| c.policy.clone()).ok();
    let appends_link = policy.as_ref().is_some_and(|p| p.appends_link);
    let parts: Vec<(Cow<'_, str>, &[Media])> = match &input.parts {
        Some(parts) => parts
            .iter()
            .map(|p| (Cow::Borrowed(p.text.as_str()), p.media.as_slice()))
            .collect(),
        None => vec![(Cow::Borrowed(input.text.as_str()), input.media.as_slice())],
    };
    let n = parts.len();
    let mut preview: Vec<PreviewPart> = parts
        .into_iter()
        .enumerate()
        .map(|(i, (text, media))| {
            let text = if i == 0 && appends_link {
                with_appended_link(&text, input.link.as_deref()).into_owned()
            } else {
                text.into_owned()
            };
            let (length, fits) = length_of(check, i + 1, false);
            PreviewPart {
                label: if n > 1 {
                    format!("{}/{n}", i + 1)
                } else {
                    String::new()
                },
                text,
                length,
                fits,
                media: rows_of(media),
            }
        })
        .collect();
    if let Some(comment) = &input.first_comment {
        let (length, fits) = length_of(check, n + 1, true);
        preview.push(PreviewPart {
            label: "First comment".to_owned(),
            text: comment.clone(),
            length,
            fits,
            media: Vec::new(),
        });
    }
    let when = match check.scheduled_at {
        Some(at) if at > now => format!("{} ({})", local(at, tz), relative(at, now)),
        Some(_) => "now: it is due as soon as it is approved".to_owned(),
        None => "the schedule does not read".to_owned(),
    };
    CheckView {
        class,
        verdict: verdict.to_owned(),
        problems,
        preview,
        title: input.title.clone(),
        link: input.link.clone().filter(|_| !appends_link),
        when,
        cost: check.cost.as_ref().map(|cost| {
            format!(
                "{} of this month's budget of {} ({} spent)",
                usd(cost.usd),
                usd(cost.budget.budget_usd),
                usd(cost.budget.used_usd)
            )
        }),
        next_slot: slot(check.quota.next_slot_at, now, tz),
        daily: format!(
            "{} of {} today",
            check.quota.daily.used, check.quota.daily.limit
        ),
        waiting: check.quota.waiting,
        paused: check.pause_reason.clone(),
    }
}

/// `231 / 280 characters` and whether it fits, for a part (or the first comment).
fn length_of(check: &DraftCheck, part: usize, first_comment: bool) -> (String, bool) {
    match check
        .lengths
        .iter()
        .find(|l| l.part == part && l.first_comment == first_comment)
    {
        Some(l) => (
            match l.max_chars {
                Some(max) => format!("{} / {max} {}", l.length, check.length_unit),
                None => format!("{} {}", l.length, check.length_unit),
            },
            l.fits,
        ),
        None => (String::new(), true),
    }
}

fn usd(dollars: f64) -> String {
    airlock_core::budget::format_usd((dollars * 1_000_000.0).round().max(0.0) as u64)
}

fn slot(at: Option<DateTime<Utc>>, now: DateTime<Utc>, tz: Tz) -> String {
    match at {
        Some(at) if at > now => format!("{} ({})", local(at, tz), relative(at, now)),
        _ => "now".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokyo() -> Tz {
        "Asia/Tokyo".parse().unwrap()
    }

    fn read(body: &str) -> ComposeForm {
        ComposeForm::read(&Fields::parse(body.as_bytes()))
    }

    #[test]
    fn one_part_is_a_single_post_with_its_media_and_schedule() {
        let form = read(
            "channel=cats&title=&p1_text=Hello%0D%0Acats&p1_url=https%3A%2F%2Fa.example%2F1.jpg&p1_alt=A+cat&p1_url=&p1_alt=&first_comment=&link=&date=2026-12-02&time=09%3A30&key=k1",
        );
        assert_eq!(form.key, "k1");
        let (input, problems) = form.draft(tokyo());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(input.channel, "cats");
        assert_eq!(input.text, "Hello\ncats", "CRLF becomes LF");
        assert_eq!(input.media.len(), 1);
        assert_eq!(input.media[0].alt.as_deref(), Some("A cat"));
        assert_eq!((input.parts, input.title, input.link), (None, None, None));
        assert_eq!(input.first_comment, None);
        assert_eq!(
            input.scheduled_at.as_deref(),
            Some("2026-12-02T00:30:00+00:00")
        );
    }

    #[test]
    fn several_parts_are_a_thread_and_empty_trailing_parts_drop() {
        let form = read(
            "channel=cats&p1_text=one&p2_text=two&p2_url=https%3A%2F%2Fa.example%2F2.jpg&p2_alt=&p3_text=+&first_comment=Hi&link=https%3A%2F%2Finn.example%2F&date=&time=",
        );
        assert!(form.key.starts_with("compose-"), "a fresh key");
        let (input, problems) = form.draft(tokyo());
        assert!(problems.is_empty());
        let parts = input.parts.unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].text, "two");
        assert_eq!(parts[1].media[0].url, "https://a.example/2.jpg");
        assert_eq!(input.text, "");
        assert_eq!(input.first_comment.as_deref(), Some("Hi"));
        assert_eq!(input.link.as_deref(), Some("https://inn.example/"));
        assert_eq!(input.scheduled_at, None, "now");
    }

    #[test]
    fn what_cannot_be_read_is_reported_and_left_out() {
        let ny: Tz = "America/New_York".parse().unwrap();
        let form = read("channel=inn&p1_text=x&p1_url=&p1_alt=lonely&date=2026-03-08&time=02:30");
        let (input, problems) = form.draft(ny);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("media item 1 of part 1 has alt text but no URL"));
        assert!(problems[1].contains("does not exist in America/New_York"));
        assert!(input.media.is_empty());
        assert_eq!(input.scheduled_at, None);
    }

    #[test]
    fn the_form_shows_one_blank_media_row_a_part() {
        let form = read("p1_text=a&p1_url=u&p1_alt=&p1_url=&p1_alt=&p2_text=b").with_blank_rows();
        assert_eq!(form.parts[0].media.len(), 2);
        assert_eq!(form.parts[0].media[1], MediaRow::default());
        assert_eq!(form.parts[1].media, vec![MediaRow::default()]);
    }

    #[test]
    fn rules_say_what_the_channel_takes() {
        let mut channel = ChannelSettings::new(
            airlock_core::ChannelName::parse("inn").unwrap(),
            airlock_core::ChannelKind::Sandbox,
            4,
            tokyo(),
        );
        channel.policy.max_chars = Some(120);
        channel.policy.required = vec!["#inn".into()];
        channel.policy.forbidden = vec!["free".into()];
        let rules = rules_of(&channel);
        assert!(
            rules.contains(&"At most 120 characters a part".to_owned()),
            "{rules:?}"
        );
        assert!(rules.contains(&"Must contain “#inn”".to_owned()));
        assert!(rules.contains(&"Must not contain “free”".to_owned()));
        assert!(rules.contains(&"At most 4 a day in Asia/Tokyo".to_owned()));
        assert!(rules.contains(&"One critic approves it".to_owned()));
        assert!(
            rules.contains(
                &"The same text within 7 days of another post here is refused".to_owned()
            )
        );
    }
}
