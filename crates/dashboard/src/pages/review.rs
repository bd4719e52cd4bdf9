//! The inbox (`GET /review`): `needs_review` posts with their evidence, to settle, and
//! quarantined drafts with the verdicts that put them there, to release or discard;
//! oldest first, a page at a time.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use airlock_app::Error;
use airlock_app::PostFilter;
use airlock_core::{PostId, PostStatus};

use super::REVIEW_PAGE;
use super::error::app_error_page;
use super::parts::{
    EventRow, InDoubt, IntentRow, Layout, PostView, QUARANTINE_SCAN, ReservationRow, VerdictRow,
    channel_tz, event_rows, in_doubt, intent_rows, layout, needs_review_count, post_view,
    reservation_rows, resume_offer, verdict_rows,
};
use crate::auth::Operator;
use crate::session::Dashboard;

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

/// One post in the inbox, with its evidence.
#[derive(Debug, Clone)]
pub struct ReviewItem {
    /// The post.
    pub p: PostView,
    /// Intents (when the request went out, with which key).
    pub intents: Vec<IntentRow>,
    /// Which part is in doubt, for a post of several parts.
    pub doubt: Option<InDoubt>,
    /// Timeline.
    pub events: Vec<EventRow>,
    /// Reservations.
    pub reservations: Vec<ReservationRow>,
    /// The channel a resolve may resume in the same action, when this is the last post
    /// in doubt on it and a post in doubt paused it.
    pub resume: Option<String>,
}

/// A quarantined post in the inbox, with the verdicts that put it there.
#[derive(Debug, Clone)]
pub struct QuarantineItem {
    /// The post.
    pub p: PostView,
    /// Its verdicts, oldest first.
    pub verdicts: Vec<VerdictRow>,
}

/// `?after=` on the review inbox: the page after this post id.
#[derive(Debug, Default, Deserialize)]
pub struct ReviewQuery {
    /// A post id, or empty for the first page.
    #[serde(default)]
    pub after: String,
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
    let explained = if ids.is_empty() {
        Vec::new()
    } else {
        app.explained_pauses(who).await?
    };
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
            doubt: in_doubt(&detail),
            events: event_rows(&detail, tz),
            reservations: reservation_rows(&detail, tz),
            resume: resume_offer(app, op, &explained, &detail.post).await?,
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
