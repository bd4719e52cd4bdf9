//! Intents and outcomes are durable whatever the server, database or role defaults to:
//! with `synchronous_commit = off` set on the database, the transactions that record an
//! intent and write an outcome still commit with it on, and `doctor`'s check names the
//! setting.

use sqlx::{Executor, Row};

use airlock_core::PostStatus;
use airlock_store::{Admin, Posts};
use airlock_store_tests::fixture::*;

use crate::support::{TestDb, store};

#[tokio::test]
async fn intents_and_outcomes_commit_durably_even_when_the_database_defaults_to_not() {
    let db = TestDb::create();
    // Migrate first, then make every later session default to asynchronous commits.
    drop(store(&db).await);
    let mut conn = db.conn().await;
    conn.execute(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {} SET synchronous_commit = off",
        db.name()
    )))
    .await
    .unwrap();
    // Each write of the guarded path records the setting it ran with.
    conn.execute(
        "CREATE TABLE seen (what text, setting text);
         CREATE FUNCTION note_setting() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           INSERT INTO seen VALUES (TG_TABLE_NAME || ':' || TG_OP, current_setting('synchronous_commit'));
           RETURN NEW;
         END $$;
         CREATE TRIGGER seen_intents AFTER INSERT ON intents FOR EACH ROW EXECUTE FUNCTION note_setting();
         CREATE TRIGGER seen_outcomes AFTER UPDATE OF status ON posts FOR EACH ROW EXECUTE FUNCTION note_setting();",
    )
    .await
    .unwrap();

    let store = store(&db).await;
    let warnings = store.durability_warnings().await.unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("synchronous_commit is off")),
        "{warnings:?}"
    );
    let post = reserved(&store, "threads-main", "Durable", t0()).await;
    intent(&store, &post, mins(1)).await;
    store
        .change_post(outcome(&post, PostStatus::Posted, mins(2)))
        .await
        .unwrap();

    let seen: Vec<(String, String)> = sqlx::query("SELECT what, setting FROM seen")
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let of = |what: &str| {
        seen.iter()
            .filter(|(w, _)| w == what)
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(of("intents:INSERT"), ["on"], "{seen:?}");
    // The claim (not part of this check) ran with the database default; the outcome did not.
    assert_eq!(of("posts:UPDATE").last(), Some(&"on"), "{seen:?}");
    assert!(
        of("posts:UPDATE").contains(&"off"),
        "the default was off: {seen:?}"
    );
}
