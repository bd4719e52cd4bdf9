//! The guarded path keeps its plans (issue 28). PostgreSQL plans a prepared statement
//! for its parameters' values (a custom plan) five times, then keeps one generic plan
//! unless the custom ones look cheaper. A statement whose custom plans always look
//! cheaper is planned again on every call: a profile of 4 workers publishing found a
//! tenth of PostgreSQL's time in the planner, most of it for the look at the queue and
//! the quota's bound on each local day.

use airlock_store::Reads;
use airlock_store_postgres::PgStore;
use airlock_store_tests::fixture::{ch, t0};

use crate::support::TestDb;

/// How often the statements of this connection whose text contains `marker` were
/// planned generically and for their values.
async fn plans(store: &PgStore, marker: &str) -> (i64, i64) {
    sqlx::query_as(
        "SELECT COALESCE(sum(generic_plans), 0)::bigint, COALESCE(sum(custom_plans), 0)::bigint \
         FROM pg_prepared_statements WHERE strpos(statement, $1) > 0",
    )
    .bind(marker)
    .fetch_one(store.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn a_look_at_a_long_queue_is_planned_once() {
    let db = TestDb::create();
    // One connection, so that the prepared statements read are the looks'.
    let store = crate::support::one_connection(&db).await;
    let pool = store.pool();
    // A long queue the planner knows of: 2,000 posts waiting until tomorrow.
    crate::waiting::queue(pool, "alpha", 2_000, t0() + chrono::Duration::days(1), None).await;
    sqlx::query("ANALYZE posts").execute(pool).await.unwrap();
    let looks = 20;
    for i in 0..looks {
        // As the workers look: at a moving time.
        let now = t0() + chrono::Duration::seconds(i);
        store
            .due_posts(&[ch("alpha"), ch("beta")], &[ch("beta")], now, 4)
            .await
            .unwrap();
    }
    let (generic, custom) = plans(&store, "CROSS JOIN LATERAL").await;
    assert_eq!(generic + custom, looks, "every look ran the one statement");
    assert!(
        custom <= 5,
        "the look was planned for its values {custom} times in {looks}"
    );
}

/// The days' bound of a quick quota decision keeps generic plans: a plan for the values
/// knows how many days `generate_series` yields and always looks cheaper, so each claim
/// planned it again. (That its generic plan stays bounded is `bounded.rs`'s.)
#[tokio::test]
async fn the_days_bound_keeps_generic_plans() {
    let db = TestDb::create();
    let store = crate::support::store(&db).await;
    let config: Option<Vec<String>> = sqlx::query_scalar(
        "SELECT proconfig FROM pg_proc WHERE proname = 'airlock_quota_days_far' \
         AND pronamespace = current_schema()::regnamespace",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    let config = config.unwrap_or_default();
    assert!(
        config.contains(&"plan_cache_mode=force_generic_plan".to_owned()),
        "airlock_quota_days_far is planned for its values on every claim"
    );
    // A long-lived ledger's generic estimate passes jit_above_cost.
    assert!(
        config.contains(&"jit=off".to_owned()),
        "airlock_quota_days_far may be compiled on every claim: {config:?}"
    );
}
