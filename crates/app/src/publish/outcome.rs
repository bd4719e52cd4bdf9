//! Step 5 and the path's other endings: each way a run ends is one named change of the
//! post, written with its reservation, events, pause and notifications in one
//! transaction, under this worker's generation only.

use super::*;

impl App {
    /// Writes a fenced change; a stale generation turns into [`PublishResult::Stale`]. A
    /// store that is briefly unreachable is tried again while the lease leaves room: an
    /// outcome not written would leave the post to the reaper, which cannot know it.
    pub(super) async fn finish(
        &self,
        post: Post,
        change: PostChange,
        result: PublishResult,
    ) -> Result<PublishReport> {
        let give_up = post
            .lease_expires_at
            .map(|lease| lease - LEASE_SLACK - self.now())
            .and_then(|left| left.to_std().ok())
            .map(|left| std::time::Instant::now() + left);
        let target = change.change.effects(&change.actor, change.now).to;
        let mut pause = std::time::Duration::from_millis(50);
        loop {
            let written = match injected("publish::outcome_write") {
                Some(e) => Err(e),
                None => self.store().change_post(change.clone()).await,
            };
            match written {
                Ok(post) => {
                    return Ok(PublishReport {
                        post,
                        result,
                        sent_at: None,
                    });
                }
                Err(StoreError::Fenced { .. }) => {
                    tracing::warn!(
                        post_id = post.id.0,
                        generation = post.generation,
                        "stale worker: outcome refused and recorded"
                    );
                    let post = self.store().get_post(post.id).await?;
                    return Ok(PublishReport {
                        post,
                        result: PublishResult::Stale,
                        sent_at: None,
                    });
                }
                Err(StoreError::Unavailable(e))
                    if give_up.is_some_and(|at| std::time::Instant::now() + pause < at) =>
                {
                    tracing::warn!(post_id = post.id.0, error = %e, "writing the outcome failed; trying again within the lease");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                    // The failed commit may have landed after all (its answer was lost):
                    // then the write is done, and writing again would only be fenced.
                    if let Ok(now) = self.store().get_post(post.id).await
                        && now.generation == post.generation
                        && now.version != post.version
                        && target.is_some_and(|to| to == now.status)
                    {
                        return Ok(PublishReport {
                            post: now,
                            result,
                            sent_at: None,
                        });
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The intent was recorded but the request was not sent (the lease would not outlast
    /// it): back to the queue like any not-sent attempt, the intent settled `not_sent`. If
    /// the reaper got there first, the write is fenced and the post stays with a person.
    pub(super) async fn finish_unsent_intent(
        &self,
        post: Post,
        reason: String,
    ) -> Result<PublishReport> {
        self.not_sent(post, reason, None, true).await
    }

    pub(super) async fn stale(&self, post: Post) -> Result<PublishReport> {
        let post = self.store().get_post(post.id).await?;
        Ok(PublishReport {
            post,
            result: PublishResult::Stale,
            sent_at: None,
        })
    }

    /// Back to `approved` without counting an attempt (paused while being prepared).
    pub(super) async fn hold(
        &self,
        post: Post,
        scope: String,
        reason: String,
        pause: Option<PauseSpec>,
    ) -> Result<PublishReport> {
        let change = self.by_worker(
            &post,
            Change::Held {
                generation: post.generation,
                note: format!("not sent: {reason}"),
                pause,
            },
        );
        self.finish(post, change, PublishResult::Held { scope, reason })
            .await
    }

    /// A change to a post the worker has read but not claimed, at that read's version: if
    /// the post changed meanwhile, nothing is written and the report shows it as it is now.
    pub(super) async fn write_unclaimed(
        &self,
        post: Post,
        change: Change,
        notify: Vec<NewNotification>,
        result: PublishResult,
    ) -> Result<PublishReport> {
        let change = self.by_worker(&post, change).notifying(notify);
        let post = match self.store().change_post(change).await {
            Ok(post) => post,
            Err(StoreError::Conflict(_)) => self.store().get_post(post.id).await?,
            Err(e) => return Err(e.into()),
        };
        Ok(PublishReport {
            post,
            result,
            sent_at: None,
        })
    }

    /// The content changed after approval, or no longer passes the policy: back to draft.
    pub(super) async fn back_to_draft(&self, post: Post, reason: String) -> Result<PublishReport> {
        let change = Change::Withdrawn {
            version: post.version,
            note: format!("not published: {reason}; approve it again to publish"),
            error: Some(reason.clone()),
        };
        self.write_unclaimed(
            post,
            change,
            Vec::new(),
            PublishResult::ContentChanged { reason },
        )
        .await
    }

    pub(super) async fn defer(
        &self,
        post: Post,
        denial: airlock_core::quota::Denial,
    ) -> Result<PublishReport> {
        let limit = match denial.limit {
            Limit::Window => format!("rolling window {}/{}", denial.used, denial.max),
            Limit::Daily => format!("daily limit {}/{}", denial.used, denial.max),
            Limit::Budget => format!(
                "monthly budget: {} of {} spent",
                airlock_core::budget::format_usd(denial.used),
                airlock_core::budget::format_usd(denial.max)
            ),
        };
        let note = format!(
            "over quota ({limit}); next slot at {}",
            format_utc(denial.next_free_at)
        );
        let result = PublishResult::Deferred {
            limit: denial.limit,
            used: denial.used,
            max: denial.max,
            next_free_at: denial.next_free_at,
        };
        // Deferred to this slot already: one notice per post and slot, however often a
        // publish is asked for meanwhile.
        if post.deferred_until == Some(denial.next_free_at) {
            return Ok(PublishReport {
                post,
                result,
                sent_at: None,
            });
        }
        let notify = self.notifications(
            "quota_deferred",
            Some(post.id),
            format!(
                "post {} on {} deferred: {note}",
                post.id, post.content.channel
            ),
            json!({"channel": post.content.channel, "next_free_at": denial.next_free_at}),
        );
        let change = Change::Deferred {
            version: post.version,
            until: denial.next_free_at,
            note,
        };
        self.write_unclaimed(post, change, notify, result).await
    }

    /// A repeatable step failed: retry later, or fail for good.
    pub(super) async fn step_failed(&self, post: Post, step: StepError) -> Result<PublishReport> {
        match step {
            StepError::Transient {
                reason,
                retry_after,
            } => self.not_sent(post, reason, retry_after, false).await,
            StepError::Rejected { reason, credential } => {
                self.rejected(post, reason, credential, false, false).await
            }
        }
    }

    /// Not sent. A platform's "not now" (429 or 408 with `Retry-After`, a publishing limit
    /// reached) waits for the hinted time — clamped between `min_retry_after` and
    /// `max_retry_after` — without counting an attempt, like our own quota, until it has
    /// happened [`FREE_PLATFORM_WAITS`] times; any other failure counts one,
    /// backs off, and fails the post at `max_attempts`. `settles_intent`: this generation
    /// recorded an intent, now settled `not_sent`.
    pub(super) async fn not_sent(
        &self,
        post: Post,
        reason: String,
        retry_after: Option<Duration>,
        settles_intent: bool,
    ) -> Result<PublishReport> {
        let settings = self.settings();
        let wait = retry_after.map(|w| w.clamp(settings.min_retry_after, settings.max_retry_after));
        let counts = wait.is_none() || post.waits >= FREE_PLATFORM_WAITS;
        let n_attempts = post.attempts + i64::from(counts);
        if counts && n_attempts >= i64::from(settings.max_attempts) {
            let reason = format!("gave up after {n_attempts} attempts: {reason}");
            return self
                .rejected(post, reason, false, settles_intent, true)
                .await;
        }
        let not_before = self.now() + wait.unwrap_or_else(|| retry_backoff(n_attempts));
        let note = match (wait, counts) {
            (None, _) => format!("not sent (attempt {n_attempts}): {reason}"),
            (Some(_), false) => format!(
                "not sent, the platform asked to wait until {}: {reason}",
                format_utc(not_before)
            ),
            (Some(_), true) => format!(
                "not sent (attempt {n_attempts}): the platform asked to wait {} times, so waits count as attempts now: {reason}",
                post.waits + 1
            ),
        };
        let change = self.by_worker(
            &post,
            Change::NotSent {
                generation: post.generation,
                reason: reason.clone(),
                note,
                not_before,
                counts_attempt: counts,
                counts_wait: wait.is_some(),
                settles_intent,
            },
        );
        self.finish(post, change, PublishResult::Retrying { reason, not_before })
            .await
    }

    /// Failed for good: refused by the platform (`settles_intent` when this generation's
    /// intent is settled `rejected`), or given up (`counts_attempt`).
    pub(super) async fn rejected(
        &self,
        post: Post,
        reason: String,
        credential: bool,
        settles_intent: bool,
        counts_attempt: bool,
    ) -> Result<PublishReport> {
        let channel = post.content.channel.clone();
        let pause = if credential {
            self.forget_account(&channel);
            self.pause_spec(
                &channel,
                format!("credential refused: {reason}; renew the token file, then resume"),
                None,
            )
        } else {
            let n = self.settings().pause_after_failures;
            self.pause_spec(
                &channel,
                format!("{n} consecutive definite failures, the last: {reason}"),
                Some(n),
            )
        };
        let notify = self.notifications(
            "failed",
            Some(post.id),
            format!("post {} on {channel} failed: {reason}", post.id),
            json!({"channel": channel, "error": reason}),
        );
        let change = self
            .by_worker(
                &post,
                Change::Failed {
                    generation: post.generation,
                    reason: reason.clone(),
                    counts_attempt,
                    settles_intent,
                    pause: Some(pause),
                },
            )
            .notifying(notify);
        self.finish(post, change, PublishResult::Failed { reason })
            .await
    }

    pub(super) async fn write_outcome(
        &self,
        post: Post,
        channel: &ChannelSettings,
        outcome: Outcome,
        request: &PublishRequest,
    ) -> Result<PublishReport> {
        match outcome {
            Outcome::Published(published) => {
                self.write_published(post, channel, published, None, request)
                    .await
            }
            Outcome::NotSent {
                reason,
                retry_after,
            } => self.not_sent(post, reason, retry_after, true).await,
            Outcome::Rejected { reason, credential } => {
                self.rejected(post, reason, credential, true, false).await
            }
            Outcome::Unknown { reason } => {
                let change = self.unknown_change(&post, &reason, false);
                self.finish(post, change, PublishResult::NeedsReview { reason })
                    .await
            }
        }
    }

    /// Records a publish: by this attempt's request, or found made by `sender`'s. For a
    /// post of several parts, `request` is its last part's.
    pub(super) async fn write_published(
        &self,
        post: Post,
        channel: &ChannelSettings,
        published: airlock_core::Published,
        sender: Option<&EarlierAttempt>,
        request: &PublishRequest,
    ) -> Result<PublishReport> {
        // A platform that already had it (by this request's or an earlier one's) settles
        // the intent; one that names another post's id does not publish this one.
        if let Some(reason) = self.claimed_by_another_post(&post, &published).await {
            return self.rejected(post, reason, false, true, false).await;
        }
        let flag = published
            .platform_post_id
            .is_none()
            .then_some("the platform answered 2xx without a readable post id: check it by hand");
        let mut note = match flag {
            Some(flag) => format!("published; {flag}"),
            None => format!(
                "published as {}",
                published
                    .permalink
                    .as_deref()
                    .or(published.platform_post_id.as_deref())
                    .unwrap_or("?")
            ),
        };
        if let Some(existing) = &published.existing {
            note = format!("{note}; the platform already had it: {existing}");
        }
        // Out, but the platform's answer makes a retry unsafe: the channel stops for a
        // person, in the transaction that records the publish.
        let pause = published.pause.as_ref().map(|reason| {
            note = format!("{note}; the channel pauses: {reason}");
            self.pause_spec(&channel.name, reason.clone(), None)
        });
        let notify = self.notifications(
            "published",
            Some(post.id),
            format!(
                "post {} published on {}: {}",
                post.id,
                channel.name,
                published.permalink.as_deref().unwrap_or("(no permalink)")
            ),
            published_payload(channel, &published, request),
        );
        let change = self
            .by_worker(
                &post,
                Change::Published {
                    part: request.part.number,
                    generation: post.generation,
                    posted_at: sender.map_or_else(|| self.now(), |a| a.sent_at),
                    platform_post_id: published.platform_post_id.clone(),
                    permalink: published.permalink.clone(),
                    sent_by: sender.map(|a| a.generation),
                    note,
                    flag: flag.map(str::to_owned),
                    pause,
                },
            )
            .notifying(notify);
        self.finish(post, change, PublishResult::Posted).await
    }

    /// One part of several is out and more follow: recorded under this claim, which
    /// moves to the next generation for the next part. A part without an id cannot be
    /// replied to, so the post stops for a person.
    pub(super) async fn part_published(
        &self,
        post: Post,
        request: &PublishRequest,
        published: airlock_core::Published,
        sender: Option<&EarlierAttempt>,
    ) -> Result<PartStep> {
        let what = parts::describe(&request.part);
        // A platform that names a post it already had (a duplicate) may name another
        // post's: then nothing of this one is out, and nothing may reply to it.
        if let Some(reason) = self.claimed_by_another_post(&post, &published).await {
            let reason = format!("{what}: {reason}");
            let report = self.rejected(post, reason, false, true, false).await?;
            return Ok(PartStep::Ended(Box::new(report)));
        }
        let Some(id) = published.platform_post_id.clone() else {
            let reason = format!(
                "{what} (key {}) is out, but the platform named no id for it, so the next part cannot reply to it: find it on the platform and settle it with `airlock post resolve {} --published --platform-post-id ID`",
                request.idempotency_key, post.id
            );
            let change = self.unknown_change(&post, &reason, false);
            let report = self
                .finish(post, change, PublishResult::NeedsReview { reason })
                .await?;
            return Ok(PartStep::Ended(Box::new(report)));
        };
        let mut note = format!(
            "{what} published as {}",
            published.permalink.as_deref().unwrap_or(&id)
        );
        if let Some(existing) = &published.existing {
            note = format!("{note}; the platform already had it: {existing}");
        }
        let change = self.by_worker(
            &post,
            Change::PartPublished {
                generation: post.generation,
                part: request.part.number,
                platform_post_id: id.clone(),
                permalink: published.permalink.clone(),
                sent_by: sender.map(|a| a.generation),
                lease_until: self.now() + self.settings().stale_after,
                note,
            },
        );
        let report = self.finish(post, change, PublishResult::Posted).await?;
        if report.result != PublishResult::Posted {
            return Ok(PartStep::Ended(Box::new(report)));
        }
        // Out, but the platform's answer makes going on unsafe: the part stays recorded,
        // the post waits and the channel stops for a person.
        if let Some(reason) = published.pause {
            let post = report.post;
            let change = self.by_worker(
                &post,
                Change::Held {
                    generation: post.generation,
                    note: format!("{what} is out; the rest waits: {reason}"),
                    pause: Some(self.pause_spec(&request.channel, reason.clone(), None)),
                },
            );
            let scope = request.channel.to_string();
            let report = self
                .finish(post, change, PublishResult::Held { scope, reason })
                .await?;
            return Ok(PartStep::Ended(Box::new(report)));
        }
        boundary("publish::after_part");
        Ok(PartStep::Next(
            Box::new(report.post),
            PublishedPart {
                number: request.part.number,
                platform_post_id: id,
                permalink: published.permalink,
            },
        ))
    }

    /// Fetches again every media item of `media` whose bytes were checked when drafted,
    /// and refuses (nothing sent) when any changed.
    pub(super) async fn recheck_media(
        &self,
        media: &[airlock_core::Media],
    ) -> std::result::Result<(), StepError> {
        use airlock_platforms::media::{
            MAX_CHECKED_BYTES, MediaError, changed_since_approval, inspect,
        };
        for media in media.iter().filter(|m| m.sha256.is_some()) {
            let found = inspect(self.media_client(), media, MAX_CHECKED_BYTES)
                .await
                .map_err(|e| match e {
                    MediaError::Refused(why) => StepError::Rejected {
                        reason: format!("{why}; nothing was sent"),
                        credential: false,
                    },
                    MediaError::Unreachable(why) => {
                        StepError::transient(format!("{why}; nothing was sent"))
                    }
                })?;
            let digest = found.sha256.unwrap_or_default();
            if let Some(why) = changed_since_approval(media, &digest) {
                return Err(StepError::Rejected {
                    reason: why,
                    credential: false,
                });
            }
        }
        Ok(())
    }

    /// When the platform named a post it already had (`Published::existing`), that post is
    /// this one's publish only if no other post of the ledger has its id: otherwise the
    /// text duplicates another post, and this one fails. When the ledger cannot be asked,
    /// the answer stands: a post marked published is never sent again, one marked failed
    /// could be.
    pub(super) async fn claimed_by_another_post(
        &self,
        post: &Post,
        published: &airlock_core::Published,
    ) -> Option<String> {
        let (Some(existing), Some(id)) = (&published.existing, &published.platform_post_id) else {
            return None;
        };
        let filter = PostFilter {
            platform_post_id: Some(id.clone()),
            limit: Some(2),
            ..PostFilter::default()
        };
        let owners = match self.store().list_posts(&filter).await {
            Ok(owners) => owners,
            Err(e) => {
                tracing::warn!(post_id = post.id.0, error = %e, "cannot check whether another post has {id}; taking the platform's answer");
                return None;
            }
        };
        owners.iter().find(|other| other.id != post.id).map(|other| {
            format!(
                "duplicate content: the platform refused this text as a copy of {id}, which is post {}'s; nothing new was published ({existing})",
                other.id
            )
        })
    }
}

/// Where a run goes after a part that is not the last.
pub(super) enum PartStep {
    /// On to the next part, with the post as it stands and the part just out.
    Next(Box<Post>, PublishedPart),
    /// The run ended here (a stale claim, a part without an id).
    Ended(Box<PublishReport>),
}

/// The `published` notification's data: the post's id and permalink, and for a post of
/// several parts each part's.
fn published_payload(
    channel: &ChannelSettings,
    published: &airlock_core::Published,
    request: &PublishRequest,
) -> serde_json::Value {
    let mut payload = parts::with_parts(
        json!({
            "channel": channel.name,
            "platform_post_id": published.platform_post_id,
            "permalink": published.permalink,
        }),
        &request.part.published,
        request.part.number,
        published.platform_post_id.as_deref(),
        published.permalink.as_deref(),
    );
    // A post of several parts is named by its first.
    if let Some(first) = request.part.published.first() {
        payload["platform_post_id"] = json!(first.platform_post_id);
        payload["permalink"] = json!(first.permalink);
    }
    payload
}

/// How the reason of the pause a post's unknown outcome sets begins: reconcile tells that
/// pause from an operator's by it (and by its actor, the dispatcher or the reaper).
pub(crate) fn unknown_pause_prefix(id: PostId) -> String {
    format!("post {id}{}", airlock_store::UNKNOWN_PAUSE_MARK)
}

pub(super) fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Published(_) => "published",
        Outcome::NotSent { .. } => "not_sent",
        Outcome::Rejected { .. } => "rejected",
        Outcome::Unknown { .. } => "unknown",
    }
}

/// `--all` for the global scope, else the channel name (as `airlock resume` takes it).
pub fn scope_arg(scope: &str) -> String {
    if scope == "*" {
        "--all".into()
    } else {
        scope.to_owned()
    }
}
