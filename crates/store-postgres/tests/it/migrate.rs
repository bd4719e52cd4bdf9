//! A ledger made by the first release migrates forward with every row intact: the
//! authorship and size-limit migration (`0003_authorship_and_limits.sql`) adds and
//! backfills `posts.authors` and checks only values written after it.

use airlock_core::limits::MAX_TEXT_CHARS;
use airlock_core::{PostId, PostStatus};
use airlock_store::{Posts, Reads};
use airlock_store_tests::fixture::*;
use sqlx::Connection;

use crate::support::{TestDb, store};

const FIRST_RELEASE: &str = include_str!("../../migrations/0001_ledger.sql");

#[tokio::test]
async fn a_first_release_ledger_migrates_forward_with_every_row_intact() {
    let db = TestDb::create();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0001_ledger.sql"), FIRST_RELEASE).unwrap();
    let mut conn = db.conn().await;
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    let big = "x".repeat(MAX_TEXT_CHARS + 10);
    for (text, edited_by) in [("Hello", "token:b"), (big.as_str(), "token:a")] {
        sqlx::query(
            "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
             edited_by, created_at, updated_at, event_actor) \
             VALUES ('threads-main', 'draft', $1, '2026-03-02T00:00:00Z', $2, 'token:a', $3, \
             '2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z', 'token:a')",
        )
        .bind(text)
        .bind("ab".repeat(32))
        .bind(edited_by)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let store = store(&db).await;
    let first = store.get_post(PostId(1)).await.unwrap();
    assert_eq!(first.content.text, "Hello");
    assert_eq!(first.authors, ["token:a", "token:b"]);
    let second = store.get_post(PostId(2)).await.unwrap();
    assert_eq!(
        second.content.text, big,
        "an old oversized row is kept as it was"
    );
    assert_eq!(second.authors, ["token:a"]);
    assert_eq!(events(&store, second.id).await.len(), 1);

    let approved = store.change_post(approval(&second, t0())).await.unwrap();
    assert_eq!(approved.status, PostStatus::Approved);
    assert!(approved.authors.is_empty());
    store.close().await;
}

/// The repair of 0008 on PostgreSQL (see the SQLite backend's test of the same name).
#[tokio::test]
async fn committed_reservations_without_a_send_time_are_repaired() {
    let db = TestDb::create();
    let dir = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".sql") && name.as_str() < "0008" {
            std::fs::copy(&path, dir.path().join(&name)).unwrap();
        }
    }
    let mut conn = db.conn().await;
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    for statement in [
        "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
         edited_by, created_at, updated_at, event_actor) \
         VALUES ('bsky', 'draft', 'Mochi naps.', '2026-03-02T00:00:00Z', \
         'abababababababababababababababababababababababababababababababab', 'cli', 'cli', \
         '2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z', 'cli')",
        "INSERT INTO intents (post_id, generation, idempotency_key, phase, platform_ref, \
         created_at, settled_at) VALUES (1, 1, 'k', 'not_sent', 'rkey', \
         '2026-03-02T00:00:01Z', '2026-03-02T00:10:00Z')",
        "INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at, \
         settled_at) VALUES \
         (1, 1, 'bsky', 'released', '2026-03-02T00:00:00Z', '2026-03-02T00:00:01Z', \
          '2026-03-02T00:10:00Z'), \
         (1, 2, 'bsky', 'committed', '2026-03-02T00:20:00Z', NULL, '2026-03-02T00:20:01Z'), \
         (1, 0, 'bsky', 'committed', '2026-03-02T00:30:00Z', NULL, '2026-03-02T00:30:01Z'), \
         (1, 3, 'bsky', 'committed', '2026-03-02T00:40:00Z', '2026-03-02T00:40:01Z', \
          '2026-03-02T00:40:02Z')",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    conn.close().await.unwrap();

    let store = store(&db).await;
    let sent: Vec<(i64, String, Option<chrono::DateTime<chrono::Utc>>)> =
        sqlx::query_as("SELECT generation, state, sent_at FROM reservations ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let at = |s: &str| Some(s.parse::<chrono::DateTime<chrono::Utc>>().unwrap());
    assert_eq!(
        sent,
        [
            (1, "released".into(), at("2026-03-02T00:00:01Z")),
            (2, "committed".into(), at("2026-03-02T00:20:00Z")),
            (0, "committed".into(), at("2026-03-02T00:30:00Z")),
            (3, "committed".into(), at("2026-03-02T00:40:01Z")),
        ]
    );
    let now = at("2026-03-02T00:50:00Z").unwrap();
    let rows = store
        .quota_rows(t0() - chrono::Duration::days(2), now)
        .await;
    assert_eq!(rows.expect("the repaired rows read").0.len(), 3);
    // A claim's decision reads them too, fail-closed.
    let post = approved(&store, "bsky", "after the repair", now).await;
    assert!(matches!(
        reserve(&store, &post, now, 100, 100).await,
        Reserved::Granted(_)
    ));
}

/// Migration 0011 on PostgreSQL (see the SQLite backend's test of the same name): the
/// owner's migration recomputes the keys stored the old way, once.
#[tokio::test]
async fn duplicate_keys_of_earlier_posts_are_recomputed_once_on_migrate() {
    use airlock_core::review::{TEXT_KEY_VERSION, text_key};
    use airlock_store::StoreError;

    let db = TestDb::create();
    let dir = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".sql") && name.as_str() < "0011" {
            std::fs::copy(&path, dir.path().join(&name)).unwrap();
        }
    }
    let mut conn = db.conn().await;
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    let quarantined = "Mochi naps on the sofa.";
    let old_key = airlock_core::hash::sha256_hex(quarantined.to_lowercase().as_bytes());
    assert_ne!(old_key, text_key(quarantined), "the key changed");
    for (text, key, quarantined_at) in [
        (
            quarantined,
            Some(old_key.as_str()),
            Some("2026-03-01T00:10:00Z"),
        ),
        ("From before keys.", None, None),
    ] {
        sqlx::query(
            "INSERT INTO posts (channel, status, text, scheduled_at, content_hash, created_by, \
             edited_by, created_at, updated_at, event_actor, text_key, quarantined_at) \
             VALUES ('threads-main', 'draft', $1, '2026-03-02T00:00:00Z', $2, 'token:a', \
             'token:a', '2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z', 'token:a', $3, \
             $4::timestamptz)",
        )
        .bind(text)
        .bind("ab".repeat(32))
        .bind(key)
        .bind(quarantined_at)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let store = store(&db).await;
    let keys: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT id, text_key FROM posts ORDER BY id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(keys, [(1, Some(text_key(quarantined))), (2, None)]);
    let version: i64 = sqlx::query_scalar("SELECT version FROM text_key_version")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(version, TEXT_KEY_VERSION);

    for text in [quarantined, "Moch\u{0456} n\u{0430}ps on the sofa.\u{2800}"] {
        let mut req = create_request(new_post("threads-main", text, t0()), mins(1));
        req.duplicate_window = Some(chrono::Duration::days(7));
        let err = store.create_post(req).await.unwrap_err();
        assert!(
            matches!(err, StoreError::DuplicateText { earlier, status: PostStatus::Draft } if earlier == PostId(1)),
            "{text:?}: {err:?}"
        );
    }

    // Once: migrating a current ledger again reads no key.
    sqlx::query("UPDATE posts SET text_key = 'by hand' WHERE id = 1")
        .execute(store.pool())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let key: String = sqlx::query_scalar("SELECT text_key FROM posts WHERE id = 1")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(key, "by hand");
    store.close().await;
}
