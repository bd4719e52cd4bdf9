//! `app::Error`: one error for every front end, classified once as a refusal or an
//! operational failure. The CLI maps it to exit codes, the HTTP API to status codes,
//! MCP to tool errors, all from [`Error::code`] and [`Error::is_refusal`]. The HTTP API
//! and MCP write every failure as one JSON envelope, [`ErrorBody`].

use chrono::{DateTime, Utc};

use airlock_core::Violation;
use airlock_core::quota::Limit;
use airlock_store::StoreError;

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (HTTP 400, exit 2).
    #[error("{0}")]
    Invalid(String),
    /// Content policy violations (HTTP 400, exit 2).
    #[error("content policy: {}", join(.0))]
    Policy(Vec<Violation>),
    /// No valid token (HTTP 401).
    #[error(
        "missing, unknown or revoked token: send `Authorization: Bearer <token>` with a token from `airlock token create`"
    )]
    Unauthorized,
    /// A role the principal does not hold (HTTP 403, exit 2).
    #[error("{0}")]
    Forbidden(String),
    /// No such post or channel (HTTP 404, exit 2).
    #[error("{0}")]
    NotFound(String),
    /// The lifecycle does not allow this move now (HTTP 409, exit 2).
    #[error("{0}")]
    IllegalTransition(String),
    /// A conflicting write: changed content, reused key, stale version (HTTP 409, exit 2).
    #[error("{0}")]
    Conflict(String),
    /// The post is quarantined after too many failed reviews: nobody may edit, approve or
    /// publish it until an operator releases it (HTTP 409, exit 2).
    #[error("{0}")]
    Quarantined(String),
    /// The same text is already queued or published on the channel (HTTP 409, exit 2).
    #[error("{0}")]
    Duplicate(String),
    /// Publishing is paused (HTTP 423, exit 2).
    #[error("paused: {reason}; an operator resumes with `airlock resume {scope}`")]
    Paused {
        /// `--all` or the channel.
        scope: String,
        /// Why.
        reason: String,
    },
    /// Over quota (HTTP 429 with `Retry-After`, exit 2).
    #[error("over quota: {}; the next slot frees at {}", describe_limit(.limit, *.used, *.max), airlock_core::time::format_utc(*.next_free_at))]
    OverQuota {
        /// Which limit.
        limit: Limit,
        /// Counted (micro-dollars for the budget).
        used: u64,
        /// Maximum (micro-dollars for the budget).
        max: u64,
        /// When a slot frees.
        next_free_at: DateTime<Utc>,
    },
    /// The publish ended `failed` (exit 1, HTTP 502).
    #[error("publish failed: {0}")]
    PublishFailed(String),
    /// The publish ended `needs_review` (exit 1, HTTP 502).
    #[error("publish outcome unknown, the post needs review: {0}")]
    OutcomeUnknown(String),
    /// The publish did not go out and will be retried (exit 1, HTTP 503).
    #[error("not sent, will retry: {0}")]
    NotSent(String),
    /// Quota state is corrupt; all publishing is paused (exit 1, HTTP 503).
    #[error(
        "{0}; all publishing is paused until an operator fixes it and runs `airlock resume --all`"
    )]
    CorruptQuota(String),
    /// The store failed (exit 1, HTTP 503).
    #[error("{0}")]
    Unavailable(String),
    /// A bug in airlock stopped the operation (a panic, caught and logged) (exit 1, HTTP 500).
    #[error("internal error: {0}")]
    Internal(String),
}

fn join(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_limit(limit: &Limit, used: u64, max: u64) -> String {
    match limit {
        Limit::Window => format!("the rolling window limit ({used}/{max}) is reached"),
        Limit::Daily => format!("the daily limit ({used}/{max}) is reached"),
        Limit::Budget => format!(
            "the channel's monthly budget is spent ({} of {})",
            airlock_core::budget::format_usd(used),
            airlock_core::budget::format_usd(max)
        ),
    }
}

impl Error {
    /// Whether airlock refused (bad input, policy, role, state, quota, pause) rather than failed.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Error::PublishFailed(_)
                | Error::OutcomeUnknown(_)
                | Error::NotSent(_)
                | Error::CorruptQuota(_)
                | Error::Unavailable(_)
                | Error::Internal(_)
        )
    }

    /// A stable machine-readable code (`{"error": {"code"}}`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::Policy(_) => "policy_violation",
            Error::Unauthorized => "unauthorized",
            Error::Forbidden(_) => "forbidden",
            Error::NotFound(_) => "not_found",
            Error::IllegalTransition(_) => "illegal_transition",
            Error::Conflict(_) => "conflict",
            Error::Quarantined(_) => "quarantined",
            Error::Duplicate(_) => "duplicate",
            Error::Paused { .. } => "paused",
            Error::OverQuota { .. } => "over_quota",
            Error::PublishFailed(_) => "publish_failed",
            Error::OutcomeUnknown(_) => "outcome_unknown",
            Error::NotSent(_) => "not_sent",
            Error::CorruptQuota(_) => "corrupt_quota",
            Error::Unavailable(_) => "unavailable",
            Error::Internal(_) => "internal",
        }
    }
}

/// airlock's JSON error envelope, `{"error": {"code", "message"}}`: the body of every
/// HTTP API failure (`/api/v1`, the Host/Origin policy, `/mcp` refusals) and the
/// structured content of every MCP tool error.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// Stable machine-readable code (`over_quota`, `paused`, `forbidden`, ...).
    pub code: String,
    /// What happened and what to do.
    pub message: String,
}

impl ErrorBody {
    /// An envelope with a code that need not be an [`Error`]'s (`forbidden_host`,
    /// `too_large`, `not_found` for an unknown route).
    pub fn new(code: &str, message: &str) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: code.to_owned(),
                message: message.to_owned(),
            },
        }
    }

    /// The envelope of an app error: its [`Error::code`] and its message.
    pub fn of(error: &Error) -> ErrorBody {
        ErrorBody::new(error.code(), &error.to_string())
    }

    /// The envelope as a JSON value (MCP's structured content).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("two strings always serialize")
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(id) => Error::NotFound(format!(
                "post {id} not found: list posts with `airlock post list`"
            )),
            StoreError::Conflict(_)
            | StoreError::IdempotencyMismatch(_)
            | StoreError::Duplicate(_) => Error::Conflict(e.to_string()),
            StoreError::DuplicateText { earlier, status } => Error::Duplicate(format!(
                "the same text is already post {earlier} ({}) on this channel: revise that post instead of drafting it again, or change the text (an operator may draft it anyway with --allow-duplicate)",
                if status == airlock_core::PostStatus::Draft {
                    "quarantined".to_owned()
                } else {
                    status.to_string()
                }
            )),
            StoreError::DraftLimit { actor, held, max } => Error::Conflict(format!(
                "{} holds {held} drafts, the most [server] max_drafts_per_token ({max}) allows: approve, discard or have a critic reject some before drafting more",
                match actor.strip_prefix("token:") {
                    Some(name) => format!("token {name}"),
                    None => actor,
                }
            )),
            StoreError::LastOperator(name) => Error::Conflict(format!(
                "{name} is the last operator token: create another operator token (Tokens page, `airlock token create --role operator`) before revoking it"
            )),
            StoreError::Quarantined(id) => Error::Quarantined(format!(
                "post {id} is quarantined after too many failed reviews: nobody may edit, approve or publish it until an operator releases it (`airlock post release {id}`) or discards it"
            )),
            StoreError::HasHistory(_)
            | StoreError::IllegalTransition { .. }
            | StoreError::Refused { .. } => Error::IllegalTransition(e.to_string()),
            StoreError::Fenced { .. } => Error::Conflict(e.to_string()),
            StoreError::TooLarge(message) => Error::Invalid(message),
            StoreError::CorruptQuota(reason) => {
                Error::CorruptQuota(format!("quota state is corrupt: {reason}"))
            }
            StoreError::Paused { scope, reason } => Error::Paused {
                scope: crate::publish::scope_arg(&scope),
                reason,
            },
            StoreError::Corrupt(_)
            | StoreError::Unavailable(_)
            | StoreError::ClockSkew { .. }
            | StoreError::Timeout { .. }
            | StoreError::Limits(_) => Error::Unavailable(e.to_string()),
        }
    }
}
