//! The storage interface of airlock (docs/stores.md): the [`Store`] trait that speaks
//! `airlock-core` types, implemented by `airlock-store-sqlite` and
//! `airlock-store-postgres` and checked by one conformance suite (`airlock-store-tests`).
//!
//! Every method is one transaction. The backends guarantee, whatever SQL reaches them:
//! - a post's `status` changes only along the edges of docs/lifecycle.md, and each change
//!   appends its `post_events` row in the same transaction (triggers, so hand-written SQL
//!   too);
//! - a post changes only by a named [`Change`]; writes of the guarded publish path are
//!   fenced by the claim `generation` ([`Guard::Generation`]): a stale worker's write
//!   changes nothing and is recorded;
//! - a reservation is decided by [`airlock_core::quota::decide`] inside the transaction
//!   that inserts it, serialized per scope, so quotas hold under any concurrency;
//! - notifications ([`NewNotification`]) are written in the transaction of the change
//!   they report (transactional outbox);
//! - a critic's verdict ([`Change::Verdict`]) is written in the transaction of what
//!   it does to the post, in the review round the post was in; any content change or
//!   withdrawn approval starts a new round; a quarantined draft is never approved and its
//!   content never changes (triggers, so hand-written SQL too);
//! - a draft repeating a queued text is refused inside the transaction that would create
//!   it ([`CreatePost::duplicate_window`]), approve it, edit its text into it or move it
//!   into the window ([`Change::Edited`], [`VerdictEffect::Approve`]);
//! - an actor's live drafts are counted inside the transaction that creates one, so
//!   concurrent creates never pass [`CreatePost::max_live_drafts`].
//!
//! This crate holds no SQL and no IO. What a transaction decides that does not depend on
//! the SQL dialect lives here, in [`decide`] and [`QuotaRows`], so the backends keep only
//! their SQL.

use chrono::{DateTime, Duration, Utc};

use airlock_core::budget::Charge;
use airlock_core::quota::{DailyRule, Denial, WindowRule};
use airlock_core::{ChannelName, Intent, NewPost, Post, PostId, PostStatus, RoleSet};

mod change;
pub mod decide;
mod interface;
mod ops;
mod quota_hours;
mod quota_rows;
pub use change::{Change, Effects, Fields, Guard, PostChange, RESEND_EVENT, VerdictEffect};
pub use interface::{Admin, Posts, Publishing, Reads, ReadsFrom, Sessions, Store};
pub use ops::{
    ChannelDue, ExportFilter, HealthStats, LiveSession, MigrationStatus, NewSession, Session,
};
pub use quota_hours::{HourCount, hour_of, hours_since, room_from_hours};
pub use quota_rows::{LiveReservation, QuotaRows, RawReservation, decide_reservation, quota_since};

/// `Result` with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What can go wrong in a store. Variants are what callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No post with that id.
    #[error("post {0} not found")]
    NotFound(PostId),
    /// The post changed since it was read (its `version` moved on).
    #[error("post {0} changed meanwhile: reload it and try again")]
    Conflict(PostId),
    /// The write came from a worker whose claim is no longer current.
    #[error(
        "stale generation {generation}: post {id} was reclaimed or settled; the write was refused and recorded"
    )]
    Fenced {
        /// The post.
        id: PostId,
        /// The stale generation.
        generation: i64,
    },
    /// The store refused a status change the lifecycle does not allow.
    #[error("post {id}: the store refused {from} -> {to}, which the lifecycle does not allow")]
    IllegalTransition {
        /// The post.
        id: PostId,
        /// Its state.
        from: PostStatus,
        /// The refused target.
        to: PostStatus,
    },
    /// The same idempotency key was used with a different request.
    #[error("idempotency key {0:?} was already used with a different request: use a new key")]
    IdempotencyMismatch(String),
    /// The token is the last active operator token, kept (`revoke_token`'s
    /// `keep_operator`).
    #[error("{0} is the last active operator token")]
    LastOperator(String),
    /// A unique name is taken.
    #[error("{0} already exists")]
    Duplicate(String),
    /// A new draft's text is, normalised, the text of a post on the same channel that is
    /// approved, in flight, posted or quarantined within the duplicate window.
    #[error(
        "the same text is already post {earlier} ({status}) on this channel: edit that post instead of drafting it again"
    )]
    DuplicateText {
        /// The earlier post.
        earlier: PostId,
        /// Its state (`draft` only when it is quarantined).
        status: PostStatus,
    },
    /// The creating actor already holds as many live drafts as
    /// [`CreatePost::max_live_drafts`] allows; nothing was written.
    #[error("{actor} holds {held} live drafts, the most it may hold ({max})")]
    DraftLimit {
        /// Who tried to draft.
        actor: String,
        /// The live drafts it holds (`status = draft`, `created_by` the actor).
        held: i64,
        /// The limit.
        max: u32,
    },
    /// A write that breaks one of the rules every write keeps, whoever sends it
    /// ([`decide::write_refusal`]); nothing was written.
    #[error("post {id}: the store refused the change: {rule}")]
    Refused {
        /// The post.
        id: PostId,
        /// The rule the write breaks.
        rule: String,
    },
    /// The post is quarantined: it may not be approved or changed until released.
    #[error(
        "post {0} is quarantined: an operator releases it (`airlock post release {0}`) before it may change"
    )]
    Quarantined(PostId),
    /// A draft that has publish attempts on record cannot be discarded.
    #[error("post {0} has publish attempts on record and cannot be discarded")]
    HasHistory(PostId),
    /// Quota state that cannot be read as expected. Publishing must stop.
    #[error("quota state is corrupt: {0}")]
    CorruptQuota(String),
    /// A value larger than the store accepts (`airlock_core::limits`); nothing was written.
    #[error("{0}")]
    TooLarge(String),
    /// A row that cannot be read as expected.
    #[error("ledger row cannot be read: {0}")]
    Corrupt(String),
    /// Publishing is paused for the post's channel (or everything): the intent was not
    /// recorded and nothing may be sent.
    #[error("publishing on {scope} is paused: {reason}")]
    Paused {
        /// `*` or the channel.
        scope: String,
        /// The pause's reason.
        reason: String,
    },
    /// This process's clock is further from the database's than
    /// [`airlock_core::quota::CLOCK_ALLOWANCE`]: the database decides by its own clock, and
    /// refused to claim or send by a process whose own arithmetic (leases, schedules) is off.
    #[error(
        "this machine's clock reads {caller} but the database's reads {database}, further apart than airlock allows: set the machine's clock right (NTP), then try again"
    )]
    ClockSkew {
        /// The time this process sent.
        caller: DateTime<Utc>,
        /// The database's time.
        database: DateTime<Utc>,
    },
    /// The database gave up waiting for a lock or a statement another session holds up:
    /// nothing was written. PostgreSQL's sessions wait a bounded time
    /// (`lock_timeout`, `statement_timeout`), so a stranger's lock cannot freeze airlock.
    #[error(
        "gave up after waiting {limit} {what}: another session holds it, and nothing was written. `airlock doctor` names sessions holding airlock's locks; end the one that should not (SELECT pg_terminate_backend(pid)), then try again"
    )]
    Timeout {
        /// `for a lock (...)` or `for a statement (...)`, with where it waited.
        what: String,
        /// The setting that gave up (`lock_timeout = 5s`).
        limit: String,
    },
    /// The limits the ledger's owner wrote refuse a claim as asked (hardened PostgreSQL):
    /// publishing stops until the owner applies the configuration.
    #[error("the ledger's limits refuse the claim: {0}")]
    Limits(String),
    /// The database could not be reached or failed.
    #[error("store unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A non-status event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNote {
    /// Its kind (`edited`, `rejected`, `note`, ...).
    pub kind: String,
    /// What happened.
    pub note: Option<String>,
}

/// What the reason of a pause set by a post's unknown outcome holds (after "post N"): a
/// later pause (an operator's, a failure's, another post's unknown outcome) takes such a
/// pause over, so that proving the first post's outcome never lifts it. The PostgreSQL
/// functions (`airlock_insert_pause`) spell it out too.
pub const UNKNOWN_PAUSE_MARK: &str = " has an unknown outcome (";

/// Where an intent ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentPhase {
    /// The platform has the post.
    Succeeded,
    /// The platform refused it.
    Rejected,
    /// It provably never left.
    NotSent,
    /// Nobody knows (yet).
    Unknown,
}

impl IntentPhase {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            IntentPhase::Succeeded => "succeeded",
            IntentPhase::Rejected => "rejected",
            IntentPhase::NotSent => "not_sent",
            IntentPhase::Unknown => "unknown",
        }
    }
}

/// How a post's live reservations end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Published: it stays counted.
    Commit,
    /// Not published: it stops counting.
    Release,
    /// Published by the request of the attempt of this generation, found by a later one
    /// that sent nothing: that attempt's reservation is the record of what the platform
    /// received. It is committed with its own stamps (counted again as a new committed
    /// row when a resolution had released it); every other live one is released.
    CommitAttempt(i64),
}

/// Consecutive definite failures per channel (`pause_after_failures`,
/// docs/guarded-path.md#pauses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureStep {
    /// A publish succeeded: start counting again.
    Reset,
    /// One more definite failure.
    Increment,
}

/// A pause set together with a change.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseSpec {
    /// What to pause.
    pub scope: PauseScope,
    /// Why.
    pub reason: String,
    /// Only when the channel's consecutive failures reach this many.
    pub after_failures: Option<u32>,
    /// Notifications to queue if the pause is new.
    pub notify: Vec<NewNotification>,
}

/// What a pause holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PauseScope {
    /// Every channel.
    All,
    /// One channel.
    Channel(ChannelName),
}

impl PauseScope {
    /// Stored form: `*` or the channel name.
    pub fn as_key(&self) -> &str {
        match self {
            PauseScope::All => "*",
            PauseScope::Channel(name) => name.as_str(),
        }
    }

    /// Reads the stored form.
    pub fn from_key(key: &str) -> Result<Self> {
        if key == "*" {
            return Ok(PauseScope::All);
        }
        ChannelName::parse(key)
            .map(PauseScope::Channel)
            .map_err(|e| StoreError::Corrupt(format!("pause scope: {e}")))
    }
}

/// An active pause.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Pause {
    /// `*` or a channel.
    pub scope: String,
    /// Why.
    pub reason: String,
    /// Who.
    pub actor: String,
    /// Since when.
    pub at: DateTime<Utc>,
}

/// A notification to queue, one per sink.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNotification {
    /// The configured sink's name.
    pub sink: String,
    /// The event (`published`, `needs_review`, ...).
    pub event: String,
    /// The post it is about, if any.
    pub post_id: Option<PostId>,
    /// The JSON body the sink renders.
    pub payload: serde_json::Value,
}

/// A queued notification claimed for delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Outbox row id; stable across retries (`X-Airlock-Event-Id`).
    pub id: i64,
    /// Sink name.
    pub sink: String,
    /// Event name.
    pub event: String,
    /// The post, if any.
    pub post_id: Option<PostId>,
    /// Body.
    pub payload: serde_json::Value,
    /// Earlier failed deliveries.
    pub attempts: i64,
    /// When it was queued.
    pub created_at: DateTime<Utc>,
}

/// Outbox health for metrics and doctor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutboxStats {
    /// Waiting for delivery.
    pub pending: i64,
    /// Given up after too many failures.
    pub abandoned: i64,
    /// Delivered.
    pub delivered: i64,
    /// When the oldest notification still waiting was queued: a backlog that neither
    /// grows nor shrinks shows here.
    pub oldest_pending_at: Option<DateTime<Utc>>,
}

/// Creating a post.
#[derive(Debug, Clone)]
pub struct CreatePost {
    /// The post.
    pub new: NewPost,
    /// Who.
    pub actor: String,
    /// When.
    pub now: DateTime<Utc>,
    /// Retry safety for agents (`Idempotency-Key`, `idempotency_key`).
    pub idempotency: Option<CreateKey>,
    /// Refuse the draft ([`StoreError::DuplicateText`]) when its normalised text
    /// ([`airlock_core::review::text_key`]) is that of a post on the same channel that is
    /// quarantined (whenever it was scheduled), or approved, in flight (`posting`,
    /// `needs_review`) or posted and goes (or went) out within this long of the new
    /// draft's `scheduled_at` (its `posted_at` if posted, else its `scheduled_at`). `None` checks nothing (an operator's override).
    /// An earlier request with the same idempotency key, or the post of a filled slot,
    /// is returned before this check.
    pub duplicate_window: Option<Duration>,
    /// Refuse the draft ([`StoreError::DraftLimit`]) when the actor already holds this
    /// many live drafts (`status = draft`, created by it), counted inside the creating
    /// transaction and serialized per actor, so concurrent creates cannot pass the limit
    /// together. `None` counts nothing. Checked after a repeated idempotency key or a
    /// filled slot has returned its post.
    pub max_live_drafts: Option<u32>,
}

/// An idempotency key for creation, honoured for a limited time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateKey {
    /// Whose key space (the token name).
    pub scope: String,
    /// The key.
    pub key: String,
    /// Hash of the request body, to refuse a reused key with a different request.
    pub request_hash: String,
    /// Keys older than this are forgotten.
    pub ttl: Duration,
}

/// The result of creating a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The post.
    pub post: Post,
    /// An earlier request with the same idempotency key (or for the same slot) made it.
    pub existing: bool,
}

/// Which posts to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostFilter {
    /// Only this status.
    pub status: Option<PostStatus>,
    /// Only this channel.
    pub channel: Option<ChannelName>,
    /// Only ids below this (paging backwards).
    pub before: Option<PostId>,
    /// Only the post filling this compose slot (with `channel`, at most one).
    pub slot: Option<String>,
    /// Only posts with this platform id (with `channel`).
    pub platform_post_id: Option<String>,
    /// At most this many, newest first (default 100).
    pub limit: Option<u32>,
    /// Only quarantined posts (`Some(true)`) or only posts that are not (`Some(false)`).
    pub quarantined: Option<bool>,
    /// Only posts this actor created (`token:drafter`).
    pub created_by: Option<String>,
    /// Only posts whose publication, schedule or hold (`not_before`) lies in
    /// `[from, until)`: every post a calendar of that span may show, and a few it places
    /// elsewhere (a published post scheduled in the span shows at its publication).
    pub goes_out: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// Claiming one post a worker has already checked (content, policy), with its quota and,
/// for channels that need no `prepare`, its intent — one transaction, one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostClaim {
    /// The post.
    pub id: PostId,
    /// The `version` the worker checked: if the post changed since, nothing is claimed.
    pub version: i64,
    /// Whether its channel publishes test posts.
    pub allow_test: bool,
    /// The claiming worker (`lease_owner`).
    pub worker: String,
    /// Actor recorded on the event.
    pub actor: String,
    /// Now (advanced by any wait for the lock, [`now_after`]).
    pub now: DateTime<Utc>,
    /// Lease end.
    pub lease_until: DateTime<Utc>,
    /// The quota to reserve; `None` for a test post, which is not counted.
    pub quota: Option<QuotaClaim>,
    /// The intent to record, for a post sent right after the claim.
    pub intent: Option<IntentClaim>,
}

/// The limits a claimed post's reservation is decided against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaClaim {
    /// The rolling window across channels.
    pub window: WindowRule,
    /// The channel's daily limit.
    pub daily: DailyRule,
    /// The channel's monthly money budget and what this post costs (X), decided with the
    /// limits above in the same transaction; `None` for channels without one.
    pub budget: Option<Charge>,
}

/// The intent recorded with a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentClaim {
    /// Sent to platforms that accept one.
    pub idempotency_key: String,
    /// The part it sends, from 1.
    pub part: u32,
    /// The longest the irreversible step can take: the lease must outlast it.
    pub lease_margin: Duration,
}

/// What [`Publishing::claim_post`] did. Only [`PostClaimed::Claimed`] wrote anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostClaimed {
    /// Claimed (status, owner and generation this worker's), its quota reserved and its
    /// intent recorded as asked.
    Claimed {
        /// The post as claimed.
        post: Box<Post>,
        /// The intent, when one was asked for.
        intent: Option<Intent>,
    },
    /// Over quota: nothing written; the worker records the deferral.
    OverQuota(Denial),
    /// Publishing is paused for its channel or everything: nothing written.
    Paused {
        /// `*` or the channel.
        scope: String,
        /// Why.
        reason: String,
    },
    /// It changed since the worker checked it, another worker holds it, or it is no
    /// longer claimable: nothing written. The post as it is now, if it exists.
    Gone(Option<Box<Post>>),
}

/// A read-back's result, recorded later and several at a time so verification never
/// holds up the next publish.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationRecord {
    /// The post.
    pub id: PostId,
    /// Who read it back.
    pub actor: String,
    /// When.
    pub at: DateTime<Utc>,
    /// `Ok(permalink found)` when the post is on the platform, else why not.
    pub result: std::result::Result<Option<String>, String>,
    /// Notifications for a failed verification.
    pub notify: Vec<NewNotification>,
}

/// The event of a post read back from its platform.
pub fn verified_event() -> EventNote {
    EventNote {
        kind: "verified".into(),
        note: Some("read back from the platform".into()),
    }
}

/// The event of a post its platform could not show.
pub fn verify_failed_event(reason: &str) -> EventNote {
    EventNote {
        kind: "verify_failed".into(),
        note: Some(reason.to_owned()),
    }
}

/// Recording the intent before the irreversible request (docs/guarded-path.md#intents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentRequest {
    /// The claimed post.
    pub post_id: PostId,
    /// Its claim generation.
    pub generation: i64,
    /// Sent to platforms that accept one.
    pub idempotency_key: String,
    /// The part it sends, from 1.
    pub part: u32,
    /// A platform handle that can later prove what happened (container id).
    pub platform_ref: Option<String>,
    /// Now: also the reservation's send time.
    pub now: DateTime<Utc>,
    /// The longest the irreversible request can take: the lease must outlast `now` by
    /// this much, or the intent is fenced and nothing is sent.
    pub lease_margin: Duration,
}

/// `now` advanced by the time spent since `started`, typically waiting for a lock: a
/// decision inside a transaction is made at the time the lock was obtained, not the
/// time the request was built (which may be seconds earlier under contention). Waits
/// under 100 ms are ignored: they are well inside the slack a lease keeps beyond its
/// request (`airlock_app::publish::LEASE_SLACK`, 500 ms), and counting them would only
/// blur the recorded times.
pub fn now_after(now: DateTime<Utc>, started: std::time::Instant) -> DateTime<Utc> {
    let waited = started.elapsed();
    if waited < std::time::Duration::from_millis(100) {
        return now;
    }
    now + Duration::from_std(waited).unwrap_or_default()
}

/// A `posting` post whose lease ended, with the intent of its current generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    /// The post.
    pub post: Post,
    /// Its intent for the current generation, if one was recorded.
    pub intent: Option<Intent>,
}

/// One item of a scan that goes on past rows it cannot read.
pub type Scanned<T> = std::result::Result<T, Unreadable>;

/// A post row a scan could not decode: reported, and skipped so the rest of the scan goes
/// on (`doctor` names it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The post.
    pub id: PostId,
    /// What is wrong with it.
    pub reason: String,
}

/// Whose clock a ledger's writes are stamped and decided by (docs/quotas.md#one-clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerClock {
    /// The caller's `now`: a SQLite ledger, which sits on the one machine whose processes
    /// use it, or a PostgreSQL ledger set so for tests that step a clock of their own.
    Caller,
    /// The database server's: installations on several machines agree by construction.
    Database {
        /// The database's time when it answered.
        now: DateTime<Utc>,
    },
}

impl LedgerClock {
    /// Reads the ledger's clock and how far it is from `clock` (the database's time minus
    /// `clock`'s at the midpoint of the round trip); `None` for a ledger that decides by
    /// its callers' clocks.
    pub async fn offset_from(
        store: &dyn Store,
        clock: impl Fn() -> DateTime<Utc>,
    ) -> Result<Option<Duration>> {
        let before = clock();
        let ledger = store.ledger_clock().await?;
        let after = clock();
        Ok(match ledger {
            LedgerClock::Caller => None,
            LedgerClock::Database { now } => Some(now - (before + (after - before) / 2)),
        })
    }
}

/// An approved post held by a quota deferral ([`Change::Deferred`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    /// The post.
    pub id: PostId,
    /// Its channel.
    pub channel: ChannelName,
    /// Its version.
    pub version: i64,
    /// Until when.
    pub until: DateTime<Utc>,
}

/// A `needs_review` post with its latest intent, for reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewItem {
    /// The post.
    pub post: Post,
    /// Its latest intent.
    pub intent: Option<Intent>,
}

/// An API token's stored form (the secret itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenRecord {
    /// Unique name.
    pub name: String,
    /// Roles.
    pub roles: RoleSet,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Last authenticated use.
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A new API token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Unique name.
    pub name: String,
    /// Roles.
    pub roles: RoleSet,
    /// Lowercase hex SHA-256 of the secret.
    pub secret_sha256: String,
    /// Now.
    pub now: DateTime<Utc>,
}
