//! Claims in batches ([`crate::batch`]): the common claims a process makes at the same
//! time, in one call of `airlock_claim_batch`. Any other claim is made alone, with
//! `airlock_claim_post`, and so is every claim the batch answers `single`.

use airlock_store::{PostClaim, PostClaimed, Result};
use sqlx::AssertSqlSafe;

use crate::batch::{Failure, Kind, Made, Queue, answers};
use crate::publish::{PERIODS, claim_note, claimed, day_starts};
use crate::{PgStore, micros};

/// Claims, as a kind of write that goes in batches.
pub(crate) struct Claims;

/// The window's slots (`ledger_locks`, migrations 0013 and 0016). A batch's proof counts
/// every slot as a claim in flight, so it can pass only under limits above them.
pub(crate) const WINDOW_SLOTS: u32 = 32;

/// Whether `req` is a claim a batch makes: counted against the window and its day, both
/// limits above [`WINDOW_SLOTS`], without a budget, its intent (if any) that of part 1.
pub(crate) fn batched(req: &PostClaim) -> bool {
    req.quota.is_some_and(|q| {
        q.budget.is_none() && q.window.limit > WINDOW_SLOTS && q.daily.limit > WINDOW_SLOTS
    }) && req.intent.as_ref().is_none_or(|i| i.part == 1)
}

impl Kind for Claims {
    type Write = PostClaim;
    type Answer = PostClaimed;
    /// Half the window's slots, one held for each claim of a batch: another process's
    /// batch at the same moment finds as many free.
    const MAX: usize = WINDOW_SLOTS as usize / 2;

    fn queue(store: &PgStore) -> &Queue<Self> {
        &store.claims
    }

    async fn together(store: &PgStore, claims: &[PostClaim]) -> Made<PostClaimed> {
        // One window for the batch (a process has one): a claim with another goes alone.
        let window = claims[0].quota.map(|q| q.window);
        let same: Vec<&PostClaim> = claims
            .iter()
            .filter(|c| c.quota.map(|q| q.window) == window)
            .collect();
        let mut made = claim_batch(store, &same).await?.into_iter();
        Ok(claims
            .iter()
            .map(|c| {
                if c.quota.map(|q| q.window) == window {
                    made.next().flatten()
                } else {
                    None
                }
            })
            .collect())
    }

    async fn alone(store: &PgStore, claim: PostClaim) -> Result<PostClaimed> {
        store.claim_alone(&claim).await
    }
}

/// `airlock_claim_batch` for `claims`, all with the first's window: each claim's answer,
/// `None` for one to make alone.
async fn claim_batch(store: &PgStore, claims: &[&PostClaim]) -> Made<PostClaimed> {
    let quota = |req: &PostClaim| req.quota.expect("a batched claim counts");
    let window = quota(claims[0]).window;
    let rows = sqlx::query(AssertSqlSafe(
        "SELECT r.request, r.outcome, r.pause_scope, r.pause_reason, r.intent_phase, \
           r.intent_key, r.intent_platform_ref, r.intent_created_at, r.intent_settled_at, \
           r.intent_part, (r.post).* \
         FROM airlock_claim_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
           $14, $15) r"
            .to_owned(),
    ))
    .bind(claims.iter().map(|r| r.id.0).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.version).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.allow_test).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.worker.as_str()).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.actor.as_str()).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.now).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| r.lease_until).collect::<Vec<_>>())
    .bind(claims.iter().map(|r| claim_note(r)).collect::<Vec<_>>())
    .bind(micros(window.window))
    .bind(i64::from(window.limit))
    .bind(
        claims
            .iter()
            .map(|r| i64::from(quota(r).daily.limit))
            .collect::<Vec<_>>(),
    )
    .bind(
        claims
            .iter()
            .flat_map(|r| day_starts(r.now, &quota(r)))
            .collect::<Vec<_>>(),
    )
    .bind(i32::try_from(PERIODS + 1).expect("a few periods"))
    .bind(
        claims
            .iter()
            .map(|r| r.intent.as_ref().map(|i| i.idempotency_key.as_str()))
            .collect::<Vec<_>>(),
    )
    .bind(
        claims
            .iter()
            .map(|r| r.intent.as_ref().map(|i| micros(i.lease_margin)))
            .collect::<Vec<_>>(),
    )
    .fetch_all(&store.pool)
    .await
    .map_err(Failure::from)?;
    Ok(answers(&rows, claims.len(), |row, outcome| {
        (outcome != "single").then(|| claimed(row))
    })?)
}
