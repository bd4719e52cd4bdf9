//! [`Metered`]: a [`Store`] that delegates every call to a real store and counts the
//! post text it hands back, for tests that bound what a page or a request loads ("a page
//! of the largest posts costs what it shows"), and the write transactions it runs, for
//! the benchmark's commits per publish. It is not a mock: every answer is the
//! real store's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use airlock_core::{
    ChannelName, Intent, Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary,
};
use airlock_store::{
    Admin, CreatePost, Created, EventNote, ExpiredLease, ExportFilter, HealthStats, IntentRequest,
    NewNotification, NewSession, NewToken, Notification, OutboxStats, Pause, PauseScope,
    PostChange, PostClaim, PostClaimed, PostFilter, Posts, Publishing, QuotaRows, Reads, Result,
    ReviewItem, Session, Sessions, Store, TokenRecord, Unreadable, VerificationRecord,
};

/// A store that counts what it returns.
pub struct Metered {
    inner: Arc<dyn Store>,
    whole_texts: AtomicUsize,
    text_bytes: AtomicUsize,
    excerpt_bytes: AtomicUsize,
    writes: AtomicUsize,
}

/// What a [`Metered`] store handed back since the last [`Metered::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loaded {
    /// Whole post texts (in `Post`s).
    pub whole_texts: usize,
    /// Bytes of those texts.
    pub text_bytes: usize,
    /// Bytes of summary excerpts.
    pub excerpt_bytes: usize,
    /// Calls of methods that write: each is one transaction, one commit.
    pub writes: usize,
}

impl Metered {
    /// Wraps a real store.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Metered {
            inner,
            whole_texts: AtomicUsize::new(0),
            text_bytes: AtomicUsize::new(0),
            excerpt_bytes: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        }
    }

    /// What was loaded since the last call, and starts counting again.
    pub fn take(&self) -> Loaded {
        Loaded {
            whole_texts: self.whole_texts.swap(0, Ordering::SeqCst),
            text_bytes: self.text_bytes.swap(0, Ordering::SeqCst),
            excerpt_bytes: self.excerpt_bytes.swap(0, Ordering::SeqCst),
            writes: self.writes.swap(0, Ordering::SeqCst),
        }
    }

    fn count_text(&self, text: &str) {
        self.whole_texts.fetch_add(1, Ordering::SeqCst);
        self.text_bytes.fetch_add(text.len(), Ordering::SeqCst);
    }

    fn count_post(&self, post: &Result<Post>) {
        if let Ok(post) = post {
            self.count_text(&post.content.text);
        }
    }

    fn count_excerpt(&self, excerpt: &str) {
        self.excerpt_bytes
            .fetch_add(excerpt.len(), Ordering::SeqCst);
    }
}

#[async_trait]
impl Reads for Metered {
    async fn get_post(&self, id: PostId) -> Result<Post> {
        let res = self.inner.get_post(id).await;
        self.count_post(&res);
        res
    }

    async fn post_detail(&self, id: PostId) -> Result<PostDetail> {
        let res = self.inner.post_detail(id).await;
        if let Ok(d) = &res {
            self.count_text(&d.post.content.text);
        }
        res
    }

    async fn verdicts(&self, id: PostId) -> Result<Vec<airlock_core::Verdict>> {
        let res = self.inner.verdicts(id).await;
        if let Ok(verdicts) = &res {
            for content in verdicts.iter().filter_map(|v| v.content.as_ref()) {
                self.count_text(&content.text);
            }
        }
        res
    }

    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<Post>> {
        let res = self.inner.list_posts(filter).await;
        if let Ok(posts) = &res {
            for p in posts {
                self.count_text(&p.content.text);
            }
        }
        res
    }

    async fn list_summaries(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<PostSummary>> {
        let res = self.inner.list_summaries(filter, excerpt_chars).await;
        if let Ok(rows) = &res {
            for r in rows {
                self.count_excerpt(&r.excerpt);
            }
        }
        res
    }

    async fn list_excerpts(&self, filter: &PostFilter, excerpt_chars: u32) -> Result<Vec<Post>> {
        let res = self.inner.list_excerpts(filter, excerpt_chars).await;
        if let Ok(posts) = &res {
            for p in posts {
                self.count_excerpt(&p.content.text);
            }
        }
        res
    }

    async fn live_drafts_by(&self, actor: &str) -> Result<i64> {
        self.inner.live_drafts_by(actor).await
    }

    async fn live_drafts_by_creator(&self) -> Result<Vec<(String, i64)>> {
        self.inner.live_drafts_by_creator().await
    }

    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>> {
        let res = self
            .inner
            .due_posts(channels, test_channels, now, limit)
            .await;
        if let Ok(posts) = &res {
            for p in posts {
                self.count_text(&p.content.text);
            }
        }
        res
    }

    async fn deferred_posts(&self) -> Result<Vec<airlock_store::Deferred>> {
        self.inner.deferred_posts().await
    }

    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>> {
        self.inner.next_due_at(channels, test_channels).await
    }

    async fn expired_leases(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>> {
        let res = self.inner.expired_leases(now).await;
        if let Ok(items) = &res {
            for i in items.iter().flatten() {
                self.count_text(&i.post.content.text);
            }
        }
        res
    }

    async fn review_queue(&self) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>> {
        let res = self.inner.review_queue().await;
        if let Ok(items) = &res {
            for i in items.iter().flatten() {
                self.count_text(&i.post.content.text);
            }
        }
        res
    }

    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows> {
        self.inner.quota_rows(since, now).await
    }

    async fn pauses(&self) -> Result<Vec<Pause>> {
        self.inner.pauses().await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.inner.outbox_stats().await
    }

    async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        self.inner.tokens().await
    }

    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>> {
        self.inner.status_counts().await
    }

    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>> {
        self.inner.check_invariants(now).await
    }

    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        self.inner.sources_used(channel, since).await
    }

    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        let res = self.inner.export_page(filter, after, limit).await;
        if let Ok(page) = &res {
            for detail in page {
                self.count_text(&detail.post.content.text);
            }
        }
        res
    }

    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats> {
        self.inner.health_stats(now).await
    }

    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<airlock_store::ChannelDue>> {
        self.inner.due_by_channel(now).await
    }

    async fn session(&self, id_sha256: &str) -> Result<Option<Session>> {
        self.inner.session(id_sha256).await
    }

    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<airlock_store::LiveSession>> {
        self.inner.live_sessions(now).await
    }
}

#[async_trait]
impl Posts for Metered {
    async fn create_post(&self, req: CreatePost) -> Result<Created> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create_post(req).await
    }

    async fn created_with_key(
        &self,
        key: &airlock_store::CreateKey,
        now: DateTime<Utc>,
    ) -> Result<Option<Created>> {
        self.inner.created_with_key(key, now).await
    }

    async fn change_post(&self, change: PostChange) -> Result<Post> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.change_post(change).await
    }

    async fn delete_draft(
        &self,
        id: PostId,
        version: i64,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete_draft(id, version, actor, now).await
    }

    async fn add_event(
        &self,
        id: PostId,
        event: EventNote,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.add_event(id, event, actor, now, notify).await
    }

    async fn record_verifications(&self, records: &[VerificationRecord]) -> Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.record_verifications(records).await
    }
}

#[async_trait]
impl Publishing for Metered {
    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.claim_post(req).await
    }

    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.record_intent(req).await
    }
}

#[async_trait]
impl Admin for Metered {
    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.pause(scope, reason, actor, now, notify).await
    }

    async fn resume(
        &self,
        scope: &PauseScope,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.resume(scope, actor, now, notify).await
    }

    async fn resume_own(
        &self,
        scope: &PauseScope,
        reason_prefix: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner
            .resume_own(scope, reason_prefix, actor, now, notify)
            .await
    }

    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner
            .claim_notifications(now, worker, lease_until, limit)
            .await
    }

    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.notification_delivered(id, worker, now).await
    }

    async fn notification_failed(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner
            .notification_failed(id, worker, error, retry_at, now)
            .await
    }

    async fn create_token(&self, token: NewToken) -> Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create_token(token).await
    }

    async fn revoke_token(
        &self,
        name: &str,
        now: DateTime<Utc>,
        keep_operator: bool,
    ) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.revoke_token(name, now, keep_operator).await
    }

    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>> {
        self.inner.authenticate(secret_sha256, now).await
    }

    async fn durability_warnings(&self) -> Result<Vec<String>> {
        self.inner.durability_warnings().await
    }
}

#[async_trait]
impl Sessions for Metered {
    async fn open_session(&self, session: NewSession) -> Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.open_session(session).await
    }

    async fn end_session(&self, id_sha256: &str) -> Result<bool> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.end_session(id_sha256).await
    }

    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String> {
        self.inner.server_secret(name, candidate, now).await
    }
}

#[async_trait]
impl Store for Metered {
    async fn events_after(&self, after: i64, limit: u32) -> Result<Vec<PostEvent>> {
        self.inner.events_after(after, limit).await
    }

    async fn ledger_clock(&self) -> Result<airlock_store::LedgerClock> {
        self.inner.ledger_clock().await
    }

    async fn due_signals(&self) -> u64 {
        self.inner.due_signals().await
    }

    async fn wait_for_due(&self, seen: u64, timeout: std::time::Duration) -> u64 {
        self.inner.wait_for_due(seen, timeout).await
    }
}
