//! Middleware around every route: security headers on every response, and a CSRF check
//! on every `POST` before its handler runs.
//!
//! The CSRF check reads the form body once (form-encoded only, at most
//! [`MAX_FORM_BYTES`]), looks for the `csrf` field and compares it with the token of
//! the session cookie, or, for `POST /login`, of the pre-session login cookie. A
//! request without a valid one gets 403 and reaches no handler, so nothing changes.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::session::{CSRF_FIELD, Dashboard, LOGIN_COOKIE, SESSION_COOKIE, cookie};

/// The largest form body accepted.
pub const MAX_FORM_BYTES: usize = 256 * 1024;

/// Headers sent with every response.
pub const SECURITY_HEADERS: [(&str, &str); 5] = [
    ("x-frame-options", "DENY"),
    (
        "content-security-policy",
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// Adds [`SECURITY_HEADERS`] to every response, and `Cache-Control: no-store` to every
/// response that does not set its own (pages show the ledger and carry CSRF tokens).
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Refuses a `POST` without a valid CSRF token with 403; passes everything else on.
pub async fn csrf(State(dash): State<Dashboard>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let is_form = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return forbidden("this form must be sent as a web form");
    }
    let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large").into_response();
    };
    let token = form_urlencoded::parse(&bytes)
        .find(|(key, _)| key == CSRF_FIELD)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    let valid = if parts.uri.path() == "/login" {
        match cookie(&parts.headers, &dash.cookie_name(LOGIN_COOKIE)) {
            Some(nonce) => match dash.check_login_csrf(nonce, &token).await {
                Ok(valid) => valid,
                Err(e) => {
                    return (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("the ledger is unavailable: {e}"),
                    )
                        .into_response();
                }
            },
            None => false,
        }
    } else {
        match cookie(&parts.headers, &dash.cookie_name(SESSION_COOKIE)) {
            Some(id) if dash.check_session_csrf(id, &token) => match dash.exists(id).await {
                Ok(exists) => exists,
                Err(e) => {
                    return (
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("the ledger is unavailable: {e}"),
                    )
                        .into_response();
                }
            },
            _ => false,
        }
    };
    if !valid {
        tracing::info!(path = %parts.uri.path(), "refused a form without a valid CSRF token");
        return forbidden(
            "this form has expired or did not come from the dashboard: reload the page and try again",
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn forbidden(message: &'static str) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("403 Forbidden: {message}\n"),
    )
        .into_response()
}
