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
//! write's own commit fails). The task runs to its end whether or not its caller still
//! waits, so a caller that goes away never takes the others' writes down with it.

use std::time::Instant;

use airlock_core::Post;
use airlock_store::{PostChange, PostClaim, PostClaimed, Result, StoreError};
use tokio::sync::oneshot;

use crate::{SqliteStore, WriteTx, db, posts, publish};

/// A write that may share its transaction, with where its answer goes.
#[derive(Debug)]
pub(crate) enum Write {
    /// A claim, asked for at the instant given (its times move on by the wait).
    Claim(
        Box<PostClaim>,
        Instant,
        oneshot::Sender<Result<PostClaimed>>,
    ),
    /// A named change.
    Change(Box<PostChange>, oneshot::Sender<Result<Post>>),
}

impl Write {
    /// Runs the write in `tx`, with `savepoint` sent ahead of its first statement: its
    /// answer, and whether what it wrote stays.
    async fn run(self, tx: &mut WriteTx, savepoint: &mut Savepoint) -> (Answer, bool) {
        match self {
            Write::Claim(req, started, to) => {
                let claimed = publish::claim_in(tx, &req, started, savepoint).await;
                let keep = claimed.is_ok();
                (Answer::Claim(to, claimed), keep)
            }
            Write::Change(change, to) => {
                // An inner error (a fenced outcome) keeps the evidence it wrote.
                let changed = posts::change_in(tx, *change, savepoint).await;
                let keep = changed.is_ok();
                (Answer::Change(to, Box::new(changed.and_then(|a| a))), keep)
            }
        }
    }

    /// Answers the write with `e` without running it.
    fn fail(self, e: StoreError) {
        match self {
            Write::Claim(_, _, to) => drop(to.send(Err(e))),
            Write::Change(_, to) => drop(to.send(Err(e))),
        }
    }
}

/// A write's answer, held until its group commits.
enum Answer {
    Claim(oneshot::Sender<Result<PostClaimed>>, Result<PostClaimed>),
    Change(oneshot::Sender<Result<Post>>, Box<Result<Post>>),
}

impl Answer {
    /// The error it carries, if any.
    fn error(&self) -> Option<&StoreError> {
        match self {
            Answer::Claim(_, answer) => answer.as_ref().err(),
            Answer::Change(_, answer) => answer.as_ref().as_ref().err(),
        }
    }

    /// Gives the answer; a caller that stopped waiting is told nothing.
    fn send(self) {
        match self {
            Answer::Claim(to, answer) => drop(to.send(answer)),
            Answer::Change(to, answer) => drop(to.send(*answer)),
        }
    }

    /// Gives `e` instead of the answer.
    fn fail(self, e: StoreError) {
        match self {
            Answer::Claim(to, _) => drop(to.send(Err(e))),
            Answer::Change(to, _) => drop(to.send(Err(e))),
        }
    }
}

/// The writes waiting for the writer turn.
pub(crate) type Queue = std::sync::Mutex<Vec<Write>>;

/// The most writes one transaction takes: a turn that finds more leaves them to the next.
pub(crate) const MAX_GROUP: usize = 32;

impl SqliteStore {
    /// Queues the write `write` makes of its answer's sender for the next group commit,
    /// and answers once that is durable.
    pub(crate) async fn grouped<T>(
        &self,
        write: impl FnOnce(oneshot::Sender<Result<T>>) -> Write,
    ) -> Result<T> {
        // Outside a runtime nothing could write it: refuse before it is queued.
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            StoreError::Unavailable(format!("no runtime to write with: {e}").into())
        })?;
        let (answer, answered) = oneshot::channel();
        self.queue
            .lock()
            .expect("lock is never poisoned")
            .push(write(answer));
        // The answer may come from an earlier task's group: only the answer is awaited,
        // never this task's own turn behind other writers.
        let store = self.clone();
        runtime.spawn(async move { store.write_group().await });
        answered.await.map_err(|_| {
            StoreError::Unavailable(
                "the group commit carrying this write stopped before its commit: it was not written"
                    .into(),
            )
        })?
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
                if let Some(write) = queued().drain(..1).next() {
                    write.fail(db(e));
                }
                return;
            }
        };
        let group: Vec<Write> = {
            let mut queue = queued();
            let n = queue.len().min(MAX_GROUP);
            queue.drain(..n).collect()
        };
        write_all(tx, group).await;
    }
}

/// Runs the writes in `tx` in order, commits what stays, then answers each. One write
/// alone runs as it always did: rolled back whole when it fails, its commit's error its
/// own.
async fn write_all(mut tx: WriteTx, writes: Vec<Write>) {
    let mut writes = writes.into_iter();
    if writes.len() == 1 {
        let (answer, keep) = writes
            .next()
            .expect("one write")
            .run(&mut tx, &mut Savepoint(None))
            .await;
        if !keep {
            drop(tx);
            return answer.send();
        }
        return match tx.commit().await {
            Ok(()) => answer.send(),
            Err(e) => answer.fail(db(e)),
        };
    }
    let mut done = Vec::with_capacity(writes.len());
    let committed = match run_all(&mut tx, &mut writes, &mut done).await {
        Ok(()) => tx.commit().await.map_err(db),
        Err(e) => {
            drop(tx);
            Err(e)
        }
    };
    match committed {
        Ok(()) => done.into_iter().for_each(Answer::send),
        Err(e) => {
            let reason = format!(
                "the transaction this write shared failed ({e}): it is most likely not written"
            );
            let failed = || StoreError::Unavailable(reason.clone().into());
            done.into_iter().for_each(|answer| answer.fail(failed()));
            writes.for_each(|write| write.fail(failed()));
        }
    }
}

/// The statements that open a write's savepoint, sent in the write's first call to the
/// connection's thread rather than in a call of their own.
#[derive(Debug)]
pub(crate) struct Savepoint(Option<&'static str>);

impl Savepoint {
    /// What goes ahead of the first statement (once; empty afterwards).
    pub(crate) fn take(&mut self) -> &'static str {
        self.0.take().unwrap_or_default()
    }
}

/// A group's savepoints alternate between two names. Each write releases the one before
/// it and opens its own in its first call: if that call fails before its savepoint is
/// open, rolling back to it finds no such savepoint and the whole group fails, rather
/// than taking back the write before.
const FIRST: &str = "SAVEPOINT airlock_write_a; ";
const NEXT: [&str; 2] = [
    "RELEASE airlock_write_b; SAVEPOINT airlock_write_a; ",
    "RELEASE airlock_write_a; SAVEPOINT airlock_write_b; ",
];
const ROLLBACK: [&str; 2] = ["ROLLBACK TO airlock_write_a", "ROLLBACK TO airlock_write_b"];

/// Runs `writes` in `tx`, each in a savepoint of its own, into `done`; stops at the first
/// error that ends the transaction. The `COMMIT` releases the last savepoint.
async fn run_all(
    tx: &mut WriteTx,
    writes: &mut std::vec::IntoIter<Write>,
    done: &mut Vec<Answer>,
) -> Result<()> {
    let (mut turn, mut open) = (0, FIRST);
    for write in writes.by_ref() {
        let mut savepoint = Savepoint(Some(open));
        let (answer, keep) = write.run(tx, &mut savepoint).await;
        // A write that returned before its first call wrote nothing: open it now.
        let opened = match savepoint.0 {
            Some(open) => execute(tx, open).await,
            None => Ok(()),
        };
        let undone = match opened {
            Ok(()) if !keep => execute(tx, ROLLBACK[turn]).await,
            opened => opened,
        };
        if let Err(e) = undone {
            // SQLite rolled the whole transaction back on the write's error: say which.
            let cause = answer.error().map(ToString::to_string).unwrap_or_default();
            done.push(answer);
            return Err(StoreError::Unavailable(
                format!("{cause}; the transaction could not go on: {e}").into(),
            ));
        }
        done.push(answer);
        turn = 1 - turn;
        open = NEXT[turn];
    }
    Ok(())
}

async fn execute(tx: &mut WriteTx, sql: &'static str) -> Result<()> {
    sqlx::query(sql).execute(&mut **tx).await.map_err(db)?;
    Ok(())
}
