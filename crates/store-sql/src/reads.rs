//! The ledger's read queries, for both dialects: posts and their timelines, lists and
//! filters, what is due, expired leases and the review queue, pauses, tokens, the
//! outbox's figures, invariants, export pages, health figures, dashboard sessions and
//! the migration status. A function named after a `Store` method is that method; one
//! ending in `_in` reads on a connection the caller holds (a write transaction too).
//!
//! Reads that must agree with each other (a post and its timeline, an export page, the
//! health figures, posts and their intents) run in one [`Dialect::snapshot`].

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use airlock_core::{
    ChannelName, Intent, Post, PostDetail, PostEvent, PostId, PostStatus, PostSummary, Verdict,
};
use airlock_store::{
    ChannelDue, Deferred, ExpiredLease, ExportFilter, HealthStats, LiveSession, MigrationStatus,
    OutboxStats, Pause, PostFilter, QuotaRows, Reads, Result, ReviewItem, Session, StoreError,
    TokenRecord, Unreadable,
};

use crate::rows::{
    self, EVENT_COLUMNS, INTENT_COLUMNS, POST_COLUMNS, RESERVATION_COLUMNS, SUMMARY_COLUMNS,
    TOKEN_COLUMNS, VERDICT_COLUMNS,
};
use crate::{Cols, Conn, Dialect, Pool, Row, Sql};

async fn acquire<D: Dialect>(pool: &Pool<D>) -> Result<sqlx::pool::PoolConnection<D::Db>> {
    pool.acquire()
        .await
        .map_err(|e| StoreError::Unavailable(Box::new(e)))
}

async fn commit<D: Dialect>(tx: sqlx::Transaction<'static, D::Db>) -> Result<()> {
    tx.commit()
        .await
        .map_err(|e| StoreError::Unavailable(Box::new(e)))
}

async fn all<D: Dialect, T>(
    conn: &mut Conn<D>,
    sql: &Sql,
    decode: fn(&Row<D>) -> Result<T>,
) -> Result<Vec<T>> {
    D::fetch_all(conn, sql).await?.iter().map(decode).collect()
}

/// The post `id`, on a connection (inside a transaction too).
pub async fn get_in<D: Dialect>(conn: &mut Conn<D>, id: PostId) -> Result<Post> {
    let sql = Sql::new(format!("SELECT {POST_COLUMNS} FROM posts WHERE id = $1")).arg(id.0);
    D::fetch_optional(conn, &sql)
        .await?
        .as_ref()
        .map(rows::post::<D>)
        .transpose()?
        .ok_or(StoreError::NotFound(id))
}

/// Appends the conditions (after a `WHERE`), order and limit of a post list.
fn push_filter(sql: &mut Sql, filter: &PostFilter) {
    if let Some(status) = filter.status {
        sql.push(" AND status = ").bind(status.as_str());
    }
    if let Some(channel) = &filter.channel {
        sql.push(" AND channel = ").bind(channel.as_str());
    }
    if let Some(before) = filter.before {
        sql.push(" AND id < ").bind(before.0);
    }
    if let Some(slot) = &filter.slot {
        sql.push(" AND slot = ").bind(slot.clone());
    }
    if let Some(id) = &filter.platform_post_id {
        sql.push(" AND platform_post_id = ").bind(id.clone());
    }
    if let Some(actor) = &filter.created_by {
        sql.push(" AND created_by = ").bind(actor.clone());
    }
    if let Some((from, until)) = filter.goes_out {
        sql.push(" AND (");
        for (i, column) in ["posted_at", "scheduled_at", "not_before"]
            .iter()
            .enumerate()
        {
            if i > 0 {
                sql.push(" OR ");
            }
            sql.push(&format!("({column} >= "))
                .bind(from)
                .push(&format!(" AND {column} < "))
                .bind(until)
                .push(")");
        }
        sql.push(")");
    }
    match filter.quarantined {
        Some(true) => sql.push(" AND quarantined_at IS NOT NULL"),
        Some(false) => sql.push(" AND quarantined_at IS NULL"),
        None => sql,
    };
    sql.push(" ORDER BY id DESC LIMIT ")
        .bind(i64::from(filter.limit.unwrap_or(100)));
}

/// `substr(text, 1, n)`, n bound: both databases count characters, so only the excerpt
/// leaves the database. `n` fits PostgreSQL's `integer`.
fn excerpt(sql: &mut Sql, excerpt_chars: u32) {
    let chars = excerpt_chars.min(i32::MAX as u32 - 1);
    sql.push("substr(text, 1, CAST(")
        .bind(i64::from(chars) + 1)
        .push(" AS INTEGER))");
}

/// The live drafts `actor` created, on a connection (inside a transaction too).
pub async fn live_drafts_in<D: Dialect>(conn: &mut Conn<D>, actor: &str) -> Result<i64> {
    let sql =
        Sql::new("SELECT count(*) AS n FROM posts WHERE status = 'draft' AND created_by = $1")
            .arg(actor);
    count::<D>(conn, &sql).await
}

async fn count<D: Dialect>(conn: &mut Conn<D>, sql: &Sql) -> Result<i64> {
    match D::fetch_optional(conn, sql).await? {
        Some(row) => Cols::<D>(&row).int("n"),
        None => Ok(0),
    }
}

/// The time a post becomes due: its schedule, or `not_before` when that is later.
const DUE_AT: &str = "CASE WHEN not_before > scheduled_at THEN not_before ELSE scheduled_at END";

/// Channels per query where the dialect has no `LATERAL` ([`Dialect::LATERAL`]): one
/// `UNION ALL` term each, well under SQLite's limit of 500 terms in a compound `SELECT`.
const CHANNELS_PER_QUERY: usize = 50;

/// The queries that list, as `columns, due_at`, the first `per_channel` posts (or a few
/// more) of the channels not paused in the order they become due (up to `now`, when
/// given). Each channel's part is one range of the index `posts_due_at` (migration 0014)
/// that stops after that many rows: posts deferred or scheduled later lie past it, and
/// the pause test names no row, so a paused channel's range is never entered. What a
/// look costs does not grow with the posts waiting (issue 28). One query on a dialect
/// with `LATERAL`, whose plan does not grow with the channels either; else one per
/// [`CHANNELS_PER_QUERY`] channels, the caller merging their rows.
///
/// There the query keeps one generic plan rather than being planned for its values on
/// every look: a plan for the values would look cheaper whenever it knows more than the
/// generic one. So the channels are a JSON array, not `unnest` of the bound array (whose
/// rows PostgreSQL estimates from the array given), and the limit is written into the
/// text (a generic plan costs a bound `LIMIT` as a tenth of the rows), rounded up to a
/// power of two: a few statements, each prepared once per connection.
fn due_queries<D: Dialect>(
    columns: &str,
    channels: &[ChannelName],
    test_channels: &[ChannelName],
    now: Option<DateTime<Utc>>,
    per_channel: u32,
) -> Vec<Sql> {
    let names = |list: &[ChannelName]| -> Vec<String> {
        list.iter().map(|c| c.as_str().to_owned()).collect()
    };
    let pause = "NOT EXISTS (SELECT 1 FROM pauses WHERE resumed_at IS NULL \
                 AND (scope = '*' OR scope = ";
    if D::LATERAL {
        let mut sql = Sql::new(format!(
            "SELECT q.* FROM jsonb_array_elements_text(to_jsonb($1::text[])) AS c(name) \
             CROSS JOIN LATERAL (\
             SELECT {columns}, {DUE_AT} AS due_at FROM posts \
             WHERE status = 'approved' AND posted_at IS NULL AND channel = c.name \
             AND (NOT test OR c.name = ANY($2)) AND {pause}c.name))"
        ))
        .arg(names(channels))
        .arg(names(test_channels));
        if let Some(now) = now {
            sql.push(&format!(" AND {DUE_AT} <= ")).bind(now);
        }
        // Rounded up, so that few texts share the connection's statement cache; the
        // callers keep the first `per_channel` rows.
        let limit = per_channel.next_power_of_two();
        sql.push(&format!(
            " ORDER BY {DUE_AT}, id LIMIT {limit}) AS q ORDER BY due_at, id LIMIT {limit}"
        ));
        return vec![sql];
    }
    channels
        .chunks(CHANNELS_PER_QUERY)
        .map(|chunk| {
            let mut sql = Sql::new("");
            for (i, channel) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push(" UNION ALL ");
                }
                sql.push(&format!(
                    "SELECT * FROM (SELECT {columns}, {DUE_AT} AS due_at FROM {} \
                     WHERE status = 'approved' AND posted_at IS NULL AND channel = ",
                    D::posts_by("posts_due_at")
                ))
                .bind(channel.as_str());
                if let Some(now) = now {
                    sql.push(&format!(" AND {DUE_AT} <= ")).bind(now);
                }
                if !test_channels.contains(channel) {
                    sql.push(" AND NOT test");
                }
                sql.push(&format!(" AND {pause}")).bind(channel.as_str());
                sql.push(&format!(")) ORDER BY {DUE_AT}, id LIMIT "))
                    .bind(i64::from(per_channel));
                sql.push(&format!(") AS queue{i}"));
            }
            sql.push(" ORDER BY due_at, id LIMIT ")
                .bind(i64::from(per_channel));
            sql
        })
        .collect()
}

/// The latest intent of post `id` (of `generation`, when given).
async fn intent_for<D: Dialect>(
    conn: &mut Conn<D>,
    id: PostId,
    generation: Option<i64>,
) -> Result<Option<Intent>> {
    let sql = Sql::new(format!(
        "SELECT {INTENT_COLUMNS} FROM intents WHERE post_id = $1 \
         AND ($2 IS NULL OR generation = $2) ORDER BY id DESC LIMIT 1"
    ))
    .arg(id.0)
    .arg(generation);
    D::fetch_optional(conn, &sql)
        .await?
        .as_ref()
        .map(rows::intent::<D>)
        .transpose()
}

/// Posts `sql` selects, each with its intent (`latest_of_generation`: the intent of
/// the post's own generation, else its latest), from one snapshot; a row that does not
/// read is reported, not dropped.
async fn with_intents<D: Dialect>(
    pool: &Pool<D>,
    sql: &Sql,
    latest_of_generation: bool,
) -> Result<Vec<std::result::Result<(Post, Option<Intent>), Unreadable>>> {
    let mut tx = D::snapshot(pool).await?;
    let found = D::fetch_all(&mut tx, sql).await?;
    let mut items = Vec::with_capacity(found.len());
    for row in &found {
        let item = match rows::post::<D>(row) {
            Ok(post) => {
                let generation = latest_of_generation.then_some(post.generation);
                match intent_for::<D>(&mut tx, post.id, generation).await {
                    Ok(intent) => Ok((post, intent)),
                    Err(e) => Err(rows::unreadable::<D>(row, e)),
                }
            }
            Err(e) => Err(rows::unreadable::<D>(row, e)),
        };
        items.push(item);
    }
    commit::<D>(tx).await?;
    Ok(items)
}

/// Events with ids above `after` (and at most `upto`), oldest first.
pub async fn events_after<D: Dialect>(
    pool: &Pool<D>,
    after: i64,
    upto: Option<i64>,
    limit: u32,
) -> Result<Vec<PostEvent>> {
    let sql = Sql::new(format!(
        "SELECT {EVENT_COLUMNS} FROM post_events WHERE id > $1 AND ($2 IS NULL OR id <= $2) \
         ORDER BY id LIMIT $3"
    ))
    .arg(after)
    .arg(upto)
    .arg(i64::from(limit));
    all::<D, _>(&mut *acquire::<D>(pool).await?, &sql, rows::event::<D>).await
}

/// Each check is a query returning offending post ids (as `id`), and the sentence that
/// explains them.
const INVARIANTS: &[(&str, &str)] = &[
    (
        "SELECT id FROM posts WHERE status = 'posted' AND posted_at IS NULL LIMIT 20",
        "posted without posted_at",
    ),
    (
        "SELECT id FROM posts WHERE posted_at IS NOT NULL AND status <> 'posted' LIMIT 20",
        "have posted_at but are not posted",
    ),
    (
        "SELECT id FROM posts WHERE status = 'posting' \
         AND (lease_owner IS NULL OR lease_expires_at IS NULL) LIMIT 20",
        "are posting without a lease",
    ),
    (
        "SELECT id FROM posts WHERE status IN ('approved', 'posting', 'posted') \
         AND approved_hash IS NULL LIMIT 20",
        "passed approval without an approved_hash",
    ),
    (
        "SELECT r.post_id AS id FROM reservations r JOIN posts p ON p.id = r.post_id \
         WHERE r.state = 'reserved' AND p.status NOT IN ('posting', 'needs_review') LIMIT 20",
        "hold a reserved quota slot but are neither posting nor waiting for review",
    ),
    (
        "SELECT i.post_id AS id FROM intents i JOIN posts p ON p.id = i.post_id \
         WHERE i.phase = 'sending' AND NOT (p.status = 'posting' AND p.generation = i.generation) \
         LIMIT 20",
        "have a 'sending' intent that no live claim owns",
    ),
    (
        "SELECT p.id FROM posts p WHERE NOT EXISTS \
         (SELECT 1 FROM post_events e WHERE e.post_id = p.id AND e.from_status IS NULL) LIMIT 20",
        "have no creation event",
    ),
    (
        "SELECT DISTINCT post_id AS id FROM reservations \
         WHERE state = 'committed' AND sent_at IS NULL LIMIT 20",
        "hold a committed reservation without a send time (it would count as now in the \
         rolling window for ever)",
    ),
    (
        "SELECT p.id FROM posts p WHERE p.status = 'posted' \
         AND EXISTS (SELECT 1 FROM reservations r WHERE r.post_id = p.id) \
         AND (SELECT count(*) FROM reservations r \
              WHERE r.post_id = p.id AND r.state = 'committed') <> 1 LIMIT 20",
        "are published but counted in the quota zero times or more than once",
    ),
    (
        "SELECT DISTINCT r.post_id AS id FROM reservations r JOIN posts p ON p.id = r.post_id \
         WHERE r.state = 'committed' AND p.status <> 'posted' LIMIT 20",
        "hold a committed reservation but are not published",
    ),
    // A published post's history is whole: what was sent, what was counted, the edge.
    (
        // (Not "an intent that succeeded": a person may have settled the attempt that
        // landed as not sent before a later proof found it; the ended intent stays.)
        "SELECT p.id FROM posts p WHERE p.status = 'posted' AND NOT EXISTS \
         (SELECT 1 FROM intents i WHERE i.post_id = p.id) LIMIT 20",
        "are published without an intent recorded before their request",
    ),
    (
        "SELECT p.id FROM posts p WHERE p.status = 'posted' AND p.test = FALSE AND NOT EXISTS \
         (SELECT 1 FROM reservations r WHERE r.post_id = p.id AND r.state = 'committed') LIMIT 20",
        "are published without a committed reservation (they were never counted)",
    ),
    (
        "SELECT p.id FROM posts p WHERE p.status = 'posted' AND NOT EXISTS \
         (SELECT 1 FROM post_events e WHERE e.post_id = p.id AND e.kind = 'status' \
          AND e.to_status = 'posted') LIMIT 20",
        "are published without the event of their publish",
    ),
];

/// Rows of a child table for a page of posts, grouped by post id, in id order.
async fn children<D: Dialect, T>(
    conn: &mut Conn<D>,
    columns: &str,
    table: &str,
    ids: &[i64],
    decode: fn(&Row<D>) -> Result<T>,
    post_id: fn(&T) -> PostId,
) -> Result<BTreeMap<PostId, Vec<T>>> {
    let sql = Sql::new(format!(
        "SELECT {columns} FROM {table} WHERE {} ORDER BY post_id, id",
        D::in_list("post_id", "$1")
    ))
    .arg(ids.to_vec());
    let mut grouped: BTreeMap<PostId, Vec<T>> = BTreeMap::new();
    for item in all::<D, T>(conn, &sql, decode).await? {
        grouped.entry(post_id(&item)).or_default().push(item);
    }
    Ok(grouped)
}

/// `posts` with their timelines (events, intents, reservations, verdicts), read on the
/// caller's connection: four queries whatever the number of posts.
async fn details<D: Dialect>(conn: &mut Conn<D>, posts: Vec<Post>) -> Result<Vec<PostDetail>> {
    let ids: Vec<i64> = posts.iter().map(|p| p.id.0).collect();
    let mut events = children::<D, _>(
        conn,
        EVENT_COLUMNS,
        "post_events",
        &ids,
        rows::event::<D>,
        |e| e.post_id,
    )
    .await?;
    let mut intents = children::<D, _>(
        conn,
        INTENT_COLUMNS,
        "intents",
        &ids,
        rows::intent::<D>,
        |i| i.post_id,
    )
    .await?;
    let mut reservations = children::<D, _>(
        conn,
        RESERVATION_COLUMNS,
        "reservations",
        &ids,
        rows::reservation::<D>,
        |r| r.post_id,
    )
    .await?;
    let mut verdicts = children::<D, _>(
        conn,
        VERDICT_COLUMNS,
        "verdicts",
        &ids,
        rows::verdict::<D>,
        |v| v.post_id,
    )
    .await?;
    Ok(posts
        .into_iter()
        .map(|post| PostDetail {
            verdicts: verdicts.remove(&post.id).unwrap_or_default(),
            events: events.remove(&post.id).unwrap_or_default(),
            intents: intents.remove(&post.id).unwrap_or_default(),
            reservations: reservations.remove(&post.id).unwrap_or_default(),
            post,
        })
        .collect())
}

/// The predicate of the partial index `posts_open`, spelled out: SQLite uses a partial
/// index only for a query whose terms name its predicate.
const OPEN: &str = "status <> 'posted'";

/// Approved posts due at `$1`, not test posts, on channels with no pause, no global pause.
const DUE_OPEN: &str = "status = 'approved' AND posted_at IS NULL AND NOT test \
    AND scheduled_at <= $1 AND (not_before IS NULL OR not_before <= $1) \
    AND channel NOT IN (SELECT scope FROM pauses WHERE resumed_at IS NULL) \
    AND NOT EXISTS (SELECT 1 FROM pauses WHERE scope = '*' AND resumed_at IS NULL)";

/// Posted, never verified, with a failed verification (the subquery left open for a
/// time bound).
const VERIFY_FAILED: &str = "SELECT count(*) AS n FROM posts p WHERE status = 'posted' \
    AND verified_at IS NULL AND NOT test AND EXISTS (SELECT 1 FROM post_events e \
    WHERE e.post_id = p.id AND e.kind = 'verify_failed'";

/// How the ledger's applied migrations compare with `migrator`'s (this binary's).
pub async fn migration_status<D: Dialect>(
    pool: &Pool<D>,
    migrator: &sqlx::migrate::Migrator,
) -> Result<MigrationStatus> {
    let known: Vec<(i64, Vec<u8>)> = migrator
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| (m.version, m.checksum.to_vec()))
        .collect();
    let mut conn = acquire::<D>(pool).await?;
    let applied = if count::<D>(&mut conn, &Sql::new(D::MIGRATIONS_TABLE)).await? == 0 {
        Vec::new()
    } else {
        let sql = Sql::new(
            "SELECT version, checksum FROM _sqlx_migrations WHERE success ORDER BY version",
        );
        all::<D, _>(&mut conn, &sql, |row| {
            Ok((Cols::<D>(row).int("version")?, D::bytes(row, "checksum")?))
        })
        .await?
    };
    Ok(MigrationStatus::compare(&known, &applied))
}

/// The shared reads over one pool.
pub struct SqlReads<D: Dialect> {
    pool: Pool<D>,
}

impl<D: Dialect> SqlReads<D> {
    /// Reads through `pool`.
    pub fn new(pool: Pool<D>) -> Self {
        SqlReads { pool }
    }
}

// By hand: a derive would ask the dialect marker, not the pool, to be `Clone`.
impl<D: Dialect> Clone for SqlReads<D> {
    fn clone(&self) -> Self {
        SqlReads::new(self.pool.clone())
    }
}

impl<D: Dialect> std::fmt::Debug for SqlReads<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlReads").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl<D: Dialect> Reads for SqlReads<D> {
    async fn get_post(&self, id: PostId) -> Result<Post> {
        get_in::<D>(&mut *acquire::<D>(&self.pool).await?, id).await
    }

    /// The post and its timeline, from one snapshot.
    async fn post_detail(&self, id: PostId) -> Result<PostDetail> {
        let mut tx = D::snapshot(&self.pool).await?;
        let post = get_in::<D>(&mut tx, id).await?;
        let detail = details::<D>(&mut tx, vec![post]).await?.pop();
        commit::<D>(tx).await?;
        Ok(detail.expect("one post, one detail"))
    }

    async fn verdicts(&self, id: PostId) -> Result<Vec<Verdict>> {
        let mut conn = acquire::<D>(&self.pool).await?;
        let mut verdicts = children::<D, _>(
            &mut conn,
            VERDICT_COLUMNS,
            "verdicts",
            &[id.0],
            rows::verdict::<D>,
            |v| v.post_id,
        )
        .await?;
        Ok(verdicts.remove(&id).unwrap_or_default())
    }

    async fn list_posts(&self, filter: &PostFilter) -> Result<Vec<Post>> {
        let mut sql = Sql::new(format!("SELECT {POST_COLUMNS} FROM posts WHERE 1 = 1"));
        push_filter(&mut sql, filter);
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, rows::post::<D>).await
    }

    /// Summaries with the text cut to `excerpt_chars` (+1, so a
    /// Caller sees it was cut) by the database.
    async fn list_summaries(
        &self,
        filter: &PostFilter,
        excerpt_chars: u32,
    ) -> Result<Vec<PostSummary>> {
        let mut sql = Sql::new("SELECT ");
        excerpt(&mut sql, excerpt_chars);
        sql.push(&format!(
            " AS excerpt, {SUMMARY_COLUMNS} FROM posts WHERE 1 = 1"
        ));
        push_filter(&mut sql, filter);
        all::<D, _>(
            &mut *acquire::<D>(&self.pool).await?,
            &sql,
            rows::summary::<D>,
        )
        .await
    }

    /// Whole posts but for the text, cut as in [`Reads::list_summaries`].
    async fn list_excerpts(&self, filter: &PostFilter, excerpt_chars: u32) -> Result<Vec<Post>> {
        let (before, after) = POST_COLUMNS
            .split_once(" text,")
            .expect("POST_COLUMNS names text");
        let mut sql = Sql::new(format!("SELECT {before} "));
        excerpt(&mut sql, excerpt_chars);
        sql.push(&format!(" AS text,{after} FROM posts WHERE 1 = 1"));
        push_filter(&mut sql, filter);
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, rows::post::<D>).await
    }

    async fn live_drafts_by(&self, actor: &str) -> Result<i64> {
        live_drafts_in::<D>(&mut *acquire::<D>(&self.pool).await?, actor).await
    }

    /// One pass over the drafts (`posts_open`), grouped by creator.
    async fn live_drafts_by_creator(&self) -> Result<Vec<(String, i64)>> {
        let sql = Sql::new(
            "SELECT created_by, count(*) AS n FROM posts WHERE status = 'draft' \
             GROUP BY created_by ORDER BY created_by",
        );
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, |row| {
            let r = Cols::<D>(row);
            Ok((r.text("created_by")?, r.int("n")?))
        })
        .await
    }

    /// The earliest due posts on open channels, for claims: one bounded range of
    /// `posts_due_at` per open channel (`due_queries`).
    async fn due_posts(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Post>> {
        if channels.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = acquire::<D>(&self.pool).await?;
        let mut due = Vec::new();
        for sql in due_queries::<D>(POST_COLUMNS, channels, test_channels, Some(now), limit) {
            due.extend(all::<D, _>(&mut conn, &sql, rows::post::<D>).await?);
        }
        due.sort_by_key(|post| (post.due_at(), post.id));
        due.truncate(limit as usize);
        Ok(due)
    }

    /// Approved posts held by a quota deferral, soonest first (the
    /// Partial index `posts_deferred`).
    async fn deferred_posts(&self) -> Result<Vec<Deferred>> {
        let sql = Sql::new(
            "SELECT id, channel, version, deferred_until FROM posts \
             WHERE deferred_until IS NOT NULL AND status = 'approved' ORDER BY deferred_until, id",
        );
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, |row| {
            let cols = Cols::<D>(row);
            Ok(Deferred {
                id: PostId(cols.int("id")?),
                channel: ChannelName::parse(&cols.text("channel")?).map_err(crate::corrupt)?,
                version: cols.int("version")?,
                until: cols.time("deferred_until")?,
            })
        })
        .await
    }

    /// When the next approved post on these channels becomes due: the first entry of
    /// each open channel's range of `posts_due_at`.
    async fn next_due_at(
        &self,
        channels: &[ChannelName],
        test_channels: &[ChannelName],
    ) -> Result<Option<DateTime<Utc>>> {
        if channels.is_empty() {
            return Ok(None);
        }
        let mut conn = acquire::<D>(&self.pool).await?;
        let mut next: Option<DateTime<Utc>> = None;
        for sql in due_queries::<D>("id", channels, test_channels, None, 1) {
            for row in D::fetch_all(&mut conn, &sql).await? {
                let due = Cols::<D>(&row).time("due_at")?;
                next = Some(next.map_or(due, |next| next.min(due)));
            }
        }
        Ok(next)
    }

    /// `posting` posts whose lease ran out, with their intent.
    async fn expired_leases(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<std::result::Result<ExpiredLease, Unreadable>>> {
        let sql = Sql::new(format!(
            "SELECT {POST_COLUMNS} FROM {} WHERE status = 'posting' AND lease_expires_at < $1 \
             ORDER BY id",
            D::posts_by("posts_lease")
        ))
        .arg(now);
        let found = with_intents::<D>(&self.pool, &sql, true).await?;
        Ok(found
            .into_iter()
            .map(|item| item.map(|(post, intent)| ExpiredLease { post, intent }))
            .collect())
    }

    /// `needs_review` posts, longest waiting first, with their intent.
    async fn review_queue(&self) -> Result<Vec<std::result::Result<ReviewItem, Unreadable>>> {
        let sql = Sql::new(format!(
            "SELECT {POST_COLUMNS} FROM {} WHERE status = 'needs_review' AND {OPEN} \
             ORDER BY updated_at, id",
            D::posts_by("posts_open")
        ));
        let found = with_intents::<D>(&self.pool, &sql, false).await?;
        Ok(found
            .into_iter()
            .map(|item| item.map(|(post, intent)| ReviewItem { post, intent }))
            .collect())
    }

    async fn quota_rows(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<QuotaRows> {
        D::live_reservations(&mut *acquire::<D>(&self.pool).await?, since, now).await
    }

    /// The pauses in force, oldest first.
    async fn pauses(&self) -> Result<Vec<Pause>> {
        let sql = Sql::new(
            "SELECT scope, reason, actor, created_at FROM pauses WHERE resumed_at IS NULL ORDER BY id",
        );
        all::<D, _>(
            &mut *acquire::<D>(&self.pool).await?,
            &sql,
            rows::pause::<D>,
        )
        .await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        const PENDING: &str = "delivered_at IS NULL AND abandoned_at IS NULL";
        // One scan: the outbox keeps every notification it delivered.
        let sql = Sql::new(format!(
            "SELECT count(CASE WHEN {PENDING} THEN 1 END) AS pending, \
               count(abandoned_at) AS abandoned, count(delivered_at) AS delivered, \
               min(CASE WHEN {PENDING} THEN created_at END) AS oldest FROM outbox"
        ));
        let row = D::fetch_optional(&mut *acquire::<D>(&self.pool).await?, &sql)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the outbox figures returned no row".into()))?;
        let r = Cols::<D>(&row);
        Ok(OutboxStats {
            pending: r.int("pending")?,
            abandoned: r.int("abandoned")?,
            delivered: r.int("delivered")?,
            oldest_pending_at: r.opt_time("oldest")?,
        })
    }

    /// Every token by name, without its secret's hash.
    async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        let sql = Sql::new(format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY name"));
        all::<D, _>(
            &mut *acquire::<D>(&self.pool).await?,
            &sql,
            rows::token::<D>,
        )
        .await
    }

    async fn status_counts(&self) -> Result<Vec<(PostStatus, i64)>> {
        let sql =
            Sql::new("SELECT status, count(*) AS n FROM posts GROUP BY status ORDER BY status");
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, |row| {
            let r = Cols::<D>(row);
            Ok((rows::status_of(&r.text("status")?)?, r.int("n")?))
        })
        .await
    }

    /// Sentences naming the posts that break an invariant, and a
    /// Quota ledger that does not read.
    async fn check_invariants(&self, now: DateTime<Utc>) -> Result<Vec<String>> {
        let mut conn = acquire::<D>(&self.pool).await?;
        let mut problems = Vec::new();
        for (query, sentence) in INVARIANTS {
            let ids =
                all::<D, _>(&mut conn, &Sql::new(*query), |row| Cols::<D>(row).int("id")).await?;
            if !ids.is_empty() {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                problems.push(format!("posts {} {sentence}", ids.join(", ")));
            }
        }
        match D::live_reservations(&mut conn, now - Duration::days(2), now).await {
            Err(StoreError::CorruptQuota(reason)) => problems.push(reason),
            other => {
                other?;
            }
        }
        problems.extend(D::quota_count_drift(&mut conn, now - Duration::days(2)).await?);
        Ok(problems)
    }

    /// Each source file drafted on `channel` since `since`, with its
    /// Latest draft's time.
    async fn sources_used(
        &self,
        channel: &ChannelName,
        since: DateTime<Utc>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        let sql = Sql::new(
            "SELECT source_path, max(created_at) AS last FROM posts \
             WHERE channel = $1 AND source_path IS NOT NULL AND created_at >= $2 \
             GROUP BY source_path ORDER BY source_path",
        )
        .arg(channel.as_str())
        .arg(since);
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, |row| {
            let r = Cols::<D>(row);
            Ok((r.text("source_path")?, r.time("last")?))
        })
        .await
    }

    /// Up to `limit` posts after `after` in id order, each with its
    /// Timeline, from one snapshot.
    async fn export_page(
        &self,
        filter: &ExportFilter,
        after: Option<PostId>,
        limit: u32,
    ) -> Result<Vec<PostDetail>> {
        let mut tx = D::snapshot(&self.pool).await?;
        let mut sql = Sql::new(format!("SELECT {POST_COLUMNS} FROM posts WHERE id > $1"))
            .arg(after.map_or(0, |id| id.0));
        if let Some(status) = filter.status {
            sql.push(" AND status = ").bind(status.as_str());
        }
        if let Some(channel) = &filter.channel {
            sql.push(" AND channel = ").bind(channel.as_str());
        }
        if let Some(since) = filter.since {
            // updated_at covers creation and every change of the row; events cover notes
            // and verification results, which leave the row alone.
            sql.push(" AND (updated_at >= ")
                .bind(since)
                .push(" OR EXISTS (SELECT 1 FROM post_events e WHERE e.post_id = posts.id AND e.at >= ")
                .bind(since)
                .push("))");
        }
        sql.push(" ORDER BY id LIMIT ")
            .bind(i64::from(limit.max(1)));
        let posts = all::<D, _>(&mut tx, &sql, rows::post::<D>).await?;
        let page = if posts.is_empty() {
            Vec::new()
        } else {
            details::<D>(&mut tx, posts).await?
        };
        commit::<D>(tx).await?;
        Ok(page)
    }

    /// The figures for alerts, from one snapshot.
    async fn health_stats(&self, now: DateTime<Utc>) -> Result<HealthStats> {
        let mut tx = D::snapshot(&self.pool).await?;
        let due = Sql::new(format!(
            "SELECT count(*) AS n, min({DUE_AT}) AS oldest FROM {} WHERE {DUE_OPEN}",
            D::posts_by("posts_due")
        ))
        .arg(now);
        let due = D::fetch_optional(&mut tx, &due)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the due count returned no row".into()))?;
        let review = Sql::new(format!(
            "SELECT min(updated_at) AS oldest FROM {} WHERE status = 'needs_review' AND {OPEN}",
            D::posts_by("posts_open")
        ));
        let review = match D::fetch_optional(&mut tx, &review).await? {
            Some(row) => Cols::<D>(&row).opt_time("oldest")?,
            None => None,
        };
        let ever = Sql::new(format!("{VERIFY_FAILED})"));
        let verify_failed = count::<D>(&mut tx, &ever).await?;
        let recent =
            Sql::new(format!("{VERIFY_FAILED} AND e.at >= $1)")).arg(now - Duration::hours(24));
        let verify_failed_recent = count::<D>(&mut tx, &recent).await?;
        let quarantined =
            Sql::new("SELECT count(*) AS n FROM posts WHERE quarantined_at IS NOT NULL".to_owned());
        let quarantined = count::<D>(&mut tx, &quarantined).await?;
        commit::<D>(tx).await?;
        let due = Cols::<D>(&due);
        Ok(HealthStats {
            due: due.int("n")?,
            oldest_due_at: due.opt_time("oldest")?,
            oldest_needs_review_at: review,
            verify_failed,
            verify_failed_recent,
            quarantined,
        })
    }

    /// The due figures of [`Reads::health_stats`] per channel.
    async fn due_by_channel(&self, now: DateTime<Utc>) -> Result<Vec<ChannelDue>> {
        let sql = Sql::new(format!(
            "SELECT channel, count(*) AS n, min({DUE_AT}) AS oldest FROM {} WHERE {DUE_OPEN} \
             GROUP BY channel ORDER BY channel",
            D::posts_by("posts_due")
        ))
        .arg(now);
        all::<D, _>(&mut *acquire::<D>(&self.pool).await?, &sql, |row| {
            let r = Cols::<D>(row);
            Ok(ChannelDue {
                channel: r.text("channel")?,
                due: r.int("n")?,
                oldest_due_at: r.time("oldest")?,
            })
        })
        .await
    }

    async fn session(&self, id_sha256: &str) -> Result<Option<Session>> {
        let sql = Sql::new(D::SESSION).arg(id_sha256);
        D::fetch_optional(&mut *acquire::<D>(&self.pool).await?, &sql)
            .await?
            .as_ref()
            .map(rows::session::<D>)
            .transpose()
    }

    async fn live_sessions(&self, now: DateTime<Utc>) -> Result<Vec<LiveSession>> {
        let sql = Sql::new(D::LIVE_SESSIONS).arg(now);
        all::<D, _>(
            &mut *acquire::<D>(&self.pool).await?,
            &sql,
            rows::live_session::<D>,
        )
        .await
    }
}
