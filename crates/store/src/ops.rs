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
    /// Of those, the ones with a `verify_failed` event in the 24 hours before `now`: what
    /// the verification alert looks at, so that it clears by itself a day after the last
    /// failure, or at once when `airlock post verify` finds the post.
    pub verify_failed_recent: i64,
    /// Drafts quarantined after too many failed reviews, waiting for an operator.
    pub quarantined: i64,
}

/// A live dashboard session, as `doctor --restored` lists it (never its id).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LiveSession {
    /// The name of the token it was opened with.
    pub token: String,
    /// When it was opened.
    pub created_at: DateTime<Utc>,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

/// Posts due on one channel (see [`HealthStats::due`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChannelDue {
    /// The channel, as stored (configured or not).
    pub channel: String,
    /// How many are due.
    pub due: i64,
    /// The earliest time one of them became due.
    pub oldest_due_at: DateTime<Utc>,
}

/// How a ledger's applied migrations compare with the ones this binary carries: what
/// `backup` and `export` check before they read a ledger they must not change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationStatus {
    /// Migrations this binary carries that the ledger has not applied (an older ledger:
    /// `airlock migrate` applies them).
    pub pending: Vec<i64>,
    /// Migrations the ledger has applied that this binary does not know (a newer
    /// airlock migrated it), or whose text differs from this binary's.
    pub unknown: Vec<i64>,
    /// Migrations applied in all.
    pub applied: usize,
}

impl MigrationStatus {
    /// Compares `known` (version, checksum) with `applied` (version, checksum).
    pub fn compare(known: &[(i64, Vec<u8>)], applied: &[(i64, Vec<u8>)]) -> Self {
        let pending = known
            .iter()
            .filter(|(v, _)| !applied.iter().any(|(a, _)| a == v))
            .map(|(v, _)| *v)
            .collect();
        let unknown = applied
            .iter()
            .filter(|(v, sum)| !known.iter().any(|(k, ks)| k == v && ks == sum))
            .map(|(v, _)| *v)
            .collect();
        MigrationStatus {
            pending,
            unknown,
            applied: applied.len(),
        }
    }

    /// Why the ledger cannot be read as it is by this binary, if it cannot; `None` when
    /// it is exactly current.
    pub fn problem(&self) -> Option<String> {
        let list = |v: &[i64]| {
            v.iter()
                .map(|n| format!("{n:04}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.unknown.is_empty() {
            return Some(format!(
                "the ledger has migrations this airlock does not know ({}): a newer airlock migrated it; use that release",
                list(&self.unknown)
            ));
        }
        if !self.pending.is_empty() {
            return Some(format!(
                "the ledger lacks migrations this airlock carries ({}): it was written by an older release; stop the processes that use it, then run `airlock migrate` with this release (or use the release that wrote it)",
                list(&self.pending)
            ));
        }
        None
    }
}
