//! Recomputing the duplicate keys (`posts.text_key`) of a ledger written with an older
//! [`TEXT_KEY_VERSION`] (migration `0011_text_key_version`).

use airlock_core::review::{TEXT_KEY_VERSION, text_key};
use airlock_store::Result;

use crate::{SqliteStore, db};

/// Posts read at a time.
const BATCH: i64 = 500;

impl SqliteStore {
    /// Recomputes every stored key when the ledger's recorded key version is below
    /// [`TEXT_KEY_VERSION`], then records it, in one write transaction; nothing when it
    /// is current. Returns how many keys changed.
    pub(crate) async fn rekey_texts(&self) -> Result<u64> {
        let version = "SELECT version FROM text_key_version";
        // Every open comes here: a current ledger is only read, without the write lock.
        let current: i64 = sqlx::query_scalar(version)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        if current >= TEXT_KEY_VERSION {
            return Ok(0);
        }
        let mut tx = self.begin_write().await?;
        let version: i64 = sqlx::query_scalar(version)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        if version >= TEXT_KEY_VERSION {
            return Ok(0);
        }
        let mut changed = 0;
        let mut after = 0_i64;
        loop {
            let rows: Vec<(i64, String, String)> = sqlx::query_as(
                "SELECT id, text, text_key FROM posts \
                 WHERE text_key IS NOT NULL AND id > ?1 ORDER BY id LIMIT ?2",
            )
            .bind(after)
            .bind(BATCH)
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
            let Some(&(last, _, _)) = rows.last() else {
                break;
            };
            after = last;
            for (id, text, old) in rows {
                let key = text_key(&text);
                if key != old {
                    sqlx::query("UPDATE posts SET text_key = ?1 WHERE id = ?2")
                        .bind(&key)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                    changed += 1;
                }
            }
        }
        sqlx::query("UPDATE text_key_version SET version = ?1")
            .bind(TEXT_KEY_VERSION)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        if changed > 0 {
            tracing::info!(
                changed,
                version = TEXT_KEY_VERSION,
                "recomputed the duplicate keys of earlier posts"
            );
        }
        Ok(changed)
    }
}
