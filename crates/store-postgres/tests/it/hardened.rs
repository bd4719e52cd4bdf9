//! The hardened mode (docs/stores.md#hardened-postgresql): a store opened as a role with
//! only the runtime role runs no DDL, starts only on a current ledger, and cannot write a
//! table or read a secret by hand; the owner's store re-applies stale functions.

use airlock_store_postgres::{DEFAULT_RUNTIME_ROLE, PgStore};
use sqlx::Connection;

use crate::support::{TestDb, TestRole, store};

fn needs_migrate(result: airlock_store::Result<PgStore>) -> String {
    match result {
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.contains("needs `airlock migrate` run with the owner's URL"),
                "{message}"
            );
            message
        }
        Ok(_) => panic!("the runtime role opened a ledger that needs migrating"),
    }
}

#[tokio::test]
async fn the_runtime_role_never_migrates_and_asks_for_the_owner() {
    let db = TestDb::create();
    // Nothing in PUBLIC may create in the schema (PostgreSQL 15's default for `public`).
    let role = TestRole::create(DEFAULT_RUNTIME_ROLE);
    needs_migrate(PgStore::connect(&role.url(&db.url)).await);
    let mut conn = db.conn().await;
    let tables: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(tables, 0, "the runtime role created tables");

    store(&db).await.close().await;
    let runtime = PgStore::connect(&role.url(&db.url)).await.unwrap();
    let mode = runtime.mode().await.unwrap();
    assert!(
        !mode.owner && !mode.writes_tables && mode.functions_current,
        "{mode:?}"
    );
    assert!(
        mode.describe().starts_with("hardened"),
        "{}",
        mode.describe()
    );
    runtime.close().await;

    // Functions of another binary: the runtime role refuses, the owner re-applies them.
    sqlx::query(
        "CREATE OR REPLACE FUNCTION airlock_functions_version() RETURNS text \
         LANGUAGE sql IMMUTABLE AS $$ SELECT 'an older binary'::text $$",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    needs_migrate(PgStore::connect(&role.url(&db.url)).await);
    let owner = store(&db).await;
    let mode = owner.mode().await.unwrap();
    assert!(mode.owner && mode.functions_current, "{mode:?}");
    owner.close().await;
    PgStore::connect(&role.url(&db.url))
        .await
        .unwrap()
        .close()
        .await;
    conn.close().await.ok();
}

#[tokio::test]
async fn the_runtime_role_reads_without_secrets_and_writes_only_through_functions() {
    let db = TestDb::create();
    store(&db).await.close().await;
    let role = TestRole::create(DEFAULT_RUNTIME_ROLE);
    let mut conn = sqlx::PgConnection::connect(&role.url(&db.url))
        .await
        .unwrap();
    for forbidden in [
        "UPDATE posts SET text = 'x'",
        "DELETE FROM post_events",
        "INSERT INTO reservations (post_id, generation, channel, state, created_at) \
         VALUES (1, 1, 'c', 'reserved', now())",
        "INSERT INTO intents (post_id, generation, idempotency_key, phase, created_at) \
         VALUES (1, 1, 'k', 'sending', now())",
        "UPDATE pauses SET resumed_at = now()",
        "DELETE FROM channel_failures",
        "UPDATE outbox SET delivered_at = now()",
        "TRUNCATE verdicts",
        "SELECT * FROM tokens",
        "SELECT secret_sha256 FROM tokens",
        "SELECT id_sha256 FROM dashboard_sessions",
        "SELECT token_sha256 FROM dashboard_sessions",
        "SELECT secret FROM server_secrets",
        "SELECT * FROM create_keys",
        "SELECT nextval('post_events_id_seq')",
        "CREATE TABLE sneaky (id int)",
        "CREATE FUNCTION sneaky() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "SELECT airlock_insert_outbox('[]', now())",
        "SELECT airlock_insert_pause('*', 'r', 'a', now(), '[]')",
        "SELECT * FROM airlock_quota_decision('c', now(), 1, 1, 1, '{}', NULL, NULL, NULL)",
    ] {
        let refused = sqlx::query(sqlx::AssertSqlSafe(forbidden))
            .execute(&mut conn)
            .await
            .expect_err(forbidden);
        assert_eq!(
            refused
                .as_database_error()
                .and_then(|d| d.code())
                .as_deref(),
            Some("42501"),
            "{forbidden}: {refused}"
        );
    }
    for allowed in [
        "SELECT id, status, text FROM posts",
        "SELECT * FROM post_events",
        "SELECT * FROM reservations",
        "SELECT name, roles, created_at, revoked_at, last_used_at FROM tokens",
        "SELECT created_at, expires_at FROM dashboard_sessions",
        "SELECT airlock_functions_version()",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(allowed))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{allowed}: {e}"));
    }
    conn.close().await.ok();
}
