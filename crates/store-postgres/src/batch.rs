//! Writes in batches (issue 28): the writes of one kind this process makes at the same
//! time reach PostgreSQL together, as one call of a set-based function: one transaction,
//! one commit and one statement per table written for all of them.
//!
//! A caller queues its write and starts a task that waits for one of [`TURNS`] turns;
//! whichever task gets a turn takes the writes queued by then, up to its kind's
//! [`Kind::MAX`]. A write found alone in the queue is made alone. So is a write the
//! batch leaves, and every write of a batch the database refused (it wrote nothing):
//! [`ALONE`] at a time, after the turn is given back, each with its own answer or error.
//! A batch that may have been written (its answer lost or unreadable) is never made
//! again: each of its writes is answered with that error, as a write of its own would
//! be. The task runs to its end whether or not its caller still waits, so a caller that
//! goes away never takes the others' writes down with it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use airlock_store::{Result, StoreError};
use sqlx::postgres::{PgDatabaseError, PgRow, PgSeverity};
use tokio::sync::{Semaphore, oneshot};

use crate::PgStore;
use crate::dialect::get;

/// How many batches of one kind a process has out at once. One: while it is out the
/// next fills. (With two, the batches were smaller and each publish took more server
/// time: 1.4 ms against 1.0 with 4 workers of 4 posts.)
pub(crate) const TURNS: usize = 1;

/// How many writes of one kind a process makes alone at once, after their batches: each
/// may wait for locks while holding one of the pool's connections.
pub(crate) const ALONE: usize = 4;

/// What a batch made: each write's answer, in order, or `None` for one to make alone.
pub(crate) type Made<A> = std::result::Result<Vec<Option<Result<A>>>, Failure>;

/// How a batch failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The database refused it: nothing of it was written.
    Refused(sqlx::Error),
    /// It may have been written: its answer was lost or could not be read.
    Lost(String),
}

impl From<sqlx::Error> for Failure {
    /// Only an error the server raised in the statement refuses it: the implicit
    /// transaction then ends without a commit. A FATAL or PANIC may come after the
    /// commit, and anything else (a lost connection) may too.
    fn from(e: sqlx::Error) -> Self {
        let raised = e
            .as_database_error()
            .and_then(|d| d.try_downcast_ref::<PgDatabaseError>())
            .is_some_and(|d| d.severity() == PgSeverity::Error);
        if raised {
            Failure::Refused(e)
        } else {
            Failure::Lost(e.to_string())
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Lost(e.to_string())
    }
}

/// One kind of write that goes in batches.
pub(crate) trait Kind: Send + Sync + 'static {
    /// The write.
    type Write: Send + 'static;
    /// Its answer.
    type Answer: Send + 'static;
    /// The most writes in one batch.
    const MAX: usize;

    /// The queue of this kind's writes in `store`.
    fn queue(store: &PgStore) -> &Queue<Self>;

    /// Makes `writes` in one call: each write's answer, in order, or `None` for one to
    /// make alone.
    fn together(
        store: &PgStore,
        writes: &[Self::Write],
    ) -> impl Future<Output = Made<Self::Answer>> + Send;

    /// Makes `write` alone.
    fn alone(
        store: &PgStore,
        write: Self::Write,
    ) -> impl Future<Output = Result<Self::Answer>> + Send;
}

/// A write waiting for its batch, with where its answer goes.
type Queued<K> = (
    <K as Kind>::Write,
    oneshot::Sender<Result<<K as Kind>::Answer>>,
);

/// The writes of one kind waiting for a batch, and the turns to send one.
pub(crate) struct Queue<K: Kind + ?Sized> {
    waiting: Mutex<Vec<Queued<K>>>,
    turns: Semaphore,
    alone: Arc<Semaphore>,
}

impl<K: Kind> std::fmt::Debug for Queue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl<K: Kind> Default for Queue<K> {
    fn default() -> Self {
        Queue {
            waiting: Mutex::new(Vec::new()),
            turns: Semaphore::new(TURNS),
            alone: Arc::new(Semaphore::new(ALONE)),
        }
    }
}

/// Makes `write` in the next batch of its kind with a turn.
pub(crate) async fn make<K: Kind>(store: &PgStore, write: K::Write) -> Result<K::Answer> {
    let (to, answer) = oneshot::channel();
    K::queue(store)
        .waiting
        .lock()
        .expect("lock is never poisoned")
        .push((write, to));
    let store = store.clone();
    tokio::spawn(async move { send::<K>(&store).await });
    answer
        .await
        .map_err(|_| StoreError::Unavailable("a batch of writes ended without an answer".into()))?
}

/// Takes a turn, then sends the writes queued by then (none when an earlier turn took
/// them).
async fn send<K: Kind>(store: &PgStore) {
    let queue = K::queue(store);
    let Ok(turn) = queue.turns.acquire().await else {
        return;
    };
    let mut batch: Vec<Queued<K>> = {
        let mut waiting = queue.waiting.lock().expect("lock is never poisoned");
        let n = waiting.len().min(K::MAX);
        waiting.drain(..n).collect()
    };
    if batch.is_empty() {
        return;
    }
    // A write with none beside it is made alone: the batch would only cost more.
    if batch.len() == 1 {
        let (write, to) = batch.pop().expect("one write");
        drop(to.send(K::alone(store, write).await));
        return;
    }
    let (writes, answers): (Vec<K::Write>, Vec<_>) = batch.into_iter().unzip();
    let made = K::together(store, &writes).await;
    drop(turn);
    let mut alone = Vec::new();
    match made {
        Ok(made) => {
            for ((write, to), answer) in writes.into_iter().zip(answers).zip(made) {
                match answer {
                    Some(answer) => drop(to.send(answer)),
                    None => alone.push((write, to)),
                }
            }
        }
        Err(Failure::Refused(e)) => {
            tracing::debug!(error = %e, "the database refused a batch of writes: each is made alone");
            alone.extend(writes.into_iter().zip(answers));
        }
        Err(Failure::Lost(e)) => {
            for to in answers {
                drop(
                    to.send(Err(StoreError::Unavailable(
                        format!("a batch of writes may have been written, its answer is lost: {e}")
                            .into(),
                    ))),
                );
            }
        }
    }
    // Each in a task of its own, a few at a time: one that waits holds up no batch.
    for (write, to) in alone {
        let (store, permits) = (store.clone(), queue.alone.clone());
        tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            drop(to.send(K::alone(&store, write).await));
        });
    }
}

/// Each write's answer from a batch function's `rows`, one a write in order, each with
/// its index (`request`, from 1) and `outcome`: `answer` reads one, `None` to make that
/// write alone.
pub(crate) fn answers<A>(
    rows: &[PgRow],
    writes: usize,
    answer: impl Fn(&PgRow, &str) -> Option<Result<A>>,
) -> Result<Vec<Option<Result<A>>>> {
    if rows.len() != writes {
        return Err(StoreError::Corrupt(format!(
            "a batch of {writes} writes answered {} rows",
            rows.len()
        )));
    }
    let mut answers = Vec::with_capacity(writes);
    for (k, row) in rows.iter().enumerate() {
        let request: i64 = get(row, "request")?;
        if usize::try_from(request).ok() != Some(k + 1) {
            return Err(StoreError::Corrupt(format!(
                "a batch answered write {request} in place {}",
                k + 1
            )));
        }
        let outcome: String = get(row, "outcome")?;
        answers.push(answer(row, &outcome));
    }
    Ok(answers)
}
