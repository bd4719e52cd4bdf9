//! Cases for drafts and reading: creation and its event, idempotent creation, slots,
//! listing, discarding, notes, and the ledger-wide event feed.
//!
//! Status changes and their events are in [`crate::lifecycle`]; nothing here claims.

use std::sync::Arc;

use chrono::Duration;

use airlock_core::{PostContent, PostId, PostStatus, Source};
use airlock_store::{
    Change, CreateKey, CreatePost, EventNote, NewNotification, PostChange, PostFilter, Store,
    StoreError,
};

use crate::fixture::*;

fn key(scope: &str, key: &str, body: &str) -> CreateKey {
    CreateKey {
        scope: scope.to_owned(),
        key: key.to_owned(),
        request_hash: format!("{body:0>64}"),
        ttl: Duration::hours(24),
    }
}

/// A new post is a draft with version 1 and generation 0, readable by id, and its
/// detail holds exactly one event: the creation, by the creating actor, at its time.
pub async fn create_post_stores_a_draft_with_its_creation_event(store: Arc<dyn Store>) {
    let mut new = new_post("threads-main", "Hello from the inn", mins(30));
    new.content.title = Some("A title".into());
    new.content.link = Some("https://inn.example/a/".into());
    new.content.media = vec![airlock_core::Media::new(
        "https://inn.example/a.jpg".into(),
        Some("A cat asleep".into()),
    )];
    let created = store
        .create_post(create_request(new.clone(), t0()))
        .await
        .unwrap();
    assert!(!created.existing);
    let post = created.post;
    assert_eq!(post.status, PostStatus::Draft);
    assert_eq!(post.content, new.content);
    assert_eq!(post.content_hash, new.content.hash());
    assert_eq!(post.scheduled_at, mins(30));
    assert_eq!(post.created_by, WRITER);
    assert_eq!(post.edited_by, WRITER);
    assert_eq!(post.created_at, t0());
    assert_eq!(post.updated_at, t0());
    assert_eq!(post.generation, 0);
    assert_eq!(post.attempts, 0);
    assert_eq!(post.version, 1);
    assert_eq!(post.approved_hash, None);
    assert_eq!(post.posted_at, None);
    assert!(!post.test);

    assert_eq!(store.get_post(post.id).await.unwrap(), post);
    let detail = store.post_detail(post.id).await.unwrap();
    assert_eq!(detail.post, post);
    assert!(detail.intents.is_empty());
    assert!(detail.reservations.is_empty());
    assert_eq!(detail.events.len(), 1, "{:?}", detail.events);
    let event = &detail.events[0];
    assert_eq!(event.post_id, post.id);
    assert_eq!(event.from, None);
    assert_eq!(event.to, PostStatus::Draft);
    assert_eq!(event.actor, WRITER);
    assert_eq!(event.at, t0());
}

/// A test post and a post from a source file keep those fields.
pub async fn create_post_keeps_test_flag_slot_and_source(store: Arc<dyn Store>) {
    let mut new = new_post("sandbox", "A drill", t0());
    new.test = true;
    new.slot = Some("2026-03-02T08:00+09:00".into());
    new.content.source = Some(Source {
        path: "posts/cats.md".into(),
        sha256: "ab".repeat(32),
        updated: Some("2026-02-01".into()),
    });
    let post = create(store.as_ref(), new.clone()).await;
    assert!(post.test);
    assert_eq!(post.slot, new.slot);
    assert_eq!(post.content.source, new.content.source);
    assert_eq!(store.get_post(post.id).await.unwrap(), post);
}

/// The same idempotency key with the same body returns the first post and creates nothing.
pub async fn create_post_with_the_same_key_and_body_returns_the_first_post(store: Arc<dyn Store>) {
    let mut req = create_request(new_post("threads-main", "Once", t0()), t0());
    req.idempotency = Some(key("token:agent", "k-1", "a"));
    let first = store.create_post(req.clone()).await.unwrap();
    assert!(!first.existing);
    req.now = mins(5);
    let again = store.create_post(req).await.unwrap();
    assert!(again.existing);
    assert_eq!(again.post, first.post);
    let all = store.list_posts(&PostFilter::default()).await.unwrap();
    assert_eq!(all.len(), 1);
}

/// The same key with a different body is refused; the same key in another scope is a
/// different key.
pub async fn create_post_with_the_same_key_and_another_body_is_refused(store: Arc<dyn Store>) {
    let mut req = create_request(new_post("threads-main", "Once", t0()), t0());
    req.idempotency = Some(key("token:agent", "k-1", "a"));
    store.create_post(req.clone()).await.unwrap();

    let mut other = create_request(new_post("threads-main", "Twice", t0()), mins(1));
    other.idempotency = Some(key("token:agent", "k-1", "b"));
    match store.create_post(other.clone()).await {
        Err(StoreError::IdempotencyMismatch(k)) => assert_eq!(k, "k-1"),
        res => panic!("expected IdempotencyMismatch, got {res:?}"),
    }
    assert_eq!(
        store
            .list_posts(&PostFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );

    other.idempotency = Some(key("token:other-agent", "k-1", "b"));
    let created = store.create_post(other).await.unwrap();
    assert!(!created.existing);
}

/// A key can be asked about before a create: the post it made, a refusal for another
/// request, nothing for an unknown key or one past its time to live. Asking writes
/// nothing.
pub async fn an_idempotency_key_is_answered_before_a_create(store: Arc<dyn Store>) {
    let mut req = create_request(new_post("threads-main", "Once", t0()), t0());
    let used = key("token:agent", "k-1", "a");
    assert!(store.created_with_key(&used, t0()).await.unwrap().is_none());
    req.idempotency = Some(used.clone());
    let first = store.create_post(req).await.unwrap();

    let found = store.created_with_key(&used, mins(10)).await.unwrap();
    let found = found.expect("the key's post");
    assert!(found.existing);
    assert_eq!(found.post, first.post);
    match store
        .created_with_key(&key("token:agent", "k-1", "b"), mins(10))
        .await
    {
        Err(StoreError::IdempotencyMismatch(k)) => assert_eq!(k, "k-1"),
        res => panic!("expected IdempotencyMismatch, got {res:?}"),
    }
    let elsewhere = key("token:other-agent", "k-1", "a");
    assert!(
        store
            .created_with_key(&elsewhere, mins(10))
            .await
            .unwrap()
            .is_none()
    );
    let later = t0() + used.ttl + Duration::minutes(1);
    assert!(
        store
            .created_with_key(&used, later)
            .await
            .unwrap()
            .is_none()
    );
}

/// A key older than its time to live is forgotten: the same key makes a new post.
pub async fn idempotency_keys_are_forgotten_after_their_ttl(store: Arc<dyn Store>) {
    let mut req = create_request(new_post("threads-main", "Once", t0()), t0());
    req.idempotency = Some(key("token:agent", "k-1", "a"));
    let first = store.create_post(req.clone()).await.unwrap();

    req.now = t0() + Duration::hours(23);
    assert!(store.create_post(req.clone()).await.unwrap().existing);

    req.now = t0() + Duration::hours(25);
    req.new.content.text = "A new day".into();
    req.idempotency = Some(key("token:agent", "k-1", "c"));
    let later = store.create_post(req).await.unwrap();
    assert!(!later.existing);
    assert_ne!(later.post.id, first.post.id);
}

/// A slot is filled once per channel: creating for a filled slot returns its post.
pub async fn a_filled_slot_returns_its_post_instead_of_a_second_one(store: Arc<dyn Store>) {
    let slot = Some("2026-03-02T08:00+09:00".to_owned());
    let mut new = new_post("threads-main", "Morning", t0());
    new.slot = slot.clone();
    let first = store
        .create_post(create_request(new.clone(), t0()))
        .await
        .unwrap();
    assert!(!first.existing);

    new.content.text = "Another morning".into();
    let again = store
        .create_post(create_request(new.clone(), mins(1)))
        .await
        .unwrap();
    assert!(again.existing);
    assert_eq!(again.post.id, first.post.id);
    assert_eq!(again.post.content.text, "Morning");

    new.content.channel = ch("instagram-main");
    let elsewhere = store
        .create_post(create_request(new, mins(2)))
        .await
        .unwrap();
    assert!(!elsewhere.existing);
    assert_ne!(elsewhere.post.id, first.post.id);

    let filled = PostFilter {
        channel: Some(ch("threads-main")),
        slot: slot.clone(),
        ..PostFilter::default()
    };
    let found = store.list_posts(&filled).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, first.post.id);
    let empty = PostFilter {
        slot: Some("2026-03-02T11:30+09:00".into()),
        ..PostFilter::default()
    };
    assert!(store.list_posts(&empty).await.unwrap().is_empty());
}

/// Reading, updating, noting or discarding a post that does not exist is `NotFound`.
pub async fn a_missing_post_is_not_found(store: Arc<dyn Store>) {
    let missing = PostId(4242);
    assert!(
        matches!(store.get_post(missing).await, Err(StoreError::NotFound(id)) if id == missing)
    );
    assert!(matches!(
        store.post_detail(missing).await,
        Err(StoreError::NotFound(_))
    ));
    let requeue = PostChange::new(missing, CRITIC, t0(), Change::Requeued { version: 1 });
    assert!(matches!(
        store.change_post(requeue).await,
        Err(StoreError::NotFound(_))
    ));
    let note = EventNote {
        kind: "note".into(),
        note: Some("hello".into()),
    };
    assert!(matches!(
        store
            .add_event(missing, note, "cli", t0(), Vec::new())
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete_draft(missing, 1, "cli", t0()).await,
        Err(StoreError::NotFound(_))
    ));
}

/// Listing filters by status and channel, newest first, pages with `before` and `limit`.
pub async fn list_posts_filters_and_pages_newest_first(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let a1 = draft(s, "alpha", "a1", t0()).await;
    let b1 = approved(s, "beta", "b1", t0()).await;
    let a2 = approved(s, "alpha", "a2", t0()).await;
    let b2 = draft(s, "beta", "b2", t0()).await;
    let a3 = draft(s, "alpha", "a3", t0()).await;
    let ids = |posts: Vec<airlock_core::Post>| posts.iter().map(|p| p.id).collect::<Vec<_>>();

    let all = store.list_posts(&PostFilter::default()).await.unwrap();
    assert_eq!(ids(all), vec![a3.id, b2.id, a2.id, b1.id, a1.id]);

    let drafts = PostFilter {
        status: Some(PostStatus::Draft),
        ..PostFilter::default()
    };
    assert_eq!(
        ids(store.list_posts(&drafts).await.unwrap()),
        vec![a3.id, b2.id, a1.id]
    );
    let alpha = PostFilter {
        channel: Some(ch("alpha")),
        ..PostFilter::default()
    };
    assert_eq!(
        ids(store.list_posts(&alpha).await.unwrap()),
        vec![a3.id, a2.id, a1.id]
    );
    let alpha_approved = PostFilter {
        status: Some(PostStatus::Approved),
        channel: Some(ch("alpha")),
        ..PostFilter::default()
    };
    assert_eq!(
        ids(store.list_posts(&alpha_approved).await.unwrap()),
        vec![a2.id]
    );

    let page1 = PostFilter {
        limit: Some(2),
        ..PostFilter::default()
    };
    let first = store.list_posts(&page1).await.unwrap();
    assert_eq!(ids(first.clone()), vec![a3.id, b2.id]);
    let page2 = PostFilter {
        limit: Some(2),
        before: Some(first[1].id),
        ..PostFilter::default()
    };
    assert_eq!(
        ids(store.list_posts(&page2).await.unwrap()),
        vec![a2.id, b1.id]
    );
    let none = PostFilter {
        channel: Some(ch("gamma")),
        ..PostFilter::default()
    };
    assert!(store.list_posts(&none).await.unwrap().is_empty());

    // Only one actor's posts, paged the same way (and in lists of excerpts).
    let other = store
        .create_post(CreatePost {
            actor: "token:other".into(),
            ..create_request(new_post("alpha", "by another", t0()), mins(-60))
        })
        .await
        .unwrap()
        .post;
    let by = |actor: &str, before: Option<airlock_core::PostId>| PostFilter {
        created_by: Some(actor.into()),
        before,
        limit: Some(2),
        ..PostFilter::default()
    };
    assert_eq!(
        ids(store.list_posts(&by(WRITER, None)).await.unwrap()),
        vec![a3.id, b2.id]
    );
    assert_eq!(
        ids(store
            .list_excerpts(&by(WRITER, Some(b2.id)), 10)
            .await
            .unwrap()),
        vec![a2.id, b1.id]
    );
    assert_eq!(
        ids(store.list_posts(&by("token:other", None)).await.unwrap()),
        vec![other.id]
    );
}

/// A calendar's span lists the posts scheduled, held or published in it, and no other.
pub async fn list_posts_filters_by_when_they_go_out(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let before = draft(s, "alpha", "before the span", mins(-600)).await;
    let inside = draft(s, "alpha", "inside the span", mins(30)).await;
    let after = draft(s, "alpha", "after the span", mins(600)).await;
    let held = approved(s, "alpha", "held into the span", mins(-600)).await;
    let held = defer(s, &held, mins(60), mins(-500)).await;
    let out = approved(s, "beta", "published in the span", mins(-600)).await;
    let out = publish(s, &out, mins(10), 10, 10).await;
    assert!(out.posted_at.is_some_and(|at| at >= t0()), "{out:?}");
    let span = PostFilter {
        goes_out: Some((t0(), mins(120))),
        ..PostFilter::default()
    };
    let mut listed: Vec<_> = store
        .list_posts(&span)
        .await
        .unwrap()
        .iter()
        .map(|p| p.id)
        .collect();
    listed.sort();
    assert_eq!(listed, vec![inside.id, held.id, out.id]);
    let excerpts = store.list_excerpts(&span, 10).await.unwrap();
    assert_eq!(excerpts.len(), 3);
    for outside in [before.id, after.id] {
        assert!(!listed.contains(&outside));
    }
}

/// Every post column a change names is written, a change that clears one clears it, and
/// columns it leaves out keep their values.
pub async fn a_change_writes_and_clears_the_fields_it_names(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "Before", t0()).await;
    let mut changed: PostContent = post.content.clone();
    changed.text = "After".into();
    changed.title = Some("Now with a title".into());
    changed.link = Some("https://inn.example/b/".into());
    changed.media = vec![airlock_core::Media::new(
        "https://inn.example/b.jpg".into(),
        None,
    )];
    let hash = changed.hash();
    let edit = Change::Edited {
        version: post.version,
        content: Some((changed.clone(), hash.clone())),
        scheduled_at: Some(mins(90)),
        fields: "text, title, link, media, scheduled_at".into(),
        duplicate_window: None,
    };
    let after = s
        .change_post(PostChange::new(post.id, "token:editor", mins(1), edit))
        .await
        .unwrap();
    assert_eq!(after.status, PostStatus::Draft);
    assert_eq!(after.content, changed);
    assert_eq!(after.content_hash, hash);
    assert_eq!(after.scheduled_at, mins(90));
    assert_eq!(after.edited_by, "token:editor");
    assert_eq!(after.created_by, WRITER);
    assert_eq!(after.updated_at, mins(1));
    assert!(after.version > post.version);
    assert_eq!(s.get_post(post.id).await.unwrap(), after);

    // Not sent: the error, the next try, an attempt and a wait.
    let approved = approve(s, &after, mins(2)).await;
    // Requeued (before the claims below, which reserve later in the day): the error, the next try, attempts and waits cleared.
    let failed = in_status(s, PostStatus::Failed, "threads-main").await;
    assert!(failed.error.is_some());
    let requeue = Change::Requeued {
        version: failed.version,
    };
    let cleared = s
        .change_post(PostChange::new(failed.id, CRITIC, mins(3), requeue))
        .await
        .unwrap();
    assert_eq!(cleared.status, PostStatus::Approved);
    assert_eq!(cleared.error, None);
    assert_eq!(cleared.not_before, None);
    assert_eq!((cleared.attempts, cleared.waits), (0, 0));
    assert_eq!(cleared.content, failed.content);

    let claimed = claim(s, &approved, mins(91)).await;
    let not_sent = Change::NotSent {
        generation: claimed.generation,
        reason: "something to fix".into(),
        note: "not sent".into(),
        not_before: mins(95),
        counts_attempt: true,
        counts_wait: true,
        settles_intent: false,
    };
    let back = s
        .change_post(PostChange::new(post.id, DISPATCHER, mins(92), not_sent))
        .await
        .unwrap();
    assert_eq!(back.error.as_deref(), Some("something to fix"));
    assert_eq!(back.not_before, Some(mins(95)));
    assert_eq!((back.attempts, back.waits), (1, 1));
    assert_eq!(back.content, changed, "the content stays");

    // Published: the platform's id and permalink, found by the id.
    let claimed = claim(s, &back, mins(96)).await;
    let published = Change::Published {
        part: 1,
        generation: claimed.generation,
        posted_at: mins(96),
        platform_post_id: Some("p-1".into()),
        permalink: Some("https://threads.example/p/1".into()),
        sent_by: None,
        note: "published".into(),
        flag: None,
        pause: None,
    };
    let posted = s
        .change_post(PostChange::new(post.id, DISPATCHER, mins(97), published))
        .await
        .unwrap();
    assert_eq!(
        posted.permalink.as_deref(),
        Some("https://threads.example/p/1")
    );
    assert_eq!(posted.platform_post_id.as_deref(), Some("p-1"));
    assert_eq!(posted.not_before, None, "a publish clears the next try");
    assert_eq!(posted.error, None);
    let by_platform_id = PostFilter {
        channel: Some(ch("threads-main")),
        platform_post_id: Some("p-1".into()),
        ..PostFilter::default()
    };
    let found = s.list_posts(&by_platform_id).await.unwrap();
    assert_eq!(found.iter().map(|p| p.id).collect::<Vec<_>>(), [post.id]);
    let other = PostFilter {
        platform_post_id: Some("p-2".into()),
        ..by_platform_id
    };
    assert!(s.list_posts(&other).await.unwrap().is_empty());
}

/// A write guarded by a version the post has moved past is a `Conflict` and changes nothing.
pub async fn a_stale_version_is_a_conflict_and_changes_nothing(store: Arc<dyn Store>) {
    let post = draft(store.as_ref(), "threads-main", "v1", t0()).await;
    let approved = approve(store.as_ref(), &post, mins(1)).await;
    assert!(approved.version > post.version);

    let stale = Change::Withdrawn {
        version: post.version,
        note: "late".into(),
        error: Some("late".into()),
    };
    let stale = PostChange::new(post.id, "token:late", mins(2), stale)
        .notifying(vec![notification("late")]);
    match store.change_post(stale).await {
        Err(StoreError::Conflict(id)) => assert_eq!(id, post.id),
        res => panic!("expected Conflict, got {res:?}"),
    }
    assert_eq!(store.get_post(post.id).await.unwrap(), approved);
    assert_eq!(events(store.as_ref(), post.id).await.len(), 2);
    assert_eq!(store.outbox_stats().await.unwrap().pending, 0);
}

/// A notification for the `ops` sink.
pub(crate) fn notification(event: &str) -> NewNotification {
    NewNotification {
        sink: "ops".into(),
        event: event.into(),
        post_id: None,
        payload: serde_json::json!({"event": event}),
    }
}

/// Discarding removes a draft but keeps its events, with a `discarded` event; a stale
/// version is a conflict; a post that is not a draft is refused and stays.
pub async fn only_drafts_are_discarded_and_their_events_stay(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "Soon gone", t0()).await;
    assert!(matches!(
        store
            .delete_draft(post.id, post.version + 1, "token:writer", mins(1))
            .await,
        Err(StoreError::Conflict(_))
    ));
    store
        .delete_draft(post.id, post.version, "token:writer", mins(1))
        .await
        .unwrap();
    assert!(matches!(
        store.get_post(post.id).await,
        Err(StoreError::NotFound(_))
    ));
    let feed = store.events_after(0, 100).await.unwrap();
    let kept: Vec<_> = feed.iter().filter(|e| e.post_id == post.id).collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0].from, None);
    assert_eq!(kept[1].kind, "discarded");
    assert_eq!(kept[1].actor, "token:writer");
    assert_eq!(kept[1].at, mins(1));

    let approved = approved(s, "threads-main", "Stays", t0()).await;
    match store
        .delete_draft(approved.id, approved.version, "token:writer", mins(2))
        .await
    {
        Err(StoreError::IllegalTransition { id, from, .. }) => {
            assert_eq!(id, approved.id);
            assert_eq!(from, PostStatus::Approved);
        }
        res => panic!("expected IllegalTransition, got {res:?}"),
    }
    assert_eq!(store.get_post(approved.id).await.unwrap(), approved);
}

/// A draft that has been claimed before (an intent or a reservation on record) cannot be
/// discarded: `HasHistory`, and it stays.
pub async fn a_draft_with_publish_history_cannot_be_discarded(store: Arc<dyn Store>) {
    let s = store.as_ref();
    // Not sent, then its approval withdrawn: a draft again, with its attempt on record.
    let back_to_draft = async |post: &airlock_core::Post| {
        let back = s
            .change_post(outcome(post, PostStatus::Approved, mins(2)))
            .await
            .unwrap();
        let withdraw = Change::Withdrawn {
            version: back.version,
            note: "content changed after approval".into(),
            error: None,
        };
        s.change_post(PostChange::new(post.id, CRITIC, mins(2), withdraw))
            .await
            .unwrap()
    };

    let reserved = crate::fixture::reserved(s, "threads-main", "reserved once", mins(1)).await;
    let reserved = back_to_draft(&reserved).await;
    assert_eq!(reserved.status, PostStatus::Draft);

    let sent = claimed(s, "threads-main", "intent once", t0()).await;
    intent(s, &sent, mins(1)).await;
    let sent = back_to_draft(&sent).await;

    for post in [reserved, sent] {
        match store
            .delete_draft(post.id, post.version, "token:writer", mins(3))
            .await
        {
            Err(StoreError::HasHistory(id)) => assert_eq!(id, post.id),
            res => panic!("expected HasHistory, got {res:?}"),
        }
        assert_eq!(store.get_post(post.id).await.unwrap(), post);
    }
}

/// A note is a non-status event (from and to are the current status) with its
/// notifications queued in the same transaction.
pub async fn add_event_appends_a_note_with_its_notifications(store: Arc<dyn Store>) {
    let post = approved(store.as_ref(), "threads-main", "Noted", t0()).await;
    let note = EventNote {
        kind: "note".into(),
        note: Some("checked with the owner".into()),
    };
    store
        .add_event(post.id, note, "cli", mins(5), vec![notification("note")])
        .await
        .unwrap();
    let events = events(store.as_ref(), post.id).await;
    let last = events.last().unwrap();
    assert_eq!(last.kind, "note");
    assert_eq!(last.from, Some(PostStatus::Approved));
    assert_eq!(last.to, PostStatus::Approved);
    assert_eq!(last.actor, "cli");
    assert_eq!(last.note.as_deref(), Some("checked with the owner"));
    assert_eq!(last.at, mins(5));
    assert_eq!(store.outbox_stats().await.unwrap().pending, 1);
    // A note is not a write of the post.
    assert_eq!(store.get_post(post.id).await.unwrap(), post);
}

/// The event feed returns every event across posts in id order, after a cursor, up to a limit.
pub async fn events_after_pages_through_the_ledger_in_order(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let a = draft(s, "alpha", "a", t0()).await;
    let b = approved(s, "beta", "b", t0()).await;
    approve(s, &a, mins(1)).await;

    let all = store.events_after(0, 100).await.unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.windows(2).all(|w| w[0].id < w[1].id));
    let by_post: Vec<PostId> = all.iter().map(|e| e.post_id).collect();
    assert_eq!(by_post, vec![a.id, b.id, b.id, a.id]);

    let page = store.events_after(all[0].id, 2).await.unwrap();
    assert_eq!(page, all[1..3].to_vec());
    let rest = store.events_after(all[2].id, 100).await.unwrap();
    assert_eq!(rest, all[3..].to_vec());
    assert!(store.events_after(all[3].id, 100).await.unwrap().is_empty());
}

/// Each source path's last use on a channel since a time.
pub async fn sources_used_reports_the_last_use_of_each_source(store: Arc<dyn Store>) {
    let sourced = |channel: &str, path: &str, text: &str| {
        let mut new = new_post(channel, text, t0());
        new.content.source = Some(Source {
            path: path.into(),
            sha256: "cd".repeat(32),
            updated: None,
        });
        new
    };
    let at = |new, now| {
        let store = store.clone();
        async move { store.create_post(create_request(new, now)).await.unwrap() }
    };
    at(sourced("alpha", "a.md", "1"), mins(-600)).await;
    at(sourced("alpha", "a.md", "2"), mins(-10)).await;
    at(sourced("alpha", "b.md", "3"), mins(-20)).await;
    at(sourced("alpha", "old.md", "4"), mins(-6000)).await;
    at(sourced("beta", "c.md", "5"), mins(-5)).await;
    at(new_post("alpha", "no source", t0()), mins(-1)).await;

    let mut used = store.sources_used(&ch("alpha"), mins(-1000)).await.unwrap();
    used.sort();
    assert_eq!(
        used,
        vec![
            ("a.md".to_owned(), mins(-10)),
            ("b.md".to_owned(), mins(-20))
        ]
    );
    let beta = store.sources_used(&ch("beta"), mins(-1000)).await.unwrap();
    assert_eq!(beta, vec![("c.md".to_owned(), mins(-5))]);
}
