//! Cases for posts of several parts (docs/parts.md): the parts after the first and the
//! first comment are stored and read back whole, an edit changes them with the hash, and
//! the guarded path sends each part under a generation of its own with an intent of its
//! own (`Change::PartPublished`, `Change::PartSettled`), the post's id and permalink being
//! part 1's.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use airlock_core::{Media, Part, Post, PostContent, PostStatus};
use airlock_store::{Change, IntentClaim, PostChange, PostClaim, PostClaimed, Store, StoreError};

use crate::fixture::*;

/// Content of three parts (the later two with media, one with every fact filled) and a
/// first comment.
fn thread(channel: &str, text: &str) -> PostContent {
    let mut media = Media::new(
        "https://inn.example/2.jpg".into(),
        Some("The inn at dusk".into()),
    );
    media.sha256 = Some("ab".repeat(32));
    media.content_type = Some("image/jpeg".into());
    media.bytes = Some(123_456);
    media.width = Some(1200);
    media.height = Some(800);
    PostContent {
        more: vec![
            Part {
                text: format!("{text}, part 2"),
                media: vec![media],
            },
            Part {
                text: format!("{text}, part 3"),
                media: vec![Media::new("https://inn.example/3.mp4".into(), None)],
            },
        ],
        first_comment: Some("Links in the comments: https://inn.example/".into()),
        ..content(channel, text)
    }
}

/// A draft of [`thread`] scheduled at `scheduled_at`.
async fn thread_draft(store: &dyn Store, text: &str, scheduled_at: DateTime<Utc>) -> Post {
    let mut new = new_post("threads-main", text, scheduled_at);
    new.content = thread("threads-main", text);
    create(store, new).await
}

/// A [`thread`] approved, claimed at `now` with a reservation, and its part 1's intent
/// recorded at `now`.
async fn sending_part_one(store: &dyn Store, text: &str, now: DateTime<Utc>) -> Post {
    let post = thread_draft(store, text, now - Duration::minutes(1)).await;
    let post = approve(store, &post, mins(-59)).await;
    let Reserved::Granted(post) = reserve(store, &post, now, 10, 10).await else {
        panic!("post {} should be granted a reservation", post.id)
    };
    intent(store, &post, now).await;
    *post
}

/// The worker's `PartPublished` for `part` of its claimed post, the next lease until
/// `lease_until`.
fn part_published(
    post: &Post,
    part: u32,
    permalink: Option<&str>,
    lease_until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> PostChange {
    let change = Change::PartPublished {
        generation: post.generation,
        part,
        platform_post_id: format!("p-{part}"),
        permalink: permalink.map(str::to_owned),
        sent_by: None,
        lease_until,
        note: format!("part {part} of 3 published"),
    };
    PostChange::new(post.id, DISPATCHER, now, change)
}

/// The intent request for `part` of a claimed post (as read) at `now`.
async fn part_intent(store: &dyn Store, post: &Post, part: u32, now: DateTime<Utc>) {
    let mut req = intent_request(post, now);
    req.part = part;
    req.idempotency_key = format!("airlock-{}-{part}", post.id);
    let recorded = store.record_intent(&req).await.expect("record the intent");
    assert_eq!(recorded.part, part);
    assert_eq!(recorded.generation, post.generation);
}

/// A post of several parts with a first comment (and media facts) reads back as it was
/// created, by its hash too; a single post keeps no later parts.
pub async fn a_post_of_several_parts_reads_back_as_created(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let mut new = new_post("threads-main", "A thread", mins(30));
    new.content = thread("threads-main", "A thread");
    let created = s
        .create_post(create_request(new.clone(), t0()))
        .await
        .unwrap();
    assert!(!created.existing);
    let post = created.post;
    assert_eq!(post.content, new.content);
    assert_eq!(post.content_hash, new.content.hash());
    assert_eq!(s.get_post(post.id).await.unwrap(), post);
    assert_eq!(post.content.parts().len(), 3);

    let single = draft(s, "threads-main", "One part", mins(30)).await;
    let single = s.get_post(single.id).await.unwrap();
    assert!(single.content.more.is_empty());
    assert_eq!(single.content.first_comment, None);
}

/// An edit of the later parts and the first comment changes them and the content hash;
/// an edit back to a single post clears them.
pub async fn an_edit_of_the_parts_changes_them_and_the_hash(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = thread_draft(s, "Edited thread", mins(30)).await;
    let mut changed = post.content.clone();
    changed.more[0].text = "A new part 2".into();
    changed.more.pop();
    changed.first_comment = Some("Another comment".into());
    let hash = changed.hash();
    assert_ne!(hash, post.content_hash);
    let edit = Change::Edited {
        version: post.version,
        content: Some((changed.clone(), hash.clone())),
        scheduled_at: None,
        fields: "parts".into(),
        duplicate_window: None,
    };
    let edited = s
        .change_post(PostChange::new(post.id, WRITER, mins(1), edit))
        .await
        .unwrap();
    assert_eq!(edited.content, changed);
    assert_eq!(edited.content_hash, hash);
    assert_eq!(s.get_post(post.id).await.unwrap(), edited);

    let single = content("threads-main", "Edited thread");
    let edit = Change::Edited {
        version: edited.version,
        content: Some((single.clone(), single.hash())),
        scheduled_at: None,
        fields: "parts".into(),
        duplicate_window: None,
    };
    let edited = s
        .change_post(PostChange::new(post.id, WRITER, mins(2), edit))
        .await
        .unwrap();
    assert_eq!(edited.content, single);
    assert_eq!(edited.content_hash, single.hash());
    assert_eq!(s.get_post(post.id).await.unwrap(), edited);
}

/// A part that is out keeps the claim for the next: the post stays `posting` under the
/// next generation with the lease moved, the part's intent succeeds with its ids, the
/// reservation is committed once (it counts from the first part), and the post's id and
/// permalink are part 1's; each later part has an intent of its own, and publishing the
/// last part leaves the post's id as part 1's.
pub async fn a_published_part_keeps_the_claim_for_the_next_part(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let sending = sending_part_one(s, "Three parts", t0()).await;
    let g = sending.generation;
    let lease_owner = sending.lease_owner.clone();

    let next = s
        .change_post(part_published(
            &sending,
            1,
            Some("https://threads.example/p-1"),
            mins(30),
            mins(2),
        ))
        .await
        .unwrap();
    assert_eq!(next.status, PostStatus::Posting);
    assert_eq!(next.generation, g + 1);
    assert_eq!(next.lease_expires_at, Some(mins(30)));
    assert_eq!(next.lease_owner, lease_owner);
    assert_eq!(next.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        next.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    assert_eq!(next.posted_at, None);
    let detail = s.post_detail(sending.id).await.unwrap();
    assert_eq!(detail.post, next);
    assert_eq!(detail.intents.len(), 1);
    let first = &detail.intents[0];
    assert_eq!((first.generation, first.part), (g, 1));
    assert_eq!(first.phase, "succeeded");
    assert_eq!(first.settled_at, Some(mins(2)));
    assert_eq!(first.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        first.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    assert_eq!(detail.reservations.len(), 1);
    assert_eq!(detail.reservations[0].state, "committed");
    assert_eq!(detail.reservations[0].settled_at, Some(mins(2)));
    let event = detail.events.last().unwrap();
    assert_eq!(event.kind, "part_published");
    assert_eq!(event.note.as_deref(), Some("part 1 of 3 published"));
    assert_eq!(event.to, PostStatus::Posting);
    assert_eq!(event.actor, DISPATCHER);
    assert_eq!(
        detail.events.iter().filter(|e| e.kind == "status").count(),
        3,
        "created, approved, claimed, and no status event for the part: {:?}",
        detail.events
    );

    // Part 2: its own intent under the new generation, out without a permalink.
    part_intent(s, &next, 2, mins(3)).await;
    let next = s
        .change_post(part_published(&next, 2, None, mins(40), mins(4)))
        .await
        .unwrap();
    assert_eq!(next.status, PostStatus::Posting);
    assert_eq!(next.generation, g + 2);
    assert_eq!(next.lease_expires_at, Some(mins(40)));
    assert_eq!(next.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        next.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    let detail = s.post_detail(sending.id).await.unwrap();
    assert_eq!(detail.intents.len(), 2);
    let second = &detail.intents[1];
    assert_eq!((second.generation, second.part), (g + 1, 2));
    assert_eq!(second.phase, "succeeded");
    assert_eq!(second.platform_post_id.as_deref(), Some("p-2"));
    assert_eq!(second.permalink, None);
    assert_eq!(detail.reservations.len(), 1, "{:?}", detail.reservations);
    assert_eq!(detail.reservations[0].state, "committed");
    assert_eq!(detail.reservations[0].settled_at, Some(mins(2)));

    // Part 3, the last: published; the post's id stays part 1's.
    part_intent(s, &next, 3, mins(5)).await;
    let change = Change::Published {
        part: 3,
        generation: next.generation,
        posted_at: mins(6),
        platform_post_id: Some("p-3".into()),
        permalink: Some("https://threads.example/p-3".into()),
        sent_by: None,
        note: "published".into(),
        flag: None,
        pause: None,
    };
    let posted = s
        .change_post(PostChange::new(next.id, DISPATCHER, mins(6), change))
        .await
        .unwrap();
    assert_eq!(posted.status, PostStatus::Posted);
    assert_eq!(posted.posted_at, Some(mins(6)));
    assert_eq!(posted.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        posted.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    assert_eq!(posted.lease_expires_at, None);
    let detail = s.post_detail(sending.id).await.unwrap();
    let third = &detail.intents[2];
    assert_eq!((third.generation, third.part), (g + 2, 3));
    assert_eq!(third.phase, "succeeded");
    assert_eq!(third.platform_post_id.as_deref(), Some("p-3"));
    assert_eq!(
        third.permalink.as_deref(),
        Some("https://threads.example/p-3")
    );
    assert_eq!(detail.reservations.len(), 1, "{:?}", detail.reservations);
    assert_eq!(detail.reservations[0].state, "committed");
}

/// A part's outcome from a generation the post has moved past (the part was already
/// written) is fenced like any stale outcome: nothing of it applies, and the evidence is
/// recorded.
pub async fn a_stale_generations_part_published_is_fenced(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let sending = sending_part_one(s, "Fenced part", t0()).await;
    let next = s
        .change_post(part_published(&sending, 1, None, mins(30), mins(2)))
        .await
        .unwrap();
    let before = s.post_detail(sending.id).await.unwrap();
    let mut late = part_published(
        &sending,
        1,
        Some("https://elsewhere.example/"),
        mins(50),
        mins(3),
    );
    if let Change::PartPublished {
        platform_post_id, ..
    } = &mut late.change
    {
        *platform_post_id = "p-other".into();
    }
    match s.change_post(late).await {
        Err(StoreError::Fenced { id, generation }) => {
            assert_eq!(id, sending.id);
            assert_eq!(generation, sending.generation);
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    let after = s.post_detail(sending.id).await.unwrap();
    let mut expected = next.clone();
    expected.version += 1;
    assert_eq!(after.post, expected);
    assert_eq!(after.intents, before.intents);
    assert_eq!(after.reservations, before.reservations);
    assert_eq!(after.events.len(), before.events.len() + 1);
    let evidence = after.events.last().unwrap();
    assert_eq!(evidence.kind, "stale_outcome");
    assert_eq!(evidence.to, PostStatus::Posting);
}

/// A part whose outcome was unknown and is then known to be out, when it is not the last:
/// `needs_review -> approved`, its intent succeeded with its ids, the reservation
/// committed, the error and the wait cleared, the post's id and permalink set only by
/// part 1; the next claim records the next part's intent. Settling the last part
/// published leaves the post's id as part 1's.
pub async fn a_settled_part_resumes_the_post_at_the_next_part(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let sending = sending_part_one(s, "Settled parts", t0()).await;
    let unknown = s
        .change_post(outcome(&sending, PostStatus::NeedsReview, mins(2)))
        .await
        .unwrap();
    assert_eq!(unknown.status, PostStatus::NeedsReview);
    assert!(unknown.error.is_some());
    let settle = |post: &Post, part: u32, permalink: Option<&str>, now| {
        let change = Change::PartSettled {
            version: post.version,
            part,
            platform_post_id: format!("p-{part}"),
            permalink: permalink.map(str::to_owned),
            note: format!("part {part} found on the platform"),
        };
        PostChange::new(post.id, "cli", now, change)
    };
    let settled = s
        .change_post(settle(
            &unknown,
            1,
            Some("https://threads.example/p-1"),
            mins(3),
        ))
        .await
        .unwrap();
    assert_eq!(settled.status, PostStatus::Approved);
    assert_eq!(settled.error, None);
    assert_eq!(settled.not_before, None);
    assert_eq!(settled.lease_owner, None);
    assert_eq!(settled.posted_at, None);
    assert_eq!(settled.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        settled.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    let detail = s.post_detail(sending.id).await.unwrap();
    assert_eq!(detail.intents[0].phase, "succeeded");
    assert_eq!(detail.intents[0].platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(detail.reservations.len(), 1);
    assert_eq!(detail.reservations[0].state, "committed");
    assert_eq!(detail.reservations[0].settled_at, Some(mins(3)));
    let event = detail.events.last().unwrap();
    assert_eq!(
        (event.kind.as_str(), event.from, event.to),
        (
            "status",
            Some(PostStatus::NeedsReview),
            PostStatus::Approved
        )
    );
    assert_eq!(event.note.as_deref(), Some("part 1 found on the platform"));

    // The next pass claims it for part 2, whose intent comes with the claim.
    let part_two = PostClaim {
        intent: Some(IntentClaim {
            idempotency_key: format!("airlock-{}-2", settled.id),
            part: 2,
            lease_margin: Duration::seconds(30),
        }),
        ..post_claim(&settled, mins(4), None)
    };
    let PostClaimed::Claimed {
        post: claimed,
        intent,
    } = s.claim_post(&part_two).await.unwrap()
    else {
        panic!("post {} should be claimed for part 2", settled.id)
    };
    let intent = intent.expect("the intent of part 2");
    assert_eq!(intent.part, 2);
    assert_eq!(intent.generation, claimed.generation);
    assert_eq!(intent.platform_post_id, None);
    let detail = s.post_detail(sending.id).await.unwrap();
    assert_eq!(detail.intents.len(), 2);
    assert_eq!(detail.intents[1], intent);

    // Part 2 is unknown too, then settled (not the last): the post's id stays part 1's.
    let unknown = s
        .change_post(outcome(&claimed, PostStatus::NeedsReview, mins(5)))
        .await
        .unwrap();
    let settled = s
        .change_post(settle(&unknown, 2, None, mins(6)))
        .await
        .unwrap();
    assert_eq!(settled.status, PostStatus::Approved);
    assert_eq!(settled.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        settled.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    let detail = s.post_detail(sending.id).await.unwrap();
    assert_eq!(detail.intents[1].phase, "succeeded");
    assert_eq!(detail.intents[1].platform_post_id.as_deref(), Some("p-2"));
    assert_eq!(detail.intents[1].permalink, None);

    // Part 3, the last, unknown and then settled published.
    // The next part's claim reserves nothing: the post counts from its first part.
    let Ok(PostClaimed::Claimed { post: claimed, .. }) =
        s.claim_post(&post_claim(&settled, mins(7), None)).await
    else {
        panic!("post {} should be claimed for its last part", settled.id)
    };
    part_intent(s, &claimed, 3, mins(7)).await;
    let unknown = s
        .change_post(outcome(&claimed, PostStatus::NeedsReview, mins(8)))
        .await
        .unwrap();
    let change = Change::SettledPublished {
        part: 3,
        version: unknown.version,
        posted_at: mins(8),
        platform_post_id: Some("p-3".into()),
        permalink: Some("https://threads.example/p-3".into()),
        note: "found on the platform".into(),
    };
    let posted = s
        .change_post(PostChange::new(unknown.id, "cli", mins(9), change))
        .await
        .unwrap();
    assert_eq!(posted.status, PostStatus::Posted);
    assert_eq!(posted.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(
        posted.permalink.as_deref(),
        Some("https://threads.example/p-1")
    );
    let detail = s.post_detail(sending.id).await.unwrap();
    let last = detail.intents.last().unwrap();
    assert_eq!(last.part, 3);
    assert_eq!(last.phase, "succeeded");
    assert_eq!(last.platform_post_id.as_deref(), Some("p-3"));
    assert_eq!(
        last.permalink.as_deref(),
        Some("https://threads.example/p-3")
    );
    assert_eq!(detail.reservations.len(), 1, "{:?}", detail.reservations);
    assert_eq!(detail.reservations[0].state, "committed");
}
