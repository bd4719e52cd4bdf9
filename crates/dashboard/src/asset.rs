//! The stylesheet, the icon and the optional script (live refresh of the queue, the
//! compose page's check as the operator types), compiled into the binary so the
//! dashboard needs no files beside it and no front-end build step.

use axum::http::header;
use axum::response::IntoResponse;

/// `static/dashboard.css`.
pub const STYLESHEET: &str = include_str!("../static/dashboard.css");
/// `static/dashboard.js`: refreshes the queue's live fragment, and checks a draft on the
/// compose page as it is typed (`POST /compose/check`); pages work without it.
pub const SCRIPT: &str = include_str!("../static/dashboard.js");

/// `static/favicon.svg`.
pub const FAVICON: &str = include_str!("../static/favicon.svg");

/// `GET /static/favicon.svg`.
pub async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        FAVICON,
    )
}

/// `GET /static/dashboard.css`.
pub async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        STYLESHEET,
    )
}

/// `GET /static/dashboard.js`.
pub async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SCRIPT,
    )
}
