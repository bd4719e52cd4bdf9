//! The dashboard's actions: one `POST` form each, calling one operation of
//! [`airlock_app::App`] as the signed-in operator, then redirecting back (303, so a
//! reload never repeats the action) with the result or the app's refusal as a flash.
//!
//! The app's error texts say what happened and what to do; they are shown as they are.
//! CSRF was checked before any of these run ([`crate::guard::csrf`]).

use axum::Form;
use axum::extract::{Path, RawForm, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use airlock_app::posts::EditInput;
use airlock_app::review::{Resolution, Resumed};
use airlock_app::{Error, Result};
use airlock_core::{PostId, PostStatus};

use crate::auth::Operator;
use crate::form::{Fields, media_of, rows_of, text_area};
use crate::session::{Dashboard, Flash};
use crate::view::{local, local_rfc3339, safe_back};
use crate::zone;

/// A form with nothing but where to go back to.
#[derive(Debug, Deserialize)]
pub struct BackForm {
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `approve`: the content hash the operator read on the post page (a hidden field), so
/// that a post changed since is not approved.
#[derive(Debug, Deserialize)]
pub struct ApproveForm {
    /// The content hash the page showed.
    #[serde(default)]
    pub content_hash: Option<String>,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `reject`: a reason, and the content hash the page showed.
#[derive(Debug, Deserialize)]
pub struct RejectForm {
    /// Why (required by the app); it may start with the rubric item it names (`tone: ...`).
    #[serde(default)]
    pub reason: String,
    /// The content hash the page showed.
    #[serde(default)]
    pub content_hash: Option<String>,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `resolve`: the verdict and, when it went out, optionally where.
#[derive(Debug, Deserialize)]
pub struct ResolveForm {
    /// `published` or `not_published`.
    #[serde(default)]
    pub outcome: String,
    /// The permalink a person found (optional).
    #[serde(default)]
    pub permalink: String,
    /// The platform's id of the part in doubt (a part of a thread that is not the last).
    #[serde(default)]
    pub platform_post_id: String,
    /// Non-empty: resume the post's channel too, once it is settled (the second button,
    /// as `airlock post resolve --resume`).
    #[serde(default)]
    pub resume: String,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `note`: the note.
#[derive(Debug, Deserialize)]
pub struct NoteForm {
    /// 1-2000 characters.
    #[serde(default)]
    pub note: String,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `pause`: a channel (empty: everything) and a reason.
#[derive(Debug, Deserialize)]
pub struct PauseForm {
    /// A channel, or empty for all publishing.
    #[serde(default)]
    pub channel: String,
    /// Why (required by the app).
    #[serde(default)]
    pub reason: String,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `resume`: a channel (empty: everything).
#[derive(Debug, Deserialize)]
pub struct ResumeForm {
    /// A channel, or empty for all publishing.
    #[serde(default)]
    pub channel: String,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `POST /posts/{id}/approve`: a pass verdict on the content hash the page showed.
pub async fn approve(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<ApproveForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        let hash = form.content_hash.filter(|h| !h.trim().is_empty());
        let post = d.app().approve_hash(who, id, hash).await?;
        if post.status != PostStatus::Approved {
            return Ok(format!(
                "Passed post #{id}: it stays a draft until enough other critics pass the same content"
            ));
        }
        let tz = tz_of(d, &post.content.channel);
        let when = if post.scheduled_at <= d.app().now() {
            "it is due now and goes out on the next dispatch pass".to_owned()
        } else {
            format!("it goes out at {}", local(post.scheduled_at, tz))
        };
        Ok(format!("Approved post #{id}: {when} (or publish it now)"))
    })
    .await
}

/// `POST /posts/{id}/reject`.
pub async fn reject(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<RejectForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        let hash = form.content_hash.filter(|h| !h.trim().is_empty());
        let post = d.app().reject_hash(who, id, &form.reason, hash).await?;
        Ok(if post.is_quarantined() {
            format!(
                "Rejected post #{id}: that was its last failed review, so it is quarantined until an operator releases or discards it"
            )
        } else {
            format!("Rejected post #{id}: it is a draft again, with your reason for its writer")
        })
    })
    .await
}

/// `POST /posts/{id}/release`: a quarantined post becomes a plain draft again.
pub async fn release(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<BackForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        d.app().release(who, id).await?;
        Ok(format!(
            "Released post #{id}: it is a draft again for its writer to revise, its failed reviews forgotten"
        ))
    })
    .await
}

/// `POST /posts/{id}/discard`: a draft (a quarantined one included) is discarded; its
/// events and verdicts stay in the ledger.
pub async fn discard(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<BackForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    let back = Some(
        form.back
            .filter(|b| !b.starts_with(&format!("/posts/{}", id.trim())))
            .unwrap_or_else(|| "/review".to_owned()),
    );
    run_on_post(&dash, &op, &id, back, |id| async move {
        d.app().discard(who, id).await?;
        Ok(format!(
            "Discarded post #{id}: its timeline and verdicts stay in the ledger"
        ))
    })
    .await
}

/// `POST /posts/{id}/unapprove`.
pub async fn unapprove(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<BackForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        d.app().unapprove(who, id).await?;
        Ok(format!(
            "Withdrew the approval of post #{id}: it is a draft again"
        ))
    })
    .await
}

/// `POST /posts/{id}/edit`: changes the fields that differ from the post.
///
/// The form's fields: `text`, `title` and `link` (empty clears them), part 1's media as
/// `p1_url` / `p1_alt` rows, and the schedule as `date` and `time` in the channel's zone
/// (both empty: now). A form from before the pickers sends `scheduled_at` (RFC 3339 or
/// `now`) instead, and is still taken.
pub async fn edit(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    RawForm(body): RawForm,
) -> Response {
    let form = Fields::parse(&body);
    let (d, who) = (&dash, &op.principal);
    let back = form.get("back").map(str::to_owned);
    run_on_post(&dash, &op, &id, back, |id| async move {
        let post = d.app().get_post(who, id).await?.post;
        let tz = tz_of(d, &post.content.channel);
        let text = text_area(&form.text("text"));
        let title = form.text("title").trim().to_owned();
        let link = form.text("link").trim().to_owned();
        let scheduled_at = if form.has("date") || form.has("time") {
            let (date, time) = (form.text("date"), form.text("time"));
            if zone::inputs(post.scheduled_at, tz)
                == (date.trim().to_owned(), time.trim().to_owned())
            {
                None
            } else {
                Some(
                    zone::parse_local(&date, &time, tz)
                        .map_err(Error::Invalid)?
                        .map_or_else(|| "now".to_owned(), |at| at.to_rfc3339()),
                )
            }
        } else {
            let raw = form.text("scheduled_at").trim().to_owned();
            (!raw.is_empty() && raw != local_rfc3339(post.scheduled_at, tz)).then_some(raw)
        };
        let media = if form.has("p1_url") {
            let media = media_of(&form.media_rows(1), 1).map_err(Error::Invalid)?;
            (rows_of(&media) != rows_of(&post.content.media)).then_some(media)
        } else {
            None
        };
        let input = EditInput {
            text: (text != post.content.text).then_some(text),
            title: (title != post.content.title.clone().unwrap_or_default()).then_some(title),
            media,
            link: (link != post.content.link.clone().unwrap_or_default()).then_some(link),
            scheduled_at,
            ..EditInput::default()
        };
        if input == EditInput::default() {
            return Err(Error::Invalid(format!(
                "nothing changed on post #{id}: edit a field before saving"
            )));
        }
        let was_approved = post.status == PostStatus::Approved;
        d.app().edit_post(who, id, input).await?;
        Ok(if was_approved {
            format!("Saved post #{id}; its approval was withdrawn, so it needs approving again")
        } else {
            format!("Saved post #{id}")
        })
    })
    .await
}

/// `move`: where to, as the calendar's pickers send it, in the post's channel zone.
#[derive(Debug, Deserialize)]
pub struct MoveForm {
    /// `YYYY-MM-DD`.
    #[serde(default)]
    pub date: String,
    /// `HH:MM`.
    #[serde(default)]
    pub time: String,
    /// A local path to return to.
    #[serde(default)]
    pub back: Option<String>,
}

/// `POST /posts/{id}/move`: a new schedule for a draft or an approved post, from the
/// calendar. Moving an approved post withdraws its approval (the app's rule for every
/// edit), and the message says so.
pub async fn move_post(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<MoveForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    let fallback = Some("/calendar".to_owned());
    run_on_post(&dash, &op, &id, form.back.or(fallback), |id| async move {
        let post = d.app().get_post(who, id).await?.post;
        let tz = tz_of(d, &post.content.channel);
        let at = zone::parse_local(&form.date, &form.time, tz)
            .map_err(Error::Invalid)?
            .ok_or_else(|| {
                Error::Invalid(format!("pick a date and a time to move post #{id} to"))
            })?;
        if zone::inputs(at, tz) == zone::inputs(post.scheduled_at, tz) {
            return Err(Error::Invalid(format!(
                "post #{id} is already scheduled at {}: pick another time",
                local(post.scheduled_at, tz)
            )));
        }
        let input = EditInput {
            scheduled_at: Some(at.to_rfc3339()),
            ..EditInput::default()
        };
        let moved = d.app().edit_post(who, id, input).await?;
        let withdrawn = post.status == PostStatus::Approved && moved.status != PostStatus::Approved;
        Ok(if withdrawn {
            format!(
                "Moved post #{id} to {}; its approval was withdrawn, so it goes back to review before it can go out",
                local(at, tz)
            )
        } else {
            format!("Moved post #{id} to {}", local(at, tz))
        })
    })
    .await
}

/// `POST /posts/{id}/publish`: publishes an approved post now, through the guarded path.
pub async fn publish(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<BackForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        let post = d.app().publish_now(who, id).await?;
        Ok(format!(
            "Published post #{id} on {}{}",
            post.content.channel,
            post.permalink.map(|p| format!(": {p}")).unwrap_or_default()
        ))
    })
    .await
}

/// `POST /posts/{id}/requeue`: a failed post goes back to approved.
pub async fn requeue(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<BackForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        d.app().requeue(who, id).await?;
        Ok(format!(
            "Requeued post #{id}: it is approved again and goes out when due"
        ))
    })
    .await
}

/// `POST /posts/{id}/resolve`: a person's verdict on a `needs_review` post.
pub async fn resolve(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<ResolveForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        let resolution = match form.outcome.as_str() {
            "published" => Resolution::Published {
                permalink: Some(form.permalink.trim().to_owned()).filter(|p| !p.is_empty()),
                platform_post_id: Some(form.platform_post_id.trim().to_owned())
                    .filter(|p| !p.is_empty()),
            },
            "not_published" => Resolution::NotPublished,
            _ => {
                return Err(Error::Invalid(
                    "choose whether the post went out or not".into(),
                ));
            }
        };
        let published = matches!(resolution, Resolution::Published { .. });
        let resume = !form.resume.trim().is_empty();
        let (post, resumed) = if resume {
            let (post, resumed) = d.app().resolve_and_resume(who, id, resolution).await?;
            (post, Some(resumed))
        } else {
            (d.app().resolve(who, id, resolution).await?, None)
        };
        let mut message = if published && post.status == PostStatus::Approved {
            // A part that is not the last: the post is approved again for the next one.
            format!("Marked the part of post #{id} in doubt as published: the next part goes out when due, once the channel is resumed")
        } else if published {
            format!("Marked post #{id} as published: its quota slot stays counted")
        } else {
            format!("Marked post #{id} as not published: it is failed now; requeue it to try again")
        };
        let channel = post.content.channel.as_str();
        match resumed {
            Some(Resumed::Resumed) => message.push_str(&format!(". Resumed {channel}")),
            Some(Resumed::NotPaused) => message.push_str(&format!(". {channel} was not paused")),
            // Settled either way: what still holds the channel is said below.
            Some(Resumed::Held(_)) => message.push_str(&format!(". {channel} was not resumed")),
            None => {}
        }
        if let Some(left) = still_paused(d, who, channel, id).await {
            message.push_str(&format!(". {left}"));
        }
        Ok(message)
    })
    .await
}

/// What still holds `channel` after post `settled` was resolved, as the one step left in
/// the dashboard's terms: another post in doubt to settle, or a pause to resume on the
/// queue. `None` when nothing holds it (or the ledger cannot say now: the resolve
/// itself is done either way).
async fn still_paused(
    dash: &Dashboard,
    who: &airlock_app::Principal,
    channel: &str,
    settled: PostId,
) -> Option<String> {
    let pauses = dash.app().pauses(who).await.ok()?;
    if pauses.iter().any(|p| p.scope == "*") {
        return Some(
            "All publishing stays paused: resume it on the queue when you are ready".to_owned(),
        );
    }
    if !pauses.iter().any(|p| p.scope == channel) {
        return None;
    }
    let filter = airlock_app::PostFilter {
        status: Some(PostStatus::NeedsReview),
        channel: airlock_core::ChannelName::parse(channel).ok(),
        limit: Some(2),
        ..airlock_app::PostFilter::default()
    };
    let waiting = dash
        .app()
        .list_summaries(who, &filter, 0)
        .await
        .ok()?
        .into_iter()
        .map(|p| p.id)
        .find(|id| *id != settled);
    Some(match waiting {
        Some(next) => format!(
            "{channel} stays paused: post #{next} on it still needs review; settle it, then resume {channel}"
        ),
        None => format!(
            "{channel} stays paused: nothing on it is in doubt now, resume it on the queue when you are ready"
        ),
    })
}

/// `POST /posts/{id}/note`.
pub async fn note(
    State(dash): State<Dashboard>,
    op: Operator,
    Path(id): Path<String>,
    Form(form): Form<NoteForm>,
) -> Response {
    let (d, who) = (&dash, &op.principal);
    run_on_post(&dash, &op, &id, form.back, |id| async move {
        d.app().add_note(who, id, &form.note).await?;
        Ok(format!("Added a note to post #{id}"))
    })
    .await
}

/// `POST /pause`: pauses one channel or all publishing, with a reason.
pub async fn pause(
    State(dash): State<Dashboard>,
    op: Operator,
    Form(form): Form<PauseForm>,
) -> Response {
    let channel = Some(form.channel.trim()).filter(|c| !c.is_empty());
    let label = scope_label(channel);
    let result = dash
        .app()
        .pause(&op.principal, channel, &form.reason)
        .await
        .map(|paused| {
            if paused {
                format!("Paused {label}: {}", form.reason.trim())
            } else {
                format!("{label} was already paused")
            }
        });
    finish(&dash, &op, form.back.as_deref(), "/".to_owned(), result)
}

/// `POST /resume`: lifts the pause of one channel or of all publishing.
pub async fn resume(
    State(dash): State<Dashboard>,
    op: Operator,
    Form(form): Form<ResumeForm>,
) -> Response {
    let channel = Some(form.channel.trim()).filter(|c| !c.is_empty());
    let label = scope_label(channel);
    let result = dash
        .app()
        .resume(&op.principal, channel)
        .await
        .map(|resumed| {
            if resumed {
                format!("Resumed {label}")
            } else {
                format!("{label} was not paused")
            }
        });
    finish(&dash, &op, form.back.as_deref(), "/".to_owned(), result)
}

fn scope_label(channel: Option<&str>) -> String {
    match channel {
        Some(name) => format!("channel {name}"),
        None => "all publishing".to_owned(),
    }
}

fn tz_of(dash: &Dashboard, channel: &airlock_core::ChannelName) -> chrono_tz::Tz {
    dash.app()
        .settings()
        .channels
        .get(channel)
        .map(|c| c.timezone)
        .unwrap_or(dash.app().settings().timezone)
}

/// Parses the post id, runs `act`, flashes its message or error, redirects back.
async fn run_on_post<F, Fut>(
    dash: &Dashboard,
    op: &Operator,
    id: &str,
    back: Option<String>,
    act: F,
) -> Response
where
    F: FnOnce(PostId) -> Fut,
    Fut: Future<Output = Result<String>>,
{
    let result = match id.parse::<PostId>() {
        Ok(id) => act(id).await,
        Err(e) => Err(Error::Invalid(e.to_string())),
    };
    let fallback = match id.parse::<PostId>() {
        Ok(id) => format!("/posts/{id}"),
        Err(_) => "/".to_owned(),
    };
    finish(dash, op, back.as_deref(), fallback, result)
}

fn finish(
    dash: &Dashboard,
    op: &Operator,
    back: Option<&str>,
    fallback: String,
    result: Result<String>,
) -> Response {
    let flash = match result {
        Ok(message) => Flash::done(message),
        Err(e) if e.is_refusal() => Flash::refused(format!("Not done: {e}")),
        Err(e) => Flash::refused(format!("Failed: {e}")),
    };
    dash.flash(&op.session, flash);
    Redirect::to(&safe_back(back, fallback)).into_response()
}
