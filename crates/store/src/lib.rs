//! The storage interface of airlock (docs/stores.md): one [`Store`] trait that speaks
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

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use airlock_core::budget::Charge;
use airlock_core::quota::{DailyRule, Denial, WindowRule};
use airlock_core::{
    ChannelName, Intent, NewPost, Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary,
    RoleSet, Verdict,
};

mod change;
pub mod decide;
mod ops;
mod quota_rows;
pub use change::{Change, Effects, Fields, Guard, PostChange, RESEND_EVENT, VerdictEffect};
pub use ops::{
    ChannelDue, ExportFilter, HealthStats, LiveSession, MigrationStatus, NewSession, Session,
};
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
    /// The longest the irreversible step can take: the lease must outlast it.
    pub lease_margin: Duration,
}

/// What [`Store::claim_post`] did. Only [`PostClaimed::Claimed`] wrote anything.
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

/// The storage interface. Every method is one transaction.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a draft and its `created` event; with an idempotency key, a repeat
    /// returns the first post ([`Created::existing`]), a different body with the same
    /// key is [`StoreError::IdempotencyMismatch`]. A post for an already filled slot
    /// returns that slot's post.
    async fn create_post(&self, req: CreatePost) -> Result<Created>;

    /// One post.
    async fn get_post(&self, id: PostId) -> Result<Post>;

    /// One post with its events, intents, reservations and verdicts.
    async fn post_detail(&self, id: PostId) -> Result<PostDetail>;

    /// A post's verdicts, oldest first (those of a discarded draft stay).
    async fn verdicts(&self, id: PostId) -> Result<Vec<Verdict>>;

    /// Posts, newest first.
    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<Post>>;

    /// Posts as lists show them, newest first, with the text cut by the database to its
    /// first `excerpt_chars + 1` characters ([`PostSummary::excerpt`]): however large the
    /// posts, a page costs what it shows.
    async fn list_summaries(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<PostSummary>>;

    /// Applies a named change ([`Change`]) with its events, verdict, intent,
    /// reservations, failure counter, pause and notifications. A stale generation changes
    /// nothing, records a `stale_outcome` event (except the reaper's) and returns
    /// [`StoreError::Fenced`]; a stale version returns [`StoreError::Conflict`].
    async fn change_post(&self, change: PostChange) -> Result<Post>;

    /// Discards a draft (its events stay in the ledger, with a `discarded` event).
    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()>;

    /// Appends a non-status event (a note, a verification result), with notifications.
    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()>;

    /// Events across the ledger with ids above `after`, oldest first.
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>>;

    /// Approved posts due at `now` on these channels (not before `not_before`, their
    /// channel not paused), most overdue first, read without a lock: the candidates a
    /// worker checks and then claims with [`Store::claim_post`].
    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>>;

    /// Claims a checked post in one transaction: confirms it is still `approved` at the
    /// checked version (and not published), that publishing is not paused for it, and
    /// that its quota allows it; then claims it (lease, next generation, read back in
    /// the transaction), reserves its quota and, when asked, records its intent, durably.
    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed>;

    /// Records read-back results: `verified_at` (and a permalink the post lacked) with a
    /// `verified` event, or a `verify_failed` event with its notifications. A post that
    /// is no longer `posted` is left alone. One transaction for all.
    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()>;

    /// Records the intent and marks the post's reservation as sent, at `now` advanced by
    /// any wait for the lock ([`now_after`]), durably (whatever the server's defaults)
    /// before the irreversible request. Fenced unless the post is `posting` under the
    /// generation with a lease that outlasts that time by `lease_margin`; refused with
    /// [`StoreError::Paused`] while its channel or everything is paused; a second intent
    /// for the same generation is [`StoreError::Duplicate`].
    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent>;

    /// `posting` posts whose lease ended before `now`; a row that cannot be decoded is
    /// reported in its place, so one bad row does not stop the others.
    async fn expired_leases(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>>;

    /// `needs_review` posts with their latest intents, oldest first; a row that cannot be
    /// decoded is reported in its place.
    async fn review_queue(&self) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>>;

    /// Approved posts held by a quota deferral, soonest first.
    async fn deferred_posts(&self) -> Result<Vec<Deferred>>;

    /// When the next approved post becomes due on these channels, if any is waiting.
    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>>;

    /// Live reservations that count at or after `since` (and every unsent one), checked
    /// fail-closed against `now`.
    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows>;

    /// Sets a pause; `false` if the scope was already paused.
    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool>;

    /// Lifts a pause; `false` if the scope was not paused.
    async fn resume(
        &self,
        scope: &PauseScope,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool>;

    /// Active pauses.
    async fn pauses(&self) -> Result<Vec<Pause>>;

    /// Leases up to `limit` due notifications to `worker` until `lease_until`.
    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>>;

    /// Marks a notification delivered, if `worker` still holds its lease; `false` (and
    /// nothing changed) when the lease passed to another worker or it was settled.
    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool>;

    /// Records a failed delivery at `now`: retry at `retry_at`, or give up when `None`.
    /// Only while `worker` holds the lease; `false` otherwise.
    async fn notification_failed(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<bool>;

    /// Outbox counts.
    async fn outbox_stats(&self) -> Result<OutboxStats>;

    /// Stores a token; [`StoreError::Duplicate`] if the name is taken.
    async fn create_token(&self, token: NewToken) -> Result<()>;

    /// All tokens, revoked ones included.
    async fn tokens(&self) -> Result<Vec<TokenRecord>>;

    /// Revokes a token; `false` if no active token has that name.
    async fn revoke_token(&self, name: &str, now: DateTime<Utc>) -> Result<bool>;

    /// The active token with this secret hash, noting its use.
    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>>;

    /// Post counts per status.
    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>>;

    /// Ledger invariants that do not hold, each a sentence (empty when healthy).
    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>>;

    /// Server or connection settings under which a commit may not survive a crash
    /// (PostgreSQL `fsync = off`, `synchronous_commit = off`; SQLite not `synchronous =
    /// FULL`), each a sentence. airlock forces durable commits for intents and outcomes
    /// whatever they say, but the rest of the ledger relies on them.
    async fn durability_warnings(&self) -> Result<Vec<String>>;

    /// Whose clock the ledger decides by, and (for the database's) its time now.
    async fn ledger_clock(&self) -> Result<LedgerClock>;

    /// A counter of "a post may have become due" signals from other processes, to pass to
    /// [`Store::wait_for_due`]. Read it *before* looking at the ledger, so that a signal
    /// arriving between that look and the wait is not lost. Backends without
    /// cross-process signals always answer 0.
    async fn due_signals(&self) -> u64;

    /// Waits until the signal counter differs from `seen` (another process may have made
    /// a post due: approved, requeued, resumed), or `timeout` passes; returns the counter.
    /// A wake-up is a hint, never the record: callers look at the ledger afterwards.
    /// Backends without cross-process signals just sleep.
    async fn wait_for_due(&self, seen: u64, timeout: std::time::Duration) -> u64;

    /// When each source path was last used on a channel (`reuse_after`, docs/sites.md).
    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>>;

    /// One page of an export: up to `limit` posts matching `filter` with ids above
    /// `after`, in id order, each with everything [`Store::post_detail`] gives. One
    /// consistent read per page; callers page by the last id, so memory stays at one
    /// page whatever the ledger's size.
    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>>;

    /// Stores a dashboard session, removing expired ones and, past
    /// [`NewSession::max_sessions`], the oldest.
    async fn open_session(&self, session: NewSession) -> Result<()>;

    /// The session with this id hash, expired or not (callers decide and say which).
    async fn session(&self, id_sha256: &str) -> Result<Option<Session>>;

    /// Ends a session; `false` if there was none.
    async fn end_session(&self, id_sha256: &str) -> Result<bool>;

    /// Ledger figures for health alerts, at `now`.
    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats>;

    /// Posts as the HTTP API and MCP list them, newest first: every field of the post,
    /// with the text cut by the database to its first `excerpt_chars + 1` characters (so
    /// a caller can tell a cut text), so a page costs what it shows however long the
    /// texts are.
    async fn list_excerpts(&self, filter: &PostFilter, excerpt_chars: u32) -> Result<Vec<Post>>;

    /// How many posts `actor` created that are still drafts (`[server]
    /// max_drafts_per_token`).
    async fn live_drafts_by(&self, actor: &str) -> Result<i64>;

    /// The server secret named `name`: the stored one, or, when there is none yet,
    /// `candidate`, stored now (the first process to ask decides; every later one, on
    /// any host, reads the same).
    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String>;

    /// Dashboard sessions still live at `now` whose token is not revoked, oldest first,
    /// each with its token's name: what to check after restoring a backup.
    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<LiveSession>>;

    /// Due posts per channel at `now` (as [`HealthStats::due`] counts them, paused
    /// scopes left out), for alerts that look only at the channels a dispatcher serves.
    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<ChannelDue>>;
}
