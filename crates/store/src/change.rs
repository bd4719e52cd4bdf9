//! What can happen to a post (docs/lifecycle.md): [`Change`], one variant each, carrying
//! exactly what it needs, so a combination that makes no sense cannot be written. A
//! change is applied in one transaction with its events, verdict, intent, reservations,
//! failure counter, pause and notifications ([`crate::Store::change_post`]).
//!
//! The worker holding a claim writes its outcome fenced by its generation (a stale one
//! changes nothing and leaves its evidence); people and agents write at the version they
//! read. [`Change::effects`] says once, for the SQLite backend, which rows a change
//! touches; PostgreSQL's functions (`sql/functions.sql`, one per variant) say the same in
//! PL/pgSQL, and the conformance suite holds the two equal.

use chrono::{DateTime, Duration, Utc};

use airlock_core::{ContentHash, NewVerdict, PostContent, PostId, PostStatus};

use crate::{EventNote, FailureStep, IntentPhase, NewNotification, PauseSpec, Settle};

/// The event that claims and records a reconcile re-send ([`Change::ResendClaimed`]).
pub const RESEND_EVENT: &str = "resend";

/// A change to one post, by `actor` at `now`, with the notifications it queues.
#[derive(Debug, Clone)]
pub struct PostChange {
    /// The post.
    pub id: PostId,
    /// Who.
    pub actor: String,
    /// When.
    pub now: DateTime<Utc>,
    /// What happens.
    pub change: Change,
    /// Notifications to queue with it (transactional outbox).
    pub notify: Vec<NewNotification>,
}

impl PostChange {
    /// A change without notifications.
    pub fn new(id: PostId, actor: impl Into<String>, now: DateTime<Utc>, change: Change) -> Self {
        PostChange {
            id,
            actor: actor.into(),
            now,
            change,
            notify: Vec::new(),
        }
    }

    /// With these notifications.
    pub fn notifying(mut self, notify: Vec<NewNotification>) -> Self {
        self.notify = notify;
        self
    }
}

/// What happens to a post.
#[derive(Debug, Clone)]
pub enum Change {
    // The worker holding the claim (`posting` under `generation`).
    /// The platform has it: `posting -> posted`, its reservation committed (or, when an
    /// earlier attempt's request made it, that attempt's: [`Settle::CommitAttempt`]), the
    /// intent settled, the channel's failures counted from zero again.
    Published {
        /// The claim.
        generation: i64,
        /// The part that went out last, from 1: the post's id and permalink are part 1's.
        part: u32,
        /// When the platform received it.
        posted_at: DateTime<Utc>,
        /// The platform's id.
        platform_post_id: Option<String>,
        /// Where people see it.
        permalink: Option<String>,
        /// The earlier attempt whose request made it, when this one sent nothing.
        sent_by: Option<i64>,
        /// The status event's note.
        note: String,
        /// Something a person must check (a 2xx without a readable id).
        flag: Option<String>,
        /// Out, but a retry there would be unsafe: the channel pauses.
        pause: Option<PauseSpec>,
    },
    /// One part of several is out, and more follow under the same claim: the post stays
    /// `posting` under the next generation (each part's intent has one of its own), its
    /// lease renewed; the part's intent settled with its id; the reservation committed
    /// (it counts from the first part); the post's id and permalink are part 1's.
    PartPublished {
        /// The claim.
        generation: i64,
        /// The part, from 1.
        part: u32,
        /// The platform's id of the part.
        platform_post_id: String,
        /// Where people see it.
        permalink: Option<String>,
        /// The earlier attempt whose request made it, when this one sent nothing.
        sent_by: Option<i64>,
        /// The new lease end.
        lease_until: DateTime<Utc>,
        /// The event's note.
        note: String,
    },
    /// Not sent: `posting -> approved` until `not_before`, the reservation released.
    NotSent {
        /// The claim.
        generation: i64,
        /// Why (the post's error).
        reason: String,
        /// The status event's note.
        note: String,
        /// The next try.
        not_before: DateTime<Utc>,
        /// Whether it counts as an attempt.
        counts_attempt: bool,
        /// Whether the platform asked to wait (a "not now").
        counts_wait: bool,
        /// Whether this generation recorded an intent, settled `not_sent` now.
        settles_intent: bool,
    },
    /// Refused for good, or given up: `posting -> failed`, the reservation released, the
    /// channel's failures counted (and it pauses per `pause`).
    Failed {
        /// The claim.
        generation: i64,
        /// Why.
        reason: String,
        /// Whether it counts as an attempt.
        counts_attempt: bool,
        /// Whether this generation recorded an intent, settled `rejected` now.
        settles_intent: bool,
        /// The pause (after enough failures, or at once for a refused credential).
        pause: Option<PauseSpec>,
    },
    /// Nobody knows whether it went out: `posting -> needs_review`, the reservation kept,
    /// the intent `unknown`, the channel paused.
    Unknown {
        /// The claim.
        generation: i64,
        /// Why.
        reason: String,
        /// The channel's pause.
        pause: Option<PauseSpec>,
    },
    /// A pause holds it before anything was sent: `posting -> approved`, the reservation
    /// released, not an attempt.
    Held {
        /// The claim.
        generation: i64,
        /// Why (the status event's note).
        note: String,
        /// A pause set with it (an account mismatch).
        pause: Option<PauseSpec>,
    },
    /// The reaper: a claim whose lease ended after its intent, so nobody knows —
    /// [`Change::Unknown`], applied only while that generation's intent exists and with
    /// no evidence left when another reaper got there first.
    ReapedSent {
        /// The claim.
        generation: i64,
        /// Why.
        reason: String,
        /// The channel's pause.
        pause: Option<PauseSpec>,
    },
    /// The reaper: a claim whose lease ended before any intent, so nothing was sent:
    /// back to the queue (or failed, when `gives_up`), an attempt counted, applied only
    /// while that generation has no intent.
    ReapedUnsent {
        /// The claim.
        generation: i64,
        /// Why.
        reason: String,
        /// The status event's note.
        note: String,
        /// `max_attempts` reached: `failed` instead of back to the queue.
        gives_up: bool,
        /// The next try, when it goes back to the queue.
        not_before: Option<DateTime<Utc>>,
    },

    // People and agents, at the `version` they read.
    /// The content or the schedule changed. A draft stays a draft; an approved post
    /// returns to draft, its approval withdrawn.
    Edited {
        /// The version read.
        version: i64,
        /// New content and its hash, when it changed.
        content: Option<(PostContent, ContentHash)>,
        /// A new schedule.
        scheduled_at: Option<DateTime<Utc>>,
        /// What changed, for the timeline (`text, scheduled_at`).
        fields: String,
        /// Refuse a change into a queued duplicate text ([`crate::StoreError::DuplicateText`]);
        /// `None` checks nothing (an operator's override).
        duplicate_window: Option<Duration>,
    },
    /// A critic's verdict, recorded in the post's review round, and what it does.
    Verdict {
        /// The version read.
        version: i64,
        /// The verdict.
        verdict: NewVerdict,
        /// What it does to the post.
        effect: VerdictEffect,
    },
    /// The approval is withdrawn: `approved -> draft`.
    Withdrawn {
        /// The version read.
        version: i64,
        /// Why (the status event's note).
        note: String,
        /// The post's error, when the content changed or no longer passes the policy.
        error: Option<String>,
    },
    /// Out of quarantine: a plain draft again, its failed reviews counted from zero.
    Released {
        /// The version read.
        version: i64,
        /// The event's note.
        note: String,
    },
    /// A failed post back in the queue: `failed -> approved`, attempts from zero.
    Requeued {
        /// The version read.
        version: i64,
    },
    /// A person or platform proof says it went out: `needs_review -> posted`, the
    /// reservation committed, the intent `succeeded`.
    SettledPublished {
        /// The version read.
        version: i64,
        /// The part settled, the post's last, from 1: the post's id and permalink are
        /// part 1's.
        part: u32,
        /// When it went out.
        posted_at: DateTime<Utc>,
        /// The platform's id, when known (else left as it is).
        platform_post_id: Option<String>,
        /// Where people see it, when known (else left as it is).
        permalink: Option<String>,
        /// The status event's note.
        note: String,
    },
    /// A person or platform proof says a part that is not the last went out:
    /// `needs_review -> approved`, so the next pass resumes at the part after it; the
    /// part's intent `succeeded` with its id, the reservation committed.
    PartSettled {
        /// The version read.
        version: i64,
        /// The part, from 1.
        part: u32,
        /// The platform's id of the part (the next part replies to it).
        platform_post_id: String,
        /// Where people see it, when known.
        permalink: Option<String>,
        /// The status event's note.
        note: String,
    },
    /// A person says it did not go out: `needs_review -> failed`, the reservation
    /// released, the intent `not_sent`.
    SettledNotPublished {
        /// The version read.
        version: i64,
        /// The post's error.
        error: String,
        /// The status event's note.
        note: String,
    },
    /// The platform guarantees the attempt can never land: `needs_review -> approved`,
    /// the reservation released, the intent `not_sent`.
    CannotLand {
        /// The version read.
        version: i64,
        /// The evidence.
        note: String,
    },
    /// Reconcile claims a re-send of the post (Mastodon's): a `resend` event.
    ResendClaimed {
        /// The version read.
        version: i64,
        /// The event's note.
        note: String,
    },
    /// Over quota: it waits for the slot (`not_before`, `deferred_until`), a
    /// `quota_deferred` event.
    Deferred {
        /// The version read.
        version: i64,
        /// When the slot frees.
        until: DateTime<Utc>,
        /// The event's note.
        note: String,
    },
    /// A pass decided a deferral again: due now (`None`), or at a sooner slot.
    DeferralLifted {
        /// The version read.
        version: i64,
        /// The new slot, if it still waits.
        until: Option<DateTime<Utc>>,
        /// The event's note.
        note: String,
    },
}

/// What a verdict does to the post.
#[derive(Debug, Clone)]
pub enum VerdictEffect {
    /// Enough passes: `draft -> approved`, approving the content the post holds.
    Approve {
        /// Everyone whose pass counts.
        approved_by: String,
        /// The status event's note.
        note: String,
        /// Refuse approving a queued duplicate text; `None` checks nothing.
        duplicate_window: Option<Duration>,
    },
    /// A pass recorded; more are needed (a `verdict` event).
    AwaitMore {
        /// The event's note.
        note: String,
    },
    /// A fail: the post stays (or returns to) draft for its writer, and `quarantine`s
    /// after too many.
    Revise {
        /// Whether it counts toward quarantine.
        counts: bool,
        /// Quarantined now.
        quarantine: bool,
        /// The post's error.
        error: String,
        /// The event's note (`rejected`, or `quarantined`).
        note: String,
    },
}

/// Which write a change must match to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Optimistic concurrency for people and agents: the `version` they read.
    Version(i64),
    /// Fencing for the guarded path: the post must be `posting` under this generation.
    Generation(i64),
}

/// What a change does to the ledger's rows, as the SQLite backend applies it: the rows
/// a [`Change`] touches, written once here. Only [`Change::effects`] makes one.
#[derive(Debug, Clone)]
pub struct Effects {
    /// The write it must match.
    pub guard: Guard,
    /// The statuses it may start from ([`Change::starts_from`]); from any other it is
    /// [`crate::StoreError::IllegalTransition`] and changes nothing.
    pub from: &'static [PostStatus],
    /// New status; the store appends the status event (with `note`).
    pub to: Option<PostStatus>,
    /// The status event's note.
    pub note: Option<String>,
    /// A non-status event to append; with `event_unless_moved`, only when the status
    /// stays as it is (the status event says it otherwise).
    pub event: Option<EventNote>,
    /// See `event`.
    pub event_unless_moved: bool,
    /// Field changes.
    pub set: Fields,
    /// Apply only if an intent exists (`Some(true)`) or does not (`Some(false)`) for the
    /// guarded generation; otherwise [`crate::StoreError::Conflict`].
    pub intent_required: Option<bool>,
    /// Settle the intent of the guarded generation (or the post's latest).
    pub intent_phase: Option<IntentPhase>,
    /// The platform's id and permalink of what that intent sent, once it is out.
    pub intent_landed: Option<(Option<String>, Option<String>)>,
    /// Keep the claim for the next part: the next generation, the lease until then.
    pub next_part: Option<DateTime<Utc>>,
    /// A verdict, in the post's review round before this change.
    pub verdict: Option<NewVerdict>,
    /// Settle the post's live reservations.
    pub reservation: Option<Settle>,
    /// Whether a stale generation's refused write leaves a `stale_outcome` event.
    pub record_stale: bool,
    /// The channel's consecutive definite failures.
    pub failures: Option<FailureStep>,
    /// A pause set with it.
    pub pause: Option<PauseSpec>,
    /// The duplicate-text check, on approval, a text change or a schedule move.
    pub duplicate_window: Option<Duration>,
}

/// Post columns a change sets. `Some(None)` clears a nullable column.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    /// New content and its hash.
    pub content: Option<(PostContent, ContentHash)>,
    /// New schedule.
    pub scheduled_at: Option<DateTime<Utc>>,
    /// Approval: its hash and approvers, or cleared.
    pub approval: Option<Option<(ContentHash, String)>>,
    /// Last content editor.
    pub edited_by: Option<String>,
    /// Add one to `attempts`.
    pub count_attempt: bool,
    /// Add one to `waits`.
    pub count_wait: bool,
    /// `attempts` and `waits` back to zero.
    pub reset_attempts: bool,
    /// Earliest next claim.
    pub not_before: Option<Option<DateTime<Utc>>>,
    /// The quota deferral behind `not_before`.
    pub deferred_until: Option<Option<DateTime<Utc>>>,
    /// Platform id (set when given).
    pub platform_post_id: Option<String>,
    /// Permalink (set when given).
    pub permalink: Option<String>,
    /// Publish time.
    pub posted_at: Option<DateTime<Utc>>,
    /// Last error summary.
    pub error: Option<Option<String>>,
    /// Add one to `revisions`.
    pub count_revision: bool,
    /// `revisions` back to zero.
    pub reset_revisions: bool,
    /// Quarantine (`Some(Some(now))`) or release (`Some(None)`).
    pub quarantined_at: Option<Option<DateTime<Utc>>>,
}

impl Effects {
    fn new(guard: Guard, from: &'static [PostStatus]) -> Self {
        Effects {
            guard,
            from,
            to: None,
            note: None,
            event: None,
            event_unless_moved: false,
            set: Fields::default(),
            intent_required: None,
            intent_phase: None,
            intent_landed: None,
            next_part: None,
            verdict: None,
            reservation: None,
            record_stale: matches!(guard, Guard::Generation(_)),
            failures: None,
            pause: None,
            duplicate_window: None,
        }
    }

    fn to(mut self, status: PostStatus, note: impl Into<String>) -> Self {
        self.to = Some(status);
        self.note = Some(note.into());
        self
    }

    fn event(mut self, kind: &str, note: impl Into<String>) -> Self {
        self.event = Some(EventNote {
            kind: kind.into(),
            note: Some(note.into()),
        });
        self
    }

    /// Back to draft with the approval withdrawn; when the post already is a draft, the
    /// `kind` event says what happened instead of a status event.
    fn into_draft(mut self, kind: &str, event_note: String, status_note: String) -> Self {
        self = self
            .to(PostStatus::Draft, status_note)
            .event(kind, event_note);
        self.event_unless_moved = true;
        self.set.approval = Some(None);
        self
    }
}

impl Change {
    /// The guard it is written under.
    pub fn guard(&self) -> Guard {
        match self {
            Change::Published { generation, .. }
            | Change::PartPublished { generation, .. }
            | Change::NotSent { generation, .. }
            | Change::Failed { generation, .. }
            | Change::Unknown { generation, .. }
            | Change::Held { generation, .. }
            | Change::ReapedSent { generation, .. }
            | Change::ReapedUnsent { generation, .. } => Guard::Generation(*generation),
            Change::Edited { version, .. }
            | Change::Verdict { version, .. }
            | Change::Withdrawn { version, .. }
            | Change::Released { version, .. }
            | Change::Requeued { version }
            | Change::SettledPublished { version, .. }
            | Change::PartSettled { version, .. }
            | Change::SettledNotPublished { version, .. }
            | Change::CannotLand { version, .. }
            | Change::ResendClaimed { version, .. }
            | Change::Deferred { version, .. }
            | Change::DeferralLifted { version, .. } => Guard::Version(*version),
        }
    }

    /// The statuses it may start from. A worker's outcome starts from `posting` only
    /// (its generation fences it too); a person's or agent's change from the statuses
    /// its move leaves, so that, say, settling a post nobody is reviewing cannot release
    /// the reservation of a send under way.
    pub fn starts_from(&self) -> &'static [PostStatus] {
        use PostStatus::*;
        match self {
            Change::Published { .. }
            | Change::PartPublished { .. }
            | Change::NotSent { .. }
            | Change::Failed { .. }
            | Change::Unknown { .. }
            | Change::Held { .. }
            | Change::ReapedSent { .. }
            | Change::ReapedUnsent { .. } => &[Posting],
            Change::Edited { .. } => &[Draft, Approved],
            Change::Verdict {
                effect: VerdictEffect::Revise { .. },
                ..
            } => &[Draft, Approved],
            Change::Verdict { .. } | Change::Released { .. } => &[Draft],
            Change::Withdrawn { .. } | Change::Deferred { .. } | Change::DeferralLifted { .. } => {
                &[Approved]
            }
            Change::Requeued { .. } => &[Failed],
            Change::SettledPublished { .. }
            | Change::PartSettled { .. }
            | Change::SettledNotPublished { .. }
            | Change::CannotLand { .. }
            | Change::ResendClaimed { .. } => &[NeedsReview],
        }
    }

    /// Its name, as its PostgreSQL function is named (`airlock_change_<name>`).
    pub fn name(&self) -> &'static str {
        match self {
            Change::Published { .. } => "published",
            Change::PartPublished { .. } => "part_published",
            Change::NotSent { .. } => "not_sent",
            Change::Failed { .. } => "failed",
            Change::Unknown { .. } => "unknown",
            Change::Held { .. } => "held",
            Change::ReapedSent { .. } => "reaped_sent",
            Change::ReapedUnsent { .. } => "reaped_unsent",
            Change::Edited { .. } => "edited",
            Change::Verdict { .. } => "verdict",
            Change::Withdrawn { .. } => "withdrawn",
            Change::Released { .. } => "released",
            Change::Requeued { .. } => "requeued",
            Change::SettledPublished { .. } => "settled_published",
            Change::PartSettled { .. } => "part_settled",
            Change::SettledNotPublished { .. } => "settled_not_published",
            Change::CannotLand { .. } => "cannot_land",
            Change::ResendClaimed { .. } => "resend_claimed",
            Change::Deferred { .. } => "deferred",
            Change::DeferralLifted { .. } => "deferral_lifted",
        }
    }

    /// Which rows it touches, and how, when `actor` makes it at `now`.
    pub fn effects(&self, actor: &str, now: DateTime<Utc>) -> Effects {
        let e = Effects::new(self.guard(), self.starts_from());
        match self.clone() {
            Change::Published {
                part,
                posted_at,
                platform_post_id,
                permalink,
                sent_by,
                note,
                flag,
                pause,
                ..
            } => {
                let mut e = e.to(PostStatus::Posted, note);
                e.set.posted_at = Some(posted_at);
                e.intent_landed = Some((platform_post_id.clone(), permalink.clone()));
                if part == 1 {
                    e.set.platform_post_id = platform_post_id;
                    e.set.permalink = permalink;
                }
                e.set.not_before = Some(None);
                e.set.error = Some(flag);
                e.reservation = Some(sent_by.map_or(Settle::Commit, Settle::CommitAttempt));
                e.intent_phase = Some(IntentPhase::Succeeded);
                e.failures = Some(FailureStep::Reset);
                e.pause = pause;
                e
            }
            Change::PartPublished {
                part,
                platform_post_id,
                permalink,
                sent_by,
                lease_until,
                note,
                ..
            } => {
                let mut e = e.event("part_published", note);
                if part == 1 {
                    e.set.platform_post_id = Some(platform_post_id.clone());
                    e.set.permalink = permalink.clone();
                }
                e.intent_landed = Some((Some(platform_post_id), permalink));
                e.intent_phase = Some(IntentPhase::Succeeded);
                e.reservation = Some(sent_by.map_or(Settle::Commit, Settle::CommitAttempt));
                e.next_part = Some(lease_until);
                e.failures = Some(FailureStep::Reset);
                e
            }
            Change::NotSent {
                reason,
                note,
                not_before,
                counts_attempt,
                counts_wait,
                settles_intent,
                ..
            } => {
                let mut e = e.to(PostStatus::Approved, note);
                e.set.count_attempt = counts_attempt;
                e.set.count_wait = counts_wait;
                e.set.not_before = Some(Some(not_before));
                e.set.error = Some(Some(reason));
                e.reservation = Some(Settle::Release);
                e.intent_phase = settles_intent.then_some(IntentPhase::NotSent);
                e
            }
            Change::Failed {
                reason,
                counts_attempt,
                settles_intent,
                pause,
                ..
            } => {
                let mut e = e.to(PostStatus::Failed, reason.clone());
                e.set.count_attempt = counts_attempt;
                e.set.error = Some(Some(reason));
                e.reservation = Some(Settle::Release);
                e.intent_phase = settles_intent.then_some(IntentPhase::Rejected);
                e.failures = Some(FailureStep::Increment);
                e.pause = pause;
                e
            }
            Change::Unknown { reason, pause, .. } => unknown(e, reason, pause),
            Change::ReapedSent { reason, pause, .. } => {
                let mut e = unknown(e, reason, pause);
                e.intent_required = Some(true);
                e.record_stale = false;
                e
            }
            Change::Held { note, pause, .. } => {
                let mut e = e.to(PostStatus::Approved, note);
                e.reservation = Some(Settle::Release);
                e.pause = pause;
                e
            }
            Change::ReapedUnsent {
                reason,
                note,
                gives_up,
                not_before,
                ..
            } => {
                let to = if gives_up {
                    PostStatus::Failed
                } else {
                    PostStatus::Approved
                };
                let mut e = e.to(to, note);
                e.intent_required = Some(false);
                e.record_stale = false;
                e.reservation = Some(Settle::Release);
                e.set.error = Some(Some(reason));
                e.set.count_attempt = true;
                if !gives_up {
                    e.set.not_before = Some(not_before);
                }
                e
            }
            Change::Edited {
                content,
                scheduled_at,
                fields,
                duplicate_window,
                ..
            } => {
                let mut e = e.into_draft(
                    "edited",
                    format!("edited {fields}"),
                    format!("edited ({fields}): approval withdrawn"),
                );
                e.set.edited_by = content.as_ref().map(|_| actor.to_owned());
                e.set.content = content;
                e.set.scheduled_at = scheduled_at;
                e.set.error = Some(None);
                e.duplicate_window = duplicate_window;
                e
            }
            Change::Verdict {
                verdict, effect, ..
            } => {
                let hash = verdict.content_hash.clone();
                let mut e = match effect {
                    VerdictEffect::Approve {
                        approved_by,
                        note,
                        duplicate_window,
                    } => {
                        let mut e = e.to(PostStatus::Approved, note);
                        e.set.approval = Some(Some((hash, approved_by)));
                        e.set.error = Some(None);
                        e.duplicate_window = duplicate_window;
                        e
                    }
                    VerdictEffect::AwaitMore { note } => e.event("verdict", note),
                    VerdictEffect::Revise {
                        counts,
                        quarantine,
                        error,
                        note,
                    } => {
                        let kind = if quarantine {
                            "quarantined"
                        } else {
                            "rejected"
                        };
                        let status_note = airlock_core::limits::fit_chars(
                            &format!("{kind}: {note}"),
                            airlock_core::limits::MAX_EVENT_NOTE_CHARS,
                        );
                        let note = airlock_core::limits::fit_chars(
                            &note,
                            airlock_core::limits::MAX_EVENT_NOTE_CHARS,
                        );
                        let mut e = e.into_draft(kind, note, status_note);
                        e.set.count_revision = counts;
                        e.set.error = Some(Some(error));
                        if quarantine {
                            e.set.quarantined_at = Some(Some(now));
                        }
                        e
                    }
                };
                e.verdict = Some(verdict);
                e
            }
            Change::Withdrawn { note, error, .. } => {
                let mut e = e.to(PostStatus::Draft, note);
                e.set.approval = Some(None);
                if error.is_some() {
                    e.set.error = Some(error);
                }
                e
            }
            Change::Released { note, .. } => {
                let mut e = e.event("released", note);
                e.set.quarantined_at = Some(None);
                e.set.reset_revisions = true;
                // The error said why it was quarantined; that has ended.
                e.set.error = Some(None);
                e
            }
            Change::Requeued { .. } => {
                let mut e = e.to(PostStatus::Approved, "requeued");
                e.set.reset_attempts = true;
                e.set.not_before = Some(None);
                e.set.error = Some(None);
                e
            }
            Change::SettledPublished {
                part,
                posted_at,
                platform_post_id,
                permalink,
                note,
                ..
            } => {
                let mut e = e.to(PostStatus::Posted, note);
                e.set.posted_at = Some(posted_at);
                e.intent_landed = Some((platform_post_id.clone(), permalink.clone()));
                if part == 1 {
                    e.set.platform_post_id = platform_post_id;
                    e.set.permalink = permalink;
                }
                e.set.error = Some(None);
                e.reservation = Some(Settle::Commit);
                e.intent_phase = Some(IntentPhase::Succeeded);
                e
            }
            Change::PartSettled {
                part,
                platform_post_id,
                permalink,
                note,
                ..
            } => {
                let mut e = e.to(PostStatus::Approved, note);
                if part == 1 {
                    e.set.platform_post_id = Some(platform_post_id.clone());
                    e.set.permalink = permalink.clone();
                }
                e.intent_landed = Some((Some(platform_post_id), permalink));
                e.set.error = Some(None);
                e.set.not_before = Some(None);
                e.reservation = Some(Settle::Commit);
                e.intent_phase = Some(IntentPhase::Succeeded);
                e
            }
            Change::SettledNotPublished { error, note, .. } => {
                let mut e = e.to(PostStatus::Failed, note);
                e.set.error = Some(Some(error));
                e.reservation = Some(Settle::Release);
                e.intent_phase = Some(IntentPhase::NotSent);
                e
            }
            Change::CannotLand { note, .. } => {
                let mut e = e.to(PostStatus::Approved, note);
                e.set.error = Some(None);
                e.reservation = Some(Settle::Release);
                e.intent_phase = Some(IntentPhase::NotSent);
                e
            }
            Change::ResendClaimed { note, .. } => e.event(RESEND_EVENT, note),
            Change::Deferred { until, note, .. } => {
                let mut e = e.event("quota_deferred", note);
                e.set.not_before = Some(Some(until));
                e.set.deferred_until = Some(Some(until));
                e
            }
            Change::DeferralLifted { until, note, .. } => {
                let mut e = e.event("deferral_lifted", note);
                e.set.not_before = Some(until);
                e.set.deferred_until = Some(until);
                e
            }
        }
    }
}

/// `posting -> needs_review`: the reservation stays counted, the intent `unknown`, the
/// channel paused.
fn unknown(e: Effects, reason: String, pause: Option<PauseSpec>) -> Effects {
    let mut e = e.to(
        PostStatus::NeedsReview,
        format!("outcome unknown: {reason}"),
    );
    e.set.error = Some(Some(reason));
    e.intent_phase = Some(IntentPhase::Unknown);
    e.pause = pause;
    e
}
