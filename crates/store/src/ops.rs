//! What running airlock for real needs from a store besides the publish path: a
//! streaming export of the whole ledger, dashboard sessions that survive a restart, and
//! the health figures behind the alert rules.

use chrono::{DateTime, Utc};

use airlock_core::{ChannelName, PostStatus};

/// Which posts an export includes. Empty: every post.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFilter {
    /// Only posts with something recorded at or after this time: created, changed, or
    /// any event in their timeline (so a periodic export with `since` = the last run's
    /// start misses nothing).
    pub since: Option<DateTime<Utc>>,
    /// Only this status.
    pub status: Option<PostStatus>,
    /// Only this channel.
    pub channel: Option<ChannelName>,
}

/// A dashboard session to store. The ledger never holds a secret: the session id and
/// the operator token are kept only as SHA-256 hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// Lowercase hex SHA-256 of the session cookie's value.
    pub id_sha256: String,
    /// The signed-in token's `secret_sha256` (as in `tokens`).
    pub token_sha256: String,
    /// Now.
    pub now: DateTime<Utc>,
    /// When it ends, whatever the activity.
    pub expires_at: DateTime<Utc>,
    /// At most this many live sessions; the oldest go first past it.
    pub max_sessions: u32,
}

/// A stored dashboard session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The signed-in token's `secret_sha256`: re-authenticated on every request, so a
    /// revoked token's sessions end at once.
    pub token_sha256: String,
    /// When it was opened.
    pub created_at: DateTime<Utc>,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

/// Figures for alerts that the ledger knows better than any one process (`/metrics`,
/// docs/http-api.md): they hold whichever process runs the dispatcher, on any host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HealthStats {
    /// Posts due now (approved, scheduled and `not_before` passed, never posted, not a
    /// test post) on channels that are not paused, with no global pause.
    pub due: i64,
    /// The earliest time one of those became due: if it is long past, no dispatcher is
    /// running.
    pub oldest_due_at: Option<DateTime<Utc>>,
    /// Since when the longest-waiting `needs_review` post has waited (its last change).
    pub oldest_needs_review_at: Option<DateTime<Utc>>,
    /// `posted` posts whose verification failed and that are still unverified.
    pub verify_failed: i64,
}
