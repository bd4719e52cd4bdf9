//! airlock's HTTP surface: the `/api/v1` API (SPEC §7), `/healthz`, Prometheus
//! `/metrics` and `/api/openapi.json`, as one axum [`router`], plus [`serve`].
//!
//! Only this crate knows HTTP. Handlers are thin: authenticate the bearer token
//! ([`auth::Caller`]), call one `App` operation (which checks roles, pauses, policy and
//! quota), and map its error once ([`error::ApiError`]). The dashboard and the MCP
//! endpoint are separate routers merged beside this one by `airlock serve`.

use std::fmt::Write;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;

use airlock_app::App;

pub mod api;
pub mod auth;
pub mod error;

/// The API, health, metrics and OpenAPI routes, with the app as state.
pub fn router(app: App) -> Router {
    Router::new()
        .nest("/api/v1", api::routes())
        .route("/api/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .with_state(app)
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
        api::create_post, api::list_posts, api::get_post, api::edit_post, api::discard_post,
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

async fn healthz(State(app): State<App>) -> Response {
    match app.store().pauses().await {
        Ok(pauses) => Json(serde_json::json!({
            "status": "ok",
            "paused": pauses.iter().map(|p| &p.scope).collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "unavailable", "error": e.to_string()})),
        )
            .into_response(),
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

/// Renders every series in the Prometheus text format.
pub async fn render_metrics(app: &App) -> Result<String, airlock_store::StoreError> {
    let store = app.store();
    let counts = store.status_counts().await?;
    let outbox = store.outbox_stats().await?;
    let pauses = store.pauses().await?;
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
    let now = app.now();
    let health = store.health_stats(now).await?;
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
