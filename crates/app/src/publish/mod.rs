//! The one guarded publish path (docs/guarded-path.md). Every publish — the dispatcher
//! finding a post due, or a person or agent asking for one now — runs the same steps on the
//! post as read from the ledger:
//!
//! 1. **checks** on that snapshot: content hash (and source file) unchanged since
//!    approval, policy passes;
//! 2. **claim** in one transaction that confirms the post has not changed since it was
//!    read and its channel is not paused, moves it `approved -> posting` with a lease and
//!    a new generation, and **reserves** quota (and a channel's money budget) — or, over
//!    quota, writes nothing and the post waits for the next slot (not an attempt). For a
//!    channel without a prepare step whose account this process has already checked, the
//!    **intent** commits in the same transaction;
//! 3. otherwise check the channel's **account** once the post has its slot (a post
//!    without one costs the platform no request), **prepare** (repeatable steps such as
//!    container creation), then record the **intent** — fenced by generation, an
//!    unexpired lease and no pause;
//! 4. **publish** once;
//! 5. write the **outcome** — reservation committed or released, events, pause and
//!    notifications in one transaction — under this worker's generation only;
//! 6. **verify** by reading the post back: before answering when someone waits, else in
//!    a task of its own whose result is recorded with others' in one transaction.
//!
//! Anything that cannot be known becomes `needs_review` and pauses the channel; it is
//! never retried.
//!
//! Each run happens in a task of its own ([`App::publish_next`], [`App::publish_now`]):
//! a caller that stops waiting — a client that hung up, a request that timed out —
//! changes nothing, and a panic is caught, logged with the post id, and settled the way
//! the reaper would settle the post. Before anything new is made, the adapter sees the
//! post's earlier attempts (their containers and keys) so a retry reuses what the
//! platform refuses to publish twice.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use tracing::Instrument;

use airlock_core::hash::sha256_hex;
use airlock_core::quota::Limit;
use airlock_core::time::format_utc;
use airlock_core::{Action, Actor, ChannelName, Intent, Outcome, Post, PostId, PostStatus};
use airlock_platforms::{
    EarlierAttempt, Platform, Prepared, PublishRequest, PublishedPart, StepError, Verification,
};
use airlock_store::{
    Change, IntentClaim, IntentRequest, NewNotification, PauseScope, PauseSpec, PostChange,
    PostClaim, PostClaimed, PostFilter, QuotaClaim, StoreError, VerificationRecord,
};

use crate::drill::{boundary, injected};
use crate::{App, ChannelSettings, Error, Principal, Result};

mod checks;
mod outcome;
mod parts;
mod verify;

use checks::AccountProblem;
pub(crate) use checks::account_mismatch;
use outcome::PartStep;
use outcome::outcome_name;
pub use outcome::scope_arg;
pub(crate) use outcome::unknown_pause_prefix;
pub use parts::part_key;
pub(crate) use parts::{
    describe as describe_part, landed_of as landed_parts, part_request, with_parts,
};
pub use verify::VerifyOutcome;

/// How one run of the guarded path ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishResult {
    /// Published (`posted`).
    Posted,
    /// Definitely not published (`failed`).
    Failed {
        /// Why.
        reason: String,
    },
    /// Outcome unknown (`needs_review`), channel paused.
    NeedsReview {
        /// Why.
        reason: String,
    },
    /// Not sent; back to `approved` until `not_before`.
    Retrying {
        /// Why.
        reason: String,
        /// Next try.
        not_before: DateTime<Utc>,
    },
    /// Over quota; back to `approved` until the next slot (not an attempt).
    Deferred {
        /// Which limit.
        limit: Limit,
        /// Counted (micro-dollars for the budget).
        used: u64,
        /// Maximum (micro-dollars for the budget).
        max: u64,
        /// When a slot frees.
        next_free_at: DateTime<Utc>,
    },
    /// Paused (or paused now, after an account mismatch); back to `approved`, not an attempt.
    Held {
        /// `*` or the channel.
        scope: String,
        /// Why.
        reason: String,
    },
    /// The content changed after approval or no longer passes the policy: back to `draft`.
    ContentChanged {
        /// What changed.
        reason: String,
    },
    /// This worker lost the claim; its write was refused and recorded.
    Stale,
}

impl PublishResult {
    /// Why it ended so, for results that carry a reason.
    pub fn reason(&self) -> Option<&str> {
        match self {
            PublishResult::Failed { reason }
            | PublishResult::NeedsReview { reason }
            | PublishResult::Retrying { reason, .. }
            | PublishResult::Held { reason, .. }
            | PublishResult::ContentChanged { reason } => Some(reason),
            PublishResult::Posted | PublishResult::Deferred { .. } | PublishResult::Stale => None,
        }
    }

    /// Logs how a publish ended: a result a person must act on (an unknown outcome,
    /// which pauses the channel, or a definite failure) as a warning, the rest as
    /// information.
    pub fn log(&self, post: airlock_core::PostId) {
        let (result, reason) = (self.name(), self.reason().unwrap_or_default());
        match self {
            PublishResult::NeedsReview { .. } => tracing::warn!(
                post_id = post.0,
                result,
                reason,
                "the outcome is unknown: the post needs a person's review and its channel is paused"
            ),
            PublishResult::Failed { .. } => {
                tracing::warn!(
                    post_id = post.0,
                    result,
                    reason,
                    "the platform refused the post"
                )
            }
            _ => tracing::info!(post_id = post.0, result, reason, "dispatched"),
        }
    }

    /// A short stable name (`posted`, `deferred`, ...), for metrics and output.
    pub fn name(&self) -> &'static str {
        match self {
            PublishResult::Posted => "posted",
            PublishResult::Failed { .. } => "failed",
            PublishResult::NeedsReview { .. } => "needs_review",
            PublishResult::Retrying { .. } => "retrying",
            PublishResult::Deferred { .. } => "deferred",
            PublishResult::Held { .. } => "held",
            PublishResult::ContentChanged { .. } => "content_changed",
            PublishResult::Stale => "stale",
        }
    }
}

/// What one run of the guarded path did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishReport {
    /// The post as it stands afterwards.
    pub post: Post,
    /// How it ended.
    pub result: PublishResult,
    /// When the irreversible request was sent, if it was.
    pub sent_at: Option<DateTime<Utc>>,
}

/// How much longer than the irreversible request a lease must still run when the request
/// is sent, so the outcome is written before the reaper could see the lease expire.
/// Configuration refuses a `stale_after` that cannot leave this room.
pub const LEASE_SLACK: Duration = Duration::milliseconds(500);

/// How many due posts a worker reads at a time beyond those its place skips: when another
/// worker takes one first, it tries the next. Workers start at different places, so one
/// to fall back on is enough; each more is a whole post read and decoded on every look.
const DUE_CANDIDATES: u32 = 2;

/// A place among the runs of [`App::publish_next`] and [`App::publish_batch`] in this
/// process that are looking for posts, held from before the run reads the queue until
/// its first claim is decided:
/// each run holds the lowest place free, so runs looking at once hold different places
/// and start at different candidates, while a run that looks alone starts at the most
/// overdue post.
struct Place {
    taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Which place (0 to 63); 64 when every place is held.
    index: u32,
}

impl Place {
    fn take(taken: &std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        use std::sync::atomic::Ordering::Relaxed;
        let mut held = taken.load(Relaxed);
        let index = loop {
            let index = (!held).trailing_zeros();
            if index == u64::BITS {
                break index;
            }
            match taken.compare_exchange_weak(held, held | 1 << index, Relaxed, Relaxed) {
                Ok(_) => break index,
                Err(now) => held = now,
            }
        };
        Place {
            taken: taken.clone(),
            index,
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.index < u64::BITS {
            self.taken
                .fetch_and(!(1 << self.index), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// When a published post is read back from its platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// Before answering: someone waits for the result (`post publish`, the API, MCP).
    Now,
    /// In a task of its own, recorded with other read-backs in one transaction: the
    /// dispatcher goes on to the next post.
    Later,
}

/// How many times a platform may answer "not now" for a post (a requeue starts the count
/// again) before each further one counts as an attempt: a platform that keeps refusing
/// must not hold a post forever. With the hourly retry of a publishing limit, a day.
pub const FREE_PLATFORM_WAITS: i64 = 24;

/// The idempotency key of a post's approved content: sent to platforms that accept one,
/// the same for every attempt at the same approved content.
pub fn idempotency_key(id: PostId, approved_hash: &str) -> String {
    format!(
        "airlock-{id}-{}",
        &sha256_hex(format!("{id}:{approved_hash}").as_bytes())[..32]
    )
}

/// Backoff before retrying a not-sent attempt: 30 s doubling per attempt, at most 30 min.
pub fn retry_backoff(n_attempts: i64) -> Duration {
    let exp = n_attempts.clamp(1, 7) - 1;
    Duration::seconds(30 * (1 << exp)).min(Duration::minutes(30))
}

impl App {
    fn dispatcher_actor(&self) -> String {
        Actor::Dispatcher(self.worker().to_owned()).to_string()
    }

    /// Channels the dispatcher may claim from now: configured and not paused.
    pub async fn claimable_channels(&self) -> Result<(Vec<ChannelName>, Vec<ChannelName>)> {
        let pauses = self.store().pauses().await?;
        if pauses.iter().any(|p| p.scope == "*") {
            return Ok((Vec::new(), Vec::new()));
        }
        let open: Vec<ChannelName> = self
            .settings()
            .channels
            .keys()
            .filter(|name| !pauses.iter().any(|p| p.scope == name.as_str()))
            .cloned()
            .collect();
        let tests = open
            .iter()
            .filter(|name| self.settings().channels[*name].kind.publishes_test_posts())
            .cloned()
            .collect();
        Ok((open, tests))
    }

    /// When the next post becomes due on a channel the dispatcher may claim from
    /// ([`App::claimable_channels`]), if one is waiting.
    pub async fn next_due_at(&self) -> Result<Option<DateTime<Utc>>> {
        let (channels, tests) = self.claimable_channels().await?;
        Ok(self.store().next_due_at(&channels, &tests).await?)
    }

    /// The store's counter of "a post may have become due" signals from other
    /// processes, for [`App::wait_for_due`]. Read it *before* looking at the ledger, so
    /// that a signal arriving between that look and the wait is not lost.
    pub async fn due_signals(&self) -> u64 {
        self.store().due_signals().await
    }

    /// Waits until another process may have made a post due (the counter differs from
    /// `seen`) or `timeout` passes; returns the counter. A hint, never the record: look
    /// at the ledger afterwards.
    pub async fn wait_for_due(&self, seen: u64, timeout: std::time::Duration) -> u64 {
        self.store().wait_for_due(seen, timeout).await
    }

    /// Publishes the most overdue post (optionally only on `only`) through the guarded
    /// path. `None` when nothing is due.
    pub async fn publish_next(
        &self,
        only: Option<&[ChannelName]>,
    ) -> Result<Option<PublishReport>> {
        self.publish_batch(only, 1).await?.pop().transpose()
    }

    /// Publishes up to `batch` due posts (optionally only on `only`) from one look at the
    /// queue, all at once: each runs the guarded path in a task of its own, so their
    /// claims reach the store together, and so do their outcomes (on SQLite, one group
    /// commit each). Which of them takes a limit's last room is not fixed. An answer for
    /// each run that did not find its post taken by another worker first (published,
    /// deferred, held, back to draft, ...), in the order read; empty when there is none.
    /// Only then are the other posts read tried, one at a time.
    pub async fn publish_batch(
        &self,
        only: Option<&[ChannelName]>,
        batch: usize,
    ) -> Result<Vec<Result<PublishReport>>> {
        let batch = batch.max(1);
        let (place, mut candidates) = self.due_candidates(only, batch).await?;
        let spare = candidates.split_off(batch.min(candidates.len()));
        let mut place = Some(place);
        let runs: Vec<_> = candidates
            .into_iter()
            .map(|post| self.start_in_task(post, Verify::Later, place.take()))
            .collect();
        let mut answers = Vec::with_capacity(runs.len());
        for run in runs {
            answers.extend(Self::finished(run).await.transpose());
        }
        // Each taken by another worker first: try the next ones, one at a time.
        for post in spare {
            if !answers.is_empty() {
                break;
            }
            answers.extend(
                self.run_in_task(post, Verify::Later, None)
                    .await
                    .transpose(),
            );
        }
        Ok(answers)
    }

    /// Due posts for a run of `batch` to try, the one at the run's place first (workers
    /// looking at once start at different candidates, the one in place n at the n-th
    /// batch, so they seldom race for one post; a worker looking alone takes the most
    /// overdue), with the place it holds.
    async fn due_candidates(
        &self,
        only: Option<&[ChannelName]>,
        batch: usize,
    ) -> Result<(Place, Vec<Post>)> {
        // Paused channels' posts are left out by the store.
        let open: Vec<&ChannelSettings> = self
            .settings()
            .channels
            .values()
            .filter(|c| only.is_none_or(|only| only.contains(&c.name)))
            .collect();
        let channels: Vec<ChannelName> = open.iter().map(|c| c.name.clone()).collect();
        let tests: Vec<ChannelName> = open
            .iter()
            .filter(|c| c.kind.publishes_test_posts())
            .map(|c| c.name.clone())
            .collect();
        let place = Place::take(&self.inner.places);
        let skip = (place.index as usize).saturating_mul(batch);
        let limit = u32::try_from(skip.saturating_add(batch))
            .unwrap_or(u32::MAX)
            .saturating_add(DUE_CANDIDATES - 1);
        let mut candidates = self
            .store()
            .due_posts(&channels, &tests, self.now(), limit)
            .await?;
        let first = skip.min(candidates.len());
        candidates.rotate_left(first);
        Ok((place, candidates))
    }

    /// Runs the guarded path for `post` (as read from the ledger) in a task of its own that
    /// runs to its end whatever happens to the caller. `None` when the post was not
    /// claimed (another worker has it, or it changed). A panic is caught by a supervising
    /// task, also when nobody waits any more: logged with the post id, and the post
    /// settled as the reaper would (no intent: back to the queue; an intent: needs review).
    async fn run_in_task(
        &self,
        post: Post,
        verify: Verify,
        place: Option<Place>,
    ) -> Result<Option<PublishReport>> {
        Self::finished(self.start_in_task(post, verify, place)).await
    }

    /// Starts [`App::run_in_task`]'s task: its answer is [`App::finished`]'s.
    fn start_in_task(
        &self,
        post: Post,
        verify: Verify,
        place: Option<Place>,
    ) -> tokio::task::JoinHandle<Result<Option<PublishReport>>> {
        let app = self.clone();
        let supervisor = self.clone();
        let claimed = std::sync::Arc::new(std::sync::Mutex::new(None));
        let slot = claimed.clone();
        // Every log line of a publish carries the post and its channel.
        let span =
            tracing::info_span!("publish", post_id = post.id.0, channel = %post.content.channel);
        let run = self.inner.publishes.spawn(
            async move {
                let channel = post.content.channel.clone();
                let report = app.attempt(post, verify, &slot, place).await?;
                if let Some(report) = &report {
                    app.metrics().incr(
                        "airlock_publishes_total",
                        &[
                            ("channel", channel.as_str()),
                            ("result", report.result.name()),
                        ],
                    );
                }
                Ok(report)
            }
            .instrument(span.clone()),
        );
        self.inner.publishes.spawn(async move {
            match run.await {
                Ok(result) => result,
                Err(join) => {
                    let claimed = *claimed.lock().expect("lock is never poisoned");
                    Err(supervisor.after_panic(claimed, join).instrument(span).await)
                }
            }
        })
    }

    /// The answer of a run started by [`App::start_in_task`].
    async fn finished(
        run: tokio::task::JoinHandle<Result<Option<PublishReport>>>,
    ) -> Result<Option<PublishReport>> {
        run.await
            .map_err(|e| Error::Internal(format!("the task supervising a publish failed: {e}")))?
    }

    /// Publishes an approved post now (publisher), whatever its schedule, through the
    /// guarded path. Answers with the post as it stands afterwards, or the refusal or
    /// failure that stopped it.
    pub async fn publish_now(&self, who: &Principal, id: PostId) -> Result<Post> {
        who.require(Action::Publish)?;
        let post = self.store().get_post(id).await?;
        let channel = self.channel(post.content.channel.as_str())?;
        crate::critic::refuse_if_quarantined(&post, Action::Publish)?;
        if post.status != PostStatus::Approved {
            let hint = match post.status {
                PostStatus::Draft => "approve it first",
                PostStatus::Posted => "it is already published",
                PostStatus::Posting => "another worker is publishing it now",
                PostStatus::Failed => "requeue it first (`airlock post requeue`)",
                PostStatus::NeedsReview => "settle it first (`airlock post resolve`)",
                PostStatus::Approved => unreachable!(),
            };
            return Err(Error::IllegalTransition(format!(
                "post {id} is {}: {hint}",
                post.status
            )));
        }
        if post.test && !channel.kind.publishes_test_posts() {
            return Err(Error::Invalid(format!(
                "post {id} is a test post and {} is a {} channel: test posts publish only on sandboxes",
                channel.name, channel.kind
            )));
        }
        self.ensure_not_paused(&channel.name).await?;
        let Some(report) = self.run_in_task(post, Verify::Now, None).await? else {
            return Err(Error::Conflict(format!(
                "post {id} was claimed by another worker or changed meanwhile: check `airlock post show {id}`"
            )));
        };
        match report.result {
            PublishResult::Posted => Ok(report.post),
            PublishResult::Failed { reason } => Err(Error::PublishFailed(reason)),
            PublishResult::NeedsReview { reason } => Err(Error::OutcomeUnknown(reason)),
            PublishResult::Retrying { reason, not_before } => Err(Error::NotSent(format!(
                "{reason}; next try after {}",
                format_utc(not_before)
            ))),
            PublishResult::Deferred {
                limit,
                used,
                max,
                next_free_at,
            } => Err(Error::OverQuota {
                limit,
                used,
                max,
                next_free_at,
            }),
            PublishResult::Held { scope, reason } => Err(Error::Paused {
                scope: scope_arg(&scope),
                reason,
            }),
            PublishResult::ContentChanged { reason } => Err(Error::Conflict(format!(
                "post {id} was not published: {reason}; it is back to draft for review"
            ))),
            PublishResult::Stale => Err(Error::Conflict(format!(
                "post {id} was taken over by another worker while publishing: check `airlock post show {id}`"
            ))),
        }
    }

    /// Refuses with [`Error::Paused`] when the channel or everything is paused.
    pub async fn ensure_not_paused(&self, channel: &ChannelName) -> Result<()> {
        let pauses = self.store().pauses().await?;
        if let Some(pause) = pauses
            .iter()
            .find(|p| p.scope == "*" || p.scope == channel.as_str())
        {
            return Err(Error::Paused {
                scope: scope_arg(&pause.scope),
                reason: pause.reason.clone(),
            });
        }
        Ok(())
    }

    /// The guarded path for one post as read from the ledger (docs/guarded-path.md): checks
    /// on what was read, then one transaction that confirms nothing changed, claims,
    /// reserves and — for channels without a `prepare` step — records the intent; then
    /// `prepare` and the intent for the others; the one request; the outcome; verification.
    async fn attempt(
        &self,
        post: Post,
        verify: Verify,
        claimed: &std::sync::Mutex<Option<(PostId, i64)>>,
        place: Option<Place>,
    ) -> Result<Option<PublishReport>> {
        let (Some(channel), Some(platform)) = (
            self.settings().channels.get(&post.content.channel).cloned(),
            self.platform(&post.content.channel).cloned(),
        ) else {
            // Not a channel of this process: the dispatcher never lists it; leave it.
            return Ok(None);
        };

        // 1. Checks, on the post as read: the claim confirms it has not changed since.
        if let Some(reason) = self.content_change(&post, &channel).await {
            return self.back_to_draft(post, reason).await.map(Some);
        }
        let violations = channel.policy.check(&post.content);
        if !violations.is_empty() {
            let reason = format!(
                "the content no longer passes the channel's policy: {}",
                violations
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            return self.back_to_draft(post, reason).await.map(Some);
        }
        // A post of several parts resumes after the parts already out: those count as
        // its publish, so the claim reserves nothing more.
        let landed = if post.content.is_multipart() {
            parts::landed(&self.store().post_detail(post.id).await?.intents)
        } else {
            Vec::new()
        };
        let count = post.content.part_count() as u32;
        let first_part = landed.len() as u32 + 1;
        if first_part > count {
            return Err(Error::Internal(format!(
                "post {} is approved with all {count} parts out: settle it with `airlock post resolve {} --published`",
                post.id, post.id
            )));
        }

        // 2. Claim and reserve in one transaction, with the intent when no repeatable
        // step (nor a first look at the account) comes before the request.
        let approved_hash = post
            .approved_hash
            .as_ref()
            .map(|h| h.as_str().to_owned())
            .unwrap_or_default();
        let key = idempotency_key(post.id, &approved_hash);
        // Media to fetch again come before the intent, so it cannot fold into the claim.
        let recheck = post.content.all_media().any(|m| m.sha256.is_some());
        let fold_intent = !platform.prepares() && self.account_known(&channel.name) && !recheck;
        let now = self.now();
        let claim = PostClaim {
            id: post.id,
            version: post.version,
            allow_test: channel.kind.publishes_test_posts(),
            worker: self.worker().to_owned(),
            actor: self.dispatcher_actor(),
            now,
            lease_until: now + self.settings().stale_after,
            quota: (!post.test && landed.is_empty()).then(|| QuotaClaim {
                window: self.settings().window,
                daily: channel.daily(),
                budget: channel.charge(&post.content),
            }),
            intent: fold_intent.then(|| IntentClaim {
                part: first_part,
                idempotency_key: parts::part_key(&key, first_part),
                lease_margin: channel.publish_time(),
            }),
        };
        let snapshot = post;
        let claimed_now = self.store().claim_post(&claim).await;
        // Decided: another run looking now may start where this one did.
        drop(place);
        let (post, intent) = match claimed_now {
            Ok(PostClaimed::Claimed { post, intent }) => (*post, intent),
            Ok(PostClaimed::Gone(_)) => return Ok(None),
            Ok(PostClaimed::Paused { scope, reason }) => {
                return Ok(Some(PublishReport {
                    post: snapshot,
                    result: PublishResult::Held { scope, reason },
                    sent_at: None,
                }));
            }
            Ok(PostClaimed::OverQuota(denial)) => {
                return self.defer(snapshot, denial).await.map(Some);
            }
            Err(StoreError::CorruptQuota(reason)) => return Err(self.corrupt_quota(reason).await),
            Err(e) => return Err(e.into()),
        };
        *claimed.lock().expect("lock is never poisoned") = Some((post.id, post.generation));
        boundary("publish::after_claim");

        // 3. The account, once the post has its slot; a mismatch or a refusal releases the
        // reservation with the post.
        if intent.is_none()
            && let Err(problem) = self.check_account(&channel, platform.as_ref()).await
        {
            return match problem {
                AccountProblem::Mismatch(reason) => {
                    let pause = self.pause_spec(&channel.name, reason.clone(), None);
                    self.forget_account(&channel.name);
                    self.hold(post, channel.name.to_string(), reason, Some(pause))
                        .await
                }
                AccountProblem::Step(step) => self.step_failed(post, step).await,
            }
            .map(Some);
        }

        // Still step 3: the media of every part still to go out are the approved bytes,
        // or nothing is sent. The run's first part is fetched last, right before it is
        // prepared; each later part is fetched again right before it is.
        let with_media = 1 + post.content.more.len() as u32;
        let order = (first_part + 1..=with_media).chain(std::iter::once(first_part));
        for number in order.filter(|n| *n <= with_media) {
            let request = parts::part_request(&post, number, Vec::new(), &key);
            if let Err(step) = self.recheck_media(&request.media).await {
                return self
                    .step_failed(post, in_part(&request, step))
                    .await
                    .map(Some);
            }
        }

        // Steps 3 to 5 once per part, from the first not out: each part's request has its
        // own intent under a generation of its own, recorded before it is sent.
        let mut post = post;
        let mut intent = intent;
        let mut published = landed;
        let mut number = first_part;
        let mut first_sent = None;
        loop {
            let mut request = parts::part_request(&post, number, published.clone(), &key);
            request.now = self.now();
            let (prepared, sent_at) = match intent.take() {
                Some(intent) => (Prepared::default(), intent.created_at),
                None => {
                    // Still step 3: a later part's media are the approved bytes, fetched
                    // again right before the part is prepared (a platform that fetches the
                    // URL itself does so from here on), or nothing of it is sent. The
                    // run's first part was checked with the others just before the loop.
                    if number != first_part
                        && let Err(step) = self.recheck_media(&request.media).await
                    {
                        return self
                            .step_failed(post, in_part(&request, step))
                            .await
                            .map(Some);
                    }
                    request.earlier = match self.earlier_attempts(&post, number).await {
                        Ok(earlier) => earlier,
                        // Without the earlier attempts' handles a retry could make a second
                        // copy.
                        Err(e) => {
                            let reason = format!(
                                "the earlier attempts of this post cannot be read ({e}); nothing was sent"
                            );
                            return self.not_sent(post, reason, None, false).await.map(Some);
                        }
                    };
                    let prepared = match platform.prepare(&request).await {
                        Ok(prepared) => prepared,
                        Err(step) => {
                            return self
                                .step_failed(post, in_part(&request, step))
                                .await
                                .map(Some);
                        }
                    };
                    boundary("publish::after_prepare");
                    if let Some(proof) = prepared.already_published {
                        // The platform shows this part published by an earlier attempt:
                        // nothing is sent.
                        tracing::warn!(post_id = post.id.0, part = number, note = %proof.note, "already published by an earlier attempt");
                        // The attempt the proof names sent it; without a name, the latest
                        // attempt (the request the platform received last).
                        let intents = || request.earlier.iter().filter(|a| !a.resend);
                        let sender = proof
                            .attempt
                            .and_then(|g| intents().find(|a| a.generation == g))
                            .or_else(|| intents().next_back())
                            .cloned();
                        let found = airlock_core::Published {
                            platform_post_id: proof.platform_post_id,
                            permalink: proof.permalink,
                            pause: None,
                            existing: Some(proof.note),
                        };
                        if number < count {
                            match self
                                .part_published(post, &request, found, sender.as_ref())
                                .await?
                            {
                                PartStep::Next(next, part) => {
                                    post = *next;
                                    published.push(part);
                                    number += 1;
                                    *claimed.lock().expect("lock is never poisoned") =
                                        Some((post.id, post.generation));
                                    continue;
                                }
                                PartStep::Ended(report) => return Ok(Some(*report)),
                            }
                        }
                        let mut report = self
                            .write_published(post, &channel, found, sender.as_ref(), &request)
                            .await?;
                        report.sent_at = first_sent.or(sender.map(|a| a.sent_at));
                        return Ok(Some(report));
                    }
                    let intent = IntentRequest {
                        part: number,
                        post_id: post.id,
                        generation: post.generation,
                        idempotency_key: request.idempotency_key.clone(),
                        platform_ref: prepared.platform_ref.clone(),
                        now: self.now(),
                        lease_margin: channel.publish_time(),
                    };
                    match self.store().record_intent(&intent).await {
                        Ok(intent) => (prepared, intent.created_at),
                        // The claim is gone (lease expired, reaped): nothing was sent, and
                        // nothing will be.
                        Err(StoreError::Fenced { .. }) => return self.stale(post).await.map(Some),
                        // Paused while the post was being prepared: nothing may be sent now.
                        Err(StoreError::Paused { scope, reason }) => {
                            return self.hold(post, scope, reason, None).await.map(Some);
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            first_sent.get_or_insert(sent_at);
            boundary("publish::after_intent");

            // 4. The one irreversible request of this part — unless this worker was held up
            // after its intent (frozen, starved) long enough that its lease may end before
            // the answer: the reaper may already have handed the post to a person, who may
            // publish it again.
            if let Some(lease) = post.lease_expires_at
                && self.now() + channel.publish_time() > lease
            {
                let reason = format!(
                    "the lease ends at {} and would not outlast the request: nothing was sent",
                    format_utc(lease)
                );
                tracing::warn!(post_id = post.id.0, "{reason}");
                return self.finish_unsent_intent(post, reason).await.map(Some);
            }
            let outcome = self.send(platform.as_ref(), &request, &prepared).await;
            boundary("publish::after_send");

            // 5. The outcome, fenced by generation: a part out with more to follow keeps
            // the claim for the next part.
            let outcome = match outcome {
                Outcome::Published(part_out) if number < count => {
                    match self.part_published(post, &request, part_out, None).await? {
                        PartStep::Next(next, part) => {
                            post = *next;
                            published.push(part);
                            number += 1;
                            *claimed.lock().expect("lock is never poisoned") =
                                Some((post.id, post.generation));
                            continue;
                        }
                        PartStep::Ended(report) => return Ok(Some(*report)),
                    }
                }
                outcome => outcome_in_part(&request, outcome),
            };
            let mut report = self
                .write_outcome(post, &channel, outcome, &request)
                .await?;
            report.sent_at = first_sent;
            boundary("publish::after_outcome");

            // 6. Verify: now for a caller who waits, else in a task of its own whose result
            // is recorded with others'. The post is published whatever happens here.
            if report.result == PublishResult::Posted {
                match verify {
                    Verify::Now => {
                        let post_id = report.post.id;
                        match self.verify(report.post.clone(), platform.as_ref()).await {
                            Ok(post) => report.post = post,
                            Err(e) => {
                                tracing::error!(post_id = post_id.0, error = %e, "the post is published; recording its verification failed")
                            }
                        }
                    }
                    Verify::Later => self.verify_later(report.post.clone(), platform),
                }
            }
            return Ok(Some(report));
        }
    }

    /// The attempts at this part of the post that recorded an intent under an earlier
    /// claim. Only a post claimed before (generation above 1) can have any.
    async fn earlier_attempts(&self, post: &Post, part: u32) -> Result<Vec<EarlierAttempt>> {
        if post.generation <= 1 {
            return Ok(Vec::new());
        }
        self.attempts_below(post, Some(post.generation), part).await
    }

    /// The post's sends of `part` under earlier claims, oldest first: each attempt that
    /// recorded an intent of a generation below `below`, and each re-send reconcile made
    /// with its key ([`sends`]).
    pub(crate) async fn attempts_below(
        &self,
        post: &Post,
        below: Option<i64>,
        part: u32,
    ) -> Result<Vec<EarlierAttempt>> {
        let detail = self.store().post_detail(post.id).await?;
        let mut attempts = sends(&detail, part);
        attempts.retain(|a| below.is_none_or(|below| a.generation < below));
        Ok(attempts)
    }

    /// A panic in a run of the guarded path: logged with the post, which is settled the
    /// way the reaper would settle it (its worker is gone, so nothing more will be sent):
    /// without an intent back to the queue, with one to `needs_review`.
    async fn after_panic(
        &self,
        claimed: Option<(PostId, i64)>,
        join: tokio::task::JoinError,
    ) -> Error {
        let what = match join.try_into_panic() {
            Ok(payload) => payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned()),
            Err(join) => join.to_string(),
        };
        let Some((id, generation)) = claimed else {
            tracing::error!(panic = %what, "a publish panicked before it claimed a post");
            return Error::Internal(format!("a publish panicked before claiming a post: {what}"));
        };
        tracing::error!(post_id = id.0, generation, panic = %what, "a publish panicked; settling the post as the reaper would");
        let reason = format!("the worker publishing it panicked ({what})");
        let settled = match self.store().get_post(id).await {
            Ok(post) if post.status == PostStatus::Posting && post.generation == generation => {
                self.settle_abandoned(post, reason).await
            }
            Ok(post) => Ok(post),
            Err(e) => Err(e.into()),
        };
        match settled {
            Ok(post) => Error::Internal(format!(
                "the publish of post {id} panicked ({what}); the post is now {}",
                post.status
            )),
            Err(e) => Error::Internal(format!(
                "the publish of post {id} panicked ({what}); settling it failed ({e}): the reaper settles it when its lease ends"
            )),
        }
    }

    async fn send(
        &self,
        platform: &dyn Platform,
        request: &PublishRequest,
        prepared: &Prepared,
    ) -> Outcome {
        tracing::info!(post_id = request.post_id.0, channel = %request.channel, "sending the irreversible request");
        let outcome = platform.publish(request, prepared).await;
        tracing::info!(
            post_id = request.post_id.0,
            outcome = outcome_name(&outcome),
            "publish answered"
        );
        outcome
    }

    /// Forget account checks for a channel (the platform said the token changed).
    pub(crate) fn forget_account(&self, channel: &ChannelName) {
        self.inner
            .accounts_checked
            .lock()
            .expect("lock is never poisoned")
            .remove(channel);
    }

    /// A change by this worker.
    pub(crate) fn by_worker(&self, post: &Post, change: Change) -> PostChange {
        PostChange::new(post.id, self.dispatcher_actor(), self.now(), change)
    }

    /// Quota rows that cannot be read as expected stop all publishing (fail closed).
    pub(crate) async fn corrupt_quota(&self, reason: String) -> Error {
        tracing::error!(%reason, "quota state is corrupt; pausing all publishing");
        let pause_reason = format!("quota state is corrupt: {reason}");
        let notify = self.notifications(
            "paused",
            None,
            format!("all publishing paused: {pause_reason}"),
            json!({"scope": "*"}),
        );
        if let Err(e) = self
            .store()
            .pause(
                &PauseScope::All,
                &pause_reason,
                &self.dispatcher_actor(),
                self.now(),
                notify,
            )
            .await
        {
            tracing::error!(error = %e, "could not pause publishing for corrupt quota state");
        }
        Error::CorruptQuota(pause_reason)
    }

    pub(crate) fn pause_spec(
        &self,
        channel: &ChannelName,
        reason: String,
        after_failures: Option<u32>,
    ) -> PauseSpec {
        PauseSpec {
            scope: PauseScope::Channel(channel.clone()),
            notify: self.notifications(
                "paused",
                None,
                format!("channel {channel} paused: {reason}"),
                json!({"scope": channel, "reason": reason}),
            ),
            reason,
            after_failures,
        }
    }

    /// `posting -> needs_review`: the reservation stays counted and the channel pauses —
    /// by the worker, or by the reaper (`reaped`) when the lease ended after the intent.
    pub(crate) fn unknown_change(&self, post: &Post, reason: &str, reaped: bool) -> PostChange {
        let channel = &post.content.channel;
        let pause = self.pause_spec(
            channel,
            format!(
                "{}{reason}); settle it with `airlock post resolve {}`",
                unknown_pause_prefix(post.id),
                post.id
            ),
            None,
        );
        let notify = self.notifications(
            "needs_review",
            Some(post.id),
            format!("post {} on {channel} needs review: {reason}", post.id),
            json!({"channel": channel, "error": reason}),
        );
        let (generation, reason, pause) = (post.generation, reason.to_owned(), Some(pause));
        let (change, actor) = if reaped {
            (
                Change::ReapedSent {
                    generation,
                    reason,
                    pause,
                },
                Actor::Reaper.to_string(),
            )
        } else {
            (
                Change::Unknown {
                    generation,
                    reason,
                    pause,
                },
                self.dispatcher_actor(),
            )
        };
        PostChange::new(post.id, actor, self.now(), change).notifying(notify)
    }
}

/// Every request a post's timeline records as sent with the key of `part`, oldest first:
/// each of that part's intents, and each reconcile re-send (a
/// [`crate::review::RESEND_EVENT`]), which sent the key of the latest intent recorded
/// before it. An adapter that fences sends of one key (Mastodon) must see them all,
/// whatever the outcome recorded since.
pub(crate) fn sends(detail: &airlock_core::PostDetail, part: u32) -> Vec<EarlierAttempt> {
    let mut sends: Vec<EarlierAttempt> = Vec::new();
    for intent in detail.intents.iter().filter(|i| i.part == part) {
        sends.push(earlier_attempt(intent.clone()));
    }
    for event in &detail.events {
        if event.kind != crate::review::RESEND_EVENT {
            continue;
        }
        if let Some(intent) = detail
            .intents
            .iter()
            .filter(|i| i.created_at <= event.at)
            .max_by_key(|i| (i.created_at, i.generation))
            .filter(|i| i.part == part)
        {
            sends.push(EarlierAttempt {
                sent_at: event.at,
                definitely_unpublished: false,
                resend: true,
                ..earlier_attempt(intent.clone())
            });
        }
    }
    sends.sort_by_key(|a| a.sent_at);
    sends
}

/// An attempt at a post as adapters see it.
pub(crate) fn earlier_attempt(intent: Intent) -> EarlierAttempt {
    EarlierAttempt {
        generation: intent.generation,
        idempotency_key: intent.idempotency_key,
        platform_ref: intent.platform_ref,
        sent_at: intent.created_at,
        definitely_unpublished: matches!(intent.phase.as_str(), "rejected" | "not_sent"),
        resend: false,
    }
}

/// A step's failure of a later part, naming the part.
fn in_part(request: &PublishRequest, step: StepError) -> StepError {
    if request.part.of <= 1 {
        return step;
    }
    let what = parts::describe(&request.part);
    match step {
        StepError::Transient {
            reason,
            retry_after,
        } => StepError::Transient {
            reason: format!("{what}: {reason}"),
            retry_after,
        },
        StepError::Rejected { reason, credential } => StepError::Rejected {
            reason: format!("{what}: {reason}"),
            credential,
        },
    }
}

/// The outcome of one part's request, its reason naming the part, its key and the parts
/// already out, so a person settling it knows which request is in doubt.
fn outcome_in_part(request: &PublishRequest, outcome: Outcome) -> Outcome {
    if request.part.of <= 1 {
        return outcome;
    }
    let what = parts::describe(&request.part);
    let out = match request.part.published.len() {
        0 => "no part is out yet".to_owned(),
        n => format!("parts 1 to {n} are out"),
    };
    let name =
        |reason: String| format!("{what} (key {}): {reason}; {out}", request.idempotency_key);
    match outcome {
        Outcome::NotSent {
            reason,
            retry_after,
        } => Outcome::NotSent {
            reason: name(reason),
            retry_after,
        },
        Outcome::Rejected { reason, credential } => Outcome::Rejected {
            reason: name(reason),
            credential,
        },
        Outcome::Unknown { reason } => Outcome::Unknown {
            reason: name(reason),
        },
        published => published,
    }
}

/// The request an adapter gets for a single post, or for part 1 of a post of several.
pub fn publish_request(post: &Post, idempotency_key: String) -> PublishRequest {
    parts::part_request(post, 1, Vec::new(), &idempotency_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_depend_on_post_and_approved_content() {
        let a = idempotency_key(PostId(1), "aa");
        assert_eq!(a, idempotency_key(PostId(1), "aa"));
        assert_ne!(a, idempotency_key(PostId(2), "aa"));
        assert_ne!(a, idempotency_key(PostId(1), "bb"));
        assert!(a.starts_with("airlock-1-") && a.len() <= 64);
    }

    #[test]
    fn runs_at_once_hold_different_places_and_give_them_back() {
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let first = Place::take(&taken);
        let second = Place::take(&taken);
        assert_eq!((first.index, second.index), (0, 1));
        drop(first);
        // The lowest free place is taken next.
        assert_eq!(Place::take(&taken).index, 0);
        drop(second);
        assert_eq!(taken.load(std::sync::atomic::Ordering::Relaxed), 0);
        let all: Vec<Place> = (0..64).map(|_| Place::take(&taken)).collect();
        assert_eq!(all.last().map(|p| p.index), Some(63));
        // With every place held, a run starts past them all and gives nothing back.
        drop(Place::take(&taken));
        assert_eq!(taken.load(std::sync::atomic::Ordering::Relaxed), u64::MAX);
        drop(all);
        assert_eq!(taken.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(retry_backoff(1), Duration::seconds(30));
        assert_eq!(retry_backoff(2), Duration::seconds(60));
        assert_eq!(retry_backoff(3), Duration::seconds(120));
        assert_eq!(retry_backoff(50), Duration::minutes(30));
    }
}
