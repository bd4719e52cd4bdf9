//! Post states, the transitions between them and who may make each one.
//!
//! This is the single source of truth for docs/lifecycle.md. The stores enforce the same
//! edge set once more in SQL (their tests walk [`PostStatus::ALL`] × [`PostStatus::ALL`]
//! against [`is_legal`]), so a bug or a hand-written `UPDATE` cannot skip a state.
//!
//! **Quarantine** is a condition on a `draft`, not a seventh state: a draft that failed
//! review `max_revisions` times carries `quarantined_at` ([`crate::Post::quarantined_at`]).
//! It keeps the six states of the contract (a quarantined post is listed as `draft`)
//! while closing every way out of `draft` but one: [`quarantine_allows`] says which
//! actions remain, and the stores refuse `draft -> approved` and any change of content
//! while the flag is set, and refuse the flag on any other state.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a post is in its life. Stored in `posts.status` as the lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum PostStatus {
    /// Written by a writer and editable. A critic approves it; a writer or operator may discard it.
    Draft,
    /// Approved with an `approved_hash`, waiting for `scheduled_at`. The dispatcher claims it;
    /// an edit or unapprove returns it to draft; the reaper and reconciler may return it here.
    Approved,
    /// Claimed under a lease and a fencing `generation`. Left only by an outcome write of the
    /// claiming worker or by the reaper once the lease has expired.
    Posting,
    /// The platform has it. Final: nothing moves a posted post again.
    Posted,
    /// Definitely not published. Only a person requeues it.
    Failed,
    /// Nobody knows whether it went out. A person (or a reconciler with platform evidence) settles it.
    NeedsReview,
}

impl PostStatus {
    /// Every state, in lifecycle order.
    pub const ALL: [PostStatus; 6] = [
        PostStatus::Draft,
        PostStatus::Approved,
        PostStatus::Posting,
        PostStatus::Posted,
        PostStatus::Failed,
        PostStatus::NeedsReview,
    ];

    /// The name stored in the database and used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PostStatus::Draft => "draft",
            PostStatus::Approved => "approved",
            PostStatus::Posting => "posting",
            PostStatus::Posted => "posted",
            PostStatus::Failed => "failed",
            PostStatus::NeedsReview => "needs_review",
        }
    }
}

impl fmt::Display for PostStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status name that is not one of the six states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown status {0:?}: expected one of draft, approved, posting, posted, failed, needs_review"
)]
pub struct UnknownStatus(pub String);

impl FromStr for PostStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PostStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

/// Who moves a post: a role held by a person or token, or one of airlock's own workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mover {
    /// A person or agent acting through a role.
    Role(crate::Role),
    /// The guarded publish path (`dispatcher:<worker-id>`), whoever asked for the publish.
    Dispatcher,
    /// The lease reaper.
    Reaper,
    /// The reconciler settling `needs_review` posts from platform evidence.
    Reconciler,
}

/// A named edge of the lifecycle (docs/lifecycle.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// `draft -> approved`: content policy passed; records `approved_hash`.
    Approve,
    /// `approved -> draft`: unapprove, a fail verdict, any edit of an approved post, or
    /// the dispatcher finding the content changed after approval.
    Unapprove,
    /// `approved -> posting`: claimed with a lease and a new generation.
    Claim,
    /// `posting -> approved`: the irreversible step provably never started.
    Release,
    /// `posting -> posted`: the platform returned the post.
    Succeed,
    /// `posting -> failed`: a definite rejection, or `attempts` reached `max_attempts`.
    Fail,
    /// `posting -> needs_review`: the outcome is unknown.
    MarkUnknown,
    /// `needs_review -> posted`: a person or the platform confirms it went out.
    ConfirmPublished,
    /// `needs_review -> failed`: a person confirms it did not go out.
    ConfirmNotPublished,
    /// `needs_review -> approved`: the platform proves nothing was published.
    ProvenNotPublished,
    /// `failed -> approved`: explicit requeue by a person.
    Requeue,
}

impl Transition {
    /// Every named edge.
    pub const ALL: [Transition; 11] = [
        Transition::Approve,
        Transition::Unapprove,
        Transition::Claim,
        Transition::Release,
        Transition::Succeed,
        Transition::Fail,
        Transition::MarkUnknown,
        Transition::ConfirmPublished,
        Transition::ConfirmNotPublished,
        Transition::ProvenNotPublished,
        Transition::Requeue,
    ];

    /// The state this edge leaves.
    pub fn from(self) -> PostStatus {
        use PostStatus::*;
        match self {
            Transition::Approve => Draft,
            Transition::Unapprove | Transition::Claim => Approved,
            Transition::Release
            | Transition::Succeed
            | Transition::Fail
            | Transition::MarkUnknown => Posting,
            Transition::ConfirmPublished
            | Transition::ConfirmNotPublished
            | Transition::ProvenNotPublished => NeedsReview,
            Transition::Requeue => Failed,
        }
    }

    /// The state this edge enters.
    pub fn to(self) -> PostStatus {
        use PostStatus::*;
        match self {
            Transition::Approve | Transition::Release | Transition::ProvenNotPublished => Approved,
            Transition::Requeue => Approved,
            Transition::Unapprove => Draft,
            Transition::Claim => Posting,
            Transition::Succeed | Transition::ConfirmPublished => Posted,
            Transition::Fail | Transition::ConfirmNotPublished => Failed,
            Transition::MarkUnknown => NeedsReview,
        }
    }

    /// Who may make this move. `operator` holds every role, see [`crate::Role::grants`].
    pub fn movers(self) -> &'static [Mover] {
        use crate::Role::*;
        match self {
            Transition::Approve => &[Mover::Role(Critic)],
            // An edit by a writer withdraws the approval, so writers move this edge too;
            // and the guarded path returns a post whose content changed after approval
            // (or no longer passes the policy) to draft, without claiming it.
            Transition::Unapprove => &[Mover::Role(Critic), Mover::Role(Writer), Mover::Dispatcher],
            Transition::Claim | Transition::Succeed => &[Mover::Dispatcher],
            Transition::Release | Transition::Fail | Transition::MarkUnknown => {
                &[Mover::Dispatcher, Mover::Reaper]
            }
            Transition::ConfirmPublished => &[Mover::Role(Operator), Mover::Reconciler],
            Transition::ConfirmNotPublished | Transition::Requeue => &[Mover::Role(Operator)],
            Transition::ProvenNotPublished => &[Mover::Reconciler],
        }
    }

    /// The named edge between two states, if the lifecycle has one.
    pub fn between(from: PostStatus, to: PostStatus) -> Option<Transition> {
        Transition::ALL
            .into_iter()
            .find(|t| t.from() == from && t.to() == to)
    }
}

/// Whether `action` may be taken on a quarantined draft: reading it, and the
/// operator's release, note and discard. Editing, approving, rejecting and publishing
/// are refused until an operator releases it.
pub fn quarantine_allows(action: crate::Action) -> bool {
    use crate::Action;
    matches!(
        action,
        Action::Read | Action::Release | Action::Note | Action::Discard
    )
}

/// Whether the lifecycle has an edge `from -> to` at all (whoever makes it).
pub fn is_legal(from: PostStatus, to: PostStatus) -> bool {
    Transition::between(from, to).is_some()
}

/// A move the lifecycle does not allow, or not for this mover.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalTransition {
    /// The post is not in the state the transition leaves.
    #[error("post is {actual}, but {transition:?} needs it to be {expected}")]
    WrongState {
        /// The attempted edge.
        transition: Transition,
        /// The state the edge leaves.
        expected: PostStatus,
        /// The post's state.
        actual: PostStatus,
    },
    /// The mover may not make this edge.
    #[error("{mover:?} may not make {transition:?}")]
    NotAllowed {
        /// The attempted edge.
        transition: Transition,
        /// Who tried.
        mover: Mover,
    },
}

/// Checks one move against the table of docs/lifecycle.md and returns the new state.
pub fn apply(
    from: PostStatus,
    transition: Transition,
    mover: Mover,
) -> Result<PostStatus, IllegalTransition> {
    if transition.from() != from {
        return Err(IllegalTransition::WrongState {
            transition,
            expected: transition.from(),
            actual: from,
        });
    }
    let allowed = transition
        .movers()
        .iter()
        .any(|allowed| match (allowed, mover) {
            (Mover::Role(needed), Mover::Role(held)) => held.grants(*needed),
            (a, b) => *a == b,
        });
    if !allowed {
        return Err(IllegalTransition::NotAllowed { transition, mover });
    }
    Ok(transition.to())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Role;
    use PostStatus::*;

    /// The guarded path finds a due post's content changed after approval (or failing
    /// the policy) and returns it `approved -> draft` without claiming it
    /// (`airlock_app` `back_to_draft`): the dispatcher is a mover of that edge.
    #[test]
    fn the_dispatcher_returns_an_approved_post_whose_content_changed_to_draft() {
        let edge = Transition::between(Approved, Draft).unwrap();
        assert_eq!(edge, Transition::Unapprove);
        assert!(edge.movers().contains(&Mover::Dispatcher));
        assert_eq!(apply(Approved, edge, Mover::Dispatcher), Ok(Draft));
        assert!(apply(Approved, edge, Mover::Reaper).is_err());
        assert!(apply(Approved, edge, Mover::Reconciler).is_err());
        assert!(apply(Approved, edge, Mover::Role(Role::Publisher)).is_err());
    }

    #[test]
    fn status_names_round_trip() {
        for status in PostStatus::ALL {
            assert_eq!(status.as_str().parse::<PostStatus>().unwrap(), status);
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{}\"", status.as_str())
            );
        }
        assert!("deleted".parse::<PostStatus>().is_err());
    }

    #[test]
    fn the_edge_set_is_exactly_the_spec_table() {
        let expected = [
            (Draft, Approved),
            (Approved, Draft),
            (Approved, Posting),
            (Posting, Approved),
            (Posting, Posted),
            (Posting, Failed),
            (Posting, NeedsReview),
            (NeedsReview, Posted),
            (NeedsReview, Failed),
            (NeedsReview, Approved),
            (Failed, Approved),
        ];
        for from in PostStatus::ALL {
            for to in PostStatus::ALL {
                assert_eq!(
                    is_legal(from, to),
                    expected.contains(&(from, to)),
                    "{from} -> {to}"
                );
            }
        }
    }

    #[test]
    fn posted_is_final() {
        for to in PostStatus::ALL {
            assert!(!is_legal(Posted, to));
        }
    }

    #[test]
    fn roles_are_checked_per_edge() {
        assert_eq!(
            apply(Draft, Transition::Approve, Mover::Role(Role::Critic)),
            Ok(Approved)
        );
        assert!(apply(Draft, Transition::Approve, Mover::Role(Role::Writer)).is_err());
        assert!(apply(Draft, Transition::Approve, Mover::Role(Role::Publisher)).is_err());
        assert_eq!(
            apply(Draft, Transition::Approve, Mover::Role(Role::Operator)),
            Ok(Approved)
        );
        assert_eq!(
            apply(Approved, Transition::Unapprove, Mover::Role(Role::Writer)),
            Ok(Draft)
        );
        // People never claim or write outcomes; only workers do.
        assert!(apply(Approved, Transition::Claim, Mover::Role(Role::Operator)).is_err());
        assert!(apply(Posting, Transition::Succeed, Mover::Reaper).is_err());
        assert_eq!(
            apply(Posting, Transition::MarkUnknown, Mover::Reaper),
            Ok(NeedsReview)
        );
        // Only the platform's evidence returns an unknown post to the queue, never a person.
        assert!(
            apply(
                NeedsReview,
                Transition::ProvenNotPublished,
                Mover::Role(Role::Operator)
            )
            .is_err()
        );
        assert_eq!(
            apply(
                NeedsReview,
                Transition::ProvenNotPublished,
                Mover::Reconciler
            ),
            Ok(Approved)
        );
        assert!(apply(Failed, Transition::Requeue, Mover::Reconciler).is_err());
    }

    #[test]
    fn a_quarantined_draft_allows_only_reading_release_notes_and_discard() {
        use crate::Action;
        for action in [Action::Read, Action::Release, Action::Note, Action::Discard] {
            assert!(quarantine_allows(action), "{action:?}");
        }
        for action in [
            Action::Edit,
            Action::Approve,
            Action::Reject,
            Action::Unapprove,
            Action::Publish,
            Action::Create,
        ] {
            assert!(!quarantine_allows(action), "{action:?}");
        }
    }

    #[test]
    fn wrong_source_state_is_refused() {
        let err = apply(Posted, Transition::Approve, Mover::Role(Role::Operator)).unwrap_err();
        assert!(matches!(
            err,
            IllegalTransition::WrongState { actual: Posted, .. }
        ));
    }
}
