//! What the cases share: fixed times, channel names, posts brought into each state, and
//! the steps of the guarded publish path written the way `airlock-app` writes them.
//!
//! Times are fixed instants in the past of any real clock (March 2026), never `Utc::now()`:
//! a case decides what "now" is for every call. Nothing here asserts anything a case
//! does not ask for; a helper that cannot do its step panics with the store's error.

use chrono::{DateTime, Duration, TimeZone, Utc};
use chrono_tz::Tz;

use airlock_core::quota::{DailyRule, Denial, WindowRule};
use airlock_core::{
    ChannelName, Intent, NewPost, NewVerdict, Post, PostContent, PostEvent, PostId, PostStatus,
    VerdictKind,
};
use airlock_store::{
    Change, CreatePost, IntentRequest, PostChange, PostClaim, PostClaimed, QuotaClaim, Store,
    VerdictEffect,
};

/// The actor that writes drafts.
pub const WRITER: &str = "token:writer";
/// The actor that approves.
pub const CRITIC: &str = "token:critic";
/// The worker that claims (`lease_owner`).
pub const WORKER: &str = "worker-1";
/// The actor recorded for that worker's writes.
pub const DISPATCHER: &str = "dispatcher:worker-1";
/// How long a claim's lease lasts in the cases.
pub const LEASE_MINUTES: i64 = 15;
/// The calendar of daily limits in the cases.
pub const TZ: Tz = chrono_tz::Asia::Tokyo;

/// The cases' reference instant: 2026-03-02 03:00 UTC, which is noon in Tokyo.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 3, 0, 0)
        .single()
        .expect("a valid instant")
}

/// `t0` moved by `n` minutes.
pub fn mins(n: i64) -> DateTime<Utc> {
    t0() + Duration::minutes(n)
}

/// A channel name.
pub fn ch(name: &str) -> ChannelName {
    ChannelName::parse(name).expect("a valid channel name")
}

/// Plain content for a channel.
pub fn content(channel: &str, text: &str) -> PostContent {
    PostContent {
        channel: ch(channel),
        title: None,
        text: text.to_owned(),
        media: Vec::new(),
        more: vec![],
        first_comment: None,
        link: None,
        source: None,
    }
}

/// The insert shape of a non-test post without a slot.
pub fn new_post(channel: &str, text: &str, scheduled_at: DateTime<Utc>) -> NewPost {
    NewPost {
        content: content(channel, text),
        scheduled_at,
        test: false,
        slot: None,
    }
}

/// A creation request by [`WRITER`] at `now`, without an idempotency key.
pub fn create_request(new: NewPost, now: DateTime<Utc>) -> CreatePost {
    CreatePost {
        new,
        actor: WRITER.to_owned(),
        now,
        idempotency: None,
        duplicate_window: None,
        max_live_drafts: None,
    }
}

/// Creates a draft scheduled at `scheduled_at`, created an hour before `t0`.
pub async fn draft(
    store: &dyn Store,
    channel: &str,
    text: &str,
    scheduled_at: DateTime<Utc>,
) -> Post {
    create(store, new_post(channel, text, scheduled_at)).await
}

/// Creates a post from its insert shape, an hour before `t0`.
pub async fn create(store: &dyn Store, new: NewPost) -> Post {
    store
        .create_post(create_request(new, mins(-60)))
        .await
        .expect("create a draft")
        .post
}

/// [`CRITIC`]'s verdict of `kind` on the post's content as it is.
pub fn verdict_on(post: &Post, kind: VerdictKind) -> NewVerdict {
    NewVerdict {
        verdict: kind,
        reasons: Vec::new(),
        content_hash: post.content_hash.clone(),
        rubric_hash: "rubric-1".into(),
        content: post.content.clone(),
    }
}

/// The change [`CRITIC`] makes to approve a draft: a pass that approves its content.
pub fn approval(post: &Post, now: DateTime<Utc>) -> PostChange {
    let change = Change::Verdict {
        version: post.version,
        verdict: verdict_on(post, VerdictKind::Pass),
        effect: VerdictEffect::Approve {
            approved_by: CRITIC.to_owned(),
            note: format!("approved content {}", post.content_hash),
            duplicate_window: None,
        },
    };
    PostChange::new(post.id, CRITIC, now, change)
}

/// Approves a draft.
pub async fn approve(store: &dyn Store, post: &Post, now: DateTime<Utc>) -> Post {
    store
        .change_post(approval(post, now))
        .await
        .expect("approve a draft")
}

/// What doctor says of the quota counts (`quota_hours`, `quota_suspects`) at `now`: the
/// sentences of drift, none when they agree with the rows.
pub async fn quota_drift(store: &dyn Store, now: DateTime<Utc>) -> Vec<String> {
    store
        .check_invariants(now)
        .await
        .expect("check the ledger's invariants")
        .into_iter()
        .filter(|p| p.contains("quota_hours"))
        .collect()
}

/// Creates and approves a post scheduled at `scheduled_at`.
pub async fn approved(
    store: &dyn Store,
    channel: &str,
    text: &str,
    scheduled_at: DateTime<Utc>,
) -> Post {
    let post = draft(store, channel, text, scheduled_at).await;
    approve(store, &post, mins(-59)).await
}

/// A claim by [`WORKER`] at `now` with a [`LEASE_MINUTES`] lease of `post` as read,
/// with quota under [`rules`] when `quota` names `(window, daily)`.
pub fn post_claim(post: &Post, now: DateTime<Utc>, quota: Option<(u32, u32)>) -> PostClaim {
    PostClaim {
        id: post.id,
        version: post.version,
        allow_test: true,
        worker: WORKER.to_owned(),
        actor: DISPATCHER.to_owned(),
        now,
        lease_until: now + Duration::minutes(LEASE_MINUTES),
        quota: quota.map(|(window, daily)| {
            let (window, daily) = rules(window, daily);
            QuotaClaim {
                window,
                daily,
                budget: None,
            }
        }),
        intent: None,
    }
}

/// Claims the most overdue due post among these channels (test posts only on `tests`) at
/// `now`, as the dispatcher does: the due posts as read, each claimed in turn until one
/// is. `None` when nothing is due.
pub async fn claim_due(
    store: &dyn Store,
    channels: &[&str],
    tests: &[&str],
    now: DateTime<Utc>,
) -> Option<Post> {
    let channels: Vec<ChannelName> = channels.iter().map(|c| ch(c)).collect();
    let tests: Vec<ChannelName> = tests.iter().map(|c| ch(c)).collect();
    for post in store
        .due_posts(&channels, &tests, now, 16)
        .await
        .expect("due posts")
    {
        if let PostClaimed::Claimed { post, .. } = store
            .claim_post(&post_claim(&post, now, ROOMY))
            .await
            .expect("claim")
        {
            return Some(*post);
        }
    }
    None
}

/// Limits no case reaches: a claim of a post that counts always reserves, as the
/// dispatcher's does (a hardened ledger refuses one that asks for none).
pub const ROOMY: Option<(u32, u32)> = Some((1000, 1000));

/// Claims this approved post (as read) now under [`ROOMY`] limits, and insists that it
/// worked.
pub async fn claim(store: &dyn Store, post: &Post, now: DateTime<Utc>) -> Post {
    match store.claim_post(&post_claim(post, now, ROOMY)).await {
        Ok(PostClaimed::Claimed { post, .. }) => *post,
        other => panic!("post {} should be claimable: {other:?}", post.id),
    }
}

/// An approved post scheduled a minute before `now`, claimed at `now`.
pub async fn claimed(store: &dyn Store, channel: &str, text: &str, now: DateTime<Utc>) -> Post {
    let post = approved(store, channel, text, now - Duration::minutes(1)).await;
    claim(store, &post, now).await
}

/// An approved post scheduled a minute before `now`, claimed at `now` with a reservation
/// under roomy limits.
pub async fn reserved(store: &dyn Store, channel: &str, text: &str, now: DateTime<Utc>) -> Post {
    let post = approved(store, channel, text, now - Duration::minutes(1)).await;
    match reserve(store, &post, now, 10, 10).await {
        Reserved::Granted(post) => *post,
        Reserved::Denied(denial) => panic!("post {} over quota: {denial:?}", post.id),
    }
}

/// Quota rules: `window_limit` per rolling hour across channels, `daily_limit` per Tokyo day.
pub fn rules(window_limit: u32, daily_limit: u32) -> (WindowRule, DailyRule) {
    (
        WindowRule {
            window: Duration::minutes(60),
            limit: window_limit,
        },
        DailyRule {
            limit: daily_limit,
            tz: TZ,
        },
    )
}

/// What claiming with quota did.
#[derive(Debug)]
pub enum Reserved {
    /// Claimed, with its reservation.
    Granted(Box<Post>),
    /// Over quota: nothing written.
    Denied(Denial),
}

/// Claims an approved post (as read) at `now` with a reservation under [`rules`].
pub async fn reserve(
    store: &dyn Store,
    post: &Post,
    now: DateTime<Utc>,
    window_limit: u32,
    daily_limit: u32,
) -> Reserved {
    let claim = post_claim(post, now, Some((window_limit, daily_limit)));
    reserve_with(store, &claim).await
}

/// Claims with the quota of `claim`, insisting the post is claimable.
pub async fn reserve_with(store: &dyn Store, claim: &PostClaim) -> Reserved {
    match store.claim_post(claim).await {
        Ok(PostClaimed::Claimed { post, .. }) => Reserved::Granted(post),
        Ok(PostClaimed::OverQuota(denial)) => Reserved::Denied(denial),
        other => panic!("post {} should be claimable: {other:?}", claim.id),
    }
}

/// The intent request of a claimed post at `now`.
pub fn intent_request(post: &Post, now: DateTime<Utc>) -> IntentRequest {
    IntentRequest {
        part: 1,
        post_id: post.id,
        generation: post.generation,
        idempotency_key: format!("airlock-{}-{}", post.id, post.generation),
        platform_ref: None,
        now,
        lease_margin: chrono::Duration::zero(),
    }
}

/// Records the intent of a claimed post at `now`.
pub async fn intent(store: &dyn Store, post: &Post, now: DateTime<Utc>) -> Intent {
    store
        .record_intent(&intent_request(post, now))
        .await
        .expect("record the intent")
}

/// The outcome [`DISPATCHER`] writes to move its claimed post to `to` (posted, failed,
/// needs review, or back to approved as not sent), fenced by the post's generation,
/// without pausing anything.
pub fn outcome(post: &Post, to: PostStatus, now: DateTime<Utc>) -> PostChange {
    let generation = post.generation;
    let reason = format!("outcome {to}");
    let change = match to {
        PostStatus::Posted => Change::Published {
            part: 1,
            generation,
            posted_at: now,
            platform_post_id: Some(format!("platform-{}", post.id)),
            permalink: None,
            sent_by: None,
            note: reason,
            flag: None,
            pause: None,
        },
        PostStatus::Failed => Change::Failed {
            generation,
            reason,
            counts_attempt: false,
            settles_intent: true,
            pause: None,
        },
        PostStatus::NeedsReview => Change::Unknown {
            generation,
            reason,
            pause: None,
        },
        PostStatus::Approved => Change::NotSent {
            generation,
            note: reason.clone(),
            reason,
            not_before: now,
            counts_attempt: false,
            counts_wait: false,
            settles_intent: true,
        },
        other => panic!("no outcome moves a claimed post to {other}"),
    };
    PostChange::new(post.id, DISPATCHER, now, change)
}

/// The reaper's change for a claimed post whose lease ended after its intent.
pub fn reaped_sent(post: &Post, now: DateTime<Utc>) -> PostChange {
    let change = Change::ReapedSent {
        generation: post.generation,
        reason: "the lease expired after the request was sent".into(),
        pause: None,
    };
    PostChange::new(post.id, "reaper", now, change)
}

/// The reaper's change for a claimed post whose lease ended before any intent: back to
/// the queue at `now`.
pub fn reaped_unsent(post: &Post, now: DateTime<Utc>) -> PostChange {
    let change = Change::ReapedUnsent {
        generation: post.generation,
        reason: "the lease expired before any request was sent".into(),
        note: "not sent (attempt 1)".into(),
        gives_up: false,
        not_before: Some(now),
    };
    PostChange::new(post.id, "reaper", now, change)
}

/// Defers an approved post (as read) until `until`, as an over-quota claim does.
pub async fn defer(
    store: &dyn Store,
    post: &Post,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Post {
    let change = Change::Deferred {
        version: post.version,
        until,
        note: format!("deferred until {until}"),
    };
    store
        .change_post(PostChange::new(post.id, "cli", now, change))
        .await
        .expect("defer the post")
}

/// `change` with a pause set with it (a change that may pause a channel).
pub fn pausing(mut change: PostChange, pause: airlock_store::PauseSpec) -> PostChange {
    match &mut change.change {
        Change::Published { pause: p, .. }
        | Change::Failed { pause: p, .. }
        | Change::Unknown { pause: p, .. }
        | Change::ReapedSent { pause: p, .. }
        | Change::Held { pause: p, .. } => *p = Some(pause),
        other => panic!("a {} change sets no pause", other.name()),
    }
    change
}

/// The whole guarded path for an approved post (as read): claimed with a reservation
/// (which must be granted) at `now`, its intent at `now`, then `posted` with the
/// reservation committed, a minute later.
pub async fn publish(
    store: &dyn Store,
    post: &Post,
    now: DateTime<Utc>,
    window_limit: u32,
    daily_limit: u32,
) -> Post {
    let post = match reserve(store, post, now, window_limit, daily_limit).await {
        Reserved::Granted(post) => *post,
        Reserved::Denied(denial) => panic!("post {} over quota: {denial:?}", post.id),
    };
    intent(store, &post, now).await;
    let change = outcome(&post, PostStatus::Posted, now + Duration::minutes(1));
    store.change_post(change).await.expect("write the outcome")
}

/// A post in the given state on `channel`, the way the lifecycle gets it there.
pub async fn in_status(store: &dyn Store, status: PostStatus, channel: &str) -> Post {
    let now = t0();
    match status {
        PostStatus::Draft => draft(store, channel, "a draft", now).await,
        PostStatus::Approved => approved(store, channel, "approved", now).await,
        PostStatus::Posting => claimed(store, channel, "posting", now).await,
        PostStatus::Posted | PostStatus::Failed | PostStatus::NeedsReview => {
            // Every outcome answers a request recorded by its intent first.
            let post = claimed(store, channel, status.as_str(), now).await;
            intent(store, &post, now).await;
            store
                .change_post(outcome(&post, status, mins(1)))
                .await
                .expect("write an outcome")
        }
    }
}

/// A post's events, oldest first.
pub async fn events(store: &dyn Store, id: PostId) -> Vec<PostEvent> {
    store.post_detail(id).await.expect("post detail").events
}
