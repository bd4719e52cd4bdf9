//! Dashboard sessions and the server secrets kept in the ledger (see
//! `airlock_store::ops`); export pages and health figures are shared reads
//! (`airlock_store_sql::reads`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use airlock_store::{NewSession, Result};

use crate::{SqliteStore, db, ts};

#[async_trait]
impl airlock_store::Sessions for SqliteStore {
    async fn open_session(&self, session: NewSession) -> Result<()> {
        let mut tx = self.begin_write().await?;
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

    async fn end_session(&self, id_sha256: &str) -> Result<bool> {
        Ok(
            sqlx::query("DELETE FROM dashboard_sessions WHERE id_sha256 = ?")
                .bind(id_sha256)
                .execute(&self.pool)
                .await
                .map_err(db)?
                .rows_affected()
                > 0,
        )
    }

    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String> {
        let mut tx = self.begin_write().await?;
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
}
