//! `HEAD` checks of public URLs: an article's page must answer `200`, an Instagram
//! image `200` with `Content-Type: image/jpeg`.
//!
//! The client follows no redirects (a redirect is a reason to skip: the post would link
//! somewhere else than the article says), sends no credentials, and gives up after a
//! short timeout, like the platform clients of `airlock-platforms`. Callers bound how
//! many checks run at once with [`CheckSettings::concurrency`].

use std::fmt;
use std::time::Duration as StdDuration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};

/// How public URLs are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckSettings {
    /// The longest one `HEAD` request may take, connecting included.
    pub timeout: StdDuration,
    /// How many `HEAD` requests run at once.
    pub concurrency: usize,
}

impl Default for CheckSettings {
    /// 5 seconds per request, 4 at once.
    fn default() -> Self {
        CheckSettings {
            timeout: StdDuration::from_secs(5),
            concurrency: 4,
        }
    }
}

/// Why a `HEAD` check did not pass. `Display` completes a sentence starting with the URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadFailure {
    /// An answer other than 200 that is not a redirect.
    Status(u16),
    /// A 3xx answer; redirects are never followed.
    Redirect {
        /// The status.
        status: u16,
        /// Where it points, if it says.
        location: Option<String>,
    },
    /// 200, but not `image/jpeg` (for images).
    NotJpeg {
        /// The `Content-Type` it answered with, if any.
        content_type: Option<String>,
    },
    /// No answer within the timeout.
    Timeout(StdDuration),
    /// No connection (refused, DNS, TLS).
    Connect(String),
    /// Any other transport failure.
    Transport(String),
}

impl fmt::Display for HeadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadFailure::Status(status) => {
                write!(f, "answered HEAD with HTTP {status} (needs 200)")
            }
            HeadFailure::Redirect { status, location } => write!(
                f,
                "redirects (HTTP {status}{}); redirects are not followed, so use the final address",
                location
                    .as_deref()
                    .map(|l| format!(" to {l}"))
                    .unwrap_or_default()
            ),
            HeadFailure::NotJpeg { content_type } => write!(
                f,
                "is not a JPEG (Content-Type {}; needs image/jpeg)",
                content_type.as_deref().unwrap_or("missing")
            ),
            HeadFailure::Timeout(after) => {
                write!(f, "did not answer HEAD within {}s", after.as_secs_f64())
            }
            HeadFailure::Connect(detail) => write!(f, "could not be reached ({detail})"),
            HeadFailure::Transport(detail) => write!(f, "HEAD failed ({detail})"),
        }
    }
}

/// What a `HEAD` must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// 200.
    Page,
    /// 200 with `Content-Type: image/jpeg`.
    Jpeg,
}

/// Sends `HEAD` requests with the settings above. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Checker {
    client: reqwest::Client,
    settings: CheckSettings,
}

impl Checker {
    /// A checker with its own client.
    pub fn new(settings: CheckSettings) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.timeout)
            .timeout(settings.timeout)
            .user_agent(concat!(
                "airlock/",
                env!("CARGO_PKG_VERSION"),
                " (link check)"
            ))
            .build()
            .expect("the HTTP client builds with static settings");
        Checker { client, settings }
    }

    /// The settings.
    pub fn settings(&self) -> CheckSettings {
        self.settings
    }

    /// One `HEAD` request to `url`, judged by `expect`.
    #[tracing::instrument(skip(self), level = "debug")]
    pub async fn check(&self, url: &str, expect: Expect) -> Result<(), HeadFailure> {
        let answer = self.client.head(url).send().await.map_err(|e| {
            if e.is_timeout() {
                HeadFailure::Timeout(self.settings.timeout)
            } else if e.is_connect() {
                HeadFailure::Connect(innermost(&e))
            } else {
                HeadFailure::Transport(innermost(&e))
            }
        })?;
        let status = answer.status();
        if status.is_redirection() {
            return Err(HeadFailure::Redirect {
                status: status.as_u16(),
                location: header(&answer, LOCATION),
            });
        }
        if status != StatusCode::OK {
            return Err(HeadFailure::Status(status.as_u16()));
        }
        if expect == Expect::Jpeg {
            let content_type = header(&answer, CONTENT_TYPE);
            let essence = content_type
                .as_deref()
                .and_then(|t| t.split(';').next())
                .map(|t| t.trim().to_ascii_lowercase());
            if essence.as_deref() != Some("image/jpeg") {
                return Err(HeadFailure::NotJpeg { content_type });
            }
        }
        Ok(())
    }
}

fn header(answer: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<String> {
    answer
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The innermost cause of a transport error: the useful part, without the URL.
fn innermost(err: &reqwest::Error) -> String {
    let mut detail = "no detail".to_owned();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        detail = inner.to_string();
        source = inner.source();
    }
    detail
}
