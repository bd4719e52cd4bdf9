//! After the irreversible request: the reaper (expired leases), reconcile (platform
//! evidence for unknown outcomes), and the people's actions, resolve and requeue.

use serde_json::json;

use airlock_core::{Action, Actor, Intent, Post, PostEvent, PostId, PostStatus};
use airlock_platforms::{Evidence, Platform, ReconcileRequest};
use airlock_store::{Change, EventNote, PostChange, ReviewItem, StoreError, Unreadable};
use tracing::Instrument;

use crate::publish::{account_mismatch, idempotency_key, retry_backoff, unknown_pause_prefix};
use crate::{App, Error, Principal, Result};

/// The event that claims and records a reconcile re-send (Mastodon's): written under the
/// version reconcile read, before anything is sent ([`App::reconcile`]).
pub use airlock_store::RESEND_EVENT;

/// What the reaper did with one expired lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// The post afterwards.
    pub post: Post,
    /// Whether a `sending` intent existed (then the post needs review).
    pub had_intent: bool,
}

/// What reconcile did with one `needs_review` post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// The post afterwards.
    pub post: Post,
    /// The evidence, as recorded in the event note.
    pub evidence: String,
}

/// What [`App::resolve_and_resume`] did with the channel's pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resumed {
    /// The pause a post in doubt set is lifted.
    Resumed,
    /// The channel was not paused.
    NotPaused,
    /// A pause stays, for this reason (an operator's, or another post still in doubt).
    Held(String),
}

/// A person's verdict on a `needs_review` post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// It went out (optionally at this permalink).
    Published {
        /// Where.
        permalink: Option<String>,
        /// The platform's id of what went out; a part of several that is not the last
        /// needs it, since the next part replies to it.
        platform_post_id: Option<String>,
    },
    /// It did not go out.
    NotPublished,
}

impl App {
    /// Settles `posting` posts whose lease expired (docs/guarded-path.md#the-reaper): with
    /// a `sending` intent for their generation they need review; without one nothing was
    /// sent and they return to the queue (or fail at `max_attempts`). Runs even while
    /// paused. A row that cannot be read is logged and skipped; the others are still
    /// settled.
    pub async fn reap(&self) -> Result<Vec<Reaped>> {
        let mut reaped = Vec::new();
        for lease in self.store().expired_leases(self.now()).await? {
            let lease = match lease {
                Ok(lease) => lease,
                Err(row) => {
                    self.unreadable_row("reaper", &row);
                    continue;
                }
            };
            let post = lease.post;
            let had_intent = lease.intent.is_some();
            let owner = post.lease_owner.clone().unwrap_or_else(|| "?".into());
            let span =
                tracing::info_span!("reap", post_id = post.id.0, channel = %post.content.channel);
            let result = if had_intent {
                let reason = format!(
                    "the lease of {owner} expired after the request was sent; whether it went out is unknown"
                );
                self.reap_unknown(post, reason).instrument(span).await
            } else {
                let reason = format!("the lease of {owner} expired before any request was sent");
                self.reap_unsent(post, reason).instrument(span).await
            };
            match result {
                Ok(post) => {
                    let outcome = if had_intent {
                        "needs_review"
                    } else {
                        "not_sent"
                    };
                    self.metrics()
                        .incr("airlock_lease_expiries_total", &[("outcome", outcome)]);
                    reaped.push(Reaped { post, had_intent });
                }
                // The worker finished (or another reaper acted) in between: nothing to do.
                Err(Error::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(reaped)
    }

    fn unreadable_row(&self, pass: &str, row: &Unreadable) {
        tracing::error!(post_id = row.id.0, reason = %row.reason, "{pass}: a post row cannot be read; skipped (run `airlock doctor`)");
        self.metrics()
            .incr("airlock_unreadable_rows_total", &[("pass", pass)]);
    }

    /// Settles a `posting` post whose worker is known to be gone (it panicked), as the
    /// reaper would once the lease ends: with an intent for its generation it needs
    /// review, without one it returns to the queue.
    pub(crate) async fn settle_abandoned(&self, post: Post, reason: String) -> Result<Post> {
        match self.reap_unknown(post.clone(), reason.clone()).await {
            // No intent for this generation: nothing was sent.
            Err(Error::Conflict(_)) => self.reap_unsent(post, reason).await,
            settled => settled,
        }
    }

    async fn reap_unknown(&self, post: Post, reason: String) -> Result<Post> {
        self.write_reaped(self.unknown_change(&post, &reason, true))
            .await
    }

    async fn reap_unsent(&self, post: Post, reason: String) -> Result<Post> {
        let n_attempts = post.attempts + 1;
        let gives_up = n_attempts >= i64::from(self.settings().max_attempts);
        let (note, notify) = if gives_up {
            let notify = self.notifications(
                "failed",
                Some(post.id),
                format!(
                    "post {} on {} failed: {reason}",
                    post.id, post.content.channel
                ),
                json!({"channel": post.content.channel, "error": reason}),
            );
            (
                format!("gave up after {n_attempts} attempts: {reason}"),
                notify,
            )
        } else {
            (
                format!("not sent (attempt {n_attempts}): {reason}"),
                Vec::new(),
            )
        };
        let change = Change::ReapedUnsent {
            generation: post.generation,
            reason,
            note,
            gives_up,
            not_before: (!gives_up).then(|| self.now() + retry_backoff(n_attempts)),
        };
        let change = PostChange::new(post.id, Actor::Reaper.to_string(), self.now(), change)
            .notifying(notify);
        let post = self.write_reaped(change).await?;
        self.wake_dispatcher();
        Ok(post)
    }

    async fn write_reaped(&self, change: PostChange) -> Result<Post> {
        match self.store().change_post(change).await {
            Ok(post) => Ok(post),
            Err(StoreError::Fenced { id, .. } | StoreError::Conflict(id)) => Err(Error::Conflict(
                format!("post {id} moved on before the reaper acted"),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Settles `needs_review` posts where the platform proves what happened
    /// (docs/guarded-path.md#reconcile and docs/evidence.md): *published* when it shows
    /// this attempt's own object, back to the queue when it guarantees the attempt can
    /// never land. Anything else — absence above all — proves nothing, and the post waits.
    /// Never sends anything irreversible; runs even while channels are paused.
    pub async fn reconcile(&self) -> Result<Vec<Reconciled>> {
        let mut settled = Vec::new();
        for item in self.store().review_queue().await? {
            let item = match item {
                Ok(item) => item,
                Err(row) => {
                    self.unreadable_row("reconcile", &row);
                    continue;
                }
            };
            let span = tracing::info_span!(
                "reconcile",
                post_id = item.post.id.0,
                channel = %item.post.content.channel
            );
            if let Some(done) = self.reconcile_one(item).instrument(span).await? {
                settled.push(done);
            }
        }
        Ok(settled)
    }

    /// Reconciles one `needs_review` post; `None` when nothing was settled.
    async fn reconcile_one(&self, item: ReviewItem) -> Result<Option<Reconciled>> {
        let post = item.post;
        let Some(platform) = self.platform(&post.content.channel).cloned() else {
            return Ok(None);
        };
        let detail = match self.store().post_detail(post.id).await {
            Ok(detail) => detail,
            Err(e) => {
                tracing::warn!(post_id = post.id.0, error = %e, "reconcile: the post's attempts cannot be read; trying later");
                return Ok(None);
            }
        };
        // The part in doubt is the latest intent's; the parts before it are out.
        let part = item.intent.as_ref().map_or(1, |i| i.part);
        let base_key = idempotency_key(
            post.id,
            post.approved_hash
                .as_ref()
                .map(|h| h.as_str())
                .unwrap_or(""),
        );
        let mut landed = crate::publish::landed_parts(&detail);
        landed.retain(|p| p.number < part);
        let mut publish = crate::publish::part_request(&post, part, landed, &base_key);
        if let Some(intent) = &item.intent {
            publish.idempotency_key = intent.idempotency_key.clone();
        }
        // Every attempt at this part that recorded an intent and every re-send reconcile
        // made: an adapter whose platform keeps a key for a limited time (Mastodon) needs
        // the key's first send, and must wait while any send of it may still be running.
        let request = ReconcileRequest {
            publish: airlock_platforms::PublishRequest {
                now: self.now(),
                earlier: crate::publish::sends(&detail, part),
                ..publish
            },
            platform_ref: item.intent.as_ref().and_then(|i| i.platform_ref.clone()),
        };
        let mut version = post.version;
        let mut request = request;
        if platform.reconcile_sends(&request) {
            match self
                .claim_resend(&post, platform.as_ref(), &request, &detail.events)
                .await?
            {
                Some(claimed) => version = claimed,
                None => return Ok(None),
            }
            // The account read and the claim took time: the adapter measures from now.
            request.publish.now = self.now();
        }
        let evidence = platform.reconcile(&request).await;
        let (change, notify, note) = match evidence {
            Evidence::NoProof => return Ok(None),
            Evidence::Unsettled { note } => {
                let event = EventNote {
                    kind: "reconcile_answer".into(),
                    note: Some(note),
                };
                self.store()
                    .add_event(
                        post.id,
                        event,
                        &Actor::Reconciler.to_string(),
                        self.now(),
                        Vec::new(),
                    )
                    .await?;
                return Ok(None);
            }
            Evidence::Published(proof) if request.publish.part.number < request.publish.part.of => {
                let what = crate::publish::describe_part(&request.publish.part);
                let Some(id) = proof.platform_post_id else {
                    // Out, but without its id the next part cannot reply to it.
                    let note = format!(
                        "{what} is out ({}), but the platform named no id for it: settle it with `airlock post resolve {} --published --platform-post-id ID`",
                        proof.note, post.id
                    );
                    self.store()
                        .add_event(
                            post.id,
                            EventNote {
                                kind: "reconcile_answer".into(),
                                note: Some(note),
                            },
                            &Actor::Reconciler.to_string(),
                            self.now(),
                            Vec::new(),
                        )
                        .await?;
                    return Ok(None);
                };
                let note = format!(
                    "reconciled: {what} is out; the rest follows; {}",
                    proof.note
                );
                let change = Change::PartSettled {
                    version,
                    part: request.publish.part.number,
                    platform_post_id: id,
                    permalink: proof.permalink,
                    note: note.clone(),
                };
                (change, Vec::new(), note)
            }
            Evidence::Published(proof) => {
                let notify = self.notifications(
                    "published",
                    Some(post.id),
                    format!(
                        "post {} on {} was published (settled from platform evidence): {}",
                        post.id,
                        post.content.channel,
                        proof.permalink.as_deref().unwrap_or("(no permalink)")
                    ),
                    crate::publish::with_parts(
                        json!({"channel": post.content.channel, "evidence": proof.note}),
                        &request.publish.part.published,
                        request.publish.part.number,
                        proof.platform_post_id.as_deref(),
                        proof.permalink.as_deref(),
                    ),
                );
                let note = format!("reconciled: published; {}", proof.note);
                let change = Change::SettledPublished {
                    part: request.publish.part.number,
                    version,
                    posted_at: item
                        .intent
                        .as_ref()
                        .map(|i| i.created_at)
                        .unwrap_or_else(|| self.now()),
                    platform_post_id: proof.platform_post_id,
                    permalink: proof.permalink,
                    note: note.clone(),
                };
                (change, notify, note)
            }
            Evidence::CannotLand { note } => {
                match self.late_answer_recorded(&post, item.intent.as_ref()).await {
                    Ok(false) => {}
                    Ok(true) => return Ok(None),
                    // Its timeline cannot be read: leave it to a person, go on with the rest.
                    Err(e) => {
                        tracing::error!(post_id = post.id.0, error = %e, "reconcile: the post's timeline cannot be read; skipped");
                        return Ok(None);
                    }
                }
                let note = format!("reconciled: this attempt can never be published; {note}");
                let change = Change::CannotLand {
                    version,
                    note: note.clone(),
                };
                (change, Vec::new(), note)
            }
        };
        let resumes = matches!(change, Change::PartSettled { .. });
        let update = PostChange::new(post.id, Actor::Reconciler.to_string(), self.now(), change)
            .notifying(notify);
        match self.store().change_post(update).await {
            Ok(post) => {
                if resumes {
                    self.lift_own_pause(&post).await;
                }
                Ok(Some(Reconciled {
                    post,
                    evidence: note,
                }))
            }
            // It changed meanwhile (a person, a late answer recorded): look again next pass.
            // What the platform showed is kept on the post for whoever settles it; a
            // re-send's answer above all, which nothing else records.
            Err(StoreError::Conflict(_)) => {
                let event = EventNote {
                    kind: "stale_outcome".into(),
                    note: Some(format!(
                        "reconcile's evidence came after the post changed, and settled nothing: {note}"
                    )),
                };
                if let Err(e) = self
                    .store()
                    .add_event(
                        post.id,
                        event,
                        &Actor::Reconciler.to_string(),
                        self.now(),
                        Vec::new(),
                    )
                    .await
                {
                    tracing::error!(post_id = post.id.0, error = %e, evidence = %note, "reconcile: evidence that came too late could not be recorded");
                }
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Before a reconcile that sends the create request again (Mastodon's, with the key
    /// the instance still keeps): the checks of the guarded path that apply to it, then a
    /// claim of the re-send. The new version of the post when it may go ahead; `None`
    /// (nothing sent, the post waits for the next pass or a person) otherwise.
    ///
    /// - **Pauses**: an operator's pause of the channel or of everything (`pause --all`)
    ///   holds it; only the pause this post's own unknown outcome set does not (told by
    ///   its reason, [`unknown_pause_prefix`], and its actor, the dispatcher or the
    ///   reaper). A pause of the channel by another post's unknown outcome holds it too.
    /// - **The account**: read from the platform now (not the process's earlier check:
    ///   the token file may have changed since) and compared with the channel's
    ///   `account`; a mismatch sends nothing, makes the next publish check again, and is
    ///   recorded once as a `resend_refused` event. The adapter also compares the account
    ///   that made the answered status with the one read here.
    /// - **The claim**: the post cannot be claimed for a new generation (the store
    ///   claims only `approved` posts, and a new intent would need one), so the re-send
    ///   is claimed with a `resend` event written under the version reconcile read
    ///   ([`Guard::Version`]): of several processes that read the post at that version,
    ///   one writes it and the others' writes conflict, and they send nothing. Every
    ///   `resend` event after the latest intent counts as a send of its key, so a process
    ///   that reads the post afterwards waits until that request can no longer be
    ///   processing (the adapter's lower bound runs from the key's latest send). The
    ///   event is the record of the re-send; the settling write is guarded by the version
    ///   it produced.
    async fn claim_resend(
        &self,
        post: &Post,
        platform: &dyn Platform,
        request: &ReconcileRequest,
        events: &[PostEvent],
    ) -> Result<Option<i64>> {
        let channel = &post.content.channel;
        let pauses = match self.store().pauses().await {
            Ok(pauses) => pauses,
            Err(e) => {
                tracing::warn!(post_id = post.id.0, error = %e, "reconcile: pauses cannot be read; nothing is sent again");
                return Ok(None);
            }
        };
        let own = unknown_pause_prefix(post.id);
        if let Some(pause) = pauses.iter().find(|p| {
            let own_pause = p.scope == channel.as_str()
                && p.reason.starts_with(&own)
                && crate::control::set_by_doubt(p);
            (p.scope == "*" || p.scope == channel.as_str()) && !own_pause
        }) {
            tracing::info!(post_id = post.id.0, scope = %pause.scope, reason = %pause.reason, "reconcile: nothing is sent again while an operator's pause holds");
            return Ok(None);
        }
        let Some(settings) = self.settings().channels.get(channel) else {
            return Ok(None);
        };
        let account = match platform.account().await {
            Ok(account) => account,
            Err(e) => {
                tracing::warn!(post_id = post.id.0, error = %e, "reconcile: the account cannot be read; nothing is sent again");
                return Ok(None);
            }
        };
        if let Some(mismatch) = account_mismatch(settings, account.as_ref()) {
            self.forget_account(channel);
            let note = format!("reconcile did not send the post again: {mismatch}");
            tracing::error!(post_id = post.id.0, "{note}");
            let since = request.publish.earlier.last().map(|a| a.sent_at);
            let recorded = events.iter().any(|e| {
                e.kind == "resend_refused"
                    && e.note.as_deref() == Some(note.as_str())
                    && since.is_none_or(|t| e.at >= t)
            });
            if !recorded {
                let event = EventNote {
                    kind: "resend_refused".into(),
                    note: Some(note.clone()),
                };
                let notify = self.notifications(
                    "needs_review",
                    Some(post.id),
                    format!("post {} on {channel} needs review: {note}", post.id),
                    json!({"channel": channel, "error": note}),
                );
                if let Err(e) = self
                    .store()
                    .add_event(
                        post.id,
                        event,
                        &Actor::Reconciler.to_string(),
                        self.now(),
                        notify,
                    )
                    .await
                {
                    tracing::warn!(post_id = post.id.0, error = %e, "reconcile: the refusal could not be recorded");
                }
            }
            return Ok(None);
        }
        let key = request
            .platform_ref
            .as_deref()
            .unwrap_or(&request.publish.idempotency_key);
        let change = Change::ResendClaimed {
            version: post.version,
            note: format!(
                "sending the post again with the key {key} the platform still keeps, to learn what the earlier request did; account {} checked",
                account
                    .as_ref()
                    .map(|a| a.username.as_str())
                    .unwrap_or("(none)")
            ),
        };
        let claim = PostChange::new(post.id, Actor::Reconciler.to_string(), self.now(), change);
        match self.store().change_post(claim).await {
            Ok(claimed) => Ok(Some(claimed.version)),
            // Another process claimed it (or a person acted): it sends nothing.
            Err(StoreError::Conflict(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the sending worker's late answer was recorded after the post's latest
    /// intent: whatever the platform shows, it may say "published", and a person reads it.
    /// (Recording it moves the post's version on, so a late answer arriving after this
    /// read makes the settling write conflict.)
    async fn late_answer_recorded(&self, post: &Post, intent: Option<&Intent>) -> Result<bool> {
        let since = intent.map(|i| i.created_at);
        let detail = self.store().post_detail(post.id).await?;
        Ok(detail
            .events
            .iter()
            .any(|e| e.kind == "stale_outcome" && since.is_none_or(|t| e.at >= t)))
    }

    /// A thread whose part in doubt proved out goes on from the next part: the pause its
    /// unknown outcome set is lifted, unless another post of the channel still needs
    /// review. An operator's pause is never lifted.
    async fn lift_own_pause(&self, post: &Post) {
        let channel = &post.content.channel;
        let own = unknown_pause_prefix(post.id);
        let lift = async {
            // Another post of the channel still in doubt keeps it paused.
            let others = self.store().review_queue().await?.into_iter().any(|item| {
                item.is_ok_and(|item| {
                    item.post.content.channel == *channel && item.post.id != post.id
                })
            });
            if others {
                return Ok(false);
            }
            let notify = self.notifications(
                "resumed",
                None,
                format!(
                    "channel {channel} resumed: post {}'s part in doubt proved out",
                    post.id
                ),
                json!({"scope": channel}),
            );
            // Only the pause this post's unknown outcome set, and only while no later
            // pause (an operator's, another post's) took it over.
            self.store()
                .resume_own(
                    &airlock_store::PauseScope::Channel(channel.clone()),
                    &own,
                    &Actor::Reconciler.to_string(),
                    self.now(),
                    notify,
                )
                .await
        };
        match lift.await {
            Ok(true) => self.wake_dispatcher(),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(post_id = post.id.0, error = %e, "reconcile: the channel's pause could not be lifted; a person resumes it")
            }
        }
    }

    /// A person settles a `needs_review` post (operator).
    pub async fn resolve(
        &self,
        who: &Principal,
        id: PostId,
        resolution: Resolution,
    ) -> Result<Post> {
        who.require(Action::Resolve)?;
        let detail = self.store().post_detail(id).await?;
        let post = detail.post.clone();
        if post.status != PostStatus::NeedsReview {
            return Err(Error::IllegalTransition(format!(
                "post {id} is {}: only posts that need review can be resolved",
                post.status
            )));
        }
        let actor = who.actor.to_string();
        // The part in doubt is the latest intent's.
        let part = detail.intents.last().map_or(1, |i| i.part);
        let count = post.content.part_count() as u32;
        let (change, notify) = match resolution {
            Resolution::Published {
                permalink,
                platform_post_id,
            } if part < count => {
                if let Some(link) = &permalink {
                    airlock_core::post::check_url("permalink", link)
                        .map_err(|e| Error::Invalid(e.to_string()))?;
                }
                let what = if part == count - 1 && post.content.first_comment.is_some() {
                    format!("part {part}, the last before the first comment,")
                } else {
                    format!("part {part} of {count}")
                };
                let Some(id) = platform_post_id.filter(|id| !id.trim().is_empty()) else {
                    return Err(Error::Invalid(format!(
                        "post {id}: {what} is in doubt and the part after it replies to it: give its id on the platform with --platform-post-id (platform_post_id)"
                    )));
                };
                let change = Change::PartSettled {
                    version: post.version,
                    part,
                    platform_post_id: id,
                    note: format!("{what} confirmed published by {actor}; the rest follows"),
                    permalink,
                };
                (change, Vec::new())
            }
            Resolution::Published {
                permalink,
                platform_post_id,
            } => {
                if let Some(link) = &permalink {
                    airlock_core::post::check_url("permalink", link)
                        .map_err(|e| Error::Invalid(e.to_string()))?;
                }
                let sent_at = detail
                    .intents
                    .last()
                    .map(|i| i.created_at)
                    .unwrap_or_else(|| self.now());
                let notify = self.notifications(
                    "published",
                    Some(id),
                    format!(
                        "post {id} on {} confirmed published by {actor}",
                        post.content.channel
                    ),
                    crate::publish::with_parts(
                        json!({"channel": post.content.channel, "permalink": permalink}),
                        &crate::publish::landed_parts(&detail),
                        part,
                        platform_post_id.as_deref(),
                        permalink.as_deref(),
                    ),
                );
                let change = Change::SettledPublished {
                    part,
                    version: post.version,
                    posted_at: sent_at,
                    platform_post_id: platform_post_id.filter(|id| !id.trim().is_empty()),
                    note: format!(
                        "confirmed published by {actor}{}",
                        permalink
                            .as_deref()
                            .map(|p| format!(" at {p}"))
                            .unwrap_or_default()
                    ),
                    permalink,
                };
                (change, notify)
            }
            Resolution::NotPublished => {
                let notify = self.notifications(
                    "failed",
                    Some(id),
                    format!(
                        "post {id} on {} confirmed not published by {actor}",
                        post.content.channel
                    ),
                    json!({"channel": post.content.channel}),
                );
                let change = Change::SettledNotPublished {
                    version: post.version,
                    error: format!("not published (confirmed by {actor})"),
                    note: format!("confirmed not published by {actor}"),
                };
                (change, notify)
            }
        };
        let change = self.change_by(who, &post, change).notifying(notify);
        Ok(self.store().change_post(change).await?)
    }

    /// Settles a `needs_review` post, then resumes its channel if the pause holding it
    /// was set by a post in doubt and nothing on the channel is in doubt any more. An
    /// operator's pause, or one a later post's doubt took over, is left alone and
    /// named in [`Resumed::Held`]: the resolve stands either way.
    pub async fn resolve_and_resume(
        &self,
        who: &Principal,
        id: PostId,
        resolution: Resolution,
    ) -> Result<(Post, Resumed)> {
        who.require(Action::Pause)?;
        let post = self.resolve(who, id, resolution).await?;
        let channel = post.content.channel.clone();
        let explained = self.explained_pauses(who).await?;
        let Some(own) = explained.iter().find(|e| e.pause.scope == channel.as_str()) else {
            let global = explained.iter().find(|e| e.pause.scope == "*");
            return Ok((
                post,
                global.map_or(Resumed::NotPaused, |e| {
                    Resumed::Held(format!("all publishing is paused: {}", e.pause.reason))
                }),
            ));
        };
        let in_doubt =
            |id: PostId| Resumed::Held(format!("post {id} on {channel} still needs review"));
        let doubt = match &own.unknown {
            // An operator's pause.
            None => return Ok((post, Resumed::Held(own.pause.reason.clone()))),
            Some(u) => match (u.settled, u.waiting) {
                (None, _) => return Ok((post, in_doubt(u.post))),
                (Some(_), Some(next)) => return Ok((post, in_doubt(next))),
                (Some(_), None) => u.post,
            },
        };
        let notify = self.notifications(
            "resumed",
            None,
            format!(
                "channel {channel} resumed by {}: nothing on it is in doubt",
                who.actor
            ),
            json!({"scope": channel}),
        );
        // Only while the pause is still the one that doubt set: an operator's pause
        // taking it over meanwhile stays.
        let lifted = self
            .store()
            .resume_own(
                &airlock_store::PauseScope::Channel(channel.clone()),
                &unknown_pause_prefix(doubt),
                &who.actor.to_string(),
                self.now(),
                notify,
            )
            .await?;
        if !lifted {
            // Taken over (or lifted) meanwhile: say what holds it now.
            let now = self.store().pauses().await?;
            let held = now.into_iter().find(|p| p.scope == channel.as_str());
            return Ok((
                post,
                held.map_or(Resumed::NotPaused, |p| Resumed::Held(p.reason)),
            ));
        }
        self.wake_dispatcher();
        Ok((post, Resumed::Resumed))
    }

    /// Returns a failed post to the queue (operator); never automatic.
    pub async fn requeue(&self, who: &Principal, id: PostId) -> Result<Post> {
        who.require(Action::Requeue)?;
        let post = self
            .post_in(
                id,
                &[PostStatus::Failed],
                "only failed posts can be requeued",
            )
            .await?;
        let change = self.change_by(
            who,
            &post,
            Change::Requeued {
                version: post.version,
            },
        );
        let post = self.store().change_post(change).await?;
        self.wake_dispatcher();
        Ok(post)
    }
}
