//! `/api/v1`: thin handlers over `App`. Actions on a post answer with the post JSON as
//! it stands afterwards; refusals are [`ApiError`]s.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use airlock_app::PostFilter;
use airlock_app::check::DraftCheck;
use airlock_app::control::{ChannelStatus, QuotaStatus};
use airlock_app::critic::{ReviewPacket, VerdictInput, VerdictResult};
use airlock_app::posts::{
    DraftInput, DraftOrigin, Drafted, EditInput, EditOptions, ListedPost, MAX_LIST_LIMIT,
};
use airlock_app::review::Resolution;
use airlock_app::{App, Error};
use airlock_core::{Post, PostDetail, PostEvent, PostId, PostStatus, VerdictKind};

use crate::auth::{ApiJson, Caller};
use crate::error::{ApiError, ErrorBody, Recorded};

/// The `/api/v1` routes.
pub fn routes() -> Router<App> {
    Router::new()
        .route("/posts", post(create_post).get(list_posts))
        .route("/posts/check", post(check_draft))
        .route(
            "/posts/{id}",
            get(get_post).patch(edit_post).delete(discard_post),
        )
        .route("/posts/{id}/review", get(review_packet))
        .route("/posts/{id}/verdict", post(give_verdict))
        .route("/posts/{id}/approve", post(approve_post))
        .route("/posts/{id}/reject", post(reject_post))
        .route("/posts/{id}/release", post(release_post))
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
    /// Only quarantined posts (`true`) or only posts that are not (`false`).
    pub quarantined: Option<bool>,
    /// Only the posts the caller's token created (`true`).
    pub mine: Option<bool>,
}

/// `POST /posts` and `PATCH /posts/{id}` options.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct CreateQuery {
    /// Draft (or edit) it even if the same text is already queued or published on the
    /// channel within its duplicate window (operators only).
    #[serde(default)]
    pub allow_duplicate: bool,
}

/// `POST /posts/{id}/approve` (the body is optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// The content hash you reviewed (or send it as `If-Match`): when the post's content
    /// changed since, nothing is approved and the answer is 409. Strongly recommended.
    #[serde(default)]
    pub content_hash: Option<String>,
}

/// `POST /posts/{id}/verdict`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerdictBody {
    /// `pass` or `fail`.
    pub verdict: VerdictKind,
    /// Reasons, each starting with the rubric item it applies to (`tone: ...`); at least
    /// one for a fail.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// The `content_hash` of the review packet you read.
    pub content_hash: String,
    /// The `rubric.hash` of the review packet you read.
    pub rubric_hash: String,
}

/// `POST /posts/{id}/reject`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why; shown to the writer. Start it with a rubric item (`tone: ...`) to name it.
    pub reason: String,
    /// The content hash you reviewed (or send it as `If-Match`): when the post's content
    /// changed since, nothing is recorded and the answer is 409.
    #[serde(default)]
    pub content_hash: Option<String>,
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
    /// Its id on the platform; needed for a part of a thread that is not the last, since
    /// the next part replies to it.
    #[serde(default)]
    pub platform_post_id: Option<String>,
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
/// The same text already queued or published on the channel within its duplicate window
/// is a 409 `duplicate` naming the earlier post. A draft that breaks only the content
/// policy (a phrase rule, a missing title) is created, with what the policy finds in
/// `violations` beside the post's fields.
#[utoipa::path(post, path = "/api/v1/posts", request_body = DraftInput,
    params(("Idempotency-Key" = Option<String>, Header, description = "Retry-safe creation key"), CreateQuery),
    responses((status = 201, body = Drafted, description = "created"), (status = 200, body = Drafted, description = "the post an earlier request with this key created"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn create_post(
    State(app): State<App>,
    Caller(who): Caller,
    headers: HeaderMap,
    Query(options): Query<CreateQuery>,
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
    let origin = DraftOrigin {
        allow_duplicate: options.allow_duplicate,
        ..DraftOrigin::default()
    };
    let created = app
        .create_post(&who, input, key, origin)
        .await
        .recorded(&app)?;
    let status = if created.existing {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(created)).into_response())
}

/// Checks a draft without drafting it (writer): the body `POST /posts` takes; the answer
/// says whether drafting it would be accepted and a pass could approve it, every problem
/// with its `kind` and what it `blocks`, each part's length as the platform counts it,
/// the cost against a money budget and the channel's next quota slot. Only an unknown
/// channel or an unreadable body is a 400; content problems are the answer.
#[utoipa::path(post, path = "/api/v1/posts/check", request_body = DraftInput,
    responses((status = 200, body = DraftCheck), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn check_draft(
    State(app): State<App>,
    Caller(who): Caller,
    ApiJson(input): ApiJson<DraftInput>,
) -> Result<Json<DraftCheck>, ApiError> {
    Ok(Json(app.check_draft(&who, input).await.recorded(&app)?))
}

/// Lists posts, newest first (any role): each is the post JSON with `text` cut to its
/// first 500 characters and `text_truncated` saying whether it was; `GET /posts/{id}`
/// gives the whole text. When more posts follow, the `Link` header names the next page
/// (`<...&before=ID>; rel="next"`).
#[utoipa::path(get, path = "/api/v1/posts", params(ListQuery),
    responses((status = 200, body = [ListedPost], headers(("Link" = String, description = "The next page, when there is one: `</api/v1/posts?...&before=ID>; rel=\"next\"`"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn list_posts(
    State(app): State<App>,
    Caller(who): Caller,
    Query(query): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let status = query
        .status
        .map(|s| s.parse::<PostStatus>())
        .transpose()
        .map_err(|e| ApiError(Error::Invalid(e.to_string())))?;
    let channel = match query.channel {
        Some(name) => Some(app.channel(&name).recorded(&app)?.name.clone()),
        None => None,
    };
    let mine = query.mine.unwrap_or(false);
    let filter = PostFilter {
        status,
        channel,
        before: query.before.map(PostId),
        slot: None,
        limit: Some(
            query
                .limit
                .unwrap_or(MAX_LIST_LIMIT)
                .clamp(1, MAX_LIST_LIMIT),
        ),
        platform_post_id: None,
        quarantined: query.quarantined,
        created_by: mine.then(|| who.actor.to_string()),
        goes_out: None,
    };
    let page = app.list_post_page(&who, &filter).await.recorded(&app)?;
    let mut response = Json(page.posts).into_response();
    if let Some(next) = page.next {
        let link = next_link(&filter, mine, next);
        if let Ok(value) = axum::http::HeaderValue::from_str(&link) {
            response
                .headers_mut()
                .insert(axum::http::header::LINK, value);
        }
    }
    Ok(response)
}

/// The `Link` header of the page after one listed with `filter`: the same query, below
/// `next`. Every value in it is a status, a channel name, a number or a boolean, which
/// need no escaping.
fn next_link(filter: &PostFilter, mine: bool, next: PostId) -> String {
    let mut query = Vec::new();
    if let Some(status) = filter.status {
        query.push(format!("status={}", status.as_str()));
    }
    if let Some(channel) = &filter.channel {
        query.push(format!("channel={channel}"));
    }
    if let Some(quarantined) = filter.quarantined {
        query.push(format!("quarantined={quarantined}"));
    }
    if mine {
        query.push("mine=true".to_owned());
    }
    if let Some(limit) = filter.limit {
        query.push(format!("limit={limit}"));
    }
    query.push(format!("before={next}"));
    format!("</api/v1/posts?{}>; rel=\"next\"", query.join("&"))
}

/// One post with its events, intents, reservations and verdicts (any role). The `ETag`
/// is the content hash, for `If-Match` on approve and reject.
#[utoipa::path(get, path = "/api/v1/posts/{id}", params(("id" = i64, Path)),
    responses((status = 200, body = PostDetail), (status = 404, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn get_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let detail = app.get_post(&who, post_id(&id)?).await.recorded(&app)?;
    let etag = etag(detail.post.content_hash.as_str());
    Ok(([(axum::http::header::ETAG, etag)], Json(detail)).into_response())
}

/// The review packet (any role): the post, its content hash, the channel's policy,
/// limits and review rules, the rubric with its hash, earlier verdicts and what changed
/// since the last one; everything a critic needs in one call.
#[utoipa::path(get, path = "/api/v1/posts/{id}/review", params(("id" = i64, Path)),
    responses((status = 200, body = ReviewPacket), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody, description = "the rubric cannot be read")),
    security(("bearer" = [])), tag = "review")]
pub async fn review_packet(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let packet = app
        .review_packet(&who, post_id(&id)?)
        .await
        .recorded(&app)?;
    let etag = etag(packet.content_hash.as_str());
    Ok(([(axum::http::header::ETAG, etag)], Json(packet)).into_response())
}

/// Gives a verdict (critic): `pass` approves the content hash you read once the channel's
/// `approvals_required` critics passed it; `fail` returns the post to its writer with the
/// reasons, and the `max_revisions`-th fail quarantines it. A changed content or rubric is
/// a 409 and records nothing.
#[utoipa::path(post, path = "/api/v1/posts/{id}/verdict", params(("id" = i64, Path)), request_body = VerdictBody,
    responses((status = 200, body = VerdictResult), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn give_verdict(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<VerdictBody>,
) -> Result<Json<VerdictResult>, ApiError> {
    let input = VerdictInput {
        verdict: body.verdict,
        reasons: body.reasons,
        content_hash: Some(body.content_hash),
        rubric_hash: Some(body.rubric_hash),
    };
    Ok(Json(
        app.give_verdict(&who, post_id(&id)?, input)
            .await
            .recorded(&app)?,
    ))
}

/// Releases a quarantined post back to a plain draft (operator).
#[utoipa::path(post, path = "/api/v1/posts/{id}/release", params(("id" = i64, Path)),
    responses((status = 200, body = Post), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn release_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Post>, ApiError> {
    Ok(Json(app.release(&who, post_id(&id)?).await.recorded(&app)?))
}

/// A strong `ETag` of a content hash.
fn etag(hash: &str) -> axum::http::HeaderValue {
    axum::http::HeaderValue::from_str(&format!("\"{hash}\"")).expect("a hex hash is a header value")
}

/// The content hash a reviewer read: the body's `content_hash`, else `If-Match`
/// (quoted or not); both given and different is a 400.
fn reviewed_hash(headers: &HeaderMap, body: Option<String>) -> Result<Option<String>, ApiError> {
    let header = match headers.get(axum::http::header::IF_MATCH) {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError(Error::Invalid("If-Match must be ASCII".into())))?
                .trim();
            let text = text.strip_prefix("W/").unwrap_or(text).trim_matches('"');
            (text != "*").then(|| text.to_owned())
        }
        None => None,
    };
    match (body, header) {
        (Some(body), Some(header)) if body.trim() != header => Err(ApiError(Error::Invalid(
            "content_hash and If-Match name different hashes: send the one you reviewed, once"
                .into(),
        ))),
        (Some(body), _) => Ok(Some(body)),
        (None, header) => Ok(header),
    }
}

/// Edits a draft (writer); an approved post returns to draft. A text that becomes that
/// of a post already queued or published on the channel within its duplicate window is a
/// 409 `duplicate` naming the earlier post, as at creation.
#[utoipa::path(patch, path = "/api/v1/posts/{id}", params(("id" = i64, Path), CreateQuery), request_body = EditInput,
    responses((status = 200, body = Post), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "posts")]
pub async fn edit_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    Query(options): Query<CreateQuery>,
    ApiJson(input): ApiJson<EditInput>,
) -> Result<Json<Post>, ApiError> {
    let options = EditOptions {
        allow_duplicate: options.allow_duplicate,
    };
    Ok(Json(
        app.edit_post_with(&who, post_id(&id)?, input, options)
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

/// Approves a draft (critic; never the token that created or last edited it): a pass
/// verdict. Send the content hash you reviewed (`{"content_hash"}` or `If-Match`) so
/// that a post edited since is a 409 instead of an approval of text nobody read. On a
/// channel with `approvals_required` above one the post stays a draft until enough
/// distinct critics passed the same content.
#[utoipa::path(post, path = "/api/v1/posts/{id}/approve", params(("id" = i64, Path),
        ("If-Match" = Option<String>, Header, description = "The content hash you reviewed")),
    request_body(content = Option<ApproveBody>, description = "optional"),
    responses((status = 200, body = Post), (status = 400, body = ErrorBody, description = "policy violation"), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn approve_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Json<Post>, ApiError> {
    let body: ApproveBody = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError(Error::Invalid(format!(
                "invalid JSON body: {e}; send {{\"content_hash\": \"...\"}} or nothing"
            )))
        })?
    };
    let hash = reviewed_hash(&headers, body.content_hash)?;
    Ok(Json(
        app.approve_hash(&who, post_id(&id)?, hash)
            .await
            .recorded(&app)?,
    ))
}

/// Rejects a draft or an approved post (critic), with a reason: a fail verdict. The
/// channel's `max_revisions`-th fail quarantines the post.
#[utoipa::path(post, path = "/api/v1/posts/{id}/reject", params(("id" = i64, Path),
        ("If-Match" = Option<String>, Header, description = "The content hash you reviewed")), request_body = RejectBody,
    responses((status = 200, body = Post), (status = 409, body = ErrorBody)),
    security(("bearer" = [])), tag = "review")]
pub async fn reject_post(
    State(app): State<App>,
    Caller(who): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RejectBody>,
) -> Result<Json<Post>, ApiError> {
    let hash = reviewed_hash(&headers, body.content_hash)?;
    Ok(Json(
        app.reject_hash(&who, post_id(&id)?, &body.reason, hash)
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
            platform_post_id: body.platform_post_id,
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
