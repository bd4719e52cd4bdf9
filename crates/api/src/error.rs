//! `ApiError`: every failure of the HTTP API as `{"error": {"code", "message"}}` with
//! the status codes of docs/http-api.md. Internal detail is logged here, never sent.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub use airlock_app::{ErrorBody, ErrorDetail};

use airlock_app::{App, Error};

/// An API failure. The status follows the app error's class:
/// 400 invalid or policy, 401 token, 403 role, 404 missing, 409 illegal transition or
/// conflict, 423 paused, 429 over quota (with `Retry-After`), 502 a publish that failed
/// or needs review, 503 store trouble or not sent.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl ApiError {
    /// The HTTP status for the error.
    pub fn status(&self) -> StatusCode {
        match &self.0 {
            Error::Invalid(_) | Error::Policy(_) => StatusCode::BAD_REQUEST,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::IllegalTransition(_)
            | Error::Conflict(_)
            | Error::Quarantined(_)
            | Error::Duplicate(_) => StatusCode::CONFLICT,
            Error::Paused { .. } => StatusCode::LOCKED,
            Error::OverQuota { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::PublishFailed(_) | Error::OutcomeUnknown(_) => StatusCode::BAD_GATEWAY,
            Error::NotSent(_) | Error::CorruptQuota(_) | Error::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError(Error::Invalid(format!(
                "the request body is larger than {} bytes (1 MiB), airlock's limit for a request: a post's text is at most {} characters",
                airlock_core::limits::MAX_BODY_BYTES,
                airlock_core::limits::MAX_TEXT_CHARS
            )));
        }
        ApiError(Error::Invalid(format!(
            "invalid JSON body: {}",
            rejection.body_text()
        )))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(code = self.0.code(), error = %self.0, "API request failed");
        }
        let mut response = (status, Json(ErrorBody::of(&self.0))).into_response();
        let headers = response.headers_mut();
        match &self.0 {
            Error::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Error::OverQuota { next_free_at, .. } => {
                let wait = (*next_free_at - chrono::Utc::now()).num_seconds().max(1);
                headers.insert(header::RETRY_AFTER, HeaderValue::from(wait));
            }
            _ => {}
        }
        response
    }
}

/// A JSON error answer with a code that is not an app error's (`too_large`,
/// `not_found` for an unknown route).
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(ErrorBody::new(code, message))).into_response()
}

/// Counts refusals on the way out, for `airlock_refusals_total`.
pub trait Recorded<T> {
    /// Maps the error to an [`ApiError`], counting it.
    fn recorded(self, app: &App) -> Result<T, ApiError>;
}

impl<T> Recorded<T> for Result<T, Error> {
    fn recorded(self, app: &App) -> Result<T, ApiError> {
        self.map_err(|e| {
            app.record_refusal(&e);
            ApiError(e)
        })
    }
}
