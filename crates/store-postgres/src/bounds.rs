//! What keeps one caller from growing the server's memory or the ledger without bound:
//! lists that carry an excerpt of each text (cut by the database), a count of the live
//! drafts a principal holds, and the server secrets kept in the ledger.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};

use airlock_core::Post;
use airlock_store::{PostFilter, Result};

use crate::rows::{self, POST_COLUMNS};
use crate::{db, posts};

pub(crate) async fn list_excerpts(
    pool: &PgPool,
    filter: &PostFilter,
    excerpt_chars: u32,
) -> Result<Vec<Post>> {
    // left() counts characters: only the excerpt of each text leaves the database.
    let cut = format!(" left(text, {}) AS text,", u64::from(excerpt_chars) + 1);
    let columns = POST_COLUMNS.replacen(" text,", &cut, 1);
    let mut query =
        QueryBuilder::<Postgres>::new(format!("SELECT {columns} FROM posts WHERE TRUE"));
    posts::push_filter(&mut query, filter);
    query
        .build()
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(rows::post)
        .collect()
}

/// The live drafts `actor` created, counted on a pool or inside a transaction.
pub(crate) async fn live_drafts_by<'e>(
    conn: impl sqlx::PgExecutor<'e>,
    actor: &str,
) -> Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM posts WHERE status = 'draft' AND created_by = $1")
        .bind(actor)
        .fetch_one(conn)
        .await
        .map_err(db)
}

pub(crate) async fn server_secret(
    pool: &PgPool,
    name: &str,
    candidate: &str,
    now: DateTime<Utc>,
) -> Result<String> {
    sqlx::query_scalar("SELECT airlock_server_secret($1, $2, $3)")
        .bind(name)
        .bind(candidate)
        .bind(now)
        .fetch_one(pool)
        .await
        .map_err(db)
}
