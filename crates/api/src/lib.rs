//! airlock's HTTP surface: the `/api/v1` API (docs/http-api.md), `/healthz`, Prometheus
//! `/metrics` and `/api/openapi.json`, as one axum [`router`], plus [`serve`].
//!
//! Only this crate, the dashboard and MCP's `/mcp` endpoint serve HTTP. Handlers are
//! thin: authenticate the bearer token ([`auth::Caller`]), call one `App` operation
//! (which checks roles, pauses, policy and quota), and map its error once
//! ([`error::ApiError`]). The dashboard and the MCP endpoint are separate routers merged
//! beside this one by `airlock serve`, which wraps them all in the one `Host`/`Origin`
//! policy (`airlock_web::guarded`).
//!
//! Every response of this router carries `Cache-Control: no-store` and
//! `X-Content-Type-Options: nosniff`; request bodies are read up to
//! [`airlock_core::limits::MAX_BODY_BYTES`]; and every error, including a malformed query
//! string, an unknown route or a body over the limit, has the JSON shape
//! `{"error": {"code", "message"}}`.

use std::fmt::Write;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;

use airlock_app::App;

pub mod api;
pub mod auth;
pub mod error;

/// How the routes outside `/api/v1` are exposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApiSettings {
    /// `/metrics` and `/api/openapi.json` answer only a request with a valid token (any
    /// role), 401 otherwise (`[server] metrics_token_required`; default off, so a
    /// Prometheus on loopback scrapes without one). `/healthz` stays open: it says only
    /// ok or unavailable to anyone without a token.
    pub metrics_token_required: bool,
}

/// The API, health, metrics and OpenAPI routes, with the app as state.
pub fn router(app: App) -> Router {
    router_with(app, ApiSettings::default())
}

/// [`router`] with explicit settings.
pub fn router_with(app: App, settings: ApiSettings) -> Router {
    let mut documents = Router::new()
        .route("/api/openapi.json", get(openapi))
        .route("/metrics", get(metrics));
    if settings.metrics_token_required {
        documents = documents.layer(axum::middleware::from_fn_with_state(
            app.clone(),
            require_token,
        ));
    }
    Router::new()
        .merge(documents)
        .nest(
            "/api/v1",
            api::routes().fallback(|| async {
                error::error_response(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    "no such API route: see /api/openapi.json",
                )
            }),
        )
        .route("/healthz", get(healthz))
        .layer(axum::middleware::from_fn(json_errors))
        .layer(DefaultBodyLimit::max(airlock_core::limits::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(api_headers))
        .with_state(app)
}

/// Adds `Cache-Control: no-store` (answers show the ledger, which changes and may be
/// private) unless a response set its own.
pub fn no_store(headers: &mut HeaderMap) {
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

async fn api_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    no_store(headers);
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Rewrites the plain-text error answers axum's extractors and router give (a query
/// string that does not parse, a body over the limit, a method a route does not take)
/// into the JSON error shape, keeping their status and text.
async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let text = axum::body::to_bytes(response.into_body(), 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let (code, message) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => (
            "too_large",
            format!(
                "the request body is larger than {} bytes (1 MiB), airlock's limit: a post's text is at most {} characters",
                airlock_core::limits::MAX_BODY_BYTES,
                airlock_core::limits::MAX_TEXT_CHARS
            ),
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method_not_allowed",
            "this route does not take this method: see /api/openapi.json".to_owned(),
        ),
        StatusCode::NOT_FOUND => ("not_found", "not found".to_owned()),
        s if s.is_client_error() => (
            "invalid",
            if text.is_empty() {
                "the request could not be understood".to_owned()
            } else {
                text
            },
        ),
        _ => ("unavailable", "the server could not answer".to_owned()),
    };
    error::error_response(status, code, &message)
}

/// Serves `router` on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

#[derive(OpenApi)]
#[openapi(
    info(title = "airlock", description = "The one door between AI agents and the outside world: drafts, review, at-most-once publishing inside quotas."),
    paths(
        api::create_post, api::check_draft, api::list_posts, api::get_post, api::edit_post, api::discard_post,
        api::review_packet, api::give_verdict, api::release_post,
        api::approve_post, api::reject_post, api::unapprove_post, api::publish_post,
        api::resolve_post, api::requeue_post, api::quota, api::channels, api::pause_channel,
        api::resume_channel, api::pause_all, api::resume_all, api::events
    ),
    components(schemas(error::ErrorBody, error::ErrorDetail)),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document, generated from the handlers' annotations.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi_document())
}

/// Refuses a request without a valid token (any role) with 401 and the JSON error shape.
async fn require_token(State(app): State<App>, request: Request, next: Next) -> Response {
    let authorized = match auth::bearer_header(request.headers()) {
        Some(secret) => app.authenticate(secret).await.is_ok(),
        None => false,
    };
    if !authorized {
        let mut response = error::error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this server requires a token for /metrics and /api/openapi.json ([server] metrics_token_required): send `Authorization: Bearer <token>` with any role's token",
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    next.run(request).await
}

/// `GET /healthz`: `{"status": "ok"}` or 503 `{"status": "unavailable"}`. Only a request
/// with a valid token (any role) also learns which scopes are paused, or why the store
/// is unavailable: an anonymous caller learns nothing about the ledger.
async fn healthz(State(app): State<App>, headers: HeaderMap) -> Response {
    let health = app.health().await;
    let authorized = match auth::bearer_header(&headers) {
        Some(secret) => app.authenticate(secret).await.is_ok(),
        None => false,
    };
    match (health, authorized) {
        (Ok(pauses), true) => Json(serde_json::json!({
            "status": "ok",
            "paused": pauses.iter().map(|p| &p.scope).collect::<Vec<_>>(),
        }))
        .into_response(),
        (Ok(_), false) => Json(serde_json::json!({"status": "ok"})).into_response(),
        (Err(e), true) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "unavailable", "error": e.to_string()})),
        )
            .into_response(),
        (Err(e), false) => {
            tracing::warn!(error = %e, "health check: the store is unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({"status": "unavailable"})),
            )
                .into_response()
        }
    }
}

/// Prometheus text: gauges read from the ledger now, counters kept by the app.
async fn metrics(State(app): State<App>) -> Response {
    match render_metrics(&app).await {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
    }
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The quota and budget gauges: the rolling window, each channel's day, each budget's
/// month, as the claim counts them now.
fn render_quota(out: &mut String, quota: &airlock_app::control::QuotaStatus) {
    let gauge = |out: &mut String, name: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    };
    let usage = &quota.window.usage;
    gauge(
        out,
        "airlock_quota_window_used",
        "Publishes counted in the rolling window across every channel.",
    );
    let _ = writeln!(out, "airlock_quota_window_used {}", usage.used);
    gauge(
        out,
        "airlock_quota_window_limit",
        "The rolling window's limit ([quota] window_limit).",
    );
    let _ = writeln!(out, "airlock_quota_window_limit {}", usage.limit);
    gauge(
        out,
        "airlock_quota_daily_used",
        "Publishes counted today on each channel, in its time zone.",
    );
    for c in &quota.channels {
        let channel = escape_label(c.channel.as_str());
        let _ = writeln!(
            out,
            "airlock_quota_daily_used{{channel=\"{channel}\"}} {}",
            c.usage.used
        );
    }
    gauge(
        out,
        "airlock_quota_daily_limit",
        "Each channel's daily_limit.",
    );
    for c in &quota.channels {
        let channel = escape_label(c.channel.as_str());
        let _ = writeln!(
            out,
            "airlock_quota_daily_limit{{channel=\"{channel}\"}} {}",
            c.usage.limit
        );
    }
    let budgets: Vec<_> = quota
        .channels
        .iter()
        .filter_map(|c| Some((escape_label(c.channel.as_str()), c.budget.as_ref()?)))
        .collect();
    gauge(
        out,
        "airlock_budget_spent_usd",
        "Money reserved and spent this month on each channel with a budget, in US dollars.",
    );
    for (channel, spend) in &budgets {
        let _ = writeln!(
            out,
            "airlock_budget_spent_usd{{channel=\"{channel}\"}} {}",
            spend.used_usd
        );
    }
    gauge(
        out,
        "airlock_budget_left_usd",
        "Money left this month on each channel with a budget, in US dollars.",
    );
    for (channel, spend) in &budgets {
        let _ = writeln!(
            out,
            "airlock_budget_left_usd{{channel=\"{channel}\"}} {}",
            spend.remaining_usd
        );
    }
}

/// Renders every series in the Prometheus text format.
pub async fn render_metrics(app: &App) -> Result<String, airlock_app::StoreError> {
    let airlock_app::metrics::LedgerGauges {
        counts,
        outbox,
        pauses,
        now,
        health,
        due_by_channel: by_channel,
        timeouts: (lock, statement),
        quota,
    } = app.ledger_gauges().await?;
    let mut out = String::new();
    let gauge = |out: &mut String, name: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    };
    gauge(&mut out, "airlock_posts", "Posts in the ledger by status.");
    for status in airlock_core::PostStatus::ALL {
        let n = counts
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n);
        let _ = writeln!(out, "airlock_posts{{status=\"{status}\"}} {n}");
    }
    gauge(
        &mut out,
        "airlock_needs_review",
        "Posts waiting for a person to settle them.",
    );
    let review = counts
        .iter()
        .find(|(s, _)| *s == airlock_core::PostStatus::NeedsReview)
        .map_or(0, |(_, n)| *n);
    let _ = writeln!(out, "airlock_needs_review {review}");
    gauge(
        &mut out,
        "airlock_outbox_backlog",
        "Notifications waiting for delivery.",
    );
    let _ = writeln!(out, "airlock_outbox_backlog {}", outbox.pending);
    gauge(
        &mut out,
        "airlock_outbox_abandoned",
        "Notifications given up after repeated failures.",
    );
    let _ = writeln!(out, "airlock_outbox_abandoned {}", outbox.abandoned);
    gauge(
        &mut out,
        "airlock_outbox_oldest_age_seconds",
        "How long the oldest notification still waiting has waited (0 when none is): a stuck backlog shows here even when it does not grow.",
    );
    let _ = writeln!(
        out,
        "airlock_outbox_oldest_age_seconds {}",
        outbox
            .oldest_pending_at
            .map_or(0, |at| (app.now() - at).num_seconds().max(0))
    );
    gauge(
        &mut out,
        "airlock_paused",
        "Active pauses by scope (* is every channel).",
    );
    for pause in &pauses {
        let _ = writeln!(
            out,
            "airlock_paused{{scope=\"{}\"}} 1",
            escape_label(&pause.scope)
        );
    }
    let age = |at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map_or(0, |at| (now - at).num_seconds().max(0))
    };
    gauge(
        &mut out,
        "airlock_due_posts",
        "Posts due now on channels that are not paused (waiting for a dispatcher).",
    );
    let _ = writeln!(out, "airlock_due_posts {}", health.due);
    gauge(
        &mut out,
        "airlock_oldest_due_age_seconds",
        "How long the most overdue post has been due (0 when none is): a dispatcher that does not run shows here.",
    );
    let _ = writeln!(
        out,
        "airlock_oldest_due_age_seconds {}",
        age(health.oldest_due_at)
    );
    gauge(
        &mut out,
        "airlock_needs_review_oldest_age_seconds",
        "How long the longest-waiting needs_review post has waited for a person (0 when none is).",
    );
    let _ = writeln!(
        out,
        "airlock_needs_review_oldest_age_seconds {}",
        age(health.oldest_needs_review_at)
    );
    gauge(
        &mut out,
        "airlock_verify_failures",
        "Published posts whose read-back from the platform failed and that are still unverified.",
    );
    let _ = writeln!(out, "airlock_verify_failures {}", health.verify_failed);
    gauge(
        &mut out,
        "airlock_verify_failures_recent",
        "Of those, the ones whose read-back failed in the last 24 hours: what the verification alert watches (it clears a day after the last failure, or when `airlock post verify` finds the post).",
    );
    let _ = writeln!(
        out,
        "airlock_verify_failures_recent {}",
        health.verify_failed_recent
    );
    // Per configured channel only: posts left approved on a channel removed from the
    // configuration wait for a person, not for a dispatcher.
    let configured: Vec<(String, Option<&airlock_app::ChannelDue>)> = app
        .settings()
        .channels
        .keys()
        .map(|name| {
            (
                escape_label(name.as_str()),
                by_channel.iter().find(|d| d.channel == name.as_str()),
            )
        })
        .collect();
    gauge(
        &mut out,
        "airlock_channel_due_posts",
        "Posts due now on each configured channel that is not paused.",
    );
    for (channel, found) in &configured {
        let _ = writeln!(
            out,
            "airlock_channel_due_posts{{channel=\"{channel}\"}} {}",
            found.map_or(0, |d| d.due)
        );
    }
    gauge(
        &mut out,
        "airlock_channel_oldest_due_age_seconds",
        "How long the most overdue post of each configured, open channel has been due (0 when none is).",
    );
    for (channel, found) in &configured {
        let _ = writeln!(
            out,
            "airlock_channel_oldest_due_age_seconds{{channel=\"{channel}\"}} {}",
            age(found.map(|d| d.oldest_due_at))
        );
    }
    gauge(
        &mut out,
        "airlock_quarantined_drafts",
        "Drafts quarantined after too many failed reviews, waiting for an operator to release or discard them.",
    );
    let _ = writeln!(out, "airlock_quarantined_drafts {}", health.quarantined);
    if let Some(quota) = quota {
        render_quota(&mut out, &quota);
    }
    let _ = writeln!(
        out,
        "# HELP airlock_store_timeouts_total Waits for another database session this process gave up (lock_timeout, statement_timeout).\n# TYPE airlock_store_timeouts_total counter\nairlock_store_timeouts_total{{kind=\"lock\"}} {lock}\nairlock_store_timeouts_total{{kind=\"statement\"}} {statement}"
    );
    let mut last = "";
    for series in app.metrics().snapshot() {
        if series.name != last {
            let _ = writeln!(out, "# TYPE {} counter", series.name);
            last = series.name;
        }
        let labels: Vec<String> = series
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        let _ = writeln!(
            out,
            "{}{{{}}} {}",
            series.name,
            labels.join(","),
            series.value
        );
    }
    Ok(out)
}
