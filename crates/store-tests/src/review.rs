//! Cases for the critic's workflow as the store keeps it: verdicts recorded with the
//! change they make, in the review round they were given in; a new round whenever the
//! content changes or an approval is withdrawn; the revision count and the quarantine
//! flag, which only a draft carries and which keeps it from being approved or changed;
//! and duplicate drafts found by their normalised text inside the creating transaction.

use std::sync::Arc;

use chrono::Duration;

use airlock_core::review::VerdictKind;
use airlock_core::{NewVerdict, Post, PostStatus};
use airlock_store::{
    Change, ExportFilter, PostChange, PostFilter, Store, StoreError, VerdictEffect,
};

use crate::fixture::*;

fn verdict(post: &Post, kind: VerdictKind, reasons: &[&str]) -> NewVerdict {
    NewVerdict {
        verdict: kind,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        content_hash: post.content_hash.clone(),
        rubric_hash: "ab".repeat(32),
        content: post.content.clone(),
    }
}

/// A fail by [`CRITIC`]: the verdict, one more revision, the reasons on the post.
fn fail(post: &Post, now: chrono::DateTime<chrono::Utc>, quarantine: bool) -> PostChange {
    let change = Change::Verdict {
        version: post.version,
        verdict: verdict(post, VerdictKind::Fail, &["tone: too pushy"]),
        effect: VerdictEffect::Revise {
            counts: true,
            quarantine,
            error: "rejected: tone: too pushy".into(),
            note: "tone: too pushy".into(),
        },
    };
    PostChange::new(post.id, CRITIC, now, change)
}

/// An edit by [`WRITER`] of the text, the schedule or both, checked for duplicates in
/// `window`.
fn edit(
    post: &Post,
    text: Option<&str>,
    scheduled_at: Option<chrono::DateTime<chrono::Utc>>,
    window: Option<Duration>,
    now: chrono::DateTime<chrono::Utc>,
) -> PostChange {
    let content = text.map(|text| {
        let mut changed = post.content.clone();
        changed.text = text.to_owned();
        let hash = changed.hash();
        (changed, hash)
    });
    let change = Change::Edited {
        version: post.version,
        content,
        scheduled_at,
        fields: "text".into(),
        duplicate_window: window,
    };
    PostChange::new(post.id, WRITER, now, change)
}

fn edit_text(post: &Post, text: &str, now: chrono::DateTime<chrono::Utc>) -> PostChange {
    edit(post, Some(text), None, None, now)
}

/// [`approval`] checked for duplicates in `window`.
fn approval_within(
    post: &Post,
    now: chrono::DateTime<chrono::Utc>,
    window: Option<Duration>,
) -> PostChange {
    let mut change = approval(post, now);
    if let Change::Verdict {
        effect: VerdictEffect::Approve {
            duplicate_window, ..
        },
        ..
    } = &mut change.change
    {
        *duplicate_window = window;
    }
    change
}

/// A verdict is written with its change, read back whole (reasons, hashes, the reviewed
/// content), oldest first, in the round it was given in, and shows in the post's detail
/// and in export pages; the verdicts of a discarded draft stay.
pub async fn verdicts_are_recorded_with_their_change_and_read_back_whole(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "The cats nap.", t0()).await;
    assert_eq!(
        (post.review_round, post.revisions, post.quarantined_at),
        (0, 0, None)
    );
    let pass = Change::Verdict {
        version: post.version,
        verdict: verdict(&post, VerdictKind::Pass, &[]),
        effect: VerdictEffect::AwaitMore {
            note: "pass 1 of 2".into(),
        },
    };
    let post = s
        .change_post(PostChange::new(post.id, "token:a", mins(1), pass))
        .await
        .unwrap();
    let post = s.change_post(fail(&post, mins(2), false)).await.unwrap();
    assert_eq!(post.revisions, 1);
    assert_eq!(post.status, PostStatus::Draft);

    let verdicts = s.verdicts(post.id).await.unwrap();
    assert_eq!(verdicts.len(), 2);
    let (first, second) = (&verdicts[0], &verdicts[1]);
    assert!(first.id < second.id);
    assert_eq!(first.verdict, VerdictKind::Pass);
    assert_eq!(first.actor, "token:a");
    assert!(first.reasons.is_empty());
    assert_eq!(first.at, mins(1));
    assert_eq!(second.verdict, VerdictKind::Fail);
    assert_eq!(second.actor, CRITIC);
    assert_eq!(second.reasons, ["tone: too pushy"]);
    assert_eq!(second.content_hash, post.content_hash);
    assert_eq!(second.rubric_hash, "ab".repeat(32));
    assert_eq!(second.review_round, 0);
    assert_eq!(second.content.as_ref(), Some(&post.content));
    assert_eq!(s.post_detail(post.id).await.unwrap().verdicts, verdicts);
    let page = s
        .export_page(&ExportFilter::default(), None, 10)
        .await
        .unwrap();
    assert_eq!(page[0].verdicts, verdicts);

    s.delete_draft(post.id, post.version, WRITER, mins(3))
        .await
        .unwrap();
    assert_eq!(s.verdicts(post.id).await.unwrap(), verdicts);
}

/// Every change of content, and every withdrawn approval, starts a new review round; a
/// change of schedule or a verdict does not; a verdict records the round as it was.
pub async fn a_content_change_or_a_withdrawn_approval_starts_a_new_review_round(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "Round zero.", t0()).await;
    let post = s
        .change_post(edit(&post, None, Some(mins(30)), None, mins(1)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 0);

    let post = s
        .change_post(edit_text(&post, "Round one.", mins(2)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 1);

    let post = s.change_post(approval(&post, mins(3))).await.unwrap();
    assert_eq!(post.status, PostStatus::Approved);
    assert_eq!(post.review_round, 1);

    // A fail of an approved post returns it to draft: the verdict keeps round one.
    let post = s.change_post(fail(&post, mins(4), false)).await.unwrap();
    assert_eq!(post.status, PostStatus::Draft);
    assert_eq!(post.review_round, 2);
    let rounds: Vec<i64> = s
        .verdicts(post.id)
        .await
        .unwrap()
        .iter()
        .map(|v| v.review_round)
        .collect();
    assert_eq!(rounds, [1, 1]);
}

/// A pass given on a draft at one schedule does not carry over to another (issue 26):
/// moving a draft that holds a pass in its round starts a new round, whatever else the
/// write changes; moving a draft without passes, or moving it back with the text alone,
/// starts none.
pub async fn a_schedule_move_of_a_draft_holding_passes_starts_a_new_review_round(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "New year naps.", mins(60 * 24 * 365)).await;
    // No passes yet: the move is free.
    let post = s
        .change_post(edit(&post, None, Some(mins(60 * 24 * 366)), None, mins(1)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 0);

    let pass = Change::Verdict {
        version: post.version,
        verdict: verdict(&post, VerdictKind::Pass, &[]),
        effect: VerdictEffect::AwaitMore {
            note: "pass 1 of 2".into(),
        },
    };
    let post = s
        .change_post(PostChange::new(post.id, "token:a", mins(2), pass))
        .await
        .unwrap();
    assert_eq!(post.review_round, 0);

    // The same schedule again is no move.
    let post = s
        .change_post(edit(&post, None, Some(post.scheduled_at), None, mins(3)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 0);

    // Moved to now: the pass, given for next year, is in the round before.
    let post = s
        .change_post(edit(&post, None, Some(mins(4)), None, mins(4)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 1);
    assert_eq!(post.scheduled_at, mins(4));
    assert_eq!(post.status, PostStatus::Draft);

    // The new round holds no pass: moving again starts no other.
    let post = s
        .change_post(edit(&post, None, Some(mins(5)), None, mins(5)))
        .await
        .unwrap();
    assert_eq!(post.review_round, 1);

    // A move with a text change starts one round, not two.
    let pass = Change::Verdict {
        version: post.version,
        verdict: verdict(&post, VerdictKind::Pass, &[]),
        effect: VerdictEffect::AwaitMore {
            note: "pass 1 of 2".into(),
        },
    };
    let post = s
        .change_post(PostChange::new(post.id, "token:b", mins(6), pass))
        .await
        .unwrap();
    let post = s
        .change_post(edit(
            &post,
            Some("New year naps, soon."),
            Some(mins(7)),
            None,
            mins(7),
        ))
        .await
        .unwrap();
    assert_eq!(post.review_round, 2);

    // An approved post moved returns to draft in one new round, as before.
    let post = s.change_post(approval(&post, mins(8))).await.unwrap();
    assert_eq!(post.review_round, 2);
    let post = s
        .change_post(edit(&post, None, Some(mins(9)), None, mins(9)))
        .await
        .unwrap();
    assert_eq!((post.status, post.review_round), (PostStatus::Draft, 3));
}

/// The `max_revisions`-th fail quarantines a draft; a quarantined draft is listed by the
/// quarantine filter, is not approved and its content does not change (whoever asks);
/// only a draft is quarantined; a release clears the flag and the count.
pub async fn a_quarantined_draft_is_neither_approved_nor_changed_until_released(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let other = draft(s, "threads-main", "Not quarantined.", t0()).await;
    let post = draft(s, "threads-main", "Pushy words.", t0()).await;
    let post = s.change_post(fail(&post, mins(1), false)).await.unwrap();
    let post = s.change_post(fail(&post, mins(2), true)).await.unwrap();
    assert_eq!(post.revisions, 2);
    assert_eq!(post.quarantined_at, Some(mins(2)));
    assert_eq!(post.status, PostStatus::Draft);

    let quarantined = PostFilter {
        quarantined: Some(true),
        ..PostFilter::default()
    };
    let ids: Vec<_> = s
        .list_posts(&quarantined)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, [post.id]);
    let summaries = s.list_summaries(&quarantined, 10).await.unwrap();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].quarantined_at, Some(mins(2)));
    let plain = PostFilter {
        quarantined: Some(false),
        ..PostFilter::default()
    };
    let ids: Vec<_> = s
        .list_posts(&plain)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, [other.id]);

    let approving = s.change_post(approval(&post, mins(3))).await.unwrap_err();
    assert!(
        matches!(approving, StoreError::Quarantined(id) if id == post.id),
        "{approving:?}"
    );
    let editing = s
        .change_post(edit_text(&post, "Sneaky words.", mins(3)))
        .await
        .unwrap_err();
    assert!(
        matches!(editing, StoreError::Quarantined(id) if id == post.id),
        "{editing:?}"
    );
    let unchanged = s.get_post(post.id).await.unwrap();
    assert_eq!(unchanged.content, post.content);
    assert_eq!(unchanged.status, PostStatus::Draft);
    assert_eq!(unchanged.version, post.version);

    // Only a draft is quarantined: a quarantining fail of an approved post returns it to
    // draft first.
    let approved = approved(s, "threads-main", "Approved words.", t0()).await;
    let flagged = s.change_post(fail(&approved, mins(3), true)).await.unwrap();
    assert_eq!(flagged.status, PostStatus::Draft);
    assert_eq!(flagged.quarantined_at, Some(mins(3)));

    let release = Change::Released {
        version: post.version,
        note: "released".into(),
    };
    let released = s
        .change_post(PostChange::new(post.id, "cli", mins(4), release))
        .await
        .unwrap();
    assert_eq!((released.revisions, released.quarantined_at), (0, None));
    assert_eq!(
        released.error, None,
        "the quarantine's reason ended with it"
    );
    let edited = s
        .change_post(edit_text(&released, "Calm words.", mins(5)))
        .await
        .unwrap();
    let approved = s.change_post(approval(&edited, mins(6))).await.unwrap();
    assert_eq!(approved.status, PostStatus::Approved);
}

/// A draft whose normalised text is that of a post on its channel that is approved, in
/// flight, posted or quarantined, going out within the window of it, is refused naming
/// that post; plain drafts, other channels, other texts, times outside the window and a
/// request without a window are not.
pub async fn a_draft_repeating_a_queued_text_within_the_window_is_refused(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let window = Some(Duration::days(7));
    let create = |channel: &str, text: &str, at, window| {
        let mut req = create_request(new_post(channel, text, at), mins(-60));
        req.duplicate_window = window;
        req
    };
    let queued = approved(s, "threads-main", "Tea at four.", t0()).await;
    let err = s
        .create_post(create("threads-main", " TEA  at\nfour. ", mins(60), window))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Approved } if earlier == queued.id),
        "{err:?}"
    );
    let posted = in_status(s, PostStatus::Posted, "threads-main").await;
    let err = s
        .create_post(create(
            "threads-main",
            &posted.content.text.to_uppercase(),
            t0(),
            window,
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Posted } if earlier == posted.id),
        "{err:?}"
    );

    let plain = draft(s, "threads-main", "Only a draft.", t0()).await;
    for (channel, text, at, window) in [
        ("threads-main", "Only a draft.", t0(), window),
        ("instagram-main", "Tea at four.", t0(), window),
        ("threads-main", "Tea at five.", t0(), window),
        (
            "threads-main",
            "Tea at four.",
            t0() + Duration::days(8),
            window,
        ),
        (
            "threads-main",
            "Tea at four.",
            t0() - Duration::days(8),
            window,
        ),
        ("threads-main", "Tea at four.", t0(), None),
    ] {
        s.create_post(create(channel, text, at, window))
            .await
            .unwrap_or_else(|e| panic!("{channel} {text:?} at {at}: {e}"));
    }

    let quarantined = s.change_post(fail(&plain, mins(1), true)).await.unwrap();
    let err = s
        .create_post(create("threads-main", "only a draft.", t0(), window))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Draft } if earlier == quarantined.id),
        "{err:?}"
    );
}

/// An edit keeps the duplicate key current: the old text no longer matches, the new does.
pub async fn an_edit_moves_the_duplicate_key_with_the_text(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "First words.", t0()).await;
    let post = s
        .change_post(edit_text(&post, "Second words.", mins(1)))
        .await
        .unwrap();
    approve(s, &post, mins(2)).await;
    let mut req = create_request(new_post("threads-main", "First words.", t0()), mins(3));
    req.duplicate_window = Some(Duration::days(7));
    s.create_post(req).await.unwrap();
    let mut req = create_request(new_post("threads-main", "second words.", t0()), mins(3));
    req.duplicate_window = Some(Duration::days(7));
    assert!(matches!(
        s.create_post(req).await,
        Err(StoreError::DuplicateText { earlier, .. }) if earlier == post.id
    ));
}

/// An edit that turns a draft's text into that of a post on its channel that is
/// approved, in flight, posted or quarantined, going out within the window of the
/// draft's schedule, is refused as creating it would be, naming that post, and changes
/// nothing; an edit that leaves the text alone, moves it out of the window with the
/// text, or comes without a window (an operator's override) is not refused.
pub async fn an_edit_into_a_queued_text_within_the_window_is_refused_and_changes_nothing(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let window = Some(Duration::days(7));
    let queued = approved(s, "threads-main", "Tea at four.", t0()).await;
    let plain = draft(s, "threads-main", "Coffee at five.", mins(30)).await;
    let err = s
        .change_post(edit(
            &plain,
            Some(" TEA  at\nfour. "),
            None,
            window,
            mins(1),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Approved } if earlier == queued.id),
        "{err:?}"
    );
    let unchanged = s.get_post(plain.id).await.unwrap();
    assert_eq!(unchanged, plain, "a refused edit changes nothing");

    // Moved out of the window together with the text: allowed.
    let later = Some(t0() + Duration::days(8));
    let moved = s
        .change_post(edit(&plain, Some("tea at four."), later, window, mins(1)))
        .await
        .unwrap();
    // Moved back into the window without touching the text: refused too.
    let err = s
        .change_post(edit(&moved, None, Some(t0()), window, mins(2)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, .. } if earlier == queued.id),
        "{err:?}"
    );
    let back = s
        .change_post(edit(&moved, None, Some(t0()), None, mins(2)))
        .await
        .unwrap();
    // The approved post itself, edited back to a draft with its own text: not a duplicate
    // of itself.
    s.change_post(edit(&queued, Some("TEA at four."), None, window, mins(3)))
        .await
        .unwrap();
    // A quarantined draft counts, and an edit without a window is not checked.
    let other = draft(s, "threads-main", "Milk at six.", t0()).await;
    let quarantined = s.change_post(fail(&other, mins(4), true)).await.unwrap();
    let err = s
        .change_post(edit(&back, Some("milk at six."), None, window, mins(5)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Draft } if earlier == quarantined.id),
        "{err:?}"
    );
    s.change_post(edit_text(&back, "milk at six.", mins(5)))
        .await
        .unwrap();
}

/// A verdict on a post as large as a post may be (its text full of characters JSON
/// escapes) is recorded with its snapshot; the size limits are for values no verdict
/// airlock makes can reach.
pub async fn a_verdict_on_a_post_as_large_as_a_post_may_be_is_recorded(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let text = "\"\n".repeat(airlock_core::limits::MAX_TEXT_CHARS / 2);
    let post = draft(s, "threads-main", &text, t0()).await;
    let post = s.change_post(fail(&post, mins(1), false)).await.unwrap();
    let verdicts = s.verdicts(post.id).await.unwrap();
    assert_eq!(verdicts.len(), 1);
    assert_eq!(verdicts[0].content.as_ref().unwrap().text, text);
}

/// The duplicate check runs inside every write that could let one text out twice, each
/// excluding the post itself: approving a draft (`draft -> approved`, so two plain drafts
/// of one text are not both approved) and moving a draft's schedule into the window of a
/// queued one; nothing of a refused write is recorded (its verdict included). A
/// quarantined draft blocks its text whatever the window; an update without a window
/// (an operator's override) checks nothing.
pub async fn approving_or_rescheduling_into_a_queued_text_is_refused_inside_the_write(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let window = Some(Duration::days(7));
    let first = draft(s, "threads-main", "Tea at four.", t0()).await;
    let second = draft(s, "threads-main", "tea at  FOUR.", mins(10)).await;
    let first = s
        .change_post(approval_within(&first, mins(1), window))
        .await
        .unwrap();
    assert_eq!(first.status, PostStatus::Approved);

    let err = s
        .change_post(approval_within(&second, mins(2), window))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Approved } if earlier == first.id),
        "{err:?}"
    );
    assert_eq!(s.get_post(second.id).await.unwrap(), second);
    assert!(s.verdicts(second.id).await.unwrap().is_empty());

    // Drafted outside the window, then moved into it.
    let later = draft(s, "threads-main", "TEA at four.", t0() + Duration::days(8)).await;
    let err = s
        .change_post(edit(&later, None, Some(mins(5)), window, mins(3)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, .. } if earlier == first.id),
        "{err:?}"
    );
    assert_eq!(s.get_post(later.id).await.unwrap(), later);

    // The override: no window, no check.
    let second = s
        .change_post(approval_within(&second, mins(2), None))
        .await
        .unwrap();
    assert_eq!(second.status, PostStatus::Approved);

    // A quarantined draft blocks its text however far apart the two go out.
    let milk = draft(s, "threads-main", "Milk at six.", t0()).await;
    let milk = s.change_post(fail(&milk, mins(6), true)).await.unwrap();
    let far = draft(s, "threads-main", "milk at six.", t0() + Duration::days(30)).await;
    let err = s
        .change_post(approval_within(&far, mins(7), window))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Draft } if earlier == milk.id),
        "{err:?}"
    );
    let mut req = create_request(
        new_post("threads-main", "Milk at six.", t0() + Duration::days(400)),
        mins(8),
    );
    req.duplicate_window = window;
    let err = s.create_post(req).await.unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateText { earlier, .. } if earlier == milk.id),
        "{err:?}"
    );
}

/// Content changes only into a draft, so rewriting an approved post always shows in its
/// timeline as the approval withdrawn; and an approval names the content the post holds.
/// An approval naming other content is refused, with nothing recorded, its verdict
/// included.
pub async fn content_changes_only_into_a_draft_and_an_approval_names_its_content(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let approved = approved(s, "threads-main", "Approved text.", t0()).await;

    // An approval naming other content than the draft holds is refused.
    let draft = draft(s, "threads-main", "A draft.", t0()).await;
    let mut approval = approval(&draft, mins(2));
    if let Change::Verdict { verdict, .. } = &mut approval.change {
        verdict.content_hash = approved.content_hash.clone();
    }
    let err = s.change_post(approval).await.unwrap_err();
    assert!(matches!(err, StoreError::Refused { .. }), "{err:?}");
    assert_eq!(
        s.get_post(draft.id).await.unwrap(),
        draft,
        "nothing changed"
    );
    assert!(s.verdicts(draft.id).await.unwrap().is_empty());

    // An edit of an approved post withdraws the approval in the same write, and shows it.
    let edited = s
        .change_post(edit_text(&approved, "Rewritten after approval.", mins(3)))
        .await
        .unwrap();
    assert_eq!(edited.status, PostStatus::Draft);
    assert_eq!(edited.approved_hash, None);
    let last = events(s, edited.id).await.pop().unwrap();
    assert_eq!(
        (last.from, last.to),
        (Some(PostStatus::Approved), PostStatus::Draft)
    );
}
