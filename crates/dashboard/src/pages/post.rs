//! A post (`GET /posts/{id}`): its content and facts, the timeline, intents and
//! reservations, its verdicts against the channel's rubric, the review state, and the
//! actions its state offers.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use airlock_app::check::CheckViolation;
use airlock_app::{App, Error};
use airlock_core::{PostDetail, PostId, PostStatus};

use super::compose::Problem;
use super::error::{app_error_page, error_page};
use super::parts::{
    EventRow, InDoubt, IntentRow, Layout, PostView, ReservationRow, VerdictRow, channel_tz,
    event_rows, in_doubt, intent_rows, layout, post_view, reservation_rows, resume_offer,
    review_count, verdict_rows,
};
use crate::auth::Operator;
use crate::form::{MediaRow, rows_of};
use crate::session::Dashboard;

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
    /// Which part is in doubt, for a post of several parts.
    pub doubt: Option<InDoubt>,
    /// Reservations.
    pub reservations: Vec<ReservationRow>,
    /// Verdicts, oldest first.
    pub verdicts: Vec<VerdictRow>,
    /// The rubric, approvals and revisions.
    pub review: ReviewView,
    /// Offered actions.
    pub actions: Actions,
    /// What in the content breaks the channel's rules, for a draft or an approved post:
    /// the check approval makes, shown before anyone presses Approve.
    pub rule_problems: Vec<Problem>,
    /// The edit form's media rows: part 1's items, then blank rows to add more.
    pub edit_media: Vec<MediaRow>,
    /// Where actions return.
    pub back: String,
    /// The channel a resolve may resume in the same action (see the inbox).
    pub resume: Option<String>,
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
    let resume = if actions.resolve {
        let explained = app.explained_pauses(who).await?;
        resume_offer(app, op, &explained, &detail.post).await?
    } else {
        None
    };
    let layout = layout(dash, op, "post", format!("Post #{id}"), review_count);
    Ok(PostPage {
        layout,
        p: post_view(app, &detail.post, now),
        events: event_rows(&detail, tz),
        intents: intent_rows(&detail, tz),
        doubt: in_doubt(&detail),
        reservations: reservation_rows(&detail, tz),
        verdicts: verdict_rows(app, &detail, tz),
        review,
        actions,
        rule_problems: if actions.edit {
            rule_problems(app, &detail.post)
        } else {
            Vec::new()
        },
        edit_media: edit_rows(&detail.post.content.media),
        back: format!("/posts/{id}"),
        resume,
    })
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
            // Only the passes that still stand (not a revoked token's).
            view.passed_by = packet.approvals.passed_by;
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

/// What approving `post` would be refused for: its channel's content policy, as
/// [`App::check_draft`] and approval check it ([`CheckViolation::of_policy`]). Read from
/// the post as stored; nothing is fetched.
fn rule_problems(app: &App, post: &airlock_core::Post) -> Vec<Problem> {
    let Ok(channel) = app.channel(post.content.channel.as_str()) else {
        return Vec::new();
    };
    channel
        .policy
        .check(&post.content)
        .iter()
        .map(|v| {
            let found = CheckViolation::of_policy(v);
            Problem::of(found.blocks, found.message)
        })
        .collect()
}

/// Blank media rows the edit form offers beyond a post's items.
pub const BLANK_MEDIA_ROWS: usize = 2;

/// Part 1's media as form rows, then [`BLANK_MEDIA_ROWS`] blank ones.
fn edit_rows(media: &[airlock_core::Media]) -> Vec<MediaRow> {
    let mut rows = rows_of(media);
    rows.extend(std::iter::repeat_n(MediaRow::default(), BLANK_MEDIA_ROWS));
    rows
}
