//! Claims in batches (issue 28): the claims this process makes at the same time reach
//! PostgreSQL together, as one call of `airlock_claim_batch`: one transaction, one commit
//! and one statement per table written for all of them.
//!
//! A caller queues its claim and starts a task that waits for one of [`TURNS`] turns;
//! whichever task gets a turn takes the claims queued by then, up to [`MAX_BATCH`]. Only
//! the common claim is batched ([`batched`]). A claim the batch answers `single`, and
//! every claim of a batch that failed, is made alone with `airlock_claim_post`, which
//! gives it its own answer or error. (A batch the database refused wrote nothing. One
//! whose answer was lost may have committed: its posts are then no longer as their
//! claims read them, and each claim alone answers that another took it, as a claim
//! whose own answer was lost would be left.) The task runs to its end whether or not
//! its caller still waits, so a caller that goes away never takes the others' claims
//! down with it.

use std::sync::Mutex;

use airlock_store::{PostClaim, PostClaimed, Result, StoreError};
use sqlx::AssertSqlSafe;
use tokio::sync::{Semaphore, oneshot};

use crate::dialect::get;
use crate::publish::{PERIODS, claim_note, claimed, day_starts};
use crate::{PgStore, db, micros};

/// How many batches one process has in flight at once: claims keep two server processes
/// busy while the others' batches fill.
pub(crate) const TURNS: usize = 2;

/// The most claims in one batch: the window's slots, one held for each claim.
pub(crate) const MAX_BATCH: usize = 16;

/// A claim waiting for its batch, with where its answer goes.
type Queued = (PostClaim, oneshot::Sender<Result<PostClaimed>>);

/// The claims waiting for a batch, and the turns to send one.
#[derive(Debug)]
pub(crate) struct Claims {
    queue: Mutex<Vec<Queued>>,
    turns: Semaphore,
}

/// Whether `req` is a claim a batch makes: counted against the window and its day,
/// without a budget, its intent (if any) that of part 1.
pub(crate) fn batched(req: &PostClaim) -> bool {
    req.quota.is_some_and(|q| q.budget.is_none()) && req.intent.as_ref().is_none_or(|i| i.part == 1)
}

impl Default for Claims {
    fn default() -> Self {
        Claims {
            queue: Mutex::new(Vec::new()),
            turns: Semaphore::new(TURNS),
        }
    }
}

impl Claims {
    /// Makes `req` in the next batch with a turn.
    pub(crate) async fn claim(&self, store: &PgStore, req: &PostClaim) -> Result<PostClaimed> {
        let (to, answer) = oneshot::channel();
        self.queue
            .lock()
            .expect("lock is never poisoned")
            .push((req.clone(), to));
        let store = store.clone();
        tokio::spawn(async move { store.claims.send_batch(&store).await });
        answer.await.map_err(|_| {
            StoreError::Unavailable("the claim's batch ended without an answer".into())
        })?
    }

    /// Takes a turn, then sends the claims queued by then (none when an earlier turn took
    /// them).
    async fn send_batch(&self, store: &PgStore) {
        let Ok(_turn) = self.turns.acquire().await else {
            return;
        };
        let queued: Vec<Queued> = {
            let mut queue = self.queue.lock().expect("lock is never poisoned");
            let n = queue.len().min(MAX_BATCH);
            queue.drain(..n).collect()
        };
        let Some(window) = queued
            .first()
            .and_then(|(req, _)| req.quota)
            .map(|q| q.window)
        else {
            return;
        };
        // One window for the batch (a process has one): a claim with another goes alone.
        let (batch, mut alone): (Vec<Queued>, Vec<Queued>) = queued
            .into_iter()
            .partition(|(req, _)| req.quota.map(|q| q.window) == Some(window));
        let claims: Vec<&PostClaim> = batch.iter().map(|(req, _)| req).collect();
        match claim_batch(store, &claims).await {
            Ok(answers) => {
                for ((req, to), answer) in batch.into_iter().zip(answers) {
                    match answer {
                        Some(answer) => drop(to.send(answer)),
                        None => alone.push((req, to)),
                    }
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "a batch of claims failed: each is made alone");
                alone.extend(batch);
            }
        }
        for (req, to) in alone {
            drop(to.send(store.claim_alone(&req).await));
        }
    }
}

/// `airlock_claim_batch` for `claims`, all with the first's window: each claim's answer,
/// `None` for one to make alone.
async fn claim_batch(
    store: &PgStore,
    claims: &[&PostClaim],
) -> Result<Vec<Option<Result<PostClaimed>>>> {
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
    .map_err(db)?;
    if rows.len() != claims.len() {
        return Err(StoreError::Corrupt(format!(
            "a batch of {} claims answered {} rows",
            claims.len(),
            rows.len()
        )));
    }
    let mut answers = Vec::with_capacity(rows.len());
    for (k, row) in rows.iter().enumerate() {
        let request: i64 = get(row, "request")?;
        if usize::try_from(request).ok() != Some(k + 1) {
            return Err(StoreError::Corrupt(format!(
                "a batch of claims answered claim {request} in place {}",
                k + 1
            )));
        }
        let outcome: String = get(row, "outcome")?;
        answers.push((outcome != "single").then(|| claimed(row)));
    }
    Ok(answers)
}
