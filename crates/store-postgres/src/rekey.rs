//! Recomputing the duplicate keys (`posts.text_key`) of a ledger written with an older
//! [`TEXT_KEY_VERSION`] (migration `0011_text_key_version`), as the ledger's owner.

use airlock_core::review::{TEXT_KEY_VERSION, text_key};
use airlock_store::Result;
use sqlx::PgPool;

use crate::db;

/// Posts read at a time.
const BATCH: i64 = 500;

/// Recomputes every stored key when the ledger's recorded key version is below
/// [`TEXT_KEY_VERSION`], then records it, in one transaction; nothing when it is
/// current. The version's row is locked first, so two owners migrating at once rekey
/// once. Returns how many keys changed.
pub(crate) async fn rekey_texts(pool: &PgPool) -> Result<u64> {
    let mut tx = pool.begin().await.map_err(db)?;
    let version: i64 = sqlx::query_scalar("SELECT version FROM text_key_version FOR UPDATE")
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
             WHERE text_key IS NOT NULL AND id > $1 ORDER BY id LIMIT $2",
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
        let (ids, keys): (Vec<i64>, Vec<String>) = rows
            .into_iter()
            .filter_map(|(id, text, old)| {
                let key = text_key(&text);
                (key != old).then_some((id, key))
            })
            .unzip();
        if ids.is_empty() {
            continue;
        }
        let updated = sqlx::query(
            "UPDATE posts SET text_key = k.key \
             FROM unnest($1::bigint[], $2::text[]) AS k(id, key) WHERE posts.id = k.id",
        )
        .bind(&ids)
        .bind(&keys)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        changed += updated.rows_affected();
    }
    sqlx::query("UPDATE text_key_version SET version = $1")
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
