//! Group commit for the guarded path's writes (issue 28): claims and named changes that
//! callers make at the same time are written in one `BEGIN IMMEDIATE` transaction and
//! made durable by one commit, each inside a savepoint of its own.
//!
//! A caller queues its write and starts a task that waits for this process's writer
//! turn; whichever task gets the turn takes every write queued by then. Each write runs
//! exactly as it would alone, in queue order, seeing the writes before it: a claim's
//! quota decision counts the reservations of the claims ahead of it in the same
//! transaction. A write that fails is rolled back to its savepoint and answered with its
//! error; the others go on. No answer is given before the commit: a commit that fails
//! fails every write of the group (most likely none of them is in the ledger, as when a
//! write's own commit fails). The task runs to
//! its end whether or not its caller still waits, so a caller that goes away never
//! takes the others' writes down with it.

use std::time::Instant;

use airlock_core::Post;
use airlock_store::{PostChange, PostClaim, PostClaimed, Result, StoreError};
use tokio::sync::oneshot;

use crate::{SqliteStore, WriteTx, db, posts, publish};

/// A write that may share its transaction.
#[derive(Debug)]
pub(crate) enum Write {
    /// A claim, asked for at the instant given (its times move on by the wait).
    Claim(Box<PostClaim>, Instant),
    /// A named change.
    Change(Box<PostChange>),
}

/// A write's answer.
#[derive(Debug)]
pub(crate) enum Written {
    Claim(Result<PostClaimed>),
    Change(Box<Result<Post>>),
}

impl Written {
    pub(crate) fn claim(self) -> Result<PostClaimed> {
        match self {
            Written::Claim(answer) => answer,
            Written::Change(_) => Err(mixed_up()),
        }
    }

    pub(crate) fn change(self) -> Result<Post> {
        match self {
            Written::Change(answer) => *answer,
            Written::Claim(_) => Err(mixed_up()),
        }
    }

    /// The answer of a claim (`claim`) or a change that failed with `e`.
    fn failed(claim: bool, e: StoreError) -> Written {
        if claim {
            Written::Claim(Err(e))
        } else {
            Written::Change(Box::new(Err(e)))
        }
    }

    /// The error this answer carries, if any.
    fn error(&self) -> Option<&StoreError> {
        match self {
            Written::Claim(Err(e)) => Some(e),
            Written::Change(answer) => answer.as_ref().as_ref().err(),
            Written::Claim(Ok(_)) => None,
        }
    }
}

fn mixed_up() -> StoreError {
    StoreError::Unavailable("a grouped write was answered for another kind of write".into())
}

/// The writes waiting for the writer turn.
pub(crate) type Queue = std::sync::Mutex<Vec<(Write, oneshot::Sender<Written>)>>;

/// The most writes one transaction takes: a turn that finds more leaves them to the next.
pub(crate) const MAX_GROUP: usize = 32;

impl SqliteStore {
    /// Writes `write` in the next group commit and answers once it is durable.
    pub(crate) async fn grouped(&self, write: Write) -> Result<Written> {
        // Outside a runtime nothing could write it: refuse before it is queued.
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            StoreError::Unavailable(format!("no runtime to write with: {e}").into())
        })?;
        let (answer, answered) = oneshot::channel();
        self.queue
            .lock()
            .expect("lock is never poisoned")
            .push((write, answer));
        // The answer may come from an earlier task's group: only the answer is awaited,
        // never this task's own turn behind other writers.
        let store = self.clone();
        runtime.spawn(async move { store.write_group().await });
        answered.await.map_err(|_| {
            StoreError::Unavailable(
                "the group commit carrying this write stopped before its commit: it was not written"
                    .into(),
            )
        })
    }

    /// Takes the writer turn and SQLite's write lock, then writes what is queued by then:
    /// everything that arrived while another process held the lock joins. Nothing, when
    /// an earlier turn took this task's write already. When the lock cannot be had, only
    /// the oldest write is answered with the error: each other one has a task of its own
    /// that tries again.
    async fn write_group(&self) {
        let turn = self.writer.clone().lock_owned().await;
        let queued = || self.queue.lock().expect("lock is never poisoned");
        if queued().is_empty() {
            return;
        }
        let tx = match self.pool.begin_with("BEGIN IMMEDIATE").await {
            Ok(tx) => self.write_tx(tx, turn),
            Err(e) => {
                if let Some((write, answer)) = queued().drain(..1).next() {
                    let claim = matches!(write, Write::Claim(..));
                    let _ = answer.send(Written::failed(claim, db(e)));
                }
                return;
            }
        };
        let group: Vec<_> = {
            let mut queue = queued();
            let n = queue.len().min(MAX_GROUP);
            queue.drain(..n).collect()
        };
        let (writes, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let claims: Vec<bool> = writes
            .iter()
            .map(|w| matches!(w, Write::Claim(..)))
            .collect();
        let written = write_all(tx, writes).await.unwrap_or_else(|e| {
            let reason = format!(
                "the transaction this write shared failed ({e}): it is most likely not written"
            );
            let failed =
                |claim| Written::failed(claim, StoreError::Unavailable(reason.clone().into()));
            claims.into_iter().map(failed).collect()
        });
        for (answer, written) in answers.into_iter().zip(written) {
            // A caller that stopped waiting is told nothing.
            let _ = answer.send(written);
        }
    }
}

/// Runs one write in `tx`: its answer, and whether what it wrote stays.
async fn write_one(tx: &mut WriteTx, write: Write) -> (Written, bool) {
    match write {
        Write::Claim(req, started) => match publish::claim_in(tx, &req, started).await {
            Ok(claimed) => (Written::Claim(Ok(claimed)), true),
            Err(e) => (Written::Claim(Err(e)), false),
        },
        Write::Change(change) => match posts::change_in(tx, *change).await {
            Ok(answer) => (Written::Change(Box::new(answer)), true),
            Err(e) => (Written::Change(Box::new(Err(e))), false),
        },
    }
}

/// Runs the writes in `tx` in order and commits what stays. One write alone runs as it
/// always did: rolled back whole when it fails, its commit's error its own.
async fn write_all(mut tx: WriteTx, mut writes: Vec<Write>) -> Result<Vec<Written>> {
    if writes.len() == 1 {
        let write = writes.pop().expect("one write");
        let (written, keep) = write_one(&mut tx, write).await;
        if !keep {
            return Ok(vec![written]);
        }
        return match tx.commit().await {
            Ok(()) => Ok(vec![written]),
            Err(e) => Ok(vec![Written::failed(
                matches!(written, Written::Claim(_)),
                db(e),
            )]),
        };
    }
    let mut all = Vec::with_capacity(writes.len());
    for write in writes {
        execute(&mut tx, "SAVEPOINT airlock_write").await?;
        let (written, keep) = write_one(&mut tx, write).await;
        if !keep && let Err(e) = execute(&mut tx, "ROLLBACK TO airlock_write").await {
            // SQLite rolled the whole transaction back on the write's error: say which.
            let cause = written.error().map(ToString::to_string).unwrap_or_default();
            return Err(StoreError::Unavailable(
                format!("{cause}; the transaction could not go on: {e}").into(),
            ));
        }
        execute(&mut tx, "RELEASE airlock_write").await?;
        all.push(written);
    }
    tx.commit().await.map_err(db)?;
    Ok(all)
}

async fn execute(tx: &mut WriteTx, sql: &'static str) -> Result<()> {
    sqlx::query(sql).execute(&mut **tx).await.map_err(db)?;
    Ok(())
}
