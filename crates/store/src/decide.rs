//! What a store transaction decides that does not depend on the SQL dialect, as plain
//! functions over the rows it read: whether a guard still holds, which statuses a change
//! walks through, whether a claim may proceed or a lease still covers a request, when
//! consecutive failures pause a channel, and what a refused stale write leaves as
//! evidence. The SQLite backend calls them inside its transactions; the PostgreSQL
//! backend's functions (`crates/store-postgres/sql/functions.sql`) make the same
//! decisions in PL/pgSQL, and the conformance suite (`airlock-store-tests`) holds the
//! two equal.

use chrono::{DateTime, Duration, Utc};

use airlock_core::status::is_legal;
use airlock_core::{Post, PostStatus};

use crate::{Effects, EventNote, Guard, Result, StoreError};

/// What a post's guard says about a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardCheck {
    /// The write applies.
    Holds,
    /// A person's or agent's stale version: [`crate::StoreError::Conflict`].
    Conflict,
    /// A worker whose claim is gone: [`crate::StoreError::Fenced`], with evidence.
    Fenced,
}

/// Checks a write's guard against the post as it is now.
pub fn check_guard(guard: Guard, status: PostStatus, version: i64, generation: i64) -> GuardCheck {
    match guard {
        Guard::Version(expected) if expected != version => GuardCheck::Conflict,
        Guard::Generation(expected) if status != PostStatus::Posting || expected != generation => {
            GuardCheck::Fenced
        }
        _ => GuardCheck::Holds,
    }
}

/// Whether a change may start from `status` and the lifecycle allows its move (staying
/// is no move): `Some((from, to))` when it may not.
pub fn illegal_step(effects: &Effects, status: PostStatus) -> Option<(PostStatus, PostStatus)> {
    let to = effects.to.unwrap_or(status);
    let moves_illegally = to != status && !is_legal(status, to);
    (!effects.from.contains(&status) || moves_illegally).then_some((status, to))
}

/// The rules of content and approval every change keeps, checked against the post as
/// stored (`status`, `content_hash`): content changes only into a draft, so a change of
/// an approved post's content always shows in its timeline as the approval withdrawn;
/// and an approval names the content the post holds, on approval (a critic who read
/// other content approves nothing). `None` when `effects` keep them, else the rule
/// broken ([`StoreError::Refused`]).
pub fn write_refusal(
    effects: &Effects,
    status: PostStatus,
    content_hash: &str,
) -> Option<&'static str> {
    let after = effects.to.unwrap_or(status);
    if effects.set.content.is_some() && after != PostStatus::Draft {
        return Some("content changes only into a draft (the approval withdrawn)");
    }
    let content_after = effects
        .set
        .content
        .as_ref()
        .map_or(content_hash, |(_, hash)| hash.as_str());
    if let Some(Some((hash, _))) = &effects.set.approval
        && (after != PostStatus::Approved || hash.as_str() != content_after)
    {
        return Some("an approval names the content the post holds, on approval");
    }
    None
}

/// Whether a post a worker checked may still be claimed: `approved`, never published,
/// unchanged since the check, and a test post only on a channel that publishes them.
pub fn claimable(post: &Post, checked_version: i64, allow_test: bool) -> bool {
    post.status == PostStatus::Approved
        && post.posted_at.is_none()
        && post.version == checked_version
        && (!post.test || allow_test)
}

/// Whether a lease ending at `lease` still covers a request started at `at` that may
/// take `margin`.
pub fn lease_outlasts(lease: DateTime<Utc>, at: DateTime<Utc>, margin: Duration) -> bool {
    lease > at + margin
}

/// Whether a write fenced by `generation` (and, with `lease_valid_at`, by a lease that
/// must not have ended by then) still belongs to the post as it is now.
pub fn fence_holds(
    status: PostStatus,
    current_generation: i64,
    generation: i64,
    lease: Option<DateTime<Utc>>,
    lease_valid_at: Option<DateTime<Utc>>,
) -> bool {
    let lease_ok = match (lease_valid_at, lease) {
        (None, _) => true,
        (Some(at), Some(lease)) => lease > at,
        (Some(_), None) => false,
    };
    status == PostStatus::Posting && current_generation == generation && lease_ok
}

/// Whether a pause set with a change applies, given the channel's consecutive definite
/// failures after the change (`after_failures`: pause only at that many).
pub fn pause_applies(after_failures: Option<u32>, failures: i64) -> bool {
    after_failures.is_none_or(|n| failures >= i64::from(n))
}

/// Whether `actor`, holding `held` live drafts, may create one more under
/// [`crate::CreatePost::max_live_drafts`].
pub fn draft_limit(actor: &str, held: i64, max: Option<u32>) -> Result<()> {
    match max {
        Some(max) if held >= i64::from(max) => Err(StoreError::DraftLimit {
            actor: actor.to_owned(),
            held,
            max,
        }),
        _ => Ok(()),
    }
}

/// The duplicate check a change asks for ([`Effects::duplicate_window`]), given the
/// post's status, text and schedule before it: the text key it will have, the schedule it
/// is compared at, and the window. A change is checked when it approves a draft
/// (`draft -> approved`), changes the normalised text, or moves the schedule; `None` when
/// there is no window or it does none of these.
pub fn edit_duplicate_check(
    effects: &Effects,
    status_before: PostStatus,
    text_before: &str,
    scheduled_before: DateTime<Utc>,
) -> Option<(String, DateTime<Utc>, Duration)> {
    let window = effects.duplicate_window?;
    let key_before = airlock_core::review::text_key(text_before);
    let text_key = match &effects.set.content {
        Some((content, _)) => airlock_core::review::text_key(&content.text),
        None => key_before.clone(),
    };
    let approving = status_before == PostStatus::Draft && effects.to == Some(PostStatus::Approved);
    let moved = effects
        .set
        .scheduled_at
        .is_some_and(|at| at != scheduled_before);
    (approving || moved || text_key != key_before).then(|| {
        let at = effects.set.scheduled_at.unwrap_or(scheduled_before);
        (text_key, at, window)
    })
}

/// Whether `effects` would take a quarantined post out of `draft` without releasing it:
/// refused as [`StoreError::Quarantined`] before the triggers (which refuse it too) see it.
pub fn leaves_quarantine(effects: &Effects, quarantined: bool) -> bool {
    quarantined
        && effects.set.quarantined_at != Some(None)
        && effects.to.is_some_and(|s| s != PostStatus::Draft)
}

/// The evidence a refused write from a stale generation leaves on the post.
pub fn stale_evidence(effects: &Effects, generation: i64) -> EventNote {
    let wanted = effects.to.map(|s| s.as_str()).unwrap_or("no status change");
    let note = format!(
        "refused a write from generation {generation} (wanted {wanted}{}); the post had moved on",
        effects
            .note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    );
    EventNote {
        kind: "stale_outcome".into(),
        note: Some(note),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Change, VerdictEffect};
    use PostStatus::*;

    #[test]
    fn guards_are_checked_against_the_post_as_it_is() {
        assert_eq!(
            check_guard(Guard::Version(3), Draft, 3, 1),
            GuardCheck::Holds
        );
        assert_eq!(
            check_guard(Guard::Version(2), Draft, 3, 1),
            GuardCheck::Conflict
        );
        assert_eq!(
            check_guard(Guard::Generation(1), Posting, 9, 1),
            GuardCheck::Holds
        );
        assert_eq!(
            check_guard(Guard::Generation(1), Posting, 9, 2),
            GuardCheck::Fenced
        );
        assert_eq!(
            check_guard(Guard::Generation(1), Posted, 9, 1),
            GuardCheck::Fenced
        );
    }

    fn content(text: &str) -> airlock_core::PostContent {
        airlock_core::PostContent {
            channel: airlock_core::ChannelName::parse("c").unwrap(),
            title: None,
            text: text.to_owned(),
            media: Vec::new(),
            more: vec![],
            first_comment: None,
            link: None,
            source: None,
        }
    }

    fn verdict(hash: &airlock_core::ContentHash) -> airlock_core::NewVerdict {
        airlock_core::NewVerdict {
            verdict: airlock_core::VerdictKind::Pass,
            reasons: Vec::new(),
            content_hash: hash.clone(),
            rubric_hash: "r".into(),
            content: content("x"),
        }
    }

    fn approve(hash: &airlock_core::ContentHash) -> Effects {
        Change::Verdict {
            version: 1,
            verdict: verdict(hash),
            effect: VerdictEffect::Approve {
                approved_by: "c".into(),
                note: "approved".into(),
                duplicate_window: Some(Duration::days(7)),
            },
        }
        .effects("c", Utc::now())
    }

    #[test]
    fn content_changes_only_into_a_draft_and_an_approval_binds_its_content() {
        let new = content("new");
        let hash = new.hash();
        let mut edit = Change::Edited {
            version: 1,
            content: Some((new.clone(), hash.clone())),
            scheduled_at: None,
            fields: "text".into(),
            duplicate_window: None,
        }
        .effects("w", Utc::now());
        // An edit always lands in a draft: an approved post's approval is withdrawn.
        assert_eq!(edit.to, Some(Draft));
        assert_eq!(write_refusal(&edit, Draft, "aa"), None);
        assert_eq!(write_refusal(&edit, Approved, "aa"), None);
        edit.to = None;
        assert!(write_refusal(&edit, Approved, "aa").is_some());
        assert!(write_refusal(&edit, Posted, "aa").is_some());
        // An approval names the content the post holds.
        let other = airlock_core::ContentHash::parse(&"b".repeat(64)).unwrap();
        assert!(write_refusal(&approve(&other), Draft, hash.as_str()).is_some());
        assert_eq!(write_refusal(&approve(&hash), Draft, hash.as_str()), None);
        // Withdrawing an approval names none.
        let withdraw = Change::Withdrawn {
            version: 1,
            note: "withdrawn".into(),
            error: None,
        }
        .effects("c", Utc::now());
        assert_eq!(write_refusal(&withdraw, Approved, "aa"), None);
    }

    #[test]
    fn a_change_starts_only_where_it_may_and_moves_along_the_lifecycle() {
        let requeue = Change::Requeued { version: 1 }.effects("c", Utc::now());
        assert_eq!(illegal_step(&requeue, Failed), None);
        // Requeuing a post under review would skip settling its intent and reservation.
        assert_eq!(
            illegal_step(&requeue, NeedsReview),
            Some((NeedsReview, Approved))
        );
        let cannot_land = Change::CannotLand {
            version: 1,
            note: "expired".into(),
        }
        .effects("c", Utc::now());
        assert_eq!(illegal_step(&cannot_land, NeedsReview), None);
        // The lifecycle has `posting -> approved`, but not for this change: a send may be
        // under way.
        assert_eq!(
            illegal_step(&cannot_land, Posting),
            Some((Posting, Approved))
        );
        let resend = Change::ResendClaimed {
            version: 1,
            note: "resend".into(),
        }
        .effects("c", Utc::now());
        assert_eq!(illegal_step(&resend, NeedsReview), None);
        assert_eq!(illegal_step(&resend, Posted), Some((Posted, Posted)));
        let edit = Change::Edited {
            version: 1,
            content: None,
            scheduled_at: None,
            fields: "scheduled_at".into(),
            duplicate_window: None,
        }
        .effects("c", Utc::now());
        assert_eq!(illegal_step(&edit, Draft), None);
        assert_eq!(illegal_step(&edit, Approved), None);
        assert_eq!(illegal_step(&edit, Failed), Some((Failed, Draft)));
    }

    #[test]
    fn leases_fences_and_pauses() {
        let t = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let m = Duration::seconds(30);
        assert!(lease_outlasts(t + Duration::minutes(1), t, m));
        assert!(!lease_outlasts(t + m, t, m));
        assert!(fence_holds(Posting, 2, 2, None, None));
        assert!(!fence_holds(Posting, 3, 2, None, None));
        assert!(!fence_holds(Approved, 2, 2, None, None));
        assert!(fence_holds(Posting, 2, 2, Some(t + m), Some(t)));
        assert!(!fence_holds(Posting, 2, 2, Some(t), Some(t)));
        assert!(!fence_holds(Posting, 2, 2, None, Some(t)));
        assert!(pause_applies(None, 0));
        assert!(!pause_applies(Some(3), 2));
        assert!(pause_applies(Some(3), 3));
    }

    #[test]
    fn draft_limits_and_edit_duplicate_checks() {
        assert!(draft_limit("token:w", 5, None).is_ok());
        assert!(draft_limit("token:w", 4, Some(5)).is_ok());
        assert!(matches!(
            draft_limit("token:w", 5, Some(5)),
            Err(StoreError::DraftLimit {
                held: 5,
                max: 5,
                ..
            })
        ));

        let t = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let content = |text: &str| airlock_core::PostContent {
            channel: airlock_core::ChannelName::parse("c").unwrap(),
            title: None,
            text: text.to_owned(),
            media: Vec::new(),
            more: vec![],
            first_comment: None,
            link: None,
            source: None,
        };
        let new = content("Tea  at FOUR.");
        let edit = |window, scheduled_at| {
            Change::Edited {
                version: 1,
                content: Some((new.clone(), new.hash())),
                scheduled_at,
                fields: "text".into(),
                duplicate_window: window,
            }
            .effects("w", t)
        };
        let draft = PostStatus::Draft;
        assert_eq!(
            edit_duplicate_check(&edit(None, None), draft, "other", t),
            None,
            "no window"
        );
        let week = Some(Duration::days(7));
        assert_eq!(
            edit_duplicate_check(&edit(week, None), draft, "tea at four.", t),
            None,
            "the same normalised text"
        );
        let key = airlock_core::review::text_key("tea at four.");
        assert_eq!(
            edit_duplicate_check(&edit(week, None), draft, "other", t),
            Some((key.clone(), t, Duration::days(7)))
        );
        let moved = edit(week, Some(t + Duration::days(1)));
        assert_eq!(
            edit_duplicate_check(&moved, draft, "other", t),
            Some((key.clone(), t + Duration::days(1), Duration::days(7))),
            "at the new schedule"
        );
        assert_eq!(
            edit_duplicate_check(&moved, draft, "tea at four.", t),
            Some((key.clone(), t + Duration::days(1), Duration::days(7))),
            "the same text, moved"
        );
        // Approving a draft is checked whatever changes; other status changes are not.
        let mut approving = approve(&new.hash());
        assert_eq!(
            edit_duplicate_check(&approving, draft, "tea at four.", t),
            Some((key, t, Duration::days(7)))
        );
        assert_eq!(
            edit_duplicate_check(&approving, PostStatus::Failed, "tea at four.", t),
            None
        );
        assert!(leaves_quarantine(&approving, true));
        assert!(!leaves_quarantine(&approving, false));
        approving.set.quarantined_at = Some(None);
        assert!(!leaves_quarantine(&approving, true));
    }
}
