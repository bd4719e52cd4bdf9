//! The PostgreSQL side of the shared reads (`airlock_store_sql`): native `timestamptz`,
//! `boolean`, `jsonb` and `text[]` columns, lists bound as arrays (`= ANY($n)`), and read
//! snapshots in `REPEATABLE READ READ ONLY` transactions.

use std::future::Future;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, PgConnection, Postgres, Row};

use airlock_store::{QuotaRows, Result};
use airlock_store_sql::{Arg, Dialect, Pool, Sql, column_error};

use crate::{db, publish};

/// The PostgreSQL dialect.
pub(crate) struct Pg;

/// One column of a row a function returned, with decode failures reported as a corrupt
/// row.
pub(crate) fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(column).map_err(column_error)
}

fn query(sql: &Sql) -> sqlx::query::Query<'_, Postgres, PgArguments> {
    sql.args()
        .iter()
        .fold(sqlx::query(AssertSqlSafe(sql.text())), |q, arg| match arg {
            Arg::Int(v) => q.bind(*v),
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Time(v) => q.bind(*v),
            Arg::Bool(v) => q.bind(*v),
            Arg::Ints(v) => q.bind(v.clone()),
            Arg::Texts(v) => q.bind(v.clone()),
        })
}

impl Dialect for Pg {
    type Db = Postgres;

    const LATERAL: bool = true;

    const MIGRATIONS_TABLE: &'static str =
        "SELECT count(*) AS n FROM pg_class WHERE oid = to_regclass('_sqlx_migrations')";

    const SESSION: &'static str = "SELECT * FROM airlock_session($1)";

    const LIVE_SESSIONS: &'static str = "SELECT * FROM airlock_live_sessions($1)";

    fn posts_by(_index: &str) -> String {
        // Autovacuum keeps statistics; the planner picks the partial index itself.
        "posts".into()
    }

    fn in_list(column: &str, param: &str) -> String {
        format!("{column} = ANY({param})")
    }

    async fn fetch_all(conn: &mut PgConnection, sql: &Sql) -> Result<Vec<PgRow>> {
        query(sql).fetch_all(conn).await.map_err(db)
    }

    async fn snapshot(pool: &Pool<Self>) -> Result<sqlx::Transaction<'static, Postgres>> {
        pool.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(db)
    }

    fn live_reservations<'a>(
        conn: &'a mut PgConnection,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<QuotaRows>> + Send + 'a {
        publish::live_reservations(conn, since, now)
    }

    fn quota_count_drift<'a>(
        conn: &'a mut PgConnection,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        publish::quota_hours_drift(conn, since)
    }

    fn text(row: &PgRow, column: &str) -> Result<Option<String>> {
        get(row, column)
    }

    fn int(row: &PgRow, column: &str) -> Result<Option<i64>> {
        get(row, column)
    }

    fn flag(row: &PgRow, column: &str) -> Result<bool> {
        get(row, column)
    }

    fn time(row: &PgRow, column: &str) -> Result<Option<DateTime<Utc>>> {
        get(row, column)
    }

    fn json(row: &PgRow, column: &str) -> Result<Option<serde_json::Value>> {
        Ok(get::<Option<Json<serde_json::Value>>>(row, column)?.map(|j| j.0))
    }

    fn texts(row: &PgRow, column: &str) -> Result<Vec<String>> {
        get(row, column)
    }

    fn bytes(row: &PgRow, column: &str) -> Result<Vec<u8>> {
        get(row, column)
    }
}
