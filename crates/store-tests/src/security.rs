//! Cases for what the store enforces on its own for security: who wrote a post's content
//! (separation of duties reads it), lists that load only what they show, and size limits
//! that refuse oversized values whatever path sends them.

use std::sync::Arc;

use airlock_core::limits::{MAX_TEXT_CHARS, MAX_TITLE_CHARS, MAX_TOKEN_NAME_CHARS};
use airlock_core::{Post, PostStatus, Role, RoleSet};
use airlock_store::{Change, NewToken, PauseScope, PostChange, PostFilter, Store, StoreError};

use crate::fixture::*;

/// An edit of a post's content by `actor` (its text becomes `text`).
fn content_edit(
    post: &Post,
    actor: &str,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> PostChange {
    let mut changed = post.content.clone();
    changed.text = text.to_owned();
    let hash = changed.hash();
    let change = Change::Edited {
        version: post.version,
        content: Some((changed, hash)),
        scheduled_at: None,
        fields: "text".into(),
        duplicate_window: None,
    };
    PostChange::new(post.id, actor, now, change)
}

/// Every principal that changes the content is recorded as an author, each once, in
/// whatever order they came; an approval starts a new list.
pub async fn content_changes_record_their_authors_until_the_next_approval(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "A's words", t0()).await;
    assert!(post.authors.is_empty(), "{:?}", post.authors);
    assert!(post.is_authored_by(WRITER), "the creator wrote it");

    let post = s
        .change_post(content_edit(&post, "token:b", "B's words", mins(1)))
        .await
        .unwrap();
    assert_eq!(post.authors, ["token:b"]);
    let post = s
        .change_post(content_edit(&post, WRITER, "A's words again", mins(2)))
        .await
        .unwrap();
    let post = s
        .change_post(content_edit(&post, "token:b", "B once more", mins(3)))
        .await
        .unwrap();
    let mut authors = post.authors.clone();
    authors.sort();
    assert_eq!(authors, ["token:b", WRITER]);
    assert_eq!(s.get_post(post.id).await.unwrap().authors, post.authors);
    assert!(post.is_authored_by("token:b"));
    assert!(!post.is_authored_by(CRITIC));

    let approved = approve(s, &post, mins(4)).await;
    assert!(approved.authors.is_empty(), "{:?}", approved.authors);
    assert_eq!(
        s.get_post(post.id).await.unwrap().authors,
        Vec::<String>::new()
    );

    // Editing an approved post returns it to draft and starts the list again.
    let edited = s
        .change_post(content_edit(&approved, "token:c", "C's words", mins(5)))
        .await
        .unwrap();
    assert_eq!(edited.status, PostStatus::Draft);
    assert_eq!(edited.authors, ["token:c"]);
}

/// Moving the schedule (or any other field that is not content) makes nobody an author.
pub async fn a_schedule_change_records_no_author(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let post = draft(s, "threads-main", "Untouched", t0()).await;
    let post = s
        .change_post(content_edit(&post, "token:b", "Rewritten by B", mins(1)))
        .await
        .unwrap();
    let schedule = Change::Edited {
        version: post.version,
        content: None,
        scheduled_at: Some(mins(90)),
        fields: "scheduled_at".into(),
        duplicate_window: None,
    };
    let moved = s
        .change_post(PostChange::new(post.id, WRITER, mins(2), schedule))
        .await
        .unwrap();
    assert_eq!(moved.scheduled_at, mins(90));
    assert_eq!(moved.authors, ["token:b"], "the schedule is not content");

    // Content written back unchanged is not a change either.
    let same = Change::Edited {
        version: moved.version,
        content: Some((moved.content.clone(), moved.content_hash.clone())),
        scheduled_at: None,
        fields: "text".into(),
        duplicate_window: None,
    };
    let same = s
        .change_post(PostChange::new(moved.id, "token:c", mins(3), same))
        .await
        .unwrap();
    assert_eq!(same.authors, ["token:b"]);
}

/// Summaries come newest first, filtered like `list_posts`, with the text cut by the
/// store to the excerpt length plus one character (so a cut can be shown).
pub async fn summaries_carry_an_excerpt_cut_by_the_store(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let long = "猫".repeat(MAX_TEXT_CHARS);
    let big = draft(s, "threads-main", &long, t0()).await;
    let short = approved(s, "threads-main", "short", mins(5)).await;
    let all = s.list_summaries(&PostFilter::default(), 10).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].id, short.id);
    assert_eq!(all[0].excerpt, "short");
    assert_eq!(all[0].status, PostStatus::Approved);
    assert_eq!(all[0].scheduled_at, mins(5));
    assert_eq!(all[1].id, big.id);
    assert_eq!(
        all[1].excerpt,
        "猫".repeat(11),
        "ten characters and one to show the cut"
    );
    let drafts = PostFilter {
        status: Some(PostStatus::Draft),
        ..PostFilter::default()
    };
    let only = s.list_summaries(&drafts, 3).await.unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].id, big.id);
    assert_eq!(only[0].channel, ch("threads-main"));
}

/// A post, title, token name or pause reason over its limit is refused with
/// [`StoreError::TooLarge`], and nothing is written.
pub async fn values_over_the_limits_are_refused_and_nothing_is_written(store: Arc<dyn Store>) {
    let s = store.as_ref();
    let refused = s
        .create_post(create_request(
            new_post("threads-main", &"a".repeat(MAX_TEXT_CHARS + 1), t0()),
            t0(),
        ))
        .await;
    assert!(
        matches!(refused, Err(StoreError::TooLarge(_))),
        "{refused:?}"
    );
    assert!(
        s.list_posts(&PostFilter::default())
            .await
            .unwrap()
            .is_empty()
    );

    // At the limit is fine; one character more in an edit is refused and changes nothing.
    let post = draft(s, "threads-main", &"a".repeat(MAX_TEXT_CHARS), t0()).await;
    let refused = s
        .change_post(content_edit(
            &post,
            WRITER,
            &"b".repeat(MAX_TEXT_CHARS + 1),
            mins(1),
        ))
        .await;
    match refused {
        Err(StoreError::TooLarge(message)) => {
            assert!(message.contains("100000"), "{message}")
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(s.get_post(post.id).await.unwrap(), post);
    let mut titled = post.content.clone();
    titled.title = Some("t".repeat(MAX_TITLE_CHARS + 1));
    let hash = titled.hash();
    let edit = Change::Edited {
        version: post.version,
        content: Some((titled, hash)),
        scheduled_at: None,
        fields: "title".into(),
        duplicate_window: None,
    };
    assert!(matches!(
        s.change_post(PostChange::new(post.id, WRITER, mins(1), edit))
            .await,
        Err(StoreError::TooLarge(_))
    ));

    let token = NewToken {
        name: "n".repeat(MAX_TOKEN_NAME_CHARS + 1),
        roles: RoleSet::of(&[Role::Writer]),
        secret_sha256: "ab".repeat(32),
        now: t0(),
    };
    assert!(matches!(
        s.create_token(token).await,
        Err(StoreError::TooLarge(_))
    ));
    assert!(s.tokens().await.unwrap().is_empty());

    let paused = s
        .pause(&PauseScope::All, &"r".repeat(4001), "cli", t0(), Vec::new())
        .await;
    assert!(matches!(paused, Err(StoreError::TooLarge(_))), "{paused:?}");
    assert!(s.pauses().await.unwrap().is_empty());
}
