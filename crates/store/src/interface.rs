//! The [`Store`] trait, split by concern so that each backend implements each part in the
//! module that holds its SQL: the shared [`Reads`] (one implementation for both SQL
//! backends, reached through [`ReadsFrom`]), [`Posts`], [`Publishing`], [`Admin`] and
//! [`Sessions`]. Callers hold a `dyn Store` and see every method.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use airlock_core::{
    ChannelName, Intent, Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary, Verdict,
};

use crate::{
    ChannelDue, CreatePost, Created, Deferred, EventNote, ExpiredLease, ExportFilter, HealthStats,
    IntentRequest, LedgerClock, LiveSession, NewNotification, NewSession, NewToken, Notification,
    OutboxStats, Pause, PauseScope, PostChange, PostClaim, PostClaimed, PostFilter, QuotaRows,
    Result, ReviewItem, Session, TokenRecord, Unreadable, VerificationRecord,
};

/// What every store reads the same way: one snapshot per call, no writes. The SQL
/// backends share one implementation (`airlock_store_sql::SqlReads`).
#[async_trait]
pub trait Reads: Send + Sync {
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

    /// Approved posts due at `now` on these channels (not before `not_before`, their
    /// channel not paused), most overdue first, read without a lock: the candidates a
    /// worker checks and then claims with [`Publishing::claim_post`].
    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>>;

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

    /// Active pauses.
    async fn pauses(&self) -> Result<Vec<Pause>>;

    /// Outbox counts.
    async fn outbox_stats(&self) -> Result<OutboxStats>;

    /// All tokens, revoked ones included.
    async fn tokens(&self) -> Result<Vec<TokenRecord>>;

    /// Post counts per status.
    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>>;

    /// Ledger invariants that do not hold, each a sentence (empty when healthy).
    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>>;

    /// When each source path was last used on a channel (`reuse_after`, docs/sites.md).
    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>>;

    /// One page of an export: up to `limit` posts matching `filter` with ids above
    /// `after`, in id order, each with everything [`Reads::post_detail`] gives. One
    /// consistent read per page; callers page by the last id, so memory stays at one
    /// page whatever the ledger's size.
    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>>;

    /// The session with this id hash, expired or not (callers decide and say which).
    async fn session(&self, id_sha256: &str) -> Result<Option<Session>>;

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

    /// Every creator that holds live drafts, with how many, by creator (`token:agent`):
    /// what [`Reads::live_drafts_by`] counts, for all of them in one read.
    async fn live_drafts_by_creator(&self) -> Result<Vec<(String, i64)>>;

    /// Dashboard sessions still live at `now` whose token is not revoked, oldest first,
    /// each with its token's name: what to check after restoring a backup.
    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<LiveSession>>;

    /// Due posts per channel at `now` (as [`HealthStats::due`] counts them, paused
    /// scopes left out), for alerts that look only at the channels a dispatcher serves.
    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<ChannelDue>>;
}

/// A store whose [`Reads`] are another value's: the SQL backends hand theirs to one
/// shared reader.
pub trait ReadsFrom: Send + Sync {
    /// The reader.
    fn reader(&self) -> &dyn Reads;
}

#[async_trait]
impl<T: ReadsFrom> Reads for T {
    async fn get_post(&self, id: PostId) -> Result<Post> {
        self.reader().get_post(id).await
    }

    async fn post_detail(&self, id: PostId) -> Result<PostDetail> {
        self.reader().post_detail(id).await
    }

    async fn verdicts(&self, id: PostId) -> Result<Vec<Verdict>> {
        self.reader().verdicts(id).await
    }

    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<Post>> {
        self.reader().list_posts(filter).await
    }

    async fn list_summaries(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<PostSummary>> {
        self.reader().list_summaries(filter, excerpt_chars).await
    }

    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>> {
        self.reader()
            .due_posts(channels, test_channels, now, limit)
            .await
    }

    async fn expired_leases(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>> {
        self.reader().expired_leases(now).await
    }

    async fn review_queue(&self) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>> {
        self.reader().review_queue().await
    }

    async fn deferred_posts(&self) -> Result<Vec<Deferred>> {
        self.reader().deferred_posts().await
    }

    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>> {
        self.reader().next_due_at(channels, test_channels).await
    }

    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows> {
        self.reader().quota_rows(since, now).await
    }

    async fn pauses(&self) -> Result<Vec<Pause>> {
        self.reader().pauses().await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.reader().outbox_stats().await
    }

    async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        self.reader().tokens().await
    }

    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>> {
        self.reader().status_counts().await
    }

    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>> {
        self.reader().check_invariants(now).await
    }

    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        self.reader().sources_used(channel, since).await
    }

    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        self.reader().export_page(filter, after, limit).await
    }

    async fn session(&self, id_sha256: &str) -> Result<Option<Session>> {
        self.reader().session(id_sha256).await
    }

    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats> {
        self.reader().health_stats(now).await
    }

    async fn list_excerpts(&self, filter: &PostFilter, excerpt_chars: u32) -> Result<Vec<Post>> {
        self.reader().list_excerpts(filter, excerpt_chars).await
    }

    async fn live_drafts_by(&self, actor: &str) -> Result<i64> {
        self.reader().live_drafts_by(actor).await
    }

    async fn live_drafts_by_creator(&self) -> Result<Vec<(String, i64)>> {
        self.reader().live_drafts_by_creator().await
    }

    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<LiveSession>> {
        self.reader().live_sessions(now).await
    }

    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<ChannelDue>> {
        self.reader().due_by_channel(now).await
    }
}

/// Changes to posts: drafts, named changes, events and verifications.
#[async_trait]
pub trait Posts: Send + Sync {
    /// Creates a draft and its `created` event; with an idempotency key, a repeat
    /// returns the first post ([`Created::existing`]), a different body with the same
    /// key is [`StoreError::IdempotencyMismatch`](crate::StoreError::IdempotencyMismatch). A post for an already filled slot
    /// returns that slot's post.
    async fn create_post(&self, req: CreatePost) -> Result<Created>;

    /// The post an earlier create with `key` made, if the key was used within its `ttl`
    /// before `now`, as [`Posts::create_post`] would answer a repeat (a different request
    /// is [`StoreError::IdempotencyMismatch`](crate::StoreError::IdempotencyMismatch)).
    /// Writes nothing: a front end asks first, so a retry is answered before the request
    /// is checked again against a clock that moved on.
    async fn created_with_key(
        &self,
        key: &crate::CreateKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Created>>;

    /// Applies a named change ([`Change`](crate::Change)) with its events, verdict, intent,
    /// reservations, failure counter, pause and notifications. A stale generation changes
    /// nothing, records a `stale_outcome` event (except the reaper's) and returns
    /// [`StoreError::Fenced`](crate::StoreError::Fenced); a stale version returns [`StoreError::Conflict`](crate::StoreError::Conflict).
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

    /// Records read-back results: `verified_at` (and a permalink the post lacked) with a
    /// `verified` event, or a `verify_failed` event with its notifications. A post that
    /// is no longer `posted` is left alone. One transaction for all.
    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()>;
}

/// The guarded path's writes: the claim (with its quota reservation) and the intent.
#[async_trait]
pub trait Publishing: Send + Sync {
    /// Claims a checked post in one transaction: confirms it is still `approved` at the
    /// checked version (and not published), that publishing is not paused for it, and
    /// that its quota allows it; then claims it (lease, next generation, read back in
    /// the transaction), reserves its quota and, when asked, records its intent, durably.
    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed>;

    /// Records the intent and marks the post's reservation as sent, at `now` advanced by
    /// any wait for the lock ([`now_after`](crate::now_after)), durably (whatever the server's defaults)
    /// before the irreversible request. Fenced unless the post is `posting` under the
    /// generation with a lease that outlasts that time by `lease_margin`; refused with
    /// [`StoreError::Paused`](crate::StoreError::Paused) while its channel or everything is paused; a second intent
    /// for the same generation is [`StoreError::Duplicate`](crate::StoreError::Duplicate).
    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent>;
}

/// Pauses, the notification outbox, API tokens and the durability check.
#[async_trait]
pub trait Admin: Send + Sync {
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

    /// Lifts a pause only while its reason still begins with `reason_prefix` (the pause a
    /// post's own unknown outcome set, not taken over since); `false` otherwise.
    async fn resume_own(
        &self,
        scope: &PauseScope,
        reason_prefix: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool>;

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

    /// Stores a token; [`StoreError::Duplicate`](crate::StoreError::Duplicate) if the name is taken.
    async fn create_token(&self, token: NewToken) -> Result<()>;

    /// Revokes a token; `false` if no active token has that name. With `keep_operator`,
    /// the last active operator token is not revoked
    /// ([`StoreError::LastOperator`](crate::StoreError::LastOperator)), decided in the
    /// same transaction, so two revokes at once cannot leave none.
    async fn revoke_token(
        &self,
        name: &str,
        now: DateTime<Utc>,
        keep_operator: bool,
    ) -> Result<bool>;

    /// The active token with this secret hash, noting its use.
    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>>;

    /// Server or connection settings under which a commit may not survive a crash
    /// (PostgreSQL `fsync = off`, `synchronous_commit = off`; SQLite not `synchronous =
    /// FULL`), each a sentence. airlock forces durable commits for intents and outcomes
    /// whatever they say, but the rest of the ledger relies on them.
    async fn durability_warnings(&self) -> Result<Vec<String>>;
}

/// Dashboard sessions and the server's own secrets.
#[async_trait]
pub trait Sessions: Send + Sync {
    /// Stores a dashboard session, removing expired ones and, past
    /// [`NewSession::max_sessions`], the oldest.
    async fn open_session(&self, session: NewSession) -> Result<()>;

    /// Ends a session; `false` if there was none.
    async fn end_session(&self, id_sha256: &str) -> Result<bool>;

    /// The server secret named `name`: the stored one, or, when there is none yet,
    /// `candidate`, stored now (the first process to ask decides; every later one, on
    /// any host, reads the same).
    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String>;
}

/// The storage interface: the shared [`Reads`], the writes by concern, and what each
/// backend does its own way (the event feed, its clock, wake-ups). Every method is one
/// transaction.
#[async_trait]
pub trait Store: Reads + Posts + Publishing + Admin + Sessions + 'static {
    /// Events across the ledger with ids above `after`, oldest first.
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>>;

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

    /// Waits this process gave up ([`crate::StoreError::Timeout`]) since it started, for
    /// `/metrics`: `(lock, statement)`. Backends that never wait on another session
    /// answer zeros.
    fn timeouts(&self) -> (u64, u64) {
        (0, 0)
    }
}
