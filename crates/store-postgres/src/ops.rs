//! Dashboard sessions and the server secrets kept in the ledger, through airlock's
//! functions (the runtime role reads no session hash and no secret); export pages and
//! health figures are shared reads (`airlock_store_sql::reads`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use airlock_store::{NewSession, Result};

use crate::{PgStore, db};

#[async_trait]
impl airlock_store::Sessions for PgStore {
    async fn open_session(&self, session: NewSession) -> Result<()> {
        sqlx::query("SELECT airlock_open_session($1, $2, $3, $4, $5)")
            .bind(&session.id_sha256)
            .bind(&session.token_sha256)
            .bind(session.now)
            .bind(session.expires_at)
            .bind(i64::from(session.max_sessions.max(1)))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn end_session(&self, id_sha256: &str) -> Result<bool> {
        sqlx::query_scalar("SELECT airlock_end_session($1)")
            .bind(id_sha256)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    async fn server_secret(
        &self,
        name: &str,
        candidate: &str,
        now: DateTime<Utc>,
    ) -> Result<String> {
        sqlx::query_scalar("SELECT airlock_server_secret($1, $2, $3)")
            .bind(name)
            .bind(candidate)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }
}
