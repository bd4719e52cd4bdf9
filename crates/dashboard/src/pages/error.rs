//! The error page (404, 400, 503) every page and the sign-in guard answer with, and
//! how an app error maps to one.

use askama::Template;
use askama_web::WebTemplate;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use airlock_app::Error;

/// A page for errors (404, 503).
#[derive(Template, WebTemplate)]
#[template(path = "error.html")]
pub struct ErrorPage {
    /// Heading.
    pub title: String,
    /// What happened and what to do.
    pub message: String,
}

/// An error page with a status code and a way back.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    (
        status,
        ErrorPage {
            title: title.to_owned(),
            message: message.to_owned(),
        },
    )
        .into_response()
}

pub(super) fn app_error_page(e: Error) -> Response {
    match e {
        Error::NotFound(message) => error_page(StatusCode::NOT_FOUND, "Not found", &message),
        Error::Invalid(message) => error_page(StatusCode::BAD_REQUEST, "Not understood", &message),
        other => error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The ledger is unavailable",
            &other.to_string(),
        ),
    }
}
