//! What keeps one caller from growing the server's memory or the ledger without bound:
//! lists that carry an excerpt of each text (cut by the database), a count of the live
//! drafts a principal holds, and the server secrets kept in the ledger.

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite, SqlitePool};

use airlock_core::Post;
use airlock_store::{PostFilter, Result};

use crate::rows::{self, POST_COLUMNS};
use crate::{SqliteStore, db, posts, ts};

pub(crate) async fn list_excerpts(
    pool: &SqlitePool,
    filter: &PostFilter,
    excerpt_chars: u32,
) -> Result<Vec<Post>> {
    // substr counts characters: only the excerpt of each text leaves the database.
    let cut = format!(
        " substr(text, 1, {}) AS text,",
        u64::from(excerpt_chars) + 1
    );
    let columns = POST_COLUMNS.replacen(" text,", &cut, 1);
    let mut query = QueryBuilder::<Sqlite>::new(format!("SELECT {columns} FROM posts WHERE 1 = 1"));
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
    conn: impl sqlx::SqliteExecutor<'e>,
    actor: &str,
) -> Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM posts WHERE status = 'draft' AND created_by = ?")
        .bind(actor)
        .fetch_one(conn)
        .await
        .map_err(db)
}

pub(crate) async fn server_secret(
    store: &SqliteStore,
    name: &str,
    candidate: &str,
    now: DateTime<Utc>,
) -> Result<String> {
    let mut tx = store.begin_write().await?;
    sqlx::query(
        "INSERT INTO server_secrets (name, secret, created_at) VALUES (?, ?, ?) \
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate)
    .bind(ts(now))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    let secret: String = sqlx::query_scalar("SELECT secret FROM server_secrets WHERE name = ?")
        .bind(name)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(secret)
}
