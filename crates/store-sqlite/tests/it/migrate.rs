//! A ledger made by the first release migrates forward with every row intact: the
//! authorship and size-limit migration (`0003_authorship_and_limits.sql`) adds and
//! backfills `posts.authors` and checks only values written after it.

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use airlock_core::limits::MAX_TEXT_CHARS;
use airlock_core::{PostId, PostStatus};
use airlock_store::{Guard, PostUpdate, Store};
use airlock_store_sqlite::SqliteStore;
use airlock_store_tests::fixture::*;

const FIRST_RELEASE: &str = include_str!("../../migrations/0001_ledger.sql");

#[tokio::test]
async fn a_first_release_ledger_migrates_forward_with_every_row_intact() {
    let dir = tempfile::tempdir().unwrap();
    let only_first = dir.path().join("migrations");
    std::fs::create_dir(&only_first).unwrap();
    std::fs::write(only_first.join("0001_ledger.sql"), FIRST_RELEASE).unwrap();
    let path = dir.path().join("airlock.db");
    let pool = SqlitePoolOptions::new()
        .connect_with(
            SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true),
        )
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(only_first.as_path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    // Two drafts as the first release wrote them: one edited by another principal, one
    // larger than today's limit.
    let big = "x".repeat(MAX_TEXT_CHARS + 10);
    for (text, edited_by) in [("Hello", "token:b"), (big.as_str(), "token:a")] {
        sqlx::query(
            "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
             edited_by, created_at, updated_at, event_actor) \
             VALUES ('threads-main', 'draft', ?, '2026-03-02T00:00:00.000Z', ?, 'token:a', ?, \
             '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 'token:a')",
        )
        .bind(text)
        .bind("ab".repeat(32))
        .bind(edited_by)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = SqliteStore::open(&path).await.expect("migrates forward");
    let first = store.get_post(PostId(1)).await.unwrap();
    assert_eq!(first.content.text, "Hello");
    assert_eq!(first.authors, ["token:a", "token:b"]);
    assert!(first.is_authored_by("token:b"));
    let second = store.get_post(PostId(2)).await.unwrap();
    assert_eq!(
        second.content.text, big,
        "an old oversized row is kept as it was"
    );
    assert_eq!(second.authors, ["token:a"]);
    assert_eq!(events(&store, second.id).await.len(), 1);

    // The old oversized row still moves through its life: only new values are checked.
    let mut approve = PostUpdate::new(second.id, Guard::Version(second.version), CRITIC, t0());
    approve.to = Some(PostStatus::Approved);
    let approved = store.update_post(approve).await.unwrap();
    assert_eq!(approved.status, PostStatus::Approved);
    assert!(approved.authors.is_empty());
}
