//! `/api/v1`: thin handlers over `App`. Actions on a post answer with the post JSON as
//! it stands afterwards; refusals are [`ApiError`]s.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use airlock_app::control::{ChannelStatus, QuotaStatus};
use airlock_app::posts::{DraftInput, DraftOrigin, EditInput, ListedPost};
use airlock_app::review::Resolution;
use airlock_app::{App, Error};
use airlock_core::{Post, PostDetail, PostEvent, PostId, PostStatus};
use airlock_store::PostFilter;

use crate::auth::{ApiJson, Caller};
use crate::error::{ApiError, ErrorBody, Recorded};

/// The `/api/v1` routes.
pub fn routes() -> Router<App> {
    Router::new()
        .route("/posts", post(create_post).get(list_posts))
        .route(
            "/posts/{id}",
            get(get_post).patch(edit_post).delete(discard_post),
        )
        .route("/posts/{id}/approve", post(approve_post))
        .route("/posts/{id}/reject", post(reject_post))
        .route("/posts/{id}/unapprove", post(unapprove_post))
        .route("/posts/{id}/publish", post(publish_post))
        .route("/posts/{id}/resolve", post(resolve_post))
        .route("/posts/{id}/requeue", post(requeue_post))
        .route("/quota", get(quota))
        .route("/channels", get(channels))
        .route("/channels/{name}/pause", post(pause_channel))
        .route("/channels/{name}/resume", post(resume_channel))
        .route("/pause", post(pause_all))
        .route("/resume", post(resume_all))
        .route("/events", get(events))
}

fn post_id(id: &str) -> Result<PostId, ApiError> {
    id.parse()
        .map_err(|e: airlock_core::InvalidValue| ApiError(Error::Invalid(e.to_string())))
}

/// Filters of `GET /posts`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only this status.
    pub status: Option<String>,
    /// Only this channel.
    pub channel: Option<String>,
    /// Only posts with ids below this (paging backwards).
    pub before: Option<i64>,
    /// At most this many (default and most 100; page on with `before`). Each post's
    /// text is cut to 500 characters (`text_truncated`), so a page is bounded however
    /// long the texts are.
    pub limit: Option<u32>,
}

/// `POST /posts/{id}/reject`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why; shown to the writer.
    pub reason: String,
}

/// `POST /posts/{id}/resolve`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// `true`: it went out; `false`: it did not.
    pub published: bool,
    /// Where it went out, if known.
    #[serde(default)]
    pub permalink: Option<String>,
}

/// `POST /channels/{name}/pause` and `POST /pause`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    /// Why; shown to everyone who looks.
    pub reason: String,
}

/// The pause state after a pause or resume.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PauseState {
    /// `*` for everything, or the channel.
    pub scope: String,
    /// Whether it is paused now.
    pub paused: bool,
    /// Whether this request changed anything.
    pub changed: bool,
}

/// `GET /events` paging.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Only events with ids above this (default 0).
    pub after: Option<i64>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<u32>,
}

/// Creates a draft (writer). `Idempotency-Key` makes a retry return the first post for 24 hours.
#[utoipa::path(post, path = "/api/v1/posts", request_body = DraftInput,
    params(("Idempotency-Key" = Option<String>, Header, description = "Retry-safe creation key")),
    responses((status = 201, body = Post, description = "created"), (status = 200, body = Post, description = "the post an earlier request with this key created"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn create_post(
    State(app): State<App>,
    Caller(who): Caller,
    headers: HeaderMap,
    ApiJson(input): ApiJson<DraftInput>,
) -> Result<Response, ApiError> {
    let key = match headers.get("idempotency-key") {
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| ApiError(Error::Invalid("Idempotency-Key must be ASCII".into())))?
                .to_owned(),
        ),
        None => None,
    };
    let created = app
        .create_post(&who, input, key, DraftOrigin::default())
        .await
        .recorded(&app)?;
    let status = if created.existing {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(created.post)).into_response())
}

/// Lists posts, newest first (any role): each is the post JSON with `text` cut to its
/// first 500 characters and `text_truncated` saying whether it was; `GET /posts/{id}`
/// gives the whole text.
#[utoipa::path(get, path = "/api/v1/posts", params(ListQuery),
    responses((status = 200, body = [ListedPost]), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn list_posts(
    State(app): State<App>,
    Caller(who): Caller,
    Query(query): Query<ListQuery>,
) -> Result<Json<Vec<ListedPost>>, ApiError> {
    let status = query
        .status
        .map(|s| s.parse::<PostStatus>())
        .transpose()
        .map_err(|e| ApiError(Error::Invalid(e.to_string())))?;
    let channel = match query.channel {
        Some(name) => Some(app.channel(&name).recorded(&app)?.name.clone()),
        None => None,
    };
    let filter = PostFilter {
        status,
        channel,
        before: query.before.map(PostId),
        slot: None,
        limit: Some(query.limit.unwrap_or(100).clamp(1, 100)),
        platform_post_id: None,
    };
    Ok(Json(
        app.list_post_excerpts(&who, &filter).await.recorded(&app)?,
    ))
}

/// One post with its events, intents and reservations (any role).
#[utoipa::path(get, path = "/api/v1/posts/{id}", params(("id" = i64, Path)),
    responses((status = 200, body = PostDetail), (status = 404, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn get_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<PostDetail>, ApiError> {
    Ok(Json(
        app.get_post(&who, post_id(&id)?).await.recorded(&app)?,
    ))
}

/// Edits a draft (writer); an approved post returns to draft.
#[utoipa::path(patch, path = "/api/v1/posts/{id}", params(("id" = i64, Path)), request_body = EditInput,
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn edit_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<EditInput>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(
        app.edit_post(&who, post_id(&id)?, input)
            .await
            .recorded(&app)?,
    ))
}

/// Discards a draft (writer or operator).
#[utoipa::path(delete, path = "/api/v1/posts/{id}", params(("id" = i64, Path)),
    responses((status = 204, description = "discarded"), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn discard_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    app.discard(&who, post_id(&id)?).await.recorded(&app)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Approves a draft (critic; never the token that created or last edited it).
#[utoipa::path(post, path = "/api/v1/posts/{id}/approve", params(("id" = i64, Path)),
    responses((status = 200, body = Post), (status = 400, body = ErrorBody, description = "policy violation"), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn approve_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(app.approve(&who, post_id(&id)?).await.recorded(&app)?))
}

/// Rejects a draft or an approved post (critic), with a reason.
#[utoipa::path(post, path = "/api/v1/posts/{id}/reject", params(("id" = i64, Path)), request_body = RejectBody,
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn reject_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RejectBody>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(
        app.reject(&who, post_id(&id)?, &body.reason)
            .await
            .recorded(&app)?,
    ))
}

/// Withdraws an approval (critic).
#[utoipa::path(post, path = "/api/v1/posts/{id}/unapprove", params(("id" = i64, Path)),
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn unapprove_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(
        app.unapprove(&who, post_id(&id)?).await.recorded(&app)?,
    ))
}

/// Publishes an approved post now through the guarded path (publisher): 200 with status
/// `posted`, or the error that stopped it (423 paused, 429 over quota with `Retry-After`,
/// 502 failed or unknown).
#[utoipa::path(post, path = "/api/v1/posts/{id}/publish", params(("id" = i64, Path)),
    responses((status = 200, body = Post), (status = 409, body = ErrorBody), (status = 423, body = ErrorBody), (status = 429, body = ErrorBody), (status = 502, body = ErrorBody)),
    security(("bearer" = [])), tag = "publishing")]
pub async fn publish_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(
        app.publish_now(&who, post_id(&id)?).await.recorded(&app)?,
    ))
}

/// Settles a post that needs review (operator).
#[utoipa::path(post, path = "/api/v1/posts/{id}/resolve", params(("id" = i64, Path)), request_body = ResolveBody,
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "publishing")]
pub async fn resolve_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> Result<Json<Post>, ApiError> {
    let resolution = if body.published {
        Resolution::Published {
            permalink: body.permalink,
        }
    } else {
        Resolution::NotPublished
    };
    Ok(Json(
        app.resolve(&who, post_id(&id)?, resolution)
            .await
            .recorded(&app)?,
    ))
}

/// Returns a failed post to the queue (operator).
#[utoipa::path(post, path = "/api/v1/posts/{id}/requeue", params(("id" = i64, Path)),
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "publishing")]
pub async fn requeue_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(app.requeue(&who, post_id(&id)?).await.recorded(&app)?))
}

/// Quota use per channel and for the rolling window (any role).
#[utoipa::path(get, path = "/api/v1/quota", responses((status = 200, body = QuotaStatus)),
    security(("bearer" = [])), tag = "control")]
pub async fn quota(
    State(app): State<App>,
    Caller(who): Caller,
) -> Result<Json<QuotaStatus>, ApiError> {
    Ok(Json(app.quota_status(&who).await.recorded(&app)?))
}

/// Configured channels with pause state and today's use (any role).
#[utoipa::path(get, path = "/api/v1/channels", responses((status = 200, body = [ChannelStatus])),
    security(("bearer" = [])), tag = "control")]
pub async fn channels(
    State(app): State<App>,
    Caller(who): Caller,
) -> Result<Json<Vec<ChannelStatus>>, ApiError> {
    Ok(Json(app.channel_statuses(&who).await.recorded(&app)?))
}

async fn set_pause(
    app: &App,
    who: &airlock_app::Principal,
    channel: Option<&str>,
    reason: Option<&str>,
) -> Result<Json<PauseState>, ApiError> {
    let changed = match reason {
        Some(reason) => app.pause(who, channel, reason).await,
        None => app.resume(who, channel).await,
    }
    .recorded(app)?;
    Ok(Json(PauseState {
        scope: channel.unwrap_or("*").to_owned(),
        paused: reason.is_some(),
        changed,
    }))
}

/// Pauses one channel (operator).
#[utoipa::path(post, path = "/api/v1/channels/{name}/pause", params(("name" = String, Path)), request_body = PauseBody,
    responses((status = 200, body = PauseState)), security(("bearer" = [])), tag = "control")]
pub async fn pause_channel(
    State(app): State<App>,
    Caller(who): Caller,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<PauseBody>,
) -> Result<Json<PauseState>, ApiError> {
    set_pause(&app, &who, Some(&name), Some(&body.reason)).await
}

/// Resumes one channel (operator).
#[utoipa::path(post, path = "/api/v1/channels/{name}/resume", params(("name" = String, Path)),
    responses((status = 200, body = PauseState)), security(("bearer" = [])), tag = "control")]
pub async fn resume_channel(
    State(app): State<App>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<PauseState>, ApiError> {
    set_pause(&app, &who, Some(&name), None).await
}

/// Pauses every channel (operator).
#[utoipa::path(post, path = "/api/v1/pause", request_body = PauseBody,
    responses((status = 200, body = PauseState)), security(("bearer" = [])), tag = "control")]
pub async fn pause_all(
    State(app): State<App>,
    Caller(who): Caller,
    ApiJson(body): ApiJson<PauseBody>,
) -> Result<Json<PauseState>, ApiError> {
    set_pause(&app, &who, None, Some(&body.reason)).await
}

/// Lifts the global pause (operator).
#[utoipa::path(post, path = "/api/v1/resume",
    responses((status = 200, body = PauseState)), security(("bearer" = [])), tag = "control")]
pub async fn resume_all(
    State(app): State<App>,
    Caller(who): Caller,
) -> Result<Json<PauseState>, ApiError> {
    set_pause(&app, &who, None, None).await
}

/// Events across the ledger after an event id, oldest first (any role).
#[utoipa::path(get, path = "/api/v1/events", params(EventsQuery),
    responses((status = 200, body = [PostEvent])), security(("bearer" = [])), tag = "posts")]
pub async fn events(
    State(app): State<App>,
    Caller(who): Caller,
    Query(query): Query<EventsQuery>,
) -> Result<Json<Vec<PostEvent>>, ApiError> {
    Ok(Json(
        app.events_after(&who, query.after.unwrap_or(0), query.limit.unwrap_or(100))
            .await
            .recorded(&app)?,
    ))
}
