//! The store's side of the guarded publish path: claims, reservations and intents
//! (what is due, expired leases and the review queue are shared reads).
//!
//! Claims and reservations are short transactions and never wait for a platform.
//! A claim skips rows other claimers hold (`FOR UPDATE SKIP LOCKED`) and reads its
//! result back. Its quota is decided under the window's locks (`airlock_claim_post`):
//! one slot of the window when per-hour counts prove it far from every limit with every
//! other slot counted as a claim in flight (a batch, `airlock_claim_batch`, holds one
//! for each of its claims); near its channel's daily limit, a slot and that channel's
//! limits alone; else the whole window. So the count it decides on includes every
//! reservation committed before it, from any process.

use async_trait::async_trait;
use chrono::{DateTime, DurationRound, Utc};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, Row};

use airlock_core::Intent;
use airlock_core::quota::{Denial, Limit};
use airlock_store::{
    IntentRequest, PostClaim, PostClaimed, QuotaClaim, QuotaRows, RawReservation, Result,
    StoreError,
};

use airlock_store_sql::rows;

use crate::dialect::{Pg, get};
use crate::{PgStore, db, micros, refusal};

/// Live reservations sent at or after `since`, and every unsent one, checked fail-closed.
/// A time PostgreSQL holds but chrono cannot (`±infinity`) is handed to the check as
/// unreadable text, never dropped.
pub(crate) async fn live_reservations(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<QuotaRows> {
    // Each branch reads the partial index `reservations_live`; the last one makes sure a
    // row sent at '-infinity' is seen (and refused) rather than silently out of range.
    let rows = sqlx::query(
        "WITH live AS ( \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at >= $1 \
           UNION ALL \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at IS NULL \
           UNION ALL \
           SELECT * FROM reservations WHERE state <> 'released' AND sent_at = '-infinity') \
         SELECT id, channel, state, cost_usd_micros, \
           CASE WHEN isfinite(created_at) THEN created_at END AS created_at, \
           created_at::text AS created_text, \
           CASE WHEN isfinite(sent_at) THEN sent_at END AS sent_at, \
           sent_at::text AS sent_text \
         FROM live",
    )
    .bind(since)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let mut raw = Vec::with_capacity(rows.len());
    for row in rows {
        let created_at: Option<DateTime<Utc>> = get(&row, "created_at")?;
        let created_text: String = get(&row, "created_text")?;
        let sent_at: Option<DateTime<Utc>> = get(&row, "sent_at")?;
        let sent_text: Option<String> = get(&row, "sent_text")?;
        raw.push(RawReservation {
            id: row.try_get("id").map_err(db)?,
            channel: row.try_get("channel").map_err(db)?,
            state: row.try_get("state").map_err(db)?,
            created_at: created_at.ok_or(created_text),
            sent_at: sent_text.map(|text| sent_at.ok_or(text)),
            cost: row.try_get("cost_usd_micros").map_err(db)?,
        });
    }
    QuotaRows::check(raw, now)
}

/// Where `quota_hours` (migration 0013) differs from a recount of the live reservations,
/// for the hours from `since`'s on: one sentence each. A count below the recount, or a
/// latest stamp below one counted, would let a claim's quick proof pass a limit; doctor
/// names it.
pub(crate) async fn quota_hours_drift(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
) -> Result<Vec<String>> {
    let rows: Vec<(String, Option<DateTime<Utc>>, i64, i64)> = sqlx::query_as(
        "WITH counted AS ( \
           SELECT r.channel, h.hour, count(*) AS live, max(h.latest) AS latest \
           FROM reservations r, airlock_reservation_hours(r) h \
           WHERE r.state <> 'released' AND (r.created_at >= $1 OR r.sent_at >= $1) \
             AND h.hour >= $1 \
           GROUP BY r.channel, h.hour \
           UNION ALL \
           SELECT r.channel, '-infinity', count(*), '-infinity' FROM reservations r \
           WHERE r.state <> 'released' AND r.sent_at IS NULL \
             AND NOT airlock_reservation_suspect(r) \
           GROUP BY r.channel), \
         kept AS ( \
           SELECT channel, hour, sum(live) AS live, max(latest) AS latest FROM quota_hours \
           WHERE hour >= $1 OR hour = '-infinity' GROUP BY channel, hour) \
         SELECT channel, CASE WHEN isfinite(hour) THEN hour END, COALESCE(c.live, 0), \
           COALESCE(k.live, 0)::bigint \
         FROM counted c FULL JOIN kept k USING (channel, hour) \
         WHERE COALESCE(c.live, 0) <> COALESCE(k.live, 0) \
            OR COALESCE(k.latest, '-infinity') < c.latest \
         ORDER BY hour, channel",
    )
    .bind(
        since
            .duration_trunc(chrono::Duration::hours(1))
            .unwrap_or(since),
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    // While a suspect row is listed the rows decide: a list missing one lets the counts,
    // which leave it out, decide for it.
    let misfiled: Vec<i64> = sqlx::query_scalar(
        "SELECT s.id FROM quota_suspects s WHERE NOT EXISTS ( \
           SELECT 1 FROM reservations r WHERE r.id = s.id AND airlock_reservation_suspect(r)) \
         UNION \
         SELECT r.id FROM reservations r WHERE airlock_reservation_suspect(r) \
           AND NOT EXISTS (SELECT 1 FROM quota_suspects s WHERE s.id = r.id) \
         ORDER BY 1",
    )
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let misfiled = (!misfiled.is_empty()).then(|| {
        let ids: Vec<String> = misfiled.iter().map(i64::to_string).collect();
        format!(
            "quota_suspects misfiles reservations {}: list exactly the live reservations airlock_reservation_suspect names (quota_hours must not stand for them)",
            ids.join(", ")
        )
    });
    Ok(rows
        .into_iter()
        .map(|(channel, hour, counted, kept)| {
            let hour = hour.map_or("unsent".to_owned(), |at| {
                format!("in the hour from {}", airlock_core::time::format_utc(at))
            });
            format!(
                "quota_hours holds {kept} live reservations for channel {channel} {hour}, or an earlier latest stamp than theirs; the reservations hold {counted}: a claim may have been let past a limit; as the owner, check that trigger reservations_quota_hours is enabled, then correct those rows"
            )
        })
        .chain(misfiled)
        .collect())
}

/// The period starts `airlock_quota_decision` reads: the local day (month) a day before
/// `now`, and the ones after it, enough for any decision within the clock allowance of
/// `now` and the periods its next free time may pass over.
fn bounds(
    now: DateTime<Utc>,
    of: impl Fn(DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>),
) -> Vec<DateTime<Utc>> {
    let mut starts = vec![of(now - chrono::Duration::days(1)).0];
    for _ in 0..PERIODS {
        let (_, end) = of(*starts.last().expect("one start"));
        starts.push(end);
    }
    starts
}

/// How many consecutive periods [`bounds`] spans.
pub(crate) const PERIODS: usize = 7;

impl PgStore {
    /// One claim alone: `airlock_claim_post` (the post unchanged and not paused, the claim,
    /// the reservation decided under the quota lock, and the intent when asked) in one
    /// round trip.
    pub(crate) async fn claim_alone(&self, req: &PostClaim) -> Result<PostClaimed> {
        let quota = req.quota.as_ref();
        let budget = quota.and_then(|q| q.budget);
        let row = sqlx::query(AssertSqlSafe(
            "SELECT r.outcome, r.pause_scope, r.pause_reason, r.denial_limit, \
               r.denial_used::text AS denial_used, r.denial_max::text AS denial_max, \
               r.denial_next_free_at, r.intent_phase, r.intent_key, r.intent_platform_ref, \
               r.intent_created_at, r.intent_settled_at, r.intent_part, (r.post).* \
             FROM airlock_claim_post($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
               $14, $15, $16, $17, $18) r"
                .to_owned(),
        ))
        .bind(req.id.0)
        .bind(req.version)
        .bind(req.allow_test)
        .bind(&req.worker)
        .bind(&req.actor)
        .bind(req.now)
        .bind(req.lease_until)
        .bind(claim_note(req))
        .bind(quota.map(|q| micros(q.window.window)))
        .bind(quota.map(|q| i64::from(q.window.limit)))
        .bind(quota.map(|q| i64::from(q.daily.limit)))
        .bind(quota.map(|q| day_starts(req.now, q)))
        .bind(budget.map(|b| i64::try_from(b.rule.monthly).unwrap_or(i64::MAX)))
        .bind(budget.map(|b| i64::try_from(b.cost).unwrap_or(i64::MAX)))
        .bind(budget.map(|b| {
            bounds(req.now, |at| {
                airlock_core::budget::month_bounds(at, b.rule.tz)
            })
        }))
        .bind(req.intent.as_ref().map(|i| i.idempotency_key.as_str()))
        .bind(req.intent.as_ref().map(|i| i64::from(i.part)))
        .bind(req.intent.as_ref().map(|i| micros(i.lease_margin)))
        .fetch_one(&self.pool)
        .await
        .map_err(|e| refusal(e, req.id))?;
        claimed(&row)
    }
}

/// The claim's status event note.
pub(crate) fn claim_note(req: &PostClaim) -> String {
    format!(
        "claimed, lease until {}",
        airlock_core::time::format_utc(req.lease_until)
    )
}

/// The starts of the local days a claim at `now` is decided in ([`bounds`]).
pub(crate) fn day_starts(now: DateTime<Utc>, quota: &QuotaClaim) -> Vec<DateTime<Utc>> {
    bounds(now, |at| {
        airlock_core::quota::day_bounds(at, quota.daily.tz)
    })
}

/// What a claim function's row says: `airlock_claim_post`'s columns, the post's as `(post).*`.
pub(crate) fn claimed(row: &PgRow) -> Result<PostClaimed> {
    let outcome: String = get(row, "outcome")?;
    match outcome.as_str() {
        "gone" => {
            let id: Option<i64> = get(row, "id")?;
            Ok(PostClaimed::Gone(match id {
                Some(_) => Some(Box::new(rows::post::<Pg>(row)?)),
                None => None,
            }))
        }
        "paused" => Ok(PostClaimed::Paused {
            scope: get(row, "pause_scope")?,
            reason: get(row, "pause_reason")?,
        }),
        "over_quota" => {
            let limit: String = get(row, "denial_limit")?;
            let number = |column: &str| -> Result<u64> {
                let text: String = get(row, column)?;
                text.parse()
                    .map_err(|_| StoreError::Corrupt(format!("quota decision {column} {text:?}")))
            };
            Ok(PostClaimed::OverQuota(Denial {
                limit: match limit.as_str() {
                    "window" => Limit::Window,
                    "daily" => Limit::Daily,
                    "budget" => Limit::Budget,
                    other => {
                        return Err(StoreError::Corrupt(format!("quota limit {other:?}")));
                    }
                },
                used: number("denial_used")?,
                max: number("denial_max")?,
                next_free_at: get(row, "denial_next_free_at")?,
            }))
        }
        "claimed" => {
            let post = rows::post::<Pg>(row)?;
            let key: Option<String> = get(row, "intent_key")?;
            let intent = match key {
                Some(idempotency_key) => Some(Intent {
                    post_id: post.id,
                    generation: post.generation,
                    idempotency_key,
                    phase: get(row, "intent_phase")?,
                    platform_ref: get(row, "intent_platform_ref")?,
                    created_at: get(row, "intent_created_at")?,
                    settled_at: get(row, "intent_settled_at")?,
                    part: {
                        let part: i64 = get(row, "intent_part")?;
                        u32::try_from(part)
                            .map_err(|_| StoreError::Corrupt(format!("intent part {part}")))?
                    },
                    platform_post_id: None,
                    permalink: None,
                }),
                None => None,
            };
            Ok(PostClaimed::Claimed {
                post: Box::new(post),
                intent,
            })
        }
        other => Err(StoreError::Corrupt(format!("claim outcome {other:?}"))),
    }
}

#[async_trait]
impl airlock_store::Publishing for PgStore {
    /// Store::claim_post: the common claim in a batch with the others of this moment
    /// (`claims.rs`), any other alone.
    async fn claim_post(&self, req: &PostClaim) -> Result<PostClaimed> {
        if crate::claims::batched(req) {
            crate::batch::make::<crate::claims::Claims>(self, req.clone()).await
        } else {
            self.claim_alone(req).await
        }
    }

    /// Store::record_intent: `airlock_record_intent` (fence, lease, pause, the intent and
    /// the reservation's send time, committed durably) in one round trip.
    async fn record_intent(&self, req: &IntentRequest) -> Result<Intent> {
        let row = sqlx::query("SELECT * FROM airlock_record_intent($1, $2, $3, $4, $5, $6, $7)")
            .bind(req.post_id.0)
            .bind(req.generation)
            .bind(&req.idempotency_key)
            .bind(i64::from(req.part))
            .bind(req.platform_ref.as_deref())
            .bind(req.now)
            .bind(micros(req.lease_margin))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| match refusal(e, req.post_id) {
                StoreError::Fenced { id, .. } => StoreError::Fenced {
                    id,
                    generation: req.generation,
                },
                other => other,
            })?;
        rows::intent::<Pg>(&row)
    }
}
