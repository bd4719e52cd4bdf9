//! Pauses, the notification outbox, API tokens, and the durability settings, through
//! airlock's functions (their reads are shared: `airlock_store_sql::reads`).
//!
//! Outbox rows are leased with `FOR UPDATE SKIP LOCKED`, so deliverers in several
//! processes never hand out the same notification at once. Nothing here touches a
//! post's status.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use airlock_store::{
    NewNotification, NewToken, Notification, PauseScope, Result, StoreError, TokenRecord,
};
use airlock_store_sql::rows;

use crate::dialect::Pg;
use crate::{PgStore, db, is_unique_violation, notify_json};

#[async_trait]
impl airlock_store::Admin for PgStore {
    /// Store::pause: `airlock_pause` (a new pause and its notifications, or nothing when the
    /// scope is paused already).
    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        sqlx::query_scalar("SELECT airlock_pause($1, $2, $3, $4, $5)")
            .bind(scope.as_key())
            .bind(reason)
            .bind(actor)
            .bind(now)
            .bind(notify_json(&notify))
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    /// Store::resume: `airlock_resume_own` with an empty prefix (the pause lifted, a
    /// channel's failures reset, the notifications queued).
    async fn resume(
        &self,
        scope: &PauseScope,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        self.resume_own(scope, "", actor, now, notify).await
    }

    async fn resume_own(
        &self,
        scope: &PauseScope,
        reason_prefix: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        sqlx::query_scalar("SELECT airlock_resume_own($1, $2, $3, $4, $5, $6)")
            .bind(scope.as_key())
            .bind(matches!(scope, PauseScope::Channel(_)))
            .bind(reason_prefix)
            .bind(actor)
            .bind(now)
            .bind(notify_json(&notify))
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>> {
        let rows = sqlx::query("SELECT * FROM airlock_claim_notifications($1, $2, $3, $4)")
            .bind(now)
            .bind(worker)
            .bind(lease_until)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows::notifications::<Pg>(&rows)
    }

    /// Marks a notification delivered while `worker` still holds it.
    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        sqlx::query_scalar("SELECT airlock_notification_delivered($1, $2, $3)")
            .bind(id)
            .bind(worker)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    /// Records a failed delivery while `worker` still holds it.
    async fn notification_failed(
        &self,
        id: i64,
        worker: &str,
        error: &str,
        retry_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        sqlx::query_scalar("SELECT airlock_notification_failed($1, $2, $3, $4, $5)")
            .bind(id)
            .bind(worker)
            .bind(error)
            .bind(retry_at)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    async fn create_token(&self, token: NewToken) -> Result<()> {
        let result = sqlx::query("SELECT airlock_create_token($1, $2, $3, $4)")
            .bind(&token.name)
            .bind(token.roles.to_list())
            .bind(&token.secret_sha256)
            .bind(token.now)
            .execute(&self.pool)
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate(format!(
                "a token named {:?}",
                token.name
            ))),
            Err(e) => Err(db(e)),
        }
    }

    async fn revoke_token(
        &self,
        name: &str,
        now: DateTime<Utc>,
        keep_operator: bool,
    ) -> Result<bool> {
        let outcome: String = sqlx::query_scalar("SELECT airlock_revoke_token($1, $2, $3)")
            .bind(name)
            .bind(now)
            .bind(keep_operator)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        match outcome.as_str() {
            "last_operator" => Err(StoreError::LastOperator(name.to_owned())),
            revoked => Ok(revoked == "revoked"),
        }
    }

    /// Store::authenticate: `airlock_authenticate` (the live token with this hash, its use
    /// noted at most once a minute); the hashes never leave the database.
    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>> {
        let row = sqlx::query("SELECT * FROM airlock_authenticate($1, $2)")
            .bind(secret_sha256)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(rows::token::<Pg>).transpose()
    }

    /// Server settings under which a commit may not survive a crash.
    async fn durability_warnings(&self) -> Result<Vec<String>> {
        let settings: Vec<(String, String)> = sqlx::query_as(
            "SELECT name, setting FROM pg_settings \
             WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut warnings = Vec::new();
        for (name, setting) in settings {
            match (name.as_str(), setting.as_str()) {
                ("fsync", "off") => warnings.push(
                    "PostgreSQL fsync is off: a crash can lose or corrupt any commit, intents included; set fsync = on".to_owned(),
                ),
                ("full_page_writes", "off") => warnings.push(
                    "PostgreSQL full_page_writes is off: a crash can leave torn pages; set full_page_writes = on".to_owned(),
                ),
                ("synchronous_commit", "off") => warnings.push(
                    "PostgreSQL synchronous_commit is off for this role or database: airlock forces it on for intents and outcomes, but approvals, pauses and other writes may be lost in a crash; set it to on".to_owned(),
                ),
                _ => {}
            }
        }
        Ok(warnings)
    }
}
