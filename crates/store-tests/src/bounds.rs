//! Cases for what keeps one caller from growing the server's memory or the ledger:
//! lists that carry excerpts, the count of live drafts a principal holds, store-side
//! bounds on notes, errors and media that agree with `airlock_core::limits`, and the
//! server secrets kept in the ledger.

use std::sync::Arc;

use airlock_core::VerdictKind;
use airlock_core::limits::{
    MAX_ALT_CHARS, MAX_ERROR_CHARS, MAX_EVENT_NOTE_CHARS, MAX_MEDIA, MAX_URL_CHARS,
};
use airlock_core::{Media, PostStatus};
use airlock_store::{
    Change, CreateKey, EventNote, PostChange, PostFilter, Store, StoreError, VerdictEffect,
};

use crate::Ledger;
use crate::fixture::*;

fn media(n: usize, url_chars: usize, alt_chars: usize) -> Vec<Media> {
    (0..n)
        .map(|i| {
            let prefix = format!("https://x.example/{i}/");
            Media::new(
                format!("{prefix}{}", "a".repeat(url_chars - prefix.len())),
                Some("猫".repeat(alt_chars)),
            )
        })
        .collect()
}

/// A list of excerpts carries every field of each post, its text cut by the store to
/// the characters asked for plus one.
pub async fn excerpt_lists_cut_the_text_and_keep_every_other_field(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let long = create(s, new_post("threads-main", &"猫".repeat(5000), t0())).await;
    let short = create(s, new_post("threads-main", "short", t0())).await;
    let listed = s.list_excerpts(&PostFilter::default(), 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].id, short.id, "newest first");
    assert_eq!(listed[0], short, "a short text is whole");
    assert_eq!(listed[1].content.text, "猫".repeat(11));
    let mut cut = long.clone();
    cut.content.text = "猫".repeat(11);
    assert_eq!(listed[1], cut, "every other field is the stored one");
    let only = s
        .list_excerpts(
            &PostFilter {
                before: Some(short.id),
                ..PostFilter::default()
            },
            10,
        )
        .await
        .unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].id, long.id);
}

/// Live drafts are counted per creator; approved or discarded ones no longer count.
pub async fn live_drafts_are_counted_per_creator(store: Arc<dyn Store>) {
    let s = store.as_ref();
    assert_eq!(s.live_drafts_by(WRITER).await.unwrap(), 0);
    let first = create(s, new_post("threads-main", "one", t0())).await;
    create(s, new_post("threads-main", "two", t0())).await;
    assert_eq!(s.live_drafts_by(WRITER).await.unwrap(), 2);
    assert_eq!(s.live_drafts_by(CRITIC).await.unwrap(), 0);
    assert_eq!(
        s.live_drafts_by_creator().await.unwrap(),
        vec![(WRITER.to_owned(), 2)]
    );
    approve(s, &first, mins(1)).await;
    assert_eq!(s.live_drafts_by(WRITER).await.unwrap(), 1);
    let mut by_critic = create_request(new_post("threads-main", "three", t0()), mins(-60));
    by_critic.actor = CRITIC.to_owned();
    s.create_post(by_critic).await.unwrap();
    assert_eq!(
        s.live_drafts_by_creator().await.unwrap(),
        vec![(CRITIC.to_owned(), 1), (WRITER.to_owned(), 1)],
        "by creator, the approved one no longer counted"
    );
}

/// A create by an actor already holding `max_live_drafts` live drafts is refused naming
/// the count and the limit, and writes nothing; other actors are not limited, a repeated
/// idempotency key still returns its first post, and a draft that stops being live frees
/// its place.
pub async fn a_create_past_the_live_draft_limit_is_refused_and_writes_nothing(
    store: Arc<dyn Store>,
) {
    let s = store.as_ref();
    let limited = |text: &str, key: Option<&str>| {
        let mut req = create_request(new_post("threads-main", text, t0()), mins(-60));
        req.max_live_drafts = Some(2);
        req.idempotency = key.map(|key| CreateKey {
            scope: WRITER.to_owned(),
            key: key.to_owned(),
            request_hash: format!("hash of {text}"),
            ttl: chrono::Duration::hours(24),
        });
        req
    };
    let first = s
        .create_post(limited("one", Some("k1")))
        .await
        .unwrap()
        .post;
    s.create_post(limited("two", None)).await.unwrap();
    let err = s.create_post(limited("three", None)).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::DraftLimit { actor, held: 2, max: 2 } if actor == WRITER),
        "{err:?}"
    );
    assert_eq!(s.live_drafts_by(WRITER).await.unwrap(), 2);
    assert_eq!(
        s.list_posts(&PostFilter::default()).await.unwrap().len(),
        2,
        "nothing written"
    );
    let again = s.create_post(limited("one", Some("k1"))).await.unwrap();
    assert!(again.existing, "a repeated key returns its first post");
    assert_eq!(again.post.id, first.id);
    let mut other = limited("three", None);
    other.actor = CRITIC.to_owned();
    s.create_post(other).await.unwrap();
    approve(s, &first, mins(1)).await;
    s.create_post(limited("three", None)).await.unwrap();
}

/// Several handles creating drafts for one actor at once never leave it holding more
/// live drafts than `max_live_drafts`: the count is taken inside each creating
/// transaction, so exactly the limit's worth succeed.
pub async fn concurrent_creates_by_one_actor_never_pass_its_live_draft_limit(ledger: &Ledger) {
    const HANDLES: usize = 4;
    const EACH: usize = 4;
    const MAX: u32 = 5;
    let mut tasks = tokio::task::JoinSet::new();
    for handle_idx in 0..HANDLES {
        let handle = ledger.backend.open().await;
        tasks.spawn(async move {
            let mut outcomes = Vec::new();
            for idx in 0..EACH {
                let text = format!("draft {handle_idx}-{idx}");
                let mut req = create_request(new_post("threads-main", &text, t0()), mins(-60));
                req.max_live_drafts = Some(MAX);
                outcomes.push(handle.create_post(req).await);
            }
            outcomes
        });
    }
    let (mut created, mut refused) = (0, 0);
    while let Some(outcomes) = tasks.join_next().await {
        for outcome in outcomes.expect("creating task") {
            match outcome {
                Ok(_) => created += 1,
                Err(StoreError::DraftLimit { held, max, .. }) => {
                    assert_eq!((held, max), (i64::from(MAX), MAX));
                    refused += 1;
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
    }
    assert_eq!(
        created, MAX as usize,
        "exactly the limit's worth are created"
    );
    assert_eq!(refused, HANDLES * EACH - MAX as usize);
    assert_eq!(
        ledger.store.live_drafts_by(WRITER).await.unwrap(),
        i64::from(MAX)
    );
}

/// The first secret stored under a name is the one every later caller reads.
pub async fn a_server_secret_is_created_once_and_then_read(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let first = s.server_secret("login-csrf", "aaaa", t0()).await.unwrap();
    assert_eq!(first, "aaaa");
    let again = s
        .server_secret("login-csrf", "bbbb", mins(1))
        .await
        .unwrap();
    assert_eq!(again, "aaaa");
    let other = s.server_secret("other", "cccc", mins(1)).await.unwrap();
    assert_eq!(other, "cccc");
}

/// Due posts are counted per channel, paused channels left out.
pub async fn due_posts_are_counted_per_channel(store: Arc<dyn Store>) {
    let s = store.as_ref();
    approved(s, "threads-main", "a", t0()).await;
    approved(s, "threads-main", "b", mins(2)).await;
    approved(s, "sandbox", "c", mins(1)).await;
    let due = s.due_by_channel(mins(10)).await.unwrap();
    let seen: Vec<(String, i64)> = due.iter().map(|d| (d.channel.clone(), d.due)).collect();
    assert_eq!(
        seen,
        [("sandbox".to_owned(), 1), ("threads-main".to_owned(), 2)]
    );
    assert!(due[1].oldest_due_at <= mins(2));
    s.pause(
        &airlock_store::PauseScope::Channel(ch("sandbox")),
        "why",
        "cli",
        mins(3),
        Vec::new(),
    )
    .await
    .unwrap();
    let due = s.due_by_channel(mins(10)).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].channel, "threads-main");
}

/// Media at airlock's limits, a note and an error at theirs, are accepted; one more
/// item, character of alt text or of URL, of note or of error, is refused.
pub async fn notes_errors_and_media_are_bounded_as_airlock_bounds_them(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let mut at_limits = new_post("threads-main", "ok", t0());
    at_limits.content.media = media(MAX_MEDIA, MAX_URL_CHARS, MAX_ALT_CHARS);
    let post = create(s, at_limits).await;
    for (n, url, alt) in [
        (MAX_MEDIA + 1, 40, 1),
        (1, MAX_URL_CHARS + 1, 1),
        (1, 40, MAX_ALT_CHARS + 1),
    ] {
        let mut over = new_post("threads-main", "over", t0());
        over.content.media = media(n, url, alt);
        let refused = s.create_post(create_request(over.clone(), t0())).await;
        assert!(
            matches!(refused, Err(StoreError::TooLarge(_))),
            "{n} items, url {url}, alt {alt}: {refused:?}"
        );
        let hash = over.content.hash();
        let edit = Change::Edited {
            version: post.version,
            content: Some((over.content, hash)),
            scheduled_at: None,
            fields: "media".into(),
            duplicate_window: None,
        };
        let refused = s
            .change_post(PostChange::new(post.id, WRITER, mins(1), edit))
            .await;
        assert!(
            matches!(refused, Err(StoreError::TooLarge(_))),
            "{refused:?}"
        );
    }
    assert_eq!(
        s.get_post(post.id).await.unwrap(),
        post,
        "nothing was written"
    );

    let note = |chars: usize| EventNote {
        kind: "note".into(),
        note: Some("n".repeat(chars)),
    };
    s.add_event(
        post.id,
        note(MAX_EVENT_NOTE_CHARS),
        "cli",
        mins(1),
        Vec::new(),
    )
    .await
    .unwrap();
    let refused = s
        .add_event(
            post.id,
            note(MAX_EVENT_NOTE_CHARS + 1),
            "cli",
            mins(1),
            Vec::new(),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::TooLarge(_))),
        "{refused:?}"
    );

    let post = s.get_post(post.id).await.unwrap();
    let fail = |error: String, note: String| {
        let change = Change::Verdict {
            version: post.version,
            verdict: verdict_on(&post, VerdictKind::Fail),
            effect: VerdictEffect::Revise {
                counts: true,
                quarantine: false,
                error,
                note,
            },
        };
        PostChange::new(post.id, CRITIC, mins(2), change)
    };
    let refused = s
        .change_post(fail("e".repeat(MAX_ERROR_CHARS + 1), "r".into()))
        .await;
    assert!(
        matches!(refused, Err(StoreError::TooLarge(_))),
        "{refused:?}"
    );
    // A rejection with a long reason, as the app writes it, is kept (and its status note).
    let kept = s
        .change_post(fail("e".repeat(MAX_ERROR_CHARS), "r".repeat(1000)))
        .await
        .unwrap();
    assert_eq!(kept.status, PostStatus::Draft);
    assert_eq!(kept.error.map(|e| e.chars().count()), Some(MAX_ERROR_CHARS));
}
