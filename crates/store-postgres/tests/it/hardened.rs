//! The hardened mode (docs/stores.md#hardened-postgresql): a store opened as a role with
//! only the runtime role runs no DDL, starts only on a current ledger, and cannot write a
//! table or read a secret by hand; the owner's store re-applies stale functions.

use airlock_store_postgres::{DEFAULT_RUNTIME_ROLE, PgStore};
use sqlx::Connection;

use crate::support::{TestDb, TestRole, store};

/// The SQLSTATE `query` was refused with (it must be refused).
async fn refused(
    conn: &mut sqlx::PgConnection,
    query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    what: &str,
) -> String {
    let e = query.execute(conn).await.expect_err(what);
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
        .unwrap_or_else(|| panic!("{what}: {e}"))
}

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
        let query = sqlx::query(sqlx::AssertSqlSafe(forbidden));
        assert_eq!(
            refused(&mut conn, query, forbidden).await,
            "42501",
            "{forbidden}"
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

/// Whoever may create objects in the ledger's schema could define a function or
/// operator that airlock's functions, which run as the owner, would pick. A cluster
/// upgraded from before PostgreSQL 15 keeps CREATE on `public` for PUBLIC, which the
/// runtime role inherits, as it does PUBLIC's table grants: `migrate` takes PUBLIC's grants
/// on airlock's tables back, and `doctor` says "not hardened" while the runtime role or
/// the login role may still create in the schema.
#[tokio::test]
async fn a_schema_open_to_the_runtime_role_is_not_hardened_and_public_table_grants_are_taken_back()
{
    let db = TestDb::create();
    let mut owner_conn = db.conn().await;
    sqlx::query("GRANT CREATE ON SCHEMA public TO PUBLIC")
        .execute(&mut owner_conn)
        .await
        .unwrap();
    let owner = store(&db).await;
    sqlx::query("GRANT SELECT ON tokens, server_secrets TO PUBLIC")
        .execute(&mut owner_conn)
        .await
        .unwrap();
    owner.migrate().await.unwrap();

    let role = TestRole::create(DEFAULT_RUNTIME_ROLE);
    let mut conn = sqlx::PgConnection::connect(&role.url(&db.url))
        .await
        .unwrap();
    for secret in [
        "SELECT secret_sha256 FROM tokens",
        "SELECT secret FROM server_secrets",
    ] {
        let query = sqlx::query(sqlx::AssertSqlSafe(secret));
        assert_eq!(refused(&mut conn, query, secret).await, "42501", "{secret}");
    }
    let runtime = PgStore::connect(&role.url(&db.url)).await.unwrap();
    let mode = runtime.mode().await.unwrap();
    assert!(mode.schema_open, "{mode:?}");
    assert!(
        mode.describe().starts_with("not hardened"),
        "{}",
        mode.describe()
    );

    // The DBA closes the schema: what the review found airlock's functions would have
    // picked over pg_catalog's can no longer be made, and doctor says hardened.
    sqlx::query("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        .execute(&mut owner_conn)
        .await
        .unwrap();
    for shadow in [
        "CREATE FUNCTION public.array_remove(a text[], b text) RETURNS text[] \
         LANGUAGE sql AS 'SELECT a'",
        "CREATE OPERATOR public.=== (LEFTARG = text, RIGHTARG = text, FUNCTION = texteq)",
    ] {
        let query = sqlx::query(sqlx::AssertSqlSafe(shadow));
        assert_eq!(refused(&mut conn, query, shadow).await, "42501", "{shadow}");
    }
    let mode = runtime.mode().await.unwrap();
    assert!(!mode.schema_open, "{mode:?}");
    assert!(
        mode.describe().starts_with("hardened"),
        "{}",
        mode.describe()
    );

    // CREATE granted to the login role itself is as open.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "GRANT CREATE ON SCHEMA public TO {}",
        role.name
    )))
    .execute(&mut owner_conn)
    .await
    .unwrap();
    let mode = runtime.mode().await.unwrap();
    assert!(mode.schema_open, "{mode:?}");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "REVOKE CREATE ON SCHEMA public FROM {}",
        role.name
    )))
    .execute(&mut owner_conn)
    .await
    .unwrap();
    runtime.close().await;
    owner.close().await;
    conn.close().await.ok();
    owner_conn.close().await.ok();
}

/// The runtime role changes a post only through its named changes
/// (`airlock_change_*`): the function they share, which applies any combination, is not
/// its to call; a named change refuses what its change cannot be (an unknown verdict
/// effect, content under a hash that is not a SHA-256, a verdict without the content
/// its critic read, a part that is out without the next part's lease) and a change
/// without its guard (a NULL version or generation
/// compares as neither equal nor different, so it would skip fencing); and nothing
/// changes.
#[tokio::test]
async fn the_runtime_role_changes_posts_only_through_named_changes() {
    let db = TestDb::create();
    let owner = store(&db).await;
    let draft = airlock_store_tests::fixture::draft(
        &owner,
        "threads-main",
        "A draft.",
        airlock_store_tests::fixture::t0(),
    )
    .await;
    let role = TestRole::create(DEFAULT_RUNTIME_ROLE);
    let mut conn = sqlx::PgConnection::connect(&role.url(&db.url))
        .await
        .unwrap();
    let query = sqlx::query(
        "SELECT * FROM airlock_apply_change($1, 'version', $2, 'approved', 'token:critic', \
         NULL, now(), '{}', NULL, NULL, false, NULL, NULL, NULL, NULL, false, NULL, NULL, '[]', \
         NULL, '{draft}', NULL, NULL, NULL)",
    )
    .bind(draft.id.0)
    .bind(draft.version);
    assert_eq!(
        refused(&mut conn, query, "the shared apply function").await,
        "42501"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_verdict($1, 'token:critic', now(), '[]', $2, \
         jsonb_build_object('verdict', 'pass', 'content_hash', $3::text), 'approve quietly', \
         NULL, 'quietly', NULL, false, false, NULL)",
    )
    .bind(draft.id.0)
    .bind(draft.version)
    .bind(draft.content_hash.as_str());
    assert_eq!(
        refused(&mut conn, query, "an unknown verdict effect").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_verdict($1, 'token:critic', now(), '[]', $2, NULL, \
         'approve', 'token:critic', 'approved', NULL, false, false, NULL)",
    )
    .bind(draft.id.0)
    .bind(draft.version);
    assert_eq!(
        refused(&mut conn, query, "an approval without a verdict").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_edited($1, 'token:writer', now(), '[]', NULL, NULL, \
         now() + interval '1 day', 'scheduled_at', NULL)",
    )
    .bind(draft.id.0);
    assert_eq!(
        refused(&mut conn, query, "an edit without the version read").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_published($1, 'dispatcher', now(), '[]', NULL, 1, now(), \
         'p1', NULL, NULL, 'published', NULL, NULL)",
    )
    .bind(draft.id.0);
    assert_eq!(
        refused(&mut conn, query, "an outcome without its generation").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_part_published($1, 'dispatcher', now(), '[]', NULL, 1, \
         'p1', NULL, NULL, now() + interval '15 minutes', 'part 1 published')",
    )
    .bind(draft.id.0);
    assert_eq!(
        refused(&mut conn, query, "a part's outcome without its generation").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_part_published($1, 'dispatcher', now(), '[]', $2, 1, \
         'p1', NULL, NULL, NULL, 'part 1 published')",
    )
    .bind(draft.id.0)
    .bind(draft.generation);
    assert_eq!(
        refused(&mut conn, query, "a part's outcome without the next lease").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_part_settled($1, 'cli', now(), '[]', NULL, 1, 'p1', \
         NULL, 'part 1 confirmed')",
    )
    .bind(draft.id.0);
    assert_eq!(
        refused(&mut conn, query, "a part settled without the version read").await,
        "AL020"
    );
    let query = sqlx::query(
        "SELECT * FROM airlock_change_edited($1, 'token:writer', now(), '[]', $2, \
         '{\"title\": null, \"text\": \"x\", \"media\": [], \"link\": null, \
           \"content_hash\": \"not a hash\", \"text_key\": \"x\"}', NULL, 'text', NULL)",
    )
    .bind(draft.id.0)
    .bind(draft.version);
    assert_eq!(
        refused(&mut conn, query, "content under a bad hash").await,
        "AL020"
    );
    use airlock_store::Reads;
    assert_eq!(owner.get_post(draft.id).await.unwrap(), draft);
    owner.close().await;
    conn.close().await.ok();
}

/// Read-backs written a batch at a time keep what one at a time kept: a record of a post
/// still `posted` that names an event only the store writes refuses the whole batch, and
/// a post no longer `posted` is passed over, whatever its records say. Two read-backs of
/// one post write both events; the first marks it verified.
#[tokio::test]
async fn read_backs_never_write_the_stores_own_events() {
    use airlock_core::PostStatus;
    use airlock_store::Store;
    use airlock_store_tests::fixture::{draft, in_status, mins};
    use serde_json::json;

    let db = TestDb::create();
    let store = store(&db).await;
    let s: &dyn Store = &store;
    let posted = in_status(s, PostStatus::Posted, "alpha").await;
    let draft = draft(s, "alpha", "a draft", mins(-1)).await;
    let record = |id: airlock_core::PostId, at: i64, kind: &str| {
        json!({"id": id.0, "actor": "dispatcher:w", "at": mins(at), "ok": true,
               "permalink": format!("https://example.com/{at}"), "kind": kind,
               "note": null, "notify": []})
    };
    let call = |records| sqlx::query("SELECT airlock_record_verifications($1)").bind(records);
    let events = |id| async move { s.post_detail(id).await.unwrap().events.len() };
    let mut conn = db.conn().await;

    call(json!([record(draft.id, 30, "status")]))
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(s.get_post(draft.id).await.unwrap(), draft);

    let before = events(posted.id).await;
    let batch = json!([
        record(posted.id, 30, "verified"),
        record(posted.id, 31, "status")
    ]);
    assert_eq!(
        refused(&mut conn, call(batch), "a status event by a read-back").await,
        "AL020"
    );
    assert_eq!(s.get_post(posted.id).await.unwrap().verified_at, None);
    assert_eq!(events(posted.id).await, before);

    let batch = json!([
        record(posted.id, 30, "verified"),
        record(posted.id, 31, "verified")
    ]);
    call(batch).execute(&mut conn).await.unwrap();
    let now = s.get_post(posted.id).await.unwrap();
    assert_eq!(now.verified_at, Some(mins(30)));
    assert_eq!(
        now.permalink,
        posted.permalink.or(Some("https://example.com/30".into()))
    );
    assert_eq!(events(posted.id).await, before + 2);
}
