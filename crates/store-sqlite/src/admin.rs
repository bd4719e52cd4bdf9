//! Pauses, the notification outbox, API tokens, and the durability settings (their reads
//! are shared: `airlock_store_sql::reads`).

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use sqlx::{AssertSqlSafe, SqliteConnection};

use airlock_store::{
    NewNotification, NewToken, Notification, PauseScope, Result, StoreError, TokenRecord,
};
use airlock_store_sql::rows::{self, TOKEN_COLUMNS};

use crate::dialect::Lite;
use crate::{SqliteStore, db, ts};

/// Inserts a pause unless the scope is already paused; queues `notify` only for a new pause.
pub(crate) async fn insert_pause(
    conn: &mut SqliteConnection,
    scope: &PauseScope,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
    notify: &[NewNotification],
) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT OR IGNORE INTO pauses (scope, reason, actor, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(scope.as_key())
    .bind(reason)
    .bind(actor)
    .bind(ts(now))
    .execute(&mut *conn)
    .await
    .map_err(db)?
    .rows_affected()
        > 0;
    // A pause a post's unknown outcome set yields to any later one, which takes it over:
    // proving that post's outcome then never lifts it (UNKNOWN_PAUSE_MARK).
    let taken_over = !inserted
        && sqlx::query(
            "UPDATE pauses SET reason = ?, actor = ? \
             WHERE scope = ? AND resumed_at IS NULL AND instr(reason, ?) > 0",
        )
        .bind(reason)
        .bind(actor)
        .bind(scope.as_key())
        .bind(airlock_store::UNKNOWN_PAUSE_MARK)
        .execute(&mut *conn)
        .await
        .map_err(db)?
        .rows_affected()
            > 0;
    if inserted || taken_over {
        insert_outbox(conn, notify, now).await?;
    }
    Ok(inserted || taken_over)
}

pub(crate) async fn insert_outbox(
    conn: &mut SqliteConnection,
    notify: &[NewNotification],
    now: DateTime<Utc>,
) -> Result<()> {
    for note in notify {
        sqlx::query(
            "INSERT INTO outbox (sink, event, post_id, payload, created_at, next_attempt_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&note.sink)
        .bind(&note.event)
        .bind(note.post_id.map(|id| id.0))
        .bind(note.payload.to_string())
        .bind(ts(now))
        .bind(ts(now))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

#[async_trait]
impl airlock_store::Admin for SqliteStore {
    /// Store::pause: a new pause and its notifications, or nothing when the scope is paused
    /// already.
    async fn pause(
        &self,
        scope: &PauseScope,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
        notify: Vec<NewNotification>,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let created = insert_pause(&mut tx, scope, reason, actor, now, &notify).await?;
        tx.commit().await.map_err(db)?;
        Ok(created)
    }

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
        let mut tx = self.begin_write().await?;
        let lifted = sqlx::query(
            "UPDATE pauses SET resumed_at = ?, resumed_by = ? WHERE scope = ? AND resumed_at IS NULL \
             AND substr(reason, 1, length(?)) = ?",
        )
        .bind(ts(now))
        .bind(actor)
        .bind(scope.as_key())
        .bind(reason_prefix)
        .bind(reason_prefix)
        .execute(&mut *tx)
        .await
        .map_err(db)?
        .rows_affected()
            > 0;
        if lifted {
            if let PauseScope::Channel(channel) = scope {
                sqlx::query("DELETE FROM channel_failures WHERE channel = ?")
                    .bind(channel.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
            }
            insert_outbox(&mut tx, &notify, now).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(lifted)
    }

    async fn claim_notifications(
        &self,
        now: DateTime<Utc>,
        worker: &str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Notification>> {
        let mut tx = self.begin_write().await?;
        let rows = sqlx::query(
            "UPDATE outbox SET locked_by = ?, locked_until = ? WHERE id IN ( \
               SELECT id FROM outbox WHERE delivered_at IS NULL AND abandoned_at IS NULL \
               AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until < ?) \
               ORDER BY id LIMIT ?) \
             RETURNING id, sink, event, post_id, payload, attempts, created_at",
        )
        .bind(worker)
        .bind(ts(lease_until))
        .bind(ts(now))
        .bind(ts(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        rows::notifications::<Lite>(&rows)
    }

    /// Marks a notification delivered while `worker` still holds it.
    async fn notification_delivered(
        &self,
        id: i64,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET delivered_at = ?, locked_by = NULL, locked_until = NULL, last_error = NULL \
             WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
        )
        .bind(ts(now))
        .bind(id)
        .bind(worker)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() > 0)
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
        let query = match retry_at {
            Some(at) => sqlx::query(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, \
                 locked_by = NULL, locked_until = NULL \
                 WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
            )
            .bind(error)
            .bind(ts(at)),
            None => sqlx::query(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, abandoned_at = ?, \
                 locked_by = NULL, locked_until = NULL \
                 WHERE id = ? AND locked_by = ? AND delivered_at IS NULL AND abandoned_at IS NULL",
            )
            .bind(error)
            .bind(ts(now)),
        };
        let done = query
            .bind(id)
            .bind(worker)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(done.rows_affected() > 0)
    }

    async fn create_token(&self, token: NewToken) -> Result<()> {
        let result = sqlx::query(
            "INSERT INTO tokens (name, roles, secret_sha256, created_at) VALUES (?, ?, ?, ?)",
        )
        .bind(&token.name)
        .bind(token.roles.to_list())
        .bind(&token.secret_sha256)
        .bind(ts(token.now))
        .execute(&self.pool)
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(StoreError::Duplicate(
                format!("a token named {:?}", token.name),
            )),
            Err(e) => Err(db(e)),
        }
    }

    async fn revoke_token(
        &self,
        name: &str,
        now: DateTime<Utc>,
        keep_operator: bool,
    ) -> Result<bool> {
        // One write transaction: SQLite has one writer, so the count below holds.
        let mut tx = self.begin_write().await?;
        if keep_operator {
            let operators: Vec<String> = sqlx::query_scalar(
                "SELECT name FROM tokens WHERE revoked_at IS NULL \
                 AND ',' || roles || ',' LIKE '%,operator,%'",
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
            if operators == [name] {
                return Err(StoreError::LastOperator(name.to_owned()));
            }
        }
        let revoked =
            sqlx::query("UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL")
                .bind(ts(now))
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(db)?
                .rows_affected()
                > 0;
        tx.commit().await.map_err(db)?;
        Ok(revoked)
    }

    async fn authenticate(
        &self,
        secret_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TokenRecord>> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {TOKEN_COLUMNS} FROM tokens WHERE secret_sha256 = ? AND revoked_at IS NULL"
        )))
        .bind(secret_sha256)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(record) = row.as_ref().map(rows::token::<Lite>).transpose()? else {
            return Ok(None);
        };
        // Note use at most once a minute: a write per request would serialize readers behind the write lock.
        if record
            .last_used_at
            .is_none_or(|at| now - at > Duration::minutes(1))
        {
            sqlx::query("UPDATE tokens SET last_used_at = ? WHERE name = ?")
                .bind(ts(now))
                .bind(&record.name)
                .execute(&self.pool)
                .await
                .map_err(db)?;
        }
        Ok(Some(record))
    }

    /// The connection settings airlock opens SQLite with, read back: WAL and `synchronous =
    /// FULL` (2), so a committed intent survives a power cut.
    async fn durability_warnings(&self) -> Result<Vec<String>> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
        let mut warnings = Vec::new();
        if synchronous < 2 {
            warnings.push(format!(
                "SQLite synchronous is {synchronous}, not FULL (2): a commit may not survive a power cut"
            ));
        }
        if !journal.eq_ignore_ascii_case("wal") {
            warnings.push(format!(
                "SQLite journal_mode is {journal}, not wal: readers and writers block each other"
            ));
        }
        Ok(warnings)
    }
}
