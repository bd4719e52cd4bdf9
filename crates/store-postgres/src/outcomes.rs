//! Outcomes in batches ([`crate::batch`]): the publishes a process records at the same
//! time, in one call of `airlock_change_published_batch`. Any other change is written
//! alone, with its own `airlock_change_<name>`, and so is every publish the batch
//! answers `single`.

use airlock_core::Post;
use airlock_store::{Change, PostChange, Result};
use airlock_store_sql::rows;
use serde_json::Value;
use sqlx::types::Json;

use crate::batch::{Failure, Kind, Made, Queue, answers};
use crate::dialect::Pg;
use crate::{PgStore, notify_json};

/// Publishes, as a kind of write that goes in batches.
pub(crate) struct Outcomes;

/// Whether `change` is a publish a batch writes: counted by its own claim, without a
/// pause.
pub(crate) fn batched(change: &PostChange) -> bool {
    matches!(
        change.change,
        Change::Published {
            sent_by: None,
            pause: None,
            ..
        }
    )
}

/// A batched publish's fields.
struct Fields<'a> {
    generation: i64,
    part: u32,
    posted_at: chrono::DateTime<chrono::Utc>,
    platform_post_id: Option<&'a str>,
    permalink: Option<&'a str>,
    note: &'a str,
    flag: Option<&'a str>,
}

fn fields(change: &PostChange) -> Fields<'_> {
    match &change.change {
        Change::Published {
            generation,
            part,
            posted_at,
            platform_post_id,
            permalink,
            note,
            flag,
            ..
        } => Fields {
            generation: *generation,
            part: *part,
            posted_at: *posted_at,
            platform_post_id: platform_post_id.as_deref(),
            permalink: permalink.as_deref(),
            note,
            flag: flag.as_deref(),
        },
        other => unreachable!("only publishes are batched, not {}", other.name()),
    }
}

impl Kind for Outcomes {
    type Write = PostChange;
    type Answer = Post;
    /// Enough that each batch carries its share of the fixed cost; the claims' batches
    /// bound how many publishes are out at once anyway.
    const MAX: usize = 32;

    fn queue(store: &PgStore) -> &Queue<Self> {
        &store.outcomes
    }

    async fn together(store: &PgStore, changes: &[PostChange]) -> Made<Post> {
        let each: Vec<Fields> = changes.iter().map(fields).collect();
        let notify: Vec<Value> = changes.iter().map(|c| notify_json(&c.notify).0).collect();
        let rows = sqlx::query(
            "SELECT r.request, r.outcome, (r.post).* \
             FROM airlock_change_published_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) r",
        )
        .bind(changes.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.actor.as_str()).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.now).collect::<Vec<_>>())
        .bind(Json(notify))
        .bind(each.iter().map(|f| f.generation).collect::<Vec<_>>())
        .bind(each.iter().map(|f| i64::from(f.part)).collect::<Vec<_>>())
        .bind(each.iter().map(|f| f.posted_at).collect::<Vec<_>>())
        .bind(each.iter().map(|f| f.platform_post_id).collect::<Vec<_>>())
        .bind(each.iter().map(|f| f.permalink).collect::<Vec<_>>())
        .bind(each.iter().map(|f| f.note).collect::<Vec<_>>())
        .bind(each.iter().map(|f| f.flag).collect::<Vec<_>>())
        .fetch_all(&store.pool)
        .await
        .map_err(Failure::from)?;
        Ok(answers(&rows, changes.len(), |row, outcome| {
            (outcome == "updated").then(|| rows::post::<Pg>(row))
        })?)
    }

    async fn alone(store: &PgStore, change: PostChange) -> Result<Post> {
        store.change_alone(change).await
    }
}
