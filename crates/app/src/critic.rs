//! The critic's workflow: rubric-bound verdicts, the review packet, more than one
//! approver, a cap on revise cycles with quarantine, and the operator's release.
//!
//! - A **verdict** is `pass` or `fail` with reasons, by one principal, against the
//!   content hash the critic read and the rubric hash it read; it is a record in the
//!   ledger (`verdicts`), written in the same transaction as what it does to the post.
//!   `approve` is a pass and `reject` a fail, on every front end.
//! - A **pass** approves exactly the hash it names: when the caller gives the hash it
//!   read and the post no longer has it, nothing is recorded and the answer is a
//!   conflict. The post is approved once `approvals_required` distinct critics have
//!   passed the same content in the current review round (any content change, and any
//!   withdrawn approval, starts a new round); the content policy and separation of
//!   duties are checked on every pass, as for any approval.
//! - A **fail** returns the post to its writer with the reasons (in `error`, and on the
//!   timeline); the `max_revisions`-th fail since the last release **quarantines** it:
//!   it stays a `draft`, but nobody may edit, approve or publish it until an operator
//!   releases it ([`App::release`]: a plain draft again, the count reset) or discards it.
//! - The **review packet** ([`App::review_packet`]) gives a critic everything in one
//!   read: the post, its hash, the channel's policy, limits and review rules, the rubric
//!   with its hash and items, earlier verdicts, and what changed since the last one.
//!
//! The rubric is read through a [`RubricSource`] given by whoever builds the app (the
//! CLI reads the configured file on every call, so an edited rubric applies at once);
//! nothing here reads files. The pure rules (tallies, the cap, reasons, diffs) are in
//! [`airlock_core::review`].

use std::fmt;

use serde::Serialize;

use airlock_core::limits;
use airlock_core::review::{
    self, ContentChange, Decision, DecisionError, Revoked, Rubric, RubricItem, VerdictKind,
    VoidPass,
};
use airlock_core::status::quarantine_allows;
use airlock_core::{Action, ContentHash, NewVerdict, Post, PostId, PostStatus, Verdict};
use airlock_store::{self as store, Change};

use crate::{App, ChannelSettings, Error, Principal, Result};

/// Where a channel's rubric comes from. Read on every review packet and verdict, so a
/// changed rubric applies without a restart.
pub trait RubricSource: Send + Sync + fmt::Debug {
    /// The rubric as it reads now, or a one-line reason it cannot be read (naming the
    /// file, never its content).
    fn read(&self) -> std::result::Result<Rubric, String>;

    /// Where it comes from, for people: a path, or "built-in default rubric".
    fn origin(&self) -> String;
}

/// The rubric a channel uses when none is configured ([`review::DEFAULT_RUBRIC`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinRubric;

impl RubricSource for BuiltinRubric {
    fn read(&self) -> std::result::Result<Rubric, String> {
        Ok(Rubric::parse(review::DEFAULT_RUBRIC))
    }

    fn origin(&self) -> String {
        "built-in default rubric".to_owned()
    }
}

/// A verdict as a critic gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictInput {
    /// `pass` or `fail`.
    pub verdict: VerdictKind,
    /// Short reasons, each starting with the rubric item it applies to (`tone: ...`);
    /// at least one for a fail.
    pub reasons: Vec<String>,
    /// The content hash the critic read. When given, a post whose content has changed
    /// since is a conflict and nothing is recorded. People may leave it out (the
    /// verdict then applies to the content as it is now); agents should always give it.
    pub content_hash: Option<String>,
    /// The rubric hash the critic read; when given, a rubric changed since is a conflict.
    pub rubric_hash: Option<String>,
}

impl VerdictInput {
    /// A pass with no reasons, bound to `content_hash` when given.
    pub fn pass(content_hash: Option<String>) -> Self {
        VerdictInput {
            verdict: VerdictKind::Pass,
            reasons: Vec::new(),
            content_hash,
            rubric_hash: None,
        }
    }

    /// A fail with these reasons, bound to `content_hash` when given.
    pub fn fail(reasons: Vec<String>, content_hash: Option<String>) -> Self {
        VerdictInput {
            verdict: VerdictKind::Fail,
            reasons,
            content_hash,
            rubric_hash: None,
        }
    }
}

/// What a verdict did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum VerdictEffect {
    /// The pass completed the approvals: the post is approved.
    Approved,
    /// The pass is recorded; more critics must pass the same content.
    AwaitingApprovals,
    /// The fail returned the post to its writer.
    ReturnedToWriter,
    /// The fail reached `max_revisions`: the post is quarantined.
    Quarantined,
}

/// The answer to a verdict: the verdict as recorded, what it did, and the post after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerdictResult {
    /// What the verdict did.
    pub effect: VerdictEffect,
    /// What happens next, in a sentence.
    pub message: String,
    /// The verdict as recorded.
    pub verdict: Verdict,
    /// Critics whose passes count for the content now (empty after a fail).
    pub passed_by: Vec<String>,
    /// The channel's `approvals_required`.
    pub approvals_required: u32,
    /// Fail verdicts since the last release.
    pub revisions: i64,
    /// The channel's `max_revisions`.
    pub max_revisions: u32,
    /// The post as it stands afterwards.
    pub post: Post,
}

/// Everything a critic needs to review a post, in one read.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewPacket {
    /// How to use this packet.
    pub instructions: String,
    /// The post JSON.
    pub post: Post,
    /// The hash of the content under review: give it back with the verdict.
    pub content_hash: ContentHash,
    /// The channel: kind, account, limits, content policy and review rules.
    pub channel: ChannelReview,
    /// The rubric to review against.
    pub rubric: RubricView,
    /// Earlier verdicts on this post, oldest first.
    pub verdicts: Vec<Verdict>,
    /// Passes that count for the content now, and how many more are needed.
    pub approvals: Approvals,
    /// Every move of the post's schedule, oldest first: a pass is given for the post as it
    /// would go out, so moves after a verdict are what changed in the schedule since.
    pub schedule_moves: Vec<ScheduleMove>,
    /// Fails since the last release, against the cap.
    pub revisions: Revisions,
    /// What changed since the last verdict (`null` when there was none, or nothing changed).
    pub changes_since_last_verdict: Option<ChangeSince>,
    /// Whether the caller may give a verdict now, and if not, why.
    pub verdict_allowed: bool,
    /// Why the caller may not give a verdict now (`null` when it may).
    pub verdict_refused: Option<String>,
}

/// The channel as a critic needs to see it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelReview {
    /// Name.
    pub name: String,
    /// Kind (`threads`, `wordpress`, ...).
    pub kind: String,
    /// The account it publishes as.
    pub account: Option<String>,
    /// Publishes per local day.
    pub daily_limit: u32,
    /// Its calendar.
    pub timezone: String,
    /// The content policy airlock checks at approval and before publishing.
    pub policy: PolicyView,
    /// Distinct critics that must pass the same content.
    pub approvals_required: u32,
    /// Fail verdicts before quarantine.
    pub max_revisions: u32,
}

/// A channel's content policy, for reading, with what it finds wrong with the post.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyView {
    /// The policy, as the channel list shows it.
    #[serde(flatten)]
    pub rules: crate::control::ChannelPolicy,
    /// What the policy finds wrong with the content now (empty when it passes).
    pub violations: Vec<String>,
}

/// A rubric, for reading.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RubricView {
    /// Where it comes from.
    pub origin: String,
    /// SHA-256 of its text: give it back with the verdict.
    pub hash: String,
    /// Its items; each reason starts with one of their ids (`tone: ...`).
    pub items: Vec<RubricItem>,
    /// Its text.
    pub text: String,
}

/// Passes that count now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approvals {
    /// The channel's `approvals_required`.
    pub required: u32,
    /// Critics whose passes count for the content now.
    pub passed_by: Vec<String>,
    /// How many more distinct critics must pass.
    pub needed: u32,
    /// Passes in the current round on this content that count for nobody: by a token
    /// revoked since, or by the CLI where several passes are required.
    pub not_counted: Vec<VoidPass>,
}

/// A move of a post's schedule, as its edit recorded it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScheduleMove {
    /// When it was moved.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Who moved it.
    pub actor: String,
    /// The schedule before.
    pub from: chrono::DateTime<chrono::Utc>,
    /// The schedule after.
    pub to: chrono::DateTime<chrono::Utc>,
}

/// Fails against the cap.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Revisions {
    /// Fail verdicts since the last release.
    pub failed: i64,
    /// The channel's `max_revisions`.
    pub max: u32,
    /// Fails left before quarantine.
    pub left: i64,
    /// When the post was quarantined (`null` unless it is).
    pub quarantined_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What changed since the last verdict.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangeSince {
    /// The last verdict's id.
    pub since_verdict: i64,
    /// The content hash it was given against.
    pub since_hash: ContentHash,
    /// The fields and lines that differ.
    #[serde(flatten)]
    pub change: ContentChange,
}

/// What a critic agent is told in every packet.
pub const PACKET_INSTRUCTIONS: &str = "\
Review `post` (title, text, media, link; every one of its `parts` and its `first_comment` \
when it has them; each media item's `sha256`, `content_type` and `bytes` are the file the \
approval binds) against every item of `rubric` and against the channel's `policy`. Then call submit_verdict with this packet's `content_hash` and \
`rubric.hash`: verdict \"pass\" when every rubric item holds, or \"fail\" with reasons, each \
starting with the rubric item id it applies to and a colon (\"tone: reads as pushy\"). A fail \
returns the post to its writer, who reads your reasons; after `revisions.max` fails the post \
is quarantined for a person. A pass approves the post once `approvals.required` different \
critics have passed this same content. If the content or the rubric changes before your \
verdict, the verdict is refused as a conflict: fetch the packet again and review what it says \
now. `changes_since_last_verdict` shows what the writer changed since the last verdict, and \
`schedule_moves` every move of the post's schedule: a pass is for the post as it would go out, \
so moving a draft that holds passes starts a new review round.";

impl App {
    /// Gives a verdict on a post (critic): a pass (needs the critic role's approve
    /// right) or a fail (reject right). See the module docs for what each does. With
    /// `strict_reasons`, every reason must name a rubric item (when the rubric has any);
    /// otherwise a free-text reason is kept as it is (`reject --reason`).
    pub async fn give_verdict(
        &self,
        who: &Principal,
        id: PostId,
        input: VerdictInput,
    ) -> Result<VerdictResult> {
        self.verdict_at(who, id, input, true, None).await
    }

    /// [`App::give_verdict`] with the legacy shapes' leniency and an optional version
    /// the caller looked at.
    pub(crate) async fn verdict_at(
        &self,
        who: &Principal,
        id: PostId,
        input: VerdictInput,
        strict_reasons: bool,
        version: Option<i64>,
    ) -> Result<VerdictResult> {
        let kind = input.verdict;
        who.require(match kind {
            VerdictKind::Pass => Action::Approve,
            VerdictKind::Fail => Action::Reject,
        })?;
        let post = self.store().get_post(id).await?;
        let channel = self.channel(post.content.channel.as_str())?;
        let rules = channel.review.rules;
        // Only verdicts that still stand for someone: a revoked token's passes do not.
        let earlier = review::standing(
            &self.store().verdicts(id).await?,
            &self.revoked().await?,
            rules,
        );
        let actor = who.actor.to_string();
        if kind == VerdictKind::Fail && post.status == PostStatus::Draft {
            // A retried fail (its answer was lost) repeats the earlier one: the same
            // answer, nothing recorded or changed, even if that fail quarantined the post.
            check_reviewed_hash(&post, input.content_hash.as_deref())?;
            if let Some(verdict) =
                review::repeated_fail(&earlier, &actor, post.review_round, &post.content_hash)
            {
                return repeated(channel, post, earlier, verdict);
            }
        }
        if kind == VerdictKind::Pass
            && input.content_hash.is_some()
            && matches!(post.status, PostStatus::Draft | PostStatus::Approved)
        {
            // A retried pass bound to the content it read (its answer was lost): the same
            // answer, nothing recorded again.
            check_reviewed_hash(&post, input.content_hash.as_deref())?;
            if let Some(verdict) =
                review::repeated_pass(&earlier, &actor, post.review_round, &post.content_hash)
            {
                return repeated_pass(channel, post, earlier, verdict);
            }
        }
        refuse_if_quarantined(
            &post,
            match kind {
                VerdictKind::Pass => Action::Approve,
                VerdictKind::Fail => Action::Reject,
            },
        )?;
        match kind {
            VerdictKind::Pass if post.status != PostStatus::Draft => {
                return Err(Error::IllegalTransition(format!(
                    "post {id} is {}: only drafts can be approved",
                    post.status
                )));
            }
            VerdictKind::Fail
                if !matches!(post.status, PostStatus::Draft | PostStatus::Approved) =>
            {
                return Err(Error::IllegalTransition(format!(
                    "post {id} is {}: only drafts and approved posts can be rejected",
                    post.status
                )));
            }
            _ => {}
        }
        if kind == VerdictKind::Pass
            && let Some(refused) = review::refuse_pass(&actor, rules)
        {
            return Err(Error::Forbidden(format!(
                "your pass on post {id} was not recorded: {refused}"
            )));
        }
        if version.is_some_and(|v| v != post.version) {
            return Err(Error::Conflict(format!(
                "post {id} changed since it was looked at: look at it again before approving"
            )));
        }
        check_reviewed_hash(&post, input.content_hash.as_deref())?;
        let rubric = read_rubric(channel)?;
        if let Some(read) = input.rubric_hash.as_deref()
            && read.trim() != rubric.hash
        {
            return Err(Error::Conflict(format!(
                "the rubric of channel {} changed since you read it (you read {}, it is now {}): fetch the review packet again and review against the rubric as it reads now",
                channel.name,
                short(read.trim()),
                short(&rubric.hash)
            )));
        }
        let reasons = rubric
            .check_reasons(kind, &input.reasons, strict_reasons)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if kind == VerdictKind::Pass {
            if !who.sod_exempt && post.is_authored_by(&actor) {
                return Err(Error::Forbidden(format!(
                    "{actor} wrote content of post {id} (created it, or changed its content since the last approval) and may not approve it: another critic must (separation of duties)"
                )));
            }
            let violations = channel.policy.check(&post.content);
            if !violations.is_empty() {
                self.record_refused_pass(who, &post, &violations).await;
                return Err(Error::Policy(violations));
            }
        }
        let decision = review::decide(
            kind,
            &actor,
            &earlier,
            post.review_round,
            &post.content_hash,
            post.revisions,
            rules,
        )
        .map_err(|e| match e {
            DecisionError::AlreadyPassed { .. } => {
                Error::Conflict(format!("{e}: your pass on post {id} is already recorded"))
            }
            DecisionError::NoIdentity { .. } => {
                Error::Forbidden(format!("your pass on post {id} was not recorded: {e}"))
            }
        })?;

        let hash = post.content_hash.clone();
        let verdict = NewVerdict {
            verdict: kind,
            reasons: reasons.clone(),
            content_hash: hash.clone(),
            rubric_hash: rubric.hash.clone(),
            content: post.content.clone(),
        };
        let rubric_note = format!("rubric {}", short(&rubric.hash));
        let reason_text = reasons.join("; ");
        let (effect, message, passed_by, change) = match &decision {
            Decision::Approve { passed_by } => (
                VerdictEffect::Approved,
                format!("post {id} is approved and goes out at its scheduled_at"),
                passed_by.clone(),
                store::VerdictEffect::Approve {
                    approved_by: passed_by.join(", "),
                    note: if passed_by.len() > 1 {
                        format!(
                            "approved content {hash}: passed by {} ({rubric_note})",
                            passed_by.join(", ")
                        )
                    } else {
                        format!("approved content {hash}")
                    },
                    // Two drafts of one text are never both approved: the store checks.
                    duplicate_window: self.duplicate_window_for(&post).await?,
                },
            ),
            Decision::AwaitMore { passed_by, needed } => (
                VerdictEffect::AwaitingApprovals,
                format!(
                    "your pass is recorded; post {id} stays a draft until {needed} more critic(s) pass this same content (approvals_required = {})",
                    rules.approvals_required
                ),
                passed_by.clone(),
                store::VerdictEffect::AwaitMore {
                    note: format!(
                        "pass {} of {} on content {} ({rubric_note}): awaiting {needed} more critic(s)",
                        passed_by.len(),
                        rules.approvals_required,
                        short(hash.as_str())
                    ),
                },
            ),
            Decision::Repeat { verdict } => {
                return repeated(channel, post, earlier, *verdict);
            }
            Decision::Revise { revisions, counted }
            | Decision::Quarantine { revisions, counted } => {
                let quarantine = matches!(decision, Decision::Quarantine { .. });
                // The verdict keeps every reason; the summaries of them are cut to fit
                // what the post's error and the timeline's note hold.
                let error = limits::fit_chars(
                    &if quarantine {
                        format!(
                            "quarantined after {revisions} failed reviews (max_revisions {}); last failed by {actor}: {reason_text}",
                            rules.max_revisions
                        )
                    } else {
                        format!(
                            "rejected by {actor} ({revisions} of {} failed reviews before quarantine): {reason_text}",
                            rules.max_revisions
                        )
                    },
                    limits::MAX_ERROR_CHARS,
                );
                let note = if quarantine {
                    format!(
                        "failed review {revisions} of {} ({rubric_note}): {reason_text}; quarantined until an operator releases it",
                        rules.max_revisions
                    )
                } else {
                    reason_text.clone()
                };
                let (effect, message) =
                    fail_outcome(id, quarantine, *revisions, rules.max_revisions);
                (
                    effect,
                    message,
                    Vec::new(),
                    store::VerdictEffect::Revise {
                        counts: *counted,
                        quarantine,
                        error,
                        note,
                    },
                )
            }
        };
        let change = Change::Verdict {
            version: post.version,
            verdict,
            effect: change,
        };
        let post = self
            .store()
            .change_post(self.change_by(who, &post, change))
            .await?;
        if effect == VerdictEffect::Approved {
            self.wake_dispatcher();
        }
        let verdict = self
            .store()
            .verdicts(id)
            .await?
            .into_iter()
            .rev()
            .find(|v| v.actor == actor)
            .ok_or_else(|| {
                Error::Unavailable(format!("the verdict on post {id} was not read back"))
            })?;
        Ok(VerdictResult {
            effect,
            message,
            verdict,
            passed_by,
            approvals_required: rules.approvals_required,
            revisions: post.revisions,
            max_revisions: rules.max_revisions,
            post,
        })
    }

    /// The review packet of a post (any role): everything a critic needs in one read.
    pub async fn review_packet(&self, who: &Principal, id: PostId) -> Result<ReviewPacket> {
        who.require(Action::Read)?;
        let detail = self.store().post_detail(id).await?;
        let (post, verdicts) = (detail.post, detail.verdicts);
        let channel = self.channel(post.content.channel.as_str())?;
        let rubric = read_rubric(channel)?;
        let rules = channel.review.rules;
        let revoked = self.revoked().await?;
        let passed_by = review::current_passes(
            &review::standing(&verdicts, &revoked, rules),
            post.review_round,
            &post.content_hash,
        );
        let not_counted = review::void_passes(
            &verdicts,
            post.review_round,
            &post.content_hash,
            &revoked,
            rules,
        );
        let schedule_moves = detail
            .events
            .iter()
            .filter_map(|event| {
                let (from, to) = review::schedule_move_in(event.note.as_deref()?)?;
                Some(ScheduleMove {
                    at: event.at,
                    actor: event.actor.clone(),
                    from,
                    to,
                })
            })
            .collect();
        let needed = rules
            .approvals_required
            .saturating_sub(passed_by.len() as u32);
        let changes_since_last_verdict = verdicts.last().and_then(|last| {
            let before = last.content.as_ref()?;
            let change = review::changes(before, &post.content);
            (!change.fields.is_empty()).then(|| ChangeSince {
                since_verdict: last.id,
                since_hash: last.content_hash.clone(),
                change,
            })
        });
        let actor = who.actor.to_string();
        let verdict_refused = if post.is_quarantined() {
            Some(quarantine_message(&post))
        } else if !matches!(post.status, PostStatus::Draft | PostStatus::Approved) {
            Some(format!(
                "post {id} is {}: only drafts (pass or fail) and approved posts (fail) take verdicts",
                post.status
            ))
        } else if !(Action::Approve.allowed_for(&who.roles)
            || Action::Reject.allowed_for(&who.roles))
        {
            Some(format!(
                "{actor} holds roles [{}]: giving a verdict needs the critic role",
                who.roles.to_list()
            ))
        } else if passed_by.contains(&actor) {
            Some(format!(
                "{actor} already passed this content: another critic must give the next pass (you may still fail it)"
            ))
        } else if let Some(refused) = review::refuse_pass(&actor, rules)
            && Action::Approve.allowed_for(&who.roles)
        {
            Some(refused.to_string())
        } else if !who.sod_exempt && post.is_authored_by(&actor) {
            Some(format!(
                "{actor} wrote content of post {id} and may not pass it (separation of duties); you may still fail it"
            ))
        } else {
            None
        };
        let policy = &channel.policy;
        Ok(ReviewPacket {
            instructions: PACKET_INSTRUCTIONS.to_owned(),
            content_hash: post.content_hash.clone(),
            channel: ChannelReview {
                name: channel.name.to_string(),
                kind: channel.kind.to_string(),
                account: channel.account.clone(),
                daily_limit: channel.daily_limit,
                timezone: channel.timezone.name().to_owned(),
                policy: PolicyView {
                    rules: crate::control::ChannelPolicy::of(policy),
                    violations: policy
                        .check(&post.content)
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                },
                approvals_required: rules.approvals_required,
                max_revisions: rules.max_revisions,
            },
            rubric: RubricView {
                origin: channel.review.rubric.origin(),
                hash: rubric.hash,
                items: rubric.items,
                text: rubric.text,
            },
            approvals: Approvals {
                required: rules.approvals_required,
                passed_by,
                needed,
                not_counted,
            },
            schedule_moves,
            revisions: Revisions {
                failed: post.revisions,
                max: rules.max_revisions,
                left: (i64::from(rules.max_revisions) - post.revisions).max(0),
                quarantined_at: post.quarantined_at,
            },
            changes_since_last_verdict,
            verdict_allowed: verdict_refused.is_none(),
            verdict_refused,
            verdicts,
            post,
        })
    }

    /// Releases a quarantined post (operator): a plain draft again, its count of failed
    /// reviews reset, its writer free to revise it.
    pub async fn release(&self, who: &Principal, id: PostId) -> Result<Post> {
        who.require(Action::Release)?;
        let post = self.store().get_post(id).await?;
        if !post.is_quarantined() {
            return Err(Error::IllegalTransition(format!(
                "post {id} is {} and not quarantined: only a quarantined post is released",
                post.status
            )));
        }
        let change = Change::Released {
            version: post.version,
            note: format!(
                "released from quarantine after {} failed reviews: a draft again for its writer to revise",
                post.revisions
            ),
        };
        Ok(self
            .store()
            .change_post(self.change_by(who, &post, change))
            .await?)
    }
}

/// The kind of the event that records a pass the content policy refused.
pub const PASS_REFUSED_EVENT: &str = "pass_refused";

impl App {
    /// Records on `post`'s timeline ([`PASS_REFUSED_EVENT`]) that `who`'s pass was refused
    /// for the content policy, with what it found, so the writer and people see why the
    /// post is still a draft. The refusal stands even when the record cannot be written.
    async fn record_refused_pass(
        &self,
        who: &Principal,
        post: &Post,
        violations: &[airlock_core::Violation],
    ) {
        let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
        let note = limits::fit_chars(
            &format!(
                "pass by {} refused: the content policy finds {}",
                who.actor,
                found.join("; ")
            ),
            limits::MAX_EVENT_NOTE_CHARS,
        );
        let actor = who.actor.to_string();
        // A retried pass on the same content finds the same: one record is enough.
        if let Ok(detail) = self.store().post_detail(post.id).await
            && detail.events.last().is_some_and(|last| {
                last.kind == PASS_REFUSED_EVENT
                    && last.actor == actor
                    && last.note.as_deref() == Some(note.as_str())
            })
        {
            return;
        }
        let event = store::EventNote {
            kind: PASS_REFUSED_EVENT.into(),
            note: Some(note),
        };
        if let Err(e) = self
            .store()
            .add_event(post.id, event, &actor, self.now(), Vec::new())
            .await
        {
            tracing::warn!(post_id = post.id.0, error = %e, "cannot record a pass refused for the content policy");
        }
    }

    /// The tokens revoked so far, as the actors their verdicts are recorded under: their
    /// passes stand for nobody ([`review::void_reason`]).
    pub(crate) async fn revoked(&self) -> Result<Vec<Revoked>> {
        Ok(self
            .store()
            .tokens()
            .await?
            .into_iter()
            .filter_map(|token| {
                Some(Revoked {
                    at: token.revoked_at?,
                    actor: airlock_core::Actor::Token(token.name).to_string(),
                })
            })
            .collect())
    }
}

/// The answer to a fail that repeats `verdict` (the same critic, content and round, no
/// pass since): that verdict and the post as it stands; nothing is recorded.
fn repeated(
    channel: &ChannelSettings,
    post: Post,
    earlier: Vec<Verdict>,
    verdict: i64,
) -> Result<VerdictResult> {
    let rules = channel.review.rules;
    let id = post.id;
    let verdict = earlier
        .into_iter()
        .find(|v| v.id == verdict)
        .ok_or_else(|| {
            Error::Unavailable(format!("verdict {verdict} on post {id} was not read"))
        })?;
    let (effect, outcome) = fail_outcome(
        id,
        post.is_quarantined(),
        post.revisions,
        rules.max_revisions,
    );
    Ok(VerdictResult {
        effect,
        message: format!(
            "your fail on this content is already recorded (verdict {}), so nothing changed: {outcome}",
            verdict.id
        ),
        verdict,
        passed_by: Vec::new(),
        approvals_required: rules.approvals_required,
        revisions: post.revisions,
        max_revisions: rules.max_revisions,
        post,
    })
}

/// The answer to a pass that repeats `verdict` (the same critic, content and round, and
/// it still counts): that verdict, what it did and the post as it stands; nothing is
/// recorded.
fn repeated_pass(
    channel: &ChannelSettings,
    post: Post,
    earlier: Vec<Verdict>,
    verdict: i64,
) -> Result<VerdictResult> {
    let rules = channel.review.rules;
    let id = post.id;
    let passed_by = review::current_passes(&earlier, post.review_round, &post.content_hash);
    let verdict = earlier
        .into_iter()
        .find(|v| v.id == verdict)
        .ok_or_else(|| {
            Error::Unavailable(format!("verdict {verdict} on post {id} was not read"))
        })?;
    let (effect, outcome) = if post.status == PostStatus::Approved {
        (
            VerdictEffect::Approved,
            format!("post {id} is approved and goes out at its scheduled_at"),
        )
    } else {
        let needed = rules
            .approvals_required
            .saturating_sub(passed_by.len() as u32)
            .max(1);
        (
            VerdictEffect::AwaitingApprovals,
            format!(
                "post {id} stays a draft until {needed} more critic(s) pass this same content (approvals_required = {})",
                rules.approvals_required
            ),
        )
    };
    Ok(VerdictResult {
        effect,
        message: format!(
            "your pass on this content is already recorded (verdict {}), so nothing changed: {outcome}",
            verdict.id
        ),
        verdict,
        passed_by,
        approvals_required: rules.approvals_required,
        revisions: post.revisions,
        max_revisions: rules.max_revisions,
        post,
    })
}

/// Refuses `action` on a quarantined post, saying why and what to do.
pub(crate) fn refuse_if_quarantined(post: &Post, action: Action) -> Result<()> {
    if post.is_quarantined() && !quarantine_allows(action) {
        return Err(Error::Quarantined(format!(
            "may not {}: {}",
            action.describe(),
            quarantine_message(post)
        )));
    }
    Ok(())
}

/// What a fail did (returned the post to its writer, or quarantined it), in a sentence.
fn fail_outcome(
    id: PostId,
    quarantined: bool,
    revisions: i64,
    max_revisions: u32,
) -> (VerdictEffect, String) {
    if quarantined {
        (
            VerdictEffect::Quarantined,
            format!(
                "post {id} failed review {revisions} times (max_revisions {max_revisions}) and is quarantined: no agent may edit, approve or publish it until an operator releases it (`airlock post release {id}`) or discards it"
            ),
        )
    } else {
        let left = i64::from(max_revisions) - revisions;
        (
            VerdictEffect::ReturnedToWriter,
            format!(
                "post {id} is a draft again with your reasons for its writer; {left} more failed review(s) quarantine it"
            ),
        )
    }
}

fn quarantine_message(post: &Post) -> String {
    format!(
        "post {id} is quarantined after {n} failed reviews: no agent may edit, approve or publish it; an operator releases it (`airlock post release {id}`, or Release in the dashboard's inbox) or discards it",
        id = post.id,
        n = post.revisions
    )
}

/// Refuses a verdict whose reviewed hash is not the post's content hash.
fn check_reviewed_hash(post: &Post, reviewed: Option<&str>) -> Result<()> {
    let Some(reviewed) = reviewed.map(str::trim) else {
        return Ok(());
    };
    let reviewed = ContentHash::parse(&reviewed.to_ascii_lowercase()).ok_or_else(|| {
        Error::Invalid(format!(
            "content_hash {:?} is not a SHA-256: pass the post's content_hash (64 hex digits) as you read it",
            reviewed.chars().take(80).collect::<String>()
        ))
    })?;
    if reviewed != post.content_hash {
        return Err(Error::Conflict(format!(
            "post {}'s content changed since it was reviewed (you reviewed {}, it is now {}): nothing was recorded; read it again and give your verdict on what it says now",
            post.id,
            short(reviewed.as_str()),
            short(post.content_hash.as_str())
        )));
    }
    Ok(())
}

fn read_rubric(channel: &ChannelSettings) -> Result<Rubric> {
    channel.review.rubric.read().map_err(|why| {
        Error::Unavailable(format!(
            "the rubric of channel {} cannot be read: {why}; an operator must fix it before posts on {} can be reviewed",
            channel.name, channel.name
        ))
    })
}

/// The first twelve hex digits of a hash, for messages.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
