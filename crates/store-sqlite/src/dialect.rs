//! The SQLite side of the shared reads (`airlock_store_sql`): times stored as canonical
//! RFC 3339 text (compared as text), booleans as 0/1, JSON and lists as text (lists read
//! back with `json_each`).

use std::future::Future;

use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{AssertSqlSafe, Row, Sqlite, SqliteConnection};

use airlock_store::{QuotaRows, Result};
use airlock_store_sql::{Arg, Dialect, Pool, Sql, column_error, corrupt};

use crate::{db, parse_ts, publish, ts};

/// The SQLite dialect.
pub(crate) struct Lite;

fn query(sql: &Sql) -> sqlx::query::Query<'_, Sqlite, SqliteArguments> {
    sql.args()
        .iter()
        .fold(sqlx::query(AssertSqlSafe(sql.text())), |q, arg| match arg {
            Arg::Int(v) => q.bind(*v),
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Time(v) => q.bind(v.map(ts)),
            Arg::Bool(v) => q.bind(*v),
            Arg::Ints(v) => q.bind(serde_json::json!(v).to_string()),
            Arg::Texts(v) => q.bind(serde_json::json!(v).to_string()),
        })
}

impl Dialect for Lite {
    type Db = Sqlite;

    const LATERAL: bool = false;

    const MIGRATIONS_TABLE: &'static str = "SELECT count(*) AS n FROM sqlite_master \
        WHERE type = 'table' AND name = '_sqlx_migrations'";

    const SESSION: &'static str = "SELECT token_sha256, created_at, expires_at \
        FROM dashboard_sessions WHERE id_sha256 = $1";

    const LIVE_SESSIONS: &'static str = "SELECT t.name, s.created_at, s.expires_at \
        FROM dashboard_sessions s JOIN tokens t ON t.secret_sha256 = s.token_sha256 \
        WHERE s.expires_at > $1 AND t.revoked_at IS NULL ORDER BY s.created_at, t.name";

    fn posts_by(index: &str) -> String {
        // Without `ANALYZE` statistics (airlock never runs it) SQLite reads a million
        // posted posts through `posts_channel` instead of the backlog's partial index.
        format!("posts INDEXED BY {index}")
    }

    fn in_list(column: &str, param: &str) -> String {
        format!("{column} IN (SELECT value FROM json_each({param}))")
    }

    async fn fetch_all(conn: &mut SqliteConnection, sql: &Sql) -> Result<Vec<SqliteRow>> {
        query(sql).fetch_all(conn).await.map_err(db)
    }

    async fn snapshot(pool: &Pool<Self>) -> Result<sqlx::Transaction<'static, Sqlite>> {
        // A deferred transaction: in WAL mode its reads all see the snapshot of its first.
        pool.begin().await.map_err(db)
    }

    fn live_reservations<'a>(
        conn: &'a mut SqliteConnection,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<QuotaRows>> + Send + 'a {
        publish::live_reservations(conn, since, now)
    }

    fn quota_count_drift<'a>(
        conn: &'a mut SqliteConnection,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        publish::quota_hours_drift(conn, since)
    }

    fn text(row: &SqliteRow, column: &str) -> Result<Option<String>> {
        row.try_get(column).map_err(column_error)
    }

    fn int(row: &SqliteRow, column: &str) -> Result<Option<i64>> {
        row.try_get(column).map_err(column_error)
    }

    fn flag(row: &SqliteRow, column: &str) -> Result<bool> {
        Ok(row.try_get::<i64, _>(column).map_err(column_error)? != 0)
    }

    fn time(row: &SqliteRow, column: &str) -> Result<Option<DateTime<Utc>>> {
        Self::text(row, column)?
            .map(|t| parse_ts(&t).map_err(|t| corrupt(format!("{column} {t:?} is not a time"))))
            .transpose()
    }

    fn json(row: &SqliteRow, column: &str) -> Result<Option<serde_json::Value>> {
        Self::text(row, column)?
            .map(|t| serde_json::from_str(&t).map_err(|e| corrupt(format!("{column}: {e}"))))
            .transpose()
    }

    fn bytes(row: &SqliteRow, column: &str) -> Result<Vec<u8>> {
        row.try_get(column).map_err(column_error)
    }

    fn texts(row: &SqliteRow, column: &str) -> Result<Vec<String>> {
        let list = Self::text(row, column)?.unwrap_or_else(|| "[]".into());
        serde_json::from_str(&list).map_err(|e| corrupt(format!("{column}: {e}")))
    }
}
