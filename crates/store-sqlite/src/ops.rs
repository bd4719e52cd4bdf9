//! Dashboard sessions and the server secrets kept in the ledger (see
//! `airlock_store::ops`); export pages and health figures are shared reads
//! (`airlock_store_sql::reads`).

use chrono::{DateTime, Utc};

use airlock_store::{NewSession, Result, Session};
use airlock_store_sql::rows;

use crate::dialect::Lite;
use crate::{SqliteStore, db, ts};

pub(crate) async fn open_session(store: &SqliteStore, session: NewSession) -> Result<()> {
    let mut tx = store.begin_write().await?;
    sqlx::query("DELETE FROM dashboard_sessions WHERE expires_at <= ?")
        .bind(ts(session.now))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    sqlx::query(
        "INSERT INTO dashboard_sessions (id_sha256, token_sha256, created_at, expires_at) \
         VALUES (?, ?, ?, ?)",
    )
    .bind(&session.id_sha256)
    .bind(&session.token_sha256)
    .bind(ts(session.now))
    .bind(ts(session.expires_at))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    sqlx::query(
        "DELETE FROM dashboard_sessions WHERE id_sha256 IN (SELECT id_sha256 FROM \
         dashboard_sessions ORDER BY created_at, id_sha256 \
         LIMIT max(0, (SELECT count(*) FROM dashboard_sessions) - ?))",
    )
    .bind(i64::from(session.max_sessions.max(1)))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

pub(crate) async fn session(store: &SqliteStore, id_sha256: &str) -> Result<Option<Session>> {
    let row = sqlx::query(
        "SELECT token_sha256, created_at, expires_at FROM dashboard_sessions WHERE id_sha256 = ?",
    )
    .bind(id_sha256)
    .fetch_optional(&store.pool)
    .await
    .map_err(db)?;
    row.as_ref().map(rows::session::<Lite>).transpose()
}

pub(crate) async fn end_session(store: &SqliteStore, id_sha256: &str) -> Result<bool> {
    Ok(
        sqlx::query("DELETE FROM dashboard_sessions WHERE id_sha256 = ?")
            .bind(id_sha256)
            .execute(&store.pool)
            .await
            .map_err(db)?
            .rows_affected()
            > 0,
    )
}

pub(crate) async fn live_sessions(
    store: &SqliteStore,
    now: DateTime<Utc>,
) -> Result<Vec<airlock_store::LiveSession>> {
    let rows = sqlx::query(
        "SELECT t.name, s.created_at, s.expires_at FROM dashboard_sessions s \
         JOIN tokens t ON t.secret_sha256 = s.token_sha256 \
         WHERE s.expires_at > ? AND t.revoked_at IS NULL ORDER BY s.created_at, t.name",
    )
    .bind(ts(now))
    .fetch_all(&store.pool)
    .await
    .map_err(db)?;
    rows.iter().map(rows::live_session::<Lite>).collect()
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
